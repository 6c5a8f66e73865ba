// Prim IR -> C source (docs/target-c.md): the printer behind target kind
// `c`, installed with the SDK as the base of every C-dialect backend
// (OpenCL C, a vendor's C).  A dialect derives from CSourcePrinter and
// overrides the hooks it changes: type names, function qualifiers, buffer
// address spaces, intrinsic names, thread indices, the preamble; the
// statement and expression printers are virtual too.
//
// print_host_module() writes a translation unit in which every prim
// function is a function with the host library ABI of
// loom/runtime/c_backend_api.h (its arguments checked as the llvm codegen
// checks them), so the same file runs in memory and links into
// export_library's shared object.  The C is C99 plus <math.h>; it needs
// -fwrapv for integer overflow to wrap as the IR says.
//
// Refused, with an Error naming the function: vector expressions (the
// base printer is scalar; a target of kind c has no vector unit), types C
// has no name for (float16, bfloat16 unless a dialect names them), loops
// bound to GPU threads (unless a dialect gives thread_index), memory
// scopes other than global/local.
#ifndef LOOM_TARGET_C_SOURCE_H_
#define LOOM_TARGET_C_SOURCE_H_

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/module.h"
#include "loom/tir/expr.h"
#include "loom/tir/function.h"
#include "loom/tir/stmt.h"

namespace loom::target {

class CSourcePrinter {
 public:
  virtual ~CSourcePrinter() = default;

  // Every prim function of `module` with the host ABI: the whole file.
  // `functions` receives (prim function name, exported C symbol).
  std::string print_host_module(const ir::IRModule& module,
                                std::vector<std::pair<std::string, std::string>>* functions);

  // One prim function as a function named `name` taking its buffers'
  // pointers, then its scalars (no host entry, no argument checks): a
  // dialect's kernels.  It is preceded by the closures of its parallel
  // loops; the helpers it calls are in helper_definitions().
  std::string print_function(const tir::PrimFunc& func, const std::string& name);
  // The static helpers (integer division, NaN-propagating min, ...) the
  // functions printed so far call, for the top of the file.
  std::string helper_definitions() const;

  // The intrinsics print_call implements (a target's native_intrinsics;
  // LowerIntrinsics expands the others into these).
  static std::set<std::string> intrinsics();
  // The exported symbol of prim function `name`: "__loom_fn_" and the name
  // with every character that is not a letter or digit as '_'.
  static std::string symbol_for(const std::string& name);

 protected:
  // ---- hooks a dialect overrides -------------------------------------------------
  // The text before the functions: includes and helpers.
  virtual std::string preamble();
  // The C name of a scalar type; Error for one C has no name for.
  virtual std::string scalar_type(DataType t);
  // The C name of a vector type; the base printer has none (Error).
  virtual std::string vector_type(DataType t);
  // Qualifiers in front of a function print_function writes ("static"
  // for host code).
  virtual std::string function_qualifiers() { return "static"; }
  // The head of that function, given its parameters (buffer pointers, then
  // scalars): by default `QUALIFIERS int32_t NAME(PARAMS, LoomValue*
  // loom_ret, int32_t* loom_ret_code)`, whose `ret` stores through the
  // last two; a kernel dialect writes `__kernel void NAME(PARAMS)`.
  virtual std::string function_head(const std::string& name, const std::vector<std::string>& params);
  // The last statement of that function ("return 0;"; empty for void).
  virtual std::string function_tail() { return "return 0;"; }
  // The address space of a buffer parameter's pointer ("" on the host,
  // "__global" in OpenCL).
  virtual std::string pointer_space(const tir::BufferNode*) { return ""; }
  // The library function for intrinsic `op` of scalar type t ("expf",
  // "exp"); empty: print_call has its own text for it.
  virtual std::string intrinsic_name(const std::string& op, DataType t);
  // The index of the thread along `axis` ("threadIdx.x", "blockIdx.y");
  // the base printer runs on a CPU and has none (Error).
  virtual std::string thread_index(const std::string& axis);

