// The npu codegen (docs/npu.md): a partitioned region (a graph function
// with attrs codegen "npu" whose body calls the npu table's composites)
// compiled into a command stream (docs/npu-spec.md), and the layer shapes
// the pattern table accepts.
#ifndef LOOM_PLUGINS_NPU_CODEGEN_H_
#define LOOM_PLUGINS_NPU_CODEGEN_H_

#include <loom/graph/function.h>
#include <loom/ir/module.h>

#include <optional>
#include <string>
#include <vector>

#include "isa.h"
#include "simulator.h"

namespace loom::npu {

// The stream for region `name` of `module`.  Throws Error naming the
// region and the composite it cannot compile.
Stream compile_region(const ir::IRModule& module, const std::string& name, const Machine& machine);

// The constant extents of `e`'s checked type when it is a float32 tensor
// with constant extents; nothing otherwise.
std::optional<std::vector<int64_t>> static_shape(const ir::Expr& e);
// The constant extents of `e`'s tensor type, of any dtype, with that
// dtype; nothing for a symbolic extent or an unknown rank.
std::optional<std::pair<std::vector<int64_t>, DataType>> constant_extents(const ir::Expr& e);
// The same for a tensor of a dtype the NPU has (fp32, int8, uint8,
// int32), with the NPU's name of it.
std::optional<std::pair<std::vector<int64_t>, Dtype>> typed_shape(const ir::Expr& e);
// The NPU's dtype for `t`, or nothing.
std::optional<Dtype> npu_dtype(DataType t);

}  // namespace loom::npu

#endif  // LOOM_PLUGINS_NPU_CODEGEN_H_
