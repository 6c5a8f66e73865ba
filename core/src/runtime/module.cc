// runtime::Module, module loaders and the module-tree blob.
//
// Blob (little endian): "LOOMMODT", u32 version (1), u32 module count, then
// per module, children before parents (the root last): u32 key length, the
// type key, u32 provider length, the provider (the plugin that registered
// the kind's loader, "core", or empty for "library"), u64 payload length,
// the payload, u32 import count, u32 import indices (each smaller than the
// module's own index).
#include "loom/runtime/module.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "loom/support/registry.h"
#include "loom/support/strings.h"

namespace loom::runtime {

std::string ModuleNode::save_to_binary() const {
  LOOM_THROW(Error) << "a module of type '" << type_key() << "' cannot be saved";
}

std::string ModuleNode::inspect_source(const std::string& format) const {
  LOOM_THROW(Error) << "a module of type '" << type_key() << "' has no source in format '" << format << "'";
}

std::optional<Function> Module::find_function(const std::string& name) const {
  if (auto f = (*this)->own_function(name)) return f;
  for (const Module& child : imports())
    if (auto f = child.find_function(name)) return f;
  return std::nullopt;
}

namespace {
void collect_names(const Module& m, std::vector<std::string>& out) {
  for (const auto& n : m->function_names()) out.push_back(n);
  for (const Module& child : m.imports()) collect_names(child, out);
}
}  // namespace

Function Module::get_function(const std::string& name) const {
  if (auto f = find_function(name)) return *f;
  std::vector<std::string> names;
  collect_names(*this, names);
  LOOM_THROW(LookupError) << "no function '" << name << "' in the " << (*this)->type_key() << " module or its imports"
                          << did_you_mean(name, names);
}

void Module::import_module(const Module& child) const {
  if (!child.defined()) LOOM_THROW(Error) << "import of an undefined module";
  node()->imports.push_back(child);
}

std::vector<Module> Module::imports() const {
  std::vector<Module> out;
  for (const ObjectRef& ref : get()->imports) out.push_back(downcast<Module>(ref));
  return out;
}

std::string module_tree(const Module& m, const std::string& source_format, int depth) {
  std::string indent(2 * depth, ' ');
  std::vector<std::string> names = m->function_names();
  std::string out =
      indent + m->type_key() + ": " + std::to_string(names.size()) + " function" + (names.size() == 1 ? "" : "s");
  if (!names.empty()) out += " (" + join(names, ", ") + ")";
  out += "\n";
  for (const std::string& line : m->describe()) out += indent + "  " + line + "\n";
  if (!source_format.empty()) {
    try {
      out += m->inspect_source(source_format);
    } catch (const std::exception& e) {
      out += indent + "  (" + error_message(e) + ")\n";
    }
  }
  for (const Module& child : m.imports()) out += module_tree(child, source_format, depth + 1);
  return out;
}

// ---- loaders ----------------------------------------------------------------------
namespace {
struct LoaderEntry {
  std::string name;
  Function loader;
  std::string owner;
};
NamedRegistry<LoaderEntry>& loaders() {
  static auto* instance = new NamedRegistry<LoaderEntry>("module loader", "runtime");
  return *instance;
}
}  // namespace

void ModuleLoaderRegistry::register_loader(const std::string& type_key, Function loader) {
  if (!loader.defined()) LOOM_THROW(Error) << "module loader for '" << type_key << "' is undefined";
  loaders().add(LoaderEntry{type_key, std::move(loader), ""});
}

std::optional<Function> ModuleLoaderRegistry::find(const std::string& type_key) {
  if (auto entry = loaders().find(type_key)) return entry->loader;
  return std::nullopt;
}

namespace {
[[noreturn]] void no_loader(const std::string& type_key, const std::string& provider) {
  bool plugin = !provider.empty() && provider != "core";
  LOOM_THROW(Error) << "no loader for modules of type '" << type_key << "'"
                    << (plugin ? " (made by plugin '" + provider + "')" : "")
                    << ": none is registered and no plugin in the search path provides 'runtime:" << type_key << "'"
                    << (plugin ? "; put the folder holding " + provider + "'s .so on LOOM_PLUGIN_PATH" : "");
}
}  // namespace

Function ModuleLoaderRegistry::get(const std::string& type_key) {
  if (auto loader = find(type_key)) return *loader;
  no_loader(type_key, "");
}

std::vector<std::string> ModuleLoaderRegistry::list() { return loaders().names(); }

std::optional<std::string> ModuleLoaderRegistry::owner(const std::string& type_key) {
  if (auto entry = loaders().entry(type_key)) return entry->owner;
  return std::nullopt;
}

// ---- tree blob --------------------------------------------------------------------
namespace {
constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'M', 'O', 'D', 'T'};
constexpr uint32_t kVersion = 1;
constexpr const char* kLibraryKey = "library";

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string take(uint64_t n, const char* what) {
    need(n, what);
    std::string out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  void need(uint64_t n, const char* what) {
    if (n > bytes_.size() - pos_) {
      LOOM_THROW(Error) << "module tree is truncated: " << what << " needs " << n << " bytes at offset " << pos_ << ", "
                        << (bytes_.size() - pos_) << " remain";
    }
  }
  const std::string& bytes_;
  size_t pos_ = 0;
};
}  // namespace

