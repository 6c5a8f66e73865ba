// resize: nearest, linear and cubic interpolation over any axes of a
// tensor, with ONNX Resize's coordinate transformations (docs/operators.md,
// "Resize").  Each output element maps, per resized axis, to a coordinate
// in the input (computed in float64 from its index), from which the mode
// takes 1 (nearest), 2 (linear) or 4 (cubic) taps with weights; the result
// is the sum over every combination of taps of the product of their
// weights times the input there.  Taps outside the input read its edge
// (exclude_outside drops them and renormalises instead).  grid_sample
// interpolates at points a grid gives instead (below).
#include <cmath>

#include "loom/arith/simplify.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

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

// Sizes are prim expressions: a resize to a size the data decides (a
// mask pasted at its box's size) is one kernel over symbolic extents.
struct ResizeSpec {
  std::vector<PrimExpr> in, out;
  std::vector<PrimExpr> scales;  // float64: given, or out / in
  std::vector<double> roi;
  std::string mode, transform, nearest;
  double a, extrapolation;
  bool exclude_outside;
  bool given_scales = false;
};

PrimExpr f64(double v) { return make_const(DataType::Float(64), v); }
PrimExpr as_f64(const PrimExpr& e) { return tir::Cast(DataType::Float(64), e); }
PrimExpr i64(int64_t v) { return PrimExpr(v); }

PrimExpr dim_of(const Any& v, const char* what) {
  if (v.kind() == AnyKind::kInt) return i64(v.as_int());
  if (dynamic_cast<const tir::PrimExprNode*>(v.object())) return v.cast<PrimExpr>();
  LOOM_THROW(TypeError) << what << " must be integers or dimensions, got " << v.describe();
}

