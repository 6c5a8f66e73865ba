// The golden pass tests (docs/passes.md, "Golden tests"): one file per pass
// under tests/fixtures/passes/, many cases each; and the codegen goldens
// (tests/fixtures/codegen/), whose cases build a module and check its source.
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
//   # ----- the lines that matter of a long output
//   <input module>
//   # check: for %i_o: int64 from 0 extent 3 parallel    (golden_checks.h: check,
//   # check-next: for %i_i: int64 from 0 extent 4 vectorized   check-next, check-not)
//   # ----- an error at a line of the input
//   # expect-error@+1: argument 0 has unknown rank       (or @-N; or after code,
//   @main = fn(%x: Tensor[?, float32]) {                  '# expect-error: M' for its
//     relu(%x)                                            own line); the case ends
//   }                                                     at the next separator
//
// A codegen golden builds instead of running passes:
//
//   # build: {target: {kind: opencl, host: {kind: llvm}}}   a config, as YAML
//   # source: opencl                        the source format whose text is checked
//
// Every pass runs with its contract and the module's well-formedness
// checked (PassContext::check_well_formed).  A failure names the file, the
// line and the case; --actual prints each case's output instead.  A line
// that looks like a directive where none is read (a misspelt one, one
// after the input began, "# check:" with no text) is an error at its line.
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

#include "golden_checks.h"
#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/graph/pattern_table.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/plugin/manager.h"
#include "loom/runtime/module.h"
#include "loom/support/strings.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"

