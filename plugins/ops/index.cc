// Operators that read or write at indices held in a tensor: take (ONNX
// Gather, NumPy take), gather_elements, gather_nd, scatter_elements,
// scatter_nd; and the ones that walk an axis in order: argmax, argmin,
// cumsum, topk (docs/operators.md, "Indexing" and "Along an axis").
//
// An index tensor is int32 or int64; a negative index counts from the end
// of its axis, and an index outside [-n, n) is clamped to the axis (ONNX
// leaves it undefined; no kernel reads or writes outside its buffers).
// The scatters and the in-order walks are sequential by nature (duplicate
// indices combine in order; a running sum carries from one element to the
// next), so their prim functions are marked scheduled: AutoSchedule
// neither parallelizes nor vectorizes them.
#include <limits>

#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

Any dim_of(int64_t v) { return Any(tir::IntImm(DataType::Int(64), v)); }

const ir::TensorTypeNode& index_tensor(const graph::CallNode& call, size_t i) {
  const auto& t = tensor_arg(call, i);
  if (t.dtype != DataType::Int(32) && t.dtype != DataType::Int(64)) {
    LOOM_THROW(TypeError) << "the indices (input " << i << ") must be int32 or int64, got " << t.dtype.to_string();
  }
  return t;
}

// An index value read from a tensor as an in-bounds int64 index of an
// axis of `extent`: negative from the end, then clamped.
PrimExpr in_bounds(const PrimExpr& raw, const PrimExpr& extent) {
  // In the index's own type, then widened (an int32 index never holds an
  // extent that does not fit it).
  DataType t = raw.dtype();
  PrimExpr n = extent.dtype() == t ? extent : PrimExpr(tir::Cast(t, extent));
  PrimExpr zero = make_const(t, 0), one = make_const(t, 1);
  PrimExpr wrapped = tir::Select(tir::LT(raw, zero), tir::Add(raw, n), raw);
  PrimExpr clamped = tir::Max(zero, tir::Min(wrapped, tir::Sub(n, one)));
  return t == DataType::Int(64) ? clamped : PrimExpr(tir::Cast(DataType::Int(64), clamped));
}

Map sequential() { return Map{{"scheduled", Any(true)}}; }

// out[i] = data[position(i)] over out's shape: the gathers' lowering, given
// where each output element reads (`extent`: data's shape, `idx`: the
// indices' buffer).
using Position = std::function<Indices(const Indices& i, const tir::Buffer& idx, const Indices& extent)>;

tir::PrimFunc gather_lowering(const graph::CallNode& call, const Position& position) {
  PrimBuilder b;
  tir::Buffer data = b.param(tensor_arg(call, 0), "Data");
  tir::Buffer idx = b.param(tensor_arg(call, 1), "Indices");
  tir::Buffer out = b.param(result_type(call), "Out");
  Indices extent = buffer_shape(data);
  return b.finish(
      compute(out, [&](const Indices& i) { return PrimExpr(tir::BufferLoad(data, position(i, idx, extent))); }));
}

PrimExpr combine(const std::string& reduction, const PrimExpr& old, const PrimExpr& update);

// out = data, then for each index i of the updates, out[position(i)] =
// combine(out there, updates[i]), in order: the scatters' lowering.
tir::PrimFunc scatter_lowering(const graph::CallNode& call, const Position& position) {
  PrimBuilder b;
  tir::Buffer data = b.param(tensor_arg(call, 0), "Data");
  tir::Buffer idx = b.param(tensor_arg(call, 1), "Indices");
  tir::Buffer upd = b.param(tensor_arg(call, 2), "Updates");
  tir::Buffer out = b.param(result_type(call), "Out");
  std::string reduction = attrs_of(call).at("reduction").as_string();
  Indices extent = buffer_shape(data);
  tir::Stmt copy = compute(out, [&](const Indices& i) { return PrimExpr(tir::BufferLoad(data, i)); });
  tir::Stmt scatter = loop_nest(buffer_shape(upd), [&](const Indices& i) {
    Indices at = position(i, idx, extent);
    return tir::Stmt(tir::BufferStore(out, combine(reduction, tir::BufferLoad(out, at), tir::BufferLoad(upd, i)), at));
  });
  return b.finish(tir::SeqStmt({copy, scatter}), sequential());
}

