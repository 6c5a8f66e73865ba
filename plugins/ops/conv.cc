// conv2d (NCHW or NHWC data, OIHW or OHWI weights, stride, padding,
// dilation, groups) and 2-D pooling in either layout (docs/operators.md).
#include <limits>

#include "loom/ir/text.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

std::vector<int64_t> pair_attr(const Map& attrs, const std::string& key) {
  std::vector<int64_t> v;
  for (const Any& a : attrs.at(key).cast<Array>()) v.push_back(a.as_int());
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) LOOM_THROW(TypeError) << key << " must have 1 or 2 entries, got " << v.size();
  for (int64_t x : v)
    if (x < 1) LOOM_THROW(TypeError) << key << " entries must be at least 1, got " << x;
  return v;
}

// (top, left, bottom, right) from 1, 2 or 4 entries.
std::vector<int64_t> padding_attr(const Map& attrs) {
  std::vector<int64_t> v;
  for (const Any& a : attrs.at("padding").cast<Array>()) v.push_back(a.as_int());
  if (v.size() == 1) v = {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) v = {v[0], v[1], v[0], v[1]};
  if (v.size() != 4) LOOM_THROW(TypeError) << "padding must have 1, 2 or 4 entries, got " << v.size();
  for (int64_t x : v)
    if (x < 0) LOOM_THROW(TypeError) << "padding entries must not be negative, got " << x;
  return v;
}

int64_t static_dim(const ir::TensorTypeNode& t, size_t k, const char* what) {
  auto c = constant_dim(t.shape[k]);
  if (!c) LOOM_THROW(TypeError) << what << " must be static, got " << shape_text(t.shape);
  return *c;
}

int64_t out_extent(int64_t in, int64_t pad, int64_t kernel, int64_t stride, int64_t dilation) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t out = (in + pad - span) / stride + 1;
  if (in + pad < span || out < 1) {
    LOOM_THROW(TypeError) << "the window (" << span << " wide) does not fit the padded input (" << in + pad << ")";
  }
  return out;
}

Any dim_of(int64_t v) { return Any(tir::IntImm(DataType::Int(64), v)); }

// Where each logical axis of a 4-D layout sits: batch (or output
// channels), channels (or input channels), height, width.
struct Layout {
  size_t n, c, h, w;
  template <class T>
  std::vector<T> order(T n_, T c_, T h_, T w_) const {
    std::vector<T> v(4);
    v[n] = n_, v[c] = c_, v[h] = h_, v[w] = w_;
    return v;
  }
};

Layout layout_attr(const Map& attrs, const std::string& key) {
  const std::string& s = attrs.at(key).as_string();
  if (key == "kernel_layout") {
    if (s == "OIHW") return {0, 1, 2, 3};
    if (s == "OHWI") return {0, 3, 1, 2};
    LOOM_THROW(TypeError) << key << " must be OIHW or OHWI, got '" << s << "'";
  }
  if (s == "NCHW") return {0, 1, 2, 3};
  if (s == "NHWC") return {0, 3, 1, 2};
  LOOM_THROW(TypeError) << key << " must be NCHW or NHWC, got '" << s << "'";
}

// x at (n, c, y, x) in layout `l`, with zero (or `fill`) outside the
// input: the load is clamped into range so that it is always valid, and
// the select picks.
PrimExpr padded_load(const tir::Buffer& x, const Layout& l, const PrimExpr& n, const PrimExpr& c, const PrimExpr& iy,
                     const PrimExpr& ix, int64_t h, int64_t w, const PrimExpr& fill) {
  auto clamp = [](const PrimExpr& i, int64_t extent) {
    return PrimExpr(tir::Max(tir::Min(i, PrimExpr(extent - 1)), PrimExpr(int64_t{0})));
  };
  PrimExpr inside = tir::And(tir::And(tir::GE(iy, PrimExpr(int64_t{0})), tir::LT(iy, PrimExpr(h))),
                             tir::And(tir::GE(ix, PrimExpr(int64_t{0})), tir::LT(ix, PrimExpr(w))));
  return tir::Select(inside, tir::BufferLoad(x, l.order(n, c, clamp(iy, h), clamp(ix, w))), fill);
}

