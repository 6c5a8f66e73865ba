// Vulkan (bench/README.md): Loom against raw Vulkan, and Loom's vulkan
// target against its opencl and llvm targets, in the same run, on the
// first Vulkan device (lavapipe on this CPU; any driver).
//
// 1. Dispatch overhead: the host function of a one-kernel prim function
//    (B = A + 1 over 256 floats, built for vulkan with an llvm host): its
//    argument checks, launch sizes and tir.launch, which records the
//    dispatch (descriptor set, pipeline, barrier) into the device's batch;
//    K calls, then one synchronize.  Peer: the same SPIR-V (the module's
//    GLSL compiled by glslc) in raw Vulkan on its own device: K dispatches
//    (bind pipeline, bind a prepared descriptor set, dispatch, barrier)
//    recorded into one command buffer, submitted, waited for.  Per
//    dispatch; target: at most 1.2x.
// 2. Models: matmul 1024^3 fp32 and a ResNet basic block (64 channels,
//    56x56: conv3x3, relu, conv3x3, add, relu), built for vulkan, opencl
//    and llvm and called on host arrays (a device target's call includes
//    its copies in and out).  Milliseconds and the ratios vulkan/opencl
//    and vulkan/llvm; the outputs are checked against llvm's.
//
// The host (and the CPU reference) is llvm, or LOOM_BENCH_HOST (c).
//
// Prints medians and ratios.  Usage: [LOOM_BENCH_HOST=c] [LOOM_BENCH_TILE_THREADS=N]
//   loom_bench_vulkan [RUNS [dispatch|models]]
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/ndarray.h"

using namespace loom;
using namespace loom::runtime;
namespace fs = std::filesystem;

namespace {
using loom::bench::median;
using loom::bench::time_ns;

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) {
    std::fprintf(stderr, "raw Vulkan: %s failed (%d)\n", what, static_cast<int>(r));
    std::exit(1);
  }
}

Module build(const std::string& text, const std::string& kind) {
  std::string config = kind == loom::bench::host_kind() ? loom::bench::host_config() : loom::bench::device_config(kind);
  return driver::build(text::parse_module(text, "<bench>"), config::parse_config(config, "<bench config>"));
}

// Raw Vulkan on the first device: one compute queue, host-visible buffers.
struct Raw {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  std::string name;
  VkPhysicalDeviceMemoryProperties memory{};