// The scatters' combination of the value there and the update.
PrimExpr combine(const std::string& reduction, const PrimExpr& old, const PrimExpr& update) {
  if (reduction == "none") return update;
  if (reduction == "add") return tir::Add(old, update);
  if (reduction == "mul") return tir::Mul(old, update);
  if (reduction == "max") return tir::Max(old, update);
  return tir::Min(old, update);
}

void check_reduction(const graph::CallNode& call) {
  std::string r = attrs_of(call).at("reduction").as_string();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min") {
    LOOM_THROW(TypeError) << "reduction must be none, add, mul, max or min, got '" << r << "'";
  }
}

void check_same_dims(const Array& a, const Array& b, size_t from_a, size_t from_b, size_t count,
                     const std::string& what) {
  for (size_t k = 0; k < count; ++k) {
    if (!same_dim(a[from_a + k], b[from_b + k])) {
      LOOM_THROW(TypeError) << what << ": dimension " << k << " differs: " << shape_text(a) << " and " << shape_text(b);
    }
  }
}

void register_take() {
  define_operator(
      "take", 2, {{"axis", "int", Any(int64_t{0}), "the axis the indices select along"}}, ir::PatternKind::kInjective,
      "data's slices along an axis at each index (ONNX Gather, NumPy take): the result's shape is data's with the "
      "axis replaced by the indices' shape",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& data = tensor_arg(call, 0);
        const auto& idx = index_tensor(call, 1);
        size_t axis = static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), data.shape.size()));
        std::vector<Any> shape(data.shape.begin(), data.shape.begin() + axis);
        shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
        shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
        return ir::TensorType(Array(shape), data.dtype);
      },
      [](const graph::CallNode& call) {
        size_t axis =
            static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), tensor_arg(call, 0).shape.size()));
        size_t q = tensor_arg(call, 1).shape.size();
        return gather_lowering(call, [&](const Indices& i, const tir::Buffer& idx, const Indices& extent) {
          Indices where(i.begin() + axis, i.begin() + axis + q);
          Indices at(i.begin(), i.begin() + axis);
          at.push_back(in_bounds(tir::BufferLoad(idx, where), extent[axis]));
          at.insert(at.end(), i.begin() + axis + q, i.end());
          return at;
        });
      });
}

void register_gather_elements() {
  define_operator(
      "gather_elements", 2, {{"axis", "int", Any(int64_t{0}), "the axis the indices select along"}},
      ir::PatternKind::kInjective,
      "out[i] = data[i with its axis entry replaced by indices[i]] (ONNX GatherElements, NumPy take_along_axis); the "
      "result has the indices' shape",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& data = tensor_arg(call, 0);
        const auto& idx = index_tensor(call, 1);
        if (data.shape.size() != idx.shape.size()) {
          LOOM_THROW(TypeError) << "data and indices must have the same rank, got " << shape_text(data.shape) << " and "
                                << shape_text(idx.shape);
        }
        normalize_axis(attrs_of(call).at("axis").as_int(), data.shape.size());
        return ir::TensorType(idx.shape, data.dtype);
      },
      [](const graph::CallNode& call) {
        size_t axis =
            static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), tensor_arg(call, 0).shape.size()));
        return gather_lowering(call, [&](const Indices& i, const tir::Buffer& idx, const Indices& extent) {
          Indices at = i;
          at[axis] = in_bounds(tir::BufferLoad(idx, i), extent[axis]);
          return at;
        });
      });
}

// gather_nd / scatter_nd: indices (..., k) address the first k axes of
// data after the batch axes.
struct NdShape {
  size_t batch, k, q;  // batch axes, index depth, rank of indices
};

