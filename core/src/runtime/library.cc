// Host libraries (c_backend_api.h), export_library and load_module.
#include "loom/runtime/library.h"

#include <algorithm>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "loom/plugin/manifest.h"
#include "loom/runtime/c_backend_api.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/support/file.h"
#include "loom/support/strings.h"
#include "loom_embedded_headers.inc"

extern char** environ;

namespace loom::runtime {

LOOM_REGISTER_OBJECT(LibraryModuleNode);

namespace fs = std::filesystem;

// ---- the runtime side of c_backend_api.h -------------------------------------------
namespace {
thread_local std::string last_error;

void api_set_last_error(const char* message) { last_error = message ? message : "(no message)"; }

// Any -> LoomValue; throws TypeError for a value compiled code cannot take.
void to_value(const Any& a, LoomValue& v, int32_t& code) {
  switch (a.kind()) {
    case AnyKind::kNone:
      v.v_handle = nullptr;
      code = kLoomNull;
      return;
    case AnyKind::kBool:
      v.v_int64 = a.as_bool();
      code = kLoomInt;
      return;
    case AnyKind::kInt:
      v.v_int64 = a.as_int();
      code = kLoomInt;
      return;
    case AnyKind::kFloat:
      v.v_float64 = a.as_float();
      code = kLoomFloat;
      return;
    case AnyKind::kStr:
      v.v_str = a.as_string().c_str();
      code = kLoomStr;
      return;
    case AnyKind::kOpaquePtr:
      v.v_handle = a.as_opaque_ptr();
      code = kLoomHandle;
      return;
    case AnyKind::kObject:
      if (const auto* array = dynamic_cast<const NDArrayNode*>(a.object())) {
        v.v_handle = const_cast<DLTensor*>(&array->dl_tensor());
        code = kLoomDLTensor;
        return;
      }
      break;
    default:
      break;
  }
  LOOM_THROW(TypeError) << a.describe() << " cannot be passed to compiled code";
}

NDArray borrow(const DLTensor* t) {
  if (!t) LOOM_THROW(Error) << "a null DLTensor";
  std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
  if (t->strides) {
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && t->strides[i] != expected) LOOM_THROW(Error) << "a non-compact DLTensor";
      expected *= shape[i];
    }
  }
  return NDArray::wrap(static_cast<char*>(t->data) + t->byte_offset, shape,
                       DataType(static_cast<DataType::Code>(t->dtype.code), t->dtype.bits, t->dtype.lanes),
                       Device{t->device.device_type, t->device.device_id});
}

Any from_value(const LoomValue& v, int32_t code) {
  switch (code) {
    case kLoomNull:
      return Any();
    case kLoomInt:
      return Any(v.v_int64);
    case kLoomFloat:
      return Any(v.v_float64);
    case kLoomHandle:
      return Any(v.v_handle);
    case kLoomStr:
      return Any(std::string(v.v_str ? v.v_str : ""));
    case kLoomDLTensor:
      return Any(borrow(static_cast<const DLTensor*>(v.v_handle)));
    default:
      LOOM_THROW(TypeError) << "unknown LoomValue type code " << code;
  }
}

int32_t api_call_function(void* function, const LoomValue* args, const int32_t* codes, int32_t num_args, LoomValue* ret,
                          int32_t* ret_code) {
  try {
    // On the stack for the usual few arguments (a kernel launch: six sizes
    // and its buffers), so a call allocates nothing.
    constexpr int32_t kInline = 16;
    std::array<Any, kInline> inline_args;
    std::vector<Any> many;
    Any* packed = inline_args.data();
    if (num_args > kInline) {
      many.resize(num_args);
      packed = many.data();
    }
    for (int32_t i = 0; i < num_args; ++i) packed[i] = from_value(args[i], codes[i]);
    Any result = static_cast<const FunctionNode*>(function)->body(packed, num_args);
    if (result.kind() == AnyKind::kStr) {
      LOOM_THROW(TypeError) << "a function called from compiled code returned a str, which it cannot take";
    }
    to_value(result, *ret, *ret_code);
    if (*ret_code == kLoomDLTensor) LOOM_THROW(TypeError) << "a function called from compiled code returned a tensor";
    return 0;
  } catch (const std::exception& e) {
    api_set_last_error(e.what());
    return -1;
  }
}

