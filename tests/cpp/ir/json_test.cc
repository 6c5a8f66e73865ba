// JSON save/load of IR object graphs.
#include "loom/object/serialization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/object/structural.h"
#include "loom/support/json.h"
#include "loom/version.h"
#include "sample_module.h"

namespace loom {
using namespace loom::test;  // NOLINT

namespace {
std::string load_error(const std::string& text) {
  try {
    load_json(text, "in.json");
  } catch (const ParseError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a ParseError: ") + e.what();
  }
  return "no error";
}
}  // namespace

TEST(Json, ModuleRoundTripsStructurally) {
  ir::IRModule mod = sample_module();
  std::string text = save_json(mod);
  Any back = load_json(text);
  EXPECT_TRUE(structural_equal(mod, back)) << *structural_difference(mod, back);
  EXPECT_EQ(save_json(back), text);  // deterministic, and a fixed point
}

TEST(Json, SharingIsPreserved) {
  tir::Var i("i");
  Array pair({i, i});
  Array back = load_json(save_json(pair)).cast<Array>();
  EXPECT_TRUE(back[0].cast<tir::Var>().same_as(back[1].cast<tir::Var>()));
  // Stored once: one Var node, one IntImm-free Array node.
  JsonValue doc = parse_json(save_json(pair));
  EXPECT_EQ(doc.find("nodes")->array.size(), 2u);
}

TEST(Json, ValuesOfEveryKind) {
  Map values({{"none", Any()},
              {"bool", true},
              {"int", int64_t{-9007199254740993}},
              {"float", 0.1},
              {"nan", std::nan("")},
              {"inf", -1.0 / 0.0},
              {"str", "quote \" and \\u00e9 \xc3\xa9 \n"},
              {"dtype", DataType::Float(16, 8)},
              {"device", Device::parse("opencl:3")}});
  Any back = load_json(save_json(values));
  EXPECT_TRUE(structural_equal(values, back)) << *structural_difference(values, back);
  EXPECT_EQ(back.cast<Map>().at("int").as_int(), int64_t{-9007199254740993});  // no double rounding
}

TEST(Json, NDArrayBytesRoundTrip) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-10, 10);
  for (int64_t n : {0, 1, 5, 64}) {
    runtime::NDArray a = runtime::NDArray::empty({n}, DataType::Float(32));
    for (int64_t k = 0; k < n; ++k) a.data_as<float>()[k] = dist(rng);
    runtime::NDArray b = load_json(save_json(a)).cast<runtime::NDArray>();
    ASSERT_EQ(b.shape_vector(), a.shape_vector());
    for (int64_t k = 0; k < n; ++k) EXPECT_EQ(a.data_as<float>()[k], b.data_as<float>()[k]);
  }
}

