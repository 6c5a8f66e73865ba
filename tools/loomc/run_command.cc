#include "run_command.h"

#include "profile_command.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <filesystem>
#include <random>
#include <sstream>

#include <unistd.h>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/rpc/net.h"
#include "loom/support/json.h"
#include "loom/text/text.h"
#include "loom/runtime/library.h"
#include "loom/runtime/npy.h"
#include "loom/runtime/profiler.h"
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
void print_profile(const std::string& kind, const loom::JsonValue& profile) {
  std::cout << "profile of the " << kind << " module:\n";
  if (profile.find("kernels")) {
    print_kernel_table(profile);  // the VM's: each kernel call
  } else {
    print_json(profile, 1);
  }
}

// --profile's table and --trace's file.
void report_profiles(const RunOptions& o, const std::vector<std::pair<std::string, loom::JsonValue>>& profiles) {
  if (o.profile) {
    for (const auto& [kind, profile] : profiles) print_profile(kind, profile);
  }
  if (!o.trace.empty()) {
    std::vector<loom::JsonValue> all;
    for (const auto& [kind, profile] : profiles) all.push_back(profile);
    write_trace(all, o.trace);
    std::cout << "trace -> " << o.trace << "\n";
  }
}

namespace {

// The inputs: the --input files, else seeded random ones shaped by the
// signature (a VM's; none for another kind of module).
std::vector<NDArray> make_inputs(const RunOptions& o, const loom::runtime::VMSignature& signature) {
  const auto& types = signature.param_types;
  std::vector<NDArray> inputs;
  if (!o.inputs.empty()) {
    if (!types.empty() && o.inputs.size() != types.size()) {
      LOOM_THROW(Error) << "@" << o.function << " takes " << types.size() << " input(s), got " << o.inputs.size()
                        << " --input file(s)";
    }
    for (const std::string& path : o.inputs) inputs.push_back(loom::runtime::load_npy(path));
  } else {
    std::mt19937_64 rng(static_cast<uint64_t>(parse_count(o.seed, "--seed")));
    for (size_t i = 0; i < types.size(); ++i) inputs.push_back(random_input(signature, i, rng, InputRange{}));
  }
  return inputs;
}

void report_outputs(const RunOptions& o, const std::vector<NDArray>& outputs) {
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
}

int64_t bench_runs(const RunOptions& o) {
  int64_t runs = parse_count(o.bench, "--bench");
  if (runs < 1) LOOM_THROW(Error) << "--bench needs at least 1 run";
  return runs;
}

void report_latency(std::vector<double> ms, const std::string& where) {
  std::sort(ms.begin(), ms.end());
  std::cout << "latency: median " << ms[ms.size() / 2] << " ms, min " << ms.front() << " ms over " << ms.size()
            << " runs (after one untimed run" << where << ")\n";
}

loom::runtime::VMSignature signature_of(const loom::runtime::Module& module, const std::string& function) {
  if (module->type_key() == "vm") return loom::runtime::signature(module, function);
  return {};
}

// A .loom model built in memory with --config.
loom::runtime::Module build_model(const RunOptions& o) {
  if (o.config.empty()) LOOM_THROW(Error) << "running a .loom model needs --config FILE.yaml";
  loom::config::Config config = loom::config::load_config(o.config);
  for (const auto& warning : config.warnings) std::cerr << warning << "\n";
  return loom::driver::build(loom::text::load_module_file(o.input), config);
}

// `loomc run --remote`: the library uploaded to a loom-rpc-server, run,
// timed and profiled there (docs/rpc.md).  The signature that shapes
// random inputs is read here, without running the library.
int run_remote(const RunOptions& o) {
  namespace rpc = loom::rpc;
  std::string path = o.input, name;
  std::string temp;
  loom::runtime::Module local;
  if (loom::ends_with(o.input, ".loom")) {
    local = build_model(o);
    temp = (std::filesystem::temp_directory_path() / ("loomc-remote-" + std::to_string(getpid()) + ".so")).string();
    loom::runtime::export_library(local, temp);
    path = temp;
    name = std::filesystem::path(o.input).stem().string() + ".so";
  } else {
    if (!o.config.empty()) LOOM_THROW(Error) << "--config is for .loom models; " << o.input << " is already built";
    local = loom::runtime::inspect_library(o.input);
    name = std::filesystem::path(o.input).filename().string();
  }
  std::string bytes = loom::read_file(path);
  if (!temp.empty()) std::filesystem::remove(temp);
  std::vector<NDArray> inputs = make_inputs(o, signature_of(local, o.function));

  std::string key;
  if (!o.key.empty()) key = rpc::read_key_file(o.key);
  try {
    rpc::Client client(o.remote, key);
    auto request = [&](rpc::Msg type) {
      rpc::Request r;
      r.type = type;
      return r;
    };
    rpc::Request r = request(rpc::Msg::kUpload);
    r.name = name;
    r.data = std::move(bytes);
    client.request(r);
    r = request(rpc::Msg::kLoadModule);
    r.name = name;
    uint64_t module = client.request(r).handle;
    r = request(rpc::Msg::kGetFunction);
    r.handle = module;
    r.name = o.function;
    uint64_t function = client.request(r).handle;
    std::vector<rpc::Value> args;
    for (const NDArray& input : inputs) {
      r = request(rpc::Msg::kArrayEmpty);
      r.device = "cpu:0";
      r.dtype = input->dtype.to_string();
      r.shape = input.shape_vector();
      rpc::Value tensor = client.request(r);
      r = request(rpc::Msg::kArraySet);
      r.handle = tensor.handle;
      r.data.assign(static_cast<const char*>(input->data()), input->nbytes());
      client.request(r);
      args.push_back(tensor);
    }
    if (o.profile || !o.trace.empty()) {
      r = request(rpc::Msg::kProfile);
      r.handle = module;
      r.action = 1;  // start
      client.request(r);
    }
    r = request(rpc::Msg::kCall);
    r.handle = function;
    r.args = args;
    rpc::Value result = client.request(r);
    std::vector<NDArray> outputs;
    std::vector<rpc::Value> todo{result};
    while (!todo.empty()) {
      rpc::Value v = std::move(todo.back());
      todo.pop_back();
      if (v.kind == rpc::Value::kTuple) {
        todo.insert(todo.end(), v.items.rbegin(), v.items.rend());
        continue;
      }
      if (v.kind != rpc::Value::kTensor)
        LOOM_THROW(Error) << "the function returned " << v.describe() << ", not tensors";
      r = request(rpc::Msg::kArrayGet);
      r.handle = v.handle;
      outputs.push_back(NDArray::from_bytes(v.shape, DataType::parse(v.dtype), client.request(r).s));
    }
    report_outputs(o, outputs);
    if (!o.bench.empty()) {
      r = request(rpc::Msg::kTimeEvaluator);
      r.handle = function;
      r.device = "cpu:0";
      r.number = 1;
      r.repeat = bench_runs(o);
      r.args = args;
      rpc::Value timed = client.request(r);
      std::vector<double> ms;
      for (const rpc::Value& s : timed.items.at(1).items) ms.push_back(s.f * 1000);
      report_latency(ms, ", on " + client.endpoint().text() + "'s clock");
    }
    if (o.profile || !o.trace.empty()) {
      r = request(rpc::Msg::kProfile);
      r.handle = module;
      loom::JsonValue all = loom::parse_json(client.request(r).s, "the remote profile");
      report_profiles(o, all.object);
    }
  } catch (const rpc::ProtocolError& e) {
    LOOM_THROW(Error) << o.remote << ": " << e.what();
  }
  return 0;
}

}  // namespace

int run_model(const RunOptions& o) {
  if (!o.remote.empty()) return run_remote(o);
  loom::runtime::Module module;
  if (loom::ends_with(o.input, ".loom")) {
    module = build_model(o);
  } else {
    if (!o.config.empty()) LOOM_THROW(Error) << "--config is for .loom models; " << o.input << " is already built";
    module = loom::runtime::load_module(o.input);
  }
  loom::Function fn = module.get_function(o.function);
  if (o.profile || !o.trace.empty()) loom::runtime::set_profiling(module, true);
  std::vector<Any> args;
  for (const NDArray& input : make_inputs(o, signature_of(module, o.function))) args.push_back(Any(input));
  Any result = fn.call(args.data(), static_cast<int32_t>(args.size()));
  std::vector<NDArray> outputs;
  flatten_outputs(result, &outputs);
  report_outputs(o, outputs);
  if (!o.bench.empty()) {
    int64_t runs = bench_runs(o);
    std::vector<double> ms;
    for (int64_t r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      fn.call(args.data(), static_cast<int32_t>(args.size()));
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    report_latency(ms, "");
  }
  report_profiles(o, loom::parse_json(loom::runtime::profiles_json(module), "the profile").object);
  return 0;
}

}  // namespace loomc
