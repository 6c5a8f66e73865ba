#include "codegen.h"

#include <loom/graph/bindings.h>
#include <loom/graph/operator.h>
#include <loom/ir/op.h>
#include <loom/ir/type.h>
#include <loom/runtime/ndarray.h>
#include <loom/tir/expr.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

namespace loom::npu {

std::optional<Dtype> npu_dtype(DataType t) {
  if (t == DataType::Float(32)) return Dtype::kFloat32;
  if (t == DataType::Int(8)) return Dtype::kInt8;
  if (t == DataType::UInt(8)) return Dtype::kUInt8;
  if (t == DataType::Int(32)) return Dtype::kInt32;
  return std::nullopt;
}

std::optional<std::pair<std::vector<int64_t>, DataType>> constant_extents(const ir::Expr& e) {
  if (!e.defined() || !e->checked_type.defined()) return std::nullopt;
  const auto* t = e->checked_type.as<ir::TensorTypeNode>();
  if (!t || t->unknown_rank()) return std::nullopt;
  std::vector<int64_t> out;
  for (const Any& d : t->shape) {
    const auto* imm = d.as_object_ref().as<tir::IntImmNode>();
    if (!imm) return std::nullopt;
    out.push_back(imm->value);
  }
  return std::make_pair(out, t->dtype);
}

std::optional<std::pair<std::vector<int64_t>, Dtype>> typed_shape(const ir::Expr& e) {
  auto extents = constant_extents(e);
  std::optional<Dtype> dtype = extents ? npu_dtype(extents->second) : std::nullopt;
  if (!dtype) return std::nullopt;
  return std::make_pair(extents->first, *dtype);
}

std::optional<std::vector<int64_t>> static_shape(const ir::Expr& e) {
  auto typed = typed_shape(e);
  if (!typed || typed->second != Dtype::kFloat32) return std::nullopt;
  return typed->first;
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Semaphores (docs/npu-spec.md, "What the codegen emits").
constexpr uint16_t kLoaded = 1 << 0;    // a step's operands are in their slot
constexpr uint16_t kSlotFree = 1 << 1;  // the matrix unit is done with a step's slot
constexpr uint16_t kComputed = 1 << 2;  // a tile's matrix work is done
constexpr uint16_t kFinished = 1 << 3;  // a tile's vector work is done
constexpr uint16_t kOutFree = 1 << 4;   // a tile's output slot is stored

std::vector<int64_t> ints(const Any& a) {
  std::vector<int64_t> v;
  for (const Any& x : a.cast<Array>()) v.push_back(x.as_int());
  return v;
}
std::vector<int64_t> pair(const Map& attrs, const std::string& key) {
  std::vector<int64_t> v = ints(attrs.at(key));
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

// One composite call as the NPU sees it: an anchor operator, its
// operands, and an epilogue (a per-channel bias, an activation); for the
// integer mode (docs/npu-spec.md, "Integers") its zero point, scale and
// requantization too.
struct Layer {
  std::string composite;  // for errors
  std::string anchor;
  Map attrs;                   // the anchor's, defaults filled in
  std::vector<ir::Expr> args;  // the anchor's operands, as the region writes them
  ir::Expr bias;               // conv/dense: the per-channel bias, or undefined
  bool relu = false, clip = false;
  float lo = 0, hi = 0;
  ir::Expr result;  // the region's variable bound to the layer
  // The integer mode.  An int8 product: int32 sums of (x - x_zero) . w,
  // converted to fp32 and multiplied by `scale`; an int8 add: its operands
  // dequantized by `dequant`.  `quantize`: the result requantized.
  bool integer = false;
  int32_t x_zero = 0;
  ir::Expr scale;
  std::vector<std::pair<float, int32_t>> dequant;  // int8 add: (scale, zero point) per operand
  bool quantize = false;
  float q_scale = 1;
  int32_t q_zero = 0;
};

// A constant scalar's value (of any dtype), or nothing.
std::optional<double> scalar_value(const ir::Expr& e) {
  const auto* c = e.as<graph::ConstantNode>();
  if (!c || c->data->numel() != 1) return std::nullopt;
  const void* p = c->data->data();
  DataType t = c->data->dtype;
  if (t == DataType::Float(32)) return *static_cast<const float*>(p);
  if (t == DataType::Int(8)) return *static_cast<const int8_t*>(p);
  if (t == DataType::UInt(8)) return *static_cast<const uint8_t*>(p);
  if (t == DataType::Int(16)) return *static_cast<const int16_t*>(p);
  if (t == DataType::Int(32)) return *static_cast<const int32_t*>(p);
  return std::nullopt;
}

// Whether a typed expression is a tensor of int8 or uint8.
bool is_8bit_tensor(const ir::Expr& e) {
  const auto* t = e.defined() ? e->checked_type.as<ir::TensorTypeNode>() : nullptr;
  return t && (t->dtype == DataType::Int(8) || t->dtype == DataType::UInt(8));
}

Layer read_layer(const ir::IRModule& module, const std::string& callee, const graph::CallNode& call,
                 const ir::Expr& result) {
  const auto* f = module.lookup(callee).as<graph::FunctionNode>();
  if (!f || !f->attrs.contains("composite")) LOOM_THROW(Error) << "@" << callee << " is not a composite function";
  Layer layer;
  layer.composite = f->attrs.at("composite").as_string();
  layer.result = result;
  std::unordered_map<const Object*, ir::Expr> outer;  // composite parameter -> what the region passes
  for (size_t i = 0; i < f->params.size(); ++i) outer[f->params[i].object()] = call.args[i].cast<ir::Expr>();
  auto arg = [&](const Any& a) -> ir::Expr {
    auto found = outer.find(a.object());
    if (found == outer.end()) LOOM_THROW(Error) << "composite " << layer.composite << " reads a value it does not take";
    return found->second;
  };
  auto scalar = [&](const Any& a, const char* what) {
    std::optional<double> v = scalar_value(arg(a));
    if (!v) LOOM_THROW(Error) << "composite " << layer.composite << ": " << what << " is not a constant scalar";
    return *v;
  };
  // Before the anchor: the integer prologue (cast(x, int16), then minus
  // x's zero point) and an int8 add's dequantized operands.
  const Object* widened = nullptr;  // cast(x, int16)
  ir::Expr widened_from;
  const Object* centred = nullptr;  // cast(x, int16) - zero point
  std::unordered_map<const Object*, std::pair<ir::Expr, std::pair<float, int32_t>>> dequantized;
  bool to_float = false;
  const Object* prev = nullptr;
  ir::Expr cur = f->body;
  cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
    const auto* c = let.value.as<graph::CallNode>();
    const auto* op = c ? c->callee.as<ir::OpNode>() : nullptr;
    if (!op) LOOM_THROW(Error) << "composite " << layer.composite << " has a binding that is not an operator call";
    const std::string& name = op->name;
    Map attrs = ir::OpRegistry::check_attrs(name, c->attrs);
    bool chained = prev && c->args.size() >= 1 && c->args[0].object() == prev;
    bool product = name == "conv2d" || name == "dense" || name == "matmul";
    if (layer.anchor.empty()) {
      if (name == "cast" && !prev) {
        widened = let.var.get();
        widened_from = arg(c->args[0]);
      } else if (name == "subtract" && chained && widened) {
        centred = let.var.get();
        layer.x_zero = static_cast<int32_t>(scalar(c->args[1], "the zero point"));
      } else if (name == "dequantize") {
        dequantized[let.var.get()] = {arg(c->args[0]),
                                      {static_cast<float>(scalar(c->args[1], "a dequantize's scale")),
                                       static_cast<int32_t>(scalar(c->args[2], "a dequantize's zero point"))}};
      } else if (product && (!prev || (chained && centred))) {
        layer.anchor = name;
        layer.attrs = attrs;
        layer.integer = attrs.contains("out_dtype") && attrs.at("out_dtype").as_string() == "int32";
        layer.args = {centred ? widened_from : arg(c->args[0]), arg(c->args[1])};
      } else if (name == "add" && !dequantized.empty()) {
        layer.anchor = "eltwise";
        layer.integer = true;
        for (const Any& a : c->args) {
          auto found = dequantized.find(a.object());
          if (found == dequantized.end())
            LOOM_THROW(Error) << "composite " << layer.composite << " adds a value it did not dequantize";
          layer.args.push_back(found->second.first);
          layer.dequant.push_back(found->second.second);
        }
      } else if (chained && dequantized.size() == 1 && (name == "relu" || name == "clip" || name == "max_pool2d")) {
        // An int8 activation or max pooling: the operand dequantized.
        layer.anchor = name == "max_pool2d" ? name : "eltwise";
        layer.attrs = attrs;
        layer.integer = true;
        layer.args = {dequantized.begin()->second.first};
        layer.dequant = {dequantized.begin()->second.second};
        layer.relu = name == "relu";
        layer.clip = name == "clip";
        if (layer.clip)
          layer.lo = static_cast<float>(attrs.at("a_min").as_float()),
          layer.hi = static_cast<float>(attrs.at("a_max").as_float());
      } else if (!prev && name == "max_pool2d" && is_8bit_tensor(arg(c->args[0]))) {
        // Max pooling of int8 or uint8 values: exactly as fp32 (scale 1,
        // zero point 0 both ways), the padding the dtype's least value.
        layer.anchor = name;
        layer.attrs = attrs;
        layer.integer = true;
        layer.args = {arg(c->args[0])};
        layer.dequant = {{1.0f, 0}};
        layer.quantize = true;
      } else if (!prev) {
        layer.anchor = name;
        layer.attrs = attrs;
        for (const Any& a : c->args) layer.args.push_back(arg(a));
        if (name == "relu" || name == "clip") {
          layer.anchor = "eltwise";
          layer.relu = name == "relu";
          layer.clip = name == "clip";
          if (layer.clip)
            layer.lo = static_cast<float>(attrs.at("a_min").as_float()),
            layer.hi = static_cast<float>(attrs.at("a_max").as_float());
        } else if (name == "add") {
          layer.anchor = "eltwise";
        }
      } else {
        LOOM_THROW(Error) << "composite " << layer.composite << ": the npu cannot begin a layer with " << name;
      }
    } else if (chained && name == "cast" && layer.integer && layer.anchor != "eltwise" && !to_float) {
      to_float = true;  // int32 -> fp32
    } else if (chained && name == "multiply" && to_float && !layer.scale.defined()) {
      layer.scale = arg(c->args[1]);
    } else if (chained && name == "add" && !layer.bias.defined() && !layer.relu && !layer.clip && !layer.quantize &&
               layer.anchor != "eltwise" && (layer.integer ? layer.scale.defined() : layer.anchor != "matmul")) {
      layer.bias = arg(c->args[1]);
    } else if (chained && name == "relu" && !layer.relu && !layer.clip && !layer.quantize) {
      layer.relu = true;
    } else if (chained && name == "clip" && !layer.relu && !layer.clip && !layer.quantize) {
      layer.clip = true;
      layer.lo = static_cast<float>(attrs.at("a_min").as_float());
      layer.hi = static_cast<float>(attrs.at("a_max").as_float());
    } else if (chained && name == "quantize" && layer.integer && !layer.quantize) {
      layer.quantize = true;
      layer.q_scale = static_cast<float>(scalar(c->args[1], "quantize's scale"));
      layer.q_zero = static_cast<int32_t>(scalar(c->args[2], "quantize's zero point"));
    } else {
      LOOM_THROW(Error) << "composite " << layer.composite << ": the npu cannot follow " << layer.anchor << " with "
                        << name;
    }
    prev = let.var.get();
  });
  if (!prev || cur.get() != prev)
    LOOM_THROW(Error) << "composite " << layer.composite << " does not end with its last binding";
  if (layer.integer && layer.dequant.empty() && !layer.scale.defined()) {
    LOOM_THROW(Error) << "composite " << layer.composite
                      << ": an int8 product leaves the npu as fp32 times a scale (cast, then multiply)";
  }
  return layer;
}

class Compiler {
 public:
  Compiler(const ir::IRModule& module, const graph::FunctionNode& region, const Machine& machine)
      : module_(module), region_(region), m_(machine) {}

