// The host ABI has one source, loom/runtime/c_backend_api.h (docs/runtime.md,
// "Host libraries"): a library exported with code from every producer --
// the llvm codegen (offsets from offsetof), export_library's table and the
// asm plugin's C wrappers (which #include the header) -- is opened here
// directly and run against a host API made in this test from the same
// header, with every function slot a recorder of its own.  A producer that
// read a field at another offset would call the wrong recorder (or a
// tensor field at the wrong place would give wrong numbers), and the test
// fails.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/runtime/c_backend_api.h"
#include "loom/runtime/library.h"
#include "loom/target/target.h"

namespace loom {
namespace {
// What the generated code called, slot by slot.
struct Calls {
  int get_function = 0, call_function = 0, set_last_error = 0, parallel_for = 0, alloc = 0, free = 0;
  std::string last_error;
};
Calls calls;

int32_t record_get_function(void*, const char*, void**) { return ++calls.get_function, -1; }
int32_t record_call_function(void*, const LoomValue*, const int32_t*, int32_t, LoomValue*, int32_t*) {
  return ++calls.call_function, -1;
}
void record_set_last_error(const char* message) {
  ++calls.set_last_error;
  calls.last_error = message;
}
int32_t record_parallel_for(int64_t begin, int64_t end, int32_t (*body)(int64_t, int64_t, void*), void* closure) {
  ++calls.parallel_for;
  return body(begin, end, closure);
}
void* record_alloc(int32_t, int32_t, uint64_t bytes) { return ++calls.alloc, std::malloc(bytes); }
int32_t record_free(int32_t, int32_t, void* p) { return ++calls.free, std::free(p), 0; }

const LoomHostApi kCanary = {sizeof(LoomHostApi),   LOOM_LIBRARY_ABI,    record_get_function, record_call_function,
                             record_set_last_error, record_parallel_for, record_alloc,        record_free};

bool host_is_x86_64() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

// y = x * 2 in a parallel loop (llvm); y = x copied by scalar x86-64
// assembly (asm, its C wrapper checks the tensors).
std::string model() {
  std::string text = R"(
@twice = prim_func(%X: Buffer[(%n: int64), float32], %Y: Buffer[(%n), float32]) {
  for %i: int64 from 0 extent %n parallel {
    %Y[%i] = %X[%i] * 2.0;
  }
}
)";
  if (host_is_x86_64()) {
    text +=
        "\n@copy = extern \"asm\" dps fn(Tensor[(%m: int64), float32], Tensor[(%m), float32]) -> none attrs "
        "{isa: \"x86_64\"} payload \"  .globl copy\\ncopy:\\n  xorl %eax, %eax\\n1:\\n  cmpq %rdx, %rax\\n"
        "  jge 2f\\n  movl (%rdi,%rax,4), %ecx\\n  movl %ecx, (%rsi,%rax,4)\\n  incq %rax\\n  jmp 1b\\n2:\\n"
        "  ret\\n\"\n";
  }
  return text;
}

struct Tensor {
  std::vector<float> data;
  int64_t shape[1];
  DLTensor dl;
  explicit Tensor(std::vector<float> values) : data(std::move(values)) {
    shape[0] = static_cast<int64_t>(data.size());
    dl = DLTensor{data.data(), DLDevice{kDLCPU, 0}, 1, DLDataType{kDLFloat, 32, 1}, shape, nullptr, 0};
  }
};

int32_t call(LoomBackendFunc f, std::vector<DLTensor*> tensors) {
  std::vector<LoomValue> args(tensors.size());
  std::vector<int32_t> codes(tensors.size(), kLoomDLTensor);
  for (size_t k = 0; k < tensors.size(); ++k) args[k].v_handle = tensors[k];
  LoomValue ret;
  int32_t ret_code = kLoomNull;
  return f(args.data(), codes.data(), static_cast<int32_t>(args.size()), &ret, &ret_code, nullptr);
}
}  // namespace