NdShape nd_shape(const ir::TensorTypeNode& data, const ir::TensorTypeNode& idx, int64_t batch_dims) {
  if (idx.shape.size() == 0) LOOM_THROW(TypeError) << "the indices must have rank 1 or more";
  auto k = constant_dim(idx.shape[idx.shape.size() - 1]);
  if (!k) LOOM_THROW(TypeError) << "the indices' last dimension must be static, got " << shape_text(idx.shape);
  size_t b = static_cast<size_t>(batch_dims);
  if (batch_dims < 0 || b >= idx.shape.size() || b > data.shape.size()) {
    LOOM_THROW(TypeError) << "batch_dims " << batch_dims << " does not fit the ranks of " << shape_text(data.shape)
                          << " and " << shape_text(idx.shape);
  }
  if (static_cast<size_t>(*k) + b > data.shape.size()) {
    LOOM_THROW(TypeError) << "indices of depth " << *k << " after " << b << " batch axes address more axes than data "
                          << shape_text(data.shape) << " has";
  }
  check_same_dims(data.shape, idx.shape, 0, 0, b, "the batch axes of data and indices");
  return {b, static_cast<size_t>(*k), idx.shape.size()};
}

// Appends to `at` the in-bounds positions the index tuple at `lead` (the
// indices' leading positions) gives for data's axes batch .. batch + k.
void at_tuple(Indices& at, const tir::Buffer& idx, const Indices& lead, const NdShape& s, const Indices& extent) {
  for (size_t d = 0; d < s.k; ++d) {
    Indices where = lead;
    where.push_back(PrimExpr(static_cast<int64_t>(d)));
    at.push_back(in_bounds(tir::BufferLoad(idx, where), extent[s.batch + d]));
  }
}

void register_gather_nd() {
  define_operator(
      "gather_nd", 2, {{"batch_dims", "int", Any(int64_t{0}), "leading axes shared by data and indices"}},
      ir::PatternKind::kInjective,
      "slices of data at the index tuples in the indices' last axis (ONNX GatherND): result shape indices.shape[:-1] "
      "+ data.shape[batch_dims + depth:]",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& data = tensor_arg(call, 0);
        const auto& idx = index_tensor(call, 1);
        NdShape s = nd_shape(data, idx, attrs_of(call).at("batch_dims").as_int());
        std::vector<Any> shape(idx.shape.begin(), idx.shape.begin() + (s.q - 1));
        shape.insert(shape.end(), data.shape.begin() + s.batch + s.k, data.shape.end());
        return ir::TensorType(Array(shape), data.dtype);
      },
      [](const graph::CallNode& call) {
        NdShape s = nd_shape(tensor_arg(call, 0), tensor_arg(call, 1), attrs_of(call).at("batch_dims").as_int());
        return gather_lowering(call, [&](const Indices& i, const tir::Buffer& idx, const Indices& extent) {
          Indices at(i.begin(), i.begin() + s.batch);
          at_tuple(at, idx, Indices(i.begin(), i.begin() + (s.q - 1)), s, extent);
          at.insert(at.end(), i.begin() + (s.q - 1), i.end());
          return at;
        });
      });
}

std::vector<SchemaField> reduction_attr() {
  return {{"reduction", "str", Any(std::string("none")),
           "how an update combines with the value there: none (replace), add, mul, max, min; duplicate indices "
           "combine in order"}};
}

