// The operator library through LegalizeOps and the reference interpreter,
// against C++ references on random inputs of several shapes (broadcasting,
// odd sizes), and the type rules' errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/graph/well_formed.h"
#include "loom/text/text.h"
#include "loom/runtime/ndarray.h"
#include "test_util.h"

namespace loom {
using runtime::Module;
using runtime::NDArray;
using test::error_of;

namespace {
const char* kConfig = R"(
target:
  kind: ref
pipeline:
  passes:
    - InferType
    - LegalizeOps
)";

Module build(const std::string& text) {
  config::Config config = config::parse_config(kConfig, "ops_test.yaml");
  return driver::build(text::parse_module(text, "ops_test.loom"), config);
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string tensor_type(const std::vector<int64_t>& s, const std::string& dtype = "float32") {
  return "Tensor[" + shape_text(s) + ", " + dtype + "]";
}

NDArray random_tensor(const std::vector<int64_t>& shape, unsigned seed, float lo, float hi) {
  NDArray out = NDArray::empty(shape, DataType::Float(32));
  std::vector<float> v = test::random_floats(static_cast<size_t>(out->numel()), seed, lo, hi);
  std::memcpy(out.data_as<float>(), v.data(), v.size() * sizeof(float));
  return out;
}

// Row-major index of `out_index` in a broadcast input of `shape`.
int64_t broadcast_offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape, int64_t flat) {
  std::vector<int64_t> index(out_shape.size());
  for (size_t k = out_shape.size(); k-- > 0;) {
    index[k] = flat % out_shape[k];
    flat /= out_shape[k];
  }
  int64_t offset = 0;
  size_t skip = out_shape.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) offset = offset * shape[k] + (shape[k] == 1 ? 0 : index[skip + k]);
  return offset;
}

void expect_close(float got, double want, const std::string& where) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << where;
    return;
  }
  EXPECT_LE(std::fabs(got - want), 2e-6 * std::max(1.0, std::fabs(want)))
      << where << ": got " << got << ", want " << want;
}

using UnaryRef = std::function<double(double)>;
using BinaryRef = std::function<double(double, double)>;

void check_unary(const std::string& op, const UnaryRef& ref, float lo, float hi) {
  for (const auto& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {3, 5}, {2, 3, 4}}) {
    Module m = build("@main = fn(%x: " + tensor_type(shape) + ") { " + op + "(%x) }");
    NDArray x = random_tensor(shape, 3, lo, hi);
    NDArray y = m.get_function("main")(x).cast<NDArray>();
    ASSERT_EQ(y.shape_vector(), shape);
    for (int64_t i = 0; i < x->numel(); ++i) {
      expect_close(y.data_as<float>()[i], ref(x.data_as<float>()[i]),
                   op + shape_text(shape) + "[" + std::to_string(i) + "]");
    }
  }
}

void check_binary(const std::string& op, const BinaryRef& ref, bool to_bool = false, float lo = -3, float hi = 3) {
  using Shapes = std::pair<std::vector<int64_t>, std::vector<int64_t>>;
  for (const Shapes& s :
       std::vector<Shapes>{{{7}, {7}}, {{3, 4}, {4}}, {{3, 1}, {1, 5}}, {{2, 3, 5}, {3, 1}}, {{1}, {2, 3}}}) {
    std::vector<int64_t> out_shape(std::max(s.first.size(), s.second.size()));
    for (size_t k = 0; k < out_shape.size(); ++k) {
      size_t r = out_shape.size() - 1 - k;
      int64_t a = k < s.first.size() ? s.first[s.first.size() - 1 - k] : 1;
      int64_t b = k < s.second.size() ? s.second[s.second.size() - 1 - k] : 1;
      out_shape[r] = std::max(a, b);
    }
    Module m =
        build("@main = fn(%a: " + tensor_type(s.first) + ", %b: " + tensor_type(s.second) + ") { " + op + "(%a, %b) }");
    NDArray a = random_tensor(s.first, 5, lo, hi), b = random_tensor(s.second, 6, lo, hi);
    if (to_bool) {  // make some elements equal
      for (int64_t i = 0; i < b->numel(); i += 2) b.data_as<float>()[i] = a.data_as<float>()[i % a->numel()];
    }
    NDArray c = m.get_function("main")(a, b).cast<NDArray>();
    ASSERT_EQ(c.shape_vector(), out_shape);
    std::string where = op + shape_text(s.first) + shape_text(s.second);
    for (int64_t i = 0; i < c->numel(); ++i) {
      double x = a.data_as<float>()[broadcast_offset(s.first, out_shape, i)];
      double y = b.data_as<float>()[broadcast_offset(s.second, out_shape, i)];
      if (to_bool) {
        EXPECT_EQ(c.data_as<uint8_t>()[i], ref(x, y) != 0 ? 1 : 0) << where << "[" << i << "]";
      } else {
        expect_close(c.data_as<float>()[i], static_cast<float>(ref(x, y)), where + "[" + std::to_string(i) + "]");
      }
    }
  }
}

double f32(double v) { return static_cast<float>(v); }
}  // namespace

