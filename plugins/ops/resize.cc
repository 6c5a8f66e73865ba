// resize: nearest, linear and cubic interpolation over any axes of a
// tensor, with ONNX Resize's coordinate transformations (docs/operators.md,
// "Resize").  Each output element maps, per resized axis, to a coordinate
// in the input (computed in float64 from its index), from which the mode
// takes 1 (nearest), 2 (linear) or 4 (cubic) taps with weights; the result
// is the sum over every combination of taps of the product of their
// weights times the input there.  Taps outside the input read its edge
// (exclude_outside drops them and renormalises instead).
#include <cmath>

#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

std::vector<int64_t> int_list(const Any& value) {
  std::vector<int64_t> out;
  for (const Any& v : value.cast<Array>()) out.push_back(v.as_int());
  return out;
}

std::vector<double> float_list(const Any& value) {
  std::vector<double> out;
  for (const Any& v : value.cast<Array>()) out.push_back(v.as_float());
  return out;
}

const std::vector<std::string>& modes() {
  static const std::vector<std::string> v = {"nearest", "linear", "cubic"};
  return v;
}
const std::vector<std::string>& transforms() {
  static const std::vector<std::string> v = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                             "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  return v;
}
const std::vector<std::string>& nearest_modes() {
  static const std::vector<std::string> v = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  return v;
}

void one_of(const std::string& key, const std::string& value, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (a == value) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  LOOM_THROW(TypeError) << key << " must be one of " << list << ", got '" << value << "'";
}

struct ResizeSpec {
  std::vector<int64_t> in, out;
  std::vector<double> scales, roi;
  std::string mode, transform, nearest;
  double a, extrapolation;
  bool exclude_outside;
};

ResizeSpec spec_of(const graph::CallNode& call) {
  const auto& x = tensor_arg(call, 0);
  Map a = attrs_of(call);
  ResizeSpec s;
  for (size_t k = 0; k < x.shape.size(); ++k) {
    auto d = constant_dim(x.shape[k]);
    if (!d) LOOM_THROW(TypeError) << "needs a static shape, got " << shape_text(x.shape);
    s.in.push_back(*d);
  }
  s.out = int_list(a.at("sizes"));
  s.scales = float_list(a.at("scales"));
  s.roi = float_list(a.at("roi"));
  s.mode = a.at("mode").as_string();
  s.transform = a.at("coordinate_transformation_mode").as_string();
  s.nearest = a.at("nearest_mode").as_string();
  s.a = a.at("cubic_coeff_a").as_float();
  s.extrapolation = a.at("extrapolation_value").as_float();
  s.exclude_outside = a.at("exclude_outside").as_bool();
  one_of("mode", s.mode, modes());
  one_of("coordinate_transformation_mode", s.transform, transforms());
  one_of("nearest_mode", s.nearest, nearest_modes());
  size_t rank = s.in.size();
  if (s.out.size() != rank) {
    LOOM_THROW(TypeError) << "sizes must give all " << rank << " dimensions of the result, got " << s.out.size();
  }
  for (int64_t d : s.out)
    if (d < 1) LOOM_THROW(TypeError) << "sizes must be at least 1, got " << d;
  if (s.scales.empty()) {
    for (size_t k = 0; k < rank; ++k) s.scales.push_back(static_cast<double>(s.out[k]) / static_cast<double>(s.in[k]));
  }
  if (s.scales.size() != rank) LOOM_THROW(TypeError) << "scales must have " << rank << " entries or none";
  for (double v : s.scales)
    if (!(v > 0)) LOOM_THROW(TypeError) << "scales must be positive, got " << v;
  if (s.transform == "tf_crop_and_resize") {
    if (s.roi.size() != 2 * rank) {
      LOOM_THROW(TypeError) << "tf_crop_and_resize needs roi with " << 2 * rank << " entries (starts, then ends), got "
                            << s.roi.size();
    }
  } else if (!s.roi.empty() && s.roi.size() != 2 * rank) {
    LOOM_THROW(TypeError) << "roi must have " << 2 * rank << " entries or none";
  }
  return s;
}

// An axis the transformation maps to itself (same extent, scale 1).
bool identity_axis(const ResizeSpec& s, size_t k) {
  if (s.in[k] != s.out[k] || s.scales[k] != 1.0) return false;
  return s.transform == "half_pixel" || s.transform == "asymmetric" || s.transform == "align_corners" ||
         (s.transform == "pytorch_half_pixel" && s.out[k] > 1);
}

