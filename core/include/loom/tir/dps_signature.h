// Reading a dps extern function's signature (docs/ir.md, "Extern
// functions") into the runtime's DpsSignature: what every extern kind whose
// functions take tensors only (asm, torchscript, a vendor's) needs, read
// and refused the same way.  It is in tir because a symbolic extent is a
// tir variable.
#ifndef LOOM_TIR_DPS_SIGNATURE_H_
#define LOOM_TIR_DPS_SIGNATURE_H_

#include <string>

#include "loom/ir/function.h"
#include "loom/runtime/dps_signature.h"

namespace loom::tir {

// The tensors of `f`'s signature: it follows the dps convention, returns
// nothing, and takes tensors of known rank and scalar dtype whose extents
// are integers or symbolic dimensions.  Error otherwise, without the
// function's name (well-formedness diagnostics add it): `noun` names the
// function ("an asm function"), `tensors_note` says what a tensor
// parameter becomes ("(their data pointers)").
runtime::DpsSignature read_dps_signature(const ir::ExternFuncNode& f, const std::string& noun,
                                         const std::string& tensors_note);

}  // namespace loom::tir

#endif  // LOOM_TIR_DPS_SIGNATURE_H_