void register_scatters() {
  auto attrs = reduction_attr();
  attrs.insert(attrs.begin(), SchemaField{"axis", "int", Any(int64_t{0}), "the axis the indices address"});
  define_operator(
      "scatter_elements", 3, attrs, ir::PatternKind::kOpaque,
      "data with out[i with its axis entry replaced by indices[i]] = updates[i] for each i of the indices (ONNX "
      "ScatterElements); indices and updates have one shape",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& data = tensor_arg(call, 0);
        const auto& idx = index_tensor(call, 1);
        const auto& upd = tensor_arg(call, 2);
        check_reduction(call);
        if (idx.shape.size() != data.shape.size() || upd.shape.size() != idx.shape.size()) {
          LOOM_THROW(TypeError) << "data, indices and updates must have one rank, got " << shape_text(data.shape)
                                << ", " << shape_text(idx.shape) << " and " << shape_text(upd.shape);
        }
        check_same_dims(idx.shape, upd.shape, 0, 0, idx.shape.size(), "indices and updates");
        if (upd.dtype != data.dtype) {
          LOOM_THROW(TypeError) << "updates have dtype " << upd.dtype.to_string() << ", data "
                                << data.dtype.to_string();
        }
        normalize_axis(attrs_of(call).at("axis").as_int(), data.shape.size());
        return ir::TensorType(data.shape, data.dtype);
      },
      [](const graph::CallNode& call) {
        size_t axis =
            static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), tensor_arg(call, 0).shape.size()));
        return scatter_lowering(call, [&](const Indices& i, const tir::Buffer& idx, const Indices& extent) {
          Indices at = i;
          at[axis] = in_bounds(tir::BufferLoad(idx, i), extent[axis]);
          return at;
        });
      });

  define_operator(
      "scatter_nd", 3, reduction_attr(), ir::PatternKind::kOpaque,
      "data with the slices at the index tuples in the indices' last axis replaced by (or combined with) updates "
      "(ONNX ScatterND): updates.shape = indices.shape[:-1] + data.shape[depth:]",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& data = tensor_arg(call, 0);
        const auto& idx = index_tensor(call, 1);
        const auto& upd = tensor_arg(call, 2);
        check_reduction(call);
        NdShape s = nd_shape(data, idx, 0);
        size_t want = (s.q - 1) + data.shape.size() - s.k;
        if (upd.shape.size() != want) {
          LOOM_THROW(TypeError) << "updates of shape " << shape_text(upd.shape) << " do not fit indices "
                                << shape_text(idx.shape) << " into data " << shape_text(data.shape);
        }
        check_same_dims(idx.shape, upd.shape, 0, 0, s.q - 1, "indices and updates");
        check_same_dims(data.shape, upd.shape, s.k, s.q - 1, data.shape.size() - s.k, "data and updates");
        if (upd.dtype != data.dtype) {
          LOOM_THROW(TypeError) << "updates have dtype " << upd.dtype.to_string() << ", data "
                                << data.dtype.to_string();
        }
        return ir::TensorType(data.shape, data.dtype);
      },
      [](const graph::CallNode& call) {
        NdShape s = nd_shape(tensor_arg(call, 0), tensor_arg(call, 1), 0);
        return scatter_lowering(call, [&](const Indices& i, const tir::Buffer& idx, const Indices& extent) {
          Indices at;
          at_tuple(at, idx, Indices(i.begin(), i.begin() + (s.q - 1)), s, extent);
          at.insert(at.end(), i.begin() + (s.q - 1), i.end());
          return at;
        });
      });
}

// argmax / argmin: the first (or last) position of the extreme along an axis.
void register_arg_extreme(const std::string& name, bool max) {
  define_operator(
      name, 1,
      {{"axis", "int", Any(int64_t{0}), "the axis to search"},
       {"keepdims", "bool", Any(true), "keep the axis with extent 1"},
       {"select_last_index", "bool", Any(false), "on ties, the last position instead of the first"}},
      ir::PatternKind::kOpaque,
      std::string("the int64 position of the ") + (max ? "largest" : "smallest") +
          " value along an axis (the first on "
          "ties unless select_last_index)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (x.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs a numeric tensor, got bool";
        size_t axis = static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), x.shape.size()));
        auto extent = constant_dim(x.shape[axis]);
        if (extent && *extent == 0) LOOM_THROW(TypeError) << "the axis is empty in " << shape_text(x.shape);
        std::vector<Any> shape(x.shape.begin(), x.shape.end());
        if (attrs_of(call).at("keepdims").as_bool())
          shape[axis] = dim_of(1);
        else
          shape.erase(shape.begin() + axis);
        return ir::TensorType(Array(shape), DataType::Int(64));
      },
      [max](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        int64_t axis = normalize_axis(a.at("axis").as_int(), xt.shape.size());
        bool keep = a.at("keepdims").as_bool(), last = a.at("select_last_index").as_bool();
        tir::Buffer best = scratch("best", x->dtype);
        Indices zero{PrimExpr(int64_t{0})};
        tir::Stmt body = per_row(buffer_shape(x), axis, [&](const RowIndex& at, const Indices& outer) {
          Indices out = outer;
          if (keep) out.insert(out.begin() + axis, PrimExpr(int64_t{0}));
          PrimExpr held = tir::BufferLoad(best, zero);
          tir::Stmt scan = over(
              buffer_shape(x)[axis],
              [&](const PrimExpr& i) {
                PrimExpr v = tir::BufferLoad(x, at(i));
                PrimExpr better = max ? (last ? PrimExpr(tir::GE(v, held)) : PrimExpr(tir::GT(v, held)))
                                      : (last ? PrimExpr(tir::LE(v, held)) : PrimExpr(tir::LT(v, held)));
                if (is_float(x->dtype)) {  // a NaN wins, the first one (NumPy)
                  PrimExpr v_nan = tir::Call(DataType::Bool(), "isnan", {v});
                  PrimExpr held_nan = tir::Call(DataType::Bool(), "isnan", {held});
                  better = tir::And(tir::Not(held_nan), tir::Or(v_nan, better));
                }
                better = tir::Or(tir::EQ(i, PrimExpr(int64_t{0})), better);
                return tir::Stmt(
                    tir::SeqStmt({tir::BufferStore(y, tir::Select(better, i, tir::BufferLoad(y, out)), out),
                                  tir::BufferStore(best, tir::Select(better, v, held), zero)}));
              },
              "a");
          return tir::Stmt(tir::Allocate(best, scan));
        });
        return b.finish(body, sequential());
      });
}

