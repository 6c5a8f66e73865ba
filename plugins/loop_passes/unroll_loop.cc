#include "unroll_loop.h"

#include <loom/arith/simplify.h>
#include <loom/tir/builder.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;

namespace {

// The most statements an unrolled loop may become, whatever the options
// (docs/passes.md): nested unrolled loops multiply, and 1024 x 1024 copies
// is no longer a loop body but a build that does not end.
constexpr int64_t kMaxUnrolledStatements = 65536;

int64_t count_statements(const Stmt& s) {
  int64_t n = 0;
  pre_order(s, [&](const Stmt&) { return ++n <= kMaxUnrolledStatements; });
  return n;
}

class Unroller {
 public:
  Unroller(int64_t max_extent, int64_t auto_max_extent) : max_(max_extent), auto_max_(auto_max_extent) {}

  Stmt run(const Stmt& s) {
    return Rewriter().post_stmt([this](const Stmt& out) { return unroll(out); }).run(s);
  }

 private:
  // A loop whose body is already unrolled.
  Stmt unroll(const Stmt& out) {
    const auto* f = out.as<ForNode>();
    if (!f) return out;
    auto extent = const_int(simplify(f->extent));
    bool marked = f->for_kind() == ForKind::kUnrolled;
    bool automatic = f->for_kind() == ForKind::kSerial && extent && *extent <= auto_max_ && !has_loop(f->body);
    if (!marked && !automatic) return out;
    std::string reason;
    if (!extent) {
      reason = "its extent is not a constant";
    } else if (*extent > max_) {
      reason =
          "its extent " + std::to_string(*extent) + " exceeds UnrollLoop.max_extent (" + std::to_string(max_) + ")";
    } else if (int64_t body = count_statements(f->body); body * *extent > kMaxUnrolledStatements) {
      reason = std::to_string(*extent) + " copies of its body (" + std::to_string(body) +
               " statements each) exceed the " + std::to_string(kMaxUnrolledStatements) +
               " statements a loop unrolls to";
    } else {
      std::vector<Stmt> copies;
      for (int64_t k = 0; k < *extent; ++k) {
        PrimExpr at = simplify(Add(f->min, PrimExpr(IntImm(f->min.dtype(), k))));
        Stmt body = k == 0 ? f->body : fresh_bindings(f->body);
        copies.push_back(simplify(substitute(body, {{f->loop_var.get(), at}})));
      }
      return seq(copies);
    }
    return serial_with_note(*f, "unroll_refused", reason);
  }

  int64_t max_, auto_max_;
};
}  // namespace

transform::Pass UnrollLoop() {
  transform::PassInfo info =
      transform::PassInfo::named("UnrollLoop")
          .summary(
              "loops marked unrolled (and, with auto_max_extent, short innermost serial loops) become one copy of the "
              "body per iteration")
          .options({SchemaField{"max_extent", "int", Any(int64_t{256}),
                                "the longest loop that is unrolled; longer ones stay serial, annotated"}
                        .between(0, 4096),
                    SchemaField{
                        "auto_max_extent", "int", Any(int64_t{0}),
                        "innermost serial loops of constant extent up to this are unrolled too (0: only marked loops)"}
                        .between(0, 64)})
          .preserves({"*"});
  return transform::prim_pass(
      info,
      [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext& ctx) {
        return Unroller(ctx.get_config("UnrollLoop.max_extent").as_int(),
                        ctx.get_config("UnrollLoop.auto_max_extent").as_int())
            .run(f.body);
      },
      target::on_cpu_target);
}

}  // namespace loom::loop