namespace {
using loom::ir::IRModule;
namespace golden = loom::golden;

// Every directive name, for telling a misspelt or misplaced one from a comment.
const std::vector<std::string> kDirectives = {"passes", "target",       "config", "partition",  "build",    "source",
                                              "expect", "expect-error", "check",  "check-next", "check-not"};

struct Directives {
  std::vector<std::string> passes;
  std::string target;                                       // "KIND key=value ..."
  std::vector<std::string> partition;                       // codegens
  std::vector<std::pair<std::string, std::string>> config;  // PassContext keys
  std::string build;                                        // a config's YAML: build instead of running passes
  int build_line = 0;
  std::string source;  // the source format a build's output is
};

struct Case {
  std::string name;
  int line = 0;  // of the separator
  Directives directives;
  std::string input;
  std::vector<std::string> input_lines;
  int input_line = 0;
  enum class Expect { kModule, kUnchanged, kError, kChecks } expect = Expect::kModule;
  std::string expected;  // module text, or the text a plain expect-error's error contains
  int expected_line = 0;
  std::vector<golden::Check> checks;
  std::vector<golden::ExpectedError> located;  // expect-error@ lines of the input
};

std::string at(const std::string& path, size_t line) { return path + ":" + std::to_string(line) + ": "; }

bool is_separator(const std::string& line) { return loom::starts_with(line, "# -----"); }

bool is_comment_or_blank(const std::string& line) {
  std::string t = loom::trim(line);
  return t.empty() || t[0] == '#';
}

bool directive(const std::string& line, const std::string& key, std::string* value) {
  std::string prefix = "# " + key + ":";
  if (!loom::starts_with(line, prefix)) return false;
  *value = loom::trim(line.substr(prefix.size()));
  return true;
}

// A list of names; empty clears the file's ("# partition:" with nothing: none).
std::vector<std::string> names_of(const std::string& value, const std::string& key, const std::string& where) {
  std::vector<std::string> names;
  if (value.empty()) return names;
  for (const std::string& p : loom::split(value, ',', false)) {
    if (loom::trim(p).empty()) throw loom::Error(where + "'# " + key + ":' has an empty name in '" + value + "'");
    names.push_back(loom::trim(p));
  }
  return names;
}

bool apply_directive(const std::string& line, Directives* d, const std::string& path, size_t line_number) {
  std::string value;
  std::string where = at(path, line_number);
  if (directive(line, "passes", &value)) {
    d->passes = names_of(value, "passes", where);
    return true;
  }
  if (directive(line, "partition", &value)) {
    d->partition = names_of(value, "partition", where);
    return true;
  }
  if (directive(line, "target", &value)) {
    if (value.empty()) throw loom::Error(where + "'# target:' names no target kind");
    d->target = value;
    return true;
  }
  if (directive(line, "config", &value)) {
    size_t eq = value.find('=');
    if (eq == std::string::npos) throw loom::Error(where + "config directive '" + value + "' is not KEY=VALUE");
    d->config.emplace_back(loom::trim(value.substr(0, eq)), loom::trim(value.substr(eq + 1)));
    return true;
  }
  if (directive(line, "build", &value)) {
    if (value.empty()) throw loom::Error(where + "'# build:' needs a config, as YAML: {target: {kind: c}}");
    d->build = value;
    d->build_line = static_cast<int>(line_number);
    return true;
  }
  if (directive(line, "source", &value)) {
    if (value.empty()) throw loom::Error(where + "'# source:' names no source format (c, opencl, glsl, ...)");
    d->source = value;
    return true;
  }
  return false;
}

// A line that looks like a directive where none is read is an error.
void refuse_directive(const std::string& line, const std::string& where, const std::string& why) {
  std::string name;
  if (loom::trim(line).rfind('#', 0) != 0 || !golden::looks_like_directive(line, kDirectives, &name)) return;
  if (std::find(kDirectives.begin(), kDirectives.end(), name) == kDirectives.end()) {
    throw loom::Error(where + "'# " + name + "' is no directive" + loom::did_you_mean(name, kDirectives) +
                      " (a comment may not start with a directive's name)");
  }
  throw loom::Error(where + "'# " + name + "' " + why);
}

// The lines after '# expect: unchanged' or a plain '# expect-error:': blank
// lines and comments only.
void read_nothing_after(const std::vector<std::string>& lines, size_t* k, const std::string& path, const Case& c) {
  for (; *k < lines.size() && !is_separator(lines[*k]); ++*k) {
    const std::string& line = lines[*k];
    std::string where = at(path, *k + 1);
    if (golden::parse_check(line, path, static_cast<int>(*k + 1))) {
      throw loom::Error(where + "case '" + c.name + "' states its outcome already; checks need an output to search");
    }
    refuse_directive(line, where, "is no directive here: the case '" + c.name + "' has ended");
    if (!is_comment_or_blank(line)) {
      throw loom::Error(where + "text after the outcome of case '" + c.name + "' (a missing '# -----' line?): '" +
                        line + "'");
    }
  }
}

void validate(Case& c, const std::string& path) {
  std::string where = at(path, c.line) + "case '" + c.name + "' ";
  const Directives& d = c.directives;
  if (!c.located.empty() && c.expect != Case::Expect::kError) {
    throw loom::Error(at(path, c.located.front().directive_line) + "case '" + c.name +
                      "' expects an error at a line of its input, so it has no output to compare: end it at the "
                      "next '# -----' (or with '# expect-error: TEXT', for a part of the error without a location)");
  }
  if (std::all_of(c.input_lines.begin(), c.input_lines.end(), is_comment_or_blank)) {
    throw loom::Error(where + "has no input module (its '# expect' line comes before the input?)");
  }
  int last_input_line = c.input_line + static_cast<int>(c.input_lines.size()) - 1;
  for (const golden::ExpectedError& e : c.located) {
    if (e.line < c.input_line || e.line > last_input_line) {
      throw loom::Error(at(path, e.directive_line) + "expect-error points at line " + std::to_string(e.line) +
                        ", outside the case's input (lines " + std::to_string(c.input_line) + " to " +
                        std::to_string(last_input_line) + ")");
    }
  }
  if (!d.build.empty()) {
    if (d.source.empty()) throw loom::Error(where + "builds and names no '# source: FORMAT' to check");
    if (!d.passes.empty()) throw loom::Error(where + "builds, which runs its config's pipeline, and names passes too");
    if (!d.target.empty() || !d.partition.empty() || !d.config.empty()) {
      throw loom::Error(where + "builds: its target, partition and pass context go in the '# build:' config");
    }
    if (c.expect == Case::Expect::kModule || c.expect == Case::Expect::kUnchanged) {
      throw loom::Error(where + "builds, and its output is source text: state it with '# check:' lines");
    }
    return;
  }
  if (!d.source.empty()) throw loom::Error(where + "names a '# source:' format but no '# build:' config");
  if (d.passes.empty()) throw loom::Error(where + "names no passes");
}

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw loom::Error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  Directives file;
  size_t k = 0;
  for (; k < lines.size() && !is_separator(lines[k]); ++k) {
    if (apply_directive(lines[k], &file, path, k + 1)) continue;
    refuse_directive(lines[k], at(path, k + 1), "is not a directive a file's header takes");
    if (!is_comment_or_blank(lines[k]))
      throw loom::Error(at(path, k + 1) + "text before the first case ('# ----- NAME')");
  }
  std::vector<Case> cases;
  while (k < lines.size()) {
    Case c;
    c.name = loom::trim(lines[k].substr(7));
    c.line = static_cast<int>(k + 1);
    if (c.name.empty()) throw loom::Error(at(path, k + 1) + "a case needs a name after '# -----'");
    c.directives = file;
    ++k;
    while (k < lines.size() && apply_directive(lines[k], &c.directives, path, k + 1)) ++k;
    c.input_line = static_cast<int>(k + 1);
    for (; k < lines.size(); ++k) {
      const std::string& line = lines[k];
      int n = static_cast<int>(k + 1);
      if (is_separator(line) || golden::parse_check(line, path, n)) break;
      if (loom::starts_with(line, "# expect") && !loom::starts_with(line, "# expect-error@")) break;
      if (auto e = golden::parse_expected_error(line, path, n)) {
        c.located.push_back(*e);
      } else {
        refuse_directive(line, at(path, k + 1),
                         "inside the input of case '" + c.name + "': directives come right after the separator line");
      }
      c.input += line + "\n";
      c.input_lines.push_back(line);
    }
    if (k < lines.size() && loom::starts_with(lines[k], "# expect")) {
      const std::string& expect = lines[k];
      std::string rest;
      if (directive(expect, "expect-error", &rest)) {
        if (rest.empty())
          throw loom::Error(at(path, k + 1) + "'# expect-error:' states no text the error must contain");
        c.expect = Case::Expect::kError;
        c.expected = rest;
      } else if (directive(expect, "expect", &rest) && rest == "unchanged") {
        c.expect = Case::Expect::kUnchanged;
      } else if (expect == "# expect:") {
        c.expect = Case::Expect::kModule;
      } else {
        throw loom::Error(at(path, k + 1) +
                          "expected '# expect:', '# expect: unchanged' or "
                          "'# expect-error: TEXT', got '" +
                          expect + "'");
      }
      ++k;
      c.expected_line = static_cast<int>(k + 1);
      if (c.expect == Case::Expect::kModule) {
        for (; k < lines.size() && !is_separator(lines[k]); ++k) {
          if (golden::parse_check(lines[k], path, static_cast<int>(k + 1))) {
            throw loom::Error(
                at(path, k + 1) + "case '" + c.name +
                "' gives the whole expected module after '# expect:'; checks go instead of it, not in it");
          }
          refuse_directive(lines[k], at(path, k + 1), "inside the expected module of case '" + c.name + "'");
          c.expected += lines[k] + "\n";
        }
      } else {
        read_nothing_after(lines, &k, path, c);
      }
    } else if (k < lines.size() && !is_separator(lines[k])) {
      c.expect = Case::Expect::kChecks;
      for (; k < lines.size() && !is_separator(lines[k]); ++k) {
        const std::string& line = lines[k];
        if (auto check = golden::parse_check(line, path, static_cast<int>(k + 1))) {
          c.checks.push_back(*check);
          continue;
        }
        refuse_directive(line, at(path, k + 1),
                         "among the checks of case '" + c.name + "' (only check lines and comments go there)");
        if (!is_comment_or_blank(line)) {
          throw loom::Error(at(path, k + 1) + "case '" + c.name +
                            "': only '# check' lines and comments follow its "
                            "first check, got '" +
                            line + "'");
        }
      }
      golden::validate_checks(c.checks, path);
    } else if (!c.located.empty()) {
      c.expect = Case::Expect::kError;
    } else {
      throw loom::Error(at(path, c.line) + "case '" + c.name + "' has no '# expect' or '# check' line");
    }
    validate(c, path);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Text at its line of the file, so parse errors name the file's lines.
IRModule parse_at(const std::string& text, int line, const std::string& path) {
  return loom::text::parse_module(std::string(static_cast<size_t>(line - 1), '\n') + text, path);
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
      "acc2",
      {{"acc2.dense_tanh", op("tanh", {op("dense", {wildcard(), wildcard()})}), {}},
       {"acc2.dense_relu", op("relu", {op("dense", {wildcard(), wildcard()})}), {}},
       {"acc2.tanh", op("tanh", {wildcard()}), {}},
       {"acc2.relu", op("relu", {wildcard()}), {}},
       {"acc2.exp", op("exp", {wildcard()}), {}},
       {"acc2.sqrt", op("sqrt", {wildcard()}), [](const Match&) -> bool { throw loom::Error("no sqrt today"); }}});
}

IRModule functions_of(const IRModule& m) { return IRModule(m->functions->items, loom::Map::empty(), m->global_infos); }

// The source in `format` of every module of a build's tree that has it.
std::string source_of(const loom::runtime::Module& m, const std::string& format) {
  std::string out;
  try {
    out = m->inspect_source(format);
  } catch (const std::exception&) {
    // this module has no source in that format; its imports may
  }
  for (const loom::runtime::Module& child : m.imports()) out += source_of(child, format);
  return out;
}

// What a case makes: the printed module its passes give, or the source of
// its build; `error` instead when the input does not parse, a pass fails
// or the build does.
struct Outcome {
  IRModule input, result;
  std::string output, error;
};

Outcome run_passes(const Case& c, const std::string& path) {
  std::vector<loom::transform::Pass> passes;  // an unknown pass fails the case, never matches an expected error
  for (const std::string& name : c.directives.passes) passes.push_back(loom::transform::PassRegistry::get(name));
  loom::transform::PassContext context;
  context.check_well_formed = true;
  for (const auto& [key, value] : c.directives.config) context.set_config(key, value_of(value));
  Outcome o;
  try {
    o.input = parse_at(c.input, c.input_line, path);
    IRModule module = o.input;
    if (!c.directives.target.empty()) module = loom::target::with_target(module, make_target(c.directives.target));
    if (!c.directives.partition.empty()) {
      std::vector<loom::Any> names(c.directives.partition.begin(), c.directives.partition.end());
      module = module.with_attr("partition", loom::Array(names));
    }
    o.result = loom::transform::sequential(passes, "golden")(module, context);
    o.output = loom::text::print_module(functions_of(o.result));
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

Outcome run_build(const Case& c, const std::string& path) {
  // The config is the case's to get right: its errors fail the case.
  loom::config::Config config = loom::config::parse_config(
      c.directives.build, path + ":" + std::to_string(c.directives.build_line) + " (# build)");
  Outcome o;
  try {
    o.input = parse_at(c.input, c.input_line, path);
    loom::runtime::Module built = loom::driver::build(o.input, config);
    o.output = source_of(built, c.directives.source);
    if (o.output.empty()) {
      return Outcome{o.input,
                     {},
                     "",
                     "no module of the build has source in format '" + c.directives.source + "':\n" +
                         loom::runtime::module_tree(built)};
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

// "" when the case holds, else why not.
std::string run_case(const Case& c, const std::string& path, bool actual) {
  Outcome o = c.directives.build.empty() ? run_passes(c, path) : run_build(c, path);
  if (actual) {
    std::cout << "# ----- " << c.name << "\n" << (o.error.empty() ? o.output : "# error: " + o.error + "\n");
    return "";
  }
  const char* what = c.directives.build.empty() ? "the passes" : "the build";
  if (c.expect == Case::Expect::kError) {
    if (!c.expected.empty()) {
      if (o.error.empty())
        return "expected an error containing '" + c.expected + "', " + what + " succeeded:\n" + o.output;
      if (o.error.find(c.expected) == std::string::npos)
        return "the error does not contain '" + c.expected + "':\n" + o.error;
    }
    if (c.located.empty()) return "";
    auto diagnostics = golden::diagnostics_of(o.error, path, c.input_lines, c.input_line);
    std::string problem = golden::match_errors(c.located, o.error, diagnostics, path);
    if (!problem.empty() && o.error.empty()) problem += std::string(what) + " gave:\n" + o.output;
    return problem.empty() ? "" : "\n" + problem;
  }
  if (!o.error.empty()) {
    return (o.input.defined() ? std::string(what) + " failed: " : std::string("the input does not parse: ")) + o.error;
  }
  if (c.expect == Case::Expect::kChecks) {
    std::string problem = golden::run_checks(c.checks, o.output, path);
    return problem.empty() ? "" : "\n" + problem;
  }
  IRModule expected = c.expect == Case::Expect::kUnchanged ? o.input : parse_at(c.expected, c.expected_line, path);
  if (auto difference = loom::structural_difference(functions_of(o.result), functions_of(expected))) {
    return std::string(c.expect == Case::Expect::kUnchanged ? "the module changed" : "the result differs") + " (" +
           *difference + "); got:\n" + o.output;
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
      bool after_lower = std::islower(static_cast<unsigned char>(name[i - 1])) ||
                         std::isdigit(static_cast<unsigned char>(name[i - 1]));
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
    bool unchanged =
        std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.expect == Case::Expect::kUnchanged; });
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
