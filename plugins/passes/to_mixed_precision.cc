#include "to_mixed_precision.h"

#include "graph_util.h"
#include "loom/ir/op.h"

namespace loom::passes {

namespace {

bool float32_tensor(const ir::Expr& e) {
  const auto* t = e->checked_type.as<ir::TensorTypeNode>();
  return t && t->dtype == DataType::Float(32);
}

}  // namespace

transform::Pass ToMixedPrecision() {
  transform::PassInfo info =
      transform::PassInfo::named("ToMixedPrecision")
          .summary(
              "conv2d, matmul and dense of float32 take their operands in bfloat16 (or float16) and sum in float32; "
              "constant weights are converted once, at compile time (by FoldConstant)")
          .opt_level(1)
          .options({SchemaField{"dtype", "str", Any(std::string("bfloat16")), "the operands' narrow dtype"}.one_of(
              {"bfloat16", "float16"})})
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return graph_body_pass(info, [](const graph::FunctionNode& f, const transform::PassContext& context) {
    Map narrow(std::map<std::string, Any>{
        {"dtype", Any(DataType::parse(context.get_config("ToMixedPrecision.dtype").as_string()))}});
    Mutator m;
    m.on<graph::CallNode>([&](const graph::CallNode* original, const ObjectRef& self) -> Any {
      ObjectRef mutated = m.mutate_children(self);
      const auto* call = mutated.as<graph::CallNode>();
      if (!product_call(downcast<ir::Expr>(self)) || call->args.size() != 2) return Any(mutated);
      Map attrs = ir::OpRegistry::check_attrs(call->callee.as<ir::OpNode>()->name, call->attrs);
      if (!attrs.at("out_dtype").as_string().empty()) return Any(mutated);
      std::vector<ir::Expr> args;
      for (size_t i = 0; i < 2; ++i) {
        ir::Expr typed = original->args[i].cast<ir::Expr>();
        // A dequantized operand is QDQToInteger's to make integer.
        if (!float32_tensor(typed) || call_of(typed, "dequantize")) return Any(mutated);
        args.push_back(call_op("cast", {call->args[i].cast<ir::Expr>()}, narrow));
      }
      return Any(
          graph::Call(call->callee, args, with_attrs(call->attrs, {{"out_dtype", Any(std::string("float32"))}})));
    });
    return m.mutate_as<ir::Expr>(f.body);
  });
}

}  // namespace loom::passes
