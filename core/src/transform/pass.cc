// Passes, registries, PassContext and instruments (docs/passes.md).
#include "loom/transform/pass.h"

#include <algorithm>
#include <iterator>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "loom/ir/analysis.h"
#include "loom/ir/text.h"
#include "loom/support/registry.h"

namespace loom::transform {

LOOM_REGISTER_OBJECT(PassNode);

namespace {
NamedRegistry<PassEntry>& passes() {
  static auto* instance = new NamedRegistry<PassEntry>("pass", "pass");
  return *instance;
}
NamedRegistry<ConfigEntry>& configs() {
  static auto* instance = new NamedRegistry<ConfigEntry>("config option", "config");
  return *instance;
}

Pass make_pass(PassInfo info, std::function<IRModule(const IRModule&, const PassContext&)> body) {
  if (info.name.empty()) LOOM_THROW(Error) << "a pass needs a name";
  check_schema(info.options, "pass '" + info.name + "'");
  auto node = make_object<PassNode>();
  node->info = std::move(info);
  node->body = std::move(body);
  return Pass(node);
}
}  // namespace

// ---- running ------------------------------------------------------------------
IRModule Pass::operator()(const IRModule& module) const { return (*this)(module, PassContext::current()); }

IRModule Pass::operator()(const IRModule& module, const PassContext& context) const {
  const PassInfo& pass_info = info();
  for (const auto& instrument : context.instruments)
    if (!instrument->should_run(pass_info, module)) return module;
  for (const auto& instrument : context.instruments) instrument->before(pass_info, module);
  IRModule result = get()->body(module, context);
  if (!result.defined()) LOOM_THROW(Error) << "pass '" << pass_info.name << "' returned no module";
  for (const auto& instrument : context.instruments) instrument->after(pass_info, result);
  // A Sequential's passes are checked one by one; checking it again adds nothing.
  if (context.check_well_formed && pass_info.name != "Sequential" && !result.same_as(module)) {
    WellFormedInstrument().after(pass_info, result);
  }
  return result;
}

Pass module_pass(PassInfo info, std::function<IRModule(const IRModule&, const PassContext&)> fn) {
  return make_pass(std::move(info), std::move(fn));
}

Pass function_pass(PassInfo info, uint32_t variant_type_index, FunctionPassFn fn) {
  std::string name = info.name;
  return make_pass(std::move(info), [variant_type_index, fn = std::move(fn), name](const IRModule& module,
                                                                                      const PassContext& context) {
    IRModule result = module;
    for (const std::string& global : module.names()) {
      ir::BaseFunc f = module.lookup(global);
      if (!f->is_instance_of(variant_type_index)) continue;
      ir::BaseFunc g = fn(f, module, context);
      if (!g.defined()) LOOM_THROW(Error) << "pass '" << name << "' returned no function for @" << global;
      if (!g.same_as(f)) result = result.with_function(global, g);
    }
    return result;
  });
}

Pass sequential(std::vector<Pass> passes, std::string name) {
  PassInfo info;
  info.name = std::move(name);
  info.summary = "runs passes in order";
  auto node = make_object<PassNode>();
  node->info = info;
  node->body = [passes = std::move(passes)](const IRModule& module, const PassContext& context) {
    IRModule current = module;
    std::set<std::string> done;
    std::vector<std::string> resolving;
    // A listed pass runs where it is listed (again if listed twice); a
    // required pass runs before the pass that needs it unless it has run
    // already in this sequence.
    std::function<void(const Pass&, bool)> run = [&](const Pass& pass, bool listed) {
      const PassInfo& info = pass.info();
      if (!listed && done.count(info.name)) return;
      if (std::find(resolving.begin(), resolving.end(), info.name) != resolving.end()) {
        LOOM_THROW(Error) << "passes require each other: " << join(resolving, " -> ") << " -> " << info.name;
      }
      resolving.push_back(info.name);
      for (const std::string& dependency : info.required) run(PassRegistry::get(dependency), false);
      resolving.pop_back();
      bool forced = context.is_required(info.name);
      if (!forced && (context.is_disabled(info.name) || info.opt_level > context.opt_level)) return;
      current = pass(current, context);
      done.insert(info.name);
    };
    for (const Pass& pass : passes) run(pass, true);
    return current;
  };
  return Pass(node);
}

// ---- registries -----------------------------------------------------------------
namespace {
void add_option(SchemaField field, bool allow_override) {
  check_schema({field}, "config option '" + field.name + "'");
  if (field.default_value.is_none()) LOOM_THROW(Error) << "config option '" << field.name << "' needs a default";
  std::string name = field.name;
  configs().add(ConfigEntry{name, std::move(field), ""}, allow_override);
}
}  // namespace

void PassRegistry::register_pass(Pass pass, bool allow_override) {
  const PassInfo& info = pass.info();
  // Checked before anything is registered, so a bad option leaves no pass.
  for (const SchemaField& option : info.options) {
    if (option.default_value.is_none()) {
      LOOM_THROW(Error) << "pass '" << info.name << "': option '" << option.name << "' needs a default";
    }
  }
  passes().add(PassEntry{info.name, pass, ""}, allow_override);
  for (const SchemaField& option : info.options) {
    SchemaField key = option;
    key.name = info.name + "." + option.name;
    if (key.doc.empty()) key.doc = "option of pass " + info.name;
    add_option(key, allow_override);
  }
}
std::optional<PassEntry> PassRegistry::entry(const std::string& name) { return passes().entry(name); }
Pass PassRegistry::get(const std::string& name) { return passes().get(name).pass; }
std::vector<std::string> PassRegistry::list() { return passes().names(); }

void ConfigRegistry::register_option(SchemaField field) { add_option(std::move(field), false); }
std::optional<ConfigEntry> ConfigRegistry::entry(const std::string& name) { return configs().entry(name); }
std::vector<std::string> ConfigRegistry::list() { return configs().names(); }

// ---- PassContext ----------------------------------------------------------------
void PassContext::set_config(const std::string& key, Any value) {
  auto entry = configs().find(key);
  if (!entry) {
    LOOM_THROW(TypeError) << "unknown config option '" << key << "'" << did_you_mean(key, ConfigRegistry::list());
  }
  if (!value_has_type(value, entry->field.type)) {
    LOOM_THROW(TypeError) << "config option '" << key << "' must be " << entry->field.type << ", got "
                          << value.describe();
  }
  config_[key] = std::move(value);
}

Any PassContext::get_config(const std::string& key) const {
  auto found = config_.find(key);
  if (found != config_.end()) return found->second;
  auto entry = configs().find(key);
  if (!entry) {
    LOOM_THROW(LookupError) << "unknown config option '" << key << "'" << did_you_mean(key, ConfigRegistry::list());
  }
  return entry->field.default_value;
}

bool PassContext::default_well_formed_check() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("LOOM_WELL_FORMED_CHECK");
  return env && std::string(env) == "1";
#endif
}

