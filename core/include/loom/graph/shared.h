// Values that feed several consumers (docs/ir.md, "Shared values").
//
// Graph expressions are immutable nodes, so an expression built in Python or
// C++ may use one node in several places: `add(relu(v), tanh(v))` holds the
// node `v` twice.  Read as a tree, every use would compute it again, and a
// chain of such levels would cost exponentially more with its depth.  A walk
// that memoises by node sees each once, but a walk that rebuilds the
// expression in another form (fusion, code for the VM) must know where the
// value is computed.  bind_shared_values() says so explicitly: every call,
// tuple, tuple item, if or let used in more than one place is bound once by
// a let, placed in the innermost scope (the function body or an if branch)
// that holds all of its uses, before the first of them.  Variables,
// constants, globals, operators and nested functions are left shared.
#ifndef LOOM_GRAPH_SHARED_H_
#define LOOM_GRAPH_SHARED_H_

#include <unordered_map>
#include <unordered_set>

#include "loom/graph/expr.h"

namespace loom::graph {

// How many places use each node of `body` (an edge from each distinct
// parent; the body itself counts once).  The walk does not enter nested
// functions, as bind_shared_values does not.
std::unordered_map<const Object*, int> use_counts(const Expr& body);

// Whether some call, tuple, tuple item, if or let in `body` is used in more
// than one place.
bool has_shared_values(const Expr& body);

// `body` with each such value bound once by a let (see above); the same
// object when there is none.  Linear in the number of distinct nodes.
Expr bind_shared_values(const Expr& body);
// The same, adding to `introduced` each variable it binds (not the lets
// the body already had): the printer writes those bindings as
// `%v = value;`, which the parser reads back as the shared node itself.
Expr bind_shared_values(const Expr& body, std::unordered_set<const Object*>* introduced);

}  // namespace loom::graph

#endif  // LOOM_GRAPH_SHARED_H_
