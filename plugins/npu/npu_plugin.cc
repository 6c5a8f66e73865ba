// The npu plugin's compiler half (docs/npu.md, docs/npu-spec.md): the
// reference NPU as a vendor would ship it.  Its pattern table says what the
// NPU takes (partitioning, docs/partitioning.md); its codegen compiles each
// partitioned region into a command stream and hands the streams to the
// runtime half (plugin npu_runtime: npu_runtime_plugin.cc), whose module
// runs them on the simulator and keeps their cycle reports.
#include <loom/graph/pattern_table.h>
#include <loom/ir/op.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/dps_signature.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/module.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include "codegen.h"
#include "isa.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using loom::Map;
using loom::ir::IRModule;
using namespace loom::npu;

// ---- what the NPU takes --------------------------------------------------

std::optional<std::vector<int64_t>> shape_of(const Any& e) { return static_shape(e.cast<loom::ir::Expr>()); }

const loom::graph::CallNode* as_call(const loom::ir::Expr& e) { return e.as<loom::graph::CallNode>(); }

bool conv_supported(const loom::graph::CallNode& c) {
  Map a = loom::ir::OpRegistry::check_attrs("conv2d", c.attrs);
  if (a.at("data_layout").as_string() != "NCHW" || a.at("kernel_layout").as_string() != "OIHW") return false;
  auto x = shape_of(c.args[0]), w = shape_of(c.args[1]);
  if (!x || !w || x->size() != 4 || w->size() != 4) return false;
  int64_t groups = a.at("groups").as_int();
  return groups == 1 || (groups == (*x)[1] && (*w)[0] == (*x)[1] && (*w)[1] == 1);  // dense or depthwise
}

bool pool_supported(const std::string& op, const loom::graph::CallNode& c) {
  Map a = loom::ir::OpRegistry::check_attrs(op, c.attrs);
  auto x = constant_extents(c.args[0].cast<loom::ir::Expr>());  // any dtype: the callers check it
  if (!x || x->first.size() != 4 || a.at("layout").as_string() != "NCHW") return false;
  if (op != "global_avg_pool2d") {
    // The command stream's windows have no dilation and no ceil mode.
    if (a.at("ceil_mode").as_bool()) return false;
    for (const Any& d : a.at("dilation").cast<loom::Array>())
      if (d.as_int() != 1) return false;
  }
  if (op != "avg_pool2d" || a.at("count_include_pad").as_bool()) return true;
  for (const Any& p : a.at("padding").cast<loom::Array>())
    if (p.as_int() != 0) return false;  // the mean over the window's inside: not in version 1
  return true;
}

// Whether `bias`, broadcast (aligned right) against a result of rank
// `rank` whose axis 1 is the channels, is one value per channel: extent
// `channels` on axis 1, 1 on every other axis ((O, 1, 1) and (1, O, 1, 1)
// for a convolution, (F) and (1, F) for dense; not (O, 1, 1, 1)).
bool per_channel(const std::vector<int64_t>& bias, size_t rank, int64_t channels) {
  if (bias.size() > rank) return false;
  for (size_t j = 0; j < bias.size(); ++j) {
    size_t axis = rank - bias.size() + j;
    if (bias[j] != (axis == 1 ? channels : 1)) return false;
  }
  return rank - bias.size() <= 1 || channels == 1;  // axis 1 is the bias's, unless there is one channel
}

// Every call of a match, by its operator: shapes constant, float32, the
// layouts and groupings the NPU has; an add after a convolution or dense
// is a per-channel bias.
bool supported(const loom::graph::Match& m) {
  int64_t channels = -1;  // of the anchor's result, for a bias
  for (size_t k = 0; k < m.calls.size(); ++k) {
    const auto* c = as_call(m.calls[k]);
    const std::string& op = c->callee.as<loom::ir::OpNode>()->name;
    auto out = static_shape(m.calls[k]);
    if (!out) return false;
    for (const Any& a : c->args)
      if (!shape_of(a)) return false;
    if (op == "conv2d") {
      if (!conv_supported(*c)) return false;
      channels = (*out)[1];
    } else if (op == "dense" || op == "matmul") {
      if (shape_of(c->args[0])->size() != 2 || shape_of(c->args[1])->size() != 2) return false;
      channels = (*out)[1];
    } else if (op == "add") {
      auto a = shape_of(c->args[0]), b = shape_of(c->args[1]);
      if (k > 0 && channels > 0) {
        if (!per_channel(*b, out->size(), channels)) return false;
      } else if (*a != *b) {
        return false;  // the NPU adds tensors of one shape
      }
    } else if (op == "max_pool2d" || op == "avg_pool2d" || op == "global_avg_pool2d") {
      if (!pool_supported(op, *c)) return false;
    } else if (op != "relu" && op != "clip") {
      return false;
    }
  }
  return true;
}

