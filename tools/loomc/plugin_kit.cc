// `loomc plugin test PATH.so` (docs/plugin-tools.md): the conformance kit,
// a table of checks of what a plugin declares and does (manifest, init in
// a child process, declarations, target kinds, every operator a target
// claims against the reference interpreter, export round trip, devices).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>

#include <dlpack/dlpack.h>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/driver/declarations.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/text/text.h"
#include "loom/plugin/manager.h"
#include "loom/plugin/manifest.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/library.h"
#include "loom/support/json.h"
#include "loom/support/registration.h"
#include "loom/support/size.h"
#include "loom/support/strings.h"
#include "loom/target/codegen.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"
#include "loom/version.h"
#include "plugin_tools.h"
#include "run_command.h"

namespace loomc {

namespace fs = std::filesystem;
using loom::Any;
using loom::PluginManager;
using loom::PluginRecord;
using loom::runtime::NDArray;

namespace {

struct Row {
  std::string check, status, detail;
};

// An error of a config the kit wrote, without the location in its text.
std::string config_error(const std::exception& e) {
  std::string text = loom::error_message(e);
  const std::string source = "<plugin test>:";
  if (!loom::starts_with(text, source)) return text;
  size_t end = text.find(": ", source.size());
  return end == std::string::npos ? text : text.substr(end + 2);
}

class Kit {
 public:
  Kit(std::string path, const KitOptions& options) : path_(std::move(path)), options_(options) {}

  int run() {
    if (check_manifest() && check_init() && load()) {
      check_declarations();
      check_capabilities();
    }
    return report();
  }

 private:
  bool wanted(const std::string& check) const { return loom::starts_with(check, options_.only); }
  // One line per row: a located error's source excerpt and caret dropped.
  void add(const std::string& check, const std::string& status, const std::string& detail) {
    if (wanted(check)) rows_.push_back(Row{check, status, detail.substr(0, detail.find('\n'))});
  }

  bool check_manifest() {
    record_ = PluginManager::global().read_path(path_);
    if (!record_.manifest) {
      add("manifest", "fail", record_.error);
      return false;
    }
    const loom::PluginManifest& m = *record_.manifest;
    std::vector<std::string> problems;
    if (!std::regex_match(m.version, std::regex(R"(\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?)"))) {
      problems.push_back("version '" + m.version + "' is not MAJOR.MINOR.PATCH");
    }
    std::string reason = loom::check_compatibility(m);
    if (!reason.empty()) problems.push_back(reason);
    if (!problems.empty()) {
      add("manifest", "fail", loom::join(problems, "; "));
      return false;
    }
    add("manifest", "pass",
        m.name + " " + m.version + ", plugin ABI " + std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor) +
            ", Loom " + m.core_version + ", C++ ABI " + m.cxx_abi + ", " + std::to_string(m.provides.size()) +
            " capabilities");
    return true;
  }

  bool check_init() {
    ChildResult child = load_in_child(path_, options_.timeout_s);
    if (child.exit_code != 0) {
      add("init", "fail", child_failure(child, path_, options_.timeout_s));
      return false;
    }
    add("init", "pass", "loads in a child process: " + loom::split(child.output, '\n').front());
    return true;
  }

  bool load() {
    try {
      record_ = PluginManager::global().load_path(path_);
      return true;
    } catch (const std::exception& e) {
      add("init", "fail", "in this process: " + loom::error_message(e));
      return false;
    }
  }

  void check_declarations() {
    const loom::PluginManifest& m = *record_.manifest;
    if (!m.declarations) {
      add("declarations", "fail",
          "the plugin has no .loom_declarations section (build it with loom_add_plugin, "
          "without NO_DECLARATIONS)");
      return;
    }
    std::vector<std::string> declared = m.provides, registered;
    std::string now = loom::driver::plugin_declarations(record_.name);
    loom::parse_declarations(now, path_, &registered);
    std::sort(declared.begin(), declared.end());
    std::sort(registered.begin(), registered.end());
    std::vector<std::string> only_declared, only_registered;
    std::set_difference(declared.begin(), declared.end(), registered.begin(), registered.end(),
                        std::back_inserter(only_declared));
    std::set_difference(registered.begin(), registered.end(), declared.begin(), declared.end(),
                        std::back_inserter(only_registered));
    if (!only_registered.empty()) {
      add("declarations", "fail",
          "init registers what the manifest does not declare: " + loom::join(only_registered, ", ") +
              " (rebuild: loom_add_plugin declares what init registers)");
      return;
    }
    std::string embedded = loom::write_declarations(registered, *m.declarations);
    if (embedded != now) {
      size_t at = 0;
      while (at < embedded.size() && at < now.size() && embedded[at] == now[at]) ++at;
      size_t from = at > 40 ? at - 40 : 0;
      add("declarations", "fail",
          "the embedded schemas differ from what init registers, at character " + std::to_string(at) +
              ": embedded '..." + embedded.substr(from, 80) + "...', registered '..." + now.substr(from, 80) +
              "...' (rebuild the plugin)");
      return;
    }
    add("declarations", "pass", std::to_string(registered.size()) + " capabilities, schemas as registered");
  }

