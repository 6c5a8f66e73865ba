// Shape operators: reshape, transpose, flatten, expand_dims, squeeze,
// broadcast_to, concat, split, slice, pad (pattern: injective;
// docs/operators.md).
#include <algorithm>
#include <cmath>

#include "loom/arith/simplify.h"
#include "loom/ir/text.h"
#include "loom/tir/util.h"
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

// An element count: a constant times a product of symbolic factors, each a
// variable or an expression that is not a product (%n + 1), so that
// (%b * %n * 4, 64) and (%n, %b, 256) have the same count.
struct Count {
  int64_t constant = 1;
  std::vector<PrimExpr> atoms;

  void multiply(const Any& d) {
    if (auto c = constant_dim(d)) {
      constant *= *c;
    } else if (const auto* m = d.cast<PrimExpr>().as<tir::MulNode>()) {
      multiply(Any(m->a));
      multiply(Any(m->b));
    } else {
      atoms.push_back(d.cast<PrimExpr>());
    }
  }
  // this / by, when every factor of `by` divides it.
  std::optional<Count> divided_by(const Count& by) const {
    if (by.constant == 0 || constant % by.constant != 0) return std::nullopt;
    Count q{constant / by.constant, atoms};
    for (const PrimExpr& a : by.atoms) {
      auto found =
          std::find_if(q.atoms.begin(), q.atoms.end(), [&](const PrimExpr& b) { return same_dim(Any(a), Any(b)); });
      if (found == q.atoms.end()) return std::nullopt;
      q.atoms.erase(found);
    }
    return q;
  }
  bool equals(const Count& other) const {
    if (constant == 0 || other.constant == 0) return constant == other.constant;
    auto q = divided_by(other);
    return q && q->constant == 1 && q->atoms.empty();
  }
  PrimExpr expr() const {
    PrimExpr e;
    for (const PrimExpr& a : atoms) e = e.defined() ? PrimExpr(tir::Mul(e, a)) : a;
    if (!e.defined()) return PrimExpr(constant);
    return arith::simplify(constant == 1 ? e : PrimExpr(tir::Mul(e, PrimExpr(constant))));
  }
  std::string text() const { return ir::to_text(Any(expr())); }
};

// An entry of a target shape (reshape's, broadcast_to's, arange's extent):
// an int, or an integer dimension.
Any shape_entry(const Any& v, const std::string& what) {
  if (v.kind() == AnyKind::kInt) return dim_of(v.as_int());
  const auto* e = v.object() && v.object()->is_instance<tir::PrimExprNode>()
                      ? static_cast<const tir::PrimExprNode*>(v.object())
                      : nullptr;
  if (!e || !tir::is_int(e->dtype)) {
    LOOM_THROW(TypeError) << what << " is " << ir::to_text(v) << ", not an int or an integer dimension (%n, %b * 4)";
  }
  PrimExpr d = arith::simplify(v.cast<PrimExpr>());
  if (auto c = constant_dim(Any(d))) return dim_of(*c);
  return Any(d);
}

Indices reshape_index(const Indices& i, const Indices& in_shape, const Indices& out_shape) {
  if (in_shape.empty()) return {};
  return unravel(ravel(i, out_shape), in_shape);
}

