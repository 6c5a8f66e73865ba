// Graph functions (see docs/ir.md, "Graph IR"): parameters, a body
// expression and a result type.
#ifndef LOOM_GRAPH_FUNCTION_H_
#define LOOM_GRAPH_FUNCTION_H_

#include <string>
#include <vector>

#include "loom/graph/expr.h"
#include "loom/ir/function.h"

namespace loom::graph {

class FunctionNode : public ir::BaseFuncNode {
 public:
  Array params;  // of graph.Var
  Expr body;
  Type ret_type;  // may be none until type inference
  LOOM_OBJECT(FunctionNode, ir::BaseFuncNode, "graph.Function");
  static void reflect(ReflectionBuilder<FunctionNode>& r) {
    r.field("params", &FunctionNode::params)
        .elements<Var>()
        .field("body", &FunctionNode::body)
        .field("ret_type", &FunctionNode::ret_type, "none until inferred", kOptional);
  }
};
class Function : public ir::BaseFunc {
 public:
  LOOM_OBJECT_REF(Function, ir::BaseFunc, FunctionNode)
  Function(std::vector<Var> params, Expr body, Type ret_type = Type(), Map attrs = Map::empty());
};

// The codegen that compiles graph function `f` instead of the graph passes
// and the VM (its attribute codegen: a partitioned region or a composite,
// docs/partitioning.md), or "" for any other function.
std::string codegen_of(const ir::BaseFunc& f);

}  // namespace loom::graph

#endif  // LOOM_GRAPH_FUNCTION_H_
