// Linear algebra: matmul (batched, with transposes) and dense
// (docs/operators.md).
#include "loom/ir/text.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

void check_dtypes(const ir::TensorTypeNode& a, const ir::TensorTypeNode& b) {
  if (a.dtype != b.dtype) {
    LOOM_THROW(TypeError) << "operands have dtypes " << a.dtype.to_string() << " and " << b.dtype.to_string();
  }
  if (a.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs numeric tensors, got bool";
}

// Batch dimensions of a matrix operand (all but the last two).
Array batch_of(const Array& shape) {
  std::vector<Any> out(shape.begin(), shape.end() - 2);
  return Array(out);
}

// The indices of a rank-`rank` operand with batch dims broadcast against
// `out` (whose last two are the matrix indices) and its matrix indices.
Indices operand_index(const PrimBuilder& b, const tir::Buffer& buf, const Indices& out, const PrimExpr& row,
                      const PrimExpr& col) {
  Indices shape = buffer_shape(buf);
  size_t batch = shape.size() - 2, out_batch = out.size() - 2;
  Indices index;
  for (size_t k = 0; k < batch; ++k) {
    bool one = constant_dim(Any(shape[k])) == std::optional<int64_t>(1);
    index.push_back(one ? PrimExpr(int64_t{0}) : out[out_batch - batch + k]);
  }
  index.push_back(row);
  index.push_back(col);
  return index;
}
}  // namespace

void register_linalg_ops() {
  define_operator(
      "matmul", 2,
      {{"transpose_a", "bool", Any(false), "use a's last two axes swapped"},
       {"transpose_b", "bool", Any(false), "use b's last two axes swapped"}},
      ir::PatternKind::kOutputFusable, "a @ b over the last two axes, batch axes broadcast (NumPy matmul, ranks >= 2)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &a = tensor_arg(call, 0), &b = tensor_arg(call, 1);
        check_dtypes(a, b);
        if (a.shape.size() < 2 || b.shape.size() < 2) {
          LOOM_THROW(TypeError) << "needs operands of rank 2 or more, got " << shape_text(a.shape) << " and "
                                << shape_text(b.shape) << " (reshape vectors to matrices)";
        }
        bool ta = attrs_of(call).at("transpose_a").as_bool(), tb = attrs_of(call).at("transpose_b").as_bool();
        size_t ra = a.shape.size(), rb = b.shape.size();
        Any m = a.shape[ta ? ra - 1 : ra - 2], ka = a.shape[ta ? ra - 2 : ra - 1];
        Any kb = b.shape[tb ? rb - 1 : rb - 2], n = b.shape[tb ? rb - 2 : rb - 1];
        if (!same_dim(ka, kb)) {
          LOOM_THROW(TypeError) << "the inner dimensions differ: " << shape_text(a.shape) << " @ " << shape_text(b.shape)
                                << " has " << ir::to_text(ka) << " against " << ir::to_text(kb);
        }
        std::vector<Any> shape = broadcast_shapes(batch_of(a.shape), batch_of(b.shape));
        shape.push_back(m);
        shape.push_back(n);
        return ir::TensorType(Array(shape), a.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& at = tensor_arg(call, 0);
        tir::Buffer A = b.param(at, "A");
        tir::Buffer B = b.param(tensor_arg(call, 1), "B");
        tir::Buffer C = b.param(result_type(call), "C");
        bool ta = attrs_of(call).at("transpose_a").as_bool(), tb = attrs_of(call).at("transpose_b").as_bool();
        Indices ashape = buffer_shape(A);
        PrimExpr k_extent = ashape[ta ? ashape.size() - 2 : ashape.size() - 1];
        DataType t = C->dtype;
        return b.finish(reduction(
            C, {k_extent}, make_const(t, 0), [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              const PrimExpr &i = out[out.size() - 2], &j = out[out.size() - 1], &k = r[0];
              PrimExpr x = tir::BufferLoad(A, ta ? operand_index(b, A, out, k, i) : operand_index(b, A, out, i, k));
              PrimExpr y = tir::BufferLoad(B, tb ? operand_index(b, B, out, j, k) : operand_index(b, B, out, k, j));
              return PrimExpr(tir::Mul(x, y));
            }));
      });

  define_operator(
      "dense", 2, {}, ir::PatternKind::kOutputFusable, "x @ w^T: x (..., K), w (N, K) -> (..., N)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &w = tensor_arg(call, 1);
        check_dtypes(x, w);
        if (x.shape.size() < 1 || w.shape.size() != 2) {
          LOOM_THROW(TypeError) << "needs x of rank 1 or more and w of rank 2, got " << shape_text(x.shape) << " and "
                                << shape_text(w.shape);
        }
        if (!same_dim(x.shape[x.shape.size() - 1], w.shape[1])) {
          LOOM_THROW(TypeError) << "x " << shape_text(x.shape) << " and w " << shape_text(w.shape)
                                << " differ in their last dimension";
        }
        std::vector<Any> shape(x.shape.begin(), x.shape.end() - 1);
        shape.push_back(w.shape[0]);
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer X = b.param(tensor_arg(call, 0), "X");
        tir::Buffer W = b.param(tensor_arg(call, 1), "W");
        tir::Buffer Y = b.param(result_type(call), "Y");
        Indices wshape = buffer_shape(W);
        DataType t = Y->dtype;
        return b.finish(reduction(
            Y, {wshape[1]}, make_const(t, 0), [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              Indices xi(out.begin(), out.end() - 1);
              xi.push_back(r[0]);
              return PrimExpr(tir::Mul(tir::BufferLoad(X, xi), tir::BufferLoad(W, {out.back(), r[0]})));
            }));
      });
}

}  // namespace loom::ops
