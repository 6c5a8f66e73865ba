// The npu plugin's runtime half (docs/npu.md, "Two plugins"): the NPU's
// device memory (device:npu), the runtime module npu (a
// runtime::KernelModuleNode whose kernels are the regions' command
// streams) and its loader, the simulator that runs the streams, and
// npu.make_module, through which the compiler half (plugin npu) hands
// over what it compiled.  It links libloom_runtime only, so an exported
// library with npu regions runs without the compiler.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/device_api.h>
#include <loom/runtime/dps_signature.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/module.h>
#include <loom/runtime/ndarray.h>
#include <loom/support/size.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "isa.h"
#include "simulator.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using namespace loom::npu;

// The device "npu": DLPack has no code for it; the first of the vendor
// range (docs/runtime.md, "Vendor devices").
constexpr int32_t kNpuDevice = loom::Device::kVendorFirst;

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

// What a region's kernel decodes to when the module is made or loaded.
struct RegionCode {
  loom::runtime::DpsSignature signature;
  Stream stream;                // decoded (checked) from the kernel's binary
  std::vector<Word> constants;  // the constant section, word-aligned
};

RegionCode region_code(const std::string& name, loom::runtime::DpsSignature signature, const std::string& bytes) {
  RegionCode r{std::move(signature), {}, {}};
  try {
    r.stream = decode(bytes);
  } catch (const Error& e) {
    LOOM_THROW(Error) << "npu: region @" << name << ": " << e.what();
  }
  r.constants.resize((r.stream.constants.size() + 3) / 4);
  if (!r.stream.constants.empty())
    std::memcpy(r.constants.data(), r.stream.constants.data(), r.stream.constants.size());
  return r;
}

// The npu's name for a tensor's dtype; an Error for one it has not.
Dtype npu_dtype(DLDataType t, const std::string& where) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return Dtype::kFloat32;
    if (t.code == kDLInt && t.bits == 32) return Dtype::kInt32;
    if (t.code == kDLInt && t.bits == 8) return Dtype::kInt8;
    if (t.code == kDLUInt && t.bits == 8) return Dtype::kUInt8;
  }
  loom::DataType d(static_cast<loom::DataType::Code>(t.code), t.bits, t.lanes);
  LOOM_THROW(Error) << where << " takes float32, int8, uint8 and int32 tensors, got " << d.to_string();
}

// A host tensor as a region argument.
Region region_of(const DLTensor& t, const std::string& where) {
  uint64_t words = 1;
  for (int d = 0; d < t.ndim; ++d) words *= static_cast<uint64_t>(t.shape[d]);
  return Region{static_cast<char*>(t.data) + t.byte_offset, words, npu_dtype(t.dtype, where)};
}

// The regions of a module, each a kernel: its name, one "buffer" per
// tensor of its DPS call, its command stream as binary and its DPS
// signature as attrs["signature"]; the machine they were compiled for.
class NpuModuleNode : public loom::runtime::KernelModuleNode {
 public:
  int64_t scratchpad_words = 0, mac_rows = 0, mac_cols = 0, dma_bytes_per_cycle = 0, dma_latency = 0;