TEST(Ops, UnaryAgreeWithReferences) {
  check_unary(
      "relu", [](double x) { return std::max(x, 0.0); }, -3, 3);
  check_unary(
      "neg", [](double x) { return -x; }, -3, 3);
  check_unary(
      "abs", [](double x) { return std::fabs(x); }, -3, 3);
  check_unary(
      "exp", [](double x) { return f32(std::exp(x)); }, -3, 3);
  check_unary(
      "log", [](double x) { return f32(std::log(x)); }, 0.01f, 5);
  check_unary(
      "sqrt", [](double x) { return f32(std::sqrt(x)); }, 0, 5);
  check_unary(
      "rsqrt", [](double x) { return f32(1 / std::sqrt(x)); }, 0.01f, 5);
  check_unary(
      "tanh", [](double x) { return f32(std::tanh(x)); }, -3, 3);
  check_unary(
      "sigmoid", [](double x) { return f32(1 / (1 + std::exp(-x))); }, -6, 6);
  check_unary(
      "erf", [](double x) { return f32(std::erf(x)); }, -3, 3);
  check_unary(
      "gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3);
  check_unary(
      "silu", [](double x) { return x / (1 + std::exp(-x)); }, -6, 6);
}

TEST(Ops, BinaryBroadcastAgreeWithReferences) {
  check_binary("add", [](double a, double b) { return a + b; });
  check_binary("subtract", [](double a, double b) { return a - b; });
  check_binary("multiply", [](double a, double b) { return a * b; });
  check_binary("divide", [](double a, double b) { return a / b; });
  check_binary(
      "power", [](double a, double b) { return std::pow(a, b); }, false, 0.1f, 2);
  check_binary("maximum", [](double a, double b) { return std::max(a, b); });
  check_binary("minimum", [](double a, double b) { return std::min(a, b); });
  check_binary(
      "equal", [](double a, double b) { return a == b; }, true);
  check_binary(
      "not_equal", [](double a, double b) { return a != b; }, true);
  check_binary(
      "less", [](double a, double b) { return a < b; }, true);
  check_binary(
      "less_equal", [](double a, double b) { return a <= b; }, true);
  check_binary(
      "greater", [](double a, double b) { return a > b; }, true);
  check_binary(
      "greater_equal", [](double a, double b) { return a >= b; }, true);
}

TEST(Ops, WhereClipCastAndSymbolicShapes) {
  Module m = build(R"(
@main = fn(%x: Tensor[(%n: int64, 4), float32], %y: Tensor[(4), float32]) -> (Tensor[(%n, 4), float32], Tensor[(%n, 4), int32]) {
  let %c = greater(%x, %y);
  let %w = where(%c, %x, %y);
  (clip(%w, a_min=-1.0, a_max=1.5), cast(multiply(%x, %x), dtype=int32))
}
)");
  for (int64_t n : {1, 5}) {
    NDArray x = random_tensor({n, 4}, 8, -3, 3), y = random_tensor({4}, 9, -3, 3);
    Array out = m.get_function("main")(x, y).cast<Array>();
    NDArray clipped = out[0].cast<NDArray>(), casted = out[1].cast<NDArray>();
    for (int64_t i = 0; i < n * 4; ++i) {
      float xv = x.data_as<float>()[i], yv = y.data_as<float>()[i % 4];
      float w = xv > yv ? xv : yv;
      EXPECT_EQ(clipped.data_as<float>()[i], std::min(std::max(w, -1.0f), 1.5f));
      EXPECT_EQ(casted.data_as<int32_t>()[i], static_cast<int32_t>(xv * xv));
    }
  }
}

namespace {
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    index[k] = flat % shape[k];
    flat /= shape[k];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + index[k];
  return flat;
}

std::string axes_text(const std::vector<int64_t>& axes) {
  std::string out = "[";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + std::to_string(axes[i]);
  return out + "]";
}
}  // namespace

TEST(Ops, ReductionsOverAxesAgreeWithReferences) {
  const std::vector<int64_t> shape = {3, 4, 5};
  NDArray x = random_tensor(shape, 12, -3, 3);
  for (const std::string op : {"sum", "mean", "max", "min"}) {
    for (const auto& axes : std::vector<std::vector<int64_t>>{{}, {0}, {-1}, {0, 2}, {1}}) {
      for (bool keep : {false, true}) {
        std::vector<bool> reduced(3, axes.empty());
        for (int64_t a : axes) reduced[(a + 3) % 3] = true;
        std::vector<int64_t> out_shape, kept_shape;
        for (size_t k = 0; k < 3; ++k) {
          if (!reduced[k])
            out_shape.push_back(shape[k]);
          else if (keep)
            out_shape.push_back(1);
          kept_shape.push_back(reduced[k] ? 1 : shape[k]);
        }
        std::string call = op + "(%x, axis=" + axes_text(axes) + ", keepdims=" + (keep ? "true" : "false") + ")";
        Module m = build("@main = fn(%x: " + tensor_type(shape) + ") { " + call + " }");
        NDArray y = m.get_function("main")(x).cast<NDArray>();
        ASSERT_EQ(y.shape_vector(), out_shape) << call;
        int64_t count = 1;
        for (int64_t d : kept_shape) count *= d;
        count = x->numel() / count;
        std::vector<double> ref(static_cast<size_t>(y->numel()), op == "max"   ? -INFINITY
                                                                 : op == "min" ? INFINITY
                                                                               : 0.0);
        for (int64_t i = 0; i < x->numel(); ++i) {
          std::vector<int64_t> index = unravel(i, shape);
          for (size_t k = 0; k < 3; ++k)
            if (reduced[k]) index[k] = 0;
          double& r = ref[static_cast<size_t>(ravel(index, kept_shape))];
          double v = x.data_as<float>()[i];
          r = op == "max" ? std::max(r, v) : op == "min" ? std::min(r, v) : r + v;
        }
        for (size_t i = 0; i < ref.size(); ++i) {
          double want = op == "mean" ? ref[i] / static_cast<double>(count) : ref[i];
          float got = y.data_as<float>()[i];
          EXPECT_LE(std::fabs(got - want), 1e-5 * std::max(1.0, std::fabs(want))) << call << "[" << i << "]";
        }
      }
    }
  }
}

