// loomc check, fmt, opt, build and inspect: modules read, checked,
// formatted, transformed and built, and libraries inspected.
#include <algorithm>
#include <iostream>
#include <memory>

#include "command.h"
#include "commands.h"
#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/graph/well_formed.h"
#include "loom/text/text.h"
#include "loom/runtime/library.h"
#include "loom/support/error.h"
#include "loom/support/file.h"
#include "loom/support/strings.h"
#include "loom/transform/pass.h"

namespace loomc {

namespace {

std::string read_text_file(const std::string& path) { return loom::read_file(path); }

// A .loom file, with its weights file when it has one.
loom::ir::IRModule parse_file(const std::string& path) { return loom::text::load_module_file(path); }

// A transformed module: on stdout (constants inline), or to OUTPUT with
// large constants in OUTPUT.weights.
void write_module(const loom::ir::IRModule& module, const std::string& output) {
  if (output.empty()) {
    std::cout << loom::text::print_module(module);
  } else {
    loom::text::save_module_file(module, output);
  }
}

// A YAML config, checked without loading any plugin (names, keys, types,
// options, against the registries and the plugins' declarations).
int check_config(const std::string& path) {
  loom::config::ConfigCheck checked = loom::config::check_config_file(path);
  for (const auto& warning : checked.warnings) std::cerr << warning << "\n";
  std::cout << path << ": ok (passes: " << (checked.passes.empty() ? "none" : loom::join(checked.passes, ", "))
            << ")\n";
  return 0;
}

}  // namespace

int check(const std::string& path) {
  if (loom::ends_with(path, ".yaml") || loom::ends_with(path, ".yml")) return check_config(path);
  loom::ir::IRModule mod = parse_file(path);
  try {
    loom::graph::check_module(mod);
  } catch (const loom::Error& e) {
    std::cerr << path << ": " << e.what() << "\n";
    return 1;
  }
  std::cout << path << ": ok (" << mod.names().size() << " function" << (mod.names().size() == 1 ? "" : "s") << ")\n";
  return 0;
}

int fmt(const std::string& path, bool check_only) {
  std::string text = read_text_file(path);
  std::string weights;
  loom::ir::IRModule module = loom::text::load_module_file(path, &weights);
  // A file with weights beside it is canonical with the references the
  // same module would be saved with.
  std::string canonical =
      weights.empty() ? loom::text::print_module(module) : loom::text::module_file_contents(module, weights).text;
  if (!check_only) {
    std::cout << canonical;
    return 0;
  }
  if (text == canonical) return 0;
  // Name the first line that differs.
  size_t line = 1;
  for (size_t i = 0; i < std::min(text.size(), canonical.size()) && text[i] == canonical[i]; ++i)
    if (text[i] == '\n') ++line;
  std::cerr << path << ":" << line << ": not in canonical form (run 'loomc fmt " << path << "')\n";
  return 1;
}

int build(const BuildOptions& o) {
  if (o.config.empty()) return usage_error("build needs --config FILE.yaml (for example configs/host.yaml)");
  // --emit: ir (the transformed module as text) or lib (a library, through
  // the target's codegen); by default lib when -o names a .so, else ir.
  std::string emit = o.emit;
  if (emit.empty()) emit = loom::ends_with(o.output, ".so") ? "lib" : "ir";
  if (emit != "ir" && emit != "lib") return usage_error("--emit takes ir or lib, got '" + emit + "'");
  if (emit == "lib" && o.output.empty()) return usage_error("--emit lib needs -o FILE.so");
  loom::config::Config config = loom::config::load_config(o.config);
  for (const auto& warning : config.warnings) std::cerr << warning << "\n";
  loom::ir::IRModule module = config.constrain(parse_file(o.input));
  auto timing = std::make_shared<loom::transform::TimingInstrument>();
  if (o.timing) config.context.instruments.push_back(timing);
  if (!o.dump_ir.empty())
    config.context.instruments.push_back(std::make_shared<loom::transform::DumpIRInstrument>(o.dump_ir));
  if (emit == "lib") {
    loom::runtime::Module built = loom::driver::build(module, config);
    loom::runtime::export_library(built, o.output);
    if (o.timing) std::cerr << timing->report();
    return 0;
  }
  write_module(config.pipeline()(module, config.context), o.output);
  if (o.timing) std::cerr << timing->report();
  return 0;
}

// loomc opt: the module after the passes named by --passes (else the
// config's pipeline), under the config's target and context when one is
// given; the transformed module on stdout, or the diagnostics.
int opt(const std::string& input, const std::string& passes, const std::string& config_path,
        const std::string& output) {
  if (passes.empty() && config_path.empty()) return usage_error("opt needs --passes A,B,... or --config FILE.yaml");
  loom::ir::IRModule module = parse_file(input);
  loom::transform::PassContext context;
  std::vector<loom::transform::Pass> list;
  if (!config_path.empty()) {
    loom::config::Config config = loom::config::load_config(config_path);
    for (const auto& warning : config.warnings) std::cerr << warning << "\n";
    module = config.constrain(module);
    context = config.context;
    if (passes.empty()) list.push_back(config.pipeline());
  }
  for (const std::string& name : loom::split(passes, ',', false)) {
    if (!loom::trim(name).empty()) list.push_back(loom::transform::PassRegistry::get(loom::trim(name)));
  }
  write_module(loom::transform::sequential(list, "opt")(module, context), output);
  return 0;
}

int inspect(const std::string& path, const std::string& source_format) {
  try {
    loom::runtime::Module m = loom::runtime::inspect_library(path);  // runs none of the file's code
    std::cout << path << "\n";
    std::cout << loom::runtime::module_tree(m, source_format, 1);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loomc: " << loom::error_message(e) << "\n";
    return 1;
  }
}

}  // namespace loomc
