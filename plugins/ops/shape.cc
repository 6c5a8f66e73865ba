// Shape operators: reshape, transpose, flatten, expand_dims, squeeze,
// broadcast_to, concat, split, slice, pad (pattern: injective;
// docs/operators.md).
#include "loom/arith/simplify.h"
#include "loom/ir/text.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

std::vector<int64_t> ints(const Any& value) {
  std::vector<int64_t> out;
  for (const Any& v : value.cast<Array>()) out.push_back(v.as_int());
  return out;
}

Any dim_of(int64_t v) { return Any(tir::IntImm(DataType::Int(64), v)); }

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
tir::PrimFunc gather(
    const graph::CallNode& call,
    const std::function<Indices(const Indices&, const Indices& in_shape, const Indices& out_shape)>& index) {
  PrimBuilder b;
  tir::Buffer x = b.param(tensor_arg(call, 0), "X");
  tir::Buffer y = b.param(result_type(call), "Y");
  Indices in_shape = buffer_shape(x), out_shape = buffer_shape(y);
  return b.finish(
      compute(y, [&](const Indices& i) { return PrimExpr(tir::BufferLoad(x, index(i, in_shape, out_shape))); }));
}

Indices reshape_index(const Indices& i, const Indices& in_shape, const Indices& out_shape) {
  if (in_shape.empty()) return {};
  return unravel(ravel(i, out_shape), in_shape);
}

// Copies `in` into `out` at `offset` along `axis` (in's shape).
tir::Stmt place(PrimBuilder& b, const tir::Buffer& in, const tir::Buffer& out, size_t axis, int64_t offset,
                bool to_out) {
  return loop_nest(buffer_shape(to_out ? in : out), [&](const Indices& i) {
    Indices shifted = i;
    shifted[axis] = tir::Add(i[axis], PrimExpr(offset));
    if (to_out) return tir::Stmt(tir::BufferStore(out, tir::BufferLoad(in, i), shifted));
    return tir::Stmt(tir::BufferStore(out, tir::BufferLoad(in, shifted), i));
  });
}

// Split points of `split` along an axis of extent `extent`.
std::vector<int64_t> split_points(const Any& spec, int64_t extent) {
  std::vector<int64_t> points;
  if (spec.kind() == AnyKind::kInt) {
    int64_t sections = spec.as_int();
    if (sections < 1 || extent % sections != 0) {
      LOOM_THROW(TypeError) << sections << " sections do not divide the axis of extent " << extent;
    }
    for (int64_t k = 1; k < sections; ++k) points.push_back(k * extent / sections);
  } else {
    int64_t last = 0;
    for (int64_t p : ints(spec)) {
      if (p < last || p > extent) {
        LOOM_THROW(TypeError) << "split indices must be ascending within [0, " << extent << "], got " << p;
      }
      points.push_back(last = p);
    }
  }
  return points;
}

struct SliceSpec {
  std::vector<int64_t> begin, stride, extent;  // per axis
};

SliceSpec slice_spec(const graph::CallNode& call, const ir::TensorTypeNode& x) {
  Map a = attrs_of(call);
  std::vector<int64_t> begin = ints(a.at("begin")), end = ints(a.at("end")), axes = ints(a.at("axes")),
                       strides = ints(a.at("strides"));
  size_t rank = x.shape.size();
  if (axes.empty())
    for (size_t k = 0; k < begin.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (begin.size() != axes.size() || end.size() != axes.size() || (!strides.empty() && strides.size() != axes.size())) {
    LOOM_THROW(TypeError) << "begin, end, axes and strides must have the same length";
  }
  SliceSpec spec;
  for (size_t k = 0; k < rank; ++k) {
    spec.begin.push_back(0);
    spec.stride.push_back(1);
    spec.extent.push_back(-1);  // untouched
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t axis = static_cast<size_t>(normalize_axis(axes[k], rank));
    auto dim = constant_dim(x.shape[axis]);
    if (!dim) LOOM_THROW(TypeError) << "sliced axis " << axis << " must be static, got " << shape_text(x.shape);
    int64_t stride = strides.empty() ? 1 : strides[k];
    if (stride == 0) LOOM_THROW(TypeError) << "strides must not be 0";
    // NumPy: negative positions count from the end; a positive step
    // clamps both to [0, n], a negative one to [-1, n - 1] (the end -1
    // meaning "past the start").
    int64_t low = stride > 0 ? 0 : -1, high = stride > 0 ? *dim : *dim - 1;
    auto clamp = [&](int64_t v) {
      if (v < 0) v = v < -*dim ? -*dim - 1 : v + *dim;  // far below: before the start
      return std::min(std::max(v, low), high);
    };
    int64_t b = clamp(begin[k]), e = clamp(end[k]);
    spec.begin[axis] = b;
    spec.stride[axis] = stride;
    spec.extent[axis] =
        stride > 0 ? (e > b ? (e - b + stride - 1) / stride : 0) : (b > e ? (b - e - stride - 1) / -stride : 0);
  }
  return spec;
}

std::vector<int64_t> pad_widths(const graph::CallNode& call, size_t rank) {
  std::vector<int64_t> w = ints(attrs_of(call).at("pad_width"));
  if (w.size() != 2 * rank) {
    LOOM_THROW(TypeError) << "pad_width needs 2 entries per axis (before, after), " << 2 * rank << " in all, got "
                          << w.size();
  }
  for (int64_t v : w)
    if (v < 0) LOOM_THROW(TypeError) << "pad_width entries must not be negative, got " << v;
  return w;
}
}  // namespace

