// The opencl runtime module on PoCL (docs/target-opencl.md): a kernel that
// does not build is an Error with the build log and the kernel's name; a
// stored binary the device refuses is rebuilt from the source.  This test
// binary links no LLVM (PoCL carries its own).
#include <gtest/gtest.h>

#include <string>

#include "loom/object/serialization.h"
#include "loom/plugin/manager.h"
#include "loom/runtime/kernel_module.h"
#include "loom/runtime/module.h"
#include "test_util.h"

namespace loom {
namespace {

// The bytes an opencl module saves (the serializer's binary form of an
// opencl.Module): its source, the binary and the device it is for, and two
// kernels taking one buffer each.
std::string module_bytes(const std::string& source, const std::string& binary, const std::string& device) {
  const TypeInfo& info = TypeRegistry::info("opencl.Module");
  ObjectPtr<Object> node = info.create();
  info.field("source")->set(node.get(), Any(source));
  info.field("binary")->set(node.get(), binary.empty() ? Any() : Any(runtime::Bytes(binary)));
  info.field("binary_device")->set(node.get(), Any(device));
  info.field("kernels")->set(node.get(),
                             Any(Array{runtime::Kernel("fine", {"buffer"}), runtime::Kernel("broken", {"buffer"})}));
  return save_binary(Any(ObjectRef(node)));
}

// A field of the opencl.Module that `bytes` hold.
Any saved_field(const std::string& bytes, const std::string& field) {
  Any root = load_binary(bytes);
  return TypeRegistry::info("opencl.Module").field(field)->get(root.object());
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
  Any binary = saved_field(saved, "binary");
  ASSERT_FALSE(binary.is_none()) << "PoCL returns a program binary";
  EXPECT_GT(binary.cast<runtime::Bytes>().data().size(), 0u);
  std::string device = saved_field(saved, "binary_device").as_string();
  EXPECT_NE(device.find("OpenCL"), std::string::npos) << device;
  auto rebuilt = load(module_bytes(source, "not a program binary", device)).cast<runtime::Module>();
  EXPECT_EQ(rebuilt.node()->function_names(), (std::vector<std::string>{"fine", "broken"}));
  EXPECT_TRUE(rebuilt.find_function("broken").has_value());
  std::string resaved = rebuilt.node()->save_to_binary();
  EXPECT_NE(saved_field(resaved, "binary").cast<runtime::Bytes>().data(), "not a program binary");
}

}  // namespace
}  // namespace loom