void register_cumsum() {
  define_operator(
      "cumsum", 1,
      {{"axis", "int", Any(int64_t{0}), "the axis to sum along"},
       {"exclusive", "bool", Any(false), "each sum leaves out its own element"},
       {"reverse", "bool", Any(false), "sum from the end of the axis"}},
      ir::PatternKind::kOpaque, "running sums along an axis (ONNX CumSum, NumPy cumsum)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (x.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs a numeric tensor, got bool";
        normalize_axis(attrs_of(call).at("axis").as_int(), x.shape.size());
        return ir::TensorType(x.shape, x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        int64_t axis = normalize_axis(a.at("axis").as_int(), xt.shape.size());
        bool exclusive = a.at("exclusive").as_bool(), reverse = a.at("reverse").as_bool();
        tir::Buffer acc = scratch("acc", x->dtype);
        Indices zero{PrimExpr(int64_t{0})};
        PrimExpr n = buffer_shape(x)[axis];
        tir::Stmt body = per_row(buffer_shape(x), axis, [&](const RowIndex& at, const Indices&) {
          PrimExpr sum = tir::BufferLoad(acc, zero);
          tir::Stmt scan = over(
              n,
              [&](const PrimExpr& i) {
                PrimExpr pos = reverse ? PrimExpr(tir::Sub(tir::Sub(n, PrimExpr(int64_t{1})), i)) : i;
                PrimExpr v = tir::BufferLoad(x, at(pos));
                if (exclusive) {
                  return tir::Stmt(
                      tir::SeqStmt({tir::BufferStore(y, sum, at(pos)), tir::BufferStore(acc, tir::Add(sum, v), zero)}));
                }
                return tir::Stmt(tir::SeqStmt({tir::BufferStore(acc, tir::Add(sum, v), zero),
                                               tir::BufferStore(y, tir::BufferLoad(acc, zero), at(pos))}));
              },
              "a");
          return tir::Stmt(
              tir::Allocate(acc, tir::SeqStmt({tir::BufferStore(acc, make_const(x->dtype, 0), zero), scan})));
        });
        return b.finish(body, sequential());
      });
}