  void check_capabilities() {
    std::map<std::string, std::vector<std::string>> by_kind;
    for (const std::string& c : loom::capabilities_owned_by(record_.name)) {
      size_t colon = c.find(':');
      by_kind[c.substr(0, colon)].push_back(c.substr(colon + 1));
    }
    for (const std::string& kind : by_kind["target"]) check_target(kind);
    for (const std::string& tag : by_kind["tag"]) check_tag(tag);
    for (const std::string& device : by_kind["device"]) check_device(device);
  }

  // ---- target kinds ----
  void check_target(const std::string& kind) {
    std::string check = "target " + kind;
    loom::target::TargetKindEntry entry;
    try {
      entry = loom::target::TargetKindRegistry::get(kind);
      loom::config::parse_config("target: {kind: " + kind + "}\n", "<plugin test>");
      for (const std::string& pass : entry.traits.default_pipeline) loom::transform::PassRegistry::get(pass);
    } catch (const std::exception& e) {
      add(check, "fail", config_error(e));
      return;
    }
    std::vector<std::string> codegens = loom::target::CodegenRegistry::list();
    bool has_codegen = std::find(codegens.begin(), codegens.end(), kind) != codegens.end();
    add(check, "pass",
        std::to_string(entry.attrs.size()) + " attributes with valid defaults; default pipeline " +
            (entry.traits.default_pipeline.empty() ? "none" : loom::join(entry.traits.default_pipeline, ", ")) +
            (has_codegen ? "; codegen registered" : "; no codegen (nothing to build)"));
    if (has_codegen && kind != "ref") {
      check_operators(kind, entry.traits.partition_only, entry.traits.device_type != kDLCPU);
    }
  }

  void check_tag(const std::string& name) {
    std::string check = "tag " + name;
    try {
      loom::config::Config config = loom::config::parse_config("target: {tag: " + name + "}\n", "<plugin test>");
      add(check, "pass", "a target of kind " + config.target->kind + " with its attributes");
    } catch (const std::exception& e) {
      add(check, "fail", config_error(e));
    }
  }

  struct Case {
    std::string text;  // the module
    std::string call;
    double low, high;
  };

  // The examples of an operator: its declared ones, else the guess of
  // (3, 5) float32 inputs with default attributes.
  std::vector<Case> cases_of(const std::string& op, int arity, bool* guessed) {
    std::vector<Case> out;
    std::vector<loom::graph::OpExample> examples = loom::graph::op_examples(op);
    *guessed = examples.empty();
    if (examples.empty()) {
      loom::graph::OpExample guess;
      std::vector<std::string> args;
      for (int i = 0; i < (arity < 0 ? 2 : arity); ++i) {
        guess.inputs.push_back("Tensor[(3, 5), float32]");
        args.push_back("%a" + std::to_string(i));
      }
      guess.call = op + "(" + loom::join(args, ", ") + ")";
      examples.push_back(guess);
    }
    for (const auto& e : examples) {
      std::vector<std::string> params;
      for (size_t i = 0; i < e.inputs.size(); ++i) params.push_back("%a" + std::to_string(i) + ": " + e.inputs[i]);
      out.push_back(Case{"@main = fn(" + loom::join(params, ", ") + ") { " + e.call + " }\n", e.call, e.low, e.high});
    }
    return out;
  }

  static std::vector<NDArray> run_case(const loom::runtime::Module& lib, const std::vector<Any>& args) {
    Any result = lib.get_function("main").call(args.data(), static_cast<int32_t>(args.size()));
    std::vector<NDArray> out;
    flatten_outputs(result, &out);
    std::vector<NDArray> host;
    for (const NDArray& a : out)
      host.push_back(a->device.device_type == kDLCPU ? a : a.copy_to(loom::Device{kDLCPU, 0}));
    return host;
  }

