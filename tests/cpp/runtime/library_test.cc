// Host libraries, export_library and load_module, with module kinds from
// two fixture plugins: test_chost (host code from C source, plugin
// fx_chost) and test_scale (a serialized kind, plugin fx_scale).
#include "loom/runtime/library.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "loom/plugin/manager.h"
#include "loom/runtime/ndarray.h"
#include "test_util.h"

namespace loom::runtime {
using test::error_of;

namespace {
const std::string kChostDir = std::string(LOOM_FIXTURE_DIR) + "/chost";
const std::string kScaleDir = std::string(LOOM_FIXTURE_DIR) + "/scale";

// run(x, y): y = twice(x) + 1 through the imported function "twice", in
// chunks on the runtime's thread pool; returns the element count.
// fail(): calls an import that does not exist.
const std::string kHostSource = R"(
#include <dlpack/dlpack.h>
#include ")" + std::string(LOOM_SOURCE_DIR) +
                                R"(/core/include/loom/runtime/c_backend_api.h"
extern const LoomHostApi* __loom_host_api;
extern void* __loom_module_ctx;

static int32_t add_one(int64_t begin, int64_t end, void* data) {
  float* y = (float*)data;
  for (int64_t i = begin; i < end; ++i) y[i] += 1.0f;
  return 0;
}

int32_t host_run(const LoomValue* args, const int32_t* codes, int32_t n, LoomValue* ret, int32_t* ret_code,
                 void* resource) {
  if (n != 2 || codes[0] != kLoomDLTensor || codes[1] != kLoomDLTensor) {
    __loom_host_api->set_last_error("run expects two tensors");
    return -1;
  }
  void* twice;
  if (__loom_host_api->get_function(__loom_module_ctx, "twice", &twice) != 0) return -1;
  LoomValue r;
  int32_t rc;
  if (__loom_host_api->call_function(twice, args, codes, 2, &r, &rc) != 0) return -1;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t count = 1;
  for (int i = 0; i < y->ndim; ++i) count *= y->shape[i];
  if (__loom_host_api->parallel_for(0, count, add_one, (char*)y->data + y->byte_offset) != 0) return -1;
  ret->v_int64 = count;
  *ret_code = kLoomInt;
  return 0;
}

int32_t host_fail(const LoomValue* args, const int32_t* codes, int32_t n, LoomValue* ret, int32_t* ret_code,
                  void* resource) {
  void* f;
  return __loom_host_api->get_function(__loom_module_ctx, "thrice", &f);
}
)";

void load_fixture_plugins() {
  static const bool loaded = [] {
    PluginManager::global().load_path(kChostDir + "/loom_fx_chost.so");
    PluginManager::global().load_path(kScaleDir + "/loom_fx_scale.so");
    return true;
  }();
  (void)loaded;
}

Module host_module(const std::string& source = kHostSource) {
  load_fixture_plugins();
  return FunctionRegistry::get("test_chost.compile")(source, "run=host_run,fail=host_fail").cast<Module>();
}

Module scale_module(const std::string& spec) {
  load_fixture_plugins();
  return FunctionRegistry::get("test_scale.create")(spec).cast<Module>();
}

// A tree of two kinds: host code importing a scale module (twice), which
// imports another (half) that the host reaches too.
Module sample_tree() {
  Module host = host_module();
  Module twice = scale_module("twice=2\n");
  twice.import_module(scale_module("half=0.5\n"));
  host.import_module(twice);
  return host;
}

void expect_run_matches(const Module& m, int64_t n) {
  std::vector<float> values = test::random_floats(static_cast<size_t>(n), static_cast<unsigned>(n));
  NDArray x = NDArray::empty({n}, DataType::Float(32));
  NDArray y = NDArray::empty({n}, DataType::Float(32));
  std::copy(values.begin(), values.end(), x.data_as<float>());
  EXPECT_EQ(m.get_function("run")(x, y).as_int(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y.data_as<float>()[i], values[i] * 2.0f + 1.0f) << "at " << i;
}

std::string load_in_fresh_process(const std::string& library, const std::string& plugin_path,
                                  const std::string& function, int n, int* status) {
  auto result = test::run_command("LOOM_PLUGIN_PATH='" + plugin_path + "' '" + LOOM_TEST_LOAD_MODULE + "' '" + library +
                                  "' " + function + " " + std::to_string(n));
  *status = result.status;
  return result.output;
}
}  // namespace

TEST(HostLibrary, InMemoryHostCodeCallsImportsByName) {
  Module tree = sample_tree();
  EXPECT_EQ(tree->type_key(), "test_chost");
  for (int64_t n : {1, 7, 1000, 4099}) expect_run_matches(tree, n);
  // Half is reachable through the tree, depth first.
  EXPECT_TRUE(tree.find_function("half").has_value());
  EXPECT_NE(tree->inspect_source("c").find("host_run"), std::string::npos);
}

TEST(HostLibrary, ErrorsInHostCodeAndImportsArriveWithTheirMessage) {
  Module tree = sample_tree();
  EXPECT_EQ(error_of([&] { tree.get_function("fail")(); }),
            "fail: no function 'thrice' in the test_chost module or its imports; did you mean 'twice'?");
  EXPECT_EQ(error_of([&] { tree.get_function("run")(1, 2); }), "run: run expects two tensors");
  NDArray x = NDArray::empty({3}, DataType::Float(32)), y = NDArray::empty({4}, DataType::Float(32));
  EXPECT_EQ(error_of([&] { tree.get_function("run")(x, y); }), "run: twice: x and y differ in shape");
  EXPECT_EQ(error_of([&] { tree.get_function("run")(x, tree); }),
            "run: argument 1: object test_chost.Module cannot be passed to compiled code");
}

TEST(HostLibrary, ExportedTreeLoadsInTheSameProcess) {
  test::TempDir dir;
  std::string path = dir.file("model.so");
  export_library(sample_tree(), path);
  Module loaded = load_module(path);
  EXPECT_EQ(loaded->type_key(), "library");
  ASSERT_EQ(loaded.imports().size(), 1u);
  EXPECT_EQ(loaded.imports()[0]->type_key(), "test_scale");
  EXPECT_EQ(loaded.imports()[0].imports()[0]->function_names(), std::vector<std::string>{"half"});
  EXPECT_EQ(loaded->function_names(), (std::vector<std::string>{"run", "fail"}));
  expect_run_matches(loaded, 1001);

  // A second load of the same file is a separate tree (its own copy of the
  // library), and the first keeps working after the second is gone.
  {
    Module again = load_module(path);
    expect_run_matches(again, 33);
  }
  expect_run_matches(loaded, 17);
  // Exporting over a loaded file replaces it atomically; both work.
  export_library(sample_tree(), path);
  expect_run_matches(load_module(path), 5);
  expect_run_matches(loaded, 5);
}

TEST(HostLibrary, HostCodeImportingHostCodeLoadsAsOneLibraryWithoutACycle) {
  // Two modules with host code, one importing the other (a codegen's
  // kernels importing an extern kind's): both become the one library.
  load_fixture_plugins();
  Module inner = FunctionRegistry::get("test_chost.compile")(
                     std::string("#include <stdint.h>\nint32_t host_other(const void* a, const int32_t* c, int32_t n, "
                                 "void* r, int32_t* rc, void* res) { *rc = 0; return 0; }\n"),
                     std::string("other=host_other"))
                     .cast<Module>();
  Module outer = sample_tree();
  outer.import_module(inner);
  test::TempDir dir;
  std::string path = dir.file("nested.so");
  export_library(outer, path);
  Module loaded = load_module(path);
  std::function<void(const Module&, int)> no_cycle = [&](const Module& m, int depth) {
    ASSERT_LT(depth, 8) << "the loaded tree has a cycle";
    for (const Module& child : m.imports()) {
      ASSERT_NE(child.get(), m.get()) << "a module imports itself";
      no_cycle(child, depth + 1);
    }
  };
  no_cycle(loaded, 0);
  EXPECT_EQ(loaded->function_names(), (std::vector<std::string>{"run", "fail", "other"}));
  EXPECT_FALSE(loaded.find_function("missing").has_value());
  expect_run_matches(loaded, 9);
}

TEST(HostLibrary, ExportedTreeLoadsInAFreshProcessThroughPlugins) {
  test::TempDir dir;
  std::string path = dir.file("model.so");
  export_library(sample_tree(), path);
  int status = 0;
  std::string out = load_in_fresh_process(path, kChostDir + ":" + kScaleDir, "run", 9, &status);
  ASSERT_EQ(status, 0) << out;
  std::ostringstream expected;
  expected << "tree: library(test_scale(test_scale))\nret: 9\ny:";
  for (int i = 0; i < 9; ++i) expected << " " << (0.25f * i - 3.0f) * 2.0f + 1.0f;
  EXPECT_EQ(out, expected.str() + "\n");
  // Without the fx_chost plugin: host code is linked, so nothing needs it.
  out = load_in_fresh_process(path, kScaleDir, "half", 4, &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("y: -1.5 -1.375 -1.25 -1.125"), std::string::npos) << out;
}

TEST(HostLibrary, MissingLoaderNamesTheTypeKeyAndThePlugin) {
  test::TempDir dir;
  std::string path = dir.file("model.so");
  export_library(sample_tree(), path);
  int status = 0;
  std::string out = load_in_fresh_process(path, kChostDir, "run", 3, &status);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(out, "error: load_module '" + path +
                     "': no loader for modules of type 'test_scale' (made by plugin 'fx_scale'): none is registered "
                     "and no plugin in the search path provides 'runtime:test_scale'; put the folder holding "
                     "fx_scale's .so on LOOM_PLUGIN_PATH\n");
}

TEST(HostLibrary, LoomcInspectPrintsTheTree) {
  test::TempDir dir;
  std::string path = dir.file("model.so");
  export_library(sample_tree(), path);
  auto result = test::run_command("LOOM_PLUGIN_PATH='" + kChostDir + ":" + kScaleDir + "' '" + LOOM_TEST_LOOMC +
                                  "' inspect '" + path + "'");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(result.output, path +
                               "\n  library: 2 functions (run, fail)\n    test_scale: 1 function (twice)\n"
                               "      test_scale: 1 function (half)\n");
  result = test::run_command("LOOM_PLUGIN_PATH='" + kChostDir + "' '" + LOOM_TEST_LOOMC + "' inspect '" + path + "'");
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.output.find("loomc: inspect '" + path + "': no loader for modules of type 'test_scale'"),
            std::string::npos)
      << result.output;
}