  // ---- statements and expressions ------------------------------------------------
  virtual void print_stmt(const tir::Stmt& s);
  virtual void print_for(const tir::ForNode* op);
  virtual void print_parallel_for(const tir::ForNode* op);
  virtual void print_allocate(const tir::AllocateNode* op);
  virtual void print_store(const tir::BufferStoreNode* op);
  virtual void print_evaluate(const tir::EvaluateNode* op);
  virtual void print_launch(const tir::CallNode* op);
  virtual std::string print_expr(const tir::PrimExpr& e);
  virtual std::string print_binary(const tir::BinaryOpNode* op);
  virtual std::string print_cast(DataType to, const tir::PrimExpr& value);
  virtual std::string print_call(const tir::CallNode* op);
  virtual std::string print_load(const tir::BufferLoadNode* op);
  virtual std::string print_int(DataType t, int64_t value);
  virtual std::string print_float(DataType t, double value);
  // bfloat16 (kept as uint16_t bits): its bits as a float, a value of
  // `from` (float32, float64 or bfloat16) rounded to its bits, an operand
  // as C arithmetic reads it, and a binary operator computed in float.
  std::string bf16_to_float(const std::string& bits);
  std::string float_to_bf16(const std::string& value, DataType from);
  std::string arithmetic_operand(const tir::PrimExpr& e);
  std::string print_bf16_binary(const tir::BinaryOpNode* op);
  // `value` converted to `type`, as text: "(type)value" in C (value comes
  // parenthesized where it needs to be); GLSL writes "type(value)".  Every
  // conversion the printer writes goes through it.
  virtual std::string cast_text(const std::string& type, const std::string& value);
  // What precedes a helper function's definition ("static inline " in C).
  virtual std::string helper_qualifiers() { return "static inline "; }
  // Whether `name` may not be a variable's identifier (declare() then adds
  // '_'): C's keywords and the prefixes of Loom's helpers; a dialect adds
  // its own (GLSL: its keywords, types and built-in functions, gl_).
  virtual bool reserved_identifier(const std::string& name);

  // ---- helpers for dialects --------------------------------------------------------
  [[noreturn]] void fail(const std::string& what) const;
  // A value's type name, scalar or vector.
  std::string type_name(DataType t);
  // The type of a buffer's elements in memory (bool: uint8_t).
  std::string memory_type(DataType t);
  // The C identifier of a variable in scope (unique within the function).
  std::string name_of(const tir::VarNode* v);
  // Declares `v`, of C type `c_type`, in the current scope under a fresh
  // identifier; close_scope(mark) ends the scopes opened after
  // scope_mark() returned `mark`.
  std::string declare(const tir::VarNode* v, const std::string& c_type);
  size_t scope_mark() const { return scope_.size(); }
  void close_scope(size_t mark);
  // The flat element index of buffer[indices] (row-major over its shape,
  // or its strides, plus elem_offset), as C.
  std::string element_index(const tir::BufferNode* buffer, const Array& indices);
  // Function `name` of `module` as a device kernel (SplitHostDevice's), and
  // the kind of each of its arguments: "buffer" for each buffer, then each
  // scalar's dtype; Error naming the function for anything else, or a
  // scalar a kernel cannot take (bool, a vector).  It becomes the function
  // errors name.
  tir::PrimFunc device_kernel(const ir::IRModule& module, const std::string& name, std::vector<std::string>* args);
  // The elements of an array a kernel declares for `buffer` (its shape's
  // product, times its lanes, at least 1); Error naming the buffer when a
  // dimension is not a constant.
  int64_t constant_elements(const tir::BufferNode* buffer);
  // A helper function of the preamble, written once per file (by name).
  void need_helper(const std::string& name, const std::string& definition);
  std::ostream& line();                      // a new line at the current indentation
  void open_block(const std::string& head);  // "head {", indented
  void close_block();

  std::string function_name_;  // the prim function being printed, for errors
  // Where its buffers are (DLPack device type): the CPU, or for a host
  // function that launches kernels (SplitHostDevice) their device.
  int device_type_ = 1;
  std::ostringstream* out_ = nullptr;
  int indent_ = 0;

 private:
  void begin_function(const std::string& name);
  void print_body_function(const tir::PrimFunc& func, const std::string& name);
  void print_entry(const tir::PrimFunc& func, const std::string& symbol, const std::string& body);
  std::string helper_call(const std::string& helper, DataType t, const std::vector<std::string>& args);

  std::unordered_map<const tir::VarNode*, std::string> names_;
  std::unordered_map<const tir::VarNode*, std::string> var_types_;  // C type of each declared variable
  std::unordered_set<const tir::VarNode*> live_;                    // in scope now
  std::vector<const tir::VarNode*> scope_;                          // declared, innermost last
  std::set<std::string> used_names_;
  std::map<std::string, std::string> helpers_;  // name -> definition
  std::vector<std::string> helper_order_;
  std::vector<std::string> outlined_;  // closures of parallel loops, printed before their user
  bool has_result_ = false;            // a body with ret slots (not a closure)
  int closures_ = 0;
};

}  // namespace loom::target

#endif  // LOOM_TARGET_C_SOURCE_H_
