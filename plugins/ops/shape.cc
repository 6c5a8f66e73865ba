// Shape operators: reshape, transpose, flatten, expand_dims, squeeze,
// broadcast_to (pattern: injective; docs/operators.md).
#include "lowering.h"
#include "loom/ir/text.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;
using Indices = std::vector<PrimExpr>;

std::vector<int64_t> ints(const Any& value) {
  std::vector<int64_t> out;
  for (const Any& v : value.cast<Array>()) out.push_back(v.as_int());
  return out;
}

Any dim_of(int64_t v) { return Any(tir::IntImm(DataType::Int(64), v)); }

// Constant dimensions of a type; Error naming `what` when one is symbolic.
std::vector<int64_t> static_shape(const ir::TensorTypeNode& t, const std::string& what) {
  std::vector<int64_t> out;
  for (const Any& d : t.shape) {
    auto c = constant_dim(d);
    if (!c) LOOM_THROW(TypeError) << what << " needs a static shape, got " << shape_text(t.shape);
    out.push_back(*c);
  }
  return out;
}

// Row-major unravel of `flat` over `shape`.
Indices unravel(PrimExpr flat, const Indices& shape) {
  Indices out(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    out[k] = k == 0 ? flat : PrimExpr(tir::FloorMod(flat, shape[k]));
    flat = tir::FloorDiv(flat, shape[k]);
  }
  return out;
}

PrimExpr ravel(const Indices& index, const Indices& shape) {
  PrimExpr flat = int64_t{0};
  for (size_t k = 0; k < shape.size(); ++k) flat = tir::Add(tir::Mul(flat, shape[k]), index[k]);
  return flat;
}

// An operator whose output element at `out` reads x at index(out).
tir::PrimFunc gather(const graph::CallNode& call,
                     const std::function<Indices(const Indices&, const Indices& in_shape, const Indices& out_shape)>& index) {
  PrimBuilder b;
  tir::Buffer x = b.buffer(tensor_arg(call, 0), "X");
  tir::Buffer y = b.buffer(result_type(call), "Y");
  Indices in_shape = buffer_shape(x), out_shape = buffer_shape(y);
  return b.finish(b.compute(y, [&](const Indices& i) { return PrimExpr(tir::BufferLoad(x, index(i, in_shape, out_shape))); }));
}

Indices reshape_index(const Indices& i, const Indices& in_shape, const Indices& out_shape) {
  if (in_shape.empty()) return {};
  return unravel(ravel(i, out_shape), in_shape);
}
}  // namespace

