// The handlers of loomc's commands, one file per family: what the command
// table in main.cc calls (command.h parses the arguments).
#ifndef LOOM_TOOLS_LOOMC_COMMANDS_H_
#define LOOM_TOOLS_LOOMC_COMMANDS_H_

#include <string>
#include <vector>

#include "loom/plugin/manager.h"
#include "loom/support/json.h"
#include "loom/object/schema.h"

namespace loomc {

// plugins_command.cc: plugins list, info, load, declare.
extern const char* const kPluginsHelp;
void print_warnings(const loom::PluginManager& manager);
int plugins_list(bool as_json, bool load_all);
int plugins_info(const std::string& name, bool as_json);
int plugins_load(const std::string& target);
int plugins_declare(const std::string& target, const std::string& output);

// registry_commands.cc: what is registered or declared (functions, passes,
// target kinds, operators), and call.
std::string schema_text(const std::vector<loom::SchemaField>& fields);
void write_schema_listing(loom::JsonWriter& json, const std::vector<loom::SchemaField>& fields);
int functions_list(bool as_json);
int call(const std::string& name, const std::vector<std::string>& texts);
int passes_list(bool as_json);
int targets_list(bool as_json);
int ops_list(bool as_json);

// module_commands.cc: check, fmt, opt, build, inspect.
int check(const std::string& path);  // a .loom module or a .yaml config
int fmt(const std::string& path, bool check_only);
int opt(const std::string& input, const std::string& passes, const std::string& config_path, const std::string& output);
struct BuildOptions {
  std::string input, config, output, emit, dump_ir;
  bool timing = false;
};
int build(const BuildOptions& o);
int inspect(const std::string& path, const std::string& source_format);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_COMMANDS_H_