  NpuModuleNode() { launch_dims = 0; }
  std::string type_key() const override { return "npu"; }
  std::string inspect_source(const std::string& format) const override {
    if (format != "npu") LOOM_THROW(Error) << "npu module: no source format '" << format << "' (it has: npu)";
    std::string out;
    for (size_t k = 0; k < kernels.size(); ++k)
      out += "; region @" + kernel(k).name + "\n" + disassemble(code_[k].stream);
    return out;
  }
  // The last call's cycle report per region, and the calls so far
  // (docs/npu.md, "Profile").
  std::string profile() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::ostringstream out;
    out << "{\"machine\": {\"scratchpad_words\": " << machine_.scratchpad_words << ", \"mac_rows\": " << machine_.rows
        << ", \"mac_cols\": " << machine_.cols << "}, \"regions\": {";
    for (size_t k = 0; k < kernels.size(); ++k) {
      out << (k ? ", " : "") << "\"" << kernel(k).name << "\": {\"calls\": " << calls_[k] << ", "
          << profile_text(profiles_[k], machine_).substr(1);
    }
    out << "}}";
    return out.str();
  }
  // The machine checked, each region's signature parsed and stream decoded.
  void restore() override {
    int64_t values[] = {scratchpad_words, mac_rows, mac_cols, dma_bytes_per_cycle};
    for (int64_t v : values) {
      if (v < 1 || v > (int64_t{1} << 40)) LOOM_THROW(Error) << "npu module: a machine parameter is " << v;
    }
    if (dma_latency < 0) LOOM_THROW(Error) << "npu module: a DMA latency of " << dma_latency << " cycles";
    machine_.scratchpad_words = scratchpad_words;
    machine_.rows = mac_rows;
    machine_.cols = mac_cols;
    machine_.dma_bytes_per_cycle = dma_bytes_per_cycle;
    machine_.dma_latency = dma_latency;
    code_.clear();
    for (size_t k = 0; k < kernels.size(); ++k) {
      const loom::runtime::KernelNode& kernel = this->kernel(k);
      if (!kernel.binary.defined() || !kernel.attrs.contains("signature")) {
        LOOM_THROW(Error) << "npu module: region @" << kernel.name << " has no command stream or no signature";
      }
      loom::runtime::DpsSignature signature;
      try {
        signature = loom::runtime::DpsSignature::parse(kernel.attrs.at("signature").cast<std::string>());
      } catch (const Error& e) {
        LOOM_THROW(Error) << "npu module: region @" << kernel.name << ": " << e.what();
      }
      if (signature.params.size() != kernel.args.size()) {
        LOOM_THROW(Error) << "npu module: region @" << kernel.name << " takes " << kernel.args.size()
                          << " arguments but its signature has " << signature.params.size();
      }
      code_.push_back(region_code(kernel.name, std::move(signature), kernel.binary.data()));
    }
    profiles_.assign(kernels.size(), Profile());
    calls_.assign(kernels.size(), 0);
  }
  LOOM_OBJECT(NpuModuleNode, loom::runtime::KernelModuleNode, "npu.Module");
  static void reflect(loom::ReflectionBuilder<NpuModuleNode>& r) {
    r.field("scratchpad_words", &NpuModuleNode::scratchpad_words, "the machine's scratchpad, in words")
        .field("mac_rows", &NpuModuleNode::mac_rows, "rows of its matrix unit")
        .field("mac_cols", &NpuModuleNode::mac_cols, "columns of its matrix unit")
        .field("dma_bytes_per_cycle", &NpuModuleNode::dma_bytes_per_cycle, "its DMA bandwidth")
        .field("dma_latency", &NpuModuleNode::dma_latency, "cycles before a DMA transfer's first bytes");
  }

 protected:
  void launch(size_t k, const loom::runtime::LaunchSizes&, const Any* args) const override {
    const RegionCode& r = code_[k];
    const std::string& name = kernel(k).name;
    try {
      // Arrays on the CPU or on the NPU's device (npu, host memory too),
      // checked as host arrays.
      int32_t count = static_cast<int32_t>(kernel(k).args.size());
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
      for (size_t i = 0; i < tensors.size(); ++i)
        (i < r.stream.inputs ? inputs : outputs).push_back(region_of(*tensors[i], "the npu"));
      Profile p = execute(r.stream, inputs, outputs, r.constants, machine_);
      std::lock_guard<std::mutex> lock(mutex_);
      profiles_[k] = p;  // the last call's
      ++calls_[k];
    } catch (const Error& e) {
      LOOM_THROW(Error) << "npu: @" << name << ": " << e.what();
    }
  }

 private:
  Machine machine_;
  std::vector<RegionCode> code_;  // by kernel index
  mutable std::mutex mutex_;
  mutable std::vector<Profile> profiles_;
  mutable std::vector<int64_t> calls_;
};

}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("npu_runtime") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("The reference NPU's runtime half: device:npu, the runtime module "
                                                 "npu and its loader, the cycle-counting simulator (docs/npu.md)"));

LOOM_PLUGIN_INIT(ctx) {
  loom::Device::register_type("npu", kNpuDevice);
  loom::runtime::DeviceAPIRegistry::register_api("npu", std::make_shared<NpuDeviceAPI>());
  loom::runtime::KernelModuleNode::register_loader<NpuModuleNode>("npu");
  // What the compiler half compiled: (regions as runtime.Kernel objects,
  // [scratchpad words, MAC rows, MAC columns, DMA bytes per cycle, DMA
  // latency]).
  ctx.register_function(
      "npu.make_module",
      [](loom::Array kernels, loom::Array machine) {
        if (machine.size() != 5) LOOM_THROW(Error) << "npu.make_module: the machine is 5 integers";
        auto node = loom::make_object<NpuModuleNode>();
        node->kernels = std::move(kernels);
        int64_t* fields[] = {&node->scratchpad_words, &node->mac_rows, &node->mac_cols, &node->dma_bytes_per_cycle,
                             &node->dma_latency};
        for (size_t i = 0; i < 5; ++i) *fields[i] = machine[i].as_int();
        return loom::runtime::KernelModuleNode::finish(node);
      },
      "an npu module: ([runtime.Kernel...], [scratchpad words, mac rows, mac cols, dma bytes/cycle, dma latency])");
  // A command stream run by hand (docs/npu.md, "Writing a stream by hand"):
  // the stream's bytes, its inputs and outputs (CPU tensors, in
  // order), the device's scratchpad in KiB; returns the cycle report as
  // JSON.
  loom::FunctionRegistry::register_function(
      "npu.run_stream",
      Function::typed(
          [](std::string bytes, loom::Array inputs, loom::Array outputs, int64_t scratchpad_kib) {
            Machine m;
            m.scratchpad_words = scratchpad_kib * 1024 / 4;
            RegionCode code = region_code("stream", {}, bytes);
            auto regions = [](const loom::Array& arrays) {
              std::vector<Region> out;
              for (const Any& a : arrays) {
                auto nd = a.cast<loom::runtime::NDArray>();
                if (nd->device.device_type != kDLCPU) LOOM_THROW(Error) << "npu.run_stream takes tensors on the CPU";
                out.push_back(region_of(nd->dl_tensor(), "npu.run_stream"));
              }
              return out;
            };
            Profile p = execute(code.stream, regions(inputs), regions(outputs), code.constants, m);
            return profile_text(p, m);
          },
          "npu.run_stream"),
      "runs a command stream (bytes) on inputs and outputs (float32, int8, uint8 or int32 CPU arrays) with a "
      "scratchpad of N KiB; "
      "returns its cycle report as JSON");
  // A command stream checked and disassembled, as loomc inspect shows it.
  loom::FunctionRegistry::register_function(
      "npu.disassemble",
      Function::typed([](std::string bytes) { return disassemble(decode(bytes)); }, "npu.disassemble"),
      "a command stream (bytes) checked and disassembled");
}