  Stream run() {
    for (size_t i = 0; i < region_.params.size(); ++i) {
      ir::Expr p = region_.params[i].cast<ir::Expr>();
      bind(p, BufferKind::kInput, static_cast<uint32_t>(i));
    }
    s_.inputs = static_cast<uint32_t>(region_.params.size());
    // The results: each an output buffer, in order.
    std::vector<ir::Expr> results;
    if (const auto* t = region_.body.defined() ? result_of(region_.body).as<graph::TupleNode>() : nullptr) {
      for (const Any& f : t->fields) results.push_back(f.cast<ir::Expr>());
    } else {
      results.push_back(result_of(region_.body));
    }
    for (size_t k = 0; k < results.size(); ++k) {
      if (!results[k].as<graph::VarNode>()) LOOM_THROW(Error) << "the region's result " << k << " is not a bound value";
      bind(results[k], BufferKind::kOutput, static_cast<uint32_t>(k));
    }
    s_.outputs = static_cast<uint32_t>(results.size());
    ir::Expr cur = region_.body;
    cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
      const auto* call = let.value.as<graph::CallNode>();
      const auto* g = call ? call->callee.as<ir::GlobalVarNode>() : nullptr;
      if (!g) LOOM_THROW(Error) << "a region binding that is not a composite call";
      Layer layer = read_layer(module_, g->name, *call, let.var);
      if (!buffer_.count(let.var.get())) bind(let.var, BufferKind::kWorkspace, 0);
      try {
        emit_layer(layer);
      } catch (const Error& e) {
        LOOM_THROW(Error) << "composite " << layer.composite << " (@" << g->name << "): " << e.what();
      }
    });
    emit(Opcode::kEnd);
    // Version 1.0 where the stream uses nothing of 1.1 (docs/npu-spec.md,
    // "Integers"), so that a 1.0 executor runs it.
    bool integers =
        std::any_of(s_.buffers.begin(), s_.buffers.end(), [](const Buffer& b) { return b.dtype != Dtype::kFloat32; }) ||
        std::any_of(s_.instructions.begin(), s_.instructions.end(), [](const Instruction& i) {
          return i.dtype != Dtype::kFloat32 ||
                 (i.opcode == Opcode::kVec && i.f[field::kOp] >= static_cast<int32_t>(VecOp::kToFloat));
        });
    s_.minor = integers ? 1 : 0;
    return std::move(s_);
  }

 private:
  static ir::Expr result_of(const ir::Expr& e) { return graph::chain_result(e); }

  std::vector<int64_t> shape(const ir::Expr& e) const {
    auto s = typed_shape(e);
    if (!s) LOOM_THROW(Error) << "the npu takes float32, int8, uint8 and int32 tensors of constant shape";
    return s->first;
  }
  Dtype dtype(const ir::Expr& e) const {
    auto s = typed_shape(e);
    if (!s) LOOM_THROW(Error) << "the npu takes float32, int8, uint8 and int32 tensors of constant shape";
    return s->second;
  }

  int bind(const ir::Expr& e, BufferKind kind, uint32_t index) {
    Buffer b;
    b.kind = kind;
    b.index = index;
    b.dtype = dtype(e);
    b.words = static_cast<uint64_t>(product(shape(e)));
    if (kind == BufferKind::kWorkspace) {
      b.offset = s_.workspace_words;
      s_.workspace_words += (b.words * element_bytes(b.dtype) + 3) / 4;
    }
    s_.buffers.push_back(b);
    return buffer_[e.get()] = static_cast<int>(s_.buffers.size() - 1);
  }

  // A constant buffer of `count` elements of `dtype`, its bytes `data`, at
  // the next word of the constant section.
  int constant_buffer(const std::string& data, Dtype dtype, uint64_t count) {
    s_.constants.append((4 - s_.constants.size() % 4) % 4, '\0');
    Buffer b;
    b.kind = BufferKind::kConstant;
    b.dtype = dtype;
    b.offset = s_.constants.size();
    b.words = count;
    s_.constants += data;
    s_.buffers.push_back(b);
    return static_cast<int>(s_.buffers.size() - 1);
  }
  int constant_buffer(const std::vector<float>& data) {
    return constant_buffer(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)),
                           Dtype::kFloat32, data.size());
  }

  // The buffer holding `e`: a region value, or a constant laid out as it is.
  int buffer_of(const ir::Expr& e) {
    auto found = buffer_.find(e.get());
    if (found != buffer_.end()) return found->second;
    if (const auto* c = e.as<graph::ConstantNode>()) {
      Dtype d = dtype(e);
      uint64_t count = static_cast<uint64_t>(product(c->data.shape_vector()));
      const char* p = static_cast<const char*>(c->data->data());
      return buffer_[e.get()] = constant_buffer(std::string(p, p + count * element_bytes(d)), d, count);
    }
    LOOM_THROW(Error) << "an operand the region does not define";
  }

  // A per-channel fp32 constant of `channels` values: `e` as it is, or its
  // one value repeated.
  int channel_constant(const ir::Expr& e, int64_t channels) {
    const auto* c = e.as<graph::ConstantNode>();
    if (!c || dtype(e) != Dtype::kFloat32) LOOM_THROW(Error) << "a scale that is not an fp32 constant";
    const float* p = static_cast<const float*>(c->data->data());
    int64_t n = product(c->data.shape_vector());
    if (n != 1 && n != channels) LOOM_THROW(Error) << "a scale of " << n << " values for " << channels << " channels";
    std::vector<float> data(static_cast<size_t>(channels));
    for (int64_t k = 0; k < channels; ++k) data[k] = p[n == 1 ? 0 : k];
    return constant_buffer(data);
  }

  Instruction& emit(Opcode op, std::initializer_list<std::pair<int, int64_t>> fields = {}) {
    Instruction i;
    i.opcode = op;
    for (const auto& [k, v] : fields) {
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        LOOM_THROW(Error) << "a tensor too large for version 1's 32-bit fields";
      }
      i.f[k] = static_cast<int32_t>(v);
    }
    s_.instructions.push_back(i);
    return s_.instructions.back();
  }

  // A LOAD or STORE in its buffer's dtype.
  void load(int buffer, int64_t offset, int64_t spad, std::array<int64_t, 3> n, std::array<int64_t, 3> mem,
            std::array<int64_t, 3> sp, Opcode op = Opcode::kLoad) {
    using namespace field;
    emit(op, {{kBuffer, buffer},
              {kOffset, offset},
              {kSpad, spad},
              {kN0, n[0]},
              {kN1, n[1]},
              {kN2, n[2]},
              {kMemS0, mem[0]},
              {kMemS1, mem[1]},
              {kMemS2, mem[2]},
              {kSpadS0, sp[0]},
              {kSpadS1, sp[1]},
              {kSpadS2, sp[2]}})
        .dtype = s_.buffers[buffer].dtype;
  }
  void fill(int64_t spad, int64_t n, float value) {
    emit(Opcode::kFill, {{field::kFillSpad, spad}, {field::kFillN, n}, {field::kFillValue, float_bits(value)}});
  }
  void fill_int(int64_t spad, int64_t n, int32_t value) {
    emit(Opcode::kFill, {{field::kFillSpad, spad}, {field::kFillN, n}, {field::kFillValue, value}}).dtype =
        Dtype::kInt32;
  }
  void vec(VecOp op, int64_t n, int64_t dst, int64_t src0, int64_t src1 = 0, int64_t channels = 0, int64_t inner = 0,
           float imm0 = 0, float imm1 = 0) {
    using namespace field;
    emit(Opcode::kVec, {{kOp, static_cast<int64_t>(op)},
                        {kVecN, n},
                        {kDst, dst},
                        {kSrc0, src0},
                        {kSrc1, src1},
                        {kChannels, channels},
                        {kInner, inner},
                        {kImm0, float_bits(imm0)},
                        {kImm1, float_bits(imm1)}});
  }
  void activation(const Layer& l, int64_t n, int64_t at) {
    if (l.relu) vec(VecOp::kRelu, n, at, at);
    if (l.clip) vec(VecOp::kClip, n, at, at, 0, 0, 0, l.lo, l.hi);
  }
  // QUANTIZE or DEQUANTIZE in place: `scale` and the zero point as
  // immediates; a quantize's dtype is its result's range.
  void requantize(VecOp op, int64_t n, int64_t at, float scale, int32_t zero, Dtype dtype = Dtype::kFloat32) {
    using namespace field;
    emit(Opcode::kVec, {{kOp, static_cast<int64_t>(op)},
                        {kVecN, n},
                        {kDst, at},
                        {kSrc0, at},
                        {kImm0, float_bits(scale)},
                        {kImm1, zero}})
        .dtype = dtype;
  }
  // An integer product's epilogue on n words at `at` (int32 sums, channels
  // of `inner` words): to fp32, times the scale, plus the bias (two
  // roundings, as the llvm target computes an epilogue), the activation,
  // the requantization.
  void integer_epilogue(const Layer& l, int64_t n, int64_t at, int64_t scale, int64_t bias, int64_t channels,
                        int64_t inner, Dtype out) {
    vec(VecOp::kToFloat, n, at, at);
    vec(VecOp::kMulChannel, n, at, at, scale, channels, inner);
    if (bias >= 0) vec(VecOp::kAddChannel, n, at, at, bias, channels, inner);
    activation(l, n, at);
    if (l.quantize) requantize(VecOp::kQuantize, n, at, l.q_scale, l.q_zero, out);
  }
  void need(int64_t words) {
    if (words > m_.scratchpad_words) LOOM_THROW(Error) << "internal: a tile of " << words << " words does not fit";
    s_.scratchpad_words = std::max<uint32_t>(s_.scratchpad_words, static_cast<uint32_t>(words));
  }

  // Marks the instructions [first, end) of a group: the first waits on
  // `wait`, the last signals `signal`.
  void mark(size_t first, uint16_t wait, uint16_t signal) {
    if (first >= s_.instructions.size()) LOOM_THROW(Error) << "internal: an empty group of instructions";
    s_.instructions[first].wait |= wait;
    s_.instructions.back().signal |= signal;
  }

  void emit_layer(const Layer& l) {
    emit(Opcode::kBarrier);  // the previous layer's stores are in device memory
    if (l.anchor == "conv2d") return conv(l);
    if (l.anchor == "dense" || l.anchor == "matmul") return gemm(l);
    if (l.anchor == "eltwise") return eltwise(l);
    if (l.anchor == "max_pool2d" || l.anchor == "avg_pool2d" || l.anchor == "global_avg_pool2d") return pool(l);
    LOOM_THROW(Error) << "the npu has no " << l.anchor;
  }

  // The steps of a matrix layer: for each output tile, its chunks; the
  // operands of step j in slot j % 2, the output of tile t in slot t % 2.
  struct MatrixSteps {
    int64_t tiles = 0, chunks = 0;
    std::function<void(int64_t tile, int64_t chunk, int slot)> load;  // DMA
    std::function<void(int64_t tile, int64_t chunk, int slot, int out)> matmul;
    std::function<void(int64_t tile, int out)> epilogue;  // vector, may emit nothing
    std::function<void(int64_t tile, int out)> store;     // DMA
  };

  void run_matrix(const MatrixSteps& p) {
    int64_t steps = p.tiles * p.chunks;
    auto load = [&](int64_t j) {
      size_t first = s_.instructions.size();
      p.load(j / p.chunks, j % p.chunks, static_cast<int>(j % 2));
      mark(first, j >= 2 ? kSlotFree : 0, kLoaded);
    };
    load(0);
    for (int64_t j = 0; j < steps; ++j) {
      if (j + 1 < steps) load(j + 1);
      int64_t t = j / p.chunks, c = j % p.chunks;
      bool last = c == p.chunks - 1;
      size_t first = s_.instructions.size();
      p.matmul(t, c, static_cast<int>(j % 2), static_cast<int>(t % 2));
      mark(first, kLoaded | (c == 0 && t >= 2 ? kOutFree : 0),
           (j + 2 < steps ? kSlotFree : 0) | (last ? kComputed : 0));
      if (!last) continue;
      first = s_.instructions.size();
      p.epilogue(t, static_cast<int>(t % 2));
      bool vector_work = s_.instructions.size() > first;
      if (vector_work) mark(first, kComputed, kFinished);
      first = s_.instructions.size();
      p.store(t, static_cast<int>(t % 2));
      mark(first, vector_work ? kFinished : kComputed, t + 2 < p.tiles ? kOutFree : 0);
    }
  }

  // The steps of a vector layer: load, compute and store per tile, the
  // operands of tile j in slot j % 2.  (A load of tile j + 2 follows the
  // store of tile j on the DMA engine, which waited for its compute.)
  void run_vector(int64_t tiles, const std::function<void(int64_t, int)>& load,
                  const std::function<void(int64_t, int)>& compute, const std::function<void(int64_t, int)>& store) {
    auto loaded = [&](int64_t j) {
      size_t first = s_.instructions.size();
      load(j, static_cast<int>(j % 2));
      mark(first, 0, kLoaded);
    };
    loaded(0);
    for (int64_t j = 0; j < tiles; ++j) {
      if (j + 1 < tiles) loaded(j + 1);
      size_t first = s_.instructions.size();
      compute(j, static_cast<int>(j % 2));
      mark(first, kLoaded, kFinished);
      first = s_.instructions.size();
      store(j, static_cast<int>(j % 2));
      mark(first, kFinished, 0);
    }
  }

  // A constant weight laid out at compile time in the order the tiles read
  // it: block (m-tile, chunk) is [rows][cols] contiguous, element (m, k) of
  // it the weight's element `at(m, chunk, k)` (a flat index), in the
  // weight's dtype.
  struct TiledWeight {
    int buffer = -1;
    std::vector<int64_t> block;  // element offset of each (m-tile, chunk) block
  };
  TiledWeight tile_weight(const graph::ConstantNode& weight, int64_t rows, int64_t mt, int64_t chunks,
                          const std::function<int64_t(int64_t)>& chunk_cols,
                          const std::function<int64_t(int64_t m, int64_t chunk, int64_t k)>& at) {
    Dtype d = *npu_dtype(weight.data->dtype);
    size_t size = static_cast<size_t>(element_bytes(d));
    const char* src = static_cast<const char*>(weight.data->data());
    TiledWeight out;
    std::string data;
    for (int64_t m0 = 0; m0 < rows; m0 += mt)
      for (int64_t c = 0; c < chunks; ++c) {
        out.block.push_back(static_cast<int64_t>(data.size() / size));
        for (int64_t m = m0; m < std::min(rows, m0 + mt); ++m)
          for (int64_t k = 0; k < chunk_cols(c); ++k) data.append(src + at(m, c, k) * size, size);
      }
    out.buffer = constant_buffer(data, d, data.size() / size);
    return out;
  }

  void conv(const Layer& l) {
    std::vector<int64_t> xs = shape(l.args[0]), ws = shape(l.args[1]), ys = shape(l.result);
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], kh = ws[2], kw = ws[3], Ho = ys[2], Wo = ys[3];
    auto s = pair(l.attrs, "strides"), d = pair(l.attrs, "dilation");
    auto p = graph::padding_of(l.attrs);
    bool depthwise = l.attrs.at("groups").as_int() != 1;
    int x = buffer_of(l.args[0]), y = buffer_of(l.result);
    int bias = l.bias.defined() ? buffer_of(l.bias) : -1;
    int scale = l.integer ? channel_constant(l.scale, O) : -1;
    int64_t vectors = l.integer ? 2 : 1;  // per-channel slots: the bias, and an integer layer's scale
    // Tile sizes: output channels Mt, input channels per chunk Ct, output
    // rows Ht and columns Wt, halved until twice the working set fits.
    int64_t Mt = std::min<int64_t>(O, 64), Ct = depthwise ? Mt : C, Ht = Ho, Wt = Wo;
    auto in_words = [&](int64_t ct, int64_t ht, int64_t wt) {
      return ct * ((ht - 1) * s[0] + (kh - 1) * d[0] + 1) * ((wt - 1) * s[1] + (kw - 1) * d[1] + 1);
    };
    auto words = [&] {
      int64_t ct = depthwise ? Mt : Ct;
      return 2 * (in_words(ct, Ht, Wt) + Mt * (depthwise ? 1 : ct) * kh * kw) + 2 * Mt * Ht * Wt + 2 * Mt * vectors;
    };
    while (words() > m_.scratchpad_words) {
      int64_t ct = depthwise ? Mt : Ct;
      if (!depthwise && Ct > 1 && in_words(ct, Ht, Wt) + Mt * ct * kh * kw > Mt * Ht * Wt)
        Ct = ceil_div(Ct, 2);
      else if (Ht > 1)
        Ht = ceil_div(Ht, 2);
      else if (Wt > 1)
        Wt = ceil_div(Wt, 2);
      else if (Mt > 1)
        Mt = ceil_div(Mt, 2);
      else if (!depthwise && Ct > 1)
        Ct = ceil_div(Ct, 2);
      else
        LOOM_THROW(Error) << "one output of a " << kh << "x" << kw << " window does not fit the scratchpad";
    }
    if (depthwise) Ct = Mt;
    int64_t mtiles = ceil_div(O, Mt), htiles = ceil_div(Ho, Ht), wtiles = ceil_div(Wo, Wt);
    int64_t chunks = depthwise ? 1 : ceil_div(C, Ct);
    int64_t in_slot = in_words(Ct, Ht, Wt), w_slot = Mt * (depthwise ? 1 : Ct) * kh * kw, out_slot = Mt * Ht * Wt;
    int64_t IN = 0, WT = 2 * in_slot, OUT = WT + 2 * w_slot, BIAS = OUT + 2 * out_slot, SCALE = BIAS + 2 * Mt;
    need(BIAS + 2 * Mt * vectors);
    int64_t cg = depthwise ? 1 : C;  // input channels per output channel in the weight
    TiledWeight tiled;
    const auto* wdata = l.args[1].as<graph::ConstantNode>();
    if (wdata) {
      tiled = tile_weight(
          *wdata, O, Mt, chunks, [&](int64_t c) { return (std::min(cg, (c + 1) * Ct) - c * Ct) * kh * kw; },
          [&](int64_t m, int64_t c, int64_t k) { return m * cg * kh * kw + c * Ct * kh * kw + k; });
    }
    int w = wdata ? tiled.buffer : buffer_of(l.args[1]);
    struct Tile {
      int64_t n, mi, m0, mt, oy0, ht, ox0, wt;
    };
    auto tile = [&](int64_t t) {
      Tile r;
      r.n = t / (mtiles * htiles * wtiles);
      r.mi = t / (htiles * wtiles) % mtiles;
      int64_t hi = t / wtiles % htiles, wi = t % wtiles;
      r.m0 = r.mi * Mt, r.mt = std::min(Mt, O - r.m0);
      r.oy0 = hi * Ht, r.ht = std::min(Ht, Ho - r.oy0);
      r.ox0 = wi * Wt, r.wt = std::min(Wt, Wo - r.ox0);
      return r;
    };
    auto chunk_channels = [&](const Tile& t, int64_t c) {
      return depthwise ? std::make_pair(t.m0, t.mt) : std::make_pair(c * Ct, std::min(Ct, C - c * Ct));
    };
    MatrixSteps steps;
    steps.tiles = N * mtiles * htiles * wtiles;
    steps.chunks = chunks;
    steps.load = [&](int64_t ti, int64_t c, int slot) {
      Tile t = tile(ti);
      auto [c0, ct] = chunk_channels(t, c);
      int64_t hin = (t.ht - 1) * s[0] + (kh - 1) * d[0] + 1, win = (t.wt - 1) * s[1] + (kw - 1) * d[1] + 1;
      int64_t iy0 = t.oy0 * s[0] - p[0], ix0 = t.ox0 * s[1] - p[1];
      int64_t r0 = std::max<int64_t>(iy0, 0), r1 = std::min(iy0 + hin, H), q0 = std::max<int64_t>(ix0, 0),
              q1 = std::min(ix0 + win, W);
      int64_t at = IN + slot * in_slot;
      if (r0 > iy0 || r1 < iy0 + hin || q0 > ix0 || q1 < ix0 + win) {
        if (l.integer)
          fill_int(at, ct * hin * win, l.x_zero);  // x's zero: 0 once the MATMUL subtracts it
        else
          fill(at, ct * hin * win, 0.0f);
      }
      if (r1 > r0 && q1 > q0) {
        load(x, ((t.n * C + c0) * H + r0) * W + q0, at + (r0 - iy0) * win + (q0 - ix0), {q1 - q0, r1 - r0, ct},
             {1, W, H * W}, {1, win, hin * win});
      }
      int64_t kcols = (depthwise ? 1 : ct) * kh * kw;
      if (wdata) {
        load(w, tiled.block[t.mi * chunks + c], WT + slot * w_slot, {t.mt * kcols, 1, 1}, {1, 0, 0}, {1, 0, 0});
      } else {
        load(w, (t.m0 * cg + (depthwise ? 0 : c0)) * kh * kw, WT + slot * w_slot, {kcols, t.mt, 1},
             {1, cg * kh * kw, 0}, {1, kcols, 0});
      }
      if (bias >= 0 && c == 0) load(bias, t.m0, BIAS + (ti % 2) * Mt, {t.mt, 1, 1}, {1, 0, 0}, {1, 0, 0});
      if (scale >= 0 && c == 0) load(scale, t.m0, SCALE + (ti % 2) * Mt, {t.mt, 1, 1}, {1, 0, 0}, {1, 0, 0});
    };
    steps.matmul = [&](int64_t ti, int64_t c, int slot, int out) {
      Tile t = tile(ti);
      int64_t ct = chunk_channels(t, c).second;
      using namespace field;
      int64_t hin = (t.ht - 1) * s[0] + (kh - 1) * d[0] + 1, win = (t.wt - 1) * s[1] + (kw - 1) * d[1] + 1;
      emit(Opcode::kMatmul, {{kMode, static_cast<int64_t>(depthwise ? MatmulMode::kDepthwise : MatmulMode::kConv)},
                             {kM, t.mt},
                             {kN, t.ht * t.wt},
                             {kK, (depthwise ? 1 : ct) * kh * kw},
                             {kA, WT + slot * w_slot},
                             {kB, IN + slot * in_slot},
                             {kC, OUT + out * out_slot},
                             {kAccumulate, c > 0},
                             {kCin, ct},
                             {kH, hin},
                             {kW, win},
                             {kKh, kh},
                             {kKw, kw},
                             {kSh, s[0]},
                             {kSw, s[1]},
                             {kDh, d[0]},
                             {kDw, d[1]},
                             {kWo, t.wt},
                             {kZeroB, l.x_zero}})
          .dtype = l.integer ? Dtype::kInt8 : Dtype::kFloat32;
    };
    steps.epilogue = [&](int64_t ti, int out) {
      Tile t = tile(ti);
      int64_t n = t.mt * t.ht * t.wt, at = OUT + out * out_slot;
      if (l.integer) {
        return integer_epilogue(l, n, at, SCALE + out * Mt, bias >= 0 ? BIAS + out * Mt : -1, t.mt, t.ht * t.wt,
                                dtype(l.result));
      }
      if (bias >= 0) vec(VecOp::kAddChannel, n, at, at, BIAS + out * Mt, t.mt, t.ht * t.wt);
      activation(l, n, at);
    };
    steps.store = [&](int64_t ti, int out) {
      Tile t = tile(ti);
      load(y, ((t.n * O + t.m0) * Ho + t.oy0) * Wo + t.ox0, OUT + out * out_slot, {t.wt, t.ht, t.mt}, {1, Wo, Ho * Wo},
           {1, t.wt, t.ht * t.wt}, Opcode::kStore);
    };
    run_matrix(steps);
  }

  // dense (x (B, K), w (F, K)) and matmul (a (B, K), b (K, F), either
  // transposed): the matrix unit computes out^T (F, B) = w (F, K) . x^T
  // (K, B), tile by tile, K in chunks; the operands' layouts are strides.
  void gemm(const Layer& l) {
    std::vector<int64_t> xs = shape(l.args[0]), ys = shape(l.result);
    bool dense = l.anchor == "dense";
    bool ta = !dense && l.attrs.at("transpose_a").as_bool(), tb = !dense && l.attrs.at("transpose_b").as_bool();
    int64_t B = ys[0], F = ys[1], K = ta ? xs[0] : xs[1];
    int64_t xb = ta ? 1 : K, xk = ta ? B : 1;                    // element (b, k) of x at b * xb + k * xk
    int64_t wn = dense || tb ? K : 1, wk = dense || tb ? 1 : F;  // element (f, k) of the weight at f * wn + k * wk
    int x = buffer_of(l.args[0]), y = buffer_of(l.result);
    int bias = l.bias.defined() ? buffer_of(l.bias) : -1;
    int scale = l.integer ? channel_constant(l.scale, F) : -1;
    int64_t vectors = l.integer ? 2 : 1;  // per-channel slots: the bias, and an integer layer's scale
    int64_t Mt = std::min<int64_t>(F, 64), Bt = std::min<int64_t>(B, 256), Kc = K;
    auto words = [&] { return 2 * (Kc * Bt + Mt * Kc) + 2 * Mt * Bt + 2 * Mt * vectors; };
    while (words() > m_.scratchpad_words) {
      if (Kc > 1 && Kc * (Bt + Mt) > Mt * Bt)
        Kc = ceil_div(Kc, 2);
      else if (Bt > 1)
        Bt = ceil_div(Bt, 2);
      else if (Mt > 1)
        Mt = ceil_div(Mt, 2);
      else
        Kc = ceil_div(Kc, 2);
    }
    int64_t mtiles = ceil_div(F, Mt), btiles = ceil_div(B, Bt), chunks = ceil_div(K, Kc);
    int64_t x_slot = Kc * Bt, w_slot = Mt * Kc, out_slot = Mt * Bt;
    int64_t X = 0, WT = 2 * x_slot, OUT = WT + 2 * w_slot, BIAS = OUT + 2 * out_slot, SCALE = BIAS + 2 * Mt;
    need(BIAS + 2 * Mt * vectors);
    const auto* wdata = l.args[1].as<graph::ConstantNode>();
    TiledWeight tiled;
    if (wdata) {
      tiled = tile_weight(
          *wdata, F, Mt, chunks, [&](int64_t c) { return std::min(Kc, K - c * Kc); },
          [&](int64_t f, int64_t c, int64_t k) { return f * wn + (c * Kc + k) * wk; });
    }
    int w = wdata ? tiled.buffer : buffer_of(l.args[1]);
    auto tile = [&](int64_t t, int64_t* b0, int64_t* bt, int64_t* mi, int64_t* m0, int64_t* mt) {
      *b0 = t / mtiles * Bt, *bt = std::min(Bt, B - *b0);
      *mi = t % mtiles, *m0 = *mi * Mt, *mt = std::min(Mt, F - *m0);
    };
    MatrixSteps steps;
    steps.tiles = mtiles * btiles;
    steps.chunks = chunks;
    steps.load = [&](int64_t t, int64_t c, int slot) {
      int64_t b0, bt, mi, m0, mt, k0 = c * Kc, kc = std::min(Kc, K - c * Kc);
      tile(t, &b0, &bt, &mi, &m0, &mt);
      load(x, b0 * xb + k0 * xk, X + slot * x_slot, {bt, kc, 1}, {xb, xk, 0}, {1, bt, 0});
      if (wdata) {
        load(w, tiled.block[mi * chunks + c], WT + slot * w_slot, {mt * kc, 1, 1}, {1, 0, 0}, {1, 0, 0});
      } else {
        load(w, m0 * wn + k0 * wk, WT + slot * w_slot, {kc, mt, 1}, {wk, wn, 0}, {1, kc, 0});
      }
      if (bias >= 0 && c == 0) load(bias, m0, BIAS + (t % 2) * Mt, {mt, 1, 1}, {1, 0, 0}, {1, 0, 0});
      if (scale >= 0 && c == 0) load(scale, m0, SCALE + (t % 2) * Mt, {mt, 1, 1}, {1, 0, 0}, {1, 0, 0});
    };
    steps.matmul = [&](int64_t t, int64_t c, int slot, int out) {
      int64_t b0, bt, mi, m0, mt, kc = std::min(Kc, K - c * Kc);
      tile(t, &b0, &bt, &mi, &m0, &mt);
      using namespace field;
      emit(Opcode::kMatmul, {{kMode, static_cast<int64_t>(MatmulMode::kMatrix)},
                             {kM, mt},
                             {kN, bt},
                             {kK, kc},
                             {kA, WT + slot * w_slot},
                             {kB, X + slot * x_slot},
                             {kC, OUT + out * out_slot},
                             {kAccumulate, c > 0},
                             {kZeroB, l.x_zero}})
          .dtype = l.integer ? Dtype::kInt8 : Dtype::kFloat32;
    };
    steps.epilogue = [&](int64_t t, int out) {
      int64_t b0, bt, mi, m0, mt;
      tile(t, &b0, &bt, &mi, &m0, &mt);
      int64_t at = OUT + out * out_slot;
      if (l.integer) {
        return integer_epilogue(l, mt * bt, at, SCALE + out * Mt, bias >= 0 ? BIAS + out * Mt : -1, mt, bt,
                                dtype(l.result));
      }
      if (bias >= 0) vec(VecOp::kAddChannel, mt * bt, at, at, BIAS + out * Mt, mt, bt);
      activation(l, mt * bt, at);
    };
    steps.store = [&](int64_t t, int out) {
      int64_t b0, bt, mi, m0, mt;
      tile(t, &b0, &bt, &mi, &m0, &mt);
      load(y, b0 * F + m0, OUT + out * out_slot, {bt, mt, 1}, {F, 1, 0}, {1, bt, 0}, Opcode::kStore);
    };
    run_matrix(steps);
  }

  // add of two tensors of one shape, relu, clip: in tiles of the flat tensor.
  void eltwise(const Layer& l) {
    int64_t E = product(shape(l.result));
    bool binary = l.args.size() == 2;
    int a = buffer_of(l.args[0]), b = binary ? buffer_of(l.args[1]) : -1, y = buffer_of(l.result);
    int64_t T = std::min<int64_t>(E, m_.scratchpad_words / (binary ? 4 : 2));
    need((binary ? 4 : 2) * T);
    int64_t A = 0, Bs = 2 * T;
    run_vector(
        ceil_div(E, T),
        [&](int64_t j, int slot) {
          int64_t n = std::min(T, E - j * T);
          load(a, j * T, A + slot * T, {n, 1, 1}, {1, 0, 0}, {1, 0, 0});
          if (binary) load(b, j * T, Bs + slot * T, {n, 1, 1}, {1, 0, 0}, {1, 0, 0});
        },
        [&](int64_t j, int slot) {
          int64_t n = std::min(T, E - j * T), at = A + slot * T;
          if (l.integer && binary) {
            // An int8 add: a and b dequantized, then their sum (three
            // roundings, as the llvm target computes it).
            requantize(VecOp::kDequantize, n, Bs + slot * T, l.dequant[1].first, l.dequant[1].second);
            requantize(VecOp::kDequantize, n, at, l.dequant[0].first, l.dequant[0].second);
            vec(VecOp::kAdd, n, at, at, Bs + slot * T);
          } else if (l.integer) {
            requantize(VecOp::kDequantize, n, at, l.dequant[0].first, l.dequant[0].second);
          } else if (binary) {
            vec(VecOp::kAdd, n, at, at, Bs + slot * T);
          }
          activation(l, n, at);
          if (l.quantize) requantize(VecOp::kQuantize, n, at, l.q_scale, l.q_zero, dtype(l.result));
        },
        [&](int64_t j, int slot) {
          int64_t n = std::min(T, E - j * T);
          load(y, j * T, A + slot * T, {n, 1, 1}, {1, 0, 0}, {1, 0, 0}, Opcode::kStore);
        });
  }

  void pool(const Layer& l) {
    std::vector<int64_t> xs = shape(l.args[0]), ys = shape(l.result);
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Ho = ys[2], Wo = ys[3];
    bool global = l.anchor == "global_avg_pool2d", max = l.anchor == "max_pool2d";
    std::vector<int64_t> k = global ? std::vector<int64_t>{H, W} : pair(l.attrs, "pool_size");
    std::vector<int64_t> s = global ? std::vector<int64_t>{1, 1} : pair(l.attrs, "strides");
    std::vector<int64_t> p = global ? std::vector<int64_t>{0, 0, 0, 0} : graph::padding_of(l.attrs);
    int x = buffer_of(l.args[0]), y = buffer_of(l.result);
    int64_t win = (Wo - 1) * s[1] + k[1];
    int64_t Ct = C, Ht = Ho;
    auto in_rows = [&](int64_t ht) { return (ht - 1) * s[0] + k[0]; };
    auto words = [&] { return 2 * Ct * (in_rows(Ht) * win + Ht * Wo); };
    while (words() > m_.scratchpad_words) {
      if (Ht > 1)
        Ht = ceil_div(Ht, 2);
      else if (Ct > 1)
        Ct = ceil_div(Ct, 2);
      else
        LOOM_THROW(Error) << "one row of a " << k[0] << "x" << k[1] << " pooling window does not fit the scratchpad";
    }
    int64_t in_slot = Ct * in_rows(Ht) * win, out_slot = Ct * Ht * Wo, IN = 0, OUT = 2 * in_slot;
    need(OUT + 2 * out_slot);
    int64_t ctiles = ceil_div(C, Ct), htiles = ceil_div(Ho, Ht);
    auto tile = [&](int64_t j, int64_t* n, int64_t* c0, int64_t* ct, int64_t* oy0, int64_t* ht) {
      *n = j / (ctiles * htiles);
      *c0 = j / htiles % ctiles * Ct, *ct = std::min(Ct, C - *c0);
      *oy0 = j % htiles * Ht, *ht = std::min(Ht, Ho - *oy0);
    };
    float pad = max ? -std::numeric_limits<float>::infinity() : 0.0f;
    run_vector(
        N * ctiles * htiles,
        [&](int64_t j, int slot) {
          int64_t n, c0, ct, oy0, ht;
          tile(j, &n, &c0, &ct, &oy0, &ht);
          int64_t hin = in_rows(ht), iy0 = oy0 * s[0] - p[0], ix0 = -p[1];
          int64_t r0 = std::max<int64_t>(iy0, 0), r1 = std::min(iy0 + hin, H), q0 = std::max<int64_t>(ix0, 0),
                  q1 = std::min(ix0 + win, W);
          int64_t at = IN + slot * in_slot;
          if (r0 > iy0 || r1 < iy0 + hin || q0 > ix0 || q1 < ix0 + win) {
            if (l.integer)  // int8 max pooling: the dtype's least value never wins
              fill_int(at, ct * hin * win, dtype(l.args[0]) == Dtype::kUInt8 ? 0 : -128);
            else
              fill(at, ct * hin * win, pad);
          }
          if (r1 > r0 && q1 > q0) {
            load(x, ((n * C + c0) * H + r0) * W + q0, at + (r0 - iy0) * win + (q0 - ix0), {q1 - q0, r1 - r0, ct},
                 {1, W, H * W}, {1, win, hin * win});
          }
        },
        [&](int64_t j, int slot) {
          int64_t n, c0, ct, oy0, ht;
          tile(j, &n, &c0, &ct, &oy0, &ht);
          using namespace field;
          int64_t at = OUT + slot * out_slot;
          if (l.integer)
            requantize(VecOp::kDequantize, ct * in_rows(ht) * win, IN + slot * in_slot, l.dequant[0].first,
                       l.dequant[0].second);
          emit(Opcode::kPool, {{kPoolMode, max ? 0 : 1},
                               {kPoolC, ct},
                               {kPoolH, in_rows(ht)},
                               {kPoolW, win},
                               {kPoolKh, k[0]},
                               {kPoolKw, k[1]},
                               {kPoolSh, s[0]},
                               {kPoolSw, s[1]},
                               {kPoolHo, ht},
                               {kPoolWo, Wo},
                               {kPoolSrc, IN + slot * in_slot},
                               {kPoolDst, at}});
          if (!max) vec(VecOp::kScale, ct * ht * Wo, at, at, 0, 0, 0, 1.0f / static_cast<float>(k[0] * k[1]));
          if (l.quantize) requantize(VecOp::kQuantize, ct * ht * Wo, at, l.q_scale, l.q_zero, dtype(l.result));
        },
        [&](int64_t j, int slot) {
          int64_t n, c0, ct, oy0, ht;
          tile(j, &n, &c0, &ct, &oy0, &ht);
          load(y, ((n * C + c0) * Ho + oy0) * Wo, OUT + slot * out_slot, {Wo, ht, ct}, {1, Wo, Ho * Wo},
               {1, Wo, ht * Wo}, Opcode::kStore);
        });
  }

  const ir::IRModule& module_;
  const graph::FunctionNode& region_;
  Machine m_;
  Stream s_;
  std::unordered_map<const Object*, int> buffer_;
};
}  // namespace

Stream compile_region(const ir::IRModule& module, const std::string& name, const Machine& machine) {
  const auto* f = module.lookup(name).as<graph::FunctionNode>();
  if (!f) LOOM_THROW(Error) << "npu: @" << name << " is not a graph function";
  try {
    return Compiler(module, *f, machine).run();
  } catch (const Error& e) {
    LOOM_THROW(Error) << "npu: region @" << name << ": " << e.what();
  }
}

}  // namespace loom::npu
