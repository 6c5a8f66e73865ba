#include "run_command.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/support/json.h"
#include "loom/text/text.h"
#include "loom/runtime/library.h"
#include "loom/runtime/npy.h"
#include "loom/runtime/vm.h"
#include "loom/support/file.h"
#include "loom/support/strings.h"

namespace loomc {

namespace {
using loom::Any;
using loom::DataType;
using loom::runtime::NDArray;

int64_t parse_count(const std::string& text, const std::string& option) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  LOOM_THROW(Error) << option << " takes a non-negative integer, got '" << text << "'";
}

}  // namespace

NDArray random_input(const loom::runtime::VMSignature& signature, size_t index, std::mt19937_64& rng,
                     const InputRange& range) {
  const loom::runtime::VMType& type = signature.param_types[index];
  const loom::runtime::VMTypeNode* t = type.get();
  if (t->type_kind() != loom::runtime::VMTypeKind::kTensor) {
    LOOM_THROW(Error) << "input " << index << " is not a tensor; give it with --input FILE.npy";
  }
  std::vector<int64_t> shape;
  std::optional<int64_t> dim;
  for (size_t k = 0; t->shape.defined() && k < t->shape.size(); ++k) {
    if (!(dim = t->shape[k].cast<loom::runtime::ShapeExpr>().as_constant())) break;
    shape.push_back(*dim);
  }
  if (!t->shape.defined() || shape.size() != t->shape.size()) {
    LOOM_THROW(Error) << "input " << index << " has the symbolic shape "
                      << loom::runtime::vm_type_text(type, signature.shape_vars) << "; give it with --input FILE.npy";
  }
  NDArray a = NDArray::empty(shape, t->dtype);
  int64_t n = a->numel();
  std::uniform_real_distribution<double> real(range.low, range.high);
  std::uniform_int_distribution<int64_t> small(range.int_low, range.int_high);
  for (int64_t i = 0; i < n; ++i) {
    switch (t->dtype.code) {
      case DataType::kFloat:
        if (t->dtype.bits == 32)
          a.data_as<float>()[i] = static_cast<float>(real(rng));
        else if (t->dtype.bits == 64)
          a.data_as<double>()[i] = real(rng);
        else
          LOOM_THROW(Error) << "random inputs of " << t->dtype.to_string() << " are not supported; use --input";
        break;
      case DataType::kBool:
        a.data_as<uint8_t>()[i] = static_cast<uint8_t>(small(rng) & 1);
        break;
      case DataType::kInt:
      case DataType::kUInt: {
        int64_t v = small(rng);
        std::memcpy(a.data_as<char>() + i * (t->dtype.bits / 8), &v, t->dtype.bits / 8);
        break;
      }
      default:
        LOOM_THROW(Error) << "random inputs of " << t->dtype.to_string() << " are not supported; use --input";
    }
  }
  return a;
}

namespace {
std::string shape_text(const NDArray& a) {
  std::string s = "(";
  auto shape = a.shape_vector();
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + ")";
}

}  // namespace

void flatten_outputs(const Any& result, std::vector<NDArray>* out) {
  std::vector<Any> todo{result};  // iterative: tuples nest to any depth
  while (!todo.empty()) {
    Any value = std::move(todo.back());
    todo.pop_back();
    if (dynamic_cast<const loom::runtime::NDArrayNode*>(value.object())) {
      out->push_back(value.cast<NDArray>());
    } else if (dynamic_cast<const loom::ArrayNode*>(value.object())) {
      const auto& items = static_cast<const loom::ArrayNode*>(value.object())->items;
      todo.insert(todo.end(), items.rbegin(), items.rend());
    } else {
      LOOM_THROW(Error) << "the function returned " << value.describe() << ", not tensors";
    }
  }
}

