// Neural-network operators: softmax, log_softmax, layer_norm and batch_norm
// in inference form (docs/operators.md).
#include <cmath>
#include <limits>

#include "loom/ir/text.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

PrimExpr call1(const std::string& name, const PrimExpr& x) { return tir::Call(x.dtype(), name, {x}); }

const ir::TensorTypeNode& float_tensor(const graph::CallNode& call, size_t i) {
  const auto& t = tensor_arg(call, i);
  if (!is_float(t.dtype))
    LOOM_THROW(TypeError) << "argument " << i << " must be a float tensor, got " << t.dtype.to_string();
  return t;
}

void softmax_like(const std::string& name, bool log, const std::string& doc) {
  define_operator(
      name, 1, {{"axis", "int", Any(int64_t{-1}), "the axis to normalise over"}}, ir::PatternKind::kOpaque, doc,
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = float_tensor(call, 0);
        normalize_axis(attrs_of(call).at("axis").as_int(), x.shape.size());
        return ir::TensorType(x.shape, x.dtype);
      },
      [log](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Indices shape = buffer_shape(x);
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), shape.size());
        DataType t = x->dtype;
        tir::Buffer m = scratch("max", t), s = scratch("sum", t);
        Indices zero{PrimExpr(int64_t{0})};
        // One row: its max; softmax stores exp(x - max) once and sums what
        // it stored, then scales the row by 1 / sum; log_softmax sums
        // exp(x - max) and writes x - (max + log(sum)).  Each step is a
        // loop over the row with one store (AutoSchedule vectorizes each;
        // the max and the sum become per-lane partial results).
        tir::Stmt body = per_row(shape, axis, [&](const RowIndex& at, const Indices&) {
          PrimExpr mx = tir::BufferLoad(m, zero), sum = tir::BufferLoad(s, zero);
          auto shifted = [&](const PrimExpr& a) { return PrimExpr(tir::Sub(tir::BufferLoad(x, at(a)), mx)); };
          auto row = [&](const std::function<PrimExpr(const PrimExpr&)>& value, const tir::Buffer& to, bool along) {
            return over(
                shape[axis],
                [&](const PrimExpr& a) { return tir::Stmt(tir::BufferStore(to, value(a), along ? at(a) : zero)); },
                "a");
          };
          std::vector<tir::Stmt> steps{
              tir::BufferStore(m, make_const(t, -std::numeric_limits<double>::infinity()), zero),
              row([&](const PrimExpr& a) { return PrimExpr(tir::Max(mx, tir::BufferLoad(x, at(a)))); }, m, false),
              tir::BufferStore(s, make_const(t, 0), zero)};
          if (log) {
            steps.push_back(
                row([&](const PrimExpr& a) { return PrimExpr(tir::Add(sum, call1("exp", shifted(a)))); }, s, false));
            steps.push_back(tir::BufferStore(s, tir::Add(mx, call1("log", sum)), zero));
            steps.push_back(
                row([&](const PrimExpr& a) { return PrimExpr(tir::Sub(tir::BufferLoad(x, at(a)), sum)); }, y, true));
          } else {
            steps.push_back(row([&](const PrimExpr& a) { return call1("exp", shifted(a)); }, y, true));
            steps.push_back(
                row([&](const PrimExpr& a) { return PrimExpr(tir::Add(sum, tir::BufferLoad(y, at(a)))); }, s, false));
            steps.push_back(tir::BufferStore(s, tir::Div(make_const(t, 1), sum), zero));
            steps.push_back(
                row([&](const PrimExpr& a) { return PrimExpr(tir::Mul(tir::BufferLoad(y, at(a)), sum)); }, y, true));
          }
          return tir::Stmt(tir::Allocate(m, tir::Allocate(s, tir::SeqStmt(steps))));
        });
        return b.finish(body);
      });
}
}  // namespace