TEST(Json, FunctionsCannotBeSaved) {
  Map m({{"f", Function::typed([] { return 1; })}});
  try {
    save_json(m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot save key 'f' of node 0 (Map) to JSON: it is a function");
  }
}

TEST(Json, MalformedDocumentsNameWhereAndWhat) {
  const std::string head = R"({"loom_json": 1, "root": {"ref": 0}, "nodes": [)";
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"", "in.json:1:1: unexpected end of input; expected a value"},
      {"[1, 2", "in.json:1:6: unexpected end of input in an array; expected ',' or ']'"},
      {"{\"a\": tru}", "in.json:1:7: invalid literal; expected 'true'"},
      {"{\"a\": 1, \"a\": 2}", "in.json:1:10: duplicate key \"a\""},
      {"{\"s\": \"x\n\"}", "in.json:1:9: control character in a string (escape it)"},
      {"{\"n\": 99999999999999999999}", "in.json:1:7: integer 99999999999999999999 does not fit in 64 bits"},
      {"[]", "in.json:1:1: a Loom JSON document is an object, not an array"},
      {"{}", "in.json:1:1: not a Loom JSON document: no \"loom_json\" format version"},
      {R"({"loom_json": 2, "root": null, "nodes": []})",
       "in.json:1:15: JSON format version 2 is not supported; this Loom (" LOOM_VERSION ") reads version 1"},
      {R"({"loom_json": 1, "root": null, "nodes": [], "extra": 1})", "in.json:1:54: unknown top-level key \"extra\""},
      {head + R"({"type": "tir.Vra", "fields": {}}]})",
       "in.json:1:57: node 0: unknown object type 'tir.Vra'; did you mean 'tir.Var'?"},
      {head + R"({"type": "tir.PrimExpr", "fields": {}}]})",
       "in.json:1:57: node 0 (tir.PrimExpr): type 'tir.PrimExpr' cannot be created (it is abstract)"},
      {head + R"({"type": "tir.Var", "fields": {"dtype": {"dtype": "int32"}}}]})",
       "in.json:1:78: node 0 (tir.Var): missing field 'name'"},
      {head + R"({"type": "tir.Var", "fields": {"dtype": {"dtype": "int32"}, "name": "i", "nmae": "j"}}]})",
       "in.json:1:129: node 0 (tir.Var): unknown field 'nmae'; did you mean 'name'?"},
      {head + R"({"type": "tir.Var", "fields": {"dtype": {"dtype": "int33"}, "name": "i"}}]})",
       "in.json:1:98: node 0 (tir.Var) field 'dtype': invalid data type 'int33'; did you mean 'int32'? (expected "
       "int8/16/32/64, uint.., float16/32/64, bfloat16, bool or handle, optionally followed by xLANES, e.g. "
       "float32x4)"},
      {head + R"({"type": "tir.Var", "fields": {"dtype": 3, "name": "i"}}]})",
       "in.json:1:88: node 0 (tir.Var): field 'dtype' of tir.PrimExpr: expected dtype, got int 3"},
      {head + R"({"type": "tir.Not", "fields": {"dtype": {"dtype": "bool"}, "a": {"ref": 0}}}]})",
       "in.json:1:120: node 0 (tir.Not) field 'a': refers to node 0, which is not defined before it (0 nodes so far)"},
      {head + R"({"type": "tir.Not", "fields": {"dtype": {"dtype": "bool"}, "a": {"ref": "x"}}}]})",
       "in.json:1:120: node 0 (tir.Not) field 'a': \"ref\" must be an integer"},
      {head + R"({"type": "tir.FloatImm", "fields": {"dtype": {"dtype": "float32"}, "value": {"float": "1.5x"}}}]})",
       "in.json:1:134: node 0 (tir.FloatImm) field 'value': invalid float '1.5x'"},
      {head + R"({"type": "tir.Var", "fields": {"dtype": {"dtype": "int32"}, "name": {"hex": "00"}}}]})",
       "in.json:1:116: node 0 (tir.Var) field 'name': unknown value tag \"hex\" (tags: ref, float, dtype, device)"},
      {head + R"({"type": "runtime.NDArray", "fields": {"dtype": {"dtype": "float32"}, "shape": null, "device": )"
              R"({"device": "cpu:0"}}, "bytes": "AAAA"}]})",
       "in.json:1:127: node 0 (runtime.NDArray): field 'shape' of runtime.NDArray: expected Array, got none"},
      {head + R"({"type": "Array", "items": [1]}, {"type": "runtime.NDArray", "fields": {"dtype": {"dtype": )"
              R"("float32"}, "shape": {"ref": 0}, "device": {"device": "cpu:0"}}, "bytes": "AAA"}]})",
       "in.json:1:213: node 1 (runtime.NDArray): invalid base64: length 3 is not a multiple of 4"},
      {head + R"({"type": "Array", "items": [2]}, {"type": "runtime.NDArray", "fields": {"dtype": {"dtype": )"
              R"("float32"}, "shape": {"ref": 0}, "device": {"device": "cpu:0"}}, "bytes": "AAAA"}]})",
       "in.json:1:213: node 1 (runtime.NDArray): an NDArray of float32 of shape (2,) needs 8 bytes, got 3"},
  };
  for (const auto& c : cases) EXPECT_EQ(load_error(c.text), c.message) << c.text;
}

// Every prefix of a valid document is an error, never a crash or a silent
// partial result; so is every single-byte corruption (which may also still
// load, if it hits, say, a digit).
TEST(Json, TruncatedAndCorruptedInputNeverCrashes) {
  std::string text = save_json(sample_module(4));
  for (size_t n = 0; n < text.size(); ++n) {
    std::string message = load_error(text.substr(0, n));
    ASSERT_EQ(message.rfind("in.json:", 0), 0u) << "prefix " << n << ": " << message;
  }
  std::mt19937 rng(42);
  const std::string noise = "{}[]\",:0123456789abcxyz \\-.e";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = text;
    bad[rng() % bad.size()] = noise[rng() % noise.size()];
    try {
      load_json(bad, "in.json");
    } catch (const Error&) {
    }
  }
}