bool PassContext::is_disabled(const std::string& pass) const {
  return std::find(disabled.begin(), disabled.end(), pass) != disabled.end();
}
bool PassContext::is_required(const std::string& pass) const {
  return std::find(required.begin(), required.end(), pass) != required.end();
}

namespace {
thread_local std::vector<PassContext*> context_stack;
}

const PassContext& PassContext::current() {
  if (!context_stack.empty()) return *context_stack.back();
  static const PassContext default_context;
  return default_context;
}

PassContext::Scope::Scope(PassContext context) : context_(std::make_unique<PassContext>(std::move(context))) {
  context_stack.push_back(context_.get());
}
PassContext::Scope::~Scope() {
  // Its own entry, wherever it is: a frontend may leave scopes out of order.
  auto found = std::find(context_stack.rbegin(), context_stack.rend(), context_.get());
  if (found != context_stack.rend()) context_stack.erase(std::next(found).base());
}

// ---- instruments ----------------------------------------------------------------
void TimingInstrument::before(const PassInfo& info, const IRModule&) {
  // Rows in order of first start, so an enclosing Sequential comes first.
  if (std::none_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.pass == info.name; })) {
    rows_.push_back(Row{info.name, 0, 0});
  }
  starts_.push_back(std::chrono::steady_clock::now());
}

void TimingInstrument::after(const PassInfo& info, const IRModule&) {
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - starts_.back()).count();
  starts_.pop_back();
  if (starts_.empty()) outer_ms_ += ms;  // passes nest: the total counts outermost ones
  auto row = std::find_if(rows_.begin(), rows_.end(), [&](const Row& r) { return r.pass == info.name; });
  row->calls += 1;
  row->total_ms += ms;
}

std::string TimingInstrument::report() const {
  size_t width = 4;
  for (const auto& r : rows_) width = std::max(width, r.pass.size());
  char line[256];
  std::snprintf(line, sizeof(line), "%-*s  %5s  %10s\n", static_cast<int>(width), "pass", "calls", "total ms");
  std::string out = line;
  for (const auto& r : rows_) {
    std::snprintf(line, sizeof(line), "%-*s  %5d  %10.3f\n", static_cast<int>(width), r.pass.c_str(), r.calls, r.total_ms);
    out += line;
  }
  std::snprintf(line, sizeof(line), "%-*s  %5s  %10.3f\n", static_cast<int>(width), "total", "", outer_ms_);
  return out + line;
}

DumpIRInstrument::DumpIRInstrument(std::string folder) : folder_(std::move(folder)) {
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) LOOM_THROW(Error) << "cannot create the IR dump folder " << folder_ << ": " << ec.message();
}

void DumpIRInstrument::write(const std::string& file, const IRModule& module) const {
  std::string path = (std::filesystem::path(folder_) / file).string();
  std::ofstream out(path);
  out << ir::print_module(module);
  if (!out) LOOM_THROW(Error) << "cannot write " << path;
}

void DumpIRInstrument::before(const PassInfo& info, const IRModule& module) {
  open_.push_back(++counter_);
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%03d_", open_.back());
  write(prefix + info.name + "_before.loom", module);
}

void DumpIRInstrument::after(const PassInfo& info, const IRModule& module) {
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%03d_", open_.back());
  open_.pop_back();
  write(prefix + info.name + "_after.loom", module);
}

void WellFormedInstrument::after(const PassInfo& info, const IRModule& module) {
  std::vector<ir::Diagnostic> problems = ir::well_formed(module);
  if (problems.empty()) return;
  throw Error("pass '" + info.name + "' left the module ill-formed:" + ir::diagnostic_lines(problems));
}

}  // namespace loom::transform