TEST(Ops, MatmulAndDenseAgreeWithReferences) {
  struct Case {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  for (const Case& c : std::vector<Case>{{{3, 5}, {5, 7}, false, false},
                                         {{2, 3, 5}, {5, 4}, false, false},
                                         {{2, 1, 3, 5}, {4, 5, 6}, false, false},
                                         {{5, 3}, {2, 7, 5}, true, true},
                                         {{1, 1}, {1, 9}, false, false}}) {
    size_t ra = c.a.size(), rb = c.b.size();
    int64_t m = c.ta ? c.a[ra - 1] : c.a[ra - 2], k = c.ta ? c.a[ra - 2] : c.a[ra - 1];
    int64_t n = c.tb ? c.b[rb - 2] : c.b[rb - 1];
    std::vector<int64_t> batch_a(c.a.begin(), c.a.end() - 2), batch_b(c.b.begin(), c.b.end() - 2);
    std::vector<int64_t> out(std::max(batch_a.size(), batch_b.size()));
    for (size_t q = 0; q < out.size(); ++q) {
      int64_t da = q < batch_a.size() ? batch_a[batch_a.size() - 1 - q] : 1;
      int64_t db = q < batch_b.size() ? batch_b[batch_b.size() - 1 - q] : 1;
      out[out.size() - 1 - q] = std::max(da, db);
    }
    std::vector<int64_t> out_shape = out;
    out_shape.push_back(m);
    out_shape.push_back(n);
    std::string call = std::string("matmul(%a, %b, transpose_a=") + (c.ta ? "true" : "false") +
                       ", transpose_b=" + (c.tb ? "true" : "false") + ")";
    Module mod = build("@main = fn(%a: " + tensor_type(c.a) + ", %b: " + tensor_type(c.b) + ") { " + call + " }");
    NDArray a = random_tensor(c.a, 21, -2, 2), b = random_tensor(c.b, 22, -2, 2);
    NDArray y = mod.get_function("main")(a, b).cast<NDArray>();
    ASSERT_EQ(y.shape_vector(), out_shape) << call;
    for (int64_t flat = 0; flat < y->numel(); ++flat) {
      std::vector<int64_t> idx = unravel(flat, out_shape);
      double want = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        auto element = [&](const NDArray& t, const std::vector<int64_t>& shape, int64_t row, int64_t col) {
          std::vector<int64_t> index;
          size_t batch = shape.size() - 2;
          for (size_t q = 0; q < batch; ++q) index.push_back(shape[q] == 1 ? 0 : idx[out.size() - batch + q]);
          index.push_back(row);
          index.push_back(col);
          return static_cast<double>(t.data_as<float>()[ravel(index, shape)]);
        };
        int64_t i = idx[out.size()], j = idx[out.size() + 1];
        want += (c.ta ? element(a, c.a, kk, i) : element(a, c.a, i, kk)) *
                (c.tb ? element(b, c.b, j, kk) : element(b, c.b, kk, j));
      }
      EXPECT_LE(std::fabs(y.data_as<float>()[flat] - want), 1e-5 * std::max(1.0, std::fabs(want)))
          << call << " " << flat;
    }
  }
  // dense: x (2, 3, 4) against w (5, 4).
  Module mod = build("@main = fn(%x: Tensor[(2, 3, 4), float32], %w: Tensor[(5, 4), float32]) { dense(%x, %w) }");
  NDArray x = random_tensor({2, 3, 4}, 31, -2, 2), w = random_tensor({5, 4}, 32, -2, 2);
  NDArray y = mod.get_function("main")(x, w).cast<NDArray>();
  ASSERT_EQ(y.shape_vector(), (std::vector<int64_t>{2, 3, 5}));
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t n = 0; n < 5; ++n) {
      double want = 0;
      for (int64_t k = 0; k < 4; ++k) want += double(x.data_as<float>()[r * 4 + k]) * w.data_as<float>()[n * 4 + k];
      EXPECT_LE(std::fabs(y.data_as<float>()[r * 5 + n] - want), 1e-5 * std::max(1.0, std::fabs(want)));
    }
  }
}