// The input with its padding made explicit: a local copy of x (in the
// same layout) `pad` larger on each side, `fill` outside x.  The window
// then reads the copy without bounds checks, at indices contiguous along
// the width, which lets schedules vectorize along it.  Returns the copy
// and the nest that fills it; with no padding, x itself and no nest.
struct Padded {
  tir::Buffer buffer;
  std::optional<tir::Stmt> fill;
  // Wraps the statement that reads the copy in its allocation.
  tir::Stmt around(const tir::Stmt& body) const {
    return fill ? tir::Stmt(tir::Allocate(buffer, tir::SeqStmt({*fill, body}))) : body;
  }
};
Padded pad_input(PrimBuilder& b, const tir::Buffer& x, const Layout& l, int64_t h, int64_t w,
                 const std::vector<int64_t>& p, const PrimExpr& fill) {
  if (p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0) return {x, std::nullopt};
  std::vector<PrimExpr> shape = buffer_shape(x);
  shape[l.h] = PrimExpr(h + p[0] + p[2]);
  shape[l.w] = PrimExpr(w + p[1] + p[3]);
  tir::Buffer padded(x->name + "_pad", x->dtype, shape);
  tir::Stmt nest = loop_nest(
      shape,
      [&](const Indices& i) {
        PrimExpr y = tir::Sub(i[l.h], PrimExpr(p[0])), xi = tir::Sub(i[l.w], PrimExpr(p[1]));
        return tir::Stmt(tir::BufferStore(padded, padded_load(x, l, i[l.n], i[l.c], y, xi, h, w, fill), i));
      },
      "p");
  return {padded, nest};
}

const ir::TensorTypeNode& image(const graph::CallNode& call, const std::string& layout) {
  const auto& x = tensor_arg(call, 0);
  if (x.shape.size() != 4) LOOM_THROW(TypeError) << "needs an " << layout << " tensor (rank 4), got " << shape_text(x.shape);
  if (!is_float(x.dtype)) LOOM_THROW(TypeError) << "needs a float tensor, got " << x.dtype.to_string();
  return x;
}

const std::vector<SchemaField> kWindowAttrs = {
    {"strides", "Array", Any(Array(std::vector<Any>{int64_t{1}, int64_t{1}})), "(sh, sw) or (s)"},
    {"padding", "Array", Any(Array(std::vector<Any>{int64_t{0}})), "(p), (ph, pw) or (top, left, bottom, right)"},
    {"dilation", "Array", Any(Array(std::vector<Any>{int64_t{1}, int64_t{1}})), "(dh, dw) or (d)"}};
const SchemaField kLayoutAttr{"layout", "str", Any(std::string("NCHW")), "NCHW or NHWC"};

