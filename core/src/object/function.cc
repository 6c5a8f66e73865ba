#include "loom/object/function.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "loom/support/registration.h"
#include "loom/support/strings.h"

namespace loom {

Function::Function(FunctionNode::Body body, std::string name) {
  auto node = make_object<FunctionNode>();
  node->body = std::move(body);
  node->name = std::move(name);
  data_ = node;
}

Any Function::call(const Any* args, int32_t count) const {
  if (!defined()) LOOM_THROW(Error) << "call of an undefined function";
  return get()->body(args, count);
}

void throw_arity_error(const std::string& name, int expected, int got) {
  LOOM_THROW(TypeError) << "function '" << name << "' takes " << expected << " argument"
                        << (expected == 1 ? "" : "s") << ", got " << got;
}

void throw_argument_error(const std::string& name, int index, const std::exception& e) {
  LOOM_THROW(TypeError) << "argument " << index << " of function '" << name << "': " << e.what();
}

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, FunctionEntry> entries;
};
Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: plugins outlive statics
  return *instance;
}

void check_name(const std::string& name) {
  bool ok = !name.empty() && name.front() != '.' && name.back() != '.' &&
            std::all_of(name.begin(), name.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
            });
  if (!ok) {
    LOOM_THROW(Error) << "invalid function name '" << name
                      << "': use letters, digits, '_' and '.' (e.g. 'hello.greet')";
  }
}
}  // namespace

void FunctionRegistry::register_function(const std::string& name, Function function, std::string doc,
                                         bool allow_override) {
  check_name(name);
  if (!function.defined()) LOOM_THROW(Error) << "cannot register an undefined function as '" << name << "'";
  Registry& r = registry();
  std::optional<FunctionEntry> previous;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.entries.find(name);
    if (found != r.entries.end()) {
      if (!allow_override) {
        LOOM_THROW(Error) << "function '" << name << "' is already registered by " << found->second.owner
                          << "; a name is registered once (pass allow_override=true to replace it "
                             "deliberately)";
      }
      previous = found->second;
    }
    r.entries[name] = FunctionEntry{name, std::move(function), std::move(doc),
                                    RegistrationScope::current_owner()};
  }
  RegistrationScope::record_undo([name, previous]() {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    if (previous) {
      reg.entries[name] = *previous;
    } else {
      reg.entries.erase(name);
    }
  });
}

std::optional<FunctionEntry> FunctionRegistry::entry(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.entries.find(name);
  if (found == r.entries.end()) return std::nullopt;
  return found->second;
}

std::optional<Function> FunctionRegistry::find(const std::string& name) {
  if (auto e = entry(name)) return e->function;
  if (request_capability("function:" + name)) {
    if (auto e = entry(name)) return e->function;
  }
  return std::nullopt;
}

Function FunctionRegistry::get(const std::string& name) {
  if (auto f = find(name)) return *f;
  std::vector<std::string> candidates = list();
  for (auto& loadable : available_capabilities("function")) candidates.push_back(std::move(loadable));
  LOOM_THROW(LookupError) << "no function named '" << name << "' is registered or provided by a plugin"
                          << did_you_mean(name, candidates);
}

std::vector<std::string> FunctionRegistry::list() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.entries) names.push_back(entry.first);
  return names;
}

std::vector<std::string> FunctionRegistry::list_owned_by(const std::string& owner) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.entries)
    if (entry.second.owner == owner) names.push_back(entry.first);
  return names;
}

bool FunctionRegistry::remove(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.entries.erase(name) > 0;
}

}  // namespace loom
