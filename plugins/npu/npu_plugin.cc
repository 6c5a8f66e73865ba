// The npu plugin (docs/npu.md, docs/npu-spec.md): the reference NPU as a
// vendor would ship it.  Its pattern table says what the NPU takes
// (partitioning, docs/partitioning.md); its codegen compiles each
// partitioned region into a command stream; its runtime module runs the
// streams on the simulator and keeps their cycle reports.
#include <loom/graph/pattern_table.h>
#include <loom/ir/op.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/device_api.h>
#include <loom/runtime/dps_signature.h>
#include <loom/runtime/module.h>
#include <loom/runtime/ndarray.h>
#include <loom/support/bytes.h>
#include <loom/support/json.h>
#include <loom/support/size.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "codegen.h"
#include "isa.h"
#include "simulator.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using loom::Map;
using loom::ir::IRModule;
using namespace loom::npu;

constexpr const char* kMagic = "LOOMNPU1";
// The device "npu": DLPack has no code for it; the first of the vendor
// range (docs/runtime.md, "Vendor devices").
constexpr int32_t kNpuDevice = loom::Device::kVendorFirst;

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
  auto x = shape_of(c.args[0]);
  if (!x || x->size() != 4 || a.at("layout").as_string() != "NCHW") return false;
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

void register_pattern_table() {
  using namespace loom::graph;
  auto act = [](const Pattern& inner) { return op("relu", {inner}) | op("clip", {inner}); };
  Pattern conv = op("conv2d", {wildcard(), wildcard()});
  Pattern dense = op("dense", {wildcard(), wildcard()});
  Pattern add = op("add", {wildcard(), wildcard()});
  std::vector<PatternEntry> entries = {
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
  PatternTableRegistry::register_table("npu", std::move(entries));
}

// ---- the device ------------------------------------------------------------

// The NPU's device memory (docs/npu.md, "The device"): the vendor device
// "npu", whose memory here is host memory, so arrays placed on it are
// handed to the simulator as they are and copies are memcpy.
class NpuDeviceAPI : public loom::runtime::DeviceAPI {
 public:
  void* alloc(loom::Device, size_t bytes, size_t alignment) override {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) {
      LOOM_THROW(Error) << "npu: alignment " << alignment << " is not a power of two of at least " << sizeof(void*);
    }
    if (bytes > loom::kMaxTensorBytes) {
      LOOM_THROW(Error) << "npu: cannot allocate " << loom::readable_bytes(bytes) << ": more than Loom allocates";
    }
    void* p = std::aligned_alloc(alignment, (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment);
    if (!p) LOOM_THROW(Error) << "npu: cannot allocate " << loom::readable_bytes(bytes) << ": out of memory";
    return p;
  }
  void free(loom::Device, void* ptr) override { std::free(ptr); }
  void copy(const DLTensor& from, DLTensor& to, void*) override {
    size_t bytes = (from.dtype.bits * from.dtype.lanes + 7) / 8;
    for (int i = 0; i < from.ndim; ++i) bytes *= static_cast<size_t>(from.shape[i]);
    if (bytes) {
      std::memcpy(static_cast<char*>(to.data) + to.byte_offset, static_cast<const char*>(from.data) + from.byte_offset,
                  bytes);
    }
  }
  void synchronize(loom::Device, void*) override {}  // the simulator runs in the caller's thread
  void* alloc_workspace(loom::Device, size_t bytes) override { return pool_.alloc(bytes); }
  void free_workspace(loom::Device, void* ptr) override { pool_.release(ptr); }

 private:
  loom::runtime::WorkspacePool pool_{[](size_t bytes) {
                                       void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
                                       if (!p) LOOM_THROW(Error) << "npu: out of memory for a workspace";
                                       return p;
                                     },
                                     [](void* p) { std::free(p); }};
};

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

std::string machine_text(const Machine& m) {
  return std::to_string(m.scratchpad_words) + " " + std::to_string(m.rows) + " " + std::to_string(m.cols) + " " +
         std::to_string(m.dma_bytes_per_cycle) + " " + std::to_string(m.dma_latency);
}

// A cycle report as a JSON object: cycles, MACs, DMA bytes, the matrix
// unit's utilisation, and per instruction class.
std::string profile_text(const Profile& p, const Machine& m) {
  std::ostringstream out;
  out << "{\"cycles\": " << p.cycles << ", \"macs\": " << p.macs << ", \"dma_bytes\": " << p.dma_bytes
      << ", \"matrix_utilisation\": " << p.utilisation(m) << ", \"classes\": {";
  bool first = true;
  for (const auto& [name, c] : p.classes) {
    out << (first ? "" : ", ") << "\"" << name << "\": {\"instructions\": " << c.instructions
        << ", \"cycles\": " << c.cycles << ", \"macs\": " << c.macs << ", \"dma_bytes\": " << c.dma_bytes << "}";
    first = false;
  }
  out << "}}";
  return out.str();
}

struct RegionCode {
  std::string name;
  loom::runtime::DpsSignature signature;
  std::string bytes;  // the command stream
  Stream stream;      // decoded (checked) from bytes
  std::vector<float> constants;
};

RegionCode region_code(std::string name, loom::runtime::DpsSignature signature, std::string bytes) {
  RegionCode r{std::move(name), std::move(signature), std::move(bytes), {}, {}};
  try {
    r.stream = decode(r.bytes);
  } catch (const Error& e) {
    LOOM_THROW(Error) << "npu: region @" << r.name << ": " << e.what();
  }
  r.constants.resize(r.stream.constants.size() / 4);
  std::memcpy(r.constants.data(), r.stream.constants.data(), r.constants.size() * 4);
  return r;
}

class NpuModuleNode : public loom::runtime::ModuleNode {
 public:
  std::vector<RegionCode> regions;
  Machine machine;

  std::string type_key() const override { return "npu"; }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (const RegionCode& r : regions) out.push_back(r.name);
    return out;
  }
  std::optional<Function> own_function(const std::string& name) const override {
    for (size_t k = 0; k < regions.size(); ++k) {
      if (regions[k].name != name) continue;
      loom::ObjectRef self(loom::ObjectPtr<loom::Object>(const_cast<NpuModuleNode*>(this)));
      return Function(
          [self, k](const Any* args, int32_t count) -> Any {
            static_cast<const NpuModuleNode*>(self.get())->call(k, args, count);
            return Any();
          },
          name);
    }
    return std::nullopt;
  }
  std::string save_to_binary() const override {
    std::string out = kMagic;
    loom::put_field(out, machine_text(machine));
    loom::put_field(out, std::to_string(regions.size()));
    for (const RegionCode& r : regions) {
      loom::put_field(out, r.name);
      loom::put_field(out, r.signature.serialize());
      loom::put_field(out, r.bytes);
    }
    return out;
  }
  std::string inspect_source(const std::string& format) const override {
    if (format != "npu") LOOM_THROW(Error) << "npu module: no source format '" << format << "' (it has: npu)";
    std::string out;
    for (const RegionCode& r : regions) out += "; region @" + r.name + "\n" + disassemble(r.stream);
    return out;
  }
  // The last call's cycle report per region, and the calls so far
  // (docs/npu.md, "Profile").
  std::string profile() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::ostringstream out;
    out << "{\"machine\": {\"scratchpad_words\": " << machine.scratchpad_words << ", \"mac_rows\": " << machine.rows
        << ", \"mac_cols\": " << machine.cols << "}, \"regions\": {";
    for (size_t k = 0; k < regions.size(); ++k) {
      out << (k ? ", " : "") << "\"" << regions[k].name << "\": {\"calls\": " << (calls_.size() > k ? calls_[k] : 0)
          << ", " << profile_text(profiles_.size() > k ? profiles_[k] : Profile(), machine).substr(1);
    }
    out << "}}";
    return out.str();
  }
  LOOM_OBJECT(NpuModuleNode, loom::runtime::ModuleNode, "npu.Module");

 private:
  void call(size_t k, const Any* args, int32_t count) const {
    const RegionCode& r = regions[k];
    try {
      // Arrays on the CPU or on the NPU's device (npu, host memory too),
      // checked as host arrays.
      std::vector<const DLTensor*> tensors = loom::runtime::array_arguments(args, count);
      std::vector<DLTensor> host(tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i] || tensors[i]->device.device_type != kNpuDevice) continue;
        host[i] = *tensors[i];
        host[i].device = DLDevice{kDLCPU, 0};
        tensors[i] = &host[i];
      }
      loom::runtime::check_dps_arguments(r.signature, tensors.data(), tensors.size(),
                                         "the npu's device memory is host memory; arrays on the cpu or the "
                                         "npu");
      std::vector<Region> inputs, outputs;
      for (size_t i = 0; i < tensors.size(); ++i) {
        const DLTensor* t = tensors[i];
        uint64_t words = 1;
        for (int d = 0; d < t->ndim; ++d) words *= static_cast<uint64_t>(t->shape[d]);
        Region region{reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset), words};
        (i < r.stream.inputs ? inputs : outputs).push_back(region);
      }
      Profile p = execute(r.stream, inputs, outputs, r.constants, machine);
      std::lock_guard<std::mutex> lock(mutex_);
      if (profiles_.size() < regions.size()) profiles_.resize(regions.size()), calls_.resize(regions.size());
      profiles_[k] = p;  // the last call's
      ++calls_[k];
    } catch (const Error& e) {
      LOOM_THROW(Error) << "npu: @" << r.name << ": " << e.what();
    }
  }

  mutable std::mutex mutex_;
  mutable std::vector<Profile> profiles_;
  mutable std::vector<int64_t> calls_;
};

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