void pool(const std::string& name, bool is_max) {
  std::vector<SchemaField> attrs = {{"pool_size", "Array", Any(), "(kh, kw) or (k)"}, kWindowAttrs[0], kWindowAttrs[1],
                                    kLayoutAttr};
  if (!is_max) attrs.push_back({"count_include_pad", "bool", Any(false), "divide by the whole window, padding included"});
  define_operator(
      name, 1, attrs, ir::PatternKind::kOutputFusable,
      is_max ? "maximum over each window (padding is -inf)" : "mean over each window",
      [](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "layout");
        const auto& x = image(call, a.at("layout").as_string());
        auto k = pair_attr(a, "pool_size"), s = pair_attr(a, "strides");
        auto p = padding_attr(a);
        int64_t h = static_dim(x, l.h, "the height"), w = static_dim(x, l.w, "the width");
        return ir::TensorType(Array(l.order(x.shape[l.n], x.shape[l.c], dim_of(out_extent(h, p[0] + p[2], k[0], s[0], 1)),
                                            dim_of(out_extent(w, p[1] + p[3], k[1], s[1], 1)))),
                              x.dtype);
      },
      [is_max](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "layout");
        auto k = pair_attr(a, "pool_size"), s = pair_attr(a, "strides");
        auto p = padding_attr(a);
        int64_t h = *constant_dim(xt.shape[l.h]), w = *constant_dim(xt.shape[l.w]);
        DataType t = x->dtype;
        PrimExpr fill = make_const(t, is_max ? -std::numeric_limits<double>::infinity() : 0.0);
        // The window's top-left corner in the (unpadded) input.
        auto corner = [&](const Indices& o) {
          return std::make_pair(PrimExpr(tir::Sub(tir::Mul(o[l.h], PrimExpr(s[0])), PrimExpr(p[0]))),
                                PrimExpr(tir::Sub(tir::Mul(o[l.w], PrimExpr(s[1])), PrimExpr(p[1]))));
        };
        Padded xp = pad_input(b, x, l, h, w, p, fill);
        auto value = [&](const Indices& o, const Indices& r) {
          PrimExpr y0 = tir::Mul(o[l.h], PrimExpr(s[0])), x0 = tir::Mul(o[l.w], PrimExpr(s[1]));
          return PrimExpr(tir::BufferLoad(xp.buffer, l.order(o[l.n], o[l.c], PrimExpr(tir::Add(y0, r[0])), PrimExpr(tir::Add(x0, r[1])))));
        };
        auto combine = [is_max](const PrimExpr& acc, const PrimExpr& v) {
          return is_max ? PrimExpr(tir::Max(acc, v)) : PrimExpr(tir::Add(acc, v));
        };
        std::function<PrimExpr(const PrimExpr&)> finalize;
        if (!is_max && a.at("count_include_pad").as_bool()) {
          PrimExpr window = make_const(t, static_cast<double>(k[0] * k[1]));
          finalize = [window](const PrimExpr& acc) { return PrimExpr(tir::Div(acc, window)); };
        }
        tir::Stmt body = xp.around(reduction(y, {PrimExpr(k[0]), PrimExpr(k[1])}, fill, combine, value, finalize));
        if (is_max || finalize) return b.finish(body);
        // Average over the part of the window inside the input.
        tir::Stmt divide = loop_nest(buffer_shape(y), [&](const Indices& o) {
          auto [y0, x0] = corner(o);
          auto inside = [](const PrimExpr& start, int64_t kernel, int64_t limit) {
            return PrimExpr(tir::Sub(tir::Min(tir::Add(start, PrimExpr(kernel)), PrimExpr(limit)),
                                     tir::Max(start, PrimExpr(int64_t{0}))));
          };
          PrimExpr count = tir::Cast(t, tir::Mul(inside(y0, k[0], h), inside(x0, k[1], w)));
          return tir::Stmt(tir::BufferStore(y, tir::Div(tir::BufferLoad(y, o), count), o));
        });
        return b.finish(tir::SeqStmt({body, divide}));
      });
}
}  // namespace

