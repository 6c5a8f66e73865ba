// The VM's static memory plan (private to the VM compiler): which tensors
// of a function share storage.  Registers that may hold the same tensor
// form one class (moves, tuples and their items, results of calls that may
// return an argument); a class lives from its first to its last appearance
// in the code, which only jumps forward, so no path uses a tensor outside
// that interval.  Tensors of classes that never escape (are not returned)
// are placed, best fit, in storages no other live tensor uses; a storage
// holds the tensors of one device (a plan per device).
#ifndef LOOM_SRC_DRIVER_MEMORY_PLANNER_H_
#define LOOM_SRC_DRIVER_MEMORY_PLANNER_H_

#include <cstdint>
#include <vector>

#include "loom/runtime/vm.h"

namespace loom::driver::vm {

// An instruction as the compiler builds it (the executable flattens it).
struct Instr {
  int32_t op, dst, a, b;
  std::vector<int32_t> args;
};

// The tensor an kVMAlloc instruction makes in register `reg`.
struct Allocation {
  DataType dtype;
  std::vector<runtime::ShapeExpr> shape;
  int32_t reg;
  int32_t device = 0;  // in the executable's device table
  bool own = false;    // allocated on its own, outside the plan (a shape the data decides)
};

struct StoragePlan {
  std::vector<int64_t> storage_of;                // per allocation; -1: an output, allocated on its own
  std::vector<runtime::ShapeExpr> storage_bytes;  // per storage
  std::vector<int32_t> storage_device;            // per storage
};

StoragePlan plan_storage(const std::vector<Instr>& code, int32_t num_registers,
                         const std::vector<Allocation>& allocations);

}  // namespace loom::driver::vm

#endif  // LOOM_SRC_DRIVER_MEMORY_PLANNER_H_
