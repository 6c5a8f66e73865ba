// The opencl runtime module on PoCL (docs/target-opencl.md): a kernel that
// does not build is an Error with the build log and the kernel's name; a
// stored binary the device refuses is rebuilt from the source.  This test
// binary links no LLVM (PoCL carries its own).
#include <gtest/gtest.h>

#include <string>

#include "loom/plugin/manager.h"
#include "loom/runtime/module.h"
#include "loom/support/bytes.h"
#include "test_util.h"

namespace loom {
namespace {

void put(std::string& out, const std::string& s) {
  size_t at = out.size();
  out.resize(at + 8);
  store_le<uint64_t>(out, at, s.size());
  out += s;
}

// The bytes the module saves: source, binary, its device, the device index,
// then each kernel's name and argument kinds.
std::string module_bytes(const std::string& source, const std::string& binary, const std::string& device) {
  std::string out = "LOOMCL01";
  put(out, source);
  put(out, binary);
  put(out, device);
  put(out, "0");
  put(out, "2");
  for (const char* name : {"fine", "broken"}) {
    put(out, name);
    put(out, "1");
    put(out, "buffer");
  }
  return out;
}

const char* kFine = "__kernel void fine(__global float* a) { a[get_global_id(0)] = 1.0f; }\n";

TEST(OpenCLModule, AKernelThatDoesNotBuildGivesTheBuildLogAndItsName) {
  PluginManager::global().load("opencl");
  Function load = runtime::ModuleLoaderRegistry::get("opencl");
  std::string source = std::string(kFine) + "__kernel void broken(__global float* a) {\n  a[0] = no_such_value;\n}\n";
  std::string message = test::error_of([&] { load(module_bytes(source, "", "")); });
  EXPECT_NE(message.find("opencl: kernel 'broken' (an IR function of that name) does not build on"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the build log:"), std::string::npos) << message;
  EXPECT_NE(message.find("no_such_value"), std::string::npos) << message;
}

TEST(OpenCLModule, ABinaryTheDeviceRefusesIsRebuiltFromTheSource) {
  PluginManager::global().load("opencl");
  Function load = runtime::ModuleLoaderRegistry::get("opencl");
  std::string source = std::string(kFine) + "__kernel void broken(__global float* a) { a[0] = 2.0f; }\n";
  auto built = load(module_bytes(source, "", "")).cast<runtime::Module>();
  std::string saved = built.node()->save_to_binary();
  // The device's own binary, then garbage in its place for the same device.
  size_t at = 8 + 8 + source.size();
  uint64_t binary_size = load_le<uint64_t>(saved, at);
  ASSERT_GT(binary_size, 0u) << "PoCL returns a program binary";
  std::string device = saved.substr(at + 8 + binary_size + 8, load_le<uint64_t>(saved, at + 8 + binary_size));
  EXPECT_NE(device.find("OpenCL"), std::string::npos) << device;
  auto rebuilt = load(module_bytes(source, "not a program binary", device)).cast<runtime::Module>();
  EXPECT_EQ(rebuilt.node()->function_names(), (std::vector<std::string>{"fine", "broken"}));
  EXPECT_TRUE(rebuilt.find_function("broken").has_value());
  EXPECT_NE(rebuilt.node()->save_to_binary().find("not a program binary"), 0u);
  EXPECT_EQ(rebuilt.node()->save_to_binary().find("not a program binary"), std::string::npos);
}

}  // namespace
}  // namespace loom
