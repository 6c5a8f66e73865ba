#include "simplify.h"

#include <loom/arith/simplify.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;

transform::Pass Simplify() {
  transform::PassInfo info = transform::PassInfo::named("Simplify")
                                 .summary(
                                     "prim functions: integer arithmetic folded and canonicalised, facts from loop "
                                     "bounds applied, trivial loops, ifs and sequences removed")
                                 .preserves({"*"});
  return transform::prim_pass(info, [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) {
    return simplify(f.body);
  });
}

}  // namespace loom::loop
