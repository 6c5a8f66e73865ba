#include "loop_partition.h"

#include <tuple>

#include <loom/arith/simplify.h>
#include <loom/object/traversal.h>
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

// A condition inside the loop (an if's, or a clause of a select's), with
// the loops between.
struct Guard {
  PrimExpr condition;
  std::vector<const ForNode*> inner;
};

// The clauses of a conjunction, each a guard of its own: a padded read's
// check (row in range && column in range) is decided on different loops.
void clauses(const PrimExpr& e, std::vector<PrimExpr>* out) {
  if (const auto* a = e.as<AndNode>()) {
    clauses(a->a, out);
    clauses(a->b, out);
  } else {
    out->push_back(e);
  }
}

// The guards on `var` inside `s`: conditions of ifs, and (with `selects`)
// the clauses of selects' conditions that read no memory (a padded input
// read in place: select(row and column in range, x[...], 0)).
void collect(const Stmt& s, const VarNode* var, bool selects, std::vector<const ForNode*>* inner,
             std::vector<Guard>* out) {
  pre_order(
      s,
      [&](const Stmt& st) {
        if (const auto* f = st.as<ForNode>()) {
          inner->push_back(f);
          collect(f->body, var, selects, inner, out);
          inner->pop_back();
          return false;
        }
        if (const auto* i = st.as<IfThenElseNode>()) {
          // Each clause of a conjunction a guard of its own (a tile's
          // last row and last column are decided on different loops).
          std::vector<PrimExpr> parts;
          clauses(i->condition, &parts);
          for (const PrimExpr& c : parts)
            if (uses_var(Any(c), var)) out->push_back({c, *inner});
        }
        return true;
      },
      [&](const PrimExpr& e) {
        const auto* sel = e.as<SelectNode>();
        if (selects && sel && uses_var(Any(sel->condition), var)) {
          std::vector<PrimExpr> parts;
          clauses(sel->condition, &parts);
          for (const PrimExpr& c : parts)
            if (uses_var(Any(c), var) && !reads_memory(c)) out->push_back({c, *inner});
        }
        return true;
      });
}

class Partitioner {
 public:
  // Loops are partitioned where they stand, under the ranges of the loops
  // around them.
  // Guards of selects count where `selects` is set: everywhere but in the
  // shorter part of a split (a border of a few iterations keeps its
  // checks, so a padded convolution's edges and corners do not multiply
  // into copies of its body; a vector loop's tail still loses its guard).
  Stmt run(const Stmt& s, const Analyzer& an, bool selects = true) {
    return Rewriter()
        .pre_stmt([&](const Stmt& st) -> std::optional<Stmt> {
          const auto* f = st.as<ForNode>();
          if (!f) return std::nullopt;
          return loop(st, *f, an, selects);
        })
        .run(s);
  }

 private:
  Stmt loop(const Stmt& s, const ForNode& loop_node, Analyzer an, bool selects) {
    const ForNode* f = &loop_node;
    auto begin = const_int(simplify(f->min, an)), extent = const_int(simplify(f->extent, an));
    // A thread-bound loop is the device's.  A vectorized loop is split
    // by ifs only (a tail), never by a select's lane-dependent condition
    // (a select of lanes is one vector instruction).  An unrolled loop is
    // split by selects even in a border (its code is as long either way):
    // a border tile of 7 pixels checks only the pixels next to the edge.
    bool own = (selects || f->for_kind() == ForKind::kUnrolled) && f->for_kind() != ForKind::kVectorized;
    if (begin && extent && *extent > 1 && f->for_kind() != ForKind::kThreadBinding) {
      if (f->for_kind() == ForKind::kParallel) {
        // A parallel loop stays one loop (one parallel region, its
        // iterations shared among the threads); its body branches on the
        // loop variable into the decided ranges instead.
        std::vector<std::tuple<int64_t, int64_t, bool>> parts;
        ranges(*f, *begin, *begin + *extent, an, own, &parts);
        if (parts.size() > 1) {
          Stmt body;
          for (size_t k = parts.size(); k-- > 0;) {
            auto [lo, hi, inner_selects] = parts[k];
            Analyzer inner = an;
            inner.bind(f->loop_var.get(), Bound{lo, hi - 1});
            Stmt part = run(simplify(fresh_bindings(f->body), inner), inner, inner_selects);
            body =
                body.defined() ? Stmt(IfThenElse(LT(f->loop_var, IntImm(f->loop_var->dtype, hi)), part, body)) : part;
          }
          return with_kind_and_body(*f, f->for_kind(), body);
        }
      } else if (auto split = split_point(*f, *begin, *begin + *extent, an, own)) {
        // [begin, split) and [split, end), each simplified under its range
        // (so the decided condition goes), then partitioned further.
        Var tail_var(f->loop_var->name, f->loop_var->dtype);
        Stmt tail_body = substitute(fresh_bindings(f->body), {{f->loop_var.get(), tail_var}});
        DataType t = f->min.dtype();
        For head(f->loop_var, f->min, IntImm(f->extent.dtype(), *split - *begin), f->for_kind(), f->body, f->thread,
                 f->annotations);
        For tail(tail_var, IntImm(t, *split), IntImm(f->extent.dtype(), *begin + *extent - *split), f->for_kind(),
                 tail_body, f->thread, f->annotations);
        // The loops inside keep `selects` (an unrolled loop in a border
        // splits itself, not the loops below it).
        bool head_longer = *split - *begin >= *begin + *extent - *split;
        return seq({run(simplify(Stmt(head), an), an, selects && own && head_longer),
                    run(simplify(Stmt(tail), an), an, selects && own && !head_longer)});
      }
    }
    an.bind_loop(*f);
    Stmt body = run(f->body, an, selects);
    if (body.same_as(f->body)) return s;
    return with_kind_and_body(*f, f->for_kind(), body);
  }

  // [begin, end) cut at split_point's points until no guard is decided on
  // a prefix or suffix of a part (the shorter part of a cut by if guards
  // alone, as run partitions it).  Each part comes with whether guards of
  // selects still count in it.
  void ranges(const ForNode& f, int64_t begin, int64_t end, const Analyzer& an, bool selects,
              std::vector<std::tuple<int64_t, int64_t, bool>>* out) {
    auto split = end - begin > 1 ? split_point(f, begin, end, an, selects) : std::nullopt;
    if (!split) {
      out->emplace_back(begin, end, selects);
      return;
    }
    bool head_longer = *split - begin >= end - *split;
    ranges(f, begin, *split, an, selects && head_longer, out);
    ranges(f, *split, end, an, selects && !head_longer, out);
  }

  // The first point p in (begin, end) such that some guard is decided on
  // [begin, p) (or on [p, end)) for every value of the inner loops.
  std::optional<int64_t> split_point(const ForNode& f, int64_t begin, int64_t end, const Analyzer& outer,
                                     bool selects) {
    std::vector<Guard> guards;
    std::vector<const ForNode*> inner;
    collect(f.body, f.loop_var.get(), selects, &inner, &guards);
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
