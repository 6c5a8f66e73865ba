// Writes the binary seed corpora of the fuzz targets into OUT/<target>/
// (scripts/fuzz.sh): JSON documents of the IR fixtures given as
// arguments, module trees of compiled VM programs, .npy files of every
// dtype the reader takes, and manifest sections.  The text seeds (.loom,
// .yaml) are the fixtures themselves.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "loom/driver/vm_compiler.h"
#include "loom/text/text.h"
#include "loom/object/serialization.h"
#include "loom/plugin.h"
#include "loom/version.h"
#include "loom/runtime/module.h"
#include "loom/runtime/npy.h"
#include "loom/support/file.h"

namespace fs = std::filesystem;
using namespace loom;  // NOLINT

namespace {
void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Kernels and graphs the VM compiler takes as they are (no passes).
const char* kPrims = R"(
@relu = prim_func(%X: Buffer[(%n, %m), float32], %Y: Buffer[(%n, %m), float32], %n: int64, %m: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent %m { %Y[%i, %j] = max(%X[%i, %j], 0.0); } }
}
)";
const char* kGraphs[] = {
    R"(@main = fn(%x: Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32] {
  let %a = call_dps<Tensor[(4, 8), float32]>(@relu, (%x,));
  let %b = call_dps<Tensor[(4, 8), float32]>(@relu, (%a,));
  call_dps<Tensor[(4, 8), float32]>(@relu, (%b,))
})",
    R"(@main = fn(%x: Tensor[(%n: int64, 8), float32]) -> (Tensor[(%n, 8), float32], Tensor[(%n, 8), float32]) {
  let %a = call_dps<Tensor[(%n, 8), float32]>(@relu, (%x,));
  (%a, call_dps<Tensor[(%n, 8), float32]>(@relu, (%a,)))
})",
};

std::string manifest(const std::string& text) {
  LoomPluginManifestHeader h{LOOM_PLUGIN_MANIFEST_MAGIC, sizeof(LoomPluginManifestHeader),       LOOM_PLUGIN_ABI_MAJOR,
                             LOOM_PLUGIN_ABI_MINOR,      static_cast<uint32_t>(text.size() + 1), 0};
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + text + '\0';
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: loom_fuzz_seeds OUT [FIXTURE.loom...]\n";
    return 2;
  }
  fs::path out = argv[1];
  int n = 0;
  for (int i = 2; i < argc; ++i) {
    try {
      write(out / "json" / (fs::path(argv[i]).stem().string() + ".json"),
            save_json(Any(text::parse_module(read_file(argv[i]), argv[i]))));
    } catch (const Error&) {
      // an error fixture: its text is a parser seed only
    }
  }
  for (const char* graph : kGraphs) {
    runtime::Module vm = driver::vm_compile(text::parse_module(std::string(kPrims) + graph, "seed.loom"));
    write(out / "module_tree" / ("vm" + std::to_string(n++) + ".bin"), runtime::save_module_tree(vm));
  }
  n = 0;
  for (const char* dtype : {"float32", "float16", "float64", "int8", "int32", "int64", "uint8", "bool"}) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, {3}, {2, 3}, {1, 2, 0}}) {
      fs::path file = out / "npy" / ("a" + std::to_string(n++) + ".npy");
      fs::create_directories(file.parent_path());
      runtime::save_npy(runtime::NDArray::zeros(shape, DataType::parse(dtype)), file.string());
    }
  }
  write(out / "manifest" / "good.bin",
        manifest("name=seed\nversion=1.0.0\ncore_version=" + std::string(LOOM_VERSION) +
                 "\ncxx_abi=" + LOOM_CXX_ABI_TAG + "\ndescription=a seed\nprovides=pass:Seed,target:seed\n"));
  write(out / "manifest" / "minimal.bin", manifest("name=x\nversion=0.0.1\n"));
  return 0;
}