int32_t api_parallel_for(int64_t begin, int64_t end, int32_t (*body)(int64_t, int64_t, void*), void* closure) {
  return loom_parallel_for(begin, end, body, closure);
}

void* api_alloc_workspace(int32_t device_type, int32_t device_id, uint64_t bytes) {
  try {
    Device d{device_type, device_id};
    return DeviceAPIRegistry::get(d).alloc_workspace(d, bytes);
  } catch (const std::exception& e) {
    api_set_last_error(e.what());
    return nullptr;
  }
}

int32_t api_free_workspace(int32_t device_type, int32_t device_id, void* ptr) {
  try {
    Device d{device_type, device_id};
    DeviceAPIRegistry::get(d).free_workspace(d, ptr);
    return 0;
  } catch (const std::exception& e) {
    api_set_last_error(e.what());
    return -1;
  }
}

int32_t api_get_function(void* module_ctx, const char* name, void** out);

const LoomHostApi kHostApi = {sizeof(LoomHostApi), LOOM_LIBRARY_ABI,  &api_get_function,    &api_call_function,
                              &api_set_last_error, &api_parallel_for, &api_alloc_workspace, &api_free_workspace};

// Paths of libraries open in this process: dlopen of the same path gives
// the same handle (and the same context slot), so a second open uses a
// private copy.
std::mutex open_paths_mutex;
std::map<std::string, int>& open_paths() {
  static auto* paths = new std::map<std::string, int>();
  return *paths;
}
}  // namespace

struct HostLibrary::Impl {
  std::string path;         // as the user named it
  std::string opened_path;  // canonical path of the file dlopen'ed
  boost::dll::shared_library library;
  std::shared_ptr<void> owner;  // adopted code: what keeps it mapped
  std::vector<std::pair<std::string, LoomBackendFunc>> functions;
  std::optional<std::string> blob;
  bool inspected = false;  // read from the file, not loaded: nothing to call
  bool from_file = false;  // opened: `functions` (names) and `blob` were read from the file first
  void** context_slot = nullptr;
  const ModuleNode* context = nullptr;
  mutable std::mutex mutex;
  std::map<std::string, Function> resolved;  // functions of imports called by name
};

