// prim_pass: the shape of every loop pass -- a module pass that rewrites
// the body of each prim function and leaves the other functions alone.
#ifndef LOOM_TRANSFORM_PRIM_PASS_H_
#define LOOM_TRANSFORM_PRIM_PASS_H_

#include <functional>
#include <map>
#include <string>

#include "loom/tir/function.h"
#include "loom/transform/pass.h"

namespace loom::transform {

// Which prim functions a pass rewrites: `selects(module, name)`; an empty
// filter selects all.  The target area gives the usual two
// (target::on_cpu_target, target::on_device_target), so one pipeline
// serves a module whose functions are placed on several targets
// (docs/devices.md, "One module, several devices"): its CPU passes leave
// the kernels alone and its device passes the CPU functions.
using FunctionFilter = std::function<bool(const ir::IRModule& module, const std::string& name)>;

// `body_of(f, module, ctx)` returns the function's new body (the same
// object when unchanged).  An Error from it is re-thrown prefixed with
// "@name: ".
using PrimBodyFn = std::function<tir::Stmt(const tir::PrimFuncNode&, const ir::IRModule&, const PassContext&)>;
Pass prim_pass(PassInfo info, PrimBodyFn body_of, FunctionFilter selects = {});

// The walk under prim_pass, for module passes that change more than a
// body (parameters, attributes): `rewrite(name, f)` for each prim function
// of `module` (those `selects` selects), returning the function (the same
// object when unchanged);
// an Error from it is re-thrown prefixed with "@name: ".  Returns the
// changed functions by name, for IRModule::with_functions.
using PrimFuncRewrite = std::function<tir::PrimFunc(const std::string& name, const tir::PrimFunc& f)>;
std::map<std::string, Any> rewrite_prim_funcs(const ir::IRModule& module, const PrimFuncRewrite& rewrite,
                                              const FunctionFilter& selects = {});

}  // namespace loom::transform

#endif  // LOOM_TRANSFORM_PRIM_PASS_H_
