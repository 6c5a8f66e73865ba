#include "loom/object/function.h"

#include "loom/support/registry.h"

namespace loom {

Function::Function(FunctionNode::Body body, std::string name) {
  auto node = make_object<FunctionNode>();
  node->body = std::move(body);
  node->name = std::move(name);
  data_ = node;
}

Any Function::call(const Any* args, int32_t count) const {
  if (!defined()) LOOM_THROW(Error) << "call of an undefined function";
  return get()->body(args, count);
}

void throw_arity_error(const std::string& name, int expected, int got) {
  LOOM_THROW(TypeError) << "function '" << name << "' takes " << expected << " argument" << (expected == 1 ? "" : "s")
                        << ", got " << got;
}

void throw_argument_error(const std::string& name, int index, const std::exception& e) {
  LOOM_THROW(TypeError) << "argument " << index << " of function '" << name << "': " << e.what();
}

namespace {
NamedRegistry<FunctionEntry>& registry() {
  static auto* instance =
      new NamedRegistry<FunctionEntry>("function", "function", /*overridable=*/true);  // never destroyed
  return *instance;
}
}  // namespace

void FunctionRegistry::register_function(const std::string& name, Function function, std::string doc,
                                         bool allow_override) {
  if (!function.defined()) LOOM_THROW(Error) << "cannot register an undefined function as '" << name << "'";
  registry().add(FunctionEntry{name, std::move(function), std::move(doc), ""}, allow_override);
}

std::optional<FunctionEntry> FunctionRegistry::entry(const std::string& name) { return registry().entry(name); }

std::optional<Function> FunctionRegistry::find(const std::string& name) {
  if (auto e = registry().find(name)) return e->function;
  return std::nullopt;
}

Function FunctionRegistry::get(const std::string& name) { return registry().get(name).function; }

std::vector<std::string> FunctionRegistry::list() { return registry().names(); }

std::vector<std::string> FunctionRegistry::list_owned_by(const std::string& owner) {
  return registry().names_owned_by(owner);
}

bool FunctionRegistry::remove(const std::string& name) { return registry().remove(name); }

}  // namespace loom
