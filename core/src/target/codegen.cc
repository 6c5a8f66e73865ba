#include "loom/target/codegen.h"

#include "loom/support/registry.h"

namespace loom::target {

namespace {
struct CodegenEntry {
  std::string name;  // the target kind
  Function codegen;
  std::string owner;
};
NamedRegistry<CodegenEntry>& codegens() {
  static auto* instance = new NamedRegistry<CodegenEntry>("codegen", "codegen");
  return *instance;
}
}  // namespace

void CodegenRegistry::register_codegen(const std::string& target_kind, Function codegen) {
  if (!codegen.defined()) LOOM_THROW(Error) << "codegen for '" << target_kind << "' is undefined";
  codegens().add(CodegenEntry{target_kind, std::move(codegen), ""});
}

Function CodegenRegistry::get(const std::string& target_kind) {
  if (auto entry = codegens().find(target_kind)) return entry->codegen;
  LOOM_THROW(Error) << "no codegen for target kind '" << target_kind << "': none is registered and no plugin in the "
                    << "search path provides 'codegen:" << target_kind << "'";
}

std::vector<std::string> CodegenRegistry::list() { return codegens().names(); }

}  // namespace loom::target
