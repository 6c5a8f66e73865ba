// The golden pass tests (docs/passes.md, "Golden tests"): one file per pass
// under tests/fixtures/passes/, many cases each.
//
//   loom_pass_golden FILE.loom [--actual]   run every case of a file
//   loom_pass_golden --coverage DIR         every pass of the core and the pass
//                                           libraries has DIR/<snake_name>.loom with
//                                           at least five cases, one of them unchanged
//
// A file starts with directives that every case inherits, then cases, each
// opened by a separator line with its name:
//
//   # passes: FlattenBuffer, Simplify
//   # target: cpu vector-bits=256          (optional: the module's target)
//   # config: FuseOps.max_depth=2          (optional, repeatable: context keys)
//   # partition: acc, acc2                 (optional: the codegens partitioned for,
//                                          the module's attribute partition)
//   # ----- flattens a store to a 2-D buffer
//   # passes: ...                          (optional, overrides the file's)
//   <input module>
//   # expect:
//   <expected module>                      (compared structurally)
//   # ----- a flat module comes back as it was
//   <input module>
//   # expect: unchanged
//   # ----- refuses a buffer of unknown rank
//   <input module>
//   # expect-error: the text the error must contain
//
// Every pass runs with its contract and the module's well-formedness
// checked (PassContext::check_well_formed).  A failure names the file, the
// line and the case; --actual prints each case's output instead.
//
// The partitioning passes read pattern tables; this runner registers two,
// "acc" and "acc2" (register_test_tables below), so their golden files need
// no plugin.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "loom/graph/pattern_table.h"
#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/plugin/manager.h"
#include "loom/support/strings.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"

