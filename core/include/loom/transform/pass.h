// Passes, the pass registry, PassContext and instruments (docs/passes.md).
// Every transformation is IRModule -> IRModule; the PassContext carries the
// C0 options (how to compile) and never enters the module.
#ifndef LOOM_TRANSFORM_PASS_H_
#define LOOM_TRANSFORM_PASS_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/object/schema.h"
#include "loom/support/builder.h"

namespace loom::transform {

using ir::IRModule;

// Declared once per pass; read by the registry, `loomc passes list`, the docs
// and the YAML validator.  The contract (needs, establishes, preserves,
// changes) names IR properties (loom/transform/property.h) and is checked
// by the pass manager (docs/passes.md, "Pass contracts").  Written with
// its builder, field by field:
//
//   PassInfo::named("FuseOps").summary("...").opt_level(1).changes({"graph"})
//       .needs({"types_inferred"}).establishes({"fused"})
struct PassInfo {
  std::string name;
  std::string summary;
  int opt_level = 0;
  std::vector<std::string> required = {};     // passes that must have run before it (Sequential runs them)
  std::vector<SchemaField> options = {};      // config keys "NAME.OPTION"
  std::vector<std::string> needs = {};        // properties that must hold before it runs
  std::vector<std::string> establishes = {};  // properties that hold after it runs
  std::vector<std::string> preserves = {};    // properties it keeps when it changes the module; "*": all
  // The IR levels whose functions it may change or add ("graph", "tir",
  // "ir" for extern functions); empty: any.  A property of another level
  // is kept without being listed in `preserves`.
  std::vector<std::string> changes = {};

  class Builder;
  static Builder named(std::string name);
};

class PassInfo::Builder : public FieldBuilder<PassInfo, PassInfo::Builder> {
 public:
  explicit Builder(std::string name) { value_.name = std::move(name); }
  Builder& summary(std::string text) { return set(&PassInfo::summary, std::move(text)); }
  Builder& opt_level(int level) { return set(&PassInfo::opt_level, level); }
  Builder& required(std::vector<std::string> passes) { return set(&PassInfo::required, std::move(passes)); }
  Builder& options(std::vector<SchemaField> fields) { return set(&PassInfo::options, std::move(fields)); }
  Builder& needs(std::vector<std::string> properties) { return set(&PassInfo::needs, std::move(properties)); }
  Builder& establishes(std::vector<std::string> properties) {
    return set(&PassInfo::establishes, std::move(properties));
  }
  Builder& preserves(std::vector<std::string> properties) { return set(&PassInfo::preserves, std::move(properties)); }
  Builder& changes(std::vector<std::string> levels) { return set(&PassInfo::changes, std::move(levels)); }
};

inline PassInfo::Builder PassInfo::named(std::string name) { return Builder(std::move(name)); }

class PassContext;

class Pass;

class PassNode : public Object {
 public:
  PassInfo info;
  std::function<IRModule(const IRModule&, const PassContext&)> body;  // a single pass
  // A Sequential instead runs these passes (or, for a pipeline, the passes
  // of these names, looked up when it runs) under one property tracker.
  bool is_sequence = false;
  std::vector<ObjectRef> sequence;  // of Pass
  std::vector<std::string> sequence_names;
  LOOM_OBJECT(PassNode, Object, "transform.Pass");
  static void reflect(ReflectionBuilder<PassNode>& r) { r.structural(StructuralKind::kUnique); }
};

class Pass : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Pass, ObjectRef, PassNode)
  const PassInfo& info() const { return get()->info; }
  // Runs the pass (with the context's instruments) under `context`, or
  // under PassContext::current(), after making sure its needs hold of
  // `module` (docs/passes.md, "Pass contracts").
  IRModule operator()(const IRModule& module) const;
  IRModule operator()(const IRModule& module, const PassContext& context) const;
};

Pass module_pass(PassInfo info, std::function<IRModule(const IRModule&, const PassContext&)> fn);

// Applies `fn` to every function whose node is a `Variant` (or derives from
// it); functions of other variants are left as they are.
using FunctionPassFn = std::function<ir::BaseFunc(const ir::BaseFunc&, const IRModule&, const PassContext&)>;
Pass function_pass(PassInfo info, uint32_t variant_type_index, FunctionPassFn fn);
template <class Variant>
Pass function_pass(PassInfo info, FunctionPassFn fn) {
  return function_pass(std::move(info), Variant::runtime_type_index(), std::move(fn));
}

// Runs `passes` in order: first the passes a pass requires that have not run
// yet in this sequence, then the pass unless it is disabled or above the
// opt level (a required pass always runs).  A pass listed twice runs twice.
// Each pass's contract is checked against the properties the sequence
// knows to hold (docs/passes.md, "Pass contracts").
Pass sequential(std::vector<Pass> passes, std::string name = "Sequential");

// `module` with every one of `properties` holding, for `needer` (named in
// errors): a property whose check fails is established by running the
// pass that establishes it (after that pass's own needs), whether or not
// the property is auto-established; a property without a check is taken
// to hold.  The names of the passes it ran, in order, are appended to
// `ran`.  The driver completes a module this way for what its codegens and
// the VM need, so a module built after any prefix of a pipeline runs
// (docs/passes.md, "Building at any stage").
IRModule establish(const IRModule& module, const std::vector<std::string>& properties, const std::string& needer,
                   const PassContext& context, std::vector<std::string>* ran = nullptr);

// A named Sequential whose passes are looked up by name when it runs, so
// the plugins providing them load only then (the `cpu`, `device` and `O0`
// pipelines).  The summary lists the passes.
Pass pipeline(PassInfo info, std::vector<std::string> pass_names);