  // "" when `got` matches `want` within the dtype's tolerance, else where
  // and by how much it does not.
  static std::string compare(const std::vector<NDArray>& got, const std::vector<NDArray>& want, double* max_error) {
    if (got.size() != want.size()) {
      return std::to_string(got.size()) + " outputs, the reference has " + std::to_string(want.size());
    }
    for (size_t k = 0; k < got.size(); ++k) {
      const NDArray &g = got[k], &w = want[k];
      std::string where = "output " + std::to_string(k);
      if (g->dtype != w->dtype || g.shape_vector() != w.shape_vector()) {
        return where + " is " + g->dtype.to_string() + " " + loom::shape_text(g.shape_vector()) + ", the reference's " +
               w->dtype.to_string() + " " + loom::shape_text(w.shape_vector());
      }
      double rtol = 0, atol = 0;
      const loom::DataType& t = w->dtype;
      if (t.code == loom::DataType::kFloat) {
        if (t.bits == 16)
          rtol = atol = 1e-2;
        else if (t.bits == 32)
          rtol = 1e-4, atol = 1e-5;
        else
          rtol = 1e-9, atol = 1e-12;
      }
      for (int64_t i = 0; i < w->numel(); ++i) {
        double a = element(g, i), b = element(w, i);
        bool both_nan = std::isnan(a) && std::isnan(b);
        double err = std::fabs(a - b);
        if (!both_nan && std::isfinite(err)) *max_error = std::max(*max_error, err);
        if (!both_nan && !(err <= atol + rtol * std::fabs(b)) && !(a == b)) {
          char text[200];
          std::snprintf(text, sizeof(text),
                        " element %lld: got %.9g, the reference %.9g (tolerance %g + %g * |reference|)",
                        static_cast<long long>(i), a, b, atol, rtol);
          return where + text;
        }
      }
    }
    return "";
  }

  static double element(const NDArray& a, int64_t i) {
    const loom::DataType& t = a->dtype;
    const char* p = a.data_as<char>() + i * (t.bits / 8);
    switch (t.code) {
      case loom::DataType::kFloat:
        if (t.bits == 32) return *reinterpret_cast<const float*>(p);
        if (t.bits == 64) return *reinterpret_cast<const double*>(p);
        break;
      case loom::DataType::kBool:
        return *reinterpret_cast<const uint8_t*>(p) != 0;
      case loom::DataType::kInt:
        if (t.bits == 8) return *reinterpret_cast<const int8_t*>(p);
        if (t.bits == 16) return *reinterpret_cast<const int16_t*>(p);
        if (t.bits == 32) return *reinterpret_cast<const int32_t*>(p);
        if (t.bits == 64) return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
        break;
      case loom::DataType::kUInt:
        if (t.bits == 8) return *reinterpret_cast<const uint8_t*>(p);
        if (t.bits == 32) return *reinterpret_cast<const uint32_t*>(p);
        if (t.bits == 64) return static_cast<double>(*reinterpret_cast<const uint64_t*>(p));
        break;
      default:
        break;
    }
    LOOM_THROW(Error) << "the kit cannot compare " << t.to_string() << " outputs";
  }