  Raw() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    check(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance");
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &physical);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
      std::fprintf(stderr, "no Vulkan device: install mesa-vulkan-drivers\n");
      std::exit(1);
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical, &props);
    name = props.deviceName;
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> qf(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, qf.data());
    while (family < families && !(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    VkPhysicalDeviceFeatures features{};
    features.shaderInt64 = VK_TRUE;  // the kernels' index arithmetic
    VkDeviceCreateInfo d{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    d.queueCreateInfoCount = 1;
    d.pQueueCreateInfos = &q;
    d.pEnabledFeatures = &features;
    check(vkCreateDevice(physical, &d, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, family, 0, &queue);
  }

  VkBuffer buffer(size_t bytes, VkDeviceMemory* out) {
    VkBufferCreateInfo b{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    b.size = bytes;
    b.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer buf;
    check(vkCreateBuffer(device, &b, nullptr, &buf), "vkCreateBuffer");
    VkMemoryRequirements needs;
    vkGetBufferMemoryRequirements(device, buf, &needs);
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (type < memory.memoryTypeCount &&
           !((needs.memoryTypeBits & (1u << type)) && (memory.memoryTypes[type].propertyFlags & want) == want)) {
      ++type;
    }
    VkMemoryAllocateInfo a{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    a.allocationSize = needs.size;
    a.memoryTypeIndex = type;
    check(vkAllocateMemory(device, &a, nullptr, out), "vkAllocateMemory");
    check(vkBindBufferMemory(device, buf, *out, 0), "vkBindBufferMemory");
    return buf;
  }
};

// SPIR-V of a GLSL compute shader, by glslc (Debian's glslc).
std::vector<uint32_t> glslc(const std::string& glsl) {
  fs::path dir = fs::temp_directory_path() / ("loom_bench_vulkan_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.comp") << glsl;
  std::string cmd = "glslc --target-env=vulkan1.2 -O -o " + (dir / "k.spv").string() + " " + (dir / "k.comp").string();
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "glslc failed (install Debian's glslc)\n");
    std::exit(1);
  }
  std::ifstream in(dir / "k.spv", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

void dispatch_overhead(int runs) {
  const int n = 256, launches = 2000;
  Module lib = build(
      "@add1 = prim_func(%A: Buffer[(256), float32], %B: Buffer[(256), float32]) {\n"
      "  for %i: int64 from 0 extent 256 {\n    %B[%i] = %A[%i] + 1.0;\n  }\n}\n",
      "vulkan");
  std::string glsl = lib.imports()[0]->inspect_source("glsl");
  Device vk{Device::kVulkan, 0};
  NDArray host = NDArray::empty({n}, DataType::Float(32));
  for (int i = 0; i < n; ++i) host.data_as<float>()[i] = 1.0f;
  NDArray a = host.copy_to(vk), b = NDArray::empty({n}, DataType::Float(32), vk);
  Function add1 = lib.get_function("add1");
  DeviceAPI& api = DeviceAPIRegistry::get(vk);

  // The raw peer: the same shader, its storage buffers bound by name.
  Raw raw;
  std::printf("  device: %s\n", raw.name.c_str());
  std::vector<uint32_t> spirv = glslc(glsl);
  std::vector<std::string> bound;
  const std::regex binding(R"(binding = \d+\) buffer \w+ \{ \w+ (\w+)\[\])");
  for (auto it = std::sregex_iterator(glsl.begin(), glsl.end(), binding); it != std::sregex_iterator(); ++it) {
    bound.push_back((*it)[1]);
  }
  VkDeviceMemory ma, mb;
  VkBuffer ra = raw.buffer(n * 4, &ma), rb = raw.buffer(n * 4, &mb);
  void* mapped = nullptr;
  check(vkMapMemory(raw.device, ma, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  for (int i = 0; i < n; ++i) static_cast<float*>(mapped)[i] = 1.0f;
  vkUnmapMemory(raw.device, ma);
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  std::vector<VkDescriptorBufferInfo> infos;
  for (uint32_t k = 0; k < bound.size(); ++k) {
    bindings.push_back({k, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    infos.push_back({bound[k] == "A_data" ? ra : rb, 0, VK_WHOLE_SIZE});
  }
  VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sl.bindingCount = static_cast<uint32_t>(bindings.size());
  sl.pBindings = bindings.data();
  VkDescriptorSetLayout set_layout;
  check(vkCreateDescriptorSetLayout(raw.device, &sl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  VkPipelineLayout layout;
  check(vkCreatePipelineLayout(raw.device, &pl, nullptr, &layout), "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = spirv.size() * 4;
  sm.pCode = spirv.data();
  VkShaderModule shader;
  check(vkCreateShaderModule(raw.device, &sm, nullptr, &shader), "vkCreateShaderModule");
  uint32_t block[3] = {128, 1, 1};  // the launch DefaultDeviceSchedule makes: 2 blocks of 128
  VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
  VkSpecializationInfo spec{3, entries, sizeof block, block};
  VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cp.stage.module = shader;
  cp.stage.pName = "main";
  cp.stage.pSpecializationInfo = &spec;
  cp.layout = layout;
  VkPipeline pipeline;
  check(vkCreateComputePipelines(raw.device, VK_NULL_HANDLE, 1, &cp, nullptr, &pipeline), "vkCreateComputePipelines");
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = 1;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &size;
  VkDescriptorPool pool;
  check(vkCreateDescriptorPool(raw.device, &dp, nullptr, &pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo da{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  da.descriptorPool = pool;
  da.descriptorSetCount = 1;
  da.pSetLayouts = &set_layout;
  VkDescriptorSet set;
  check(vkAllocateDescriptorSets(raw.device, &da, &set), "vkAllocateDescriptorSets");
  std::vector<VkWriteDescriptorSet> writes(infos.size());
  for (size_t k = 0; k < infos.size(); ++k) {
    writes[k] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[k].dstSet = set;
    writes[k].dstBinding = static_cast<uint32_t>(k);
    writes[k].descriptorCount = 1;
    writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[k].pBufferInfo = &infos[k];
  }
  vkUpdateDescriptorSets(raw.device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  VkCommandPoolCreateInfo cpool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpool.queueFamilyIndex = raw.family;
  VkCommandPool commands;
  check(vkCreateCommandPool(raw.device, &cpool, nullptr, &commands), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ca{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ca.commandPool = commands;
  ca.commandBufferCount = 1;
  VkCommandBuffer cmd;
  check(vkAllocateCommandBuffers(raw.device, &ca, &cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  check(vkCreateFence(raw.device, &fi, nullptr, &fence), "vkCreateFence");

  auto raw_run = [&] {
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    for (int i = 0; i < launches; ++i) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
      vkCmdDispatch(cmd, n / 128, 1, 1);
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                           &barrier, 0, nullptr, 0, nullptr);
    }
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    check(vkQueueSubmit(raw.queue, 1, &submit, fence), "vkQueueSubmit");
    check(vkWaitForFences(raw.device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(raw.device, 1, &fence), "vkResetFences");
  };
  auto loom_run = [&] {
    for (int i = 0; i < launches; ++i) add1(a, b);
    api.synchronize(vk, nullptr);
  };
  loom_run();  // warm-up: the pipeline is made on the first launch
  raw_run();
  std::vector<double> loom_ns, raw_ns, ratios;
  for (int r = 0; r < runs; ++r) {  // alternating which goes first
    double x = 0, y = 0;
    if (r % 2) y = time_ns(raw_run) / launches;
    x = time_ns(loom_run) / launches;
    if (r % 2 == 0) y = time_ns(raw_run) / launches;
    loom_ns.push_back(x);
    raw_ns.push_back(y);
    ratios.push_back(x / y);
  }
  NDArray back = b.copy_to(Device());
  check(vkMapMemory(raw.device, mb, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  float raw_result = static_cast<float*>(mapped)[0];
  vkUnmapMemory(raw.device, mb);
  double ratio = median(ratios);
  std::printf("  %-44s %10.2f us | peer %10.2f us | ratio %.2f | target <= 1.2: %s\n",
              "dispatch (B = A + 1, 256 floats), per call:", median(loom_ns) / 1e3, median(raw_ns) / 1e3, ratio,
              ratio <= 1.2 ? "met" : "NOT met");
  std::printf(
      "    (Loom: the host function, then one synchronize per %d calls; peer: %d x (bind pipeline, bind set, "
      "dispatch, barrier) in one command buffer; results %.1f and %.1f)\n",
      launches, launches, static_cast<double>(back.data_as<float>()[0]), static_cast<double>(raw_result));
}

// A model's median time on each target, its outputs against the CPU target's.
void models(int runs) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0, 1);
  auto random = [&](std::vector<int64_t> shape, float scale) {
    NDArray h = NDArray::empty(shape, DataType::Float(32));
    for (int64_t i = 0; i < h->numel(); ++i) h.data_as<float>()[i] = dist(gen) * scale;
    return h;
  };
  struct Case {
    const char* name;
    std::string text;
    std::vector<NDArray> inputs;
  };
  std::vector<Case> cases = {
      {"matmul 1024^3",
       "@main = fn(%a: Tensor[(1024, 1024), float32], %b: Tensor[(1024, 1024), float32]) {\n"
       "  matmul(%a, %b)\n}\n",
       {random({1024, 1024}, 1), random({1024, 1024}, 1)}},
      {"ResNet basic block 64x56x56",
       "@main = fn(%x: Tensor[(1, 64, 56, 56), float32], %w1: Tensor[(64, 64, 3, 3), float32], "
       "%w2: Tensor[(64, 64, 3, 3), float32]) {\n"
       "  %h = relu(conv2d(%x, %w1, padding=[1, 1, 1, 1]));\n"
       "  relu(add(conv2d(%h, %w2, padding=[1, 1, 1, 1]), %x))\n}\n",
       {random({1, 64, 56, 56}, 1), random({64, 64, 3, 3}, 1.0f / 24), random({64, 64, 3, 3}, 1.0f / 24)}}};
  for (const Case& c : cases) {
    std::map<std::string, double> ms;
    NDArray reference;
    double worst = 0;
    const std::string host = loom::bench::host_kind();
    for (const std::string& kind : {host, std::string("opencl"), std::string("vulkan")}) {
      Module lib = build(c.text, kind);
      Function f = lib.get_function("main");
      std::vector<Any> args(c.inputs.begin(), c.inputs.end());
      NDArray out = f.call(args.data(), static_cast<int32_t>(args.size())).cast<NDArray>();  // warm-up
      std::vector<double> times;
      for (int r = 0; r < runs; ++r)
        times.push_back(time_ns([&] { f.call(args.data(), static_cast<int32_t>(args.size())); }) / 1e6);
      ms[kind] = median(times);
      if (!reference.defined()) {
        reference = out;
      } else {
        for (int64_t i = 0; i < out->numel(); ++i) {
          worst = std::max(worst, std::fabs(double(out.data_as<float>()[i]) - reference.data_as<float>()[i]));
        }
      }
    }
    std::printf("  %-32s vulkan %9.1f ms | opencl %9.1f ms | %s %8.1f ms | vulkan/opencl %.2f | vulkan/%s %.2f\n",
                (std::string(c.name) + ":").c_str(), ms["vulkan"], ms["opencl"], host.c_str(), ms[host],
                ms["vulkan"] / ms["opencl"], host.c_str(), ms["vulkan"] / ms[host]);
    std::printf("    (host arrays in and out; largest difference from %s's output %.2g)\n", host.c_str(), worst);
    if (worst > 1e-2) {
      std::fprintf(stderr, "the targets disagree\n");
      std::exit(1);
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 11;
  std::string only = argc > 2 ? argv[2] : "";  // "dispatch" or "models": one figure
  std::printf("Vulkan benchmarks (bench/README.md); %d runs, medians\n", runs);
  if (only.empty() || only == "dispatch") dispatch_overhead(runs);
  if (only.empty() || only == "models") models(std::max(3, runs / 4));
  return 0;
}