TEST(HostAbi, EveryProducerReadsTheLayoutOfTheOneHeader) {
  runtime::Module built = driver::build(text::parse_module(model(), "abi.loom"), target::Target("llvm"));
  std::string path =
      (std::filesystem::temp_directory_path() / ("loom_host_abi_" + std::to_string(getpid()) + ".so")).string();
  runtime::export_library(built, path);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_EQ(*static_cast<const uint32_t*>(dlsym(handle, "__loom_library_abi")), LOOM_LIBRARY_ABI);
  EXPECT_EQ(*static_cast<const uint32_t*>(dlsym(handle, "__loom_host_api_size")), sizeof(LoomHostApi));
  *static_cast<const LoomHostApi**>(dlsym(handle, "__loom_host_api")) = &kCanary;
  // The table: entries of the header's size, ending with a null name.
  const auto* table = static_cast<const LoomFunctionEntry*>(dlsym(handle, "__loom_function_table"));
  ASSERT_NE(table, nullptr);
  std::map<std::string, LoomBackendFunc> functions;
  for (const LoomFunctionEntry* e = table; e->name; ++e) {
    EXPECT_EQ(e->struct_size, sizeof(LoomFunctionEntry)) << e->name;
    functions[e->name] = e->function;
  }
  ASSERT_TRUE(functions.count("twice"));

  // llvm: the parallel loop goes through parallel_for, and only through it.
  calls = Calls();
  Tensor x({1, -2, 3.5f, 4, 5, 6, 7, 8}), y(std::vector<float>(8, 0));
  ASSERT_EQ(call(functions["twice"], {&x.dl, &y.dl}), 0) << calls.last_error;
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(y.data[k], 2 * x.data[k]) << k;
  EXPECT_EQ(calls.parallel_for, 1);
  EXPECT_EQ(calls.set_last_error + calls.get_function + calls.call_function + calls.alloc + calls.free, 0);
  // A wrong call reports through set_last_error.
  calls = Calls();
  EXPECT_NE(call(functions["twice"], {&x.dl}), 0);
  EXPECT_EQ(calls.set_last_error, 1);
  EXPECT_EQ(calls.last_error, "takes 2 tensors (or 2 values), got 1");

  if (host_is_x86_64()) {
    // asm: the C wrapper reads the tensors through the header's DLTensor
    // and reports through the header's LoomHostApi.
    ASSERT_TRUE(functions.count("copy"));
    calls = Calls();
    Tensor a({0.5f, -1, 2}), b(std::vector<float>(3, 0));
    ASSERT_EQ(call(functions["copy"], {&a.dl, &b.dl}), 0) << calls.last_error;
    EXPECT_EQ(b.data, a.data);
    Tensor wrong({1, 2});
    wrong.dl.dtype = DLDataType{kDLInt, 32, 1};
    EXPECT_NE(call(functions["copy"], {&wrong.dl, &b.dl}), 0);
    EXPECT_EQ(calls.set_last_error, 1);
    EXPECT_EQ(calls.last_error, "argument 0 has dtype code 0 bits 32 lanes 1, expected float32");
    EXPECT_EQ(calls.parallel_for + calls.get_function + calls.call_function + calls.alloc + calls.free, 0);
  }
  dlclose(handle);
  std::filesystem::remove(path);
}

TEST(HostAbi, ALibraryThatExpectsMoreOfTheHostApiOrOtherEntriesIsRefused) {
  // The symbols of a library, as a JIT would hand them over (adopt).
  uint32_t abi = LOOM_LIBRARY_ABI, api_size = sizeof(LoomHostApi);
  const LoomHostApi* api = nullptr;
  void* context = nullptr;
  LoomFunctionEntry table[] = {{sizeof(LoomFunctionEntry), nullptr, nullptr}};
  auto lookup = [&](const char* symbol) -> void* {
    std::string s = symbol;
    if (s == "__loom_library_abi") return &abi;
    if (s == "__loom_host_api_size") return &api_size;
    if (s == "__loom_host_api") return &api;
    if (s == "__loom_module_ctx") return &context;
    if (s == "__loom_function_table") return table;
    return nullptr;
  };
  auto open = [&] {
    try {
      runtime::HostLibrary::adopt("lib.so", lookup, nullptr);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(open(), "");
  ASSERT_NE(api, nullptr);  // the runtime filled the slot with its host API
  EXPECT_EQ(api->struct_size, sizeof(LoomHostApi));
  EXPECT_EQ(api->version, LOOM_LIBRARY_ABI);
  api_size = sizeof(LoomHostApi) + 8;  // compiled for a newer header
  EXPECT_EQ(open(), "'lib.so' was compiled for a host API of " + std::to_string(api_size) +
                        " bytes; this runtime provides " + std::to_string(sizeof(LoomHostApi)) +
                        " (use a Loom at least as new as the one that built it)");
  api_size = sizeof(LoomHostApi);
  table[0].struct_size = 8;
  EXPECT_EQ(open(), "'lib.so' has function table entries of 8 bytes; this runtime reads " +
                        std::to_string(sizeof(LoomFunctionEntry)));
  table[0].struct_size = sizeof(LoomFunctionEntry);
  abi = 1;
  EXPECT_EQ(open(), "'lib.so' uses host library ABI 1; this Loom supports " + std::to_string(LOOM_LIBRARY_ABI));
}

}  // namespace loom