void register_conv_ops() {
  std::vector<SchemaField> conv_attrs = kWindowAttrs;
  conv_attrs.push_back({"groups", "int", Any(int64_t{1}), "channel groups (C for depthwise)", 1, std::nullopt});
  conv_attrs.push_back({"data_layout", "str", Any(std::string("NCHW")), "of x and the result: NCHW or NHWC"});
  conv_attrs.push_back({"kernel_layout", "str", Any(std::string("OIHW")), "of w: OIHW or OHWI"});
  define_operator(
      "conv2d", 2, conv_attrs, ir::PatternKind::kOutputFusable,
      "2-D convolution (cross-correlation): x N C H W, w O I KH KW with I = C / groups -> N O H' W' (in the given layouts)",
      [](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "data_layout"), kl = layout_attr(a, "kernel_layout");
        const auto& x = image(call, a.at("data_layout").as_string());
        const auto& w = tensor_arg(call, 1);
        if (w.shape.size() != 4 || w.dtype != x.dtype) {
          LOOM_THROW(TypeError) << "needs " << a.at("kernel_layout").as_string() << " weights of " << x.dtype.to_string()
                                << ", got " << shape_text(w.shape) << " " << w.dtype.to_string();
        }
        auto s = pair_attr(a, "strides"), d = pair_attr(a, "dilation");
        auto p = padding_attr(a);
        int64_t groups = a.at("groups").as_int();
        int64_t c = static_dim(x, l.c, "the channels"), h = static_dim(x, l.h, "the height"),
                wd = static_dim(x, l.w, "the width");
        int64_t o = static_dim(w, kl.n, "the weights"), i = static_dim(w, kl.c, "the weights");
        int64_t kh = static_dim(w, kl.h, "the weights"), kw = static_dim(w, kl.w, "the weights");
        if (groups < 1 || c % groups != 0 || o % groups != 0) {
          LOOM_THROW(TypeError) << "groups " << groups << " must divide the " << c << " input and " << o << " output channels";
        }
        if (i != c / groups) {
          LOOM_THROW(TypeError) << "weights " << shape_text(w.shape) << " need " << c / groups
                                << " input channels per group (C " << c << " / groups " << groups << "), got " << i;
        }
        return ir::TensorType(Array(l.order(x.shape[l.n], dim_of(o), dim_of(out_extent(h, p[0] + p[2], kh, s[0], d[0])),
                                            dim_of(out_extent(wd, p[1] + p[3], kw, s[1], d[1])))),
                              x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        const auto& wt = tensor_arg(call, 1);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer w = b.param(wt, "W");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "data_layout"), kl = layout_attr(a, "kernel_layout");
        auto s = pair_attr(a, "strides"), d = pair_attr(a, "dilation");
        auto p = padding_attr(a);
        int64_t groups = a.at("groups").as_int();
        int64_t h = *constant_dim(xt.shape[l.h]), wd = *constant_dim(xt.shape[l.w]);
        int64_t o = *constant_dim(wt.shape[kl.n]), cg = *constant_dim(wt.shape[kl.c]);
        int64_t kh = *constant_dim(wt.shape[kl.h]), kw = *constant_dim(wt.shape[kl.w]);
        DataType t = x->dtype;
        Padded xp = pad_input(b, x, l, h, wd, p, make_const(t, 0));
        return b.finish(xp.around(reduction(
            y, {PrimExpr(cg), PrimExpr(kh), PrimExpr(kw)}, make_const(t, 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              // With one group every output channel reads every input channel.
              PrimExpr group = tir::FloorDiv(out[l.c], PrimExpr(o / groups));
              PrimExpr c = groups == 1 ? r[0] : PrimExpr(tir::Add(tir::Mul(group, PrimExpr(cg)), r[0]));
              PrimExpr iy = tir::Add(tir::Mul(out[l.h], PrimExpr(s[0])), tir::Mul(r[1], PrimExpr(d[0])));
              PrimExpr ix = tir::Add(tir::Mul(out[l.w], PrimExpr(s[1])), tir::Mul(r[2], PrimExpr(d[1])));
              return PrimExpr(tir::Mul(tir::BufferLoad(xp.buffer, l.order(out[l.n], c, iy, ix)),
                                       tir::BufferLoad(w, kl.order(out[l.c], r[0], r[1], r[2]))));
            })));
      });

  pool("max_pool2d", true);
  pool("avg_pool2d", false);

  define_operator(
      "global_avg_pool2d", 1, {kLayoutAttr}, ir::PatternKind::kReduction,
      "mean over H and W: N C H W -> N C 1 1 (in the given layout)",
      [](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "layout");
        const auto& x = image(call, a.at("layout").as_string());
        return ir::TensorType(Array(l.order(x.shape[l.n], x.shape[l.c], dim_of(1), dim_of(1))), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Layout l = layout_attr(attrs_of(call), "layout");
        Indices xs = buffer_shape(x);
        DataType t = x->dtype;
        PrimExpr count = tir::Cast(t, tir::Mul(xs[l.h], xs[l.w]));
        return b.finish(reduction(
            y, {xs[l.h], xs[l.w]}, make_const(t, 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& o, const Indices& r) { return PrimExpr(tir::BufferLoad(x, l.order(o[l.n], o[l.c], r[0], r[1]))); },
            [count](const PrimExpr& acc) { return PrimExpr(tir::Div(acc, count)); }));
      });
}

}  // namespace loom::ops