namespace {
int32_t api_get_function(void* module_ctx, const char* name, void** out) {
  try {
    auto* impl = static_cast<HostLibrary::Impl*>(module_ctx);
    if (!impl || !impl->context) LOOM_THROW(Error) << "the library is not bound to a module";
    std::lock_guard<std::mutex> lock(impl->mutex);
    auto found = impl->resolved.find(name);
    if (found == impl->resolved.end()) {
      Module context(ObjectPtr<Object>(const_cast<ModuleNode*>(impl->context)));
      found = impl->resolved.emplace(name, context.get_function(name)).first;
    }
    *out = const_cast<FunctionNode*>(found->second.get());
    return 0;
  } catch (const std::exception& e) {
    api_set_last_error(e.what());
    return -1;
  }
}

// Sections of a library file (written by link_host_library), read from
// the file without loading it.
constexpr const char* kBlobSection = ".loom_blob";
constexpr const char* kNamesSection = ".loom_functions";

// Checks the ABI marker and reads the slots, the function table and the
// blob of a host library through `lookup`.
void read_symbols(HostLibrary::Impl& impl, const std::function<void*(const char*)>& lookup) {
  const std::string& path = impl.path;
  const auto* abi = static_cast<const uint32_t*>(lookup("__loom_library_abi"));
  if (!abi) {
    LOOM_THROW(Error) << "'" << path << "' is not a Loom host library (it has no __loom_library_abi symbol)";
  }
  if (*abi != LOOM_LIBRARY_ABI) {
    LOOM_THROW(Error) << "'" << path << "' uses host library ABI " << *abi << "; this Loom supports "
                      << LOOM_LIBRARY_ABI;
  }
  auto* api_slot = static_cast<const LoomHostApi**>(lookup("__loom_host_api"));
  const auto* api_size = static_cast<const uint32_t*>(lookup("__loom_host_api_size"));
  impl.context_slot = static_cast<void**>(lookup("__loom_module_ctx"));
  const auto* table = static_cast<const char*>(lookup("__loom_function_table"));
  if (!api_slot || !api_size || !impl.context_slot || !table) {
    LOOM_THROW(Error) << "'" << path << "' is not a complete Loom host library (it needs __loom_host_api, "
                      << "__loom_host_api_size, __loom_module_ctx and __loom_function_table)";
  }
  // The library's code reads the fields of the host API it was compiled
  // for; this runtime must provide all of them.
  if (*api_size > sizeof(LoomHostApi)) {
    LOOM_THROW(Error) << "'" << path << "' was compiled for a host API of " << *api_size << " bytes; this runtime "
                      << "provides " << sizeof(LoomHostApi) << " (use a Loom at least as new as the one that built it)";
  }
  // Every entry has the size of the first; the fields this runtime reads
  // must be there.
  uint32_t entry_size = reinterpret_cast<const LoomFunctionEntry*>(table)->struct_size;
  if (entry_size < offsetof(LoomFunctionEntry, function) + sizeof(LoomBackendFunc)) {
    LOOM_THROW(Error) << "'" << path << "' has function table entries of " << entry_size << " bytes; this runtime "
                      << "reads " << sizeof(LoomFunctionEntry);
  }
  *api_slot = &kHostApi;
  *impl.context_slot = &impl;
  if (impl.from_file) {
    // The table holds the functions the file lists, in order, and ends
    // there: never read past the last entry the file promises.
    size_t count = impl.functions.size();
    for (size_t i = 0; i <= count; ++i) {
      const auto* e = reinterpret_cast<const LoomFunctionEntry*>(table + i * entry_size);
      bool end = i == count;
      if (end != !e->name || (!end && impl.functions[i].first != e->name)) {
        LOOM_THROW(Error) << "'" << path << "' is corrupt: its function table does not match the " << count
                          << " function names of its " << kNamesSection << " section";
      }
      if (!end) impl.functions[i].second = e->function;
    }
  } else {
    for (const char* at = table;; at += entry_size) {
      const auto* e = reinterpret_cast<const LoomFunctionEntry*>(at);
      if (!e->name) break;
      impl.functions.emplace_back(e->name, e->function);
    }
  }
  const auto* blob = static_cast<const char*>(lookup("__loom_module_blob"));
  const auto* blob_size = static_cast<const uint64_t*>(lookup("__loom_module_blob_size"));
  if (impl.blob) {  // read from the file: the size the code was linked with must agree
    if (!blob_size || *blob_size != impl.blob->size()) {
      LOOM_THROW(Error) << "'" << path << "' is corrupt: its module blob has " << impl.blob->size()
                        << " bytes in the file, and the library says "
                        << (blob_size ? std::to_string(*blob_size) : std::string("none"));
    }
  } else if (impl.from_file && blob) {
    LOOM_THROW(Error) << "'" << path << "' is corrupt: it has a module blob outside its " << kBlobSection << " section";
  } else if (blob && blob_size) {
    impl.blob = std::string(blob, *blob_size);
  }
}

// Validates `path` as a shared object for this machine whose every loaded
// byte is in the file, and reads its Loom sections into `impl`.
void read_library_file(HostLibrary::Impl& impl, const std::string& path, bool need_names) {
  check_regular_file(path);
  std::map<std::string, std::string> sections;
  try {
    sections = read_elf_sections(path, {kBlobSection, kNamesSection}, kMaxFileBytes, "Loom library");
  } catch (const PluginError& e) {
    LOOM_THROW(Error) << "cannot open library '" << impl.path << "': " << e.reason();
  }
  auto blob = sections.find(kBlobSection);
  if (blob != sections.end()) impl.blob = std::move(blob->second);
  auto names = sections.find(kNamesSection);
  if (names == sections.end()) {
    if (need_names) {
      LOOM_THROW(Error) << "'" << impl.path << "' is not a Loom host library (it has no " << kNamesSection
                        << " section: it was not written by export_library, or by an older Loom)";
    }
    return;
  }
  std::string_view rest = names->second;
  while (!rest.empty()) {
    size_t end = rest.find('\0');
    std::string_view name = rest.substr(0, end);
    if (!name.empty()) impl.functions.emplace_back(std::string(name), nullptr);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
}
}  // namespace

HostLibrary::HostLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HostLibrary::~HostLibrary() {
  if (impl_->opened_path.empty()) return;  // adopted, not opened
  std::lock_guard<std::mutex> lock(open_paths_mutex);
  if (--open_paths()[impl_->opened_path] == 0) open_paths().erase(impl_->opened_path);
}

std::shared_ptr<HostLibrary> HostLibrary::open(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec) LOOM_THROW(Error) << "cannot open library '" << path << "': " << ec.message();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  read_library_file(*impl, canonical.string(), true);
  impl->from_file = true;
  std::lock_guard<std::mutex> lock(open_paths_mutex);
  fs::path to_open = canonical;
  std::optional<fs::path> private_dir;
  if (open_paths().count(canonical.string())) {  // already open: use a private copy
    std::string pattern = (fs::temp_directory_path() / "loom-lib-XXXXXX").string();
    if (!mkdtemp(pattern.data())) LOOM_THROW(Error) << "cannot create a temporary folder: " << std::strerror(errno);
    private_dir = pattern;
    to_open = *private_dir / canonical.filename();
    fs::copy_file(canonical, to_open, ec);
    if (ec) LOOM_THROW(Error) << "cannot copy library '" << path << "': " << ec.message();
  }
  try {
    impl->library.load(to_open.string(), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    if (private_dir) fs::remove_all(*private_dir, ec);
    LOOM_THROW(Error) << "cannot open library '" << path << "': " << e.what();
  }
  if (private_dir) fs::remove_all(*private_dir, ec);  // the mapping stays valid
  auto& library = impl->library;
  read_symbols(*impl, [&library](const char* name) -> void* {
    return library.has(name) ? static_cast<void*>(&library.get<char>(name)) : nullptr;
  });
  impl->opened_path = canonical.string();
  ++open_paths()[impl->opened_path];
  return std::shared_ptr<HostLibrary>(new HostLibrary(std::move(impl)));
}

std::shared_ptr<HostLibrary> HostLibrary::inspect(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->inspected = true;
  read_library_file(*impl, path, true);
  return std::shared_ptr<HostLibrary>(new HostLibrary(std::move(impl)));
}

std::shared_ptr<HostLibrary> HostLibrary::adopt(const std::string& name,
                                                const std::function<void*(const char*)>& lookup,
                                                std::shared_ptr<void> owner) {
  auto impl = std::make_unique<Impl>();
  impl->path = name;
  impl->owner = std::move(owner);
  read_symbols(*impl, lookup);
  return std::shared_ptr<HostLibrary>(new HostLibrary(std::move(impl)));
}

void HostLibrary::bind(const ModuleNode* context) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->context = context;
  impl_->resolved.clear();
}

