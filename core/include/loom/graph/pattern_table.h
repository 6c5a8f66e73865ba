// Pattern tables (docs/partitioning.md): what each codegen's accelerator
// takes, registered by its plugin under the codegen's name.  Looking up a
// table no loaded plugin registered asks for the capability
// "patterns:NAME", so a vendor's plugin loads when a config partitions
// for it.
#ifndef LOOM_GRAPH_PATTERN_TABLE_H_
#define LOOM_GRAPH_PATTERN_TABLE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/pattern.h"

namespace loom::graph {

struct PatternEntry {
  std::string name;  // "npu.conv2d_bias_relu": the composite's name
  Pattern pattern;
  // A further check of a match (a shape the accelerator cannot tile, say);
  // empty: every match is taken.
  std::function<bool(const Match&)> check;
};

struct PatternTable {
  std::string name;                   // the codegen's
  std::vector<PatternEntry> entries;  // in priority order
  std::string owner;
};

class PatternTableRegistry {
 public:
  // Registers `entries` as codegen `codegen`'s table (once per name; Error
  // on an entry without a name or a pattern, or a name used twice).
  static void register_table(const std::string& codegen, std::vector<PatternEntry> entries);
  static std::optional<PatternTable> entry(const std::string& codegen);  // no loading
  static PatternTable get(const std::string& codegen);  // lazy ("patterns:NAME"); LookupError with a suggestion
  static std::vector<std::string> list();
};

}  // namespace loom::graph

#endif  // LOOM_GRAPH_PATTERN_TABLE_H_
