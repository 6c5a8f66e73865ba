// Defining a graph operator from a plugin (docs/operators.md, "Adding an
// operator"; docs/plugins.md, "Write a backend"): its schema, its type
// rule and its lowering to a prim function in one call, and the helpers
// type rules and lowerings share.  Installed with the SDK; the operator
// library (plugin `ops`) defines every built-in operator through it.
//
// A type rule reads the call's argument types (InferType has typed them)
// and returns the result type, or throws TypeError naming what is wrong;
// a lowering builds the prim function of a typed call with the core's
// PrimBuilder (loom/tir/builder.h).  LegalizeOps turns every call of the
// operator into call_dps of its lowering.
#ifndef LOOM_GRAPH_OPERATOR_H_
#define LOOM_GRAPH_OPERATOR_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/expr.h"
#include "loom/ir/op.h"
#include "loom/tir/function.h"

namespace loom::graph {

// Registers operator `name` (OpRegistry) with `arity` inputs (-1: any),
// its attribute schema, fusion pattern, documentation, type rule and
// lowering (the property "FLower": a typed call -> tir.PrimFunc).  An
// empty `lower` registers an operator without a lowering (one a codegen
// or a pass handles itself).
void define_operator(const std::string& name, int arity, std::vector<SchemaField> attrs, ir::PatternKind pattern,
                     const std::string& doc, std::function<ir::Type(const CallNode&)> type_rule,
                     std::function<tir::PrimFunc(const CallNode&)> lower);

// An example call of an operator, for the conformance kit (`loomc plugin
// test`, docs/plugin-tools.md): `call` in the text format over the inputs
// %a0, %a1, ... whose types `inputs` gives ("Tensor[(3, 5), float32]"),
// run on random inputs uniform in [low, high] (integers: the whole numbers
// in it).
struct OpExample {
  std::string call;
  std::vector<std::string> inputs;
  double low = -3, high = 3;
};
// Declares the examples of operator `op` (registered; the property
// "examples", rolled back with its plugin); a later call replaces them.
void set_op_examples(const std::string& op, const std::vector<OpExample>& examples);
// The examples declared for `op`; empty when it declares none.
std::vector<OpExample> op_examples(const std::string& op);

// The call's attributes checked against its operator's schema, defaults
// filled in (a call carries only the attributes it was written with).
Map attrs_of(const CallNode& call);

// The inferred type of a typed call whose result is a tensor.
const ir::TensorTypeNode& result_type(const CallNode& call);

// The tensor type of argument `i` of `call`; TypeError naming the
// argument when it is missing, not a tensor, or of unknown rank.
const ir::TensorTypeNode& tensor_arg(const CallNode& call, size_t i);

// NumPy broadcasting of two shapes (aligned on the right; equal dimensions
// or a 1 broadcast); TypeError naming both shapes and the dimension.
std::vector<Any> broadcast_shapes(const Array& a, const Array& b);

// "(2, %n)": a shape as the text format writes it ("(4,)" for rank 1).
std::string shape_text(const Array& shape);

// The constant value of a dimension, if it is one.
std::optional<int64_t> constant_dim(const Any& d);
// Whether two dimensions are the same: equal constants, or the same
// expression over the same variables (two reshapes' %n * 4).
bool same_dim(const Any& a, const Any& b);
// The "padding" attribute of a convolution or a pooling (1, 2 or 4
// entries) as (top, left, bottom, right); TypeError for another count or
// a negative entry.
std::vector<int64_t> padding_of(const Map& attrs);
// `axis` normalised against `rank` (negative counts from the end);
// TypeError naming the axis and the rank when out of range.
int64_t normalize_axis(int64_t axis, size_t rank);

}  // namespace loom::graph

#endif  // LOOM_GRAPH_OPERATOR_H_