namespace {
using loom::ir::IRModule;

struct Directives {
  std::vector<std::string> passes;
  std::string target;                                      // "KIND key=value ..."
  std::vector<std::string> partition;                      // codegens
  std::vector<std::pair<std::string, std::string>> config;  // PassContext keys
};

struct Case {
  std::string name;
  int line = 0;  // of the separator
  Directives directives;
  std::string input;
  int input_line = 0;
  enum class Expect { kModule, kUnchanged, kError } expect = Expect::kModule;
  std::string expected;  // module text or error text
  int expected_line = 0;
};

bool directive(const std::string& line, const std::string& key, std::string* value) {
  std::string prefix = "# " + key + ":";
  if (!loom::starts_with(line, prefix)) return false;
  *value = loom::trim(line.substr(prefix.size()));
  return true;
}

bool apply_directive(const std::string& line, Directives* d) {
  std::string value;
  if (directive(line, "passes", &value)) {
    d->passes.clear();
    for (const std::string& p : loom::split(value, ',', false))
      if (!loom::trim(p).empty()) d->passes.push_back(loom::trim(p));
    return true;
  }
  if (directive(line, "partition", &value)) {
    d->partition.clear();
    for (const std::string& p : loom::split(value, ',', false))
      if (!loom::trim(p).empty()) d->partition.push_back(loom::trim(p));
    return true;
  }
  if (directive(line, "target", &value)) {
    d->target = value;
    return true;
  }
  if (directive(line, "config", &value)) {
    size_t eq = value.find('=');
    if (eq == std::string::npos) throw loom::Error("config directive '" + value + "' is not KEY=VALUE");
    d->config.emplace_back(loom::trim(value.substr(0, eq)), loom::trim(value.substr(eq + 1)));
    return true;
  }
  return false;
}

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw loom::Error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  Directives file;
  size_t k = 0;
  for (; k < lines.size() && !loom::starts_with(lines[k], "# -----"); ++k) apply_directive(lines[k], &file);
  std::vector<Case> cases;
  while (k < lines.size()) {
    Case c;
    c.name = loom::trim(lines[k].substr(7));
    c.line = static_cast<int>(k + 1);
    c.directives = file;
    ++k;
    while (k < lines.size() && apply_directive(lines[k], &c.directives)) ++k;
    c.input_line = static_cast<int>(k + 1);
    std::string input;
    for (; k < lines.size() && !loom::starts_with(lines[k], "# expect") && !loom::starts_with(lines[k], "# -----"); ++k) {
      input += lines[k] + "\n";
    }
    c.input = input;
    if (k >= lines.size() || !loom::starts_with(lines[k], "# expect")) {
      throw loom::Error(path + ":" + std::to_string(c.line) + ": case '" + c.name + "' has no '# expect' line");
    }
    const std::string& expect = lines[k];
    std::string rest;
    if (directive(expect, "expect-error", &rest)) {
      c.expect = Case::Expect::kError;
      c.expected = rest;
    } else if (directive(expect, "expect", &rest) && rest == "unchanged") {
      c.expect = Case::Expect::kUnchanged;
    } else if (expect == "# expect:") {
      c.expect = Case::Expect::kModule;
    } else {
      throw loom::Error(path + ":" + std::to_string(k + 1) + ": expected '# expect:', '# expect: unchanged' or "
                        "'# expect-error: TEXT', got '" + expect + "'");
    }
    ++k;
    c.expected_line = static_cast<int>(k + 1);
    for (; k < lines.size() && !loom::starts_with(lines[k], "# -----"); ++k) {
      if (c.expect == Case::Expect::kModule) c.expected += lines[k] + "\n";
    }
    if (c.directives.passes.empty()) {
      throw loom::Error(path + ":" + std::to_string(c.line) + ": case '" + c.name + "' names no passes");
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// Text at its line of the file, so parse errors name the file's lines.
IRModule parse_at(const std::string& text, int line, const std::string& path) {
  return loom::ir::parse_module(std::string(static_cast<size_t>(line - 1), '\n') + text, path);
}

// An integer when the text is one, else the text.
loom::Any value_of(const std::string& text) {
  bool number = !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
  return number ? loom::Any(static_cast<int64_t>(std::stoll(text))) : loom::Any(text);
}

loom::target::Target make_target(const std::string& spec) {
  std::vector<std::string> words;
  for (const std::string& w : loom::split(spec, ' ', false))
    if (!w.empty()) words.push_back(w);
  std::map<std::string, loom::Any> attrs;
  for (size_t i = 1; i < words.size(); ++i) {
    size_t eq = words[i].find('=');
    if (eq == std::string::npos) throw loom::Error("target attribute '" + words[i] + "' is not key=value");
    attrs[words[i].substr(0, eq)] = value_of(words[i].substr(eq + 1));
  }
  return loom::target::Target(words.at(0), loom::Map(attrs));
}

// Two accelerators' pattern tables for the partitioning passes' files
// (tests/fixtures/passes/merge_composite.loom, annotate_target.loom,
// partition_graph.loom): acc takes convolutions with their bias and relu,
// dense with relu, add and relu of float32; acc2 tanh, dense with tanh,
// dense with relu, relu and exp, and an entry whose check throws.
void register_test_tables() {
  using namespace loom::graph;
  Pattern x = wildcard(), w = wildcard();
  Pattern conv = op("conv2d", {x, w}).has_attr("groups", loom::Any(int64_t{1}));
  PatternTableRegistry::register_table(
      "acc", {{"acc.conv2d_bias_relu", op("relu", {op("add", {conv, constant()})}), {}},
              {"acc.dense_relu", op("relu", {op("dense", {wildcard(), wildcard()})}), {}},
              {"acc.conv2d", conv, {}},
              {"acc.add", op("add", {wildcard(), wildcard()}).has_dtype(loom::DataType::Float(32)), {}},
              {"acc.relu", op("relu", {wildcard()}).has_dtype(loom::DataType::Float(32)), {}}});
  PatternTableRegistry::register_table(
      "acc2", {{"acc2.dense_tanh", op("tanh", {op("dense", {wildcard(), wildcard()})}), {}},
               {"acc2.dense_relu", op("relu", {op("dense", {wildcard(), wildcard()})}), {}},
               {"acc2.tanh", op("tanh", {wildcard()}), {}},
               {"acc2.relu", op("relu", {wildcard()}), {}},
               {"acc2.exp", op("exp", {wildcard()}), {}},
               {"acc2.sqrt", op("sqrt", {wildcard()}), [](const Match&) -> bool { throw loom::Error("no sqrt today"); }}});
}

IRModule functions_of(const IRModule& m) { return IRModule(m->functions->items, loom::Map::empty(), m->global_infos); }

// "" when the case holds, else why not.
std::string run_case(const Case& c, const std::string& path, bool actual) {
  IRModule input = parse_at(c.input, c.input_line, path);
  IRModule module = input;
  if (!c.directives.target.empty()) module = loom::target::with_target(module, make_target(c.directives.target));
  if (!c.directives.partition.empty()) {
    std::vector<loom::Any> names(c.directives.partition.begin(), c.directives.partition.end());
    module = module.with_attr("partition", loom::Array(names));
  }
  std::vector<loom::transform::Pass> passes;
  for (const std::string& name : c.directives.passes) passes.push_back(loom::transform::PassRegistry::get(name));
  loom::transform::PassContext context;
  context.check_well_formed = true;
  for (const auto& [key, value] : c.directives.config) context.set_config(key, value_of(value));
  IRModule result;
  std::string error;
  try {
    result = loom::transform::sequential(passes, "golden")(module, context);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (actual) {
    std::cout << "# ----- " << c.name << "\n" << (error.empty() ? loom::ir::print_module(functions_of(result)) : "# error: " + error + "\n");
    return "";
  }
  if (c.expect == Case::Expect::kError) {
    if (error.empty()) return "expected an error containing '" + c.expected + "', the passes succeeded:\n" + loom::ir::print_module(functions_of(result));
    if (error.find(c.expected) == std::string::npos) return "the error does not contain '" + c.expected + "':\n" + error;
    return "";
  }
  if (!error.empty()) return "the passes failed: " + error;
  IRModule expected = c.expect == Case::Expect::kUnchanged ? input : parse_at(c.expected, c.expected_line, path);
  if (auto difference = loom::structural_difference(functions_of(result), functions_of(expected))) {
    return std::string(c.expect == Case::Expect::kUnchanged ? "the module changed" : "the result differs") + " (" +
           *difference + "); got:\n" + loom::ir::print_module(functions_of(result));
  }
  return "";
}

int run_file(const std::string& path, bool actual) {
  std::vector<Case> cases = read_cases(path);
  int failed = 0;
  for (const Case& c : cases) {
    std::string problem;
    try {
      problem = run_case(c, path, actual);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (problem.empty()) continue;
    ++failed;
    std::cerr << "FAIL " << path << ":" << c.line << ": case '" << c.name << "': " << problem << "\n";
  }
  if (!actual) std::cout << path << ": " << cases.size() - failed << " of " << cases.size() << " cases hold\n";
  return failed ? 1 : 0;
}

std::string snake_case(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool upper = std::isupper(static_cast<unsigned char>(c));
    if (upper && i > 0) {
      bool after_lower = std::islower(static_cast<unsigned char>(name[i - 1])) || std::isdigit(static_cast<unsigned char>(name[i - 1]));
      bool before_lower = i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1]));
      if (after_lower || (before_lower && std::isupper(static_cast<unsigned char>(name[i - 1])))) out += '_';
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Every pass of the core and the pass libraries (pipelines aside) has its
// file, with at least five cases, one of them unchanged.
int coverage(const std::string& dir) {
  for (const char* plugin : {"passes", "loop_passes"}) loom::PluginManager::global().load(plugin);
  int problems = 0;
  for (const std::string& name : loom::transform::PassRegistry::list()) {
    auto entry = *loom::transform::PassRegistry::entry(name);
    if (entry.pass->is_sequence) continue;
    if (entry.owner != "core" && entry.owner != "passes" && entry.owner != "loop_passes") continue;
    std::string path = dir + "/" + snake_case(name) + ".loom";
    if (!std::filesystem::exists(path)) {
      std::cerr << "FAIL pass " << name << " has no golden file " << path << "\n";
      ++problems;
      continue;
    }
    std::vector<Case> cases = read_cases(path);
    bool unchanged = std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.expect == Case::Expect::kUnchanged; });
    bool names_it = std::any_of(cases.begin(), cases.end(), [&](const Case& c) {
      return std::find(c.directives.passes.begin(), c.directives.passes.end(), name) != c.directives.passes.end();
    });
    if (cases.size() < 5 || !unchanged || !names_it) {
      std::cerr << "FAIL " << path << ": " << cases.size() << " cases" << (unchanged ? "" : ", none unchanged")
                << (names_it ? "" : ", none runs " + name) << " (a pass needs at least five, one unchanged)\n";
      ++problems;
    }
  }
  if (!problems) std::cout << "every pass has its golden file\n";
  return problems ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    register_test_tables();
    if (args.size() == 2 && args[0] == "--coverage") return coverage(args[1]);
    if (args.size() == 1) return run_file(args[0], false);
    if (args.size() == 2 && args[1] == "--actual") return run_file(args[0], true);
    std::cerr << "usage: loom_pass_golden FILE.loom [--actual] | --coverage DIR\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "FAIL " << e.what() << "\n";
    return 1;
  }
}