// ---- the integer mode (docs/npu-spec.md, "Integers") ------------------------

// The constant extents of a value's tensor type (any dtype), and the dtype.
std::optional<std::pair<std::vector<int64_t>, loom::DataType>> extents(const Any& a) {
  return constant_extents(a.cast<loom::ir::Expr>());
}

bool is_8bit(loom::DataType t) { return t == loom::DataType::Int(8) || t == loom::DataType::UInt(8); }

// A constant of `n` elements (any n when n < 0) of dtype `t`.
bool constant_of(const Any& a, loom::DataType t, int64_t n) {
  const auto* c = a.as_object_ref().as<loom::graph::ConstantNode>();
  return c && c->data->dtype == t && (n < 0 || c->data->numel() == n);
}
bool constant_8bit_scalar(const Any& a) {
  return constant_of(a, loom::DataType::Int(8), 1) || constant_of(a, loom::DataType::UInt(8), 1);
}

// Every call of an int8 match: what QDQToInteger leaves of a quantized
// layer, with constant shapes, zero points and output scales the NPU
// takes as immediates, and a per-channel scale and bias.
bool int8_supported(const loom::graph::Match& m) {
  using loom::DataType;
  int64_t channels = -1;  // of the product's result
  for (const Any& call : m.calls) {
    const auto* c = as_call(call.cast<loom::ir::Expr>());
    const std::string& op = c->callee.as<loom::ir::OpNode>()->name;
    auto out = extents(call);
    if (!out) return false;
    std::vector<std::optional<std::pair<std::vector<int64_t>, DataType>>> args;
    for (const Any& a : c->args) {
      args.push_back(extents(a));
      if (!args.back()) return false;
    }
    if (op == "cast") {
      // x widened for its zero point, or the int32 sums to fp32.
      bool widen = is_8bit(args[0]->second) && out->second == DataType::Int(16);
      bool to_float = args[0]->second == DataType::Int(32) && out->second == DataType::Float(32);
      if (!widen && !to_float) return false;
    } else if (op == "subtract") {
      if (!constant_of(c->args[1], DataType::Int(16), 1)) return false;
    } else if (op == "conv2d" || op == "dense" || op == "matmul") {
      if (out->second != DataType::Int(32) || !is_8bit(args[1]->second)) return false;
      if (!is_8bit(args[0]->second) && args[0]->second != DataType::Int(16)) return false;  // int16: x - zero point
      if (op == "conv2d") {
        Map a = loom::ir::OpRegistry::check_attrs("conv2d", c->attrs);
        const auto &x = args[0]->first, &w = args[1]->first;
        if (a.at("data_layout").as_string() != "NCHW" || a.at("kernel_layout").as_string() != "OIHW") return false;
        if (x.size() != 4 || w.size() != 4) return false;
        int64_t groups = a.at("groups").as_int();
        if (groups != 1 && !(groups == x[1] && w[0] == x[1] && w[1] == 1)) return false;
      } else if (args[0]->first.size() != 2 || args[1]->first.size() != 2) {
        return false;
      }
      channels = out->first[1];
    } else if (op == "multiply") {
      // sx * sw: one value, or one per output channel.
      const auto* s = c->args[1].as_object_ref().as<loom::graph::ConstantNode>();
      if (!s || s->data->dtype != DataType::Float(32) || channels < 0) return false;
      if (s->data->numel() != 1 && !per_channel(s->data.shape_vector(), out->first.size(), channels)) return false;
    } else if (op == "add") {
      if (channels > 0) {  // a bias
        if (args[1]->second != DataType::Float(32) || !per_channel(args[1]->first, out->first.size(), channels))
          return false;
      } else if (args[0]->first != args[1]->first) {
        return false;  // the NPU adds tensors of one shape
      }
    } else if (op == "dequantize") {
      if (!is_8bit(args[0]->second) || !constant_of(c->args[1], DataType::Float(32), 1) ||
          !constant_8bit_scalar(c->args[2]))
        return false;
    } else if (op == "max_pool2d") {
      if (!pool_supported(op, *c)) return false;
    } else if (op == "quantize") {
      if (!constant_of(c->args[1], DataType::Float(32), 1) || !constant_8bit_scalar(c->args[2])) return false;
    } else if (op != "relu" && op != "clip") {
      return false;
    }
  }
  return true;
}