// The binary form: the same graph, every payload raw in the blob section.
TEST(Binary, ModuleAndArraysRoundTripWithRawPayloads) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-10, 10);
  runtime::NDArray a = runtime::NDArray::empty({1000}, DataType::Float(32));
  for (int64_t k = 0; k < 1000; ++k) a.data_as<float>()[k] = dist(rng);
  runtime::NDArray empty = runtime::NDArray::empty({0}, DataType::Float(32));
  Array root({sample_module(), a, empty, a});
  std::string bytes = save_binary(root);
  ASSERT_TRUE(is_binary_document(bytes));
  // The payload is there verbatim (4,000 bytes), not as base64 text.
  std::string raw(reinterpret_cast<const char*>(a.data_as<float>()), 4000);
  EXPECT_NE(bytes.find(raw), std::string::npos);
  EXPECT_EQ(bytes.find(base64_encode(raw.substr(0, 30))), std::string::npos);
  Array back = load_binary(bytes, "doc.bin").cast<Array>();
  EXPECT_TRUE(structural_equal(root, back)) << *structural_difference(root, back);
  EXPECT_EQ(back[1].object(), back[3].object());  // sharing kept
  EXPECT_EQ(save_binary(back), bytes);            // deterministic
  // load_document takes both forms.
  EXPECT_TRUE(structural_equal(load_document(save_json(root), "doc"), root));
  EXPECT_TRUE(structural_equal(load_document(bytes, "doc"), root));
}

TEST(Binary, BadHeadersAndReferencesAreErrorsNamingTheDocument) {
  runtime::NDArray a = runtime::NDArray::empty({16}, DataType::Float(32));
  std::string good = save_binary(a);
  auto error = [](const std::string& bytes) -> std::string {
    try {
      load_binary(bytes, "exe.bin");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error("LOOMOBJ"), "exe.bin: not a Loom binary document (bad magic)");
  EXPECT_EQ(error(good.substr(0, 20)), "exe.bin: truncated binary document (20 bytes, the header alone is 40)");
  std::string version = good;
  version[8] = 9;
  EXPECT_NE(error(version).find("exe.bin: binary document format version 9 is not supported"), std::string::npos);
  EXPECT_NE(error(good.substr(0, good.size() - 1)).find("exe.bin: binary document sections do not fit"),
            std::string::npos);
  // A reference past the blob section: rewrite the JSON's size (same length).
  std::string past = good;
  size_t at = past.find("\"size\":64");
  ASSERT_NE(at, std::string::npos);
  past.replace(at, 9, "\"size\":99");
  std::string message = error(past);
  EXPECT_NE(message.find("exe.bin:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("blob reference of 99 bytes at 0 is outside the blob section (64 bytes)"), std::string::npos)
      << message;
  // Plain JSON never resolves a blob reference.
  std::string json = save_json(a);
  size_t bytes_at = json.find("\"bytes\":");
  ASSERT_NE(bytes_at, std::string::npos);
  json.replace(bytes_at + 8, json.find('"', bytes_at + 9) - bytes_at - 8 + 1, "{\"offset\":0,\"size\":64}");
  EXPECT_NE(load_error(json).find("a blob reference is read only in a binary document"), std::string::npos)
      << load_error(json);
  // Every prefix and thousands of corrupted copies: an error, never a crash.
  std::string module = save_binary(Array({sample_module(3), a}));
  for (size_t n = 0; n < module.size(); n += 7) EXPECT_NE(error(module.substr(0, n)), "no error") << n;
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = module;
    bad[rng() % bad.size()] = static_cast<char>(rng());
    error(bad);
  }
}

TEST(Base64, RoundTripsAndRejectsJunk) {
  std::mt19937 rng(3);
  for (size_t n = 0; n < 40; ++n) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
  }
  EXPECT_EQ(base64_encode("Loom"), "TG9vbQ==");
  EXPECT_THROW(base64_decode("TG9v*Q=="), Error);
  EXPECT_THROW(base64_decode("TG=vbQ=="), Error);
}

}  // namespace loom
