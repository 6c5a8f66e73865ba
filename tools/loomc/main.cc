// loomc: Loom's command line.  It manages, checks and tests plugins, lists
// what is registered (functions, passes, targets, operators), and checks,
// formats, optimizes, builds, imports, tunes, runs and inspects modules and
// libraries.  The table below declares every command once: its words,
// arguments, flags, help and handler (command.h parses against it; the
// handlers are in one file per family of commands).
//
// Exit status: 0 success, 1 an error (message on stderr), 2 a usage error.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "command.h"
#include "commands.h"
#include "import_command.h"
#include "loom/plugin/manager.h"
#include "loom/support/error.h"
#include "plugin_tools.h"
#include "profile_command.h"
#include "run_command.h"

namespace {

using loomc::Args;
using loomc::Command;

// A number of seconds for --timeout; 0 when it is not one.
int seconds(const Args& a) {
  try {
    return std::stoi(a.get("--timeout", "30"));
  } catch (const std::exception&) {
    return 0;
  }
}

int plugin_tool(const Args& a, bool doctor) {
  int timeout_s = seconds(a);
  if (timeout_s < 1) return loomc::usage_error("--timeout takes a number of seconds, got '" + a.get("--timeout") + "'");
  if (doctor) return loomc::plugin_doctor(a.positional[0], timeout_s);
  loomc::KitOptions kit{a.has("--json"), 0, a.get("--only"), timeout_s};
  try {
    kit.seed = std::stoull(a.get("--seed", "0"));
  } catch (const std::exception&) {
    return loomc::usage_error("--seed takes a non-negative integer, got '" + a.get("--seed") + "'");
  }
  return loomc::plugin_test(a.positional[0], kit);
}

int run_model(const Args& a) {
  loomc::RunOptions o;
  o.input = a.positional[0];
  o.config = a.get("--config");
  o.function = a.get("--function", "main");
  o.inputs = a.all("--input");
  o.outputs = a.all("--output");
  o.seed = a.get("--seed", "0");
  o.bench = a.get("--bench");
  o.profile = a.has("--profile");
  o.trace = a.get("--trace");
  o.remote = a.get("--remote");
  o.key = a.get("--key");
  if (!o.key.empty() && o.remote.empty()) return loomc::usage_error("--key is for --remote");
  return loomc::run_model(o);
}

int build(const Args& a) {
  loomc::BuildOptions o{a.positional[0], a.get("--config"),  a.get("-o"),
                        a.get("--emit"), a.get("--dump-ir"), a.has("--timing")};
  return loomc::build(o);
}

loomc::Table table() {
  loomc::Table t;
  t.aliases = {{"plugin", "plugins"}};
  t.group_help = {{"plugins", loomc::kPluginsHelp}};
  t.warn = [] { loomc::print_warnings(loom::PluginManager::global()); };
  t.footer =
      "Plugins are searched in <libdir>/loom/plugins, <prefix>/lib/loom/plugins and the\n"
      "absolute directories in LOOM_PLUGIN_PATH (':'-separated), never in the current\n"
      "directory.  'plugin' and 'plugins' are the same command group; run\n"
      "'loomc plugins --help' for more.\n";
  auto list = [](const char* words) { return std::string(words) + " takes no arguments"; };
  t.commands = {
      Command::named("plugins list", "[--json] [--load]",
                     "list discovered plugins and their state; --load\n"
                     "first tries to load each one (runs their init)")
          .takes("--json")
          .takes("--load")
          .arguments(0, 0, list("plugins list"))
          .without_warnings()
          .runs([](const Args& a) { return loomc::plugins_list(a.has("--json"), a.has("--load")); }),
      Command::named("plugins info", "NAME|PATH [--json]", "show one plugin's manifest (does not load it)")
          .takes("--json")
          .arguments(1, 1, "plugins info takes one plugin name or path")
          .runs([](const Args& a) { return loomc::plugins_info(a.positional[0], a.has("--json")); }),
      Command::named("plugins load", "NAME|PATH",
                     "load a plugin (and what it requires), list its functions\n"
                     "and everything else it registered")
          .arguments(1, 1, "plugins load takes one plugin name or path")
          .runs([](const Args& a) { return loomc::plugins_load(a.positional[0]); }),
      Command::named("plugins declare", "NAME|PATH [-o FILE]",
                     "load a plugin and write its declarations (what it provides,\n"
                     "its passes', target kinds', operators' and config keys'\n"
                     "schemas) as JSON: what loom_add_plugin embeds after linking")
          .takes("-o", "FILE")
          .arguments(1, 1, "plugins declare takes one plugin name or path")
          .runs([](const Args& a) { return loomc::plugins_declare(a.positional[0], a.get("-o")); }),
      Command::named("plugins doctor", "PATH.so [--timeout S]",
                     "explain why a plugin file does not load: manifest and\n"
                     "versions, missing libraries and symbols, conflicts with\n"
                     "installed plugins, then a load in a child process")
          .takes("--timeout", "S")
          .arguments(1, 1, "plugin doctor takes one plugin file")
          .runs([](const Args& a) { return plugin_tool(a, true); }),
      Command::named("plugins test", "PATH.so [--json] [--seed N] [--only PREFIX] [--timeout S]",
                     "the conformance kit: manifest, init in a child process,\n"
                     "declarations, target kinds, every operator a target claims\n"
                     "against the reference interpreter, export round trip,\n"
                     "devices; a pass/fail table, exit 1 on any failure")
          .takes("--json")
          .takes("--seed", "N")
          .takes("--only", "PREFIX")
          .takes("--timeout", "S")
          .arguments(1, 1, "plugin test takes one plugin file")
          .runs([](const Args& a) { return plugin_tool(a, false); }),
      Command::named("functions list", "[--json]", "list registered functions (core and loaded plugins)")
          .takes("--json")
          .arguments(0, 0, list("functions list"))
          .runs([](const Args& a) { return loomc::functions_list(a.has("--json")); }),
      Command::named("passes list", "[--json]", "registered passes: opt level, requirements, options, owner")
          .takes("--json")
          .arguments(0, 0, list("passes list"))
          .runs([](const Args& a) { return loomc::passes_list(a.has("--json")); }),
      Command::named("targets list", "[--json]", "target kinds with their attributes, and tags")
          .takes("--json")
          .arguments(0, 0, list("targets list"))
          .runs([](const Args& a) { return loomc::targets_list(a.has("--json")); }),
      Command::named("ops list", "[--json]",
                     "operators (registered or declared by a plugin): owner,\n"
                     "inputs, pattern, documentation and attributes")
          .takes("--json")
          .arguments(0, 0, list("ops list"))
          .runs([](const Args& a) { return loomc::ops_list(a.has("--json")); }),
      Command::named("build", "INPUT.loom --config FILE.yaml [-o OUT] [--emit ir|lib]\n[--dump-ir DIR] [--timing]",
                     "store the config's target in the module, run its\n"
                     "pipeline and write the result: --emit ir, the\n"
                     "transformed module as text; --emit lib (the default\n"
                     "when OUT ends in .so), a library built by the target's\n"
                     "codegen and the VM, for 'loomc inspect' and load_module")
          .takes("--config", "FILE.yaml")
          .takes("-o", "OUT")
          .takes("--emit", "ir|lib")
          .takes("--dump-ir", "DIR")
          .takes("--timing")
          .arguments(1, 1, "build takes one input file")
          .runs(build),
      Command::named("opt", "FILE.loom --passes A,B,... [--config FILE.yaml] [-o OUT]",
                     "run passes on a module and print the result (or the\n"
                     "diagnostics): the passes named, under the config's\n"
                     "target and context when given (its pipeline without\n"
                     "--passes); each pass's contract is checked")
          .takes("--passes", "A,B,...")
          .takes("--config", "FILE.yaml")
          .takes("-o", "OUT")
          .arguments(1, 1, "opt takes one input file")
          .runs([](const Args& a) {
            return loomc::opt(a.positional[0], a.get("--passes"), a.get("--config"), a.get("-o"));
          }),
      Command::named("check", "FILE.loom|FILE.yaml",
                     "a module: parse it, check it is well formed and infer\n"
                     "its types; a config: check its keys, types, plugins,\n"
                     "passes and their options, config keys and target\n"
                     "attributes without loading any plugin (from the plugins'\n"
                     "declarations); exit 1 with every diagnostic")
          .arguments(1, 1, "check takes one file")
          .runs([](const Args& a) { return loomc::check(a.positional[0]); }),
      Command::named("import",
                     "MODEL.onnx|MODEL.pt|MODEL.mlir -o OUT.loom [--shape NAME=D0,D1,...]...\n[--report] "
                     "[--converters FILE.py]",
                     "import an ONNX model, a TorchScript file or a TOSA\n"
                     "function (through the Python package): the module as\n"
                     "text to OUT.loom, weights over 1 KiB as raw bytes to\n"
                     "OUT.loom.weights; a dimension given by a name stays\n"
                     "symbolic (ONNX); TorchScript needs every input's shape\n"
                     "and keeps what Loom cannot compile as torchscript\n"
                     "functions (--report: which nodes went where)")
          .unparsed()
          .without_warnings()
          .runs([](const Args& a) { return loomc::import_model(a.positional); }),
      Command::named("tune",
                     "MODEL.loom --config FILE.yaml --trials N --database FILE.jsonl\n"
                     "[--workers local:N|dask://HOST:PORT [--device-key KEY]] [--strategy model|random]",
                     "search schedules for the model's prim functions (through\n"
                     "the Python package), measured in N local processes, on a\n"
                     "Dask cluster, or on the loom-rpc-servers of a device key in\n"
                     "a Dask device pool (docs/rpc.md); results go to the database,\n"
                     "which a config uses with pipeline: {tuning: {database: FILE}}")
          .unparsed()
          .without_warnings()
          .runs([](const Args& a) { return loomc::tune_model(a.positional); }),
      Command::named("fmt", "FILE.loom [--check]",
                     "print the module in canonical form; --check exits 1\n"
                     "(printing nothing) if the file is not canonical")
          .takes("--check")
          .arguments(1, 1, "fmt takes one file")
          .runs([](const Args& a) { return loomc::fmt(a.positional[0], a.has("--check")); }),
      Command::named("run",
                     "LIBRARY.so|MODEL.loom [--config FILE.yaml] [--function NAME]\n"
                     "[--input X.npy]... [--seed N] [--output Y.npy]... [--bench N] [--profile]\n"
                     "[--trace FILE.json] [--remote HOST:PORT [--key FILE]]",
                     "run a function (default main) of a library, or of a model\n"
                     "built in memory with the config, on .npy inputs (in order)\n"
                     "or seeded random ones; print each output's type, write them\n"
                     "to the --output files (in order); --bench N times N runs\n"
                     "and prints the median latency; --profile prints each kernel\n"
                     "call's time by kernel (and the npu's cycle report), --trace\n"
                     "writes them as Chrome trace events (docs/rpc.md);\n"
                     "--remote runs it all on a loom-rpc-server (docs/rpc.md)")
          .takes("--config", "FILE.yaml")
          .takes("--function", "NAME")
          .takes("--input", "X.npy", true)
          .takes("--seed", "N")
          .takes("--output", "Y.npy", true)
          .takes("--bench", "N")
          .takes("--profile")
          .takes("--trace", "FILE.json")
          .takes("--remote", "HOST:PORT")
          .takes("--key", "FILE")
          .arguments(1, 1, "run takes one library or model file")
          .runs(run_model),
      Command::named("profile", "TRACE.json [--html OUT.html]",
                     "read a trace written by run --trace and print its kernels\n"
                     "by time; --html draws them as a page that needs no network\n"
                     "(docs/rpc.md, \"Profiles and traces\")")
          .takes("--html", "OUT.html")
          .arguments(1, 1, "profile takes one trace file")
          .runs([](const Args& a) { return loomc::profile_command(a.positional[0], a.get("--html")); }),
      Command::named("inspect", "LIBRARY.so [--source FORMAT]",
                     "read a library written by export_library, without loading\n"
                     "it or running any of its code, and print its module tree\n"
                     "(kind, functions, memory plans); --source prints each\n"
                     "module's source in FORMAT (bytecode, c, ...)")
          .takes("--source", "FORMAT")
          .arguments(1, 1, "inspect takes one library file")
          .runs([](const Args& a) { return loomc::inspect(a.positional[0], a.get("--source")); }),
      // Everything after `call FUNCTION` is an argument of the call,
      // verbatim (negative numbers look like options).
      Command::named("call", "FUNCTION [ARG...]",
                     "call a registered function, loading its plugin on demand;\n"
                     "ARGs that read as integers, floats, true or false are\n"
                     "passed as such, anything else as a string")
          .unparsed()
          .runs([](const Args& a) {
            if (a.positional.empty()) return loomc::usage_error("call needs a function name");
            return loomc::call(a.positional[0], {a.positional.begin() + 1, a.positional.end()});
          }),
  };
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return loomc::dispatch(table(), args);
  } catch (const std::exception& e) {
    std::cerr << "loomc: error: " << loom::error_message(e) << "\n";
    return 1;
  }
}