void register_nn_ops() {
  softmax_like("softmax", false, "exp(x - max) / sum(exp(x - max)) along an axis");
  softmax_like("log_softmax", true, "x - max - log(sum(exp(x - max))) along an axis");

  define_operator(
      "layer_norm", 3, {{"epsilon", "float", Any(1e-5), "added to the variance"}}, ir::PatternKind::kOpaque,
      "(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis; gamma and beta have its extent",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = float_tensor(call, 0), &g = float_tensor(call, 1), &bt = float_tensor(call, 2);
        if (x.shape.size() < 1) LOOM_THROW(TypeError) << "needs rank 1 or more";
        for (const auto* p : {&g, &bt}) {
          if (p->shape.size() != 1 || p->dtype != x.dtype ||
              constant_dim(p->shape[0]) != constant_dim(x.shape[x.shape.size() - 1])) {
            LOOM_THROW(TypeError) << "gamma and beta must be " << x.dtype.to_string()
                                  << " vectors of the last extent of " << shape_text(x.shape) << ", got "
                                  << shape_text(p->shape);
          }
        }
        return ir::TensorType(x.shape, x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer g = b.param(tensor_arg(call, 1), "Gamma");
        tir::Buffer bt = b.param(tensor_arg(call, 2), "Beta");
        tir::Buffer y = b.param(result_type(call), "Y");
        Indices shape = buffer_shape(x);
        int64_t axis = static_cast<int64_t>(shape.size()) - 1;
        DataType t = x->dtype;
        PrimExpr n = tir::Cast(t, shape[axis]), eps = make_const(t, attrs_of(call).at("epsilon").as_float());
        tir::Buffer mean = scratch("mean", t), var = scratch("var", t);
        Indices zero{PrimExpr(int64_t{0})};
        return b.finish(per_row(shape, axis, [&](const RowIndex& at, const Indices&) {
          // The mean, the variance (a second pass over the row, in cache),
          // then var holds 1 / sqrt(variance + epsilon) for the last pass.
          PrimExpr mu = tir::BufferLoad(mean, zero), v = tir::BufferLoad(var, zero);
          auto centered = [&](const PrimExpr& a) { return PrimExpr(tir::Sub(tir::BufferLoad(x, at(a)), mu)); };
          std::vector<tir::Stmt> steps{
              tir::BufferStore(mean, make_const(t, 0), zero),
              over(
                  shape[axis],
                  [&](const PrimExpr& a) {
                    return tir::Stmt(tir::BufferStore(mean, tir::Add(mu, tir::BufferLoad(x, at(a))), zero));
                  },
                  "a"),
              tir::BufferStore(mean, tir::Div(mu, n), zero),
              tir::BufferStore(var, make_const(t, 0), zero),
              over(
                  shape[axis],
                  [&](const PrimExpr& a) {
                    return tir::Stmt(tir::BufferStore(var, tir::Add(v, tir::Mul(centered(a), centered(a))), zero));
                  },
                  "a"),
              tir::BufferStore(var, call1("rsqrt", tir::Add(tir::Div(v, n), eps)), zero),
              over(
                  shape[axis],
                  [&](const PrimExpr& a) {
                    PrimExpr norm = tir::Mul(centered(a), v);
                    return tir::Stmt(tir::BufferStore(
                        y, tir::Add(tir::Mul(norm, tir::BufferLoad(g, {a})), tir::BufferLoad(bt, {a})), at(a)));
                  },
                  "a")};
          return tir::Stmt(tir::Allocate(mean, tir::Allocate(var, tir::SeqStmt(steps))));
        }));
      });

  define_operator(
      "batch_norm", 5,
      {{"axis", "int", Any(int64_t{1}), "the channel axis"}, {"epsilon", "float", Any(1e-5), "added to the variance"}},
      ir::PatternKind::kBroadcast,
      "inference form: (x - mean[c]) / sqrt(var[c] + epsilon) * gamma[c] + beta[c]; arguments x, gamma, beta, mean, "
      "var",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = float_tensor(call, 0);
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), x.shape.size());
        for (size_t i = 1; i < 5; ++i) {
          const auto& p = float_tensor(call, i);
          if (p.shape.size() != 1 || p.dtype != x.dtype || constant_dim(p.shape[0]) != constant_dim(x.shape[axis])) {
            LOOM_THROW(TypeError) << "argument " << i << " must be a " << x.dtype.to_string() << " vector of the "
                                  << ir::to_text(x.shape[axis]) << " channels, got " << shape_text(p.shape);
          }
        }
        return ir::TensorType(x.shape, x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        std::vector<tir::Buffer> p;
        for (const char* name : {"Gamma", "Beta", "Mean", "Var"})
          p.push_back(b.param(tensor_arg(call, p.size() + 1), name));
        tir::Buffer y = b.param(result_type(call), "Y");
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), buffer_shape(x).size());
        DataType t = x->dtype;
        PrimExpr eps = make_const(t, attrs_of(call).at("epsilon").as_float());
        return b.finish(compute(y, [&](const Indices& i) {
          Indices c{i[axis]};
          PrimExpr norm = tir::Div(tir::Sub(tir::BufferLoad(x, i), tir::BufferLoad(p[2], c)),
                                   call1("sqrt", tir::Add(tir::BufferLoad(p[3], c), eps)));
          return PrimExpr(tir::Add(tir::Mul(norm, tir::BufferLoad(p[0], c)), tir::BufferLoad(p[1], c)));
        }));
      });
}

}  // namespace loom::ops