std::string save_module_tree(const Module& root) {
  std::vector<const ModuleNode*> order;
  std::unordered_map<const ModuleNode*, uint32_t> index;
  std::function<void(const Module&)> visit = [&](const Module& m) {
    if (index.count(m.get())) return;
    for (const Module& child : m.imports()) visit(child);
    index[m.get()] = static_cast<uint32_t>(order.size());
    order.push_back(m.get());
  };
  visit(root);
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, static_cast<uint32_t>(order.size()));
  for (const ModuleNode* m : order) {
    std::string key = kLibraryKey, provider, payload;
    if (!m->linked_code()) {
      key = m->type_key();
      provider = ModuleLoaderRegistry::owner(key).value_or("");
      payload = m->save_to_binary();
    }
    put<uint32_t>(out, static_cast<uint32_t>(key.size()));
    out += key;
    put<uint32_t>(out, static_cast<uint32_t>(provider.size()));
    out += provider;
    put<uint64_t>(out, payload.size());
    out += payload;
    put<uint32_t>(out, static_cast<uint32_t>(m->imports.size()));
    for (const ObjectRef& child : m->imports) put<uint32_t>(out, index.at(static_cast<const ModuleNode*>(child.get())));
  }
  return out;
}

namespace {
Module load_one(const std::string& key, const std::string& provider, const std::string& payload) {
  std::optional<Function> loader;
  try {
    loader = ModuleLoaderRegistry::find(key);
  } catch (const Error& e) {
    LOOM_THROW(Error) << "cannot load a module of type '" << key << "': " << e.what();
  }
  if (!loader) no_loader(key, provider);
  Module m = (*loader)(payload).cast<Module>();
  if (!m.defined()) LOOM_THROW(Error) << "the loader for '" << key << "' returned no module";
  if (m->type_key() != key) {
    LOOM_THROW(Error) << "the loader for '" << key << "' returned a module of type '" << m->type_key() << "'";
  }
  return m;
}
}  // namespace

Module load_module_tree(const std::string& bytes, const Module& library) {
  Reader in(bytes);
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    LOOM_THROW(Error) << "not a Loom module tree (bad magic)";
  }
  in.take(sizeof(kMagic), "the magic");
  uint32_t version = in.get<uint32_t>("the version");
  if (version != kVersion) {
    LOOM_THROW(Error) << "module tree format version " << version << " is not supported (this Loom reads " << kVersion
                      << ")";
  }
  uint32_t count = in.get<uint32_t>("the module count");
  if (count == 0) LOOM_THROW(Error) << "module tree has no modules";
  std::vector<Module> modules;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t key_size = in.get<uint32_t>("a type key length");
    std::string key = in.take(key_size, "a type key");
    uint32_t provider_size = in.get<uint32_t>("a provider length");
    std::string provider = in.take(provider_size, "a provider");
    uint64_t payload_size = in.get<uint64_t>("a payload length");
    std::string payload = in.take(payload_size, "a module payload");
    uint32_t n_imports = in.get<uint32_t>("an import count");
    std::vector<uint32_t> children;
    for (uint32_t k = 0; k < n_imports; ++k) {
      uint32_t child = in.get<uint32_t>("an import index");
      if (child >= i) {
        LOOM_THROW(Error) << "module tree: module " << i << " imports module " << child
                          << ", which is not stored before it";
      }
      children.push_back(child);
    }
    Module m;
    if (key == kLibraryKey) {
      if (!library.defined()) {
        LOOM_THROW(Error) << "module tree: module " << i << " is host code linked into a library, and this tree "
                          << "was not loaded from one (use load_module on the exported file)";
      }
      m = library;
    } else {
      m = load_one(key, provider, payload);
    }
    for (uint32_t child : children) {
      const ModuleNode* c = modules[child].get();
      // Host code importing host code: both records are the one library,
      // which already imports the child's own imports; never itself.
      if (c == m.get()) continue;
      const auto& existing = m->imports;
      if (std::none_of(existing.begin(), existing.end(), [&](const ObjectRef& r) { return r.get() == c; })) {
        m.import_module(modules[child]);
      }
    }
    modules.push_back(m);
  }
  if (!in.at_end()) LOOM_THROW(Error) << "module tree has trailing bytes after its last module";
  return modules.back();
}

}  // namespace loom::runtime