// Each shape operator against an index mapping: output flat index ->
// input flat index.
TEST(Ops, ShapeOperatorsMoveTheRightElements) {
  struct Case {
    std::string call;
    std::vector<int64_t> in, out;
    std::function<int64_t(const std::vector<int64_t>&)> source;  // output index -> input flat index
  };
  const std::vector<int64_t> s3 = {2, 3, 4};
  std::vector<Case> cases = {
      {"reshape(%x, shape=[4, -1])", s3, {4, 6}, [&](const std::vector<int64_t>& o) { return o[0] * 6 + o[1]; }},
      {"flatten(%x)", s3, {2, 12}, [&](const std::vector<int64_t>& o) { return o[0] * 12 + o[1]; }},
      {"transpose(%x)",
       s3,
       {4, 3, 2},
       [&](const std::vector<int64_t>& o) {
         return ravel({o[2], o[1], o[0]}, s3);
       }},
      {"transpose(%x, axes=[1, -1, 0])",
       s3,
       {3, 4, 2},
       [&](const std::vector<int64_t>& o) {
         return ravel({o[2], o[0], o[1]}, s3);
       }},
      {"expand_dims(%x, axis=1)",
       s3,
       {2, 1, 3, 4},
       [&](const std::vector<int64_t>& o) {
         return ravel({o[0], o[2], o[3]}, s3);
       }},
      {"squeeze(%x)", {3, 1, 4, 1}, {3, 4}, [&](const std::vector<int64_t>& o) { return o[0] * 4 + o[1]; }},
      {"squeeze(%x, axis=[-1])",
       {3, 1, 4, 1},
       {3, 1, 4},
       [&](const std::vector<int64_t>& o) { return o[0] * 4 + o[2]; }},
      {"broadcast_to(%x, shape=[2, 3, 4])", {3, 1}, {2, 3, 4}, [&](const std::vector<int64_t>& o) { return o[1]; }},
  };
  for (const Case& c : cases) {
    Module m = build("@main = fn(%x: " + tensor_type(c.in) + ") { " + c.call + " }");
    NDArray x = random_tensor(c.in, 41, -5, 5);
    NDArray y = m.get_function("main")(x).cast<NDArray>();
    ASSERT_EQ(y.shape_vector(), c.out) << c.call;
    for (int64_t i = 0; i < y->numel(); ++i) {
      ASSERT_EQ(y.data_as<float>()[i], x.data_as<float>()[c.source(unravel(i, c.out))]) << c.call << "[" << i << "]";
    }
  }
}

