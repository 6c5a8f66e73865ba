// read_dps_signature (loom/tir/dps_signature.h).
#include "loom/tir/dps_signature.h"

#include <map>

#include "loom/ir/text.h"
#include "loom/ir/type.h"
#include "loom/tir/expr.h"

namespace loom::tir {

using namespace loom::ir;  // NOLINT: the signature's types

runtime::DpsSignature read_dps_signature(const ExternFuncNode& f, const std::string& noun,
                                         const std::string& tensors_note) {
  if (f.convention != "dps") {
    LOOM_THROW(Error) << noun << " follows the dps convention (outputs are trailing parameters), not '" << f.convention
                      << "'";
  }
  const auto* tuple = f.signature->ret.as<TupleTypeNode>();
  if (f.signature->ret.defined() && !(tuple && tuple->fields.size() == 0)) {
    LOOM_THROW(Error) << noun << " returns nothing (its outputs are parameters), but the signature returns "
                      << to_text(f.signature->ret);
  }
  runtime::DpsSignature out;
  std::map<const Object*, int> dim_index;
  for (size_t i = 0; i < f.signature->params.size(); ++i) {
    const auto* t = f.signature->params[i].as_object_ref().as<TensorTypeNode>();
    std::string where = "parameter " + std::to_string(i);
    if (!t) {
      LOOM_THROW(Error) << where << " is " << to_text(f.signature->params[i].cast<Type>()) << "; " << noun
                        << " takes tensors " << tensors_note;
    }
    if (t->unknown_rank()) LOOM_THROW(Error) << where << " has an unknown rank; " << noun << " must know its shapes";
    if (t->dtype.lanes != 1) LOOM_THROW(Error) << where << " has the vector dtype " << t->dtype.to_string();
    runtime::DpsTensor p;
    p.dtype = t->dtype;
    for (const Any& d : t->shape) {
      if (const auto* imm = d.as_object_ref().as<IntImmNode>()) {
        p.dims.push_back(imm->value);
        p.dim_vars.push_back(-1);
      } else if (const auto* var = d.as_object_ref().as<VarNode>()) {
        auto found = dim_index.find(var);
        if (found == dim_index.end()) {
          found = dim_index.emplace(var, static_cast<int>(out.dims.size())).first;
          out.dims.push_back(var->name);
        }
        p.dims.push_back(-1);
        p.dim_vars.push_back(found->second);
      } else {
        LOOM_THROW(Error) << where << " has the extent " << to_text(d.cast<PrimExpr>())
                          << "; extents are integers or symbolic dimensions";
      }
    }
    out.params.push_back(std::move(p));
  }
  return out;
}

}  // namespace loom::tir
