// Linear algebra: matmul (batched, with transposes) and dense
// (docs/operators.md).
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>

#include "loom/ir/text.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using tir::PrimExpr;

}  // namespace

const SchemaField kOutDtypeAttr{"out_dtype", "str", Any(std::string()),
                                "the result's dtype, in which the products are summed: empty, the operands' one "
                                "dtype; an integer dtype (int32) takes any two integer operands, a float dtype "
                                "(float32) float operands no wider (bfloat16), each widened to it"};

DataType product_dtype(const graph::CallNode& call, DataType a, DataType b) {
  const std::string& text = attrs_of(call).at("out_dtype").as_string();
  if (text.empty()) {
    if (a != b) {
      LOOM_THROW(TypeError) << "operands have dtypes " << a.to_string() << " and " << b.to_string()
                            << " (integer operands of two dtypes need an integer out_dtype, such as int32)";
    }
    if (a == DataType::Bool()) LOOM_THROW(TypeError) << "needs numeric tensors, got bool";
    return a;
  }
  DataType out = DataType::parse(text);
  if (tir::is_int(out) && out.lanes == 1) {
    for (DataType t : {a, b})
      if (!tir::is_int(t)) {
        LOOM_THROW(TypeError) << "out_dtype " << text << " needs integer operands, got " << a.to_string() << " and "
                              << b.to_string();
      }
    return out;
  }
  for (DataType t : {a, b})
    if (!tir::is_float(out) || !tir::is_float(t) || t.bits > out.bits || t.lanes != 1) {
      LOOM_THROW(TypeError) << "out_dtype " << text << " needs float operands no wider than it (bfloat16 or float16 "
                            << "products summed in float32), got " << a.to_string() << " and " << b.to_string();
    }
  return out;
}

namespace {

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

// The result type of a dense layer: x (..., K) with n weight rows, in
// `dtype` (x's unless given).
ir::Type dense_result(const ir::TensorTypeNode& x, const Any& n, std::optional<DataType> dtype = std::nullopt) {
  std::vector<Any> shape(x.shape.begin(), x.shape.end() - 1);
  shape.push_back(n);
  return ir::TensorType(Array(shape), dtype.value_or(x.dtype));
}

// A dense layer's prim function, Y[..., j] = sum over k of X[..., k] *
// weight(W, j, k), the weight element read from the call's second operand
// W; X, W, then Y are its parameters.
tir::PrimFunc lower_dense(
    const graph::CallNode& call,
    const std::function<PrimExpr(const tir::Buffer& w, const PrimExpr& j, const PrimExpr& k)>& weight) {
  PrimBuilder b;
  tir::Buffer X = b.param(tensor_arg(call, 0), "X");
  tir::Buffer W = b.param(tensor_arg(call, 1), "W");
  tir::Buffer Y = b.param(result_type(call), "Y");
  return b.finish(reduction(
      Y, {buffer_shape(X).back()}, make_const(Y->dtype, 0),
      [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
      [&](const Indices& out, const Indices& r) {
        Indices xi(out.begin(), out.end() - 1);
        xi.push_back(r[0]);
        return PrimExpr(
            tir::Mul(widen(tir::BufferLoad(X, xi), Y->dtype), widen(weight(W, out.back(), r[0]), Y->dtype)));
      }));
}

// ---- einsum ----
// An equation's operands and result as labels: one char per axis, the
// axes "..." stands for given labels of their own (from '0' on, aligned on
// the right across operands as NumPy broadcasts them).
struct Einsum {
  std::vector<std::string> inputs;
  std::string output;
  std::map<char, Any> extent;  // label -> its extent (the broadcast one)
};

Einsum parse_einsum(const std::string& equation_in, const std::vector<const ir::TensorTypeNode*>& operands) {
  std::string equation;
  for (char c : equation_in)
    if (c != ' ') equation += c;
  auto bad = [&](const std::string& why) { LOOM_THROW(TypeError) << "equation '" << equation_in << "': " << why; };
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size()) {
    bad("names " + std::to_string(terms.size()) + " operands, the call has " + std::to_string(operands.size()));
  }
  Einsum e;
  size_t ellipsis_rank = 0;
  std::vector<size_t> extra(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& term = terms[i];
    size_t dots = term.find("...");
    size_t letters = 0;
    for (char c : term)
      if (std::isalpha(static_cast<unsigned char>(c)))
        ++letters;
      else if (c != '.')
        bad(std::string("'") + c + "' is not a letter");
    size_t rank = operands[i]->shape.size();
    if (dots == std::string::npos ? letters != rank : letters > rank) {
      bad("operand " + std::to_string(i) + " has rank " + std::to_string(rank) + ", its term '" + term + "' " +
          std::to_string(letters) + " labels");
    }
    if (dots != std::string::npos) extra[i] = rank - letters;
    ellipsis_rank = std::max(ellipsis_rank, extra[i]);
  }
  auto expand = [&](const std::string& term, size_t count) {
    size_t dots = term.find("...");
    if (dots == std::string::npos) return term;
    std::string labels;
    for (size_t k = ellipsis_rank - count; k < ellipsis_rank; ++k) labels += static_cast<char>('0' + k);
    return term.substr(0, dots) + labels + term.substr(dots + 3);
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    e.inputs.push_back(expand(terms[i], extra[i]));
    const std::string& labels = e.inputs.back();
    for (size_t k = 0; k < labels.size(); ++k) {
      const Any& d = operands[i]->shape[k];
      auto found = e.extent.find(labels[k]);
      if (found == e.extent.end() || constant_dim(found->second) == std::optional<int64_t>(1)) {
        e.extent[labels[k]] = d;
      } else if (!same_dim(found->second, d) && constant_dim(d) != std::optional<int64_t>(1)) {
        bad(std::string("the label '") + labels[k] + "' has extents " + ir::to_text(found->second) + " and " +
            ir::to_text(d));
      }
    }
  }
  if (arrow != std::string::npos) {
    std::string rhs = equation.substr(arrow + 2);
    e.output = expand(rhs, ellipsis_rank);
    for (char c : e.output) {
      if (!e.extent.count(c)) bad(std::string("the result's label '") + c + "' is in no operand");
      if (std::count(e.output.begin(), e.output.end(), c) > 1) bad(std::string("the result repeats '") + c + "'");
    }
  } else {  // implicit: the ellipsis, then the labels used once, in order
    for (size_t k = 0; k < ellipsis_rank; ++k) e.output += static_cast<char>('0' + k);
    std::map<char, int> uses;
    for (const auto& term : e.inputs)
      for (char c : term) ++uses[c];
    for (const auto& [c, n] : uses)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c))) e.output += c;
  }
  return e;
}

