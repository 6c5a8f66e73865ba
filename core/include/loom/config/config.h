// YAML configs (docs/configuration.md): the two kinds of configuration in
// one file, kept apart.
//
//   target:    C1, what must hold -> stored in the IRModule's attributes
//   pipeline:  C0, how to compile -> a PassContext and a pass list
//   plugins:   plugins to load eagerly
//
// Strict: an unknown key, a wrong type, a missing required field, an
// unknown pass, option or target kind is a ParseError at FILE:LINE:COL with
// the closest valid name, the line and a caret.  A C0 option that
// contradicts a C1 constraint is a warning, and the constraint wins.
#ifndef LOOM_CONFIG_CONFIG_H_
#define LOOM_CONFIG_CONFIG_H_

#include <map>
#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"

namespace loom::config {

struct PassSpec {
  std::string name;
  Map options;  // validated against the pass's option schema
};

struct Config {
  std::string source;
  target::Target target;  // C1
  target::Target host;    // C1, may be undefined
  Map device_placement;   // C1: function name -> device string or target; may be empty
  // Where each device-placement entry is in `source` (line, column), so
  // that an entry naming no function of the module is a ConfigError there.
  std::map<std::string, std::pair<int, int>> device_placement_at;
  // C1: the codegens to partition for, in priority order, each a name or
  // a target of its kind (the module's attribute partition;
  // docs/partitioning.md); empty: none.
  Array partition;
  transform::PassContext context;  // C0
  std::vector<PassSpec> passes;    // in order
  std::vector<std::string> plugins;
  std::vector<std::string> warnings;

  // The module with the C1 constraints stored in its attributes.
  ir::IRModule constrain(const ir::IRModule& module) const;
  // The configured passes, in order, as one Sequential.
  transform::Pass pipeline() const;
};

Config load_config(const std::string& path);
Config parse_config(const std::string& text, const std::string& source);

// Checks a config without loading any plugin (`loomc check FILE.yaml`):
// every key, type, plugin, pass name and option, config key and target
// attribute, against the registries and the declarations of discovered
// plugins (their .loom_declarations).  The target kind's own validation
// and the plugins' inits run when the config is loaded.  Errors are the
// ConfigErrors load_config gives.
struct ConfigCheck {
  std::vector<std::string> passes;   // the passes it runs (the target's default pipeline when it lists none)
  std::vector<std::string> plugins;  // the plugins it loads eagerly
  std::vector<std::string> warnings;
};
ConfigCheck check_config(const std::string& text, const std::string& source);
ConfigCheck check_config_file(const std::string& path);

}  // namespace loom::config

#endif  // LOOM_CONFIG_CONFIG_H_
