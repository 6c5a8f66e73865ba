// GLSL compute shaders from device kernels (docs/target-vulkan.md): the C
// printer of the SDK (loom/target/c_source.h) with GLSL's hooks, as
// OpenCL's printer is.  One shader per kernel, entry point main.
#ifndef LOOM_PLUGINS_VULKAN_GLSL_PRINTER_H_
#define LOOM_PLUGINS_VULKAN_GLSL_PRINTER_H_

#include <loom/ir/module.h>
#include <loom/target/c_source.h>

#include <string>
#include <vector>

#include "vulkan_runtime.h"

namespace loom::vulkan {

// A kernel as the compiler half makes it: its name, its GLSL, the kind of
// each argument after the launch sizes, and its SPIR-V once compiled
// (spirv_compiler.h); vulkan.make_module takes it as a runtime.Kernel.
struct Kernel {
  std::string name;
  std::string glsl;
  std::vector<std::string> args;
  std::vector<uint32_t> spirv;  // filled by the compiler
};

class GLSLPrinter : public target::CSourcePrinter {
 public:
  explicit GLSLPrinter(Features features) : features_(features) {}
  // Every device_kernel function of `module` as a compute shader.
  std::vector<Kernel> print_kernels(const ir::IRModule& module);

 protected:
  std::string preamble() override;
  std::string scalar_type(DataType t) override;
  std::string function_head(const std::string& name, const std::vector<std::string>& params) override;
  std::string function_tail() override { return ""; }
  std::string helper_qualifiers() override { return ""; }
  std::string cast_text(const std::string& type, const std::string& value) override;
  std::string print_cast(DataType to, const tir::PrimExpr& value) override;
  bool reserved_identifier(const std::string& name) override;
  std::string intrinsic_name(const std::string& op, DataType t) override;
  std::string thread_index(const std::string& axis) override;
  void print_parallel_for(const tir::ForNode* op) override;
  void print_allocate(const tir::AllocateNode* op) override;
  void print_evaluate(const tir::EvaluateNode* op) override;
  void print_store(const tir::BufferStoreNode* op) override;
  std::string print_load(const tir::BufferLoadNode* op) override;
  std::string print_call(const tir::CallNode* op) override;
  std::string print_int(DataType t, int64_t value) override;
  std::string print_float(DataType t, double value) override;

 private:
  Features features_;
  std::string interface_;  // the buffers and push constants of the kernel being printed
  std::string shared_;     // its shared arrays
  bool uses_8bit_ = false, uses_16bit_ = false;
};

}  // namespace loom::vulkan

#endif  // LOOM_PLUGINS_VULKAN_GLSL_PRINTER_H_