void register_shape_ops() {
  const auto injective = ir::PatternKind::kInjective;
  define(
      "reshape", 1, {{"shape", "Array", Any(), "the new shape; one entry may be -1 (inferred)"}}, injective,
      "the same elements in a new shape (row-major)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<int64_t> in = static_shape(x, "reshape"), out = ints(attrs_of(call).at("shape"));
        int64_t count = 1, known = 1, infer = -1;
        for (int64_t d : in) count *= d;
        for (size_t k = 0; k < out.size(); ++k) {
          if (out[k] == -1) {
            if (infer >= 0) LOOM_THROW(TypeError) << "only one dimension of the new shape may be -1";
            infer = static_cast<int64_t>(k);
          } else if (out[k] < 0) {
            LOOM_THROW(TypeError) << "dimension " << k << " of the new shape is " << out[k];
          } else {
            known *= out[k];
          }
        }
        if (infer >= 0) {
          if (known == 0 || count % known != 0) {
            LOOM_THROW(TypeError) << "cannot infer the -1 of the new shape: " << count << " elements are not a multiple of "
                                  << known;
          }
          out[infer] = count / known;
          known *= out[infer];
        }
        if (known != count) {
          LOOM_THROW(TypeError) << "cannot reshape " << shape_text(x.shape) << " (" << count << " elements) to "
                                << known << " elements";
        }
        std::vector<Any> shape;
        for (int64_t d : out) shape.push_back(dim_of(d));
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) { return gather(call, reshape_index); });

  define(
      "flatten", 1, {}, injective, "(d0, d1, ...) -> (d0, d1 * ...); d0 may be symbolic",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (x.shape.size() < 1) LOOM_THROW(TypeError) << "needs rank 1 or more";
        int64_t rest = 1;
        for (size_t k = 1; k < x.shape.size(); ++k) {
          auto c = constant_dim(x.shape[k]);
          if (!c) LOOM_THROW(TypeError) << "needs static dimensions after the first, got " << shape_text(x.shape);
          rest *= *c;
        }
        return ir::TensorType(Array(std::vector<Any>{x.shape[0], dim_of(rest)}), x.dtype);
      },
      [](const graph::CallNode& call) {
        return gather(call, [](const Indices& i, const Indices& in_shape, const Indices&) {
          Indices rest(in_shape.begin() + 1, in_shape.end()), out{i[0]};
          Indices tail = unravel(i[1], rest);
          out.insert(out.end(), tail.begin(), tail.end());
          return out;
        });
      });

  define(
      "transpose", 1, {{"axes", "Array", Any(Array(std::vector<Any>{})), "a permutation; [] reverses the axes"}},
      injective, "permutes the axes: result axis k is x's axis axes[k]",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<int64_t> axes = ints(attrs_of(call).at("axes"));
        size_t rank = x.shape.size();
        if (axes.empty())
          for (size_t k = rank; k-- > 0;) axes.push_back(static_cast<int64_t>(k));
        if (axes.size() != rank) LOOM_THROW(TypeError) << "axes has " << axes.size() << " entries for rank " << rank;
        std::vector<bool> seen(rank, false);
        std::vector<Any> shape;
        for (int64_t a : axes) {
          int64_t n = normalize_axis(a, rank);
          if (seen[n]) LOOM_THROW(TypeError) << "axes is not a permutation: axis " << a << " repeats";
          seen[n] = true;
          shape.push_back(x.shape[n]);
        }
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        std::vector<int64_t> axes = ints(attrs_of(call).at("axes"));
        size_t rank = tensor_arg(call, 0).shape.size();
        if (axes.empty())
          for (size_t k = rank; k-- > 0;) axes.push_back(static_cast<int64_t>(k));
        return gather(call, [&](const Indices& i, const Indices&, const Indices&) {
          Indices in(rank);
          for (size_t k = 0; k < rank; ++k) in[normalize_axis(axes[k], rank)] = i[k];
          return in;
        });
      });

  define(
      "expand_dims", 1, {{"axis", "int", Any(), "where the new axis of extent 1 goes (-1: last)"}}, injective,
      "inserts an axis of extent 1",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), x.shape.size() + 1);
        std::vector<Any> shape(x.shape.begin(), x.shape.end());
        shape.insert(shape.begin() + axis, dim_of(1));
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        size_t rank = tensor_arg(call, 0).shape.size();
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), rank + 1);
        return gather(call, [&](const Indices& i, const Indices&, const Indices&) {
          Indices in(i.begin(), i.end());
          in.erase(in.begin() + axis);
          return in;
        });
      });

  auto squeezed = [](const graph::CallNode& call, const ir::TensorTypeNode& x) {
    std::vector<int64_t> axes = ints(attrs_of(call).at("axis"));
    std::vector<bool> drop(x.shape.size(), false);
    if (axes.empty()) {
      for (size_t k = 0; k < x.shape.size(); ++k) drop[k] = constant_dim(x.shape[k]) == std::optional<int64_t>(1);
    }
    for (int64_t a : axes) {
      int64_t n = normalize_axis(a, x.shape.size());
      if (constant_dim(x.shape[n]) != std::optional<int64_t>(1)) {
        LOOM_THROW(TypeError) << "axis " << a << " has extent " << ir::to_text(x.shape[n]) << ", not 1";
      }
      drop[n] = true;
    }
    return drop;
  };
  define(
      "squeeze", 1, {{"axis", "Array", Any(Array(std::vector<Any>{})), "axes of extent 1 to remove; [] removes all"}},
      injective, "removes axes of extent 1",
      [squeezed](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<bool> drop = squeezed(call, x);
        std::vector<Any> shape;
        for (size_t k = 0; k < drop.size(); ++k)
          if (!drop[k]) shape.push_back(x.shape[k]);
        return ir::TensorType(Array(shape), x.dtype);
      },
      [squeezed](const graph::CallNode& call) {
        std::vector<bool> drop = squeezed(call, tensor_arg(call, 0));
        return gather(call, [&](const Indices& i, const Indices&, const Indices&) {
          Indices in;
          size_t o = 0;
          for (bool d : drop) in.push_back(d ? PrimExpr(int64_t{0}) : i[o++]);
          return in;
        });
      });

  define(
      "broadcast_to", 1, {{"shape", "Array", Any(), "the target shape (NumPy broadcasting)"}}, ir::PatternKind::kBroadcast,
      "x broadcast to a shape",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<Any> target;
        for (int64_t d : ints(attrs_of(call).at("shape"))) target.push_back(dim_of(d));
        auto fail = [&] {
          LOOM_THROW(TypeError) << "cannot broadcast " << shape_text(x.shape) << " to " << shape_text(Array(target));
        };
        std::vector<Any> result;
        try {
          result = broadcast_shapes(x.shape, Array(target));
        } catch (const TypeError&) {
          fail();
        }
        if (result.size() != target.size()) fail();
        for (size_t k = 0; k < result.size(); ++k)
          if (constant_dim(result[k]) != constant_dim(target[k])) fail();
        return ir::TensorType(Array(target), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.buffer(tensor_arg(call, 0), "X");
        tir::Buffer y = b.buffer(result_type(call), "Y");
        return b.finish(b.compute(y, [&](const Indices& i) { return PrimExpr(tir::BufferLoad(x, b.broadcast_indices(x, i))); }));
      });
}

}  // namespace loom::ops