void register_pattern_table() {
  using namespace loom::graph;
  auto act = [](const Pattern& inner) { return op("relu", {inner}) | op("clip", {inner}); };
  std::vector<PatternEntry> entries;
  // The integer mode first: its layers are longer than the fp32 ones
  // inside them.  Each product with or without a bias, an activation and
  // the requantization, the longest first.
  for (const char* anchor : {"conv2d", "dense", "matmul"}) {
    Pattern x = op("subtract", {op("cast", {wildcard()}), wildcard()}) | wildcard();  // x - zero point, or x
    Pattern product = op(anchor, {x, wildcard()}).has_attr("out_dtype", Any(std::string("int32")));
    Pattern scaled = op("multiply", {op("cast", {product}), wildcard()});
    for (int requantized = 1; requantized >= 0; --requantized)
      for (int biased = 1; biased >= 0; --biased)
        for (int activated = 1; activated >= 0; --activated) {
          Pattern p = biased ? op("add", {scaled, wildcard()}) : scaled;
          if (activated) p = act(p);
          if (requantized) p = op("quantize", {p, wildcard(), wildcard()});
          std::string name = std::string("npu.int8_") + anchor + (biased ? "_bias" : "") + (activated ? "_act" : "") +
                             (requantized ? "_quantize" : "");
          entries.push_back({name, p, int8_supported});
        }
  }
  auto dequantized = [] { return op("dequantize", {wildcard(), wildcard(), wildcard()}); };  // one per operand
  Pattern sum = op("add", {dequantized(), dequantized()});
  entries.push_back({"npu.int8_add_act_quantize", op("quantize", {act(sum), wildcard(), wildcard()}), int8_supported});
  entries.push_back({"npu.int8_add_quantize", op("quantize", {sum, wildcard(), wildcard()}), int8_supported});
  entries.push_back(
      {"npu.int8_act_quantize", op("quantize", {act(dequantized()), wildcard(), wildcard()}), int8_supported});
  entries.push_back({"npu.int8_max_pool2d_quantize",
                     op("quantize", {op("max_pool2d", {dequantized()}), wildcard(), wildcard()}), int8_supported});
  // Max pooling of the integers themselves (QDQToInteger's, between a
  // dequantize and a quantize of one scale and zero point).
  entries.push_back({"npu.int8_max_pool2d", op("max_pool2d", {wildcard()}), [](const loom::graph::Match& m) {
                       auto x = extents(as_call(m.calls[0])->args[0]);
                       return x && is_8bit(x->second) && int8_supported(m);
                     }});
  Pattern conv = op("conv2d", {wildcard(), wildcard()});
  Pattern dense = op("dense", {wildcard(), wildcard()});
  Pattern add = op("add", {wildcard(), wildcard()});
  std::vector<PatternEntry> fp32 = {
      {"npu.conv2d_bias_act", act(op("add", {conv, wildcard()})), supported},
      {"npu.conv2d_bias", op("add", {conv, wildcard()}), supported},
      {"npu.conv2d_act", act(conv), supported},
      {"npu.dense_bias_act", act(op("add", {dense, wildcard()})), supported},
      {"npu.dense_bias", op("add", {dense, wildcard()}), supported},
      {"npu.dense_act", act(dense), supported},
      {"npu.add_act", act(add), supported},
      {"npu.conv2d", conv, supported},
      {"npu.dense", dense, supported},
      {"npu.matmul", op("matmul", {wildcard(), wildcard()}), supported},
      {"npu.add", add, supported},
      {"npu.relu", op("relu", {wildcard()}), supported},
      {"npu.clip", op("clip", {wildcard()}), supported},
      {"npu.max_pool2d", op("max_pool2d", {wildcard()}), supported},
      {"npu.avg_pool2d", op("avg_pool2d", {wildcard()}), supported},
      {"npu.global_avg_pool2d", op("global_avg_pool2d", {wildcard()}), supported},
  };
  entries.insert(entries.end(), fp32.begin(), fp32.end());
  PatternTableRegistry::register_table("npu", std::move(entries));
}

// ---- the runtime module ----------------------------------------------------

