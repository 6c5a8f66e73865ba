#include "to_mixed_precision.h"

#include "loom/graph/bindings.h"
#include "loom/graph/function.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"

namespace loom::passes {

namespace {

const ir::OpNode* product_op(const ir::Expr& e) {
  const auto* call = e.as<graph::CallNode>();
  const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
  if (!op || (op->name != "conv2d" && op->name != "matmul" && op->name != "dense")) return nullptr;
  return op;
}

bool is_call_of(const ir::Expr& e, const char* name) {
  const auto* call = e.as<graph::CallNode>();
  const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
  return op && op->name == name;
}

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
  return transform::function_pass<graph::FunctionNode>(
      info, [](const ir::BaseFunc& func, const ir::IRModule&, const transform::PassContext& context) -> ir::BaseFunc {
        const auto* f = func.as<graph::FunctionNode>();
        Map narrow(std::map<std::string, Any>{
            {"dtype", Any(DataType::parse(context.get_config("ToMixedPrecision.dtype").as_string()))}});
        Mutator m;
        m.on<graph::CallNode>([&](const graph::CallNode* original, const ObjectRef& self) -> Any {
          ObjectRef mutated = m.mutate_children(self);
          const auto* call = mutated.as<graph::CallNode>();
          const ir::OpNode* op = product_op(downcast<ir::Expr>(self));
          if (!op || call->args.size() != 2) return Any(mutated);
          Map attrs = ir::OpRegistry::check_attrs(op->name, call->attrs);
          if (!attrs.at("out_dtype").as_string().empty()) return Any(mutated);
          std::vector<ir::Expr> args;
          for (size_t i = 0; i < 2; ++i) {
            ir::Expr typed = original->args[i].cast<ir::Expr>();
            // A dequantized operand is QDQToInteger's to make integer.
            if (!float32_tensor(typed) || is_call_of(typed, "dequantize")) return Any(mutated);
            args.push_back(graph::Call(ir::Op::get("cast"), {call->args[i].cast<ir::Expr>()}, narrow));
          }
          std::map<std::string, Any> items = call->attrs.get() ? call->attrs->items : std::map<std::string, Any>{};
          items["out_dtype"] = Any(std::string("float32"));
          return Any(graph::Call(call->callee, args, Map(items)));
        });
        ir::Expr body = m.mutate_as<ir::Expr>(f->body);
        if (body.same_as(f->body)) return func;
        return graph::with_body(*f, body);
      });
}

}  // namespace loom::passes
