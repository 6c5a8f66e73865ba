// OpenCL (bench/README.md): Loom against raw OpenCL and CLBlast in the same
// run, on the first OpenCL device (PoCL on this CPU; any driver).
//
// 1. Launch overhead: the host function of a one-kernel prim function
//    (B = A + 1 over 256 floats, built for opencl with an llvm host): its
//    argument checks, launch sizes and tir.launch, which sets the kernel's
//    arguments and enqueues it; K calls, then one synchronize.  Peer: the
//    same OpenCL C kernel (the module's source) built with raw OpenCL,
//    clSetKernelArg + clEnqueueNDRangeKernel K times, then clFinish.  Per
//    launch; target: at most 1.2x.
// 2. matmul 1024^3 fp32: the kernel DefaultDeviceSchedule gives `matmul`
//    (the host function called on device arrays, then synchronize) against
//    CLBlast's SGEMM on the same device (libclblast-dev), both checked
//    against each other.  GFLOP/s; the issue aims at 0.8x CLBlast.
//
// Prints medians and ratios.  Usage: [LOOM_BENCH_HOST=c] [LOOM_BENCH_TILE_THREADS=N]
//   loom_bench_opencl [RUNS [launch|matmul]]
#include <CL/cl.h>
#include <clblast_c.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
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

namespace {
using loom::bench::median;
using loom::bench::time_ns;

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) {
    std::fprintf(stderr, "raw OpenCL: %s failed (%d)\n", what, status);
    std::exit(1);
  }
}

Module build(const std::string& text) {
  return driver::build(text::parse_module(text, "<bench>"),
                       config::parse_config(loom::bench::device_config("opencl"), "<bench config>"));
}

// The raw OpenCL side: the first device of the first platform that has
// one (as device:opencl numbers them), a context and an in-order queue.
struct Raw {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string name;

  Raw() {
    cl_uint count = 0;
    check(clGetPlatformIDs(0, nullptr, &count), "clGetPlatformIDs");
    std::vector<cl_platform_id> platforms(count);
    check(clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs");
    for (cl_platform_id p : platforms) {
      cl_uint n = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &device, &n) == CL_SUCCESS && n > 0) break;
    }
    if (!device) check(CL_DEVICE_NOT_FOUND, "finding a device");
    char text[256] = {};
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof(text) - 1, text, nullptr);
    name = text;
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    queue = clCreateCommandQueue(context, device, 0, &status);
    check(status, "clCreateCommandQueue");
  }
  ~Raw() {
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
  cl_mem buffer(size_t bytes, const void* data = nullptr) {
    cl_int status = CL_SUCCESS;
    cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE | (data ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              const_cast<void*>(data), &status);
    check(status, "clCreateBuffer");
    return m;
  }
  cl_kernel kernel(const std::string& source, const std::string& name) {
    cl_int status = CL_SUCCESS;
    const char* text = source.c_str();
    cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &status);
    check(status, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, "", nullptr, nullptr), "clBuildProgram");
    cl_kernel k = clCreateKernel(program, name.c_str(), &status);
    check(status, "clCreateKernel");
    clReleaseProgram(program);
    return k;
  }
};