std::vector<const ir::TensorTypeNode*> einsum_operands(const graph::CallNode& call) {
  if (call.args.size() == 0) LOOM_THROW(TypeError) << "needs at least one operand";
  std::vector<const ir::TensorTypeNode*> out;
  for (size_t i = 0; i < call.args.size(); ++i) {
    out.push_back(&tensor_arg(call, i));
    if (out.back()->dtype != out[0]->dtype || out[0]->dtype == DataType::Bool()) {
      LOOM_THROW(TypeError) << "operands must share one numeric dtype, got " << out[0]->dtype.to_string() << " and "
                            << out.back()->dtype.to_string();
    }
  }
  return out;
}
}  // namespace

void register_linalg_ops() {
  define_operator(
      "einsum", -1, {{"equation", "str", Any(), "NumPy's einsum equation: 'ij,jk->ik', '...ii->...i', 'i,i'"}},
      ir::PatternKind::kReduction,
      "Einstein summation over any number of tensors (NumPy einsum, ONNX Einsum): repeated labels multiply, labels "
      "absent from the result are summed, '...' broadcasts",
      [](const graph::CallNode& call) -> ir::Type {
        auto operands = einsum_operands(call);
        Einsum e = parse_einsum(attrs_of(call).at("equation").as_string(), operands);
        std::vector<Any> shape;
        for (char c : e.output) shape.push_back(e.extent.at(c));
        return ir::TensorType(Array(shape), operands[0]->dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        auto operands = einsum_operands(call);
        Einsum e = parse_einsum(attrs_of(call).at("equation").as_string(), operands);
        std::vector<tir::Buffer> xs;
        for (size_t i = 0; i < operands.size(); ++i) xs.push_back(b.param(*operands[i], "X" + std::to_string(i)));
        tir::Buffer y = b.param(result_type(call), "Y");
        std::string summed;
        for (const auto& [c, extent] : e.extent)
          if (e.output.find(c) == std::string::npos) summed += c;
        Indices extents;
        for (char c : summed) extents.push_back(b.dim(e.extent.at(c)));
        DataType t = y->dtype;
        auto product = [&](const Indices& out, const Indices& r) {
          std::map<char, PrimExpr> at;
          for (size_t k = 0; k < e.output.size(); ++k) at[e.output[k]] = out[k];
          for (size_t k = 0; k < summed.size(); ++k) at[summed[k]] = r[k];
          PrimExpr value;
          for (size_t i = 0; i < xs.size(); ++i) {
            Indices index;
            for (size_t k = 0; k < e.inputs[i].size(); ++k) {
              bool one = constant_dim(operands[i]->shape[k]) == std::optional<int64_t>(1);
              index.push_back(one ? PrimExpr(int64_t{0}) : at.at(e.inputs[i][k]));
            }
            PrimExpr v = tir::BufferLoad(xs[i], index);
            value = value.defined() ? PrimExpr(tir::Mul(value, v)) : v;
          }
          return value;
        };
        if (summed.empty()) return b.finish(compute(y, [&](const Indices& out) { return product(out, {}); }));
        return b.finish(reduction(
            y, extents, make_const(t, 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); }, product));
      });

  define_operator(
      "matmul", 2,
      {{"transpose_a", "bool", Any(false), "use a's last two axes swapped"},
       {"transpose_b", "bool", Any(false), "use b's last two axes swapped"},
       kOutDtypeAttr},
      ir::PatternKind::kOutputFusable, "a @ b over the last two axes, batch axes broadcast (NumPy matmul, ranks >= 2)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &a = tensor_arg(call, 0), &b = tensor_arg(call, 1);
        DataType out_dtype = product_dtype(call, a.dtype, b.dtype);
        if (a.shape.size() < 2 || b.shape.size() < 2) {
          LOOM_THROW(TypeError) << "needs operands of rank 2 or more, got " << shape_text(a.shape) << " and "
                                << shape_text(b.shape) << " (reshape vectors to matrices)";
        }
        bool ta = attrs_of(call).at("transpose_a").as_bool(), tb = attrs_of(call).at("transpose_b").as_bool();
        size_t ra = a.shape.size(), rb = b.shape.size();
        Any m = a.shape[ta ? ra - 1 : ra - 2], ka = a.shape[ta ? ra - 2 : ra - 1];
        Any kb = b.shape[tb ? rb - 1 : rb - 2], n = b.shape[tb ? rb - 2 : rb - 1];
        if (!same_dim(ka, kb)) {
          LOOM_THROW(TypeError) << "the inner dimensions differ: " << shape_text(a.shape) << " @ "
                                << shape_text(b.shape) << " has " << ir::to_text(ka) << " against " << ir::to_text(kb);
        }
        std::vector<Any> shape = broadcast_shapes(batch_of(a.shape), batch_of(b.shape));
        shape.push_back(m);
        shape.push_back(n);
        return ir::TensorType(Array(shape), out_dtype);
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
            C, {k_extent}, make_const(t, 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              const PrimExpr &i = out[out.size() - 2], &j = out[out.size() - 1], &k = r[0];
              PrimExpr x = tir::BufferLoad(A, ta ? operand_index(b, A, out, k, i) : operand_index(b, A, out, i, k));
              PrimExpr y = tir::BufferLoad(B, tb ? operand_index(b, B, out, j, k) : operand_index(b, B, out, k, j));
              return PrimExpr(tir::Mul(widen(x, t), widen(y, t)));
            }));
      });

  define_operator(
      "dense", 2, {kOutDtypeAttr}, ir::PatternKind::kOutputFusable, "x @ w^T: x (..., K), w (N, K) -> (..., N)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &w = tensor_arg(call, 1);
        DataType out_dtype = product_dtype(call, x.dtype, w.dtype);
        if (x.shape.size() < 1 || w.shape.size() != 2) {
          LOOM_THROW(TypeError) << "needs x of rank 1 or more and w of rank 2, got " << shape_text(x.shape) << " and "
                                << shape_text(w.shape);
        }
        if (!same_dim(x.shape[x.shape.size() - 1], w.shape[1])) {
          LOOM_THROW(TypeError) << "x " << shape_text(x.shape) << " and w " << shape_text(w.shape)
                                << " differ in their last dimension";
        }
        return dense_result(x, w.shape[0], out_dtype);
      },
      [](const graph::CallNode& call) {
        return lower_dense(call, [](const tir::Buffer& w, const PrimExpr& j, const PrimExpr& k) {
          return PrimExpr(tir::BufferLoad(w, {j, k}));
        });
      });

  // Weight-only quantized dense layers (docs/llm.md, "Quantized weights"):
  // the weight is read in its storage format and converted inside the
  // reduction, so no float copy of it is ever written.
  define_operator(
      "dense_int8", 2, {}, ir::PatternKind::kOutputFusable,
      "x @ float(w)^T: x (..., K) float32, w (N, K) int8 -> (..., N) float32; a per-channel scale is the "
      "caller's multiply, which fuses as the epilogue",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &w = tensor_arg(call, 1);
        if (x.dtype != DataType::Float(32) || w.dtype != DataType::Int(8)) {
          LOOM_THROW(TypeError) << "needs x float32 and w int8, got " << x.dtype.to_string() << " and "
                                << w.dtype.to_string();
        }
        if (x.shape.size() < 1 || w.shape.size() != 2 || !same_dim(x.shape[x.shape.size() - 1], w.shape[1])) {
          LOOM_THROW(TypeError) << "needs x (..., K) and w (N, K), got " << shape_text(x.shape) << " and "
                                << shape_text(w.shape);
        }
        return dense_result(x, w.shape[0]);
      },
      [](const graph::CallNode& call) {
        return lower_dense(call, [](const tir::Buffer& w, const PrimExpr& j, const PrimExpr& k) {
          return PrimExpr(tir::Cast(DataType::Float(32), tir::BufferLoad(w, {j, k})));
        });
      });

  define_operator(
      "dense_int4", 3,
      {SchemaField{"group_size", "int", Any(int64_t{32}), "elements along K per scale (even)"}.at_least(2)},
      ir::PatternKind::kOutputFusable,
      "x @ dequant(w)^T with w 4-bit in groups along K: x (..., K) float32, w (N, K / 2) uint8, scales (N, K / "
      "group_size) float32; in each group of G, byte b holds element b (low nibble) and b + G/2 (high nibble), "
      "each nibble - 8 times the group's scale",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &w = tensor_arg(call, 1), &s = tensor_arg(call, 2);
        int64_t g = attrs_of(call).at("group_size").as_int();
        if (g % 2) LOOM_THROW(TypeError) << "group_size must be even, got " << g;
        if (x.dtype != DataType::Float(32) || w.dtype != DataType::UInt(8) || s.dtype != DataType::Float(32)) {
          LOOM_THROW(TypeError) << "needs x float32, w uint8 and scales float32, got " << x.dtype.to_string() << ", "
                                << w.dtype.to_string() << " and " << s.dtype.to_string();
        }
        auto k = x.shape.size() ? constant_dim(x.shape[x.shape.size() - 1]) : std::nullopt;
        auto n = w.shape.size() == 2 ? constant_dim(w.shape[0]) : std::nullopt;
        if (!k || !n || *k % g || w.shape.size() != 2 || constant_dim(w.shape[1]) != *k / 2 || s.shape.size() != 2 ||
            constant_dim(s.shape[0]) != *n || constant_dim(s.shape[1]) != *k / g) {
          LOOM_THROW(TypeError) << "needs x (..., K) with K a multiple of group_size " << g
                                << ", w (N, K / 2) and scales (N, K / " << g << "), got " << shape_text(x.shape) << ", "
                                << shape_text(w.shape) << " and " << shape_text(s.shape);
        }
        return dense_result(x, w.shape[0]);
      },
      [](const graph::CallNode& call) {
        // One reduction step per group q of G elements (or per part of a
        // long group, at most 64 bytes): its bytes c, each holding elements
        // q * G + c (low nibble) and that + G/2 (high), summed inside the
        // step and scaled once: s * (sum_c (x_lo * lo + x_hi * hi) +
        // offset), two multiply-adds per byte in one chain: the tile's
        // vectors (and rows) are the independent chains.  Four chains per
        // vector filled AVX2's 16 registers (16 accumulators in a one-row
        // tile of four vectors, 32 in a prefill's 4 x 2) and spilled: one
        // chain took a LLaMA prefill of 128 tokens 0.88x its time and a
        // decode step 0.97x, two chains 1.14x and 1.07x (same-process
        // A/B; docs/llm.md "Speed").  The offset, -8
        // times the step's sum of x, does not depend on the output column:
        // a first nest computes it once per row.  A step per byte, with
        // the scale and the offset per byte, made a LLaMA decode step
        // 1.13-1.28x slower and a 128-token prefill 1.37-1.53x
        // (same-process A/B).
        const int64_t g = attrs_of(call).at("group_size").as_int(), half = g / 2;
        int64_t bytes = std::min<int64_t>(half, 64);  // per step: a divisor of the group's
        while (half % bytes) --bytes;
        const int64_t parts = half / bytes;  // steps per group
        PrimBuilder b;
        tir::Buffer X = b.param(tensor_arg(call, 0), "X");
        tir::Buffer W = b.param(tensor_arg(call, 1), "W");
        tir::Buffer S = b.param(tensor_arg(call, 2), "S");
        tir::Buffer Y = b.param(result_type(call), "Y");
        auto f32 = [](const PrimExpr& e) { return PrimExpr(tir::Cast(DataType::Float(32), e)); };
        const auto& xt = tensor_arg(call, 0);
        const int64_t k = *constant_dim(xt.shape[xt.shape.size() - 1]), steps = k / 2 / bytes;
        std::vector<Any> oshape(xt.shape.begin(), xt.shape.end());
        oshape.back() = Any(PrimExpr(steps));
        tir::Buffer O = b.buffer(*ir::TensorType(Array(oshape), DataType::Float(32)).get(), "offsets");
        // Step s: group s / parts, its bytes from (s % parts) * bytes on;
        // the element of byte c's low nibble.
        auto group_of = [&](const PrimExpr& s) { return PrimExpr(tir::FloorDiv(s, PrimExpr(parts))); };
        auto element = [&](const PrimExpr& s, const PrimExpr& c) {
          PrimExpr first = tir::Mul(group_of(s), PrimExpr(g));
          if (parts > 1) first = tir::Add(first, tir::Mul(tir::FloorMod(s, PrimExpr(parts)), PrimExpr(bytes)));
          return PrimExpr(tir::Add(first, c));
        };
        tir::Stmt offsets = reduction(
            O, {PrimExpr(2 * bytes)}, make_const(DataType::Float(32), 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              // r < bytes: the low nibbles' elements; then the high ones'.
              Indices i(out.begin(), out.end() - 1);
              PrimExpr c = tir::FloorMod(r[0], PrimExpr(bytes)), high = tir::FloorDiv(r[0], PrimExpr(bytes));
              i.push_back(tir::Add(element(out.back(), c), tir::Mul(high, PrimExpr(half))));
              return PrimExpr(tir::BufferLoad(X, i));
            },
            [](const PrimExpr& v) { return PrimExpr(tir::Mul(v, make_const(DataType::Float(32), -8))); });
        tir::Stmt main = reduction(
            Y, {PrimExpr(steps)}, make_const(Y->dtype, 0),
            [](const PrimExpr& acc, const PrimExpr& v) { return PrimExpr(tir::Add(acc, v)); },
            [&](const Indices& out, const Indices& r) {
              PrimExpr j = out.back(), step = r[0];
              Indices row(out.begin(), out.end() - 1);
              auto x_at = [&](const PrimExpr& e) {
                Indices i = row;
                i.push_back(e);
                return PrimExpr(tir::BufferLoad(X, i));
              };
              PrimExpr dot;
              for (int64_t c = 0; c < bytes; ++c) {
                PrimExpr lo_k = element(step, PrimExpr(c));
                PrimExpr x_lo = x_at(lo_k), x_hi = x_at(tir::Add(lo_k, PrimExpr(half)));
                PrimExpr byte = tir::Cast(
                    DataType::Int(32), tir::BufferLoad(W, {j, tir::Add(tir::Mul(step, PrimExpr(bytes)), PrimExpr(c))}));
                PrimExpr lo = f32(tir::FloorMod(byte, PrimExpr(int32_t{16})));
                PrimExpr hi = f32(tir::FloorDiv(byte, PrimExpr(int32_t{16})));
                PrimExpr term = tir::Mul(x_lo, lo);
                dot = dot.defined() ? PrimExpr(tir::Add(dot, term)) : term;
                dot = tir::Add(dot, tir::Mul(x_hi, hi));
              }
              Indices oi = row;
              oi.push_back(step);
              return PrimExpr(tir::Mul(tir::BufferLoad(S, {j, group_of(step)}), tir::Add(dot, tir::BufferLoad(O, oi))));
            });
        return b.finish(tir::Allocate(O, tir::SeqStmt({offsets, main})));
      });
}

}  // namespace loom::ops
