// runtime::Module trees: functions through imports, loaders, the blob.
#include "loom/runtime/module.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "loom/runtime/ndarray.h"
#include "test_util.h"

namespace loom::runtime {
using test::error_of;

namespace {
// "test.scale": out = in * factor, destination-passing style.
class ScaleModuleNode : public ModuleNode {
 public:
  double factor = 1;
  std::string type_key() const override { return "test.scale"; }
  std::vector<std::string> function_names() const override { return {"scale"}; }
  std::optional<Function> own_function(const std::string& name) const override {
    if (name != "scale") return std::nullopt;
    double f = factor;
    return Function::typed(
        [f](NDArray in, NDArray out) {
          if (in.shape_vector() != out.shape_vector()) throw Error("scale: shapes differ");
          for (int64_t i = 0; i < in->numel(); ++i)
            out.data_as<float>()[i] = static_cast<float>(in.data_as<float>()[i] * f);
        },
        "scale");
  }
  std::string save_to_binary() const override {
    return std::string(reinterpret_cast<const char*>(&factor), sizeof(factor));
  }
  std::string inspect_source(const std::string& format) const override {
    if (format == "text") return "out = in * " + std::to_string(factor);
    return ModuleNode::inspect_source(format);
  }
  LOOM_OBJECT(ScaleModuleNode, ModuleNode, "test.ScaleModule");
};

// "test.table": lookup(name) -> int from a small table.
class TableModuleNode : public ModuleNode {
 public:
  std::map<std::string, int64_t> table;
  std::string type_key() const override { return "test.table"; }
  std::vector<std::string> function_names() const override { return {"lookup"}; }
  std::optional<Function> own_function(const std::string& name) const override {
    if (name != "lookup") return std::nullopt;
    auto copy = table;
    return Function::typed([copy](std::string key) { return copy.at(key); }, "lookup");
  }
  std::string save_to_binary() const override {
    std::string out;
    for (const auto& item : table) out += item.first + "=" + std::to_string(item.second) + "\n";
    return out;
  }
  LOOM_OBJECT(TableModuleNode, ModuleNode, "test.TableModule");
};

Module scale_module(double factor) {
  auto node = make_object<ScaleModuleNode>();
  node->factor = factor;
  return Module(node);
}

Module table_module(std::map<std::string, int64_t> table) {
  auto node = make_object<TableModuleNode>();
  node->table = std::move(table);
  return Module(node);
}

void register_loaders() {
  static const bool done = [] {
    ModuleLoaderRegistry::register_loader("test.scale", Function::typed([](std::string bytes) {
                                            if (bytes.size() != sizeof(double)) throw Error("bad scale payload");
                                            double f;
                                            std::memcpy(&f, bytes.data(), sizeof(f));
                                            return scale_module(f);
                                          }));
    ModuleLoaderRegistry::register_loader("test.table", Function::typed([](std::string bytes) {
                                            std::map<std::string, int64_t> table;
                                            size_t pos = 0;
                                            while (pos < bytes.size()) {
                                              size_t eq = bytes.find('=', pos), nl = bytes.find('\n', pos);
                                              table[bytes.substr(pos, eq - pos)] =
                                                  std::stoll(bytes.substr(eq + 1, nl - eq - 1));
                                              pos = nl + 1;
                                            }
                                            return table_module(table);
                                          }));
    return true;
  }();
  (void)done;
}

// table -> {scale 2, scale 3 -> scale 2 (shared)}
Module sample_tree() {
  Module shared = scale_module(2.0);
  Module inner = scale_module(3.0);
  inner.import_module(shared);
  Module root = table_module({{"answer", 42}, {"seven", 7}});
  root.import_module(shared);
  root.import_module(inner);
  return root;
}
}  // namespace

TEST(Module, FunctionsResolveThroughImports) {
  Module root = sample_tree();
  EXPECT_EQ(root.get_function("lookup")("answer").as_int(), 42);
  NDArray in = NDArray::empty({4}, DataType::Float(32));
  for (int i = 0; i < 4; ++i) in.data_as<float>()[i] = static_cast<float>(i) - 1.5f;
  NDArray out = NDArray::empty({4}, DataType::Float(32));
  root.get_function("scale")(in, out);  // depth first: the shared scale-by-2 comes first
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.data_as<float>()[i], 2 * in.data_as<float>()[i]);
  EXPECT_EQ(error_of([&] { root.get_function("lookpu"); }),
            "no function 'lookpu' in the test.table module or its imports; did you mean 'lookup'?");
  EXPECT_EQ(root.imports()[0]->inspect_source("text"), "out = in * 2.000000");
  EXPECT_EQ(error_of([&] { root->inspect_source("asm"); }),
            "a module of type 'test.table' has no source in format 'asm'");
}

TEST(Module, TreeRoundTripsThroughOneBlobWithSharingKept) {
  register_loaders();
  std::string blob = save_module_tree(sample_tree());
  Module back = load_module_tree(blob);
  EXPECT_EQ(back->type_key(), "test.table");
  EXPECT_EQ(back.get_function("lookup")("seven").as_int(), 7);
  ASSERT_EQ(back.imports().size(), 2u);
  Module inner = back.imports()[1];
  EXPECT_TRUE(inner.imports()[0].same_as(back.imports()[0]));  // stored once, shared again
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-5, 5);
  NDArray in = NDArray::empty({33}, DataType::Float(32)), out = NDArray::empty({33}, DataType::Float(32));
  for (int i = 0; i < 33; ++i) in.data_as<float>()[i] = dist(rng);
  inner.get_function("scale")(in, out);
  for (int i = 0; i < 33; ++i) EXPECT_FLOAT_EQ(out.data_as<float>()[i], 3 * in.data_as<float>()[i]);
  EXPECT_EQ(save_module_tree(back), blob);
}

TEST(Module, MalformedBlobsAreClearErrors) {
  register_loaders();
  std::string blob = save_module_tree(sample_tree());
  for (size_t n = 0; n < blob.size(); ++n) {
    std::string message = error_of([&] { load_module_tree(blob.substr(0, n)); });
    ASSERT_TRUE(message.find("truncated") != std::string::npos || message.find("bad magic") != std::string::npos)
        << n << ": " << message;
  }
  EXPECT_EQ(error_of([&] { load_module_tree("LOOMMODX" + blob.substr(8)); }), "not a Loom module tree (bad magic)");
  EXPECT_EQ(error_of([&] { load_module_tree(blob + "x"); }), "module tree has trailing bytes after its last module");
  std::string v2 = blob;
  v2[8] = 2;
  EXPECT_EQ(error_of([&] { load_module_tree(v2); }),
            "module tree format version 2 is not supported (this Loom reads 1)");
  // A module kind nobody can load.
  struct Unknown : TableModuleNode {
    std::string type_key() const override { return "vendor.npu"; }
  };
  Module unknown(make_object<Unknown>());
  EXPECT_EQ(error_of([&] { load_module_tree(save_module_tree(unknown)); }),
            "no loader for modules of type 'vendor.npu': none is registered and no plugin in the search path provides "
            "'runtime:vendor.npu'");
  // A module that cannot be saved says so.
  struct Unsaveable : ScaleModuleNode {
    std::string save_to_binary() const override { return ModuleNode::save_to_binary(); }
  };
  EXPECT_EQ(error_of([] { save_module_tree(Module(make_object<Unsaveable>())); }),
            "a module of type 'test.scale' cannot be saved");
}

}  // namespace loom::runtime