// The lowering passes its buffers' shapes (`in`, `out`): their dimensions
// are the kernel's scalars, not the graph's variables.
ResizeSpec spec_of(const graph::CallNode& call, const Indices* in = nullptr, const Indices* out = nullptr) {
  const auto& x = tensor_arg(call, 0);
  Map a = attrs_of(call);
  ResizeSpec s;
  if (x.unknown_rank()) LOOM_THROW(TypeError) << "needs a known rank";
  for (const Any& d : x.shape) s.in.push_back(d.cast<PrimExpr>());
  for (const Any& v : a.at("sizes").cast<Array>()) s.out.push_back(dim_of(v, "sizes"));
  if (in && out && in->size() == s.in.size() && out->size() == s.out.size()) s.in = *in, s.out = *out;
  for (double v : float_list(a.at("scales"))) s.scales.push_back(f64(v));
  s.given_scales = !s.scales.empty();
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
  for (const PrimExpr& d : s.out) {
    if (d.dtype().code != DataType::kInt && d.dtype().code != DataType::kUInt) {
      LOOM_THROW(TypeError) << "sizes must be integers, got " << d.dtype().to_string();
    }
    auto c = tir::const_int(d);
    if (c && *c < 1) LOOM_THROW(TypeError) << "sizes must be at least 1, got " << *c;
  }
  if (!s.given_scales) {
    for (size_t k = 0; k < rank; ++k) {
      auto in = tir::const_int(s.in[k]), out = tir::const_int(s.out[k]);
      s.scales.push_back(in && out ? f64(static_cast<double>(*out) / static_cast<double>(*in))
                                   : PrimExpr(tir::Div(as_f64(s.out[k]), as_f64(s.in[k]))));
    }
  }
  if (s.scales.size() != rank) LOOM_THROW(TypeError) << "scales must have " << rank << " entries or none";
  for (const PrimExpr& v : s.scales) {
    const auto* f = v.as<tir::FloatImmNode>();
    if (f && !(f->value > 0)) LOOM_THROW(TypeError) << "scales must be positive, got " << f->value;
  }
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

std::optional<double> const_float(const PrimExpr& e) {
  if (const auto* f = e.as<tir::FloatImmNode>()) return f->value;
  return std::nullopt;
}

// An axis the transformation maps to itself (same extent, scale 1).
bool identity_axis(const ResizeSpec& s, size_t k) {
  auto in = tir::const_int(s.in[k]), out = tir::const_int(s.out[k]);
  bool same = (in && out && *in == *out) || (!in && !out && same_dim(Any(s.in[k]), Any(s.out[k])));
  if (!same || const_float(s.scales[k]).value_or(0.0) != 1.0) {
    if (!same || s.given_scales || in) return false;  // (a symbolic n / n is 1)
  }
  return s.transform == "half_pixel" || s.transform == "asymmetric" || s.transform == "align_corners" ||
         (s.transform == "pytorch_half_pixel" && out && *out > 1);
}

struct Tap {
  PrimExpr index, weight;  // weight in float64
};

PrimExpr call1(const char* name, const PrimExpr& x) { return tir::Call(x.dtype(), name, {x}); }

// The weights of the four taps at floor(c) - 1 .. floor(c) + 2 of the
// cubic convolution kernel with coefficient A, for c's fraction `ratio`
// (in ratio's float type; PyTorch's and ONNX's order of operations).
std::vector<PrimExpr> cubic_weights(const PrimExpr& ratio, double A) {
  DataType t = ratio.dtype();
  auto c = [t](double v) { return make_const(t, v); };
  PrimExpr r1 = tir::Add(ratio, c(1)), q = tir::Sub(c(1), ratio), q1 = tir::Add(q, c(1));
  auto far = [&](const PrimExpr& x) {  // |x| in [1, 2)
    return PrimExpr(
        tir::Sub(tir::Mul(tir::Add(tir::Mul(tir::Sub(tir::Mul(c(A), x), c(5 * A)), x), c(8 * A)), x), c(4 * A)));
  };
  auto near = [&](const PrimExpr& x) {  // |x| in [0, 1)
    return PrimExpr(tir::Add(tir::Mul(tir::Mul(tir::Sub(tir::Mul(c(A + 2), x), c(A + 3)), x), x), c(1)));
  };
  return {far(r1), near(ratio), near(q), far(q1)};
}

// `when` ? a : b, folded where `when` is constant (an extent of 1).
PrimExpr select(const PrimExpr& when, const PrimExpr& a, const PrimExpr& b) {
  PrimExpr w = arith::simplify(when);
  if (auto c = tir::const_int(w)) return *c ? a : b;
  return tir::Select(w, a, b);
}

// The input coordinate of output index `o` along axis k (float64), and
// the condition under which it lies outside (tf_crop_and_resize only).
std::pair<PrimExpr, PrimExpr> coordinate(const ResizeSpec& s, size_t k, const PrimExpr& o) {
  PrimExpr x = as_f64(o);
  PrimExpr in = as_f64(s.in[k]), scale = s.scales[k];
  PrimExpr outside = tir::IntImm(DataType::Bool(), 0);
  PrimExpr half = tir::Sub(tir::Div(tir::Add(x, f64(0.5)), scale), f64(0.5));
  if (s.transform == "half_pixel") return {half, outside};
  if (s.transform == "pytorch_half_pixel") return {select(tir::EQ(s.out[k], i64(1)), f64(-0.5), half), outside};
  if (s.transform == "align_corners") {
    // ONNX measures the resized length as in * scale.
    PrimExpr length = tir::Mul(in, scale);
    auto c_in = const_float(arith::simplify(in)), c_length = const_float(arith::simplify(length));
    if (c_in && c_length) {  // (the constant factor, as before sizes could be symbolic)
      if (*c_length == 1) return {f64(0), outside};
      return {tir::Mul(x, f64((*c_in - 1) / (*c_length - 1))), outside};
    }
    return {
        select(tir::EQ(length, f64(1)), f64(0), tir::Mul(x, tir::Div(tir::Sub(in, f64(1)), tir::Sub(length, f64(1))))),
        outside};
  }
  if (s.transform == "asymmetric") return {tir::Div(x, scale), outside};
  if (s.transform == "tf_half_pixel_for_nn") return {tir::Div(tir::Add(x, f64(0.5)), scale), outside};
  // tf_crop_and_resize
  size_t rank = s.in.size();
  double start = s.roi[k], end = s.roi[rank + k];
  PrimExpr span = tir::Mul(f64(end - start), tir::Sub(in, f64(1)));
  PrimExpr c = select(tir::EQ(s.out[k], i64(1)), tir::Div(span, f64(2)),
                      tir::Add(tir::Mul(f64(start), tir::Sub(in, f64(1))),
                               tir::Mul(x, tir::Div(span, tir::Sub(as_f64(s.out[k]), f64(1))))));
  outside = tir::Or(tir::LT(c, f64(0)), tir::GT(c, tir::Sub(in, f64(1))));
  return {c, outside};
}

std::vector<Tap> taps(const ResizeSpec& s, size_t k, const PrimExpr& c) {
  PrimExpr n = s.in[k];
  auto clamp = [n](const PrimExpr& i) {
    return PrimExpr(tir::Max(PrimExpr(int64_t{0}), tir::Min(i, tir::Sub(n, PrimExpr(int64_t{1})))));
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
    for (int64_t d = -1; d <= 2; ++d) out.push_back({tir::Add(i0, PrimExpr(d)), PrimExpr()});
    std::vector<PrimExpr> w = cubic_weights(ratio, A);
    for (size_t k = 0; k < 4; ++k) out[k].weight = w[k];
  }
  if (s.exclude_outside) {
    PrimExpr total = f64(0);
    for (Tap& t : out) {
      PrimExpr inside = tir::And(tir::GE(t.index, PrimExpr(int64_t{0})), tir::LT(t.index, n));
      t.weight = tir::Select(inside, t.weight, f64(0));
      total = tir::Add(total, t.weight);
    }
    for (Tap& t : out) t.weight = tir::Div(t.weight, total);
  }
  for (Tap& t : out) t.index = clamp(t.index);
  return out;
}

// grid_sample (PyTorch's grid_sample, ONNX GridSample up to opset 19):
// output (n, c, i, j) reads x[n, c] at the point grid[n, i, j] = (gx, gy)
// in [-1, 1] coordinates (x along the width), each unnormalized to pixels
// as PyTorch's CPU kernel does, in the grid's float type.  bilinear and
// nearest move the point by the padding mode first (border: clipped to
// the image; reflection: mirrored at its edges, then clipped), bicubic
// moves each of its 16 taps; a tap outside the image reads 0.
struct GridSpec {
  std::string mode, padding;
  bool align = false;
  int64_t h = 0, w = 0;
};

GridSpec grid_spec_of(const graph::CallNode& call) {
  const auto &x = tensor_arg(call, 0), &grid = tensor_arg(call, 1);
  Map a = attrs_of(call);
  GridSpec s;
  s.mode = a.at("mode").as_string();
  s.padding = a.at("padding_mode").as_string();
  s.align = a.at("align_corners").as_bool();
  one_of("mode", s.mode, {"bilinear", "nearest", "bicubic"});
  one_of("padding_mode", s.padding, {"zeros", "border", "reflection"});
  if (!is_float(x.dtype) || !is_float(grid.dtype)) {
    LOOM_THROW(TypeError) << "needs a float x and a float grid, got " << x.dtype.to_string() << " and "
                          << grid.dtype.to_string();
  }
  if (x.shape.size() != 4 || grid.shape.size() != 4 || constant_dim(grid.shape[3]) != 2 ||
      !same_dim(x.shape[0], grid.shape[0])) {
    LOOM_THROW(TypeError) << "needs x (N, C, H, W) and grid (N, H_out, W_out, 2), got " << shape_text(x.shape)
                          << " and " << shape_text(grid.shape);
  }
  auto h = constant_dim(x.shape[2]), w = constant_dim(x.shape[3]);
  if (!h || !w) LOOM_THROW(TypeError) << "needs x's height and width static, got " << shape_text(x.shape);
  s.h = *h, s.w = *w;
  return s;
}

// The computation type of a float type: float32 for the narrower ones.
DataType at_least_f32(DataType t) { return t.bits < 32 ? DataType::Float(32) : DataType::Float(t.bits); }

// A coordinate moved into [0, size - 1] by the padding mode (PyTorch's
// compute_coordinates); zeros leaves it.
PrimExpr pad_coordinate(const GridSpec& s, PrimExpr c, int64_t size) {
  DataType t = c.dtype();
  auto k = [t](double v) { return make_const(t, v); };
  auto clip = [&](const PrimExpr& v) { return PrimExpr(tir::Min(k(double(size - 1)), tir::Max(v, k(0)))); };
  if (s.padding == "zeros") return c;
  if (s.padding == "reflection") {
    // Mirrored at -0.5 and size - 0.5 (align_corners: 0 and size - 1):
    // the distance from the low edge modulo twice the span, folded.
    double low = s.align ? 0 : -0.5, span2 = s.align ? 2.0 * double(size - 1) : 2.0 * double(size);
    if (span2 == 0) return k(0);
    PrimExpr d = call1("abs", tir::Sub(c, k(low)));
    PrimExpr extra = tir::Sub(d, tir::Mul(call1("trunc", tir::Div(d, k(span2))), k(span2)));
    c = tir::Add(tir::Min(extra, tir::Sub(k(span2), extra)), k(low));
  }
  return clip(c);
}

// x[n, ch, y, x] at integer coordinates given as floats, 0 outside the
// image (the load's index clamped so that it never leaves the buffer).
PrimExpr tap_value(const tir::Buffer& x, const Indices& nc, const PrimExpr& yf, const PrimExpr& xf, const GridSpec& s,
                   DataType acc) {
  DataType t = xf.dtype();
  auto k = [t](double v) { return make_const(t, v); };
  PrimExpr inside = tir::And(tir::And(tir::GT(xf, k(-1)), tir::LT(xf, k(double(s.w)))),
                             tir::And(tir::GT(yf, k(-1)), tir::LT(yf, k(double(s.h)))));
  auto index = [&](const PrimExpr& f, int64_t size) {
    return PrimExpr(tir::Cast(DataType::Int(64), tir::Min(k(double(size - 1)), tir::Max(f, k(0)))));
  };
  PrimExpr v = tir::BufferLoad(x, {nc[0], nc[1], index(yf, s.h), index(xf, s.w)});
  if (v.dtype() != acc) v = tir::Cast(acc, v);
  return tir::Select(inside, v, make_const(acc, 0));
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
        for (const PrimExpr& d : s.out) shape.push_back(Any(arith::simplify(d)));
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Indices in = tir::buffer_shape(x), out = tir::buffer_shape(y);
        ResizeSpec s = spec_of(call, &in, &out);
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
  define_operator(
      "grid_sample", 2,
      {{"mode", "str", Any(std::string("bilinear")), "bilinear, nearest (ties to even) or bicubic (a = -0.75)"},
       {"padding_mode", "str", Any(std::string("zeros")),
        "what a point outside the image reads: zeros, border (the nearest edge) or reflection (mirrored)"},
       {"align_corners", "bool", Any(false),
        "-1 and 1 are the corner pixels' centres (true) or the image's outer edges (false)"}},
      ir::PatternKind::kInjective,
      "samples x (N, C, H, W) at the points grid (N, H_out, W_out, 2) gives, (x, y) each in [-1, 1] across the "
      "image (PyTorch's grid_sample, ONNX GridSample) -> (N, C, H_out, W_out)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &grid = tensor_arg(call, 1);
        grid_spec_of(call);
        return ir::TensorType(Array(std::vector<Any>{x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer grid = b.param(tensor_arg(call, 1), "Grid");
        tir::Buffer y = b.param(result_type(call), "Y");
        GridSpec s = grid_spec_of(call);
        DataType acc = at_least_f32(x->dtype), ct = at_least_f32(grid->dtype);
        auto k = [ct](double v) { return make_const(ct, v); };
        return b.finish(compute(y, [&](const Indices& o) {
          Indices nc{o[0], o[1]};
          auto point = [&](int64_t axis, int64_t size) {  // unnormalized, in pixels
            PrimExpr g = tir::BufferLoad(grid, {o[0], o[2], o[3], PrimExpr(axis)});
            if (g.dtype() != ct) g = tir::Cast(ct, g);
            PrimExpr c = tir::Mul(tir::Add(g, k(1)), k(s.align ? double(size - 1) / 2 : double(size) / 2));
            return s.align ? c : PrimExpr(tir::Sub(c, k(0.5)));
          };
          PrimExpr px = point(0, s.w), py = point(1, s.h);
          PrimExpr sum;
          if (s.mode == "nearest") {
            sum = tap_value(x, nc, call1("round", pad_coordinate(s, py, s.h)),
                            call1("round", pad_coordinate(s, px, s.w)), s, acc);
          } else if (s.mode == "bilinear") {
            px = pad_coordinate(s, px, s.w), py = pad_coordinate(s, py, s.h);
            PrimExpr x0 = call1("floor", px), y0 = call1("floor", py);
            PrimExpr we = tir::Sub(px, x0), ww = tir::Sub(k(1), we), ws = tir::Sub(py, y0), wn = tir::Sub(k(1), ws);
            PrimExpr x1 = tir::Add(x0, k(1)), y1 = tir::Add(y0, k(1));
            auto term = [&](const PrimExpr& wy, const PrimExpr& wx, const PrimExpr& yf, const PrimExpr& xf) {
              PrimExpr weight = tir::Mul(wy, wx);
              if (weight.dtype() != acc) weight = tir::Cast(acc, weight);
              return PrimExpr(tir::Mul(tap_value(x, nc, yf, xf, s, acc), weight));
            };
            sum = tir::Add(tir::Add(tir::Add(term(wn, ww, y0, x0), term(wn, we, y0, x1)), term(ws, ww, y1, x0)),
                           term(ws, we, y1, x1));
          } else {
            PrimExpr x0 = call1("floor", px), y0 = call1("floor", py);
            std::vector<PrimExpr> wx = cubic_weights(tir::Sub(px, x0), -0.75);
            std::vector<PrimExpr> wy = cubic_weights(tir::Sub(py, y0), -0.75);
            auto weight = [&](const PrimExpr& v) { return v.dtype() == acc ? v : PrimExpr(tir::Cast(acc, v)); };
            for (int64_t i = 0; i < 4; ++i) {
              PrimExpr yf = pad_coordinate(s, tir::Add(y0, k(double(i - 1))), s.h), row;
              for (int64_t j = 0; j < 4; ++j) {
                PrimExpr xf = pad_coordinate(s, tir::Add(x0, k(double(j - 1))), s.w);
                PrimExpr term = tir::Mul(tap_value(x, nc, yf, xf, s, acc), weight(wx[j]));
                row = row.defined() ? PrimExpr(tir::Add(row, term)) : term;
              }
              PrimExpr term = tir::Mul(row, weight(wy[i]));
              sum = sum.defined() ? PrimExpr(tir::Add(sum, term)) : term;
            }
          }
          return sum.dtype() == x->dtype ? sum : PrimExpr(tir::Cast(x->dtype, sum));
        }));
      });
}

}  // namespace loom::ops