struct Tap {
  PrimExpr index, weight;  // weight in float64
};

PrimExpr f64(double v) { return make_const(DataType::Float(64), v); }
PrimExpr call1(const char* name, const PrimExpr& x) { return tir::Call(x.dtype(), name, {x}); }

// The input coordinate of output index `o` along axis k (float64), and
// the condition under which it lies outside (tf_crop_and_resize only).
std::pair<PrimExpr, PrimExpr> coordinate(const ResizeSpec& s, size_t k, const PrimExpr& o) {
  PrimExpr x = tir::Cast(DataType::Float(64), o);
  double in = static_cast<double>(s.in[k]), out = static_cast<double>(s.out[k]), scale = s.scales[k];
  PrimExpr outside = tir::IntImm(DataType::Bool(), 0);
  if (s.transform == "half_pixel") return {tir::Sub(tir::Div(tir::Add(x, f64(0.5)), f64(scale)), f64(0.5)), outside};
  if (s.transform == "pytorch_half_pixel") {
    if (s.out[k] == 1) return {f64(-0.5), outside};
    return {tir::Sub(tir::Div(tir::Add(x, f64(0.5)), f64(scale)), f64(0.5)), outside};
  }
  if (s.transform == "align_corners") {
    // ONNX measures the resized length as in * scale.
    double length = in * scale;
    if (length == 1) return {f64(0), outside};
    return {tir::Mul(x, f64((in - 1) / (length - 1))), outside};
  }
  if (s.transform == "asymmetric") return {tir::Div(x, f64(scale)), outside};
  if (s.transform == "tf_half_pixel_for_nn") return {tir::Div(tir::Add(x, f64(0.5)), f64(scale)), outside};
  // tf_crop_and_resize
  size_t rank = s.in.size();
  double start = s.roi[k], end = s.roi[rank + k];
  PrimExpr c = s.out[k] == 1
                   ? f64((end - start) * (in - 1) / 2)
                   : PrimExpr(tir::Add(f64(start * (in - 1)), tir::Mul(x, f64((end - start) * (in - 1) / (out - 1)))));
  outside = tir::Or(tir::LT(c, f64(0)), tir::GT(c, f64(in - 1)));
  return {c, outside};
}

std::vector<Tap> taps(const ResizeSpec& s, size_t k, const PrimExpr& c) {
  int64_t n = s.in[k];
  auto clamp = [n](const PrimExpr& i) {
    return PrimExpr(tir::Max(PrimExpr(int64_t{0}), tir::Min(i, PrimExpr(n - 1))));
  };
  PrimExpr base = call1("floor", c);
  PrimExpr ratio = tir::Sub(c, base);
  PrimExpr i0 = tir::Cast(DataType::Int(64), base);
  if (s.mode == "nearest") {
    PrimExpr up;  // take floor + 1 instead of floor
    if (s.nearest == "round_prefer_floor")
      up = tir::GT(ratio, f64(0.5));
    else if (s.nearest == "round_prefer_ceil")
      up = tir::GE(ratio, f64(0.5));
    else if (s.nearest == "floor")
      up = tir::IntImm(DataType::Bool(), 0);
    else
      up = tir::GT(ratio, f64(0));
    return {{clamp(tir::Select(up, tir::Add(i0, PrimExpr(int64_t{1})), i0)), f64(1)}};
  }
  std::vector<Tap> out;
  if (s.mode == "linear") {
    out = {{i0, tir::Sub(f64(1), ratio)}, {tir::Add(i0, PrimExpr(int64_t{1})), ratio}};
  } else {
    double A = s.a;
    PrimExpr r = ratio, r1 = tir::Add(ratio, f64(1)), q = tir::Sub(f64(1), ratio), q1 = tir::Add(q, f64(1));
    auto far = [A](const PrimExpr& t) {  // |t| in [1, 2)
      return PrimExpr(tir::Sub(
          tir::Mul(tir::Add(tir::Mul(tir::Sub(tir::Mul(f64(A), t), f64(5 * A)), t), f64(8 * A)), t), f64(4 * A)));
    };
    auto near = [A](const PrimExpr& t) {  // |t| in [0, 1)
      return PrimExpr(tir::Add(tir::Mul(tir::Mul(tir::Sub(tir::Mul(f64(A + 2), t), f64(A + 3)), t), t), f64(1)));
    };
    for (int64_t d = -1; d <= 2; ++d) out.push_back({tir::Add(i0, PrimExpr(d)), PrimExpr()});
    out[0].weight = far(r1), out[1].weight = near(r), out[2].weight = near(q), out[3].weight = far(q1);
  }
  if (s.exclude_outside) {
    PrimExpr total = f64(0);
    for (Tap& t : out) {
      PrimExpr inside = tir::And(tir::GE(t.index, PrimExpr(int64_t{0})), tir::LT(t.index, PrimExpr(n)));
      t.weight = tir::Select(inside, t.weight, f64(0));
      total = tir::Add(total, t.weight);
    }
    for (Tap& t : out) t.weight = tir::Div(t.weight, total);
  }
  for (Tap& t : out) t.index = clamp(t.index);
  return out;
}
}  // namespace

