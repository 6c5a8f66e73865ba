#include "loop_partition.h"

#include <loom/arith/simplify.h>
#include <loom/tir/builder.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::Analyzer;
using arith::Bound;
using arith::simplify;

namespace {

// A condition of an if inside the loop, with the loops between.
struct Guard {
  PrimExpr condition;
  std::vector<const ForNode*> inner;
};

void collect(const Stmt& s, const VarNode* var, std::vector<const ForNode*>* inner, std::vector<Guard>* out) {
  pre_order(s, [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) {
      inner->push_back(f);
      collect(f->body, var, inner, out);
      inner->pop_back();
      return false;
    }
    if (const auto* i = st.as<IfThenElseNode>()) {
      if (uses_var(Any(i->condition), var)) out->push_back({i->condition, *inner});
    }
    return true;
  });
}

class Partitioner {
 public:
  // Loops are partitioned where they stand, under the ranges of the loops
  // around them.
  Stmt run(const Stmt& s, const Analyzer& an) {
    return Rewriter()
        .pre_stmt([&](const Stmt& st) -> std::optional<Stmt> {
          const auto* f = st.as<ForNode>();
          if (!f) return std::nullopt;
          return loop(st, *f, an);
        })
        .run(s);
  }

 private:
  Stmt loop(const Stmt& s, const ForNode& loop_node, Analyzer an) {
    const ForNode* f = &loop_node;
    auto begin = const_int(simplify(f->min, an)), extent = const_int(simplify(f->extent, an));
    if (begin && extent && *extent > 1 && f->for_kind() != ForKind::kThreadBinding) {
      if (auto split = split_point(*f, *begin, *begin + *extent, an)) {
        // [begin, split) and [split, end), each simplified under its range
        // (so the decided condition goes), then partitioned further.
        Var tail_var(f->loop_var->name, f->loop_var->dtype);
        Stmt tail_body = substitute(fresh_bindings(f->body), {{f->loop_var.get(), tail_var}});
        DataType t = f->min.dtype();
        For head(f->loop_var, f->min, IntImm(f->extent.dtype(), *split - *begin), f->for_kind(), f->body, f->thread,
                 f->annotations);
        For tail(tail_var, IntImm(t, *split), IntImm(f->extent.dtype(), *begin + *extent - *split), f->for_kind(),
                 tail_body, f->thread, f->annotations);
        return seq({run(simplify(Stmt(head), an), an), run(simplify(Stmt(tail), an), an)});
      }
    }
    an.bind_loop(*f);
    Stmt body = run(f->body, an);
    if (body.same_as(f->body)) return s;
    return with_kind_and_body(*f, f->for_kind(), body);
  }

  // The first point p in (begin, end) such that some guard is decided on
  // [begin, p) (or on [p, end)) for every value of the inner loops.
  std::optional<int64_t> split_point(const ForNode& f, int64_t begin, int64_t end, const Analyzer& outer) {
    std::vector<Guard> guards;
    std::vector<const ForNode*> inner;
    collect(f.body, f.loop_var.get(), &inner, &guards);
    for (const Guard& g : guards) {
      auto decided = [&](int64_t lo, int64_t hi) {  // on [lo, hi)
        Analyzer an = outer;
        an.bind(f.loop_var.get(), Bound{lo, hi - 1});
        for (const ForNode* l : g.inner) an.bind_loop(*l);
        return an.prove(g.condition) || an.disprove(g.condition);
      };
      if (decided(begin, end)) continue;  // Simplify's job
      // Longest decided prefix, then longest decided suffix (the provable
      // set of a range only grows as the range shrinks).
      int64_t lo = begin, hi = end;  // decided on [begin, lo], not on [begin, hi]
      if (decided(begin, begin + 1)) {
        lo = begin + 1;
        while (hi - lo > 1) {
          int64_t mid = lo + (hi - lo) / 2;
          (decided(begin, mid) ? lo : hi) = mid;
        }
        return lo;
      }
      if (decided(end - 1, end)) {
        lo = begin;
        hi = end - 1;  // decided on [hi, end)
        while (hi - lo > 1) {
          int64_t mid = lo + (hi - lo) / 2;
          (decided(mid, end) ? hi : lo) = mid;
        }
        return hi;
      }
    }
    return std::nullopt;
  }
};
}  // namespace

transform::Pass LoopPartition() {
  transform::PassInfo info =
      transform::PassInfo::named("LoopPartition")
          .summary(
              "a loop with constant bounds whose body has an if decided on a prefix (or suffix) of its range is split "
              "there, and each part simplified: the main part loses the check")
          .preserves({"*"});
  return transform::prim_pass(
      info,
      [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) {
        return Partitioner().run(f.body, Analyzer());
      },
      target::on_cpu_target);
}

}  // namespace loom::loop