void register_shape_ops() {
  const auto injective = ir::PatternKind::kInjective;
  define_operator(
      "reshape", 1,
      {{"shape", "Array", Any(),
        "the new shape; one entry may be -1 (inferred, and the only one that may take symbolic dimensions)"}},
      injective, "the same elements in a new shape (row-major)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<int64_t> out = ints(attrs_of(call).at("shape"));
        // The input's element count: a constant part times the product of
        // its symbolic dimensions (a dynamic batch), which only the -1
        // entry can take.
        int64_t count = 1, known = 1, infer = -1;
        std::optional<PrimExpr> symbolic;
        for (const Any& d : x.shape) {
          if (auto c = constant_dim(d)) {
            count *= *c;
          } else {
            // Constant factors (%n * 128) count with the constant part.
            PrimExpr e = d.cast<PrimExpr>();
            while (const auto* m = e.as<tir::MulNode>()) {
              auto ca = constant_dim(Any(m->a)), cb = constant_dim(Any(m->b));
              if (!ca && !cb) break;
              count *= ca ? *ca : *cb;
              e = ca ? m->b : m->a;
            }
            symbolic = symbolic ? PrimExpr(tir::Mul(*symbolic, e)) : e;
          }
        }
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
        std::vector<Any> shape;
        for (int64_t d : out) shape.push_back(dim_of(d));
        if (symbolic && infer < 0) {
          LOOM_THROW(TypeError) << "cannot reshape " << shape_text(x.shape)
                                << " to a static shape: one entry of the new shape must be -1, for the symbolic part";
        }
        if (infer >= 0) {
          if (known == 0 || count % known != 0) {
            LOOM_THROW(TypeError) << "cannot infer the -1 of the new shape: " << shape_text(x.shape) << " has " << count
                                  << (symbolic ? " * " + ir::to_text(Any(*symbolic)) : std::string())
                                  << " elements, not a multiple of " << known;
          }
          int64_t factor = count / known;
          known *= factor;
          shape[infer] =
              symbolic ? Any(arith::simplify(factor == 1 ? *symbolic : PrimExpr(tir::Mul(*symbolic, PrimExpr(factor)))))
                       : dim_of(factor);
        }
        if (!symbolic && known != count) {
          LOOM_THROW(TypeError) << "cannot reshape " << shape_text(x.shape) << " (" << count << " elements) to "
                                << known << " elements";
        }
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) { return gather(call, reshape_index); });

  define_operator(
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

  define_operator(
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

  define_operator(
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
  define_operator(
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

  define_operator(
      "broadcast_to", 1, {{"shape", "Array", Any(), "the target shape (NumPy broadcasting)"}},
      ir::PatternKind::kBroadcast, "x broadcast to a shape",
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
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        return b.finish(
            compute(y, [&](const Indices& i) { return PrimExpr(tir::BufferLoad(x, broadcast_indices(x, y, i))); }));
      });

  define_operator(
      "concat", -1, {{"axis", "int", Any(int64_t{0}), "the axis to join along"}}, injective,
      "joins tensors along an axis; the others must agree",
      [](const graph::CallNode& call) -> ir::Type {
        if (call.args.size() < 1) LOOM_THROW(TypeError) << "needs at least one tensor";
        const auto& first = tensor_arg(call, 0);
        size_t rank = first.shape.size();
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), rank);
        int64_t total = 0;
        for (size_t i = 0; i < call.args.size(); ++i) {
          const auto& t = tensor_arg(call, i);
          if (t.dtype != first.dtype || t.shape.size() != rank) {
            LOOM_THROW(TypeError) << "argument " << i << " " << shape_text(t.shape) << " " << t.dtype.to_string()
                                  << " does not match " << shape_text(first.shape) << " " << first.dtype.to_string();
          }
          for (size_t k = 0; k < rank; ++k) {
            if (static_cast<int64_t>(k) == axis) continue;
            if (!same_dim(t.shape[k], first.shape[k])) {
              LOOM_THROW(TypeError) << "argument " << i << " " << shape_text(t.shape) << " differs from "
                                    << shape_text(first.shape) << " in axis " << k;
            }
          }
          auto d = constant_dim(t.shape[axis]);
          if (!d) LOOM_THROW(TypeError) << "the joined axis must be static, got " << shape_text(t.shape);
          total += *d;
        }
        std::vector<Any> shape(first.shape.begin(), first.shape.end());
        shape[axis] = dim_of(total);
        return ir::TensorType(Array(shape), first.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        std::vector<tir::Buffer> inputs;
        for (size_t i = 0; i < call.args.size(); ++i)
          inputs.push_back(b.param(tensor_arg(call, i), "X" + std::to_string(i)));
        tir::Buffer y = b.param(result_type(call), "Y");
        size_t axis = static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), buffer_shape(y).size()));
        std::vector<tir::Stmt> steps;
        int64_t offset = 0;
        for (const tir::Buffer& in : inputs) {
          steps.push_back(place(b, in, y, axis, offset, true));
          offset += *constant_dim(Any(buffer_shape(in)[axis]));
        }
        return b.finish(tir::SeqStmt(steps));
      });

  define_operator(
      "split", 1,
      {{"indices_or_sections", "Any", Any(), "an int (equal sections) or ascending split indices"},
       {"axis", "int", Any(int64_t{0}), "the axis to split"}},
      injective, "splits a tensor along an axis into a tuple of tensors (NumPy array_split semantics for indices)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        Map a = attrs_of(call);
        size_t axis = static_cast<size_t>(normalize_axis(a.at("axis").as_int(), x.shape.size()));
        auto extent = constant_dim(x.shape[axis]);
        if (!extent) LOOM_THROW(TypeError) << "the split axis must be static, got " << shape_text(x.shape);
        std::vector<int64_t> points = split_points(a.at("indices_or_sections"), *extent);
        points.push_back(*extent);
        std::vector<ir::Type> fields;
        int64_t start = 0;
        for (int64_t p : points) {
          std::vector<Any> shape(x.shape.begin(), x.shape.end());
          shape[axis] = dim_of(p - start);
          fields.push_back(ir::TensorType(Array(shape), x.dtype));
          start = p;
        }
        return ir::TupleType(fields);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        const auto* tuple = call.checked_type.as<ir::TupleTypeNode>();
        size_t axis = static_cast<size_t>(normalize_axis(attrs_of(call).at("axis").as_int(), xt.shape.size()));
        std::vector<tir::Stmt> steps;
        int64_t offset = 0;
        for (size_t k = 0; k < tuple->fields.size(); ++k) {
          const auto* t = tuple->fields[k].cast<ir::Type>().as<ir::TensorTypeNode>();
          tir::Buffer out = b.param(*t, "Y" + std::to_string(k));
          steps.push_back(place(b, x, out, axis, offset, false));
          offset += *constant_dim(t->shape[axis]);
        }
        return b.finish(tir::SeqStmt(steps));
      });

  define_operator(
      "slice", 1,
      {{"begin", "Array", Any(), "start per sliced axis (negative from the end)"},
       {"end", "Array", Any(), "end (exclusive) per sliced axis, clamped"},
       {"axes", "Array", Any(Array(std::vector<Any>{})), "the sliced axes; [] = the first len(begin)"},
       {"strides", "Array", Any(Array(std::vector<Any>{})), "steps, positive or negative; [] = 1"}},
      injective, "NumPy basic slicing",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        SliceSpec spec = slice_spec(call, x);
        std::vector<Any> shape;
        for (size_t k = 0; k < x.shape.size(); ++k)
          shape.push_back(spec.extent[k] < 0 ? x.shape[k] : dim_of(spec.extent[k]));
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        SliceSpec spec = slice_spec(call, tensor_arg(call, 0));
        return gather(call, [&](const Indices& i, const Indices&, const Indices&) {
          Indices in;
          for (size_t k = 0; k < i.size(); ++k) {
            in.push_back(spec.extent[k] < 0
                             ? i[k]
                             : PrimExpr(tir::Add(tir::Mul(i[k], PrimExpr(spec.stride[k])), PrimExpr(spec.begin[k]))));
          }
          return in;
        });
      });

  define_operator(
      "pad", 1,
      {{"pad_width", "Array", Any(), "(before, after) per axis, flattened: 2 * rank ints"},
       {"pad_value", "float", Any(0.0), "the value of the padding (mode constant)"},
       {"mode", "str", Any(std::string("constant")),
        "constant (pad_value), edge (the nearest element) or reflect (mirrored, the edge not repeated)"}},
      injective, "padding: constant, edge or reflect (NumPy pad's modes)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<int64_t> w = pad_widths(call, x.shape.size());
        std::string mode = attrs_of(call).at("mode").as_string();
        if (mode != "constant" && mode != "edge" && mode != "reflect") {
          LOOM_THROW(TypeError) << "mode must be constant, edge or reflect, got '" << mode << "'";
        }
        std::vector<Any> shape;
        for (size_t k = 0; k < x.shape.size(); ++k) {
          if (w[2 * k] == 0 && w[2 * k + 1] == 0) {
            shape.push_back(x.shape[k]);
            continue;
          }
          auto d = constant_dim(x.shape[k]);
          if (!d) LOOM_THROW(TypeError) << "padded axis " << k << " must be static, got " << shape_text(x.shape);
          if (mode != "constant" && *d == 0) LOOM_THROW(TypeError) << mode << " padding of an empty axis " << k;
          if (mode == "reflect" && (w[2 * k] >= *d || w[2 * k + 1] >= *d)) {
            LOOM_THROW(TypeError) << "reflect padding of axis " << k << " by " << std::max(w[2 * k], w[2 * k + 1])
                                  << " needs more than that many elements, it has " << *d;
          }
          shape.push_back(dim_of(*d + w[2 * k] + w[2 * k + 1]));
        }
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        std::vector<int64_t> w = pad_widths(call, xt.shape.size());
        Indices xs = buffer_shape(x);
        PrimExpr fill = make_const(x->dtype, attrs_of(call).at("pad_value").as_float());
        std::string mode = attrs_of(call).at("mode").as_string();
        return b.finish(compute(y, [&](const Indices& i) {
          Indices in;
          PrimExpr inside = tir::IntImm(DataType::Bool(), 1);
          for (size_t k = 0; k < i.size(); ++k) {
            if (w[2 * k] == 0 && w[2 * k + 1] == 0) {
              in.push_back(i[k]);
              continue;
            }
            PrimExpr j = tir::Sub(i[k], PrimExpr(w[2 * k]));
            PrimExpr last = tir::Sub(xs[k], PrimExpr(int64_t{1}));
            if (mode == "reflect") {  // -j before the start, 2 (n - 1) - j past the end
              j = tir::Select(tir::LT(j, PrimExpr(int64_t{0})), tir::Sub(PrimExpr(int64_t{0}), j),
                              tir::Select(tir::GT(j, last), tir::Sub(tir::Mul(PrimExpr(int64_t{2}), last), j), j));
            }
            if (mode == "constant")
              inside = tir::And(inside, tir::And(tir::GE(j, PrimExpr(int64_t{0})), tir::LT(j, xs[k])));
            in.push_back(tir::Max(tir::Min(j, last), PrimExpr(int64_t{0})));
          }
          if (mode != "constant") return PrimExpr(tir::BufferLoad(x, in));
          return PrimExpr(tir::Select(inside, tir::BufferLoad(x, in), fill));
        }));
      });
}

}  // namespace loom::ops
