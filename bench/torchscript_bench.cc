// TorchScript (bench/README.md): the call overhead of a `torchscript`
// extern function (docs/extern-torchscript.md) against calling the same
// scripted module directly from C++, in the same run.
//
// The module is `forward(x) = x + 1`, defined and saved here with
// libtorch's C++ API.  Loom: the built module's function called with
// NDArrays in destination-passing style (argument checks, from_blob views
// of the input, the method, the result's checks and its copy into the
// output).  Peer: `module.forward({x})` on a prepared at::Tensor, which
// returns a new tensor, under the same InferenceMode.  Both on 16 floats
// (the call's fixed cost) and 65536 (where the output's copy shows).
// Rounds alternate the two; per-call microseconds are medians over the
// rounds, and the ratio the median of the rounds' ratios.
//
// Usage: loom_bench_torchscript [ROUNDS]
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/runtime/ndarray.h"
#include "loom/support/json.h"

using namespace loom;
using loom::bench::median;
using loom::bench::time_ns;

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  torch::jit::Module scripted("Inc");
  scripted.define("def forward(self, x):\n    return x + 1\n");
  std::ostringstream saved;
  scripted.save(saved);
  std::string payload = base64_encode(saved.str());
  std::printf("torchscript call overhead: forward(x) = x + 1, libtorch %s, %d intra-op threads, %d rounds\n",
              TORCH_VERSION, at::get_num_threads(), rounds);
  std::printf("%10s %12s %12s %8s\n", "elements", "loom us", "direct us", "ratio");
  for (int64_t n : {int64_t{16}, int64_t{65536}}) {
    std::string t = "Tensor[(" + std::to_string(n) + "), float32]";
    std::string text = "@inc = extern \"torchscript\" dps fn(" + t + ", " + t +
                       ") -> none encoding \"base64\" payload \"" + payload + "\"\n";
    runtime::Module built =
        driver::build(text::parse_module(text, "<bench>"),
                      config::parse_config("target: {kind: cpu}\npipeline: {passes: []}\n", "<bench>"));
    Function inc = built.get_function("inc");
    runtime::NDArray x = runtime::NDArray::empty({n}, DataType::Float(32), Device{});
    runtime::NDArray y = runtime::NDArray::empty({n}, DataType::Float(32), Device{});
    auto* xs = static_cast<float*>(const_cast<void*>(x->data()));
    for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 7);
    at::Tensor tx = at::from_blob(xs, {n}, at::kFloat);
    const int calls = n > 1024 ? 200 : 5000;
    std::vector<double> loom_us, direct_us, ratios;
    for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up
      double a = time_ns([&] {
                   for (int k = 0; k < calls; ++k) inc(x, y);
                 }) /
                 calls / 1e3;
      double b = time_ns([&] {
                   c10::InferenceMode guard;
                   for (int k = 0; k < calls; ++k) {
                     at::Tensor out = scripted.forward({tx}).toTensor();
                     (void)out;
                   }
                 }) /
                 calls / 1e3;
      if (r == 0) continue;
      loom_us.push_back(a);
      direct_us.push_back(b);
      ratios.push_back(a / b);
    }
    const float* ys = static_cast<const float*>(y->data());
    for (int64_t i = 0; i < n; ++i) {
      if (ys[i] != xs[i] + 1) {
        std::fprintf(stderr, "wrong result at %lld\n", static_cast<long long>(i));
        return 1;
      }
    }
    std::printf("%10lld %12.2f %12.2f %8.2f\n", static_cast<long long>(n), median(loom_us), median(direct_us),
                median(ratios));
  }
  return 0;
}
