// conv2d (NCHW, NHWC or channel-blocked NCHW{b}c data; OIHW, OHWI or
// OIHW{i}i{o}o weights; stride, padding, dilation, groups) and 2-D
// pooling in those layouts (docs/operators.md).
#include <algorithm>
#include <cctype>
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

// Where each axis of a data layout sits: batch, channels (the channel
// blocks in NCHW{b}c), height, width; `block` > 0 for NCHW{b}c, whose
// fifth index is the channel within its block (docs/operators.md,
// "Blocked layouts").  A kernel layout uses n and c for the output and
// input channels, and OIHW{i}i{o}o its two blocks.
struct Layout {
  size_t n, c, h, w;
  int64_t block = 0, in_block = 0;  // NCHW{block}c; OIHW{in_block}i{block}o
  size_t rank() const { return block ? (in_block ? 6 : 5) : 4; }
  template <class T>
  std::vector<T> order(T n_, T c_, T h_, T w_) const {
    std::vector<T> v(4);
    v[n] = n_, v[c] = c_, v[h] = h_, v[w] = w_;
    return v;
  }
  // The indices `at` with the pixel moved to (y, x): the same channel.
  template <class T>
  std::vector<T> at_pixel(std::vector<T> at, T y, T x) const {
    at[h] = y, at[w] = x;
    return at;
  }
};

// The block factors of "NCHW16c" (prefix NCHW, then {16, "c"}) or
// "OIHW1i16o" (prefix OIHW, then {1, "i"}, {16, "o"}); empty when `s` is
// not of that form.
std::vector<std::pair<int64_t, char>> blocks_of(const std::string& s, const std::string& prefix) {
  std::vector<std::pair<int64_t, char>> out;
  if (s.size() <= prefix.size() || s.compare(0, prefix.size(), prefix) != 0) return out;
  size_t k = prefix.size();
  while (k < s.size()) {
    size_t digits = k;
    while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
    if (digits == k || digits == s.size() || digits - k > 6) return {};
    out.push_back({std::stoll(s.substr(k, digits - k)), s[digits]});
    if (out.back().first < 1) return {};
    k = digits + 1;
  }
  return out;
}

Layout layout_attr(const Map& attrs, const std::string& key) {
  const std::string& s = attrs.at(key).as_string();
  if (key == "kernel_layout") {
    if (s == "OIHW") return {0, 1, 2, 3};
    if (s == "OHWI") return {0, 3, 1, 2};
    auto b = blocks_of(s, "OIHW");
    if (b.size() == 2 && b[0].second == 'i' && b[1].second == 'o') return {0, 1, 2, 3, b[1].first, b[0].first};
    LOOM_THROW(TypeError) << key << " must be OIHW, OHWI or OIHW{i}i{o}o (OIHW16i16o), got '" << s << "'";
  }
  if (s == "NCHW") return {0, 1, 2, 3};
  if (s == "NHWC") return {0, 3, 1, 2};
  auto b = blocks_of(s, "NCHW");
  if (b.size() == 1 && b[0].second == 'c') return {0, 1, 2, 3, b[0].first};
  LOOM_THROW(TypeError) << key << " must be NCHW, NHWC or NCHW{b}c (NCHW16c), got '" << s << "'";
}

// x at `at` moved to the pixel (iy, ix), with zero (or `fill`) outside
// the input: the load is clamped into range so that it is always valid,
// and the select picks.
PrimExpr padded_load(const tir::Buffer& x, const Layout& l, const Indices& at, const PrimExpr& iy, const PrimExpr& ix,
                     int64_t h, int64_t w, const PrimExpr& fill) {
  auto clamp = [](const PrimExpr& i, int64_t extent) {
    return PrimExpr(tir::Max(tir::Min(i, PrimExpr(extent - 1)), PrimExpr(int64_t{0})));
  };
  PrimExpr inside = tir::And(tir::And(tir::GE(iy, PrimExpr(int64_t{0})), tir::LT(iy, PrimExpr(h))),
                             tir::And(tir::GE(ix, PrimExpr(int64_t{0})), tir::LT(ix, PrimExpr(w))));
  return tir::Select(inside, tir::BufferLoad(x, l.at_pixel(at, clamp(iy, h), clamp(ix, w))), fill);
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
        return tir::Stmt(tir::BufferStore(padded, padded_load(x, l, i, y, xi, h, w, fill), i));
      },
      "p");
  return {padded, nest};
}

