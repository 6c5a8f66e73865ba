// The LLVM MC side of the asm plugin (docs/extern-asm.md): assembles text
// in this process into a relocatable ELF object, and answers questions
// about ISAs, CPUs and their extensions.  LLVM's headers stay in
// assembler.cc; this header is plain C++ so the rest of the plugin
// compiles fast.
#ifndef LOOM_PLUGINS_ASM_ASSEMBLER_H_
#define LOOM_PLUGINS_ASM_ASSEMBLER_H_

#include <set>
#include <string>
#include <vector>

#include "llvm_support.h"

namespace loom::asm_kind {

// What code is assembled for: an LLVM triple, a CPU name and a feature
// string ("+avx2,+fma").
using Machine = llvm_support::Machine;

// One problem, at a line and column of the assembly text (1-based; 0 when
// it has no place).
struct AsmDiagnostic {
  int line = 0;
  int column = 0;
  std::string message;
  std::string source_line;
};

// An x86 instruction whose encoding needs an extension: VEX (AVX) or EVEX
// (AVX-512).  LLVM's x86 assembler accepts every instruction whatever the
// features, so the plugin checks these itself.
struct EncodedNeed {
  int line = 0;
  std::string extension;  // "avx" or "avx512f"
  std::string encoding;   // "VEX" or "EVEX"
};

struct Assembled {
  std::string object;  // ELF; empty when there are errors
  std::vector<AsmDiagnostic> errors;
  std::set<std::string> global_symbols;     // defined and global
  std::set<std::string> local_symbols;      // defined, not global
  std::set<std::string> undefined_symbols;  // referenced, defined elsewhere
  std::vector<EncodedNeed> needs;           // x86 only
};

// Registers LLVM's target descriptions and assembly parsers (all of this
// LLVM's architectures); once, at plugin load, so that what LLVM knows
// does not depend on what ran first.
void initialize();

// Assembles `text` for `machine` (non-executable stack, position
// independent).  Never throws for bad assembly: the problems are returned.
Assembled assemble(const std::string& text, const Machine& machine);

// The architecture of a triple in the kind's spelling ("x86_64",
// "aarch64"), or its LLVM name for any other.
std::string isa_of_triple(const std::string& triple);
// This process's triple, CPU name and features; whether LLVM knows `cpu`
// for the triple (and the triple at all).
using llvm_support::host_machine;
using llvm_support::is_known_cpu;
// Whether the machine has the extension `feature` (a name from
// known_extensions of its ISA, so LLVM always knows it).
bool has_extension(const Machine& machine, const std::string& feature);

}  // namespace loom::asm_kind

#endif  // LOOM_PLUGINS_ASM_ASSEMBLER_H_
