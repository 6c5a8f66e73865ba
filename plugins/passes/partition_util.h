// What MergeComposite, AnnotateTarget and PartitionGraph share
// (docs/partitioning.md): the codegens a module partitions for, with their
// pattern tables, the functions they partition, and composite functions
// made from pattern matches.
#ifndef LOOM_PLUGINS_PASSES_PARTITION_UTIL_H_
#define LOOM_PLUGINS_PASSES_PARTITION_UTIL_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_util.h"
#include "loom/graph/pattern_table.h"
#include "loom/transform/pass.h"

namespace loom::passes {

// The pattern tables of the codegens the module partitions for (its
// attribute partition, set by the config's target.partition), in priority
// order; empty when it partitions for none.  A codegen without a table is
// a LookupError naming it.
std::vector<graph::PatternTable> partition_tables(const ir::IRModule& module);

// Whether the passes partition `f`: a graph function that is not a
// primitive (fused or composite) function nor compiled by a codegen.
bool partitionable(const ir::BaseFunc& f);

// The composite function a pattern's entry names, if `callee` is one.
const graph::FunctionNode* composite_callee(const ir::IRModule& module, const ir::Expr& callee);

struct Chain;

// The shape of the three passes: a module pass with the contract they
// share that changes nothing without the attribute partition and
// otherwise gives each partitionable graph function's chain to `rewrite`,
// which returns whether it changed the chain and may add functions to
// `out` (named through `names`).
using ChainRewrite = std::function<bool(const ir::IRModule& module, const std::vector<graph::PatternTable>& tables,
                                        const std::string& function, Chain& chain, FunctionNames& names,
                                        std::map<std::string, Any>& out)>;
transform::Pass partition_pass(const std::string& name, const std::string& summary, ChainRewrite rewrite);

// A function's top-level chain (flatten_chain), the result call bound too,
// with what matching needs: each binding's index by variable and by value.
struct Chain {
  std::vector<graph::Binding> bindings;
  ir::Expr result;
  graph::Var result_var;  // bound to the result when that was a call
  std::unordered_map<const Object*, size_t> index_of_var;
  std::unordered_map<const Object*, size_t> index_of_value;

  explicit Chain(const ir::Expr& body);
  // The function's body again, from the (rewritten) bindings; a binding
  // whose value was made undefined is left out.
  ir::Expr body() const;
  // Let-bound variables to their current values, for graph::match.
  graph::Bindings lookup() const;
  void set(size_t i, const ir::Expr& value);  // a binding's new value
};

// `entry`'s pattern matched against binding `i`'s value, its check
// applied: the match, or nothing.  A predicate or check that throws is an
// Error naming the entry.
std::optional<graph::Match> match_entry(const graph::PatternEntry& entry, const std::string& codegen,
                                        const Chain& chain, size_t i);

// The bindings a match's calls are, in order (arguments first), or
// nothing when one is not a binding of the chain.
std::optional<std::vector<size_t>> matched_bindings(const Chain& chain, const graph::Match& m);

// A composite function for match `m` of entry `name` over the bindings
// `members`: the pattern's inputs as parameters, the matched calls as its
// body, attrs {composite: NAME, primitive: 1} and codegen when given.
// Returns the function and its call (passing the inputs).
std::pair<graph::Function, ir::Expr> make_composite(const Chain& chain, const std::vector<size_t>& members,
                                                    const graph::Match& m, const std::string& name,
                                                    const std::string& codegen, const std::string& function_name);

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_PARTITION_UTIL_H_