void register_resize_ops() {
  define_operator(
      "resize", 1,
      {{"sizes", "Array", Any(), "the result's shape (every dimension)"},
       {"scales", "Array", Any(Array(std::vector<Any>{})),
        "per axis, the scale the coordinate transformation divides by; [] = sizes / input shape"},
       {"roi", "Array", Any(Array(std::vector<Any>{})), "starts then ends per axis, for tf_crop_and_resize"},
       {"mode", "str", Any(std::string("nearest")), "nearest, linear or cubic"},
       {"coordinate_transformation_mode", "str", Any(std::string("half_pixel")),
        "half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize "
        "(as ONNX Resize)"},
       {"nearest_mode", "str", Any(std::string("round_prefer_floor")),
        "round_prefer_floor, round_prefer_ceil, floor or ceil"},
       {"cubic_coeff_a", "float", Any(-0.75), "the cubic kernel's a (-0.75 as PyTorch, -0.5 as TensorFlow)"},
       {"exclude_outside", "bool", Any(false), "drop taps outside the input and renormalise"},
       {"extrapolation_value", "float", Any(0.0), "tf_crop_and_resize: the value outside the input"}},
      ir::PatternKind::kInjective,
      "interpolates x to the shape `sizes` (ONNX Resize, PyTorch interpolate): nearest, linear or cubic over every "
      "axis whose extent or scale changes",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (x.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs a numeric tensor, got bool";
        ResizeSpec s = spec_of(call);
        std::vector<Any> shape;
        for (int64_t d : s.out) shape.push_back(Any(tir::IntImm(DataType::Int(64), d)));
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        ResizeSpec s = spec_of(call);
        DataType t = x->dtype;
        DataType acc = is_float(t) ? t : DataType::Float(32);
        return b.finish(compute(y, [&](const Indices& o) {
          std::vector<std::vector<Tap>> per_axis;
          PrimExpr outside = tir::IntImm(DataType::Bool(), 0);
          for (size_t k = 0; k < s.in.size(); ++k) {
            if (identity_axis(s, k)) {
              per_axis.push_back({{o[k], f64(1)}});
              continue;
            }
            auto [c, out] = coordinate(s, k, o[k]);
            outside = tir::Or(outside, out);
            per_axis.push_back(taps(s, k, c));
          }
          // Every combination of one tap per axis.
          PrimExpr sum;
          std::vector<size_t> pick(per_axis.size(), 0);
          for (;;) {
            Indices at;
            PrimExpr weight;
            for (size_t k = 0; k < per_axis.size(); ++k) {
              const Tap& tap = per_axis[k][pick[k]];
              at.push_back(tap.index);
              const auto* one = tap.weight.as<tir::FloatImmNode>();
              if (one && one->value == 1.0) continue;  // nearest's and an unchanged axis's only tap
              weight = weight.defined() ? PrimExpr(tir::Mul(weight, tap.weight)) : tap.weight;
            }
            PrimExpr v = tir::BufferLoad(x, at);
            if (v.dtype() != acc) v = tir::Cast(acc, v);
            PrimExpr term = weight.defined() ? PrimExpr(tir::Mul(tir::Cast(acc, weight), v)) : v;
            sum = sum.defined() ? PrimExpr(tir::Add(sum, term)) : term;
            size_t k = 0;
            while (k < pick.size() && ++pick[k] == per_axis[k].size()) pick[k++] = 0;
            if (k == pick.size()) break;
          }
          if (s.mode != "nearest" && !is_float(t)) sum = call1("round", sum);
          PrimExpr value = sum.dtype() == t ? sum : PrimExpr(tir::Cast(t, sum));
          if (s.transform == "tf_crop_and_resize") value = tir::Select(outside, make_const(t, s.extrapolation), value);
          return value;
        }));
      });
}

}  // namespace loom::ops