// Copies `in` into `out` at `offset` along `axis` (in's shape).
tir::Stmt place(PrimBuilder& b, const tir::Buffer& in, const tir::Buffer& out, size_t axis, PrimExpr offset,
                bool to_out) {
  return loop_nest(buffer_shape(to_out ? in : out), [&](const Indices& i) {
    Indices shifted = i;
    shifted[axis] = tir::Add(i[axis], offset);
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
  std::vector<PrimExpr> begin, extent;  // per axis; an undefined extent: untouched
  std::vector<int64_t> stride;
};

// Whether e >= 0 for every value of its variables, which are dimensions
// (never negative): sums and products of them and of constants >= 0.
bool never_negative(const PrimExpr& e) {
  if (auto c = tir::const_int(e)) return *c >= 0;
  if (e.as<tir::VarNode>()) return true;
  if (const auto* a = e.as<tir::AddNode>()) return never_negative(a->a) && never_negative(a->b);
  if (const auto* m = e.as<tir::MulNode>()) return never_negative(m->a) && never_negative(m->b);
  if (const auto* m = e.as<tir::MinNode>()) return never_negative(m->a) && never_negative(m->b);
  if (const auto* m = e.as<tir::MaxNode>()) return never_negative(m->a) || never_negative(m->b);
  return false;
}

// max(e, 0), or e where it is never negative ((%n + 1)[1:] is %n).
PrimExpr at_least_zero(const PrimExpr& e) {
  PrimExpr s = arith::simplify(e);
  return never_negative(s) ? s : PrimExpr(tir::Max(s, PrimExpr(int64_t{0})));
}

// NumPy's bounds on an axis of symbolic extent n, step 1 or more: a bound
// v >= 0 is min(v, n), v < 0 is max(n + v, 0), so that the extent is exact
// for every n (x[:, -1:] on (2, %n) is (2, min(%n, 1))).
void symbolic_slice(SliceSpec& spec, size_t axis, PrimExpr n, int64_t begin, int64_t end, int64_t stride) {
  constexpr int64_t kEnd = (int64_t{1} << 31) - 1;  // at or past it: the axis' end (INT_MAX, INT64_MAX)
  auto bound = [&](int64_t v) -> PrimExpr {
    if (v >= kEnd) return n;
    if (v <= -kEnd) return PrimExpr(int64_t{0});
    if (v == 0) return PrimExpr(int64_t{0});
    if (v > 0) return tir::Min(n, PrimExpr(v));
    return at_least_zero(tir::Add(n, PrimExpr(v)));
  };
  PrimExpr b = bound(begin), e = bound(end), extent;
  if (begin == 0 || begin <= -kEnd) {
    extent = e;  // never negative
  } else if (end >= kEnd && begin > 0) {
    extent = at_least_zero(tir::Sub(n, PrimExpr(begin)));
  } else if (end >= kEnd) {
    extent = tir::Min(n, PrimExpr(-begin));
  } else {
    extent = at_least_zero(tir::Sub(e, b));
  }
  if (stride > 1) extent = tir::FloorDiv(tir::Add(extent, PrimExpr(stride - 1)), PrimExpr(stride));
  spec.begin[axis] = arith::simplify(b);
  spec.extent[axis] = arith::simplify(extent);
}

// The slice of a tensor of `shape`: the type's dimensions for the type
// rule, the kernel buffer's for the lowering (its own variables).
SliceSpec slice_spec(const graph::CallNode& call, const Indices& shape) {
  Map a = attrs_of(call);
  std::vector<int64_t> begin = ints(a.at("begin")), end = ints(a.at("end")), axes = ints(a.at("axes")),
                       strides = ints(a.at("strides"));
  size_t rank = shape.size();
  if (axes.empty())
    for (size_t k = 0; k < begin.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (begin.size() != axes.size() || end.size() != axes.size() || (!strides.empty() && strides.size() != axes.size())) {
    LOOM_THROW(TypeError) << "begin, end, axes and strides must have the same length";
  }
  SliceSpec spec;
  spec.begin.assign(rank, PrimExpr(int64_t{0}));
  spec.stride.assign(rank, 1);
  spec.extent.resize(rank);
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t axis = static_cast<size_t>(normalize_axis(axes[k], rank));
    int64_t stride = strides.empty() ? 1 : strides[k];
    if (stride == 0) LOOM_THROW(TypeError) << "strides must not be 0";
    spec.stride[axis] = stride;
    auto dim = tir::const_int(shape[axis]);
    if (!dim) {
      if (stride < 0) {
        std::vector<Any> dims(shape.begin(), shape.end());
        LOOM_THROW(TypeError) << "a negative step on axis " << axis << " of " << shape_text(Array(dims))
                              << ", whose extent is not known until run time, is not supported";
      }
      symbolic_slice(spec, axis, shape[axis], begin[k], end[k], stride);
      continue;
    }
    // NumPy: negative positions count from the end; a positive step
    // clamps both to [0, n], a negative one to [-1, n - 1] (the end -1
    // meaning "past the start").
    int64_t low = stride > 0 ? 0 : -1, high = stride > 0 ? *dim : *dim - 1;
    auto clamp = [&](int64_t v) {
      if (v < 0) v = v < -*dim ? -*dim - 1 : v + *dim;  // far below: before the start
      return std::min(std::max(v, low), high);
    };
    int64_t b = clamp(begin[k]), e = clamp(end[k]);
    spec.begin[axis] = PrimExpr(b);
    spec.extent[axis] = PrimExpr(stride > 0 ? (e > b ? (e - b + stride - 1) / stride : 0)
                                            : (b > e ? (b - e - stride - 1) / -stride : 0));
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
        "the new shape: ints and dimensions (%n, %b * 4) over the input's variables; one entry may be -1 "
        "(inferred)"}},
      injective, "the same elements in a new shape (row-major)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        Count count;
        for (const Any& d : x.shape) count.multiply(d);
        Count known;
        int64_t infer = -1;
        std::vector<Any> shape;
        const Array& target = attrs_of(call).at("shape").cast<Array>();
        for (size_t k = 0; k < target.size(); ++k) {
          Any d = shape_entry(target[k], "entry " + std::to_string(k) + " of the new shape");
          if (constant_dim(d) == std::optional<int64_t>(-1)) {
            if (infer >= 0) LOOM_THROW(TypeError) << "only one dimension of the new shape may be -1";
            infer = static_cast<int64_t>(k);
          } else if (auto c = constant_dim(d); c && *c < 0) {
            LOOM_THROW(TypeError) << "dimension " << k << " of the new shape is " << *c;
          } else {
            known.multiply(d);
          }
          shape.push_back(d);
        }
        if (infer >= 0) {
          std::optional<Count> rest = count.divided_by(known);
          if (!rest) {
            LOOM_THROW(TypeError) << "cannot infer the -1 of the new shape: " << shape_text(x.shape) << " has "
                                  << count.text() << " elements, not a multiple of " << known.text();
          }
          shape[infer] = Any(rest->expr());
        } else if (!count.equals(known)) {
          LOOM_THROW(TypeError) << "cannot reshape " << shape_text(x.shape) << " (" << count.text() << " elements) to "
                                << shape_text(Array(shape)) << " (" << known.text() << " elements)"
                                << (count.atoms.empty() && known.atoms.empty()
                                        ? std::string()
                                        : ": the element counts must be the same product of the same dimensions; "
                                          "write -1 for the one entry they determine");
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
      "broadcast_to", 1,
      {{"shape", "Array", Any(), "the target shape (NumPy broadcasting): ints and dimensions (%n, %b * 4)"}},
      ir::PatternKind::kBroadcast, "x broadcast to a shape",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        std::vector<Any> target;
        const Array& given = attrs_of(call).at("shape").cast<Array>();
        for (size_t k = 0; k < given.size(); ++k)
          target.push_back(shape_entry(given[k], "entry " + std::to_string(k) + " of the shape"));
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
          if (!same_dim(result[k], target[k])) fail();
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
      "arange", 0,
      {{"extent", "Any", Any(), "the number of values: an int or a dimension (%n)"},
       {"start", "float", Any(0.0), "the first value"},
       {"step", "float", Any(1.0), "the difference between neighbours"},
       {"dtype", "dtype", Any(DataType::Int(64)), "the result's data type"}},
      injective, "start + i * step for i in [0, extent): NumPy's arange by its length, which may be symbolic",
      [](const graph::CallNode& call) -> ir::Type {
        Any extent = shape_entry(attrs_of(call).at("extent"), "extent");
        if (auto c = constant_dim(extent); c && *c < 0)
          LOOM_THROW(TypeError) << "extent must not be negative, got " << *c;
        DataType dtype = attrs_of(call).at("dtype").as_dtype();
        if (dtype.lanes != 1 || dtype.code == DataType::kBool || dtype.code == DataType::kHandle) {
          LOOM_THROW(TypeError) << "dtype must be a numeric scalar type, got " << dtype.to_string();
        }
        return ir::TensorType(Array(std::vector<Any>{extent}), dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        double start = a.at("start").as_float(), step = a.at("step").as_float();
        bool integral = start == std::floor(start) && step == std::floor(step);
        return b.finish(compute(y, [&](const Indices& i) -> PrimExpr {
          if (integral && !tir::is_float(y->dtype)) {  // exact in integers
            return tir::Cast(y->dtype, tir::Add(PrimExpr(static_cast<int64_t>(start)),
                                                tir::Mul(i[0], PrimExpr(static_cast<int64_t>(step)))));
          }
          PrimExpr v = tir::Add(make_const(DataType::Float(64), start),
                                tir::Mul(tir::Cast(DataType::Float(64), i[0]), make_const(DataType::Float(64), step)));
          return tir::Cast(y->dtype, v);
        }));
      });

  define_operator(
      "shape_of", 1, {}, ir::PatternKind::kOpaque,
      "x's extents as an int64 tensor (rank,): symbolic ones as the values they have in a call (ONNX's Shape used "
      "as a tensor: the start of positions after a cache of %p)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        return ir::TensorType(Array(std::vector<Any>{Any(PrimExpr(static_cast<int64_t>(x.shape.size())))}),
                              DataType::Int(64));
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        return b.finish(compute(y, [&](const Indices& i) -> PrimExpr {
          PrimExpr v = int64_t{0};
          for (size_t k = x->shape.size(); k-- > 0;) {
            v = tir::Select(tir::EQ(i[0], PrimExpr(static_cast<int64_t>(k))),
                            tir::Cast(DataType::Int(64), x->shape[k].cast<PrimExpr>()), v);
          }
          return v;
        }));
      });

  define_operator(
      "concat", -1, {{"axis", "int", Any(int64_t{0}), "the axis to join along"}}, injective,
      "joins tensors along an axis; the others must agree",
      [](const graph::CallNode& call) -> ir::Type {
        if (call.args.size() < 1) LOOM_THROW(TypeError) << "needs at least one tensor";
        const auto& first = tensor_arg(call, 0);
        size_t rank = first.shape.size();
        int64_t axis = normalize_axis(attrs_of(call).at("axis").as_int(), rank);
        PrimExpr total = int64_t{0};
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
          // A symbolic extent joins as a sum: (%m, 8) and (%n, 8) give (%m + %n, 8).
          total = tir::Add(total, t.shape[axis].cast<PrimExpr>());
        }
        std::vector<Any> shape(first.shape.begin(), first.shape.end());
        shape[axis] = Any(arith::simplify(total));
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
        PrimExpr offset = int64_t{0};
        for (const tir::Buffer& in : inputs) {
          steps.push_back(place(b, in, y, axis, offset, true));
          offset = arith::simplify(tir::Add(offset, buffer_shape(in)[axis]));
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
          steps.push_back(place(b, x, out, axis, PrimExpr(offset), false));
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
        Indices dims;
        for (const Any& d : x.shape) dims.push_back(d.cast<PrimExpr>());
        SliceSpec spec = slice_spec(call, dims);
        std::vector<Any> shape;
        for (size_t k = 0; k < x.shape.size(); ++k)
          shape.push_back(spec.extent[k].defined() ? Any(spec.extent[k]) : x.shape[k]);
        return ir::TensorType(Array(shape), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        SliceSpec spec = slice_spec(call, buffer_shape(x));
        return b.finish(compute(y, [&](const Indices& i) {
          Indices in;
          for (size_t k = 0; k < i.size(); ++k) {
            in.push_back(!spec.extent[k].defined()
                             ? i[k]
                             : PrimExpr(tir::Add(tir::Mul(i[k], PrimExpr(spec.stride[k])), spec.begin[k])));
          }
          return PrimExpr(tir::BufferLoad(x, in));
        }));
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
