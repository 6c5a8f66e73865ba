// The VM that runs graph functions (docs/runtime.md, "VM"): its executable
// format, the module that runs it, and queries over a loaded one.
//
// The executable is what the VM compiler (loom/driver/vm_compiler.h, in
// libloom_core) writes and what export_library stores: bytecode per
// function, the constants, the callees, the static memory plan, and the
// types the VM checks its inputs against.  Everything in it is a runtime
// object (shapes are ShapeExprs, types VMTypes), so this header and the
// runtime library depend on no IR header: a deployment program that only
// loads and runs a library links libloom_runtime alone.
//
// Every call checks its inputs (count, dtype, shape, device) before
// running; tensors are allocated from the static memory plan, which reuses
// storage between tensors whose lifetimes do not overlap.
#ifndef LOOM_RUNTIME_VM_H_
#define LOOM_RUNTIME_VM_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/reflection.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

// The version of the executable format; a library whose executable has
// another is refused with a message that says to rebuild it.
constexpr int64_t kVMExecutableFormat = 4;  // 4: tail calls (call with b = 1) and dim

// The instruction set.  Each instruction is op, dst, a, b, the number of
// argument registers, then the registers.  Devices are indices into the
// executable's device table, whose entry 0 is the host (cpu:0).
enum VMOpcode : int32_t {
  kVMConst = 0,       // dst <- constants[a], on device b (copied there once)
  kVMAlloc = 1,       // dst <- a tensor of allocation site a
  kVMCallDPS = 2,     // callees[a](args...): inputs then outputs
  kVMCallPacked = 3,  // dst <- callees[a](args...), checked against types[b]
  kVMCallGraph = 4,   // dst <- graph function a (args...); b = 1: in tail position, the callee replaces the frame
  kVMTuple = 5,       // dst <- (args...)
  kVMGetItem = 6,     // dst <- a[b]
  kVMMove = 7,        // dst <- a
  kVMIfNot = 8,       // if not a: jump to b
  kVMGoto = 9,        // jump to a
  kVMRet = 10,        // return a
  kVMCopy = 11,       // a copied into dst (a tensor allocated on its device); dst <- a when a is on that device
  kVMDim = 12,        // dst <- the int64 value of types[b]'s single dimension (a kernel's scalar parameter)
};

// Whether the instruction `op` reads register a (the others use a as a
// table index or a jump target, or not at all).
inline bool reads_register_a(int32_t op) {
  return op == kVMMove || op == kVMGetItem || op == kVMIfNot || op == kVMRet || op == kVMCopy;
}

// ---- shapes ------------------------------------------------------------------------
// Integer arithmetic over a function's shape variables (the symbolic
// dimensions its parameters bind).
enum class ShapeOp : int64_t { kConst = 0, kVar, kAdd, kSub, kMul, kDiv, kFloorDiv, kFloorMod, kMin, kMax };

class ShapeExprNode : public Object {
 public:
  int64_t op = 0;     // a ShapeOp
  int64_t value = 0;  // kConst: the value; kVar: the variable's slot
  ObjectRef a, b;     // the operands of the binary operations
  ShapeOp shape_op() const { return static_cast<ShapeOp>(op); }
  LOOM_OBJECT(ShapeExprNode, Object, "runtime.ShapeExpr");
  static void reflect(ReflectionBuilder<ShapeExprNode>& r) {
    r.field("op", &ShapeExprNode::op)
        .field("value", &ShapeExprNode::value)
        .field("a", &ShapeExprNode::a, "", kOptional)
        .field("b", &ShapeExprNode::b, "", kOptional);
  }
};

class ShapeExpr : public ObjectRef {
 public:
  LOOM_OBJECT_REF(ShapeExpr, ObjectRef, ShapeExprNode)
  static ShapeExpr constant(int64_t value);
  static ShapeExpr var(int64_t slot);
  static ShapeExpr binary(ShapeOp op, ShapeExpr a, ShapeExpr b);
  std::optional<int64_t> as_constant() const;
};

// The value of `e` with the variables' values by slot.  Throws Error for a
// division by zero or a variable out of range.
int64_t evaluate(const ShapeExpr& e, const std::vector<int64_t>& values);
// `e` as text, variables named by slot ("%n * 16").
std::string shape_expr_text(const ShapeExpr& e, const std::vector<std::string>& var_names);
// The byte size of a tensor of `dtype` and `shape`: a constant, or the
// product of the symbolic dimensions times the constant factor.
ShapeExpr tensor_bytes(DataType dtype, const std::vector<ShapeExpr>& shape);

// ---- types -------------------------------------------------------------------------
// What the VM checks of a parameter, or of a call_packed result.
enum class VMTypeKind : int64_t { kAny = 0, kTensor = 1, kTuple = 2, kScalar = 3 };

class VMTypeNode : public Object {
 public:
  int64_t kind = 0;  // a VMTypeKind
  DataType dtype;    // kTensor, kScalar
  Array shape;       // kTensor: of ShapeExpr; none for an unknown rank
  Array fields;      // kTuple: of VMType
  VMTypeKind type_kind() const { return static_cast<VMTypeKind>(kind); }
  LOOM_OBJECT(VMTypeNode, Object, "runtime.VMType");
  static void reflect(ReflectionBuilder<VMTypeNode>& r) {
    r.field("kind", &VMTypeNode::kind)
        .field("dtype", &VMTypeNode::dtype)
        .field("shape", &VMTypeNode::shape, "none: unknown rank", kOptional)
        .field("fields", &VMTypeNode::fields);
  }
};