// A JSON value as indented "key: value" lines.
void print_json(const loom::JsonValue& v, int depth) {
  std::string indent(2 * depth, ' ');
  for (const auto& [key, value] : v.object) {
    std::cout << indent << key << ":";
    switch (value.kind) {
      case loom::JsonValue::Kind::kObject:
        std::cout << "\n";
        print_json(value, depth + 1);
        continue;
      case loom::JsonValue::Kind::kInt:
        std::cout << " " << value.integer;
        break;
      case loom::JsonValue::Kind::kFloat:
        std::cout << " " << value.number;
        break;
      case loom::JsonValue::Kind::kString:
        std::cout << " " << value.string;
        break;
      case loom::JsonValue::Kind::kBool:
        std::cout << (value.boolean ? " true" : " false");
        break;
      default:
        std::cout << " ...";
        break;
    }
    std::cout << "\n";
  }
}

// Every module of the tree that keeps a profile, printed.
void print_profiles(const loom::runtime::Module& m) {
  std::string json = m->profile();
  if (!json.empty()) {
    std::cout << "profile of the " << m->type_key() << " module:\n";
    print_json(loom::parse_json(json, m->type_key() + " profile"), 1);
  }
  for (const auto& child : m.imports()) print_profiles(child);
}

int run_model(const RunOptions& o) {
  loom::runtime::Module module;
  if (loom::ends_with(o.input, ".loom")) {
    if (o.config.empty()) LOOM_THROW(Error) << "running a .loom model needs --config FILE.yaml";
    loom::config::Config config = loom::config::load_config(o.config);
    for (const auto& warning : config.warnings) std::cerr << warning << "\n";
    module = loom::driver::build(loom::text::load_module_file(o.input), config);
  } else {
    if (!o.config.empty()) LOOM_THROW(Error) << "--config is for .loom models; " << o.input << " is already built";
    module = loom::runtime::load_module(o.input);
  }
  loom::Function fn = module.get_function(o.function);
  loom::runtime::VMSignature signature;
  if (module->type_key() == "vm") signature = loom::runtime::signature(module, o.function);
  const auto& types = signature.param_types;
  std::vector<Any> args;
  if (!o.inputs.empty()) {
    if (!types.empty() && o.inputs.size() != types.size()) {
      LOOM_THROW(Error) << "@" << o.function << " takes " << types.size() << " input(s), got " << o.inputs.size()
                        << " --input file(s)";
    }
    for (const std::string& path : o.inputs) args.push_back(Any(loom::runtime::load_npy(path)));
  } else {
    std::mt19937_64 rng(static_cast<uint64_t>(parse_count(o.seed, "--seed")));
    for (size_t i = 0; i < types.size(); ++i) args.push_back(Any(random_input(signature, i, rng, InputRange{})));
  }
  Any result = fn.call(args.data(), static_cast<int32_t>(args.size()));
  std::vector<NDArray> outputs;
  flatten_outputs(result, &outputs);
  if (!o.outputs.empty() && o.outputs.size() != outputs.size()) {
    LOOM_THROW(Error) << "@" << o.function << " has " << outputs.size() << " output(s), got " << o.outputs.size()
                      << " --output file(s)";
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::cout << "output " << k << ": " << outputs[k]->dtype.to_string() << " " << shape_text(outputs[k]);
    if (!o.outputs.empty()) {
      loom::runtime::save_npy(outputs[k], o.outputs[k]);
      std::cout << " -> " << o.outputs[k];
    }
    std::cout << "\n";
  }
  if (!o.bench.empty()) {
    int64_t runs = parse_count(o.bench, "--bench");
    if (runs < 1) LOOM_THROW(Error) << "--bench needs at least 1 run";
    std::vector<double> ms;
    for (int64_t r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      fn.call(args.data(), static_cast<int32_t>(args.size()));
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::cout << "latency: median " << ms[ms.size() / 2] << " ms, min " << ms.front() << " ms over " << runs
              << " runs (after one untimed run)\n";
  }
  if (o.profile) print_profiles(module);
  return 0;
}

}  // namespace loomc