loom::runtime::Module make_module(std::vector<RegionCode> regions, const Machine& machine) {
  auto node = loom::make_object<NpuModuleNode>();
  node->regions = std::move(regions);
  node->machine = machine;
  return loom::runtime::Module(node);
}

// The codegen: every region of the module (its composites come with it).
loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  Machine machine = machine_of(target);
  std::vector<RegionCode> regions;
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
    regions.push_back(region_code(name, signature_of(*g), encode(stream)));
  }
  return make_module(std::move(regions), machine);
}

loom::runtime::Module load(const std::string& bytes) {
  std::string_view in(bytes);
  auto bad = [](const std::string& what) -> void {
    LOOM_THROW(Error) << "npu module: malformed bytes (" << what << ")";
  };
  if (in.substr(0, std::strlen(kMagic)) != kMagic) bad("no magic");
  size_t at = std::strlen(kMagic);
  std::string machine_field, count;
  if (!loom::take_field(in, at, machine_field) || !loom::take_field(in, at, count)) bad("header");
  Machine m;
  std::istringstream ms(machine_field);
  if (!(ms >> m.scratchpad_words >> m.rows >> m.cols >> m.dma_bytes_per_cycle >> m.dma_latency)) bad("machine");
  size_t n = 0;
  try {
    n = std::stoul(count);
  } catch (const std::logic_error&) {
    bad("count");
  }
  std::vector<RegionCode> regions;
  for (size_t k = 0; k < n; ++k) {
    std::string name, signature, stream;
    if (!loom::take_field(in, at, name) || !loom::take_field(in, at, signature) || !loom::take_field(in, at, stream)) {
      bad("region " + std::to_string(k));
    }
    regions.push_back(region_code(name, loom::runtime::DpsSignature::parse(signature), stream));
  }
  return make_module(std::move(regions), m);
}

}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("npu") LOOM_PLUGIN_VERSION("0.1.0")
                         LOOM_PLUGIN_DESCRIPTION("The reference NPU: pattern table npu, a command-stream codegen and a "
                                                 "cycle-counting simulator (docs/npu.md)"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<NpuModuleNode>();
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
  loom::Device::register_type("npu", kNpuDevice);
  loom::runtime::DeviceAPIRegistry::register_api("npu", std::make_shared<NpuDeviceAPI>());
  loom::target::CodegenRegistry::register_codegen(
      "npu", Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                             "npu.codegen"));
  loom::runtime::ModuleLoaderRegistry::register_loader(
      "npu", Function::typed([](std::string bytes) { return load(bytes); }, "npu.load"));
  // A command stream run by hand (docs/npu.md, "Writing a stream by hand"):
  // the stream's bytes, its inputs and outputs (float32 CPU tensors, in
  // order), the device's scratchpad in KiB; returns the cycle report as
  // JSON.
  loom::FunctionRegistry::register_function(
      "npu.run_stream",
      Function::typed(
          [](std::string bytes, loom::Array inputs, loom::Array outputs, int64_t scratchpad_kib) {
            Machine m;
            m.scratchpad_words = scratchpad_kib * 1024 / 4;
            RegionCode code = region_code("stream", {}, std::move(bytes));
            auto regions = [](const loom::Array& arrays) {
              std::vector<Region> out;
              for (const Any& a : arrays) {
                auto nd = a.cast<loom::runtime::NDArray>();
                if (nd->dtype != loom::DataType::Float(32) || nd->device.device_type != kDLCPU) {
                  LOOM_THROW(Error) << "npu.run_stream takes float32 tensors on the CPU";
                }
                out.push_back(Region{static_cast<float*>(const_cast<loom::runtime::NDArrayNode*>(nd.get())->data()),
                                     static_cast<uint64_t>(nd->numel())});
              }
              return out;
            };
            Profile p = execute(code.stream, regions(inputs), regions(outputs), code.constants, m);
            return profile_text(p, m);
          },
          "npu.run_stream"),
      "runs a command stream (bytes) on inputs and outputs (float32 CPU arrays) with a scratchpad of N KiB; "
      "returns its cycle report as JSON");
  // A command stream checked and disassembled, as loomc inspect shows it.
  loom::FunctionRegistry::register_function(
      "npu.disassemble",
      Function::typed([](std::string bytes) { return disassemble(decode(bytes)); }, "npu.disassemble"),
      "a command stream (bytes) checked and disassembled");
}
