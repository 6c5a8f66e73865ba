// Patterns over graph expressions (docs/partitioning.md): what a vendor's
// pattern table says its accelerator takes.  A pattern is a DAG of
// wildcards, constants, operator calls and alternatives, each with
// predicates on the expression it matches (dtype, rank, shape,
// attributes).  Matching looks through let-bound variables and reads
// checked types, so it runs after type inference.
#ifndef LOOM_GRAPH_PATTERN_H_
#define LOOM_GRAPH_PATTERN_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/expr.h"

namespace loom::graph {

struct PatternImpl;

class Pattern {
 public:
  // The same pattern, also requiring `pred` of the matched expression;
  // `what` describes the predicate (Pattern::describe).
  Pattern where(std::function<bool(const ir::Expr&)> pred, std::string what) const;
  // Predicates on the matched expression's checked type or call attributes.
  Pattern has_dtype(DataType dtype) const;
  Pattern has_rank(int64_t rank) const;
  Pattern has_shape(std::vector<int64_t> shape) const;  // constant extents
  // A call's attribute (the operator schema's default where the call does
  // not write it), structurally equal to `value`.
  Pattern has_attr(const std::string& name, Any value) const;
  // Either pattern (the left one first).
  Pattern operator|(const Pattern& other) const;
  // The pattern as text: op("relu", [op("add", [*, const])]) where dtype float32.
  std::string describe() const;

  const PatternImpl* get() const { return impl_.get(); }  // null for a default-made pattern
  Pattern() = default;                                    // no pattern: match() refuses it
  explicit Pattern(std::shared_ptr<const PatternImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const PatternImpl> impl_;
};

// Anything; a constant tensor; a call of operator `name` whose arguments
// match `args` in order (as many).
Pattern wildcard();
Pattern constant();
Pattern op(const std::string& name, std::vector<Pattern> args);

struct Match {
  ir::Expr root;  // what the whole pattern matched
  // The expression each sub-pattern matched (a sub-pattern used twice
  // matched one expression).
  std::map<const PatternImpl*, ir::Expr> bound;
  // The operator calls the pattern matched, each once, arguments before
  // the calls that read them (the root last): what a composite takes in.
  std::vector<ir::Expr> calls;
  // What the wildcards matched, in the order of a left-to-right walk of the
  // pattern, each once: the composite's inputs.
  std::vector<ir::Expr> inputs;
};

// The value a let-bound variable stands for, or nothing: how matching
// looks through `let %x = value`.
using Bindings = std::function<std::optional<ir::Expr>(const VarNode*)>;

// `expr` matched against `pattern`, or nothing.
std::optional<Match> match(const Pattern& pattern, const ir::Expr& expr, const Bindings& bindings = {});

}  // namespace loom::graph

#endif  // LOOM_GRAPH_PATTERN_H_
