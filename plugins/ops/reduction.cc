// Reductions over axes: sum, mean, max, min (docs/operators.md).
#include <cmath>
#include <limits>

#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

// The reduced axes of a call (attribute `axis`; empty: all), sorted.
std::vector<bool> reduced_axes(const graph::CallNode& call, size_t rank) {
  std::vector<bool> reduced(rank, false);
  Array axes = attrs_of(call).at("axis").cast<Array>();
  if (axes.size() == 0) return std::vector<bool>(rank, true);
  for (const Any& a : axes) {
    int64_t axis = normalize_axis(a.as_int(), rank);
    if (reduced[axis]) LOOM_THROW(TypeError) << "axis " << a.as_int() << " is given twice";
    reduced[axis] = true;
  }
  return reduced;
}

void reduction(const std::string& name, bool float_only, const std::string& doc, std::function<PrimExpr(DataType)> init,
               std::function<PrimExpr(const PrimExpr&, const PrimExpr&)> combine, bool mean) {
  define_operator(
      name, 1,
      {{"axis", "Array", Any(Array(std::vector<Any>{})), "axes to reduce (negative from the end); [] reduces all"},
       {"keepdims", "bool", Any(false), "keep reduced axes with extent 1"}},
      ir::PatternKind::kReduction, doc,
      [name, float_only](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (float_only && !is_float(x.dtype))
          LOOM_THROW(TypeError) << "needs a float tensor, got " << x.dtype.to_string();
        std::vector<bool> reduced = reduced_axes(call, x.shape.size());
        bool keep = attrs_of(call).at("keepdims").as_bool();
        std::vector<Any> shape;
        for (size_t k = 0; k < reduced.size(); ++k) {
          if (!reduced[k])
            shape.push_back(x.shape[k]);
          else if (keep)
            shape.push_back(Any(tir::IntImm(DataType::Int(64), 1)));
        }
        return ir::TensorType(Array(shape), x.dtype);
      },
      [init, combine, mean](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        std::vector<bool> reduced = reduced_axes(call, xt.shape.size());
        bool keep = attrs_of(call).at("keepdims").as_bool();
        Indices extents, xshape = buffer_shape(x);
        for (size_t k = 0; k < reduced.size(); ++k)
          if (reduced[k]) extents.push_back(xshape[k]);
        auto value = [&](const Indices& out, const Indices& r) {
          Indices index;
          size_t o = 0, red = 0;
          for (size_t k = 0; k < reduced.size(); ++k) {
            if (reduced[k]) {
              index.push_back(r[red++]);
              if (keep) ++o;
            } else {
              index.push_back(out[o++]);
            }
          }
          return PrimExpr(tir::BufferLoad(x, index));
        };
        std::function<PrimExpr(const PrimExpr&)> finalize;
        if (mean) {
          PrimExpr count = int64_t{1};
          for (const PrimExpr& e : extents) count = tir::Mul(count, e);
          DataType t = x->dtype;
          finalize = [count, t](const PrimExpr& acc) { return PrimExpr(tir::Div(acc, tir::Cast(t, count))); };
        }
        return b.finish(reduction(y, extents, init(x->dtype), combine, value, finalize));
      });
}

PrimExpr lowest(DataType t) {
  if (is_float(t)) return make_const(t, -std::numeric_limits<double>::infinity());
  if (t.code == DataType::kUInt || t.code == DataType::kBool) return tir::IntImm(t, 0);
  return tir::IntImm(t, t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1)));
}

PrimExpr highest(DataType t) {
  if (is_float(t)) return make_const(t, std::numeric_limits<double>::infinity());
  if (t.code == DataType::kBool) return tir::IntImm(t, 1);
  if (t.code == DataType::kUInt) {
    return tir::IntImm(t, t.bits >= 64 ? -1 : static_cast<int64_t>((uint64_t{1} << t.bits) - 1));
  }
  return tir::IntImm(t, t.bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits - 1)) - 1);
}
}  // namespace

void register_reduction_ops() {
  auto zero = [](DataType t) { return make_const(t, 0); };
  auto add = [](const PrimExpr& a, const PrimExpr& b) { return PrimExpr(tir::Add(a, b)); };
  reduction("sum", false, "sum over axes", zero, add, false);
  reduction("mean", true, "mean over axes (floats)", zero, add, true);
  reduction(
      "prod", false, "product over axes", [](DataType t) { return make_const(t, 1); },
      [](const PrimExpr& a, const PrimExpr& b) { return PrimExpr(tir::Mul(a, b)); }, false);
  reduction(
      "max", false, "maximum over axes; NaN propagates", lowest,
      [](const PrimExpr& a, const PrimExpr& b) { return PrimExpr(tir::Max(a, b)); }, false);
  reduction(
      "min", false, "minimum over axes; NaN propagates", highest,
      [](const PrimExpr& a, const PrimExpr& b) { return PrimExpr(tir::Min(a, b)); }, false);
}

}  // namespace loom::ops