const std::string& HostLibrary::path() const { return impl_->path; }

std::vector<std::string> HostLibrary::function_names() const {
  std::vector<std::string> out;
  for (const auto& f : impl_->functions) out.push_back(f.first);
  return out;
}

std::optional<std::string> HostLibrary::blob() const { return impl_->blob; }

std::optional<Function> HostLibrary::function(const std::string& name, const ObjectRef& keep_alive) const {
  LoomBackendFunc fn = nullptr;
  bool found = false;
  for (const auto& f : impl_->functions)
    if (f.first == name) found = true, fn = f.second;
  if (!found) return std::nullopt;
  if (impl_->inspected) {
    LOOM_THROW(Error) << "'" << impl_->path << "' was inspected, not loaded: its function '" << name
                      << "' cannot run (load it with load_module)";
  }
  return Function(
      [fn, name, keep_alive](const Any* args, int32_t count) -> Any {
        constexpr int kInline = 8;
        LoomValue inline_values[kInline];
        int32_t inline_codes[kInline];
        std::vector<LoomValue> heap_values;
        std::vector<int32_t> heap_codes;
        LoomValue* values = inline_values;
        int32_t* codes = inline_codes;
        if (count > kInline) {
          heap_values.resize(count);
          heap_codes.resize(count);
          values = heap_values.data();
          codes = heap_codes.data();
        }
        for (int32_t i = 0; i < count; ++i) {
          try {
            to_value(args[i], values[i], codes[i]);
          } catch (const Error& e) {
            LOOM_THROW(TypeError) << name << ": argument " << i << ": " << e.what();
          }
        }
        LoomValue ret{};
        int32_t ret_code = kLoomNull;
        if (fn(values, codes, count, &ret, &ret_code, nullptr) != 0) {
          LOOM_THROW(Error) << name << ": " << (last_error.empty() ? "failed without a message" : last_error);
        }
        if (ret_code == kLoomDLTensor) LOOM_THROW(TypeError) << name << " returned a tensor (use destination passing)";
        return from_value(ret, ret_code);
      },
      name);
}

