#include "graph_util.h"

#include <cstring>
#include <unordered_set>
#include <vector>

#include "loom/graph/type_infer.h"
#include "loom/ir/op.h"
#include "loom/runtime/ndarray.h"
#include "loom/tir/function.h"
#include "loom/support/stack.h"

namespace loom::passes {

FunctionNames::FunctionNames(const ir::IRModule& module) {
  for (const std::string& name : module.names()) taken_.insert(name);
}

std::string FunctionNames::fresh(const std::string& hint) {
  std::string base = hint;
  for (char& c : base)
    if (c == '.') c = '_';
  std::string name = base;
  int64_t& k = next_suffix_[base];  // the suffixes below it are taken: linear over many fresh names
  while (taken_.count(name)) name = base + "_" + std::to_string(++k);
  taken_.insert(name);
  return name;
}

namespace {
// The evaluator FoldConstant declares: the reference interpreter's
// run_prim_func (plugin ref, named in this plugin's manifest), so that
// folding and running agree bit for bit.
constexpr const char* kEvaluator = "ref.run_prim_func";

// A host array for each tensor of a static result type.
std::vector<runtime::NDArray> outputs_for(const ir::Type& type) {
  std::vector<ir::Type> tensors;
  if (const auto* tuple = type.as<ir::TupleTypeNode>()) {
    for (const Any& f : tuple->fields) tensors.push_back(f.cast<ir::Type>());
  } else {
    tensors.push_back(type);
  }
  std::vector<runtime::NDArray> out;
  for (const ir::Type& t : tensors) {
    const auto* tensor = t.as<ir::TensorTypeNode>();
    if (!tensor || tensor->unknown_rank()) return {};
    std::vector<int64_t> shape;
    for (const Any& d : tensor->shape) {
      const auto* c = dynamic_cast<const tir::IntImmNode*>(d.object());
      if (!c) return {};
      shape.push_back(c->value);
    }
    out.push_back(runtime::NDArray::empty(shape, tensor->dtype));
  }
  return out;
}

// The constant whose bytes are the result's, in their order, when the
// call only renames its shape (reshape, expand_dims, squeeze): copied,
// they are what the interpreter would write, to the bit, without running
// it over each element (a 3-D convolution's weights reshaped for its
// conv2d: 6.7 s for 1.8 M elements in the interpreter).
const runtime::NDArray* same_bytes(const std::string& op, const std::vector<ir::Expr>& args,
                                   const std::vector<runtime::NDArray>& outputs) {
  static const std::unordered_set<std::string> kRenamings = {"reshape", "expand_dims", "squeeze"};
  if (!kRenamings.count(op) || args.size() != 1 || outputs.size() != 1) return nullptr;
  const runtime::NDArray& in = args[0].as<graph::ConstantNode>()->data;
  bool same = in->is_contiguous() && in->device.device_type == Device::kCPU && in->dtype == outputs[0]->dtype &&
              in->nbytes() == outputs[0]->nbytes();
  return same ? &in : nullptr;
}

}  // namespace

ir::Expr evaluate_call(const graph::CallNode& call, const std::vector<ir::Expr>& args) {
  const auto* op = call.callee.as<ir::OpNode>();
  std::optional<Any> lower = op ? ir::OpRegistry::property(op->name, "FLower") : std::nullopt;
  if (!lower) return ir::Expr();
  std::vector<ir::Type> type_args;
  for (const Any& t : call.type_args) type_args.push_back(t.cast<ir::Type>());
  graph::Call constant_call(call.callee, args, call.attrs, type_args);
  // The lowering reads the call's and the arguments' types.
  std::vector<ir::Diagnostic> problems;
  graph::infer_types(ir::IRModule(std::map<std::string, Any>{{"main", graph::Function({}, constant_call)}}), &problems);
  if (!problems.empty()) return ir::Expr();
  std::vector<runtime::NDArray> outputs = outputs_for(constant_call->checked_type);
  if (outputs.empty()) return ir::Expr();
  if (const runtime::NDArray* same = same_bytes(op->name, args, outputs)) {
    std::memcpy(outputs[0].data_as<char>(), (*same)->data(), outputs[0]->nbytes());
    return graph::Constant(outputs[0]);
  }
  tir::PrimFunc prim = lower->cast<Function>()(ObjectRef(constant_call)).cast<tir::PrimFunc>();
  std::vector<Any> call_args{Any(prim)};
  for (const ir::Expr& a : args) call_args.push_back(Any(a.as<graph::ConstantNode>()->data));
  for (const runtime::NDArray& o : outputs) call_args.push_back(Any(o));
  FunctionRegistry::get(kEvaluator).call(call_args.data(), static_cast<int32_t>(call_args.size()));
  if (!constant_call->checked_type.as<ir::TupleTypeNode>()) return graph::Constant(outputs[0]);
  std::vector<ir::Expr> fields;
  for (const runtime::NDArray& o : outputs) fields.push_back(graph::Constant(o));
  return graph::Tuple(fields);
}
const graph::CallNode* call_of(const ir::Expr& e, const char* name) {
  const auto* call = e.as<graph::CallNode>();
  const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
  return op && op->name == name ? call : nullptr;
}

const graph::CallNode* product_call(const ir::Expr& e) {
  for (const char* name : {"conv2d", "matmul", "dense"})
    if (const auto* call = call_of(e, name)) return call;
  return nullptr;
}

ir::Expr call_op(const char* op, std::vector<ir::Expr> args, Map attrs) {
  return graph::Call(ir::Op::get(op), std::move(args), std::move(attrs));
}

Map with_attrs(const Map& attrs, const std::map<std::string, Any>& changes) {
  std::map<std::string, Any> items = attrs.get() ? attrs->items : std::map<std::string, Any>{};
  for (const auto& [key, value] : changes) items[key] = value;
  return Map(items);
}

ir::Expr rewrite_calls(const ir::Expr& e, const CallRewrite& rewrite) {
  Mutator m;
  m.on<graph::CallNode>([&](const graph::CallNode* original, const ObjectRef& self) -> Any {
    ObjectRef mutated = m.mutate_children(self);
    ir::Expr rewritten = rewrite(*original, *mutated.as<graph::CallNode>());
    return rewritten.defined() ? Any(rewritten) : Any(mutated);
  });
  return m.mutate_as<ir::Expr>(e);
}

ir::IRModule rewrite_graph_bodies(
    const ir::IRModule& module,
    const std::function<ir::Expr(const std::string&, const graph::FunctionNode&)>& rewrite) {
  std::map<std::string, Any> updates;
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).as<graph::FunctionNode>();
    if (!f || f->attrs.contains("primitive") || f->attrs.contains("codegen")) continue;
    ir::Expr body = rewrite(name, *f);
    if (!body.same_as(f->body)) updates[name] = Any(graph::with_body(*f, body));
  }
  return updates.empty() ? module : module.with_functions(updates);
}

