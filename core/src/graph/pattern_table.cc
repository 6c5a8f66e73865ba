// PatternTableRegistry (loom/graph/pattern_table.h).
#include "loom/graph/pattern_table.h"

#include <set>

#include "loom/support/registry.h"

namespace loom::graph {

namespace {
NamedRegistry<PatternTable>& tables() {
  static auto* instance = new NamedRegistry<PatternTable>("pattern table", "patterns");
  return *instance;
}
}  // namespace

void PatternTableRegistry::register_table(const std::string& codegen, std::vector<PatternEntry> entries) {
  std::set<std::string> names;
  for (const PatternEntry& e : entries) {
    if (e.name.empty()) LOOM_THROW(Error) << "pattern table '" << codegen << "': an entry without a name";
    if (!e.pattern.get())
      LOOM_THROW(Error) << "pattern table '" << codegen << "': entry '" << e.name << "' has no pattern";
    if (!names.insert(e.name).second) {
      LOOM_THROW(Error) << "pattern table '" << codegen << "': the entry name '" << e.name << "' is used twice";
    }
  }
  tables().add(PatternTable{codegen, std::move(entries), ""});
}

std::optional<PatternTable> PatternTableRegistry::entry(const std::string& codegen) { return tables().entry(codegen); }
PatternTable PatternTableRegistry::get(const std::string& codegen) { return tables().get(codegen); }
std::vector<std::string> PatternTableRegistry::list() { return tables().names(); }

}  // namespace loom::graph