// ---- host code modules ------------------------------------------------------------
std::vector<std::string> HostCodeModuleNode::function_names() const {
  std::vector<std::string> out;
  for (const auto& f : functions) out.push_back(f.first);
  return out;
}

std::optional<Function> HostCodeModuleNode::own_function(const std::string& name) const {
  bool mine = std::any_of(functions.begin(), functions.end(), [&](const auto& f) { return f.first == name; });
  if (!mine) return std::nullopt;
  return library->function(name, ObjectRef(ObjectPtr<Object>(const_cast<HostCodeModuleNode*>(this))));
}

// ---- the library module -----------------------------------------------------------
std::optional<Function> LibraryModuleNode::own_function(const std::string& name) const {
  return library->function(name, ObjectRef(ObjectPtr<Object>(const_cast<LibraryModuleNode*>(this))));
}

std::vector<std::string> LibraryModuleNode::function_names() const { return library->function_names(); }

std::string LibraryModuleNode::save_to_binary() const {
  LOOM_THROW(Error) << "the library module of '" << library->path()
                    << "' holds linked machine code; it cannot be serialized or exported again";
}

// ---- linking ----------------------------------------------------------------------
namespace {
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "loom-link-XXXXXX").string();
    if (!mkdtemp(pattern.data())) LOOM_THROW(Error) << "cannot create a temporary folder: " << std::strerror(errno);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) LOOM_THROW(Error) << "cannot write '" << path.string() << "'";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv, output to `log`; the exit status (or -1 when it did not start).
