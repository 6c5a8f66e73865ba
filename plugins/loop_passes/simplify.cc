#include "simplify.h"

#include "prim_util.h"

namespace loom::loop {

transform::Pass Simplify() {
  transform::PassInfo info{"Simplify",
                           "prim functions: integer arithmetic folded and canonicalised, facts from loop bounds applied, "
                           "trivial loops, ifs and sequences removed",
                           0, {}, {}};
  return prim_pass(info, [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) {
    return simplify(f.body);
  });
}

}  // namespace loom::loop