// The image argument in layout `l` (named `layout`): its rank, and in
// NCHW{b}c a last extent of b.
const ir::TensorTypeNode& image(const graph::CallNode& call, const Layout& l, const std::string& layout,
                                bool numeric = false) {
  const auto& x = tensor_arg(call, 0);
  if (x.shape.size() != l.rank())
    LOOM_THROW(TypeError) << "needs an " << layout << " tensor (rank " << l.rank() << "), got " << shape_text(x.shape);
  if (l.block && constant_dim(x.shape[4]) != std::optional<int64_t>(l.block)) {
    LOOM_THROW(TypeError) << "needs an " << layout << " tensor, whose last extent is " << l.block << ", got "
                          << shape_text(x.shape);
  }
  if (numeric ? x.dtype == DataType::Bool() : !is_float(x.dtype)) {
    LOOM_THROW(TypeError) << "needs a " << (numeric ? "numeric" : "float") << " tensor, got " << x.dtype.to_string();
  }
  return x;
}

const std::vector<SchemaField> kWindowAttrs = {
    {"strides", "Array", Any(Array(std::vector<Any>{int64_t{1}, int64_t{1}})), "(sh, sw) or (s)"},
    {"padding", "Array", Any(Array(std::vector<Any>{int64_t{0}})), "(p), (ph, pw) or (top, left, bottom, right)"},
    {"dilation", "Array", Any(Array(std::vector<Any>{int64_t{1}, int64_t{1}})), "(dh, dw) or (d)"}};
const SchemaField kLayoutAttr{"layout", "str", Any(std::string("NCHW")), "NCHW, NHWC or NCHW{b}c"};

// A pool's output extent along one axis, and the padding it adds at the
// end for ceil_mode (windows that start inside the input or its leading
// padding and run past the end, as in ONNX and PyTorch).
std::pair<int64_t, int64_t> pool_extent(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel, int64_t stride,
                                        int64_t dilation, bool ceil_mode) {
  int64_t out = out_extent(in, pad_begin + pad_end, kernel, stride, dilation);
  if (!ceil_mode) return {out, 0};
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t ceiled = (in + pad_begin + pad_end - span + stride - 1) / stride + 1;
  if ((ceiled - 1) * stride >= in + pad_begin) --ceiled;  // the last window must start inside
  out = std::max(out, ceiled);
  return {out, std::max<int64_t>(0, (out - 1) * stride + span - (in + pad_begin + pad_end))};
}

struct PoolGeometry {
  std::vector<int64_t> k, s, d, p;  // p: (top, left, bottom, right), ceil_mode's extra included
  std::vector<int64_t> given;       // the padding as given
  int64_t oh, ow;
};

PoolGeometry pool_geometry(const Map& a, int64_t h, int64_t w) {
  PoolGeometry g{pair_attr(a, "pool_size"), pair_attr(a, "strides"), pair_attr(a, "dilation"), padding_of(a), {}, 0, 0};
  g.given = g.p;
  bool ceil_mode = a.at("ceil_mode").as_bool();
  auto [oh, extra_h] = pool_extent(h, g.p[0], g.p[2], g.k[0], g.s[0], g.d[0], ceil_mode);
  auto [ow, extra_w] = pool_extent(w, g.p[1], g.p[3], g.k[1], g.s[1], g.d[1], ceil_mode);
  g.oh = oh, g.ow = ow;
  g.p[2] += extra_h, g.p[3] += extra_w;
  return g;
}

PrimExpr lowest_value(DataType t) {
  if (is_float(t)) return make_const(t, -std::numeric_limits<double>::infinity());
  if (t.code == DataType::kUInt) return tir::IntImm(t, 0);
  return tir::IntImm(t, t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1)));
}