  void check_operators(const std::string& kind, bool partition_only, bool device) {
    loom::config::Config reference = loom::config::parse_config("target: {kind: ref}\n", "<plugin test: ref>");
    // A device's kernels are launched by host code: the llvm CPU target's
    // when a plugin provides it, else the C target's.
    std::vector<std::string> kinds = loom::with_available(loom::target::TargetKindRegistry::list(), "target");
    std::string host = std::count(kinds.begin(), kinds.end(), "llvm") ? "llvm" : "c";
    std::string text = partition_only ? "target: {kind: ref, partition: [" + kind + "]}\n"
                       : device       ? "target: {kind: " + kind + ", host: {kind: " + host + "}}\n"
                                      : "target: {kind: " + kind + "}\n";
    loom::config::Config config = loom::config::parse_config(text, "<plugin test: " + kind + ">");
    std::mt19937_64 rng(options_.seed);
    std::optional<std::pair<Case, std::vector<NDArray>>> saved;  // for the round trip
    // Every operator, loading the plugins that provide them.
    for (const std::string& op : loom::with_available(loom::ir::OpRegistry::list(), "op")) {
      std::string check = "ops " + kind + ": " + op;
      if (!wanted(check) && !wanted("roundtrip " + kind)) continue;
      loom::ir::OpEntry entry = loom::ir::OpRegistry::get(op);
      if (entry.owner == "core") continue;                                 // call_dps and the like: not computations
      if (!partition_only && !entry.properties.count("FLower")) continue;  // a codegen's own operator
      bool guessed = false;
      std::vector<Case> cases = cases_of(op, entry.def.num_inputs, &guessed);
      int passed = 0;
      double max_error = 0;
      std::string failure, skipped;
      for (size_t c = 0; c < cases.size() && failure.empty(); ++c) {
        const Case& k = cases[c];
        std::string label = "example " + std::to_string(c + 1) + " (" + k.call + ")";
        loom::ir::IRModule mod;
        try {
          mod = loom::text::parse_module(k.text, "<" + op + " example>");
          loom::transform::PassRegistry::get("InferType")(mod);
        } catch (const std::exception& e) {
          if (guessed) {
            skipped = "no example declared, and the guess " + k.call + " on (3, 5) float32 inputs does not type (" +
                      loom::error_message(e) + "); declare examples with graph::set_op_examples";
          } else {
            failure = label + " does not type: " + loom::error_message(e);
          }
          continue;
        }
        try {
          if (partition_only && !claims(config, mod, kind)) continue;  // not an operator it claims
        } catch (const std::exception& e) {
          failure = label + ": partitioning for " + kind + " failed: " + loom::error_message(e);
          continue;
        }
        try {
          loom::runtime::Module want_lib = loom::driver::build(mod, reference);
          loom::runtime::VMSignature signature = loom::runtime::signature(want_lib, "main");
          InputRange range{k.low, k.high, static_cast<int64_t>(std::ceil(k.low)),
                           static_cast<int64_t>(std::floor(k.high))};
          std::vector<Any> args;
          for (size_t i = 0; i < signature.param_types.size(); ++i)
            args.push_back(Any(random_input(signature, i, rng, range)));
          std::vector<NDArray> want = run_case(want_lib, args);
          loom::runtime::Module lib;
          try {
            lib = loom::driver::build(mod, config);
          } catch (const std::exception& e) {
            failure = label + ": the build for " + kind + " failed: " + loom::error_message(e);
            continue;
          }
          std::vector<NDArray> got = run_case(lib, args);
          std::string diff = compare(got, want, &max_error);
          if (!diff.empty()) {
            failure = label + ": " + diff;
            continue;
          }
          ++passed;
          if (!saved) saved = std::make_pair(k, args.empty() ? std::vector<NDArray>{} : to_arrays(args));
        } catch (const std::exception& e) {
          failure = label + ": " + loom::error_message(e);
        }
      }
      if (!failure.empty()) {
        add(check, "fail", failure);
      } else if (passed > 0) {
        char text[160];
        std::snprintf(text, sizeof(text), "%d example%s on random inputs, largest difference %.3g", passed,
                      passed == 1 ? "" : "s", max_error);
        add(check, "pass", text);
      } else if (!skipped.empty()) {
        add(check, "skip", skipped);
      }
      // An operator none of whose examples goes to a partition-only kind is
      // not one it claims: no row.
    }
    if (!saved) {
      add("roundtrip " + kind, "skip", "no operator example passed to export");
    } else {
      check_roundtrip(kind, config, saved->first, saved->second);
    }
  }

  static std::vector<NDArray> to_arrays(const std::vector<Any>& args) {
    std::vector<NDArray> out;
    for (const Any& a : args) out.push_back(a.cast<NDArray>());
    return out;
  }

  // Whether partitioning gives `kind` any of the module.
  static bool claims(const loom::config::Config& config, const loom::ir::IRModule& mod, const std::string& kind) {
    loom::ir::IRModule lowered = config.pipeline()(config.constrain(mod), config.context);
    for (const std::string& name : lowered.names()) {
      if (loom::graph::codegen_of(lowered.lookup(name)) == kind) return true;
    }
    return false;
  }

