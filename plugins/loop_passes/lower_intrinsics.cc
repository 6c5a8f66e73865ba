#include "lower_intrinsics.h"

#include "loom/support/strings.h"
#include "loom/target/target.h"
#include "loom/tir/intrinsic.h"
#include "loom/tir/util.h"
#include <loom/tir/functor.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

namespace {

class Lowerer {
 public:
  explicit Lowerer(std::set<std::string> native) : native_(std::move(native)) {}

  Stmt run(const Stmt& s) {
    return Rewriter().post_expr([this](const PrimExpr& e) { return lower(e, 0); }).run(s);
  }

 private:
  // A call (its arguments already lowered) checked and, unless the target
  // implements it, replaced by its expansion, lowered in turn.
  PrimExpr lower(const PrimExpr& out, int depth) {
    const auto* c = out.as<CallNode>();
    if (!c) return out;
    auto entry = IntrinsicRegistry::entry(c->op);
    if (!entry) {
      if (native_.count(c->op)) return out;  // the target's own
      IntrinsicRegistry::get(c->op);         // loads a provider, or throws naming the closest
      entry = IntrinsicRegistry::entry(c->op);
    }
    if (entry->num_args >= 0 && static_cast<int>(c->args.size()) != entry->num_args) {
      LOOM_THROW(Error) << "intrinsic '" << c->op << "' takes " << entry->num_args << " argument(s), got "
                        << c->args.size();
    }
    if (entry->float_only) {  // its arguments are floats (isnan's result is bool)
      for (const Any& a : c->args) {
        DataType t = a.cast<PrimExpr>().dtype();
        if (t.code != DataType::kFloat && t.code != DataType::kBFloat) {
          LOOM_THROW(Error) << "intrinsic '" << c->op << "' needs float arguments, got " << t.to_string();
        }
      }
    }
    if (native_.count(c->op) || !entry->expand) return out;
    if (depth > 16) LOOM_THROW(Error) << "intrinsic '" << c->op << "' does not stop expanding (16 levels)";
    return Rewriter()
        .post_expr([this, depth](const PrimExpr& e) { return lower(e, depth + 1); })
        .run(entry->expand(*c));
  }

  std::set<std::string> native_;
};
}  // namespace

transform::Pass LowerIntrinsics() {
  transform::PassInfo info = transform::PassInfo::named("LowerIntrinsics")
                                 .summary(
                                     "intrinsic calls checked (known, arity, dtype); those the target's codegen does "
                                     "not implement are replaced by their expansion")
                                 .establishes({"intrinsics_lowered"})
                                 .preserves({"*"});
  // Each function against its own target's intrinsics (function_target).
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    return module.with_functions(
        transform::rewrite_prim_funcs(module, [&](const std::string& name, const tir::PrimFunc& f) {
          tir::Stmt body = Lowerer(target::native_intrinsics(target::function_target(module, name))).run(f->body);
          return body.same_as(f->body) ? f : tir::with_body(*f.get(), body);
        }));
  });
}

}  // namespace loom::loop
