// Kernel modules (loom/runtime/kernel_module.h) as their backends make
// them: the CNN example built for opencl (PoCL), vulkan (lavapipe) and the
// npu, each kernel module saved, loaded back and called, and every
// truncation and a flipped byte at many places of its bytes a Loom Error
// naming the module kind, never a crash or a standard-library exception.
// This test binary links no LLVM: the host code comes from the c target.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "loom/config/config.h"
#include "loom/plugin/manager.h"
#include "loom/driver/build.h"
#include "loom/runtime/kernel_module.h"
#include "loom/runtime/module.h"
#include "loom/text/text.h"
#include "test_util.h"

namespace loom {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first module of kind `kind` in the tree under `m`.
runtime::Module find_kind(const runtime::Module& m, const std::string& kind) {
  if (m->type_key() == kind) return m;
  for (const runtime::Module& child : m.imports()) {
    runtime::Module found = find_kind(child, kind);
    if (found.defined()) return found;
  }
  return runtime::Module();
}

class KernelModules : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelModules, SaveLoadAndCorruption) {
  const std::string kind = GetParam();
  std::string config = kind == "npu"
                           ? "target: {kind: c, partition: [npu]}\n"
                           : "{target: {kind: " + kind + ", host: {kind: c}}, pipeline: {passes: [device]}}\n";
  runtime::Module built;
  try {
    built = driver::build(text::parse_module(read_file(LOOM_SOURCE_DIR "/examples/cnn.loom"), "cnn.loom"),
                          config::parse_config(config, kind + ".yaml"));
  } catch (const Error& e) {
    GTEST_SKIP() << kind << " is not available here: " << e.what();
  }
  runtime::Module module = find_kind(built, kind);
  ASSERT_TRUE(module.defined()) << runtime::module_tree(built);
  ASSERT_NE(dynamic_cast<const runtime::KernelModuleNode*>(module.get()), nullptr);
  std::string saved = module.node()->save_to_binary();
  EXPECT_TRUE(is_binary_document(saved));

  Function load = runtime::ModuleLoaderRegistry::get(kind);
  auto again = load(saved).cast<runtime::Module>();
  EXPECT_EQ(again.node()->function_names(), module.node()->function_names());
  EXPECT_EQ(again.node()->save_to_binary().size() > 0, true);

  // A call with the wrong number of values names the kernel.
  std::string first = again.node()->function_names().at(0);
  std::string message = test::error_of([&] { again.get_function(first)(); });
  EXPECT_NE(message.find("kernel '" + first + "' takes"), std::string::npos) << message;

  std::string prefix = kind + " module: ";
  size_t step = saved.size() / 61 + 1;
  for (size_t n = 0; n < saved.size(); n += step) {
    message = test::error_of([&] { load(saved.substr(0, n)); });
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << n << ": " << message;
  }
  for (size_t at = 0; at < saved.size(); at += step) {
    std::string bad = saved;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    try {
      load(bad);  // a flip inside a payload may still load
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(kind), std::string::npos) << at << ": " << e.what();
    }
  }
  // Bytes in the private formats earlier builds wrote (LOOMCL01, LOOMVK01, LOOMNPU1).
  message = test::error_of([&] { load(std::string("LOOMXX01") + saved); });
  EXPECT_EQ(message.rfind(prefix + "the saved bytes are not a kernel module", 0), 0u) << message;
  // Another kind's bytes.
  std::string other = kind == "npu" ? "opencl" : "npu";
  if (runtime::ModuleLoaderRegistry::find(other)) {
    message = test::error_of([&] { runtime::ModuleLoaderRegistry::get(other)(saved); });
    EXPECT_NE(message.find("not a " + other + ".Module"), std::string::npos) << message;
  }
}

// A backend's make_module given a table that is not runtime.Kernel objects,
// or a kernel with an argument kind that is not a string: an Error, not a
// crash.
TEST(KernelModuleTable, WrongEntriesAreErrors) {
  PluginManager::global().load("npu_runtime");
  Function make = FunctionRegistry::get("npu.make_module");
  Array machine{Any(int64_t{1024}), Any(int64_t{16}), Any(int64_t{16}), Any(int64_t{64}), Any(int64_t{64})};
  std::string message = test::error_of([&] { make(Array{Any(int64_t{7})}, machine); });
  EXPECT_NE(message.find("npu module: kernel 0 is"), std::string::npos) << message;
  EXPECT_NE(message.find("not a runtime.Kernel"), std::string::npos) << message;
  auto node = make_object<runtime::KernelNode>();
  node->name = "k";
  node->args = Array{Any(int64_t{3})};
  message = test::error_of([&] { make(Array{Any(runtime::Kernel(node))}, machine); });
  EXPECT_NE(message.find("argument 0 has the kind"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Backends, KernelModules, ::testing::Values("opencl", "vulkan", "npu"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