TEST(Ops, ConcatSplitSlicePad) {
  NDArray a = random_tensor({2, 3, 4}, 91, -5, 5), b = random_tensor({2, 1, 4}, 92, -5, 5),
          c = random_tensor({2, 2, 4}, 93, -5, 5);
  Module m = build(R"(
@main = fn(%a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 1, 4), float32], %c: Tensor[(2, 2, 4), float32]) {
  let %j = concat(%a, %b, %c, axis=1);
  let %s = split(%j, indices_or_sections=[2, 5], axis=-2);
  let %e = split(%a, indices_or_sections=2, axis=2);
  (%j, %s.0, %s.1, %s.2, %e.1, slice(%a, begin=[-1, 0], end=[2, 100], axes=[0, 2], strides=[1, 3]), pad(%b, pad_width=[0, 0, 1, 2, 0, 1], pad_value=-1.5))
}
)");
  Array out = m.get_function("main")(a, b, c).cast<Array>();
  auto at = [](const NDArray& t, std::vector<int64_t> i) { return t.data_as<float>()[ravel(i, t.shape_vector())]; };
  NDArray j = out[0].cast<NDArray>();
  ASSERT_EQ(j.shape_vector(), (std::vector<int64_t>{2, 6, 4}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t k = 0; k < 4; ++k) {
        float want = r < 3 ? at(a, {n, r, k}) : r < 4 ? at(b, {n, 0, k}) : at(c, {n, r - 4, k});
        ASSERT_EQ(at(j, {n, r, k}), want) << "concat " << n << r << k;
      }
  std::vector<int64_t> starts = {0, 2, 5}, sizes = {2, 3, 1};
  for (size_t p = 0; p < 3; ++p) {
    NDArray part = out[1 + p].cast<NDArray>();
    ASSERT_EQ(part.shape_vector(), (std::vector<int64_t>{2, sizes[p], 4}));
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t r = 0; r < sizes[p]; ++r)
        for (int64_t k = 0; k < 4; ++k) ASSERT_EQ(at(part, {n, r, k}), at(j, {n, starts[p] + r, k}));
  }
  NDArray half = out[4].cast<NDArray>();
  ASSERT_EQ(half.shape_vector(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(at(half, {1, 2, 1}), at(a, {1, 2, 3}));
  NDArray sl = out[5].cast<NDArray>();  // a[-1:2, :, 0:100:3] -> (1, 3, 2)
  ASSERT_EQ(sl.shape_vector(), (std::vector<int64_t>{1, 3, 2}));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t k = 0; k < 2; ++k) ASSERT_EQ(at(sl, {0, r, k}), at(a, {1, r, 3 * k}));
  NDArray pd = out[6].cast<NDArray>();  // b padded (0, 0), (1, 2), (0, 1) -> (2, 4, 5)
  ASSERT_EQ(pd.shape_vector(), (std::vector<int64_t>{2, 4, 5}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t k = 0; k < 5; ++k) ASSERT_EQ(at(pd, {n, r, k}), r == 1 && k < 4 ? at(b, {n, 0, k}) : -1.5f);
}

TEST(Ops, NormalisationsAgreeWithReferences) {
  const std::vector<int64_t> shape = {3, 5, 7};
  NDArray x = random_tensor(shape, 51, -4, 4);
  for (int64_t axis : {-1, 1, 0}) {
    for (const std::string op : {"softmax", "log_softmax"}) {
      std::string call = op + "(%x, axis=" + std::to_string(axis) + ")";
      Module m = build("@main = fn(%x: " + tensor_type(shape) + ") { " + call + " }");
      NDArray y = m.get_function("main")(x).cast<NDArray>();
      size_t a = static_cast<size_t>((axis + 3) % 3);
      for (int64_t i = 0; i < x->numel(); ++i) {
        std::vector<int64_t> idx = unravel(i, shape);
        double mx = -INFINITY, sum = 0;
        for (int64_t k = 0; k < shape[a]; ++k) {
          idx[a] = k;
          mx = std::max(mx, double(x.data_as<float>()[ravel(idx, shape)]));
        }
        for (int64_t k = 0; k < shape[a]; ++k) {
          idx[a] = k;
          sum += std::exp(double(x.data_as<float>()[ravel(idx, shape)]) - mx);
        }
        double v = x.data_as<float>()[i];
        double want = op == "softmax" ? std::exp(v - mx) / sum : v - mx - std::log(sum);
        EXPECT_LE(std::fabs(y.data_as<float>()[i] - want), 1e-5 * std::max(1.0, std::fabs(want))) << call << " " << i;
      }
    }
  }
  // layer_norm over the last axis, batch_norm over axis 1.
  NDArray g = random_tensor({7}, 52, 0.5f, 2), b = random_tensor({7}, 53, -1, 1);
  Module ln = build("@main = fn(%x: " + tensor_type(shape) +
                    ", %g: Tensor[(7), float32], %b: Tensor[(7), float32]) { layer_norm(%x, %g, %b, epsilon=0.001) }");
  NDArray y = ln.get_function("main")(x, g, b).cast<NDArray>();
  for (int64_t row = 0; row < 15; ++row) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < 7; ++k) mean += x.data_as<float>()[row * 7 + k];
    mean /= 7;
    for (int64_t k = 0; k < 7; ++k) var += std::pow(x.data_as<float>()[row * 7 + k] - mean, 2);
    var /= 7;
    for (int64_t k = 0; k < 7; ++k) {
      double want = (x.data_as<float>()[row * 7 + k] - mean) / std::sqrt(var + 0.001) * g.data_as<float>()[k] +
                    b.data_as<float>()[k];
      EXPECT_LE(std::fabs(y.data_as<float>()[row * 7 + k] - want), 1e-5 * std::max(1.0, std::fabs(want)))
          << "layer_norm";
    }
  }
  std::vector<NDArray> p;
  for (unsigned seed : {61u, 62u, 63u}) p.push_back(random_tensor({5}, seed, -1, 1));
  p.push_back(random_tensor({5}, 64, 0.1f, 2));  // variance
  Module bn = build("@main = fn(%x: " + tensor_type(shape) +
                    ", %g: Tensor[(5), float32], %b: Tensor[(5), float32], %m: Tensor[(5), float32], %v: Tensor[(5), "
                    "float32]) { batch_norm(%x, %g, %b, %m, %v) }");
  y = bn.get_function("main")(x, p[0], p[1], p[2], p[3]).cast<NDArray>();
  for (int64_t i = 0; i < x->numel(); ++i) {
    int64_t c = unravel(i, shape)[1];
    double want = (x.data_as<float>()[i] - p[2].data_as<float>()[c]) / std::sqrt(p[3].data_as<float>()[c] + 1e-5) *
                      p[0].data_as<float>()[c] +
                  p[1].data_as<float>()[c];
    EXPECT_LE(std::fabs(y.data_as<float>()[i] - want), 1e-5 * std::max(1.0, std::fabs(want))) << "batch_norm " << i;
  }
}

