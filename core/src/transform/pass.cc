// Passes, registries, PassContext and instruments (docs/passes.md).
#include "loom/transform/pass.h"

#include <algorithm>
#include <iterator>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "loom/graph/well_formed.h"
#include "loom/text/text.h"
#include "loom/plugin/manager.h"
#include "loom/support/registry.h"
#include "loom/support/strings.h"
#include "loom/transform/property.h"

namespace loom::transform {

LOOM_REGISTER_OBJECT(PassNode);

namespace {
NamedRegistry<PassEntry>& passes() {
  static auto* instance = new NamedRegistry<PassEntry>("pass", "pass", /*overridable=*/true);
  return *instance;
}
NamedRegistry<ConfigEntry>& configs() {
  static auto* instance = new NamedRegistry<ConfigEntry>("config option", "config", /*overridable=*/true);
  return *instance;
}

void check_contract(const PassInfo& info) {
  for (const auto* list : {&info.needs, &info.establishes, &info.preserves}) {
    for (const std::string& name : *list) {
      if (list == &info.preserves && name == property::kAll) continue;
      try {
        PropertyRegistry::get(name);
      } catch (const LookupError& e) {
        LOOM_THROW(LookupError) << "pass '" << info.name << "': " << e.what();
      }
    }
  }
}

ObjectPtr<PassNode> make_node(PassInfo info) {
  if (info.name.empty()) LOOM_THROW(Error) << "a pass needs a name";
  check_schema(info.options, "pass '" + info.name + "'");
  check_contract(info);
  auto node = make_object<PassNode>();
  node->info = std::move(info);
  return node;
}

Pass make_pass(PassInfo info, std::function<IRModule(const IRModule&, const PassContext&)> body) {
  auto node = make_node(std::move(info));
  node->body = std::move(body);
  return Pass(node);
}

// ---- contracts ------------------------------------------------------------------
// What is known of the module a pass or a Sequential is transforming.
struct Tracker {
  std::set<std::string> holding;
  std::map<std::string, std::string> lost_by;  // property -> the pass that last dropped it
};

bool keeps_all(const PassInfo& info) {
  return std::find(info.preserves.begin(), info.preserves.end(), property::kAll) != info.preserves.end();
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Whether `property` speaks of an IR level the pass does not change.
bool beside_changes(const PassInfo& info, const std::string& property) {
  if (info.changes.empty()) return false;
  std::string level = PropertyRegistry::get(property).level;
  return !level.empty() && !contains(info.changes, level);
}

// A pass that declares the levels it changes leaves every function of the
// other levels as it was: the same objects under the same names.
void check_changes(const PassInfo& info, const IRModule& before, const IRModule& after) {
  if (info.changes.empty()) return;
  std::set<std::string> names;
  for (const std::string& name : before.names()) names.insert(name);
  for (const std::string& name : after.names()) names.insert(name);
  for (const std::string& name : names) {
    ir::BaseFunc was = before.contains(name) ? before.lookup(name) : ir::BaseFunc();
    ir::BaseFunc now = after.contains(name) ? after.lookup(name) : ir::BaseFunc();
    if (was.same_as(now)) continue;
    const ir::BaseFunc& f = now.defined() ? now : was;
    std::string level = function_level(f);
    if (!contains(info.changes, level)) {
      LOOM_THROW(Error) << "pass '" << info.name << "' declares that it changes only " << join(info.changes, ", ")
                        << " functions, but it "
                        << (!was.defined()   ? "added"
                            : !now.defined() ? "removed"
                                             : "changed")
                        << " the " << level << " function @" << name;
    }
  }
}

class Runner {
 public:
  // `completing`: every property with a check is established when it
  // fails, not only the auto-established ones, and each pass run for it
  // is recorded in ran() (establish()).
  Runner(const PassContext& context, Tracker& tracker, bool completing = false)
      : context_(context), t_(tracker), completing_(completing) {}

  // The module with `property` holding, for `needer`.
  IRModule ensure(const std::string& property, const std::string& needer, const IRModule& module) {
    if (t_.holding.count(property)) return module;
    PropertyInfo p = PropertyRegistry::get(property);
    std::optional<std::string> why;
    if (p.check) {
      why = p.check(module);
      if (!why) {
        t_.holding.insert(property);
        return module;
      }
    }
    std::string message = "pass '" + needer + "' needs the property '" + property + "' (" + p.summary +
                          "), which does not hold here" + (why ? " (" + *why + ")" : "");
    auto lost = t_.lost_by.find(property);
    if (lost != t_.lost_by.end()) message += "; pass '" + lost->second + "' changed the module and does not keep it";
    bool establishing = p.auto_establish || (completing_ && p.check);
    if (establishing && !context_.is_disabled(p.established_by)) {
      if (std::find(establishing_.begin(), establishing_.end(), property) != establishing_.end()) {
        LOOM_THROW(Error) << message << "; establishing it needs it again (" << join(establishing_, " -> ") << ")";
      }
      establishing_.push_back(property);
      IRModule out = run(PassRegistry::get(p.established_by), module);
      establishing_.pop_back();
      if (completing_) ran_.push_back(p.established_by);
      if (!t_.holding.count(property)) {
        LOOM_THROW(Error) << "pass '" << p.established_by << "' ran to establish '" << property << "' for pass '"
                          << needer << "', but it does not declare that it establishes it";
      }
      return out;
    }
    message += "; pass '" + p.established_by + "' establishes it";
    if (establishing) message += ", but this context disables it";
    message += ": run " + p.established_by + " before " + needer;
    throw Error(message);
  }

  // `pass` after its needs are made to hold; the tracker follows.
  IRModule run(const Pass& pass, IRModule module) {
    const PassInfo& info = pass.info();
    for (const std::string& need : info.needs) module = ensure(need, info.name, module);
    for (const auto& instrument : context_.instruments)
      if (!instrument->should_run(info, module)) return module;
    for (const auto& instrument : context_.instruments) instrument->before(info, module);
    IRModule result = pass->is_sequence ? sequence(pass, module) : pass->body(module, context_);
    if (!result.defined()) LOOM_THROW(Error) << "pass '" << info.name << "' returned no module";
    for (const auto& instrument : context_.instruments) instrument->after(info, result);
    if (!pass->is_sequence) {
      bool changed = !result.same_as(module);
      if (changed && !keeps_all(info)) {
        for (auto it = t_.holding.begin(); it != t_.holding.end();) {
          if (contains(info.preserves, *it) || contains(info.establishes, *it) || beside_changes(info, *it)) {
            ++it;
          } else {
            t_.lost_by[*it] = info.name;
            it = t_.holding.erase(it);
          }
        }
      }
      for (const std::string& p : info.establishes) {
        t_.holding.insert(p);
        t_.lost_by.erase(p);
      }
      // A Sequential's passes are checked one by one; checking it again adds nothing.
      if (context_.check_well_formed && changed) {
        check_changes(info, module, result);
        WellFormedInstrument().after(info, result);
        verify(info, result);
      }
    }
    return result;
  }

 private:
  // Runs the passes of a Sequential: each after the passes it requires
  // that have not run in this sequence, unless disabled or above the opt
  // level (a required pass always runs).
  IRModule sequence(const Pass& seq, const IRModule& module) {
    std::vector<Pass> passes;
    for (const ObjectRef& p : seq->sequence) passes.push_back(downcast<Pass>(p));
    for (const std::string& name : seq->sequence_names) passes.push_back(PassRegistry::get(name));
    IRModule current = module;
    std::set<std::string> done;
    std::vector<std::string> resolving;
    std::function<void(const Pass&, bool)> step = [&](const Pass& pass, bool listed) {
      const PassInfo& info = pass.info();
      if (!listed && done.count(info.name)) return;
      if (std::find(resolving.begin(), resolving.end(), info.name) != resolving.end()) {
        LOOM_THROW(Error) << "passes require each other: " << join(resolving, " -> ") << " -> " << info.name;
      }
      resolving.push_back(info.name);
      for (const std::string& dependency : info.required) step(PassRegistry::get(dependency), false);
      resolving.pop_back();
      bool forced = context_.is_required(info.name);
      if (!forced && (context_.is_disabled(info.name) || info.opt_level > context_.opt_level)) return;
      current = run(pass, current);
      done.insert(info.name);
    };
    for (const Pass& pass : passes) step(pass, true);
    return current;
  }

  // Every property the tracker claims that has a check must hold.
  void verify(const PassInfo& info, const IRModule& module) {
    for (const std::string& property : t_.holding) {
      PropertyInfo p = PropertyRegistry::get(property);
      if (!p.check) continue;
      if (auto why = p.check(module)) {
        LOOM_THROW(Error) << "pass '" << info.name << "' declares that '" << property << "' holds after it ("
                          << (contains(info.establishes, property) ? "establishes" : "preserves")
                          << "), but it does not: " << *why;
      }
    }
  }

  const PassContext& context_;
  Tracker& t_;
  bool completing_;
  std::vector<std::string> establishing_;
  std::vector<std::string> ran_;  // completing: the passes run, in order

 public:
  const std::vector<std::string>& ran() const { return ran_; }
};
}  // namespace

// ---- running ------------------------------------------------------------------
IRModule Pass::operator()(const IRModule& module) const { return (*this)(module, PassContext::current()); }

IRModule Pass::operator()(const IRModule& module, const PassContext& context) const {
  Tracker tracker;
  return Runner(context, tracker).run(*this, module);
}

IRModule establish(const IRModule& module, const std::vector<std::string>& properties, const std::string& needer,
                   const PassContext& context, std::vector<std::string>* ran) {
  Tracker tracker;
  Runner runner(context, tracker, /*completing=*/true);
  IRModule out = module;
  for (const std::string& property : properties) out = runner.ensure(property, needer, out);
  if (ran) ran->insert(ran->end(), runner.ran().begin(), runner.ran().end());
  return out;
}

Pass module_pass(PassInfo info, std::function<IRModule(const IRModule&, const PassContext&)> fn) {
  return make_pass(std::move(info), std::move(fn));
}

Pass function_pass(PassInfo info, uint32_t variant_type_index, FunctionPassFn fn) {
  std::string name = info.name;
  return make_pass(std::move(info),
                   [variant_type_index, fn = std::move(fn), name](const IRModule& module, const PassContext& context) {
                     std::map<std::string, Any> changed;
                     for (const std::string& global : module.names()) {
                       ir::BaseFunc f = module.lookup(global);
                       if (!f->is_instance_of(variant_type_index)) continue;
                       ir::BaseFunc g = fn(f, module, context);
                       if (!g.defined())
                         LOOM_THROW(Error) << "pass '" << name << "' returned no function for @" << global;
                       if (!g.same_as(f)) changed[global] = g;
                     }
                     return module.with_functions(changed);
                   });
}

Pass sequential(std::vector<Pass> passes, std::string name) {
  PassInfo info;
  info.name = std::move(name);
  info.summary = "runs passes in order";
  auto node = make_node(std::move(info));
  node->is_sequence = true;
  for (Pass& p : passes) node->sequence.push_back(std::move(p));
  return Pass(node);
}

Pass pipeline(PassInfo info, std::vector<std::string> pass_names) {
  if (info.summary.empty()) info.summary = "a pipeline";
  info.summary += " (" + join(pass_names, ", ") + ")";
  auto node = make_node(std::move(info));
  node->is_sequence = true;
  node->sequence_names = std::move(pass_names);
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

namespace {
PassDeclaration declared_pass(const DeclaredPass& p, const std::string& owner) {
  return PassDeclaration{PassInfo::named(p.name)
                             .summary(p.summary)
                             .opt_level(p.opt_level)
                             .required(p.required)
                             .options(p.options)
                             .needs(p.needs)
                             .establishes(p.establishes)
                             .preserves(p.preserves),
                         owner, false, p.sequence};
}
}  // namespace

std::vector<PassDeclaration> PassRegistry::declarations() {
  std::map<std::string, PassDeclaration> out;
  for (const std::string& name : list()) {
    PassEntry e = *entry(name);
    std::vector<std::string> sequence = e.pass->sequence_names;
    for (const ObjectRef& p : e.pass->sequence) sequence.push_back(downcast<Pass>(p).info().name);
    out.emplace(name, PassDeclaration{e.pass.info(), e.owner, true, sequence});
  }
  for_each_declaring_plugin([&](const std::string& plugin, const PluginDeclarations& d) {
    for (const DeclaredPass& p : d.passes) out.emplace(p.name, declared_pass(p, plugin));
  });
  std::vector<PassDeclaration> list;
  for (auto& item : out) list.push_back(std::move(item.second));
  return list;
}

std::optional<PassDeclaration> PassRegistry::declaration(const std::string& name) {
  for (PassDeclaration& d : declarations())
    if (d.info.name == name) return std::move(d);
  return std::nullopt;
}

std::optional<ConfigEntry> ConfigRegistry::declaration(const std::string& name) {
  if (auto e = entry(name)) return e;
  std::optional<ConfigEntry> found;
  for_each_declaring_plugin([&](const std::string& plugin, const PluginDeclarations& d) {
    for (const DeclaredPass& p : d.passes) {
      for (const SchemaField& option : p.options) {
        if (!found && p.name + "." + option.name == name) {
          SchemaField key = option;
          key.name = name;
          found = ConfigEntry{name, key, plugin};
        }
      }
    }
    for (const SchemaField& field : d.config)
      if (!found && field.name == name) found = ConfigEntry{name, field, plugin};
  });
  return found;
}

std::vector<std::string> ConfigRegistry::declared_names() {
  std::vector<std::string> names = list();
  for_each_declaring_plugin([&](const std::string&, const PluginDeclarations& d) {
    for (const DeclaredPass& p : d.passes)
      for (const SchemaField& option : p.options) names.push_back(p.name + "." + option.name);
    for (const SchemaField& field : d.config) names.push_back(field.name);
  });
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

void ConfigRegistry::register_option(SchemaField field) { add_option(std::move(field), false); }
std::optional<ConfigEntry> ConfigRegistry::entry(const std::string& name) { return configs().entry(name); }
std::optional<ConfigEntry> ConfigRegistry::find(const std::string& name) { return configs().find(name); }
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
  if (std::string why = bounds_problem(entry->field, value); !why.empty()) {
    LOOM_THROW(TypeError) << "config option '" << key << "' " << why;
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
    std::snprintf(line, sizeof(line), "%-*s  %5d  %10.3f\n", static_cast<int>(width), r.pass.c_str(), r.calls,
                  r.total_ms);
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
  out << text::print_module(module);
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

void LogInstrument::before(const PassInfo&, const IRModule&) { starts_.push_back(std::chrono::steady_clock::now()); }

void LogInstrument::after(const PassInfo& info, const IRModule&) {
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - starts_.back()).count();
  starts_.pop_back();
  char line[512];
  std::snprintf(line, sizeof(line), "loom: %*spass %s  %.2f ms\n", static_cast<int>(2 * starts_.size()), "",
                info.name.c_str(), ms);
  std::fputs(line, stderr);
}

LogLevel log_level() {
  const char* env = std::getenv("LOOM_LOG");
  std::string level = env ? env : "";
  if (level.empty() || level == "warning") return LogLevel::kWarning;
  if (level == "info") return LogLevel::kInfo;
  LOOM_THROW(Error) << "LOOM_LOG='" << level << "' is not a log level" << did_you_mean(level, {"warning", "info"})
                    << " (levels: warning, the default; info, a line per pass)";
}

void WellFormedInstrument::after(const PassInfo& info, const IRModule& module) {
  std::vector<ir::Diagnostic> problems = graph::well_formed(module);
  if (problems.empty()) return;
  throw Error("pass '" + info.name + "' left the module ill-formed:" + ir::diagnostic_lines(problems));
}

}  // namespace loom::transform