TEST(HostLibrary, TreesWithoutHostCodeExportToo) {
  test::TempDir dir;
  std::string path = dir.file("scale.so");
  Module twice = scale_module("twice=2\n");
  export_library(twice, path);
  Module loaded = load_module(path);
  EXPECT_EQ(loaded->type_key(), "test_scale");
  NDArray x = NDArray::zeros({2}, DataType::Float(32)), y = NDArray::empty({2}, DataType::Float(32));
  x.data_as<float>()[1] = 3;
  loaded.get_function("twice")(x, y);
  EXPECT_EQ(y.data_as<float>()[1], 6.0f);
}

TEST(HostLibrary, BadLibrariesAndBadHostCodeAreClearErrors) {
  test::TempDir dir;
  EXPECT_EQ(error_of([&] { load_module(dir.file("absent.so")); }),
            "load_module: no file '" + dir.file("absent.so") + "'");
  {
    std::ofstream(dir.file("text.so")) << "not a library";
    std::string e = error_of([&] { load_module(dir.file("text.so")); });
    EXPECT_EQ(e.rfind("cannot open library '" + dir.file("text.so") + "': ", 0), 0u) << e;
  }
  std::string plugin = kScaleDir + "/loom_fx_scale.so";
  EXPECT_EQ(error_of([&] { load_module(plugin); }),
            "'" + plugin +
                "' is not a Loom host library (it has no .loom_functions section: it was not written by "
                "export_library, or by an older Loom)");

  std::string broken = kHostSource + "\nint32_t oops(void) { return undeclared_name; }\n";
  std::string e = error_of([&] { export_library(host_module(broken), dir.file("broken.so")); });
  EXPECT_EQ(e.rfind("export: 'cc' failed (exit 1) linking '" + dir.file("broken.so") + "':\n", 0), 0u) << e;
  EXPECT_NE(e.find("undeclared_name"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(dir.file("broken.so")));

  Module missing_symbol = FunctionRegistry::get("test_chost.compile")(kHostSource, "run=no_such_symbol").cast<Module>();
  e = error_of([&] { export_library(missing_symbol, dir.file("missing.so")); });
  EXPECT_NE(e.find("no_such_symbol"), std::string::npos) << e;
  Module bad_symbol = FunctionRegistry::get("test_chost.compile")(kHostSource, "run=not-a-name").cast<Module>();
  EXPECT_EQ(error_of([&] { export_library(bad_symbol, dir.file("bad.so")); }),
            "export: function 'run' has the symbol 'not-a-name', which is not a C identifier");
  Module twice_run = host_module();
  twice_run.import_module(host_module());
  EXPECT_EQ(error_of([&] { export_library(twice_run, dir.file("dup.so")); }),
            "export: two modules of the tree define host function 'run'");

  setenv("CC", "/nonexistent/cc", 1);
  e = error_of([&] { export_library(host_module(), dir.file("nocc.so")); });
  unsetenv("CC");
  EXPECT_EQ(e, "export: cannot run the C compiler '/nonexistent/cc' (set CC to one that exists)");
}

namespace {
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
}  // namespace

// A library is validated from the file before it is loaded: truncated at
// any point it was mapped anyway and the first read past its end raised
// SIGBUS.
TEST(HostLibrary, TruncatedAndCorruptLibrariesAreErrors) {
  test::TempDir dir;
  std::string good = dir.file("good.so"), bad = dir.file("bad.so");
  export_library(sample_tree(), good);
  std::string bytes = file_bytes(good);
  for (size_t keep : {size_t{100}, bytes.size() / 8, bytes.size() / 2, bytes.size() - 200, bytes.size() - 1}) {
    write_bytes(bad, bytes.substr(0, keep));
    for (auto open :
         {+[](const std::string& p) { load_module(p); }, +[](const std::string& p) { inspect_library(p); }}) {
      std::string e = error_of([&] { open(bad); });
      EXPECT_EQ(e.rfind("cannot open library '" + bad + "': not a Loom library: ", 0), 0u) << keep << ": " << e;
      EXPECT_NE(e.find("truncated or corrupt"), std::string::npos) << keep << ": " << e;
    }
  }
  // The blob: a module count past the bytes present.
  size_t magic = bytes.find("LOOMMODT");
  ASSERT_NE(magic, std::string::npos);
  std::string corrupt = bytes;
  corrupt.replace(magic + 12, 4, std::string(4, '\xff'));
  write_bytes(bad, corrupt);
  std::string e = error_of([&] { load_module(bad); });
  EXPECT_EQ(e.rfind("load_module '" + bad + "': module tree is truncated: ", 0), 0u) << e;
  // The size the code was linked with against the blob section's (the
  // last 8 bytes that hold the size: the section header's or the symbol's).
  uint64_t size = save_module_tree(sample_tree()).size();
  std::string size_bytes(reinterpret_cast<const char*>(&size), 8);
  size_t at = bytes.rfind(size_bytes);
  ASSERT_NE(at, std::string::npos);
  corrupt = bytes;
  uint64_t wrong = size + 4096;
  corrupt.replace(at, 8, std::string(reinterpret_cast<const char*>(&wrong), 8));
  write_bytes(bad, corrupt);
  e = error_of([&] { load_module(bad); });
  std::string sizes[] = {std::to_string(size), std::to_string(wrong)};
  EXPECT_TRUE(e == "'" + bad + "' is corrupt: its module blob has " + sizes[0] +
                       " bytes in the file, and the library says " + sizes[1] ||
              e == "'" + bad + "' is corrupt: its module blob has " + sizes[1] +
                       " bytes in the file, and the library says " + sizes[0])
      << e;
}

TEST(HostLibrary, PathsThatAreNotRegularFilesAreRefused) {
  test::TempDir dir;
  std::string pipe = dir.file("pipe.so");
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  // Opening a named pipe to read it waited for a writer, for ever.
  EXPECT_EQ(error_of([&] { load_module(pipe); }), "cannot read " + pipe + ": it is a named pipe, not a regular file");
  EXPECT_EQ(error_of([&] { inspect_library(pipe); }),
            "cannot read " + pipe + ": it is a named pipe, not a regular file");
  EXPECT_EQ(error_of([&] { load_module(dir.path()); }),
            "cannot read " + dir.path() + ": it is a directory, not a regular file");
}

// inspect_library reads the file; load_module runs its code, constructors
// first.
TEST(HostLibrary, InspectRunsNoCodeOfTheLibrary) {
  test::TempDir dir;
  std::string path = dir.file("marked.so");
  std::string source = kHostSource + R"(
#include <stdlib.h>
__attribute__((constructor)) static void mark_loaded(void) { setenv("LOOM_TEST_LIBRARY_RAN", "1", 1); }
)";
  Module tree = host_module(source);
  unsetenv("LOOM_TEST_LIBRARY_RAN");
  export_library(tree, path);
  Module inspected = inspect_library(path);
  EXPECT_EQ(inspected->type_key(), "library");
  EXPECT_EQ(inspected->function_names(), (std::vector<std::string>{"run", "fail"}));
  EXPECT_EQ(getenv("LOOM_TEST_LIBRARY_RAN"), nullptr);
  EXPECT_EQ(error_of([&] { inspected.get_function("run")(); }),
            "'" + path + "' was inspected, not loaded: its function 'run' cannot run (load it with load_module)");
  Module loaded = load_module(path);
  ASSERT_NE(getenv("LOOM_TEST_LIBRARY_RAN"), nullptr);
  EXPECT_STREQ(getenv("LOOM_TEST_LIBRARY_RAN"), "1");
  unsetenv("LOOM_TEST_LIBRARY_RAN");
}

TEST(HostLibrary, LibraryRecordsNeedALibrary) {
  std::string blob = save_module_tree(sample_tree());
  EXPECT_EQ(error_of([&] { load_module_tree(blob); }),
            "module tree: module 2 is host code linked into a library, and this tree was not loaded from one (use "
            "load_module on the exported file)");
  test::TempDir dir;
  export_library(sample_tree(), dir.file("a.so"));
  Module loaded = load_module(dir.file("a.so"));
  EXPECT_EQ(error_of([&] { export_library(loaded, dir.file("b.so")); }),
            "the library module of '" + dir.file("a.so") +
                "' holds linked machine code; it cannot be serialized or exported again");
}

}  // namespace loom::runtime
