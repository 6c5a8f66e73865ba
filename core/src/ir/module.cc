// Extern functions and the IRModule.
#include "loom/ir/module.h"

#include "loom/support/strings.h"

namespace loom::ir {
LOOM_REGISTER_OBJECT(ExternFuncNode);
LOOM_REGISTER_OBJECT(IRModuleNode);

ExternFunc::ExternFunc(std::string kind, std::string payload, FuncType signature, std::string convention, Map attrs) {
  if (convention != "dps" && convention != "packed") {
    LOOM_THROW(Error) << "ir.ExternFunc: unknown calling convention '" << convention << "' (conventions: dps, packed)";
  }
  auto node = make_object<ExternFuncNode>();
  node->kind = std::move(kind);
  node->payload = std::move(payload);
  node->signature = std::move(signature);
  node->convention = std::move(convention);
  node->attrs = std::move(attrs);
  data_ = node;
}

IRModule::IRModule(std::map<std::string, Any> functions, Map attrs, Map global_infos) {
  for (const auto& item : functions) {
    if (!item.second.object() || !item.second.object()->is_instance<BaseFuncNode>()) {
      LOOM_THROW(TypeError) << "IRModule: '" << item.first << "' is bound to " << item.second.describe()
                            << ", not a function";
    }
  }
  auto node = make_object<IRModuleNode>();
  node->functions = Map(std::move(functions));
  node->attrs = std::move(attrs);
  node->global_infos = std::move(global_infos);
  data_ = node;
}

std::vector<std::string> IRModule::names() const {
  std::vector<std::string> out;
  for (const auto& item : get()->functions->items) out.push_back(item.first);
  return out;
}

bool IRModule::contains(const std::string& name) const { return get()->functions.contains(name); }

BaseFunc IRModule::lookup(const std::string& name) const {
  if (!contains(name)) {
    LOOM_THROW(LookupError) << "the module has no function '@" << name << "'" << did_you_mean(name, names());
  }
  return get()->functions.at(name).cast<BaseFunc>();
}

IRModule IRModule::with_function(const std::string& name, BaseFunc func) const {
  std::map<std::string, Any> functions = get()->functions->items;
  functions[name] = func;
  return IRModule(functions, get()->attrs, get()->global_infos);
}

IRModule IRModule::with_functions(const std::map<std::string, Any>& updates) const {
  if (updates.empty()) return *this;
  std::map<std::string, Any> functions = get()->functions->items;
  for (const auto& [name, func] : updates) functions[name] = func;
  return IRModule(functions, get()->attrs, get()->global_infos);
}

IRModule IRModule::with_attr(const std::string& key, Any value) const {
  std::map<std::string, Any> attrs = get()->attrs.defined() ? get()->attrs->items : std::map<std::string, Any>{};
  attrs[key] = std::move(value);
  return IRModule(get()->functions->items, Map(attrs), get()->global_infos);
}

}  // namespace loom::ir