Machine machine_of(const loom::target::Target& t) {
  Machine m;
  m.scratchpad_words = t.attr("scratchpad-kib").as_int() * 1024 / 4;
  m.rows = t.attr("mac-rows").as_int();
  m.cols = t.attr("mac-cols").as_int();
  m.dma_bytes_per_cycle = t.attr("dma-bytes-per-cycle").as_int();
  m.dma_latency = t.attr("dma-latency").as_int();
  return m;
}

loom::runtime::DpsSignature signature_of(const loom::graph::FunctionNode& f) {
  loom::runtime::DpsSignature sig;
  auto add = [&](const loom::ir::Type& t) {
    const auto* tt = t.as<loom::ir::TensorTypeNode>();
    if (!tt || tt->unknown_rank()) LOOM_THROW(Error) << "a region exchanges tensors of known rank";
    loom::runtime::DpsTensor d;
    d.dtype = tt->dtype;
    for (const Any& dim : tt->shape) {
      const auto* imm = dim.as_object_ref().as<loom::tir::IntImmNode>();
      if (!imm) LOOM_THROW(Error) << "the npu takes tensors of constant shape";
      d.dims.push_back(imm->value);
      d.dim_vars.push_back(-1);
    }
    sig.params.push_back(d);
  };
  for (const Any& p : f.params) {
    const auto* v = p.as_object_ref().as<loom::graph::VarNode>();
    add(v->checked_type.defined() ? v->checked_type : v->annotation);
  }
  if (const auto* tuple = f.ret_type.as<loom::ir::TupleTypeNode>()) {
    for (const Any& t : tuple->fields) add(t.cast<loom::ir::Type>());
  } else {
    add(f.ret_type);
  }
  return sig;
}

// The codegen: every region of the module (its composites come with it).
loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  Machine machine = machine_of(target);
  std::vector<Any> regions;
  for (const std::string& name : module.names()) {
    loom::ir::BaseFunc f = module.lookup(name);
    const auto* g = f.as<loom::graph::FunctionNode>();
    if (!g || loom::graph::codegen_of(f) != "npu") {
      LOOM_THROW(Error) << "npu: @" << name
                        << " is not an npu region; the npu codegen compiles what partitioning gives "
                        << "it (target.partition: [npu], docs/partitioning.md)";
    }
    if (g->attrs.contains("composite")) continue;  // compiled as part of its region
    Stream stream = compile_region(module, name, machine);
    loom::runtime::DpsSignature signature = signature_of(*g);
    std::vector<std::string> args(signature.params.size(), "buffer");
    regions.emplace_back(loom::runtime::Kernel(name, args, "", loom::runtime::Bytes(encode(stream)),
                                               Map{{"signature", Any(signature.serialize())}}));
  }
  loom::Array m{Any(machine.scratchpad_words), Any(machine.rows), Any(machine.cols), Any(machine.dma_bytes_per_cycle),
                Any(machine.dma_latency)};
  return loom::FunctionRegistry::get("npu.make_module")(loom::Array(regions), m).cast<loom::runtime::Module>();
}

}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("npu") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("The reference NPU: pattern table npu and a command-stream codegen; "
                                                 "its runtime is the plugin npu_runtime (docs/npu.md)")
                             LOOM_PLUGIN_REQUIRES("npu_runtime"));

LOOM_PLUGIN_INIT(ctx) {
  register_pattern_table();
  loom::target::TargetTraits traits;  // its memory is host memory
  traits.partition_only = true;
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("npu")
          .attrs(
              {loom::SchemaField{"scratchpad-kib", "int", int64_t{256}, "on-chip scratchpad, KiB"}.between(1, 1 << 20),
               loom::SchemaField{"mac-rows", "int", int64_t{16}, "rows of the matrix unit's MAC array"}.between(1,
                                                                                                                1024),
               loom::SchemaField{"mac-cols", "int", int64_t{16}, "columns of the matrix unit's MAC array"}.between(
                   1, 1024),
               loom::SchemaField{"dma-bytes-per-cycle", "int", int64_t{64}, "DMA bandwidth"}.between(1, 1 << 16),
               loom::SchemaField{"dma-latency", "int", int64_t{64}, "cycles before a DMA transfer's first bytes"}
                   .between(0, 1 << 20)})
          .doc("the reference NPU (docs/npu-spec.md): a partition codegen, named in target.partition: [npu]; compiles "
               "partitioned regions to command streams run by its simulator")
          .traits(traits));
  loom::target::CodegenRegistry::register_codegen(
      "npu", Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                             "npu.codegen"));
}