// The parameter names of `kernel` in the OpenCL C source, in order.
std::vector<std::string> parameter_names(const std::string& source, const std::string& kernel) {
  size_t at = source.find("void " + kernel + "(");
  size_t open = source.find('(', at), close = source.find(')', open);
  std::vector<std::string> names;
  std::string params = source.substr(open + 1, close - open - 1);
  for (size_t start = 0; start <= params.size();) {
    size_t comma = params.find(',', start);
    std::string p = params.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    names.push_back(p.substr(p.find_last_of(" *") + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

void launch_overhead(Raw& raw, int runs) {
  const int n = 256, launches = 2000;
  Module lib = build(
      "@add1 = prim_func(%A: Buffer[(256), float32], %B: Buffer[(256), float32]) {\n"
      "  for %i: int64 from 0 extent 256 {\n    %B[%i] = %A[%i] + 1.0;\n  }\n}\n");
  std::string source = lib.imports()[0]->inspect_source("opencl");
  Device cl{Device::kOpenCL, 0};
  NDArray a = NDArray::empty({n}, DataType::Float(32), cl), b = NDArray::empty({n}, DataType::Float(32), cl);
  Function add1 = lib.get_function("add1");
  DeviceAPI& api = DeviceAPIRegistry::get(cl);

  std::vector<float> host(n, 1.0f);
  cl_mem ra = raw.buffer(n * 4, host.data()), rb = raw.buffer(n * 4);
  cl_kernel k = raw.kernel(source, "add1_kernel0");
  std::map<std::string, cl_mem> by_name{{"A_data", ra}, {"B_data", rb}};
  std::vector<std::string> params = parameter_names(source, "add1_kernel0");
  size_t global = n, local = 128;  // the launch DefaultDeviceSchedule makes: 2 blocks of 128

  std::vector<cl_mem> args;
  for (const std::string& p : params) args.push_back(by_name.at(p));
  auto loom_run = [&] {
    for (int i = 0; i < launches; ++i) add1(a, b);
    api.synchronize(cl, nullptr);
  };
  auto raw_run = [&] {
    for (int i = 0; i < launches; ++i) {
      for (size_t p = 0; p < args.size(); ++p) {
        check(clSetKernelArg(k, static_cast<cl_uint>(p), sizeof(cl_mem), &args[p]), "clSetKernelArg");
      }
      check(clEnqueueNDRangeKernel(raw.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
            "clEnqueueNDRangeKernel");
    }
    check(clFinish(raw.queue), "clFinish");
  };
  loom_run();  // warm-up
  raw_run();
  // The two alternate which goes first, so neither always runs on a
  // device the other just left busy.
  std::vector<double> loom_ns, raw_ns;
  for (int r = 0; r < runs; ++r) {
    if (r % 2) raw_ns.push_back(time_ns(raw_run) / launches);
    loom_ns.push_back(time_ns(loom_run) / launches);
    if (r % 2 == 0) raw_ns.push_back(time_ns(raw_run) / launches);
  }
  // Both computed A + 1.
  std::vector<float> got(n), want(n);
  NDArray back = b.copy_to(Device());
  check(clEnqueueReadBuffer(raw.queue, rb, CL_TRUE, 0, n * 4, want.data(), 0, nullptr, nullptr), "read");
  // The ratio: the median of each round's (the two ran back to back), so a
  // change in the machine's load between rounds cancels out.
  std::vector<double> ratios;
  for (int r = 0; r < runs; ++r) ratios.push_back(loom_ns[r] / raw_ns[r]);
  double l = median(loom_ns), p = median(raw_ns), ratio = median(ratios);
  std::printf("  %-44s %10.2f us | peer %10.2f us | ratio %.2f | target <= 1.2: %s\n",
              "launch (B = A + 1, 256 floats), per call:", l / 1e3, p / 1e3, ratio, ratio <= 1.2 ? "met" : "NOT met");
  std::printf(
      "    (Loom: the host function, then one synchronize per %d calls; peer: clSetKernelArg x %zu + "
      "clEnqueueNDRangeKernel, then clFinish; raw result %.1f)\n",
      launches, params.size(), static_cast<double>(want[0]));
  clReleaseKernel(k);
  clReleaseMemObject(ra);
  clReleaseMemObject(rb);
}

void matmul(Raw& raw, int runs) {
  const int n = 1024;
  Module vm = build(
      "@main = fn(%a: Tensor[(1024, 1024), float32], %b: Tensor[(1024, 1024), float32]) {\n"
      "  matmul(%a, %b)\n}\n");
  Module host = vm.imports()[0];
  std::string name = host->function_names().at(0);
  Function f = host.get_function(name);

  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> ha(n * n), hb(n * n);
  for (float& v : ha) v = dist(gen);
  for (float& v : hb) v = dist(gen);
  Device cl{Device::kOpenCL, 0};
  auto on_device = [&](const std::vector<float>& values) {
    NDArray h = NDArray::empty({n, n}, DataType::Float(32));
    std::copy(values.begin(), values.end(), h.data_as<float>());
    return h.copy_to(cl);
  };
  NDArray a = on_device(ha), b = on_device(hb), c = NDArray::empty({n, n}, DataType::Float(32), cl);
  DeviceAPI& api = DeviceAPIRegistry::get(cl);

  cl_mem ra = raw.buffer(ha.size() * 4, ha.data()), rb = raw.buffer(hb.size() * 4, hb.data()),
         rc = raw.buffer(ha.size() * 4);
  auto sgemm = [&] {
    cl_event event = nullptr;
    CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f, ra,
                                       0, n, rb, 0, n, 0.0f, rc, 0, n, &raw.queue, &event);
    if (s != CLBlastSuccess) {
      std::fprintf(stderr, "CLBlastSgemm failed (%d)\n", static_cast<int>(s));
      std::exit(1);
    }
    check(clWaitForEvents(1, &event), "clWaitForEvents");
    clReleaseEvent(event);
  };
  auto loom_call = [&] {
    f(a, b, c);
    api.synchronize(cl, nullptr);
  };
  loom_call();  // warm-up (CLBlast compiles its kernels on its first call)
  sgemm();
  std::vector<double> loom_ms, peer_ms;
  for (int r = 0; r < runs; ++r) {
    loom_ms.push_back(time_ns(loom_call) / 1e6);
    peer_ms.push_back(time_ns(sgemm) / 1e6);
  }
  std::vector<float> want(n * n);
  check(clEnqueueReadBuffer(raw.queue, rc, CL_TRUE, 0, want.size() * 4, want.data(), 0, nullptr, nullptr), "read");
  NDArray got = c.copy_to(Device());
  // Both against each other, and a few entries against a double-precision dot product.
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::fabs(double(got.data_as<float>()[i]) - want[i]));
  for (int i : {0, 517, n * n - 1}) {
    double dot = 0;
    for (int k = 0; k < n; ++k) dot += double(ha[(i / n) * n + k]) * hb[k * n + i % n];
    worst = std::max(worst, std::fabs(dot - got.data_as<float>()[i]));
  }
  double flop = 2.0 * n * n * n, l = flop / median(loom_ms) / 1e6, p = flop / median(peer_ms) / 1e6;
  std::printf("  %-44s %10.1f GFLOP/s | CLBlast %7.1f GFLOP/s | ratio %.2f | aim >= 0.8: %s\n",
              ("matmul 1024^3 fp32 (" + name + "):").c_str(), l, p, l / p, l / p >= 0.8 ? "met" : "NOT met");
  std::printf("    (medians %.1f ms and %.1f ms; largest difference from CLBlast and a float64 dot product %.2g)\n",
              median(loom_ms), median(peer_ms), worst);
  if (worst > 1e-2) {
    std::fprintf(stderr, "Loom and CLBlast disagree\n");
    std::exit(1);
  }
  clReleaseMemObject(ra);
  clReleaseMemObject(rb);
  clReleaseMemObject(rc);
}
}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 11;
  Raw raw;
  std::printf("OpenCL device: %s; %d runs, medians\n", raw.name.c_str(), runs);
  std::string only = argc > 2 ? argv[2] : "";  // "launch" or "matmul": one figure
  if (only.empty() || only == "launch") launch_overhead(raw, runs);
  if (only.empty() || only == "matmul") matmul(raw, std::max(3, runs / 3));
  return 0;
}
