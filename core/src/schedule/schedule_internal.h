// What the files of the Schedule (schedule.cc and schedule_*.cc) share,
// private to core/src/tir: the Recorder each primitive holds to record its
// trace step, and the helpers the primitive families use (defined in
// schedule.cc).  The helpers are hidden: they are not part of
// libloom_core's interface, as they were not when one file held them all.
#ifndef LOOM_SRC_SCHEDULE_SCHEDULE_INTERNAL_H_
#define LOOM_SRC_SCHEDULE_SCHEDULE_INTERNAL_H_

#include <exception>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/support/json.h"
#include "loom/tir/functor.h"
#include "loom/schedule/schedule.h"

namespace loom::tir {

// Records a primitive's step when it is the outermost primitive running
// and it returns without an exception.
class Schedule::Recorder {
 public:
  template <class... Args>
  Recorder(Schedule& s, const std::string& primitive, const Args&... args)
      : s_(s), exceptions_(std::uncaught_exceptions()) {
    ++s_.depth_;
    step_.kind = JsonValue::Kind::kArray;
    add(primitive);
    (add(args), ...);
  }
  ~Recorder() {
    if (--s_.depth_ == 0 && std::uncaught_exceptions() == exceptions_) s_.trace_.push_back(std::move(step_));
  }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  void add(const std::string& text) {
    JsonValue v;
    v.kind = JsonValue::Kind::kString;
    v.string = text;
    step_.array.push_back(std::move(v));
  }
  void add(int64_t number) {
    JsonValue v;
    v.kind = JsonValue::Kind::kInt;
    v.integer = number;
    step_.array.push_back(std::move(v));
  }
  void add(const std::vector<std::string>& names) {
    JsonValue list;
    list.kind = JsonValue::Kind::kArray;
    for (const std::string& n : names) {
      JsonValue v;
      v.kind = JsonValue::Kind::kString;
      v.string = n;
      list.array.push_back(std::move(v));
    }
    step_.array.push_back(std::move(list));
  }

 private:
  Schedule& s_;
  JsonValue step_;
  int exceptions_;
};

#pragma GCC visibility push(hidden)
namespace schedule_detail {

// Throws the ScheduleError "schedule.<primitive>: <why>".
[[noreturn]] void refuse(const std::string& primitive, const std::string& why);

// Every loop in `body`, in pre-order.
std::vector<const ForNode*> all_loops(const Stmt& body);

// Rewriting with the core's Rewriter (loom/tir/functor.h): a rule
// returning a value replaces the node, whose subtree is then not visited.
using ExprRule = Rewriter::PreExpr;
using StmtRule = Rewriter::PreStmt;
// `e` rewritten by the rule `fe`.
PrimExpr rewrite(const PrimExpr& e, const ExprRule& fe);
// `s` rewritten by the rules `fe` (expressions) and `fs` (statements).
Stmt rewrite(const Stmt& s, const ExprRule& fe, const StmtRule& fs);
// `root` with the statement `target` replaced by `with`.
Stmt replace(const Stmt& root, const Object* target, const Stmt& with);

// A load or a store of a buffer.
struct Access {
  const BufferNode* buffer;
  Array indices;
  bool store;
};
// Every load and store in `s`, in order.
std::vector<Access> accesses(const Stmt& s);

// The reference to `node` (a Ref of its type).
template <class Ref, class Node>
Ref ref_of(const Node* node) {
  return downcast<Ref>(ObjectRef(ObjectPtr<Object>(const_cast<Node*>(node))));
}

// The indices as text: "[%i, %j + 1]".
std::string indices_text(const Array& indices);

// The statements of a sequence; `s` alone when it is not one.
std::vector<Stmt> elements(const Stmt& s);

// The loop named `name`; else a refusal (as `primitive`) with a suggestion.
const ForNode* find_loop(const PrimFunc& func, const std::string& primitive, const std::string& name);

// A name not used by any variable or buffer of the function, nor in `taken`.
std::string fresh_name(const PrimFunc& func, const std::string& base, const std::set<std::string>& taken = {});
// n fresh int64 variables prefix0, prefix1, ... (fresh_name's, apart from each other).
std::vector<Var> fresh_vars(const PrimFunc& func, const std::string& prefix, size_t n);

// The function with `body` as its body.
PrimFunc with_new_body(const PrimFunc& func, const Stmt& body);

// `cond` around the innermost body of the perfect nest `s` (as far down as
// the loops' bounds do not use `vars`).
Stmt push_guard(const Stmt& s, const PrimExpr& cond, const std::vector<const VarNode*>& vars);

// Whether `s` accesses the memory of `buffer` (with `stores_only`, writes it).
bool touches(const Stmt& s, const BufferNode* buffer, bool stores_only = false);

// The indices as expressions.
std::vector<PrimExpr> exprs_of(const Array& indices);

// The statements from `root` down to `target` (both included) appended to
// `path`; false (`path` as it was) when `target` is not below `root`.
bool path_to(const Stmt& root, const Object* target, std::vector<Stmt>& path);

}  // namespace schedule_detail
#pragma GCC visibility pop

}  // namespace loom::tir

#endif  // LOOM_SRC_SCHEDULE_SCHEDULE_INTERNAL_H_
