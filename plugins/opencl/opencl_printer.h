// OpenCL C from device kernels (docs/target-opencl.md): the C printer of
// the SDK (loom/target/c_source.h) with OpenCL's hooks, as a vendor's C
// dialect would derive from it.
#ifndef LOOM_PLUGINS_OPENCL_OPENCL_PRINTER_H_
#define LOOM_PLUGINS_OPENCL_OPENCL_PRINTER_H_

#include <loom/ir/module.h>
#include <loom/target/c_source.h>

#include <string>
#include <vector>

#include "opencl_runtime.h"

namespace loom::opencl {

class OpenCLPrinter : public target::CSourcePrinter {
 public:
  // Every device_kernel function of `module` as a __kernel of one OpenCL C
  // program; `kernels` receives each one's runtime.Kernel.  Error naming the
  // function for one that is not a kernel, or that OpenCL C cannot express.
  std::string print_program(const ir::IRModule& module, std::vector<Any>* kernels);

 protected:
  // `func` with its shared-memory allocations at the top of its body.
  static tir::PrimFunc shared_at_top(const tir::PrimFunc& func);
  std::string preamble() override;
  std::string function_head(const std::string& name, const std::vector<std::string>& params) override;
  std::string function_tail() override { return ""; }
  std::string pointer_space(const tir::BufferNode*) override { return "__global"; }
  std::string intrinsic_name(const std::string& op, DataType t) override;
  bool reserved_identifier(const std::string& name) override;
  std::string thread_index(const std::string& axis) override;
  void print_parallel_for(const tir::ForNode* op) override;
  void print_allocate(const tir::AllocateNode* op) override;
  void print_evaluate(const tir::EvaluateNode* op) override;
  std::string print_call(const tir::CallNode* op) override;
  std::string print_int(DataType t, int64_t value) override;
};

}  // namespace loom::opencl

#endif  // LOOM_PLUGINS_OPENCL_OPENCL_PRINTER_H_