void pool(const std::string& name, bool is_max) {
  std::vector<SchemaField> attrs = {{"pool_size", "Array", Any(), "(kh, kw) or (k)"},
                                    kWindowAttrs[0],
                                    kWindowAttrs[1],
                                    kLayoutAttr,
                                    kWindowAttrs[2],
                                    {"ceil_mode", "bool", Any(false),
                                     "round the output size up: a last window may run past the end (not the start)"}};
  if (!is_max)
    attrs.push_back({"count_include_pad", "bool", Any(false), "divide by the whole window, padding included"});
  define_operator(
      name, 1, attrs, ir::PatternKind::kOutputFusable,
      is_max ? "maximum over each window (padding is -inf; integers too)" : "mean over each window",
      [is_max](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "layout");
        const auto& x = image(call, l, a.at("layout").as_string(), is_max);
        int64_t h = static_dim(x, l.h, "the height"), w = static_dim(x, l.w, "the width");
        PoolGeometry g = pool_geometry(a, h, w);
        return ir::TensorType(
            Array(l.at_pixel(std::vector<Any>(x.shape.begin(), x.shape.end()), dim_of(g.oh), dim_of(g.ow))), x.dtype);
      },
      [is_max](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "layout");
        int64_t h = *constant_dim(xt.shape[l.h]), w = *constant_dim(xt.shape[l.w]);
        PoolGeometry g = pool_geometry(a, h, w);
        const auto &k = g.k, &s = g.s, &d = g.d, &p = g.p;
        DataType t = x->dtype;
        PrimExpr fill = is_max ? lowest_value(t) : make_const(t, 0.0);
        Padded xp = pad_input(b, x, l, h, w, p, fill);
        auto value = [&](const Indices& o, const Indices& r) {
          PrimExpr y0 = tir::Mul(o[l.h], PrimExpr(s[0])), x0 = tir::Mul(o[l.w], PrimExpr(s[1]));
          PrimExpr ry = d[0] == 1 ? r[0] : PrimExpr(tir::Mul(r[0], PrimExpr(d[0])));
          PrimExpr rx = d[1] == 1 ? r[1] : PrimExpr(tir::Mul(r[1], PrimExpr(d[1])));
          return PrimExpr(
              tir::BufferLoad(xp.buffer, l.at_pixel(o, PrimExpr(tir::Add(y0, ry)), PrimExpr(tir::Add(x0, rx)))));
        };
        auto combine = [is_max](const PrimExpr& acc, const PrimExpr& v) {
          return is_max ? PrimExpr(tir::Max(acc, v)) : PrimExpr(tir::Add(acc, v));
        };
        bool whole_window = !is_max && a.at("count_include_pad").as_bool();
        std::function<PrimExpr(const PrimExpr&)> finalize;
        if (whole_window && g.p == g.given) {
          PrimExpr window = make_const(t, static_cast<double>(k[0] * k[1]));
          finalize = [window](const PrimExpr& acc) { return PrimExpr(tir::Div(acc, window)); };
        }
        tir::Stmt body = xp.around(reduction(y, {PrimExpr(k[0]), PrimExpr(k[1])}, fill, combine, value, finalize));
        if (is_max || finalize) return b.finish(body);
        // Average over the part of the window inside the input (or, with
        // count_include_pad, inside the padded input: ceil_mode's extra
        // windows past its end count only what they cover).
        int64_t lo_h = whole_window ? -g.given[0] : 0, lo_w = whole_window ? -g.given[1] : 0;
        int64_t hi_h = whole_window ? h + g.given[2] : h, hi_w = whole_window ? w + g.given[3] : w;
        tir::Stmt divide = loop_nest(buffer_shape(y), [&](const Indices& o) {
          auto count_along = [](const PrimExpr& start, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi) {
            // taps r in [0, kernel) with lo <= start + r * dilation < hi
            PrimExpr first = tir::Max(
                PrimExpr(int64_t{0}),
                tir::FloorDiv(tir::Add(tir::Sub(PrimExpr(lo), start), PrimExpr(dilation - 1)), PrimExpr(dilation)));
            PrimExpr last = tir::Min(
                PrimExpr(kernel - 1),
                tir::FloorDiv(tir::Sub(tir::Sub(PrimExpr(hi), PrimExpr(int64_t{1})), start), PrimExpr(dilation)));
            return PrimExpr(tir::Max(PrimExpr(int64_t{0}), tir::Add(tir::Sub(last, first), PrimExpr(int64_t{1}))));
          };
          PrimExpr y0 = tir::Sub(tir::Mul(o[l.h], PrimExpr(s[0])), PrimExpr(p[0]));
          PrimExpr x0 = tir::Sub(tir::Mul(o[l.w], PrimExpr(s[1])), PrimExpr(p[1]));
          PrimExpr count =
              tir::Cast(t, tir::Mul(count_along(y0, k[0], d[0], lo_h, hi_h), count_along(x0, k[1], d[1], lo_w, hi_w)));
          return tir::Stmt(tir::BufferStore(y, tir::Div(tir::BufferLoad(y, o), count), o));
        });
        return b.finish(tir::SeqStmt({body, divide}));
      });
}
}  // namespace