// ---------------------------------------------------------------------------
// Registries
// ---------------------------------------------------------------------------
struct PassEntry {
  std::string name;
  Pass pass;
  std::string owner;
};

// A pass as the registry knows it, or as a discovered plugin that is not
// loaded declares it (its .loom_declarations): read without loading.
struct PassDeclaration {
  PassInfo info;
  std::string owner;
  bool loaded = false;
  std::vector<std::string> sequence;  // a pipeline's passes
};

class PassRegistry {
 public:
  // Every pass registered or declared by a discovered plugin, by name; no
  // plugin is loaded.
  static std::vector<PassDeclaration> declarations();
  static std::optional<PassDeclaration> declaration(const std::string& name);
  // Registers the pass and its options as config keys "NAME.OPTION".
  // Replacing a registered name needs allow_override (its options' keys
  // are replaced with it).
  static void register_pass(Pass pass, bool allow_override = false);
  static std::optional<PassEntry> entry(const std::string& name);  // no loading
  static Pass get(const std::string& name);                        // lazy ("pass:NAME"); LookupError with a suggestion
  static std::vector<std::string> list();
};

struct ConfigEntry {
  std::string name;
  SchemaField field;  // field.name == name
  std::string owner;
};

class ConfigRegistry {
 public:
  // A config key registered, or declared by a discovered plugin that is not
  // loaded (its passes' options, its config keys); no plugin is loaded.
  static std::optional<ConfigEntry> declaration(const std::string& name);
  static std::vector<std::string> declared_names();
  static void register_option(SchemaField field);
  static std::optional<ConfigEntry> entry(const std::string& name);  // no loading
  // Loads the plugin that provides "config:NAME" if needed.
  static std::optional<ConfigEntry> find(const std::string& name);
  static std::vector<std::string> list();
};

// ---------------------------------------------------------------------------
// Instruments
// ---------------------------------------------------------------------------
class PassInstrument {
 public:
  virtual ~PassInstrument() = default;
  virtual std::string name() const = 0;
  // False skips the pass.
  virtual bool should_run(const PassInfo& info, const IRModule& module) { return true; }
  virtual void before(const PassInfo& info, const IRModule& module) {}
  virtual void after(const PassInfo& info, const IRModule& module) {}
};

class TimingInstrument : public PassInstrument {
 public:
  std::string name() const override { return "timing"; }
  void before(const PassInfo& info, const IRModule& module) override;
  void after(const PassInfo& info, const IRModule& module) override;
  // "pass  calls  total ms" rows in order of first start (a pass's time
  // includes the passes it runs), and the total of the outermost passes.
  std::string report() const;
  struct Row {
    std::string pass;
    int calls = 0;
    double total_ms = 0;
  };
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
  std::vector<std::chrono::steady_clock::time_point> starts_;
  double outer_ms_ = 0;
};

// Writes NNN_PASS_before.loom / NNN_PASS_after.loom into a folder.
class DumpIRInstrument : public PassInstrument {
 public:
  explicit DumpIRInstrument(std::string folder);
  std::string name() const override { return "dump_ir"; }
  void before(const PassInfo& info, const IRModule& module) override;
  void after(const PassInfo& info, const IRModule& module) override;

 private:
  void write(const std::string& file, const IRModule& module) const;
  std::string folder_;
  int counter_ = 0;
  std::vector<int> open_;  // indices of passes entered and not left (passes nest)
};

// One line per pass as it ends, on stderr: "loom: pass NAME  T ms", indented
// by how deep it nests, so a long build shows its progress
// (`loom.build(verbose=True)`, LOOM_LOG=info; docs/passes.md, "Instruments").
class LogInstrument : public PassInstrument {
 public:
  std::string name() const override { return "log"; }
  void before(const PassInfo& info, const IRModule& module) override;
  void after(const PassInfo& info, const IRModule& module) override;

 private:
  std::vector<std::chrono::steady_clock::time_point> starts_;
};

// The level LOOM_LOG asks for: "warning" (the default, also when unset or
// empty) or "info" (a build logs each pass with a LogInstrument).  Anything
// else is an Error naming the value and the levels.
enum class LogLevel { kWarning, kInfo };
LogLevel log_level();

// After every pass: the module must be well formed, or an Error names the pass.
class WellFormedInstrument : public PassInstrument {
 public:
  std::string name() const override { return "well_formed"; }
  void after(const PassInfo& info, const IRModule& module) override;
};

// ---------------------------------------------------------------------------
// PassContext
// ---------------------------------------------------------------------------
class PassContext {
 public:
  // Check the module's well-formedness after every pass (as
  // WellFormedInstrument does).  On by default in debug builds and when the
  // environment sets LOOM_WELL_FORMED_CHECK=1 (the test suite does).
  static bool default_well_formed_check();
  bool check_well_formed = default_well_formed_check();

  int opt_level = 2;
  std::vector<std::string> disabled;
  std::vector<std::string> required;
  std::vector<std::shared_ptr<PassInstrument>> instruments;

  // Sets a config key: unknown keys (with a suggestion) and wrong types are
  // TypeErrors.
  void set_config(const std::string& key, Any value);
  // The value set, or the key's default; LookupError for an unknown key.
  Any get_config(const std::string& key) const;
  const std::map<std::string, Any>& config() const { return config_; }

  bool is_disabled(const std::string& pass) const;
  bool is_required(const std::string& pass) const;

  // The innermost context entered on this thread, or a default context.
  static const PassContext& current();
  // Enters a context for the lifetime of the scope.
  class Scope {
   public:
    explicit Scope(PassContext context);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    PassContext& context() { return *context_; }

   private:
    std::unique_ptr<PassContext> context_;
  };

 private:
  std::map<std::string, Any> config_;
};

}  // namespace loom::transform

#endif  // LOOM_TRANSFORM_PASS_H_