int run(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The table, ABI marker and runtime slots of c_backend_api.h.
std::string table_source(const std::vector<std::pair<std::string, std::string>>& functions) {
  std::ostringstream c;
  c << "/* Generated by Loom: the table, ABI marker and runtime slots of a host library. */\n"
    << "#include \"loom/runtime/c_backend_api.h\"\n";
  std::set<std::string> declared;
  for (const auto& f : functions)
    if (declared.insert(f.second).second)
      c << "int32_t " << f.second << "(const LoomValue*, const int32_t*, int32_t, LoomValue*, int32_t*, void*);\n";
  c << "const uint32_t __loom_library_abi = LOOM_LIBRARY_ABI;\n"
    << "const uint32_t __loom_host_api_size = sizeof(LoomHostApi);\n"
    << "const LoomHostApi* __loom_host_api = 0;\n"
    << "void* __loom_module_ctx = 0;\n"
    << "const LoomFunctionEntry __loom_function_table[] = {\n";
  for (const auto& f : functions)
    c << "  {sizeof(LoomFunctionEntry), " << c_string_literal(f.first) << ", " << f.second << "},\n";
  c << "  {sizeof(LoomFunctionEntry), 0, 0}};\n";
  // The names again, in a section of their own with no relocations, so
  // that inspect_library reads them from the file without loading it.
  std::string names;
  for (const auto& f : functions) names += f.first + '\0';
  c << "__attribute__((section(\"" << kNamesSection
    << "\"), used)) static const char loom_function_names[] = " << c_string_literal(names) << ";\n";
  return c.str();
}

// The blob, included byte for byte by the assembler.
std::string blob_assembly(const fs::path& blob_file, size_t size) {
  std::string quoted;
  for (char ch : blob_file.string()) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  std::ostringstream s;
  // The blob alone in its section (which keeps its name in the library:
  // no .rodata prefix), so the section's size is the blob's.
  s << "  .section " << kBlobSection << ",\"a\"\n"
    << "  .globl __loom_module_blob\n"
    << "  .balign 64\n"
    << "__loom_module_blob:\n"
    << "  .incbin \"" << quoted << "\"\n"
    << "  .section .rodata\n"
    << "  .globl __loom_module_blob_size\n"
    << "  .balign 8\n"
    << "__loom_module_blob_size:\n"
    << "  .quad " << size << "\n"
    << "  .section .note.GNU-stack,\"\",%progbits\n";
  return s.str();
}

// The system C compiler: $CC, else `cc`.
std::string c_compiler() {
  const char* cc = std::getenv("CC");
  return cc && *cc ? cc : "cc";
}

// The host ABI's headers, as the runtime was compiled with them, under
// DIR/include for every generated C file (#include
// "loom/runtime/c_backend_api.h"); the -I flag that finds them.
std::string write_abi_headers(const fs::path& dir) {
  write_file(dir / "include" / "loom" / "runtime" / "c_backend_api.h", kCBackendApiHeader);
  write_file(dir / "include" / "dlpack" / "dlpack.h", kDLPackHeader);
  return "-I" + (dir / "include").string();
}
}  // namespace