// Winograd's F(2x2, 3x3) for a stride-1 3x3 convolution channels-last
// (docs/operators.md, "Winograd"; the Winograd pass makes these): the
// input's overlapping 4x4 tiles (one per 2x2 block of outputs) go through
// B^T d B, a batched matmul with the weights' G g G^T (made at compile
// time) multiplies them by 16 matrices, and A^T m A turns each product
// back into 2x2 outputs: 16 multiply-adds per 4 outputs and channel pair,
// not 36.
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: row i is d[u_i] + s_i d[v_i]
//   A^T = [1 1 1 0; 0 1 -1 -1]: row p is m[p] + t m[p + 1] + t m[p + 2], t = 1 - 2p
namespace {
constexpr int64_t kBtFirst[4] = {0, 1, 2, 1}, kBtSecond[4] = {2, 2, 1, 3};

struct WinogradTiles {
  int64_t th, tw;  // tiles down and across: ceil(out / 2)
};

WinogradTiles winograd_tiles(int64_t oh, int64_t ow) { return {(oh + 1) / 2, (ow + 1) / 2}; }

// winograd_input's strip of tile rows [begin, end): all of them by default.
std::pair<int64_t, int64_t> winograd_tile_rows(const Map& attrs, const WinogradTiles& tiles) {
  Array rows = attrs.at("tile_rows").cast<Array>();
  if (rows.size() == 0) return {0, tiles.th};
  if (rows.size() != 2) LOOM_THROW(TypeError) << "tile_rows takes (begin, end), got " << rows.size() << " entries";
  int64_t begin = rows[0].as_int(), end = rows[1].as_int();
  if (begin < 0 || begin >= end || end > tiles.th) {
    LOOM_THROW(TypeError) << "tile_rows (" << begin << ", " << end << ") is not a strip of the " << tiles.th
                          << " rows of tiles";
  }
  return {begin, end};
}

void register_winograd_ops() {
  define_operator(
      "winograd_input", 1,
      {{"padding", "Array", Any(Array(std::vector<Any>{int64_t{0}})), "of the convolution: (top, left, bottom, right)"},
       {"tile_rows", "Array", Any(Array(std::vector<Any>{})),
        "(begin, end): only the tiles of these rows of tiles, a strip of the output (default: all)"}},
      ir::PatternKind::kInjective,
      "Winograd F(2x2, 3x3) input transform: x N H W C (channels last) -> 4 4 T C, B^T d B of each 4x4 tile of the "
      "padded input at stride 2, T = N ceil(H'/2) ceil(W'/2) tiles (N rows ceil(W'/2) of a strip of tile_rows), H' "
      "= H + pads - 2; floats or signed integers (sums of four values, wrapping as integers do)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (x.shape.size() != 4) LOOM_THROW(TypeError) << "needs x N H W C, got " << shape_text(x.shape);
        if (!is_float(x.dtype) && x.dtype.code != DataType::kInt) {
          LOOM_THROW(TypeError) << "needs floats or signed integers, got " << x.dtype.to_string();
        }
        auto p = padding_of(attrs_of(call));
        int64_t n = static_dim(x, 0, "the batch"), h = static_dim(x, 1, "the height"),
                w = static_dim(x, 2, "the width");
        auto tiles = winograd_tiles(out_extent(h, p[0] + p[2], 3, 1, 1), out_extent(w, p[1] + p[3], 3, 1, 1));
        auto [begin, end] = winograd_tile_rows(attrs_of(call), tiles);
        return ir::TensorType(Array({dim_of(4), dim_of(4), dim_of(n * (end - begin) * tiles.tw), x.shape[3]}), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer v = b.param(result_type(call), "V");
        auto p = padding_of(attrs_of(call));
        int64_t h = *constant_dim(xt.shape[1]), w = *constant_dim(xt.shape[2]);
        auto tiles = winograd_tiles(h + p[0] + p[2] - 2, w + p[1] + p[3] - 2);
        auto [begin, end] = winograd_tile_rows(attrs_of(call), tiles);
        DataType t = x->dtype;
        // One nest over the tiles and the channels whose body computes the
        // tile's 16 outputs from its 16 values (each output a sum of four
        // of them: LLVM reads each value once for all 16), where a nest
        // over the outputs read each value four times and recomputed its
        // place and bounds for each (DenseNet-121's input transforms ran
        // at 7-20 cycles a vector).
        tir::Var tile("t", DataType::Int(64)), c("c", DataType::Int(64));
        PrimExpr zero(int64_t{0});  // the pixel's place in the indices, set by padded_load
        PrimExpr per_image((end - begin) * tiles.tw);
        PrimExpr n = tir::FloorDiv(tile, per_image), k = tir::FloorMod(tile, per_image);
        PrimExpr y0 =
            tir::Sub(tir::Mul(tir::FloorDiv(k, PrimExpr(tiles.tw)), PrimExpr(int64_t{2})), PrimExpr(p[0] - 2 * begin));
        PrimExpr x0 = tir::Sub(tir::Mul(tir::FloorMod(k, PrimExpr(tiles.tw)), PrimExpr(int64_t{2})), PrimExpr(p[1]));
        auto d = [&](int64_t a, int64_t col) {  // the padded input at tap (a, col) of the tile
          return padded_load(x, Layout{0, 3, 1, 2}, {n, zero, zero, c}, tir::Add(y0, PrimExpr(a)),
                             tir::Add(x0, PrimExpr(col)), h, w, make_const(t, 0));
        };
        // (B^T d B)[i][j] = (d[u_i] + s_i d[v_i]) (columns likewise): s_i is +1 for row 1 only.
        auto combine = [](int64_t i, const PrimExpr& u, const PrimExpr& v) {
          return i == 1 ? PrimExpr(tir::Add(u, v)) : PrimExpr(tir::Sub(u, v));
        };
        std::vector<tir::Stmt> stores;
        for (int64_t i = 0; i < 4; ++i) {
          for (int64_t j = 0; j < 4; ++j) {
            auto row = [&](int64_t a) { return combine(j, d(a, kBtFirst[j]), d(a, kBtSecond[j])); };
            stores.push_back(tir::BufferStore(v, combine(i, row(kBtFirst[i]), row(kBtSecond[i])),
                                              {PrimExpr(i), PrimExpr(j), PrimExpr(tile), PrimExpr(c)}));
          }
        }
        PrimExpr count = b.dim(result_type(call).shape[2]);
        return b.finish(tir::For(
            tile, PrimExpr(int64_t{0}), count, tir::ForKind::kSerial,
            tir::For(c, PrimExpr(int64_t{0}), b.dim(xt.shape[3]), tir::ForKind::kSerial, tir::SeqStmt(stores))));
      });

  define_operator(
      "winograd_output", 1,
      {SchemaField{"height", "int", Any(), "of the result (the convolution's)"}.at_least(1),
       SchemaField{"width", "int", Any(), "of the result"}.at_least(1)},
      ir::PatternKind::kInjective,
      "Winograd F(2x2, 3x3) output transform: m 4 4 T K (the products of winograd_input's tiles and the transformed "
      "weights) -> N height width K, A^T m A of each tile, N = T / (ceil(height/2) ceil(width/2)); floats or signed "
      "integers",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& m = tensor_arg(call, 0);
        Map a = attrs_of(call);
        int64_t oh = a.at("height").as_int(), ow = a.at("width").as_int();
        if (m.shape.size() != 4 || constant_dim(m.shape[0]) != 4 || constant_dim(m.shape[1]) != 4) {
          LOOM_THROW(TypeError) << "needs m 4 4 T K, got " << shape_text(m.shape);
        }
        if (!is_float(m.dtype) && m.dtype.code != DataType::kInt) {
          LOOM_THROW(TypeError) << "needs floats or signed integers, got " << m.dtype.to_string();
        }
        auto tiles = winograd_tiles(oh, ow);
        int64_t count = static_dim(m, 2, "the tiles");
        if (count % (tiles.th * tiles.tw) != 0) {
          LOOM_THROW(TypeError) << count << " tiles are not a whole number of " << oh << "x" << ow << " images ("
                                << tiles.th * tiles.tw << " tiles each)";
        }
        return ir::TensorType(Array({dim_of(count / (tiles.th * tiles.tw)), dim_of(oh), dim_of(ow), m.shape[3]}),
                              m.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer m = b.param(tensor_arg(call, 0), "M");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        auto tiles = winograd_tiles(a.at("height").as_int(), a.at("width").as_int());
        DataType t = m->dtype;
        PrimExpr two(int64_t{2});
        return b.finish(compute(y, [&](const Indices& o) {
          PrimExpr tile = tir::Add(
              tir::Mul(tir::Add(tir::Mul(o[0], PrimExpr(tiles.th)), tir::FloorDiv(o[1], two)), PrimExpr(tiles.tw)),
              tir::FloorDiv(o[2], two));
          PrimExpr p = tir::FloorMod(o[1], two), q = tir::FloorMod(o[2], two);
          // Row p of A^T: m[p] + t m[p + 1] + t m[p + 2], t = 1 - 2p.
          auto sign = [&](const PrimExpr& r) {
            return PrimExpr(tir::Sub(make_const(t, 1), tir::Mul(make_const(t, 2), tir::Cast(t, r))));
          };
          PrimExpr sp = sign(p), sq = sign(q);
          auto row = [&](const PrimExpr& i) {
            auto at = [&](int64_t k) {
              return PrimExpr(tir::BufferLoad(m, {i, tir::Add(q, PrimExpr(k)), tile, o[3]}));
            };
            return PrimExpr(tir::Add(at(0), tir::Mul(sq, tir::Add(at(1), at(2)))));
          };
          return PrimExpr(
              tir::Add(row(p), tir::Mul(sp, tir::Add(row(tir::Add(p, PrimExpr(int64_t{1}))), row(tir::Add(p, two))))));
        }));
      });
}
}  // namespace