class VMType : public ObjectRef {
 public:
  LOOM_OBJECT_REF(VMType, ObjectRef, VMTypeNode)
  static VMType any();
  static VMType tensor(DataType dtype, std::optional<std::vector<ShapeExpr>> shape);
  static VMType tuple(std::vector<VMType> fields);
  static VMType scalar(DataType dtype);
};

// The type as the IR text writes it ("Tensor[(%n, 4), float32]").
std::string vm_type_text(const VMType& type, const std::vector<std::string>& var_names);

// ---- the executable -----------------------------------------------------------------
class VMAllocNode : public Object {
 public:
  DataType dtype;
  Array shape;           // of ShapeExpr
  int64_t storage = -1;  // -1: an output, allocated on its own
  int64_t device = 0;    // in the device table; a storage's allocations share its device
  LOOM_OBJECT(VMAllocNode, Object, "runtime.VMAlloc");
  static void reflect(ReflectionBuilder<VMAllocNode>& r) {
    r.field("dtype", &VMAllocNode::dtype)
        .field("shape", &VMAllocNode::shape)
        .field("storage", &VMAllocNode::storage)
        .field("device", &VMAllocNode::device);
  }
};

class VMFunctionDefNode : public Object {
 public:
  std::string name;
  Array param_names;  // of str
  Array param_types;  // of VMType
  int64_t num_registers = 0;
  Array code;                                         // of int
  Array allocs;                                       // of runtime.VMAlloc
  Array storage_sizes;                                // of ShapeExpr: bytes of each storage
  Array storage_devices = Array(std::vector<Any>{});  // of int: each storage's device (none: all on the host)
  // of Array of int: the devices each parameter may be passed on besides
  // the host (a parameter only ever copied to one device; none: the host)
  Array param_devices = Array(std::vector<Any>{});
  Array types;       // of VMType: results of call_packed
  Array shape_vars;  // of str: the names of the shape variables, by slot
  LOOM_OBJECT(VMFunctionDefNode, Object, "runtime.VMFunctionDef");
  static void reflect(ReflectionBuilder<VMFunctionDefNode>& r) {
    r.field("name", &VMFunctionDefNode::name)
        .field("param_names", &VMFunctionDefNode::param_names)
        .field("param_types", &VMFunctionDefNode::param_types)
        .field("num_registers", &VMFunctionDefNode::num_registers)
        .field("code", &VMFunctionDefNode::code)
        .field("allocs", &VMFunctionDefNode::allocs)
        .field("storage_sizes", &VMFunctionDefNode::storage_sizes)
        .field("storage_devices", &VMFunctionDefNode::storage_devices, "", kOptional)
        .field("param_devices", &VMFunctionDefNode::param_devices, "", kOptional)
        .field("types", &VMFunctionDefNode::types)
        .field("shape_vars", &VMFunctionDefNode::shape_vars);
  }
};

class VMExecutableNode : public Object {
 public:
  int64_t format = kVMExecutableFormat;
  Array functions;                            // of runtime.VMFunctionDef
  Array constants;                            // of runtime.NDArray
  Array callees;                              // of str: "dps:NAME" or "packed:NAME"
  Array devices = Array(std::vector<Any>{});  // of device: the device table (entry 0 the host; none: only the host)
  int64_t num_threads = 0;
  // Per callee, the floating-point operations of one call (tir::float_ops),
  // -1 where unknown (an extern or a partitioned region, symbolic extents);
  // empty in executables saved before there were counts.  Profiles report them.
  Array callee_flops = Array(std::vector<Any>{});
  LOOM_OBJECT(VMExecutableNode, Object, "runtime.VMExecutable");
  static void reflect(ReflectionBuilder<VMExecutableNode>& r) {
    r.field("format", &VMExecutableNode::format)
        .field("functions", &VMExecutableNode::functions)
        .field("constants", &VMExecutableNode::constants)
        .field("callees", &VMExecutableNode::callees)
        .field("devices", &VMExecutableNode::devices, "", kOptional)
        .field("num_threads", &VMExecutableNode::num_threads)
        .field("callee_flops", &VMExecutableNode::callee_flops, "", kOptional);
  }
};

// The VM module ("vm") running `executable`, after checking that it is
// consistent (registers, jumps, tables, shapes); Error naming the problem
// otherwise.  num_threads > 0 sizes the runtime's thread pool.
Module make_vm_module(const ObjectRef& executable);

// ---- queries over a VM module -----------------------------------------------------------
// The static memory plan of one VM function.
struct MemoryPlan {
  int64_t planned_tensors = 0;  // tensors placed in the arena
  int64_t output_tensors = 0;   // tensors returned to the caller (own buffers)
  int64_t storages = 0;         // arena slots after reuse
  // Bytes of the arena (peak) and of one buffer per planned tensor, as an
  // integer or, with symbolic shapes, an expression over the shape
  // variables (for example "%n * 64").
  std::string peak_bytes, naive_bytes;
  std::optional<int64_t> static_peak_bytes, static_naive_bytes;
  // The peak per device ("opencl:0" -> "1024"), when a storage is on a
  // device other than the host (a plan per device).
  std::map<std::string, std::string> device_peak_bytes;
};

// The plan of `function` of a VM module; LookupError for an unknown name,
// Error for a module that is not a VM module.
MemoryPlan memory_plan(const Module& vm, const std::string& function);

// What the VM checks of each parameter of `function` (kAny for one it does
// not check), and the names of its shape variables (for vm_type_text);
// LookupError for an unknown name.
struct VMSignature {
  std::vector<std::string> param_names;
  std::vector<VMType> param_types;
  std::vector<std::string> shape_vars;
};
VMSignature signature(const Module& vm, const std::string& function);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_VM_H_