  void check_roundtrip(const std::string& kind, const loom::config::Config& config, const Case& k,
                       const std::vector<NDArray>& inputs) {
    std::string check = "roundtrip " + kind;
    if (!wanted(check)) return;
    fs::path dir = fs::temp_directory_path() / ("loom_plugin_test_" + std::to_string(getpid()));
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::string file = (dir / "example.so").string();
    try {
      loom::ir::IRModule mod = loom::text::parse_module(k.text, "<round trip>");
      loom::runtime::Module lib = loom::driver::build(mod, config);
      std::vector<Any> args(inputs.begin(), inputs.end());
      std::vector<NDArray> before = run_case(lib, args);
      loom::runtime::export_library(lib, file);
      loom::runtime::Module loaded = loom::runtime::load_module(file);
      std::vector<NDArray> after = run_case(loaded, args);
      double ignored = 0;
      std::string diff = compare(after, before, &ignored);
      if (!diff.empty()) {
        add(check, "fail", k.call + ": after export_library and load_module, " + diff);
      } else {
        add(check, "pass", k.call + ": exported, loaded back, same outputs");
      }
    } catch (const std::exception& e) {
      add(check, "fail", k.call + ": " + loom::error_message(e));
    }
    fs::remove_all(dir, ec);
  }

  // ---- devices ----
  void check_device(const std::string& name) {
    std::string check = "device " + name;
    try {
      loom::Device device = loom::Device::parse(name + ":0");
      loom::runtime::DeviceAPI& api = loom::runtime::DeviceAPIRegistry::get(device);
      const int64_t n = 4096;
      std::vector<uint8_t> source(n), back(n, 0);
      std::mt19937_64 rng(options_.seed);
      for (auto& b : source) b = static_cast<uint8_t>(rng());
      void* memory = api.alloc(device, n, 64);
      if (!memory) LOOM_THROW(Error) << "alloc of " << n << " bytes returned null";
      int64_t shape[1] = {n};
      DLTensor host{source.data(), DLDevice{kDLCPU, 0}, 1, DLDataType{kDLUInt, 8, 1}, shape, nullptr, 0};
      DLTensor on_device{memory, DLDevice{static_cast<DLDeviceType>(device.device_type), device.device_id},
                         1,      DLDataType{kDLUInt, 8, 1},
                         shape,  nullptr,
                         0};
      DLTensor host_back{back.data(), DLDevice{kDLCPU, 0}, 1, DLDataType{kDLUInt, 8, 1}, shape, nullptr, 0};
      api.copy(host, on_device, nullptr);
      api.synchronize(device, nullptr);
      api.copy(on_device, host_back, nullptr);
      api.synchronize(device, nullptr);
      api.free(device, memory);
      for (int64_t i = 0; i < n; ++i) {
        if (source[i] != back[i]) {
          LOOM_THROW(Error) << "byte " << i << " came back as " << int(back[i]) << ", was " << int(source[i])
                            << " (a copy to the device and back)";
        }
      }
      add(check, "pass",
          "alloc, copy of " + std::to_string(n) + " bytes there and back (unchanged), synchronize, free");
    } catch (const std::exception& e) {
      add(check, "fail", loom::error_message(e));
    }
  }

  int report() {
    int failed = 0, passed = 0, skipped = 0;
    for (const Row& r : rows_) {
      if (r.status == "fail")
        ++failed;
      else if (r.status == "pass")
        ++passed;
      else
        ++skipped;
    }
    if (options_.json) {
      loom::JsonWriter json;
      json.begin_object().key("plugin").value(path_).key("rows").begin_array();
      for (const Row& r : rows_) {
        json.begin_object().key("check").value(r.check).key("status").value(r.status).key("detail").value(r.detail);
        json.end_object();
      }
      json.end_array().key("passed").value(int64_t{passed}).key("failed").value(int64_t{failed});
      json.key("skipped").value(int64_t{skipped}).end_object();
      std::cout << json.str() << "\n";
    } else {
      size_t width = 5;
      for (const Row& r : rows_) width = std::max(width, r.check.size());
      std::printf("%-*s  %-6s %s\n", static_cast<int>(width), "CHECK", "RESULT", "DETAIL");
      for (const Row& r : rows_) {
        std::printf("%-*s  %-6s %s\n", static_cast<int>(width), r.check.c_str(), r.status.c_str(), r.detail.c_str());
      }
      std::printf("%s: %d passed, %d failed, %d skipped\n", path_.c_str(), passed, failed, skipped);
    }
    return failed ? 1 : 0;
  }

  std::string path_;
  KitOptions options_;
  PluginRecord record_;
  std::vector<Row> rows_;
};

}  // namespace

int plugin_test(const std::string& path, const KitOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    std::cerr << "loomc: error: no file " << path << "\n";
    return 1;
  }
  return Kit(fs::absolute(path).lexically_normal().string(), options).run();
}

}  // namespace loomc
