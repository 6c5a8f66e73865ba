// The MLIR side of the mlir plugin (docs/extern-mlir.md): parses and
// verifies a payload, checks its one public func.func against the extern's
// declared tensors, and compiles it in this process with MLIR 16's passes
// to LLVM IR and an ELF object.  MLIR's and LLVM's headers stay in
// compiler.cc; this header is plain C++ so the rest of the plugin compiles
// fast and never sees them.
#ifndef LOOM_PLUGINS_MLIR_COMPILER_H_
#define LOOM_PLUGINS_MLIR_COMPILER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "llvm_support.h"

namespace loom::mlir_kind {

// One tensor of the extern's declared signature (inputs, then outputs).
struct Param {
  int code = 0;               // DLPack type code (0 int, 1 uint, 2 float, 4 bfloat, 6 bool)
  int bits = 0;               // bits of one element
  std::string dtype;          // Loom's name ("float32"), for messages
  std::vector<int64_t> dims;  // constant extents; -1 for a symbolic one
  std::string declared;       // the Loom type as text, for messages
};

// One problem, at a line and column of the payload (1-based; 0 when MLIR
// gave no place in the payload).
struct Problem {
  int line = 0;
  int column = 0;
  std::string message;
  std::string source_line;
};

// How the payload's function takes and gives its tensors (docs).
enum class Form {
  kMemref,       // f(in..., out...) on memrefs, no results: writes the outputs
  kValue,        // f(in...) -> (out...) on tensors
  kDestination,  // f(in..., init...) -> (out...): init tensors are the outputs
};

struct Checked {
  std::vector<Problem> problems;  // empty when the payload is valid
  std::string function;           // the public func.func's name
  Form form = Form::kMemref;
  int results = 0;
};

// Parses and verifies `text` (nothing runs) and checks its public function
// against `params`.  Never throws for a bad payload: problems come back.
Checked check(const std::string& text, const std::vector<Param>& params);

// What code is compiled for: an LLVM triple, a CPU name and a feature
// string ("+avx2,+fma").
using Machine = llvm_support::Machine;

struct Compiled {
  std::vector<Problem> problems;  // empty on success
  std::string object;             // ELF relocatable object, position independent
  std::string lowered_mlir;       // after bufferization, before the LLVM conversions
  std::string llvm_ir;            // the optimised LLVM IR
  double seconds = 0;             // wall time of the whole compilation
};

// Compiles `text` (valid per `check`) so that the object defines one global
// function, `_mlir_ciface_<entry>`, taking one pointer to a memref
// descriptor per parameter (identity layout, shapes as declared),
// writing the outputs in place and returning an int32 status: 0, or 1 when
// a result the function returns has another shape than its output (then
// nothing is copied).  Every other symbol is local.
Compiled compile(const std::string& text, const std::vector<Param>& params, const std::string& entry,
                 const Machine& machine, int opt_level);

// This process's machine, and whether LLVM knows `cpu` for `triple`.
using llvm_support::host_machine;
using llvm_support::is_known_cpu;

}  // namespace loom::mlir_kind

#endif  // LOOM_PLUGINS_MLIR_COMPILER_H_