transform::Pass graph_body_pass(
    const transform::PassInfo& info,
    std::function<ir::Expr(const graph::FunctionNode&, const transform::PassContext&)> rewrite) {
  return transform::function_pass<graph::FunctionNode>(
      info,
      [rewrite = std::move(rewrite)](const ir::BaseFunc& func, const ir::IRModule&,
                                     const transform::PassContext& context) -> ir::BaseFunc {
        const auto* f = func.as<graph::FunctionNode>();
        ir::Expr body = rewrite(*f, context);
        if (body.same_as(f->body)) return func;
        return graph::with_body(*f, body);
      });
}

std::pair<std::vector<graph::Binding>, ir::Expr> inline_primitive(const ir::IRModule& module,
                                                                  const graph::CallNode& call) {
  const auto* f = module.lookup(call.callee.as<ir::GlobalVarNode>()->name).as<graph::FunctionNode>();
  std::unordered_map<const Object*, ir::Expr> args;
  for (size_t i = 0; i < f->params.size(); ++i) args[f->params[i].object()] = call.args[i].cast<ir::Expr>();
  std::vector<graph::Binding> bindings;
  ir::Expr cur = f->body;
  cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
    graph::Var fresh(let.var->name, let.var->annotation);
    bindings.push_back({fresh, graph::substitute(let.value, args)});
    args[let.var.get()] = fresh;
  });
  return {bindings, graph::substitute(cur, args)};
}

}  // namespace loom::passes
