#include "partition_util.h"

#include "loom/graph/function.h"
#include "loom/target/target.h"

namespace loom::passes {

std::vector<graph::PatternTable> partition_tables(const ir::IRModule& module) {
  std::vector<graph::PatternTable> out;
  for (const std::string& name : target::partition_codegens(module))
    out.push_back(graph::PatternTableRegistry::get(name));
  return out;
}

bool partitionable(const ir::BaseFunc& f) {
  const auto* g = f.as<graph::FunctionNode>();
  return g && !g->attrs.contains("primitive") && graph::codegen_of(f).empty();
}

const graph::FunctionNode* composite_callee(const ir::IRModule& module, const ir::Expr& callee) {
  const auto* g = callee.as<ir::GlobalVarNode>();
  if (!g || !module.contains(g->name)) return nullptr;
  const auto* f = module.lookup(g->name).as<graph::FunctionNode>();
  return f && f->attrs.contains("composite") ? f : nullptr;
}

Chain::Chain(const ir::Expr& body) : result_var("out") {
  std::tie(bindings, result) = graph::flatten_chain(body);
  if (result.as<graph::CallNode>()) {  // the result call is a binding too
    const_cast<graph::VarNode*>(result_var.get())->checked_type = result->checked_type;
    bindings.push_back({result_var, result});
    result = result_var;
  }
  for (size_t i = 0; i < bindings.size(); ++i) {
    index_of_var[bindings[i].var.get()] = i;
    index_of_value[bindings[i].value.get()] = i;
  }
}

ir::Expr Chain::body() const {
  std::vector<graph::Binding> kept;
  for (const graph::Binding& b : bindings)
    if (b.value.defined()) kept.push_back(b);
  ir::Expr out = result;
  if (!kept.empty() && kept.back().var.same_as(result_var) && result.same_as(result_var)) {
    out = kept.back().value;
    kept.pop_back();
  }
  return graph::build_chain(kept, out);
}

graph::Bindings Chain::lookup() const {
  return [this](const graph::VarNode* var) -> std::optional<ir::Expr> {
    auto found = index_of_var.find(var);
    if (found == index_of_var.end()) return std::nullopt;
    return bindings[found->second].value;
  };
}

void Chain::set(size_t i, const ir::Expr& value) {
  bindings[i].value = value;
  index_of_value[value.get()] = i;
}

transform::Pass partition_pass(const std::string& name, const std::string& summary, ChainRewrite rewrite) {
  transform::PassInfo info = transform::PassInfo::named(name)
                                 .summary(summary)
                                 .needs({"types_inferred", "shared_values_bound"})
                                 .changes({"graph"});
  return transform::module_pass(info, [rewrite](const ir::IRModule& module, const transform::PassContext&) {
    std::vector<graph::PatternTable> tables = partition_tables(module);
    if (tables.empty()) return module;
    std::map<std::string, Any> out;
    FunctionNames names(module);
    for (const std::string& fname : module.names()) {
      ir::BaseFunc func = module.lookup(fname);
      if (!partitionable(func)) continue;
      const auto* f = func.as<graph::FunctionNode>();
      Chain chain(f->body);
      if (rewrite(module, tables, fname, chain, names, out)) out[fname] = graph::with_body(*f, chain.body());
    }
    return module.with_functions(out);
  });
}

std::optional<graph::Match> match_entry(const graph::PatternEntry& entry, const std::string& codegen,
                                        const Chain& chain, size_t i) {
  try {
    std::optional<graph::Match> m = graph::match(entry.pattern, chain.bindings[i].value, chain.lookup());
    if (m && entry.check && !entry.check(*m)) return std::nullopt;
    return m;
  } catch (const std::exception& e) {
    LOOM_THROW(Error) << "pattern table '" << codegen << "', entry '" << entry.name << "': " << e.what();
  }
}

std::optional<std::vector<size_t>> matched_bindings(const Chain& chain, const graph::Match& m) {
  std::vector<size_t> out;
  for (const ir::Expr& call : m.calls) {
    auto found = chain.index_of_value.find(call.get());
    if (found == chain.index_of_value.end() || !chain.bindings[found->second].value.same_as(call)) return std::nullopt;
    out.push_back(found->second);
  }
  return out;
}

std::pair<graph::Function, ir::Expr> make_composite(const Chain& chain, const std::vector<size_t>& members,
                                                    const graph::Match& m, const std::string& name,
                                                    const std::string& codegen, const std::string& function_name) {
  std::unordered_map<const Object*, ir::Expr> renamed;
  std::vector<graph::Var> params;
  for (const ir::Expr& input : m.inputs) {
    const auto* var = input.as<graph::VarNode>();
    graph::Var p(var ? var->name : "c", input->checked_type);
    renamed[input.get()] = p;
    params.push_back(p);
  }
  std::vector<graph::Binding> body;
  for (size_t k : members) {
    const graph::Binding& b = chain.bindings[k];
    graph::Var inner(b.var->name);
    body.push_back({inner, graph::substitute(b.value, renamed)});
    renamed[b.var.get()] = inner;
  }
  const graph::Binding& root = chain.bindings[members.back()];
  std::map<std::string, Any> attrs{{"composite", Any(name)}, {"primitive", Any(int64_t{1})}};
  if (!codegen.empty()) attrs["codegen"] = Any(codegen);
  graph::Function f(params, graph::build_chain(body, body.back().var), root.value->checked_type, Map(attrs));
  graph::Call call(ir::GlobalVar(function_name), m.inputs);
  const_cast<graph::CallNode*>(call.get())->checked_type = root.value->checked_type;
  return {f, call};
}

}  // namespace loom::passes