std::string compile_c_object(const std::string& name, const std::string& source,
                             const std::vector<std::string>& flags) {
  TempDir dir;
  fs::path file = dir.path() / fs::path(name).filename();
  write_file(file, source);
  fs::path object = dir.path() / "out.o";
  std::vector<std::string> argv{c_compiler(), "-c", "-fPIC"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(write_abi_headers(dir.path()));
  for (const std::string& a : {std::string("-o"), object.string(), file.string()}) argv.push_back(a);
  fs::path log = dir.path() / "compile.log";
  int status = run(argv, log);
  if (status < 0) LOOM_THROW(Error) << "cannot run the C compiler '" << argv[0] << "' (set CC to one that exists)";
  if (status != 0) {
    LOOM_THROW(Error) << "'" << argv[0] << "' failed (exit " << status << ") compiling " << name << ":\n"
                      << read_file(log);
  }
  return read_file(object);
}

void link_host_library(const std::vector<LinkedCode>& code, const std::string& blob, const std::string& output) {
  TempDir dir;
  std::vector<std::string> argv;
  argv.push_back(c_compiler());
  for (const char* flag : {"-shared", "-fPIC", "-O2", "-Wl,--no-undefined", "-o"}) argv.push_back(flag);
  fs::path out = fs::absolute(output);
  fs::path partial = out.parent_path() / ("." + out.filename().string() + ".partial");
  argv.push_back(partial.string());

  std::vector<std::pair<std::string, std::string>> functions;
  std::map<std::string, size_t> seen;
  for (size_t m = 0; m < code.size(); ++m) {
    for (const auto& [name, contents] : code[m].files) {
      fs::path file = dir.path() / ("m" + std::to_string(m) + "_" + fs::path(name).filename().string());
      write_file(file, contents);
      argv.push_back(file.string());
    }
    for (const auto& [name, symbol_name] : code[m].functions) {
      if (!is_c_identifier(symbol_name)) {
        LOOM_THROW(Error) << "export: function '" << name << "' has the symbol '" << symbol_name
                          << "', which is not a C identifier";
      }
      if (!seen.emplace(name, m).second) {
        LOOM_THROW(Error) << "export: two modules of the tree define host function '" << name << "'";
      }
      functions.emplace_back(name, symbol_name);
    }
  }
  argv.push_back(write_abi_headers(dir.path()));
  write_file(dir.path() / "loom_table.c", table_source(functions));
  argv.push_back((dir.path() / "loom_table.c").string());
  if (!blob.empty()) {
    write_file(dir.path() / "loom_blob.bin", blob);
    write_file(dir.path() / "loom_blob.s", blob_assembly(dir.path() / "loom_blob.bin", blob.size()));
    argv.push_back((dir.path() / "loom_blob.s").string());
  }
  argv.push_back("-lm");
  fs::path log = dir.path() / "link.log";
  int status = run(argv, log);
  if (status != 0) {
    std::error_code ec;
    fs::remove(partial, ec);
    if (status < 0) {
      LOOM_THROW(Error) << "export: cannot run the C compiler '" << argv[0] << "' (set CC to one that exists)";
    }
    LOOM_THROW(Error) << "export: '" << argv[0] << "' failed (exit " << status << ") linking '" << output << "':\n"
                      << read_file(log);
  }
  std::error_code ec;
  fs::rename(partial, out, ec);
  if (ec) LOOM_THROW(Error) << "export: cannot write '" << output << "': " << ec.message();
}

std::shared_ptr<HostLibrary> build_host_library(const LinkedCode& code, const ModuleNode* context) {
  TempDir dir;
  fs::path file = dir.path() / "host.so";
  link_host_library({code}, "", file.string());
  auto library = HostLibrary::open(file.string());
  library->bind(context);
  return library;  // the mapping outlives the file
}

void export_library(const Module& root, const std::string& path) {
  if (!root.defined()) LOOM_THROW(Error) << "export_library of an undefined module";
  std::vector<LinkedCode> code;
  std::unordered_set<const ModuleNode*> visited;
  std::function<void(const Module&)> collect = [&](const Module& m) {
    if (!visited.insert(m.get()).second) return;
    if (auto linked = m->linked_code()) code.push_back(std::move(*linked));
    for (const Module& child : m.imports()) collect(child);
  };
  collect(root);
  link_host_library(code, save_module_tree(root), path);
}

namespace {
Module library_module(const std::shared_ptr<HostLibrary>& library, const char* what) {
  auto node = make_object<LibraryModuleNode>();
  node->library = library;
  library->bind(node.get());
  Module module(node);
  auto blob = library->blob();
  if (!blob) return module;
  try {
    return load_module_tree(*blob, module);
  } catch (const Error& e) {
    LOOM_THROW(Error) << what << " '" << library->path() << "': " << e.what();
  }
}
}  // namespace

Module load_module(const std::string& path) {
  if (!fs::exists(path)) LOOM_THROW(Error) << "load_module: no file '" << path << "'";
  return library_module(HostLibrary::open(path), "load_module");
}

Module inspect_library(const std::string& path) {
  if (!fs::exists(path)) LOOM_THROW(Error) << "inspect: no file '" << path << "'";
  return library_module(HostLibrary::inspect(path), "inspect");
}

}  // namespace loom::runtime