TEST(Ops, Conv2dAndPoolingAgreeWithReferences) {
  struct Conv {
    std::vector<int64_t> x, w;
    int64_t sh, sw, pt, pl, pb, pr, dh, dw, groups;
  };
  for (const Conv& c : std::vector<Conv>{{{1, 3, 7, 7}, {4, 3, 3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                         {{2, 2, 9, 8}, {3, 2, 3, 2}, 2, 1, 0, 1, 2, 0, 2, 1, 1},
                                         {{1, 4, 6, 5}, {6, 2, 3, 3}, 1, 2, 1, 0, 1, 2, 1, 1, 2},
                                         {{1, 5, 5, 5}, {5, 1, 3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 5}}) {
    int64_t n = c.x[0], cin = c.x[1], h = c.x[2], wd = c.x[3], o = c.w[0], kh = c.w[2], kw = c.w[3];
    int64_t oh = (h + c.pt + c.pb - c.dh * (kh - 1) - 1) / c.sh + 1,
            ow = (wd + c.pl + c.pr - c.dw * (kw - 1) - 1) / c.sw + 1;
    auto list = [](std::vector<int64_t> v) { return axes_text(v); };
    std::string call = "conv2d(%x, %w, strides=" + list({c.sh, c.sw}) + ", padding=" + list({c.pt, c.pl, c.pb, c.pr}) +
                       ", dilation=" + list({c.dh, c.dw}) + ", groups=" + std::to_string(c.groups) + ")";
    Module m = build("@main = fn(%x: " + tensor_type(c.x) + ", %w: " + tensor_type(c.w) + ") { " + call + " }");
    NDArray x = random_tensor(c.x, 71, -2, 2), w = random_tensor(c.w, 72, -2, 2);
    NDArray y = m.get_function("main")(x, w).cast<NDArray>();
    std::vector<int64_t> out_shape = {n, o, oh, ow};
    ASSERT_EQ(y.shape_vector(), out_shape) << call;
    int64_t cg = cin / c.groups, og = o / c.groups;
    for (int64_t flat = 0; flat < y->numel(); ++flat) {
      auto i = unravel(flat, out_shape);
      double want = 0;
      for (int64_t ic = 0; ic < cg; ++ic) {
        for (int64_t a = 0; a < kh; ++a) {
          for (int64_t bb = 0; bb < kw; ++bb) {
            int64_t iy = i[2] * c.sh + a * c.dh - c.pt, ix = i[3] * c.sw + bb * c.dw - c.pl;
            if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
            int64_t ch = (i[1] / og) * cg + ic;
            want += double(x.data_as<float>()[ravel({i[0], ch, iy, ix}, c.x)]) *
                    w.data_as<float>()[ravel({i[1], ic, a, bb}, c.w)];
          }
        }
      }
      EXPECT_LE(std::fabs(y.data_as<float>()[flat] - want), 1e-5 * std::max(1.0, std::fabs(want)))
          << call << " " << flat;
    }
  }
  // Pools on a 2 x 3 x 7 x 6 input with a 3x2 window, stride 2, padding (1, 1).
  const std::vector<int64_t> shape = {2, 3, 7, 6};
  NDArray x = random_tensor(shape, 81, -3, 3);
  for (const std::string call :
       {"max_pool2d(%x, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])",
        "avg_pool2d(%x, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])",
        "avg_pool2d(%x, pool_size=[3, 2], strides=[2, 2], padding=[1, 1], count_include_pad=true)",
        "global_avg_pool2d(%x)"}) {
    bool global = call.rfind("global", 0) == 0, is_max = call.rfind("max", 0) == 0;
    bool include = call.find("count_include_pad=true") != std::string::npos;
    int64_t kh = global ? 7 : 3, kw = global ? 6 : 2, s = global ? 1 : 2, p = global ? 0 : 1;
    std::vector<int64_t> out_shape = {2, 3, global ? 1 : (7 + 2 - 3) / 2 + 1, global ? 1 : (6 + 2 - 2) / 2 + 1};
    Module m = build("@main = fn(%x: " + tensor_type(shape) + ") { " + call + " }");
    NDArray y = m.get_function("main")(x).cast<NDArray>();
    ASSERT_EQ(y.shape_vector(), out_shape) << call;
    for (int64_t flat = 0; flat < y->numel(); ++flat) {
      auto i = unravel(flat, out_shape);
      double acc = is_max ? -INFINITY : 0;
      int64_t count = 0;
      for (int64_t a = 0; a < kh; ++a) {
        for (int64_t bb = 0; bb < kw; ++bb) {
          int64_t iy = i[2] * s + a - p, ix = i[3] * s + bb - p;
          if (iy < 0 || iy >= 7 || ix < 0 || ix >= 6) continue;
          double v = x.data_as<float>()[ravel({i[0], i[1], iy, ix}, shape)];
          acc = is_max ? std::max(acc, v) : acc + v;
          ++count;
        }
      }
      double want = is_max ? acc : acc / double(include ? kh * kw : count);
      EXPECT_LE(std::fabs(y.data_as<float>()[flat] - want), 1e-5 * std::max(1.0, std::fabs(want)))
          << call << " " << flat;
    }
  }
}

// NHWC data and OHWI weights compute exactly what NCHW/OIHW compute (same
// reduction order), so the results must agree bit for bit.
TEST(Ops, ChannelsLastLayoutsAgreeWithChannelsFirst) {
  const std::string to_nhwc = "axes=[0, 2, 3, 1]", to_nchw = "axes=[0, 3, 1, 2]";
  struct Case {
    std::string nchw, nhwc;
    std::vector<int64_t> w;  // empty: no weights
  };
  for (const Case& c : std::vector<Case>{
           {"conv2d(%x, %w, strides=[2, 1], padding=[1, 0, 1, 2], dilation=[1, 2], groups=2)",
            "conv2d(transpose(%x, " + to_nhwc + "), transpose(%w, " + to_nhwc +
                "), strides=[2, 1], padding=[1, 0, 1, 2], dilation=[1, 2], groups=2, data_layout=\"NHWC\", "
                "kernel_layout=\"OHWI\")",
            {6, 2, 3, 2}},
           {"conv2d(%x, %w, padding=[1], groups=4)",
            "conv2d(transpose(%x, " + to_nhwc + "), %w, padding=[1], groups=4, data_layout=\"NHWC\")",
            {4, 1, 3, 3}},
           {"max_pool2d(%x, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])",
            "max_pool2d(transpose(%x, " + to_nhwc +
                "), pool_size=[3, 2], strides=[2, 2], padding=[1, 1], layout=\"NHWC\")",
            {}},
           {"avg_pool2d(%x, pool_size=[3, 3], padding=[1])",
            "avg_pool2d(transpose(%x, " + to_nhwc + "), pool_size=[3, 3], padding=[1], layout=\"NHWC\")",
            {}},
           {"global_avg_pool2d(%x)", "global_avg_pool2d(transpose(%x, " + to_nhwc + "), layout=\"NHWC\")", {}}}) {
    std::string params = "%x: " + tensor_type({2, 4, 7, 6});
    if (!c.w.empty()) params += ", %w: " + tensor_type(c.w);
    Module m = build("@main = fn(" + params + ") { (" + c.nchw + ", transpose(" + c.nhwc + ", " + to_nchw + ")) }");
    NDArray x = random_tensor({2, 4, 7, 6}, 91, -2, 2);
    Any result = c.w.empty() ? m.get_function("main")(x) : m.get_function("main")(x, random_tensor(c.w, 92, -2, 2));
    Array both = result.cast<Array>();
    NDArray first = both[0].cast<NDArray>(), second = both[1].cast<NDArray>();
    ASSERT_EQ(first.shape_vector(), second.shape_vector()) << c.nhwc;
    EXPECT_EQ(std::memcmp(first.data_as<float>(), second.data_as<float>(), first->nbytes()), 0) << c.nhwc;
  }
  std::string e = error_of([] {
    build("@main = fn(%x: Tensor[(1, 4, 5, 5), float32]) { max_pool2d(%x, pool_size=[2], layout=\"NWHC\") }");
  });
  EXPECT_NE(e.find("max_pool2d: layout must be NCHW, NHWC or NCHW{b}c (NCHW16c), got 'NWHC'"), std::string::npos) << e;
}

TEST(Ops, LegalizeOpsSharesIdenticalLoweringsAndNamesThemUniquely) {
  config::Config config = config::parse_config(kConfig, "ops_test.yaml");
  ir::IRModule lowered = config.pipeline()(config.constrain(text::parse_module(R"(
@relu = fn(%x: Tensor[(4), float32]) -> Tensor[(4), float32] { relu(relu(%x)) }
@main = fn(%x: Tensor[(4), float32], %y: Tensor[(8), float32]) { (relu(%x), relu(%y)) }
)")),
                                           config.context);
  EXPECT_EQ(lowered.names(), (std::vector<std::string>{"main", "relu", "relu_1", "relu_2"}));
  std::string text = text::print_module(lowered);
  EXPECT_NE(text.find("call_dps<Tensor[(4), float32]>(@relu_1, (call_dps<Tensor[(4), float32]>(@relu_1, (%x,)),))"),
            std::string::npos)
      << text;
}

TEST(Ops, TypeRulesGiveClearErrors) {
  auto check = [](const std::string& body, const std::string& params) {
    return error_of([&] { graph::check_module(text::parse_module("@main = fn(" + params + ") { " + body + " }")); });
  };
  std::string e = check("add(%a, %b)", "%a: Tensor[(2, 3), float32], %b: Tensor[(4, 3), float32]");
  EXPECT_NE(e.find("add: shapes (2, 3) and (4, 3) do not broadcast: dimension 0 of the result would be 2 and 4"),
            std::string::npos)
      << e;
  e = check("add(%a, %b)", "%a: Tensor[(3), float32], %b: Tensor[(3), int32]");
  EXPECT_NE(e.find("add: operands have dtypes float32 and int32; cast one of them"), std::string::npos) << e;
  e = check("exp(%a)", "%a: Tensor[(3), int32]");
  EXPECT_NE(e.find("exp: needs a float tensor, got int32"), std::string::npos) << e;
  e = check("where(%a, %a, %a)", "%a: Tensor[(3), float32]");
  EXPECT_NE(e.find("where: the condition must be bool, got float32"), std::string::npos) << e;
  e = check("clip(%a, a_min=2.0, a_max=1.0)", "%a: Tensor[(3), float32]");
  EXPECT_NE(e.find("clip: a_min 2 is greater than a_max 1"), std::string::npos) << e;
  e = check("clip(%a, a_min=2.0)", "%a: Tensor[(3), float32]");
  EXPECT_NE(e.find("a_max"), std::string::npos) << e;
  e = check("sum(%a, axis=[3])", "%a: Tensor[(3, 4), float32]");
  EXPECT_NE(e.find("sum: axis 3 is out of range for rank 2"), std::string::npos) << e;
  e = check("sum(%a, axis=[1, -1])", "%a: Tensor[(3, 4), float32]");
  EXPECT_NE(e.find("sum: axis -1 is given twice"), std::string::npos) << e;
  e = check("matmul(%a, %b)", "%a: Tensor[(3, 4), float32], %b: Tensor[(5, 6), float32]");
  EXPECT_NE(e.find("matmul: the inner dimensions differ: (3, 4) @ (5, 6) has 4 against 5"), std::string::npos) << e;
  e = check("matmul(%a, %b)", "%a: Tensor[(4,), float32], %b: Tensor[(4, 6), float32]");
  EXPECT_NE(e.find("matmul: needs operands of rank 2 or more, got (4,) and (4, 6)"), std::string::npos) << e;
  e = check("dense(%a, %b)", "%a: Tensor[(3, 4), float32], %b: Tensor[(5, 6), float32]");
  EXPECT_NE(e.find("dense: x (3, 4) and w (5, 6) differ in their last dimension"), std::string::npos) << e;
  e = check("reshape(%a, shape=[5, -1])", "%a: Tensor[(3, 4), float32]");
  EXPECT_NE(e.find("reshape: cannot infer the -1 of the new shape: (3, 4) has 12 elements, not a multiple of 5"),
            std::string::npos)
      << e;
  e = check("reshape(%a, shape=[4])", "%a: Tensor[(%n: int64, 4), float32]");
  EXPECT_NE(e.find("reshape: cannot reshape (%n, 4) (%n * 4 elements) to (4,) (4 elements): the element counts must "
                   "be the same product of the same dimensions; write -1 for the one entry they determine"),
            std::string::npos)
      << e;
  e = check("reshape(%a, shape=[%m, 4])", "%a: Tensor[(%n: int64, 4), float32], %b: Tensor[(%m: int64), float32]");
  EXPECT_NE(e.find("reshape: cannot reshape (%n, 4) (%n * 4 elements) to (%m, 4) (%m * 4 elements)"), std::string::npos)
      << e;
  e = check("reshape(%a, shape=[%n, 2, -1])", "%a: Tensor[(%n: int64, 4), float32]");
  EXPECT_EQ(e, "no error") << e;
  e = check("transpose(%a, axes=[0, 0])", "%a: Tensor[(3, 4), float32]");
  EXPECT_NE(e.find("transpose: axes is not a permutation: axis 0 repeats"), std::string::npos) << e;
  e = check("squeeze(%a, axis=[0])", "%a: Tensor[(3, 4), float32]");
  EXPECT_NE(e.find("squeeze: axis 0 has extent 3, not 1"), std::string::npos) << e;
  e = check("broadcast_to(%a, shape=[2, 1])", "%a: Tensor[(4,), float32]");
  EXPECT_NE(e.find("broadcast_to: cannot broadcast (4,) to (2, 1)"), std::string::npos) << e;
  e = check("layer_norm(%a, %g, %g)", "%a: Tensor[(3, 4), float32], %g: Tensor[(3), float32]");
  EXPECT_NE(e.find("layer_norm: gamma and beta must be float32 vectors of the last extent of (3, 4), got (3,)"),
            std::string::npos)
      << e;
  e = check("softmax(%a, axis=2)", "%a: Tensor[(3, 4), float32]");
  EXPECT_NE(e.find("softmax: axis 2 is out of range for rank 2"), std::string::npos) << e;
  e = check("conv2d(%x, %w, groups=2)", "%x: Tensor[(1, 4, 5, 5), float32], %w: Tensor[(6, 4, 3, 3), float32]");
  EXPECT_NE(e.find("conv2d: weights (6, 4, 3, 3) need 2 input channels per group (C 4 / groups 2), got 4"),
            std::string::npos)
      << e;
  e = check("conv2d(%x, %w)", "%x: Tensor[(1, 4, 2, 2), float32], %w: Tensor[(6, 4, 3, 3), float32]");
  EXPECT_NE(e.find("conv2d: the window (3 wide) does not fit the padded input (2)"), std::string::npos) << e;
  e = check("max_pool2d(%x, pool_size=[2, 2, 2])", "%x: Tensor[(1, 4, 5, 5), float32]");
  EXPECT_NE(e.find("max_pool2d: pool_size must have 1 or 2 entries, got 3"), std::string::npos) << e;
  e = check("concat(%a, %b, axis=1)", "%a: Tensor[(3, 4), float32], %b: Tensor[(2, 4), float32]");
  EXPECT_NE(e.find("concat: argument 1 (2, 4) differs from (3, 4) in axis 0"), std::string::npos) << e;
  e = check("split(%a, indices_or_sections=3)", "%a: Tensor[(4, 4), float32]");
  EXPECT_NE(e.find("split: 3 sections do not divide the axis of extent 4"), std::string::npos) << e;
  e = check("pad(%a, pad_width=[1, 1])", "%a: Tensor[(4, 4), float32]");
  EXPECT_NE(e.find("pad: pad_width needs 2 entries per axis (before, after), 4 in all, got 2"), std::string::npos) << e;
  e = check("slice(%a, begin=[0], end=[2], strides=[0])", "%a: Tensor[(4, 4), float32]");
  EXPECT_NE(e.find("slice: strides must not be 0"), std::string::npos) << e;
  e = check("relu(%a)", "%a: (Tensor[(3), float32],)");
  EXPECT_NE(e.find("relu: argument 0 must be a tensor, got (Tensor[(3), float32],)"), std::string::npos) << e;
}

}  // namespace loom