void register_conv_ops() {
  std::vector<SchemaField> conv_attrs = kWindowAttrs;
  conv_attrs.push_back(SchemaField{"groups", "int", Any(int64_t{1}), "channel groups (C for depthwise)"}.at_least(1));
  conv_attrs.push_back({"data_layout", "str", Any(std::string("NCHW")), "of x and the result: NCHW, NHWC or NCHW{b}c"});
  conv_attrs.push_back({"kernel_layout", "str", Any(std::string("OIHW")), "of w: OIHW, OHWI or OIHW{i}i{o}o"});
  conv_attrs.push_back(kOutDtypeAttr);
  define_operator(
      "conv2d", 2, conv_attrs, ir::PatternKind::kOutputFusable,
      "2-D convolution (cross-correlation): x N C H W, w O I KH KW with I = C / groups -> N O H' W' (in the given "
      "layouts; NCHW{b}c data takes OIHW{b}i{o}o weights, depthwise OIHW1i{b}o, and gives NCHW{o}c)",
      [](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "data_layout"), kl = layout_attr(a, "kernel_layout");
        const auto& x = image(call, l, a.at("data_layout").as_string(), true);
        const auto& w = tensor_arg(call, 1);
        DataType out_dtype = product_dtype(call, x.dtype, w.dtype);
        if (w.shape.size() != kl.rank()) {
          LOOM_THROW(TypeError) << "needs " << a.at("kernel_layout").as_string() << " weights (rank " << kl.rank()
                                << "), got " << shape_text(w.shape) << " " << w.dtype.to_string();
        }
        if (!l.block != !kl.block) {
          LOOM_THROW(TypeError) << "data layout " << a.at("data_layout").as_string() << " needs a "
                                << (l.block ? "blocked (OIHW{i}i{o}o)" : "plain") << " kernel layout, got "
                                << a.at("kernel_layout").as_string();
        }
        auto s = pair_attr(a, "strides"), d = pair_attr(a, "dilation");
        auto p = padding_of(a);
        int64_t groups = a.at("groups").as_int();
        int64_t c = static_dim(x, l.c, "the channels"), h = static_dim(x, l.h, "the height"),
                wd = static_dim(x, l.w, "the width");
        int64_t o = static_dim(w, kl.n, "the weights"), i = static_dim(w, kl.c, "the weights");
        int64_t kh = static_dim(w, kl.h, "the weights"), kw = static_dim(w, kl.w, "the weights");
        if (l.block) {  // blocks of channels: count them in channels
          c *= l.block, o *= kl.block, i *= kl.in_block;
          for (size_t k : {size_t{4}, size_t{5}}) {
            int64_t want = k == 4 ? kl.in_block : kl.block;
            if (static_dim(w, k, "the weights") != want) {
              LOOM_THROW(TypeError) << "needs " << a.at("kernel_layout").as_string() << " weights, whose extent " << k
                                    << " is " << want << ", got " << shape_text(w.shape);
            }
          }
          bool depthwise = groups == c && o == c && i == 1 && kl.in_block == 1 && kl.block == l.block;
          if (!(groups == 1 && kl.in_block == l.block) && !depthwise) {
            LOOM_THROW(TypeError) << "a blocked convolution is one group with weights blocked as its input (OIHW"
                                  << l.block << "i{o}o) or depthwise (groups = channels, OIHW1i" << l.block
                                  << "o); got groups " << groups << " and " << a.at("kernel_layout").as_string();
          }
        }
        if (groups < 1 || c % groups != 0 || o % groups != 0) {
          LOOM_THROW(TypeError) << "groups " << groups << " must divide the " << c << " input and " << o
                                << " output channels";
        }
        if (i != c / groups) {
          LOOM_THROW(TypeError) << "weights " << shape_text(w.shape) << " need " << c / groups
                                << " input channels per group (C " << c << " / groups " << groups << "), got " << i;
        }
        Any oh = dim_of(out_extent(h, p[0] + p[2], kh, s[0], d[0])),
            ow = dim_of(out_extent(wd, p[1] + p[3], kw, s[1], d[1]));
        if (l.block) return ir::TensorType(Array({x.shape[0], w.shape[0], oh, ow, dim_of(kl.block)}), out_dtype);
        return ir::TensorType(Array(l.order(x.shape[l.n], dim_of(o), oh, ow)), out_dtype);
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
        auto p = padding_of(a);
        int64_t groups = a.at("groups").as_int();
        int64_t h = *constant_dim(xt.shape[l.h]), wd = *constant_dim(xt.shape[l.w]);
        int64_t o = *constant_dim(wt.shape[kl.n]), cg = *constant_dim(wt.shape[kl.c]);
        int64_t kh = *constant_dim(wt.shape[kl.h]), kw = *constant_dim(wt.shape[kl.w]);
        DataType t = y->dtype;
        Padded xp = pad_input(b, x, l, h, wd, p, make_const(x->dtype, 0));
        auto add = [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); };
        // x * w, each widened to the result's dtype (out_dtype).
        auto mul = [&](const PrimExpr& xv, const PrimExpr& wv) {
          return PrimExpr(tir::Mul(widen(xv, t), widen(wv, t)));
        };
        auto pixel = [&](const Indices& out, const PrimExpr& ry, const PrimExpr& rx) {
          return std::pair<PrimExpr, PrimExpr>{
              tir::Add(tir::Mul(out[l.h], PrimExpr(s[0])), tir::Mul(ry, PrimExpr(d[0]))),
              tir::Add(tir::Mul(out[l.w], PrimExpr(s[1])), tir::Mul(rx, PrimExpr(d[1])))};
        };
        PrimExpr zero(int64_t{0});
        if (l.block && groups > 1) {  // depthwise: each lane reads its own channel
          return b.finish(xp.around(reduction(
              y, {PrimExpr(kh), PrimExpr(kw)}, make_const(t, 0), add, [&](const Indices& out, const Indices& r) {
                auto [iy, ix] = pixel(out, r[0], r[1]);
                return mul(tir::BufferLoad(xp.buffer, l.at_pixel(out, iy, ix)),
                           tir::BufferLoad(w, {out[1], zero, r[0], r[1], zero, out[4]}));
              })));
        }
        if (l.block) {  // one group: over the input's channels (blocks, then within), then the taps: NCHW's order
          return b.finish(xp.around(reduction(y, {PrimExpr(cg), PrimExpr(l.block), PrimExpr(kh), PrimExpr(kw)},
                                              make_const(t, 0), add, [&](const Indices& out, const Indices& r) {
                                                auto [iy, ix] = pixel(out, r[2], r[3]);
                                                return mul(
                                                    tir::BufferLoad(xp.buffer, {out[0], r[0], iy, ix, r[1]}),
                                                    tir::BufferLoad(w, {out[1], r[0], r[2], r[3], r[1], out[4]}));
                                              })));
        }
        // Channels last with at least a cache line of input channels: the
        // taps, then the channels innermost, so that each tap reads whole
        // lines in order.  In NCHW's order (channels, then taps) a step of
        // the channels reads every tap's line for every pixel of the tile,
        // and where a pixel is a power of two of bytes apart (512 channels
        // read with stride 2: 4 KiB) those lines share one L1 set: ResNet-50's
        // 3x3 convolution over 14x14x512 with stride 2 ran at 10 GFLOP/s, 60
        // this way.  Fewer channels (a 3-channel stem) keep NCHW's order,
        // which reads a row's taps together.
        bool last = l.c == 3 && cg * xt.dtype.bits >= 64 * 8;
        std::vector<PrimExpr> extents = last ? std::vector<PrimExpr>{PrimExpr(kh), PrimExpr(kw), PrimExpr(cg)}
                                             : std::vector<PrimExpr>{PrimExpr(cg), PrimExpr(kh), PrimExpr(kw)};
        return b.finish(
            xp.around(reduction(y, extents, make_const(t, 0), add, [&](const Indices& out, const Indices& r) {
              PrimExpr rc = last ? r[2] : r[0], ry = last ? r[0] : r[1], rx = last ? r[1] : r[2];
              // With one group every output channel reads every input channel.
              PrimExpr group = tir::FloorDiv(out[l.c], PrimExpr(o / groups));
              PrimExpr c = groups == 1 ? rc : PrimExpr(tir::Add(tir::Mul(group, PrimExpr(cg)), rc));
              auto [iy, ix] = pixel(out, ry, rx);
              return mul(tir::BufferLoad(xp.buffer, l.order(out[l.n], c, iy, ix)),
                         tir::BufferLoad(w, kl.order(out[l.c], rc, ry, rx)));
            })));
      });

  std::vector<SchemaField> transpose_attrs = kWindowAttrs;
  transpose_attrs.push_back({"output_padding", "Array", Any(Array(std::vector<Any>{int64_t{0}, int64_t{0}})),
                             "extra rows and columns at the end of the result: (oh, ow) or (o)"});
  transpose_attrs.push_back(SchemaField{"groups", "int", Any(int64_t{1}), "channel groups"}.at_least(1));
  define_operator(
      "conv2d_transpose", 2, transpose_attrs, ir::PatternKind::kOutputFusable,
      "the transpose of conv2d (the gradient of its input): x N C H W, w C (O/groups) KH KW -> N O H' W' with H' = (H "
      "- 1) "
      "stride - pads + dilation (KH - 1) + output_padding + 1 (NCHW)",
      [](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        const auto& x = image(call, Layout{0, 1, 2, 3}, "NCHW");
        const auto& w = tensor_arg(call, 1);
        if (w.shape.size() != 4 || w.dtype != x.dtype) {
          LOOM_THROW(TypeError) << "needs weights C (O/groups) KH KW of " << x.dtype.to_string() << ", got "
                                << shape_text(w.shape) << " " << w.dtype.to_string();
        }
        auto s = pair_attr(a, "strides"), d = pair_attr(a, "dilation");
        auto p = padding_of(a);
        std::vector<int64_t> op;
        for (const Any& v : a.at("output_padding").cast<Array>()) op.push_back(v.as_int());
        if (op.size() == 1) op.push_back(op[0]);
        if (op.size() != 2 || op[0] < 0 || op[1] < 0)
          LOOM_THROW(TypeError) << "output_padding must be 1 or 2 entries >= 0";
        int64_t groups = a.at("groups").as_int();
        int64_t c = static_dim(x, 1, "the channels"), h = static_dim(x, 2, "the height"),
                wd = static_dim(x, 3, "the width");
        int64_t wc = static_dim(w, 0, "the weights"), og = static_dim(w, 1, "the weights");
        int64_t kh = static_dim(w, 2, "the weights"), kw = static_dim(w, 3, "the weights");
        if (wc != c || c % groups != 0) {
          LOOM_THROW(TypeError) << "weights " << shape_text(w.shape) << " need " << c << " input channels (x has " << c
                                << ") divisible by groups " << groups;
        }
        int64_t oh = (h - 1) * s[0] - p[0] - p[2] + d[0] * (kh - 1) + op[0] + 1;
        int64_t ow = (wd - 1) * s[1] - p[1] - p[3] + d[1] * (kw - 1) + op[1] + 1;
        if (oh < 1 || ow < 1)
          LOOM_THROW(TypeError) << "the padding leaves an empty result (" << oh << " x " << ow << ")";
        return ir::TensorType(Array({x.shape[0], dim_of(og * groups), dim_of(oh), dim_of(ow)}), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        const auto& xt = tensor_arg(call, 0);
        const auto& wt = tensor_arg(call, 1);
        tir::Buffer x = b.param(xt, "X");
        tir::Buffer w = b.param(wt, "W");
        tir::Buffer y = b.param(result_type(call), "Y");
        Map a = attrs_of(call);
        auto s = pair_attr(a, "strides"), d = pair_attr(a, "dilation");
        auto p = padding_of(a);
        int64_t groups = a.at("groups").as_int();
        int64_t c = *constant_dim(xt.shape[1]), h = *constant_dim(xt.shape[2]), wd = *constant_dim(xt.shape[3]);
        int64_t og = *constant_dim(wt.shape[1]), kh = *constant_dim(wt.shape[2]), kw = *constant_dim(wt.shape[3]);
        int64_t cg = c / groups;
        DataType t = x->dtype;
        // out[n, o, oy, ox] = sum over the group's channels and the taps
        // of x[n, c, iy, ix] w[c, o % og, ky, kx] where oy + top = iy
        // stride + ky dilation (and the same across).
        return b.finish(reduction(
            y, {PrimExpr(cg), PrimExpr(kh), PrimExpr(kw)}, make_const(t, 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              PrimExpr group = tir::FloorDiv(out[1], PrimExpr(og));
              PrimExpr ch = groups == 1 ? r[0] : PrimExpr(tir::Add(tir::Mul(group, PrimExpr(cg)), r[0]));
              auto source = [](const PrimExpr& o, int64_t pad, const PrimExpr& tap, int64_t dil, int64_t stride) {
                return PrimExpr(tir::Sub(tir::Add(o, PrimExpr(pad)), tir::Mul(tap, PrimExpr(dil))));
              };
              PrimExpr ty = source(out[2], p[0], r[1], d[0], s[0]), tx = source(out[3], p[1], r[2], d[1], s[1]);
              PrimExpr iy = tir::FloorDiv(ty, PrimExpr(s[0])), ix = tir::FloorDiv(tx, PrimExpr(s[1]));
              PrimExpr valid =
                  tir::And(tir::And(tir::EQ(tir::FloorMod(ty, PrimExpr(s[0])), PrimExpr(int64_t{0})),
                                    tir::EQ(tir::FloorMod(tx, PrimExpr(s[1])), PrimExpr(int64_t{0}))),
                           tir::And(tir::And(tir::GE(iy, PrimExpr(int64_t{0})), tir::LT(iy, PrimExpr(h))),
                                    tir::And(tir::GE(ix, PrimExpr(int64_t{0})), tir::LT(ix, PrimExpr(wd)))));
              auto clamp = [](const PrimExpr& i, int64_t extent) {
                return PrimExpr(tir::Max(tir::Min(i, PrimExpr(extent - 1)), PrimExpr(int64_t{0})));
              };
              PrimExpr xv = tir::BufferLoad(x, {out[0], ch, clamp(iy, h), clamp(ix, wd)});
              PrimExpr wv = tir::BufferLoad(w, {ch, tir::FloorMod(out[1], PrimExpr(og)), r[1], r[2]});
              return PrimExpr(tir::Select(valid, tir::Mul(xv, wv), make_const(t, 0)));
            }));
      });

  pool("max_pool2d", true);
  pool("avg_pool2d", false);

  define_operator(
      "global_avg_pool2d", 1, {kLayoutAttr}, ir::PatternKind::kReduction,
      "mean over H and W: N C H W -> N C 1 1 (in the given layout)",
      [](const graph::CallNode& call) -> ir::Type {
        Map a = attrs_of(call);
        Layout l = layout_attr(a, "layout");
        const auto& x = image(call, l, a.at("layout").as_string());
        return ir::TensorType(Array(l.at_pixel(std::vector<Any>(x.shape.begin(), x.shape.end()), dim_of(1), dim_of(1))),
                              x.dtype);
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
            [&](const Indices& o, const Indices& r) { return PrimExpr(tir::BufferLoad(x, l.at_pixel(o, r[0], r[1]))); },
            [count](const PrimExpr& acc) { return PrimExpr(tir::Div(acc, count)); }));
      });
  register_winograd_ops();
}

}  // namespace loom::ops