// topk: k passes over each row, each picking the best element after the
// previous pick in the order (value, then position): ties go to the lower
// position, as ONNX and PyTorch order them.
void register_topk() {
  define_operator(
      "topk", 1,
      {{"k", "int", Any(), "how many elements to keep"},
       {"axis", "int", Any(int64_t{-1}), "the axis to search"},
       {"largest", "bool", Any(true), "the largest (or the smallest) elements"}},
      ir::PatternKind::kOpaque,
      "the k largest (or smallest) values along an axis and their int64 positions, a tuple, in order (ties: the "
      "lower position first)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (x.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs a numeric tensor, got bool";
        Map a = attrs_of(call);
        size_t axis = static_cast<size_t>(normalize_axis(a.at("axis").as_int(), x.shape.size()));
        int64_t k = a.at("k").as_int();
        auto extent = constant_dim(x.shape[axis]);
        if (k < 0 || (extent && k > *extent)) {
          LOOM_THROW(TypeError) << "k = " << k << " does not fit the axis of " << shape_text(x.shape);
        }
        std::vector<Any> shape(x.shape.begin(), x.shape.end());
        shape[axis] = dim_of(k);
        return ir::TupleType({ir::TensorType(Array(shape), x.dtype), ir::TensorType(Array(shape), DataType::Int(64))});
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        const auto* tuple = call.checked_type.as<ir::TupleTypeNode>();
        tir::Buffer values = b.param(*tuple->fields[0].cast<ir::Type>().as<ir::TensorTypeNode>(), "Values");
        tir::Buffer positions = b.param(*tuple->fields[1].cast<ir::Type>().as<ir::TensorTypeNode>(), "Indices");
        Map a = attrs_of(call);
        int64_t axis = normalize_axis(a.at("axis").as_int(), xt.shape.size());
        int64_t k = a.at("k").as_int();
        bool largest = a.at("largest").as_bool();
        DataType t = x->dtype;
        tir::Buffer best = scratch("best", t), at_best = scratch("at", DataType::Int(64));
        Indices zero{PrimExpr(int64_t{0})};
        auto before = [&](const PrimExpr& v, const PrimExpr& w) {  // v comes before w in the order
          return largest ? PrimExpr(tir::GT(v, w)) : PrimExpr(tir::LT(v, w));
        };
        tir::Stmt body = per_row(buffer_shape(x), axis, [&](const RowIndex& at, const Indices&) {
          return over(
              PrimExpr(k),
              [&](const PrimExpr& j) {
                PrimExpr prev_at = tir::Max(tir::Sub(j, PrimExpr(int64_t{1})), PrimExpr(int64_t{0}));
                PrimExpr prev_v = tir::BufferLoad(values, at(prev_at)),
                         prev_i = tir::BufferLoad(positions, at(prev_at));
                PrimExpr held_v = tir::BufferLoad(best, zero), held_i = tir::BufferLoad(at_best, zero);
                tir::Stmt scan = over(
                    buffer_shape(x)[axis],
                    [&](const PrimExpr& i) {
                      PrimExpr v = tir::BufferLoad(x, at(i));
                      PrimExpr after_prev =
                          tir::Or(tir::EQ(j, PrimExpr(int64_t{0})),
                                  tir::Or(before(prev_v, v), tir::And(tir::EQ(v, prev_v), tir::GT(i, prev_i))));
                      PrimExpr take =
                          tir::And(after_prev, tir::Or(tir::LT(held_i, PrimExpr(int64_t{0})), before(v, held_v)));
                      // The position first (its condition reads the held value);
                      // the value follows where the position became i.
                      return tir::Stmt(
                          tir::SeqStmt({tir::BufferStore(at_best, tir::Select(take, i, held_i), zero),
                                        tir::BufferStore(best, tir::Select(tir::EQ(held_i, i), v, held_v), zero)}));
                    },
                    "a");
                tir::Stmt pick =
                    tir::SeqStmt({tir::BufferStore(at_best, PrimExpr(int64_t{-1}), zero),
                                  tir::BufferStore(best, make_const(t, 0), zero), scan,
                                  tir::BufferStore(values, held_v, at(j)), tir::BufferStore(positions, held_i, at(j))});
                return tir::Stmt(tir::Allocate(best, tir::Allocate(at_best, pick)));
              },
              "j");
        });
        return b.finish(body, sequential());
      });
}
}  // namespace

void register_index_ops() {
  register_take();
  register_gather_elements();
  register_gather_nd();
  register_scatters();
  register_arg_extreme("argmax", true);
  register_arg_extreme("argmin", false);
  register_cumsum();
  register_topk();
}

}  // namespace loom::ops
