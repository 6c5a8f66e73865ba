// The VM: executable format, compiler from graph functions (with the static
// memory plan) and interpreter.  docs/runtime.md, "VM".
//
// Executable (saved as JSON through the object system): the graph
// functions, each with its parameter types, flat bytecode, allocation
// sites, storages of the memory plan and symbolic shape variables; the
// constants; and the callees (a prim/extern function name or a registry
// function name).  Bytecode: every instruction is [op, dst, a, b, n,
// args...].
#include "loom/runtime/vm.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "loom/graph/function.h"
#include "loom/ir/analysis.h"
#include "loom/ir/text.h"
#include "loom/object/serialization.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/support/strings.h"
#include "loom/target/target.h"
#include "loom/tir/function.h"

namespace loom::runtime {

namespace {
using ir::Type;

enum Opcode : int32_t {
  kConst = 0,    // dst <- constants[a]
  kAlloc = 1,    // dst <- a tensor of allocation site a
  kCallDPS = 2,  // callees[a](args...): inputs then outputs
  kCallPacked = 3,  // dst <- callees[a](args...), checked against types[b]
  kCallGraph = 4,   // dst <- graph function a (args...)
  kTuple = 5,       // dst <- (args...)
  kGetItem = 6,     // dst <- a[b]
  kMove = 7,        // dst <- a
  kIfNot = 8,       // if not a: jump to b
  kGoto = 9,        // jump to a
  kRet = 10,        // return a
};
constexpr size_t kStorageAlignment = 64;

// ---- serialized form ------------------------------------------------------------------
class VMAllocNode : public Object {
 public:
  DataType dtype;
  Array shape;           // of tir.PrimExpr
  int64_t storage = -1;  // -1: an output, allocated on its own
  LOOM_OBJECT(VMAllocNode, Object, "runtime.VMAlloc");
  static void reflect(ReflectionBuilder<VMAllocNode>& r) {
    r.field("dtype", &VMAllocNode::dtype).field("shape", &VMAllocNode::shape).field("storage", &VMAllocNode::storage);
  }
};

class VMFunctionDefNode : public Object {
 public:
  std::string name;
  Array param_names;  // of str
  Array param_types;  // of ir.Type (may be none)
  int64_t num_registers = 0;
  Array code;           // of int
  Array allocs;         // of runtime.VMAlloc
  Array storage_sizes;  // of tir.PrimExpr: bytes of each storage
  Array types;          // of ir.Type: results of call_packed
  Array shape_vars;     // of tir.Var bound from the parameters' shapes
  LOOM_OBJECT(VMFunctionDefNode, Object, "runtime.VMFunctionDef");
  static void reflect(ReflectionBuilder<VMFunctionDefNode>& r) {
    r.field("name", &VMFunctionDefNode::name)
        .field("param_names", &VMFunctionDefNode::param_names)
        .field("param_types", &VMFunctionDefNode::param_types)
        .field("num_registers", &VMFunctionDefNode::num_registers)
        .field("code", &VMFunctionDefNode::code)
        .field("allocs", &VMFunctionDefNode::allocs)
        .field("storage_sizes", &VMFunctionDefNode::storage_sizes)
        .field("types", &VMFunctionDefNode::types)
        .field("shape_vars", &VMFunctionDefNode::shape_vars);
  }
};

class VMExecutableNode : public Object {
 public:
  Array functions;  // of runtime.VMFunctionDef
  Array constants;  // of runtime.NDArray
  Array callees;    // of str: "dps:NAME" or "packed:NAME"
  int64_t num_threads = 0;
  LOOM_OBJECT(VMExecutableNode, Object, "runtime.VMExecutable");
  static void reflect(ReflectionBuilder<VMExecutableNode>& r) {
    r.field("functions", &VMExecutableNode::functions)
        .field("constants", &VMExecutableNode::constants)
        .field("callees", &VMExecutableNode::callees)
        .field("num_threads", &VMExecutableNode::num_threads);
  }
};
}  // namespace

LOOM_REGISTER_OBJECT(VMAllocNode);
LOOM_REGISTER_OBJECT(VMFunctionDefNode);
LOOM_REGISTER_OBJECT(VMExecutableNode);

namespace {
// ---- shape expressions ------------------------------------------------------------------
// Vars of a shape expression; throws for a node a shape cannot contain.
void shape_vars_of(const ObjectRef& e, std::vector<const Object*>& out) {
  if (e.as<tir::IntImmNode>()) return;
  if (e.as<tir::VarNode>()) {
    if (std::find(out.begin(), out.end(), e.get()) == out.end()) out.push_back(e.get());
    return;
  }
  if (const auto* b = e.as<tir::BinaryOpNode>()) {
    if (e.as<tir::AddNode>() || e.as<tir::SubNode>() || e.as<tir::MulNode>() || e.as<tir::DivNode>() ||
        e.as<tir::FloorDivNode>() || e.as<tir::FloorModNode>() || e.as<tir::MinNode>() || e.as<tir::MaxNode>()) {
      shape_vars_of(b->a, out);
      shape_vars_of(b->b, out);
      return;
    }
  }
  LOOM_THROW(Error) << "the shape expression " << ir::to_text(Any(e)) << " is not integer arithmetic";
}

using Slots = std::unordered_map<const Object*, int>;

int64_t evaluate(const ObjectRef& e, const Slots& slots, const std::vector<int64_t>& values) {
  if (const auto* i = e.as<tir::IntImmNode>()) return i->value;
  if (e.as<tir::VarNode>()) return values[slots.at(e.get())];
  const auto* b = e.as<tir::BinaryOpNode>();
  int64_t x = evaluate(b->a, slots, values), y = evaluate(b->b, slots, values);
  if (e.as<tir::AddNode>()) return x + y;
  if (e.as<tir::SubNode>()) return x - y;
  if (e.as<tir::MulNode>()) return x * y;
  if (e.as<tir::MinNode>()) return std::min(x, y);
  if (e.as<tir::MaxNode>()) return std::max(x, y);
  if (y == 0) LOOM_THROW(Error) << "division by zero in the shape expression " << ir::to_text(Any(e));
  if (e.as<tir::DivNode>()) return x / y;
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // floor
  if (e.as<tir::FloorDivNode>()) return q;
  return x - q * y;  // FloorMod
}

std::optional<int64_t> constant_of(const ObjectRef& e) {
  if (const auto* i = e.as<tir::IntImmNode>()) return i->value;
  return std::nullopt;
}

size_t element_bytes(DataType t) { return static_cast<size_t>((t.bits + 7) / 8) * t.lanes; }

// Bytes of a tensor: an IntImm, or (product of the symbolic dimensions) *
// (the constant factor).
ObjectRef byte_size(DataType dtype, const std::vector<ObjectRef>& shape) {
  int64_t factor = static_cast<int64_t>(element_bytes(dtype));
  ObjectRef symbolic;
  for (const ObjectRef& d : shape) {
    if (auto c = constant_of(d)) {
      factor *= *c;
    } else {
      symbolic = symbolic.defined() ? ObjectRef(tir::Mul(downcast<tir::PrimExpr>(symbolic), downcast<tir::PrimExpr>(d)))
                                    : d;
    }
  }
  tir::IntImm constant(DataType::Int(64), factor);
  if (!symbolic.defined()) return constant;
  return tir::Mul(downcast<tir::PrimExpr>(symbolic), constant);
}

size_t align_up(size_t n) { return (n + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment; }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// ---- runtime form -------------------------------------------------------------------------
struct Instr {
  int32_t op, dst, a, b;
  std::vector<int32_t> args;
};

struct AllocSite {
  DataType dtype;
  std::vector<ObjectRef> shape;           // PrimExprs
  std::optional<std::vector<int64_t>> static_shape;
  Array static_shape_array;  // shared by every tensor of a static site
  int32_t storage;
};

struct FunctionRt {
  std::string name;
  std::vector<std::string> param_names;
  std::vector<Type> param_types;
  int32_t num_registers = 0;
  std::vector<Instr> code;
  std::vector<AllocSite> allocs;
  std::vector<ObjectRef> storage_sizes;
  std::vector<size_t> static_offsets;  // when every storage size is constant
  size_t static_arena = 0;
  bool static_plan = true;
  std::vector<Type> types;
  std::vector<ObjectRef> shape_vars;
  Slots slots;
};

FunctionRt decode(const VMFunctionDefNode& def) {
  FunctionRt f;
  f.name = def.name;
  for (const Any& n : def.param_names) f.param_names.push_back(n.as_string());
  for (const Any& t : def.param_types) f.param_types.push_back(t.cast<Type>());
  f.num_registers = static_cast<int32_t>(def.num_registers);
  std::vector<int32_t> flat;
  for (const Any& v : def.code) flat.push_back(static_cast<int32_t>(v.as_int()));
  auto bad = [&](const std::string& why) { LOOM_THROW(Error) << "VM function '" << def.name << "': " << why; };
  auto check_reg = [&](int32_t r) {
    if (r < 0 || r >= f.num_registers) bad("register " + std::to_string(r) + " out of range");
  };
  for (size_t pc = 0; pc < flat.size();) {
    if (flat.size() - pc < 5) bad("truncated instruction at " + std::to_string(pc));
    Instr in{flat[pc], flat[pc + 1], flat[pc + 2], flat[pc + 3], {}};
    int32_t n = flat[pc + 4];
    if (n < 0 || static_cast<size_t>(n) > flat.size() - pc - 5) bad("bad argument count at " + std::to_string(pc));
    in.args.assign(flat.begin() + pc + 5, flat.begin() + pc + 5 + n);
    for (int32_t r : in.args) check_reg(r);
    if (in.op < kConst || in.op > kRet) bad("unknown opcode " + std::to_string(in.op));
    if (in.op != kCallDPS && in.op != kIfNot && in.op != kGoto && in.op != kRet) check_reg(in.dst);
    f.code.push_back(std::move(in));
    pc += 5 + n;
  }
  for (const Instr& in : f.code) {
    if ((in.op == kIfNot && (in.b < 0 || in.b >= static_cast<int32_t>(f.code.size()))) ||
        (in.op == kGoto && (in.a < 0 || in.a >= static_cast<int32_t>(f.code.size())))) {
      bad("jump out of range");
    }
    if (in.op == kMove || in.op == kGetItem || in.op == kIfNot || in.op == kRet) check_reg(in.a);
  }
  if (f.code.empty() || f.code.back().op != kRet) bad("the code does not end with a return");
  for (const Any& v : def.shape_vars) {
    f.slots[v.as_object_ref().get()] = static_cast<int>(f.shape_vars.size());
    f.shape_vars.push_back(v.as_object_ref());
  }
  for (const Any& s : def.storage_sizes) {
    f.storage_sizes.push_back(s.as_object_ref());
    if (!constant_of(s.as_object_ref())) f.static_plan = false;
  }
  if (f.static_plan) {
    for (const ObjectRef& s : f.storage_sizes) {
      f.static_offsets.push_back(f.static_arena);
      f.static_arena += align_up(static_cast<size_t>(*constant_of(s)));
    }
  }
  for (const Any& a : def.allocs) {
    const auto* node = a.as_object_ref().as<VMAllocNode>();
    if (!node) bad("an allocation site is not a runtime.VMAlloc");
    AllocSite site{node->dtype, {}, std::vector<int64_t>{}, Array(), static_cast<int32_t>(node->storage)};
    if (site.storage >= static_cast<int32_t>(f.storage_sizes.size())) bad("an allocation names a missing storage");
    for (const Any& d : node->shape) {
      site.shape.push_back(d.as_object_ref());
      if (auto c = constant_of(d.as_object_ref())) {
        if (site.static_shape) site.static_shape->push_back(*c);
      } else {
        site.static_shape.reset();
      }
    }
    if (site.static_shape) site.static_shape_array = Array(std::vector<Any>(site.static_shape->begin(), site.static_shape->end()));
    f.allocs.push_back(std::move(site));
  }
  for (const Any& t : def.types) f.types.push_back(t.cast<Type>());
  return f;
}

// An arena: the storages of one call, in one workspace block.
class ArenaNode : public Object {
 public:
  Device device;
  void* data = nullptr;
  ~ArenaNode() override {
    if (data) DeviceAPIRegistry::get(device).free_workspace(device, data);
  }
  LOOM_OBJECT(ArenaNode, Object, "runtime.VMArena");
};

bool truthy(const Any& v, const std::string& function) {
  auto where = [&] { return "@" + function; };
  if (v.kind() == AnyKind::kBool) return v.as_bool();
  if (v.kind() == AnyKind::kInt) return v.as_int() != 0;
  if (const auto* a = dynamic_cast<const NDArrayNode*>(v.object())) {
    if (a->numel() != 1 || a->device.device_type != Device::kCPU) {
      LOOM_THROW(Error) << where() << ": the condition of an If must be a one-element host tensor, got "
                        << a->numel() << " elements on " << a->device.to_string();
    }
    const void* p = a->data();
    switch (a->dtype.code) {
      case DataType::kFloat:
        return a->dtype.bits == 64 ? *static_cast<const double*>(p) != 0 : *static_cast<const float*>(p) != 0;
      default: {
        int64_t value = 0;
        std::memcpy(&value, p, std::min<size_t>(8, element_bytes(a->dtype)));
        return value != 0;
      }
    }
  }
  LOOM_THROW(Error) << where() << ": the condition of an If must be a bool, an int or a one-element tensor, got "
                    << v.describe();
}

// Names a value in messages; built only when a message needs it.
using Label = std::function<std::string()>;

struct InputChecker {
  const FunctionRt& f;
  std::vector<int64_t> bound;
  std::vector<int> bound_by;

  explicit InputChecker(const FunctionRt& fn) : f(fn), bound(fn.shape_vars.size(), INT64_MIN), bound_by(fn.shape_vars.size(), -1) {}

  std::string argument(int i) const { return "@" + f.name + ": argument " + std::to_string(i) + " (%" + f.param_names[i] + ")"; }

  void check(const Any& value, const Type& type, const Label& what, int arg) {
    if (!type.defined()) return;
    if (const auto* t = type.as<ir::TensorTypeNode>()) {
      const auto* a = dynamic_cast<const NDArrayNode*>(value.object());
      if (!a) {
        LOOM_THROW(TypeError) << what() << " must be a tensor of " << ir::to_text(Any(type)) << ", got "
                              << value.describe();
      }
      if (a->dtype != t->dtype) {
        LOOM_THROW(TypeError) << what() << " has dtype " << a->dtype.to_string() << "; expected "
                              << t->dtype.to_string();
      }
      if (a->device.device_type != Device::kCPU) {
        LOOM_THROW(Error) << what() << " is on " << a->device.to_string() << "; @" << f.name << " runs on cpu:0";
      }
      if (!a->is_contiguous()) {
        LOOM_THROW(Error) << what() << " is not contiguous; compiled code needs compact row-major tensors";
      }
      if (t->unknown_rank()) return;
      const DLTensor& dl = a->dl_tensor();
      auto shape = [&] { return shape_text(std::vector<int64_t>(dl.shape, dl.shape + dl.ndim)); };
      auto expected = [&] { return ir::to_text(Any(type)); };
      if (static_cast<size_t>(dl.ndim) != t->shape.size()) {
        LOOM_THROW(Error) << what() << " has shape " << shape() << "; expected " << expected();
      }
      for (int i = 0; i < dl.ndim; ++i) {
        const Object* dim = t->shape[i].object();
        if (const auto* c = dynamic_cast<const tir::IntImmNode*>(dim)) {
          if (c->value != dl.shape[i]) {
            LOOM_THROW(Error) << what() << " has shape " << shape() << "; expected " << expected() << " (dimension "
                              << i << " must be " << c->value << ")";
          }
        } else if (const auto* var = dynamic_cast<const tir::VarNode*>(dim)) {
          int slot = f.slots.at(dim);
          if (bound[slot] == INT64_MIN) {
            bound[slot] = dl.shape[i];
            bound_by[slot] = arg;
          } else if (bound[slot] != dl.shape[i]) {
            LOOM_THROW(Error) << what() << " has shape " << shape() << "; expected " << expected() << " (dimension "
                              << i << " is " << dl.shape[i] << ", but %" << var->name << " is " << bound[slot]
                              << " from " << argument(bound_by[slot]) << ")";
          }
        }
      }
      return;
    }
    if (const auto* t = type.as<ir::TupleTypeNode>()) {
      const auto* a = dynamic_cast<const ArrayNode*>(value.object());
      if (!a || a->items.size() != t->fields.size()) {
        LOOM_THROW(TypeError) << what() << " must be a tuple of " << t->fields.size() << " values, got "
                              << value.describe();
      }
      for (size_t i = 0; i < t->fields.size(); ++i) {
        check(a->items[i], t->fields[i].cast<Type>(), [&] { return what() + " field " + std::to_string(i); }, arg);
      }
      return;
    }
    if (const auto* t = type.as<ir::PrimTypeNode>()) {
      bool ok = t->dtype.code == DataType::kFloat
                    ? value.kind() == AnyKind::kFloat || value.kind() == AnyKind::kInt
                    : (t->dtype.code == DataType::kBool ? value.kind() == AnyKind::kBool
                                                        : value.kind() == AnyKind::kInt);
      if (!ok) LOOM_THROW(TypeError) << what() << " must be a " << t->dtype.to_string() << ", got " << value.describe();
    }
  }

  // Composite dimensions (not a constant or a lone variable), once every
  // variable is bound.
  void check_composite(const Any& value, const Type& type, const Label& what) {
    if (const auto* t = type.as<ir::TensorTypeNode>()) {
      if (t->unknown_rank()) return;
      const auto* a = static_cast<const NDArrayNode*>(value.object());
      for (size_t i = 0; i < t->shape.size(); ++i) {
        ObjectRef dim = t->shape[i].as_object_ref();
        if (constant_of(dim) || dim.as<tir::VarNode>()) continue;
        int64_t want = evaluate(dim, f.slots, bound), got = a->dl_tensor().shape[i];
        if (want != got) {
          LOOM_THROW(Error) << what() << ": dimension " << i << " is " << got << "; expected "
                            << ir::to_text(Any(dim)) << " = " << want;
        }
      }
    } else if (const auto* t = type.as<ir::TupleTypeNode>()) {
      const auto* a = static_cast<const ArrayNode*>(value.object());
      for (size_t i = 0; i < t->fields.size(); ++i) check_composite(a->items[i], t->fields[i].cast<Type>(), what);
    }
  }
};

// A call_packed result against its declared type (no binding).
void check_result(const Any& value, const Type& type, const std::string& what) {
  if (!type.defined()) return;
  if (const auto* t = type.as<ir::TensorTypeNode>()) {
    const auto* a = dynamic_cast<const NDArrayNode*>(value.object());
    bool ok = a && a->dtype == t->dtype && (t->unknown_rank() || a->shape.size() == t->shape.size());
    for (size_t i = 0; ok && !t->unknown_rank() && i < t->shape.size(); ++i) {
      if (auto c = constant_of(t->shape[i].as_object_ref())) ok = *c == a->shape[i].as_int();
    }
    if (!ok) LOOM_THROW(TypeError) << what << " returned " << value.describe() << (a ? " of shape " + shape_text(NDArray(ObjectPtr<Object>(const_cast<NDArrayNode*>(a))).shape_vector()) + " " + a->dtype.to_string() : "") << "; expected " << ir::to_text(Any(type));
  } else if (const auto* t = type.as<ir::TupleTypeNode>()) {
    const auto* a = dynamic_cast<const ArrayNode*>(value.object());
    if (!a || a->items.size() != t->fields.size()) {
      LOOM_THROW(TypeError) << what << " returned " << value.describe() << "; expected " << ir::to_text(Any(type));
    }
    for (size_t i = 0; i < t->fields.size(); ++i) check_result(a->items[i], t->fields[i].cast<Type>(), what);
  }
}

// ---- the VM module --------------------------------------------------------------------------
class VMModuleNode : public ModuleNode {
 public:
  ObjectRef executable;
  std::vector<FunctionRt> functions;
  std::vector<Any> constants;
  std::vector<std::string> callees;

  std::string type_key() const override { return "vm"; }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (const auto& f : functions) out.push_back(f.name);
    return out;
  }
  std::optional<Function> own_function(const std::string& name) const override {
    for (size_t i = 0; i < functions.size(); ++i) {
      if (functions[i].name != name) continue;
      Module self(ObjectPtr<Object>(const_cast<VMModuleNode*>(this)));
      return Function([self, i](const Any* args, int32_t n) -> Any {
        return static_cast<const VMModuleNode*>(self.get())->invoke(i, args, n);
      }, name);
    }
    return std::nullopt;
  }
  std::string save_to_binary() const override { return save_json(Any(executable)); }
  std::string inspect_source(const std::string& format) const override {
    if (format == "bytecode") return disassemble();
    return ModuleNode::inspect_source(format);
  }

  Any invoke(size_t index, const Any* args, int32_t count) const;
  std::string disassemble() const;
  LOOM_OBJECT(VMModuleNode, ModuleNode, "runtime.VMModule");

 private:
  void resolve() const;
  mutable std::mutex resolve_mutex_;
  mutable std::atomic<bool> resolved_{false};
  mutable std::vector<Function> callee_functions_;
};

void VMModuleNode::resolve() const {
  std::lock_guard<std::mutex> lock(resolve_mutex_);
  if (resolved_.load(std::memory_order_acquire)) return;
  Module self(ObjectPtr<Object>(const_cast<VMModuleNode*>(this)));
  std::vector<Function> out;
  for (const std::string& callee : callees) {
    std::string name = callee.substr(callee.find(':') + 1);
    if (starts_with(callee, "packed:")) {
      out.push_back(FunctionRegistry::get(name));
    } else {
      std::optional<Function> f;
      for (const Module& child : self.imports())
        if ((f = child.find_function(name))) break;
      if (!f) {
        LOOM_THROW(LookupError) << "the VM calls @" << name << " through call_dps, and no module imported by the VM "
                                << "defines it (import the module codegen built for the prim functions)";
      }
      out.push_back(*f);
    }
  }
  callee_functions_ = std::move(out);
  resolved_.store(true, std::memory_order_release);
}

Any VMModuleNode::invoke(size_t index, const Any* args, int32_t count) const {
  if (!resolved_.load(std::memory_order_acquire)) resolve();
  const FunctionRt& f = functions[index];
  auto where = [&] { return "@" + f.name; };
  if (count != static_cast<int32_t>(f.param_types.size())) {
    LOOM_THROW(TypeError) << where() << " takes " << f.param_types.size() << " argument"
                          << (f.param_types.size() == 1 ? "" : "s") << ", got " << count;
  }
  InputChecker checker(f);
  for (int32_t i = 0; i < count; ++i) {
    checker.check(args[i], f.param_types[i], [&] { return checker.argument(i); }, i);
  }
  for (int32_t i = 0; i < count; ++i) {
    checker.check_composite(args[i], f.param_types[i], [&] { return checker.argument(i); });
  }
  const std::vector<int64_t>& bound = checker.bound;

  std::vector<Any> regs(f.num_registers);
  for (int32_t i = 0; i < count; ++i) regs[i] = args[i];

  // The arena for this call.
  const Device device{Device::kCPU, 0};
  ObjectRef arena;
  char* base = nullptr;
  std::vector<size_t> dynamic_offsets;
  const std::vector<size_t>* offsets = &f.static_offsets;
  size_t arena_bytes = f.static_arena;
  if (!f.static_plan) {
    arena_bytes = 0;
    for (const ObjectRef& s : f.storage_sizes) {
      dynamic_offsets.push_back(arena_bytes);
      arena_bytes += align_up(static_cast<size_t>(evaluate(s, f.slots, bound)));
    }
    offsets = &dynamic_offsets;
  }
  if (arena_bytes) {
    auto node = make_object<ArenaNode>();
    node->device = device;
    node->data = DeviceAPIRegistry::get(device).alloc_workspace(device, arena_bytes);
    base = static_cast<char*>(node->data);
    arena = ObjectRef(node);
  }

  std::vector<Any> scratch;
  std::vector<int64_t> shape;
  for (size_t pc = 0;;) {
    const Instr& in = f.code[pc];
    switch (in.op) {
      case kConst:
        regs[in.dst] = constants[in.a];
        ++pc;
        break;
      case kAlloc: {
        const AllocSite& site = f.allocs[in.a];
        if (site.static_shape && site.storage >= 0) {
          regs[in.dst] = NDArray::wrap_shape(base + (*offsets)[site.storage], site.static_shape_array, site.dtype, device, arena);
          ++pc;
          break;
        }
        if (site.static_shape) {
          shape = *site.static_shape;
        } else {
          shape.clear();
          for (const ObjectRef& d : site.shape) shape.push_back(evaluate(d, f.slots, bound));
        }
        regs[in.dst] = site.storage < 0 ? NDArray::empty(shape, site.dtype, device)
                                        : NDArray::wrap(base + (*offsets)[site.storage], shape, site.dtype, device,
                                                        arena);
        ++pc;
        break;
      }
      case kCallDPS:
      case kCallPacked:
      case kCallGraph: {
        scratch.clear();
        for (int32_t r : in.args) scratch.push_back(regs[r]);
        const auto n = static_cast<int32_t>(scratch.size());
        try {
          if (in.op == kCallGraph) {
            regs[in.dst] = invoke(static_cast<size_t>(in.a), scratch.data(), n);
          } else {
            Any result = callee_functions_[in.a].call(scratch.data(), n);
            if (in.op == kCallPacked) {
              check_result(result, f.types[in.b], "call_packed '" + callees[in.a].substr(7) + "'");
              regs[in.dst] = std::move(result);
            }
          }
        } catch (const std::exception& e) {
          std::string callee = in.op == kCallGraph ? "@" + functions[in.a].name
                               : in.op == kCallDPS ? "@" + callees[in.a].substr(4)
                                                   : "call_packed '" + callees[in.a].substr(7) + "'";
          LOOM_THROW(Error) << where() << ": " << callee << ": " << e.what();
        }
        ++pc;
        break;
      }
      case kTuple: {
        std::vector<Any> fields;
        for (int32_t r : in.args) fields.push_back(regs[r]);
        regs[in.dst] = Array(std::move(fields));
        ++pc;
        break;
      }
      case kGetItem: {
        const auto* tuple = dynamic_cast<const ArrayNode*>(regs[in.a].object());
        if (!tuple || in.b < 0 || static_cast<size_t>(in.b) >= tuple->items.size()) {
          LOOM_THROW(Error) << where() << ": item " << in.b << " of " << regs[in.a].describe();
        }
        regs[in.dst] = tuple->items[in.b];
        ++pc;
        break;
      }
      case kMove:
        regs[in.dst] = regs[in.a];
        ++pc;
        break;
      case kIfNot:
        pc = truthy(regs[in.a], f.name) ? pc + 1 : static_cast<size_t>(in.b);
        break;
      case kGoto:
        pc = static_cast<size_t>(in.a);
        break;
      case kRet:
        return regs[in.a];
    }
  }
}

std::string VMModuleNode::disassemble() const {
  static const char* names[] = {"const", "alloc", "call_dps", "call_packed", "call", "tuple",
                                "get_item", "move", "if_not", "goto", "ret"};
  std::ostringstream out;
  for (const FunctionRt& f : functions) {
    out << "@" << f.name << ": " << f.num_registers << " registers, " << f.storage_sizes.size() << " storages\n";
    for (size_t pc = 0; pc < f.code.size(); ++pc) {
      const Instr& in = f.code[pc];
      out << "  " << pc << ": " << names[in.op];
      switch (in.op) {
        case kConst: out << " r" << in.dst << " <- constant " << in.a; break;
        case kAlloc: {
          const AllocSite& s = f.allocs[in.a];
          out << " r" << in.dst << " <- " << s.dtype.to_string() << " ";
          out << (s.storage < 0 ? "output" : "storage " + std::to_string(s.storage));
          break;
        }
        case kCallDPS: out << " " << callees[in.a]; break;
        case kCallPacked: out << " r" << in.dst << " <- " << callees[in.a]; break;
        case kCallGraph: out << " r" << in.dst << " <- @" << functions[in.a].name; break;
        case kTuple: out << " r" << in.dst; break;
        case kGetItem: out << " r" << in.dst << " <- r" << in.a << "[" << in.b << "]"; break;
        case kMove: out << " r" << in.dst << " <- r" << in.a; break;
        case kIfNot: out << " r" << in.a << " else " << in.b; break;
        case kGoto: out << " " << in.a; break;
        case kRet: out << " r" << in.a; break;
      }
      if (!in.args.empty()) {
        out << " (";
        for (size_t i = 0; i < in.args.size(); ++i) out << (i ? ", r" : "r") << in.args[i];
        out << ")";
      }
      out << "\n";
    }
  }
  return out.str();
}

void apply_threads(int64_t threads) {
  if (threads > 0) ThreadPool::global().set_num_threads(static_cast<int>(threads));
}

Module make_vm_module(const ObjectRef& executable) {
  const auto* exe = executable.as<VMExecutableNode>();
  if (!exe) LOOM_THROW(Error) << "not a VM executable";
  auto node = make_object<VMModuleNode>();
  node->executable = executable;
  for (const Any& c : exe->constants) {
    if (!dynamic_cast<const NDArrayNode*>(c.object())) LOOM_THROW(Error) << "a VM constant is not an NDArray";
    node->constants.push_back(c);
  }
  for (const Any& c : exe->callees) node->callees.push_back(c.as_string());
  for (const Any& fn : exe->functions) {
    const auto* def = fn.as_object_ref().as<VMFunctionDefNode>();
    if (!def) LOOM_THROW(Error) << "a VM function is not a runtime.VMFunctionDef";
    node->functions.push_back(decode(*def));
  }
  // Operands that index the executable's tables.
  for (const FunctionRt& f : node->functions) {
    for (const Instr& in : f.code) {
      auto check = [&](bool ok, const char* what) {
        if (!ok) LOOM_THROW(Error) << "VM function '" << f.name << "': " << what << " out of range";
      };
      if (in.op == kConst) check(in.a >= 0 && static_cast<size_t>(in.a) < node->constants.size(), "constant");
      if (in.op == kAlloc) check(in.a >= 0 && static_cast<size_t>(in.a) < f.allocs.size(), "allocation");
      if (in.op == kCallDPS || in.op == kCallPacked) {
        check(in.a >= 0 && static_cast<size_t>(in.a) < node->callees.size(), "callee");
      }
      if (in.op == kCallPacked) check(in.b >= 0 && static_cast<size_t>(in.b) < f.types.size(), "type");
      if (in.op == kCallGraph) check(in.a >= 0 && static_cast<size_t>(in.a) < node->functions.size(), "function");
    }
  }
  apply_threads(exe->num_threads);
  return Module(node);
}

const bool vm_loader_registered = [] {
  ModuleLoaderRegistry::register_loader("vm", Function::typed([](std::string bytes) {
                                          return make_vm_module(load_json(bytes, "<vm executable>").as_object_ref());
                                        }, "vm.load"));
  return true;
}();
}  // namespace

LOOM_REGISTER_OBJECT(VMModuleNode);
LOOM_REGISTER_OBJECT(ArenaNode);

// ---- the compiler ------------------------------------------------------------------------------
namespace {
class ExecutableBuilder {
 public:
  int constant(const Any& c) {
    constants.push_back(c);
    return static_cast<int>(constants.size() - 1);
  }
  int callee(const std::string& key) {
    auto found = std::find(callees.begin(), callees.end(), key);
    if (found != callees.end()) return static_cast<int>(found - callees.begin());
    callees.push_back(key);
    return static_cast<int>(callees.size() - 1);
  }
  std::vector<Any> constants;
  std::vector<std::string> callees;
};

struct PendingAlloc {
  DataType dtype;
  std::vector<ObjectRef> shape;
  int32_t reg;
  size_t position;
};

class FunctionCompiler {
 public:
  FunctionCompiler(std::string name, ExecutableBuilder& exe, const std::map<std::string, int>& graph_functions)
      : name_(std::move(name)), exe_(exe), graph_functions_(graph_functions) {}

  ObjectRef compile(const graph::FunctionNode& fn) {
    auto def = make_object<VMFunctionDefNode>();
    def->name = name_;
    std::vector<Any> names, types;
    for (const Any& p : fn.params) {
      const auto* var = p.as_object_ref().as<graph::VarNode>();
      Type type = var->annotation.defined() ? var->annotation : var->checked_type;
      vars_[var] = new_register();
      names.push_back(var->name);
      types.push_back(type);
      bind_shape_vars(type);
    }
    int32_t result = expr(fn.body);
    emit(kRet, -1, result, 0, {});
    def->param_names = Array(names);
    def->param_types = Array(types);
    def->num_registers = num_registers_;
    plan(*def);
    std::vector<Any> flat;
    for (const Instr& in : code_) {
      for (int32_t v : {in.op, in.dst, in.a, in.b, static_cast<int32_t>(in.args.size())}) flat.push_back(v);
      for (int32_t r : in.args) flat.push_back(r);
    }
    def->code = Array(flat);
    def->types = Array(types_);
    def->shape_vars = Array(std::vector<Any>(shape_vars_.begin(), shape_vars_.end()));
    return ObjectRef(def);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    LOOM_THROW(Error) << "VM: @" << name_ << ": " << message;
  }
  int32_t new_register() { return num_registers_++; }
  size_t emit(int32_t op, int32_t dst, int32_t a, int32_t b, std::vector<int32_t> args) {
    code_.push_back(Instr{op, dst, a, b, std::move(args)});
    return code_.size() - 1;
  }

  void bind_shape_vars(const Type& type) {
    if (const auto* t = type.as<ir::TensorTypeNode>()) {
      if (t->unknown_rank()) return;
      for (const Any& d : t->shape) {
        ObjectRef dim = d.as_object_ref();
        if (dim.as<tir::VarNode>() &&
            std::none_of(shape_vars_.begin(), shape_vars_.end(), [&](const Any& v) { return v.object() == dim.get(); })) {
          shape_vars_.push_back(Any(dim));
        }
      }
    } else if (const auto* t = type.as<ir::TupleTypeNode>()) {
      for (const Any& f : t->fields) bind_shape_vars(f.cast<Type>());
    }
  }

  int32_t expr(const ir::Expr& e) {
    if (e.as<graph::LetNode>()) {
      // Iterative over let chains, which can be long.
      ir::Expr cur = e;
      while (const auto* l = cur.as<graph::LetNode>()) {
        vars_[l->var.get()] = expr(l->value);
        cur = l->body;
      }
      return expr(cur);
    }
    if (const auto* var = e.as<graph::VarNode>()) {
      auto found = vars_.find(var);
      if (found == vars_.end()) fail("%" + var->name + " is not bound");
      return found->second;
    }
    if (const auto* c = e.as<graph::ConstantNode>()) {
      int32_t r = new_register();
      emit(kConst, r, exe_.constant(Any(c->data)), 0, {});
      return r;
    }
    if (const auto* t = e.as<graph::TupleNode>()) {
      std::vector<int32_t> fields;
      for (const Any& f : t->fields) fields.push_back(expr(f.cast<ir::Expr>()));
      int32_t r = new_register();
      emit(kTuple, r, 0, 0, fields);
      return r;
    }
    if (const auto* g = e.as<graph::TupleGetItemNode>()) {
      int32_t tuple = expr(g->tuple);
      int32_t r = new_register();
      emit(kGetItem, r, tuple, static_cast<int32_t>(g->index), {});
      return r;
    }
    if (const auto* i = e.as<graph::IfNode>()) {
      int32_t cond = expr(i->cond);
      size_t branch = emit(kIfNot, -1, cond, 0, {});
      int32_t r = new_register();
      emit(kMove, r, expr(i->then_branch), 0, {});
      size_t jump = emit(kGoto, -1, 0, 0, {});
      code_[branch].b = static_cast<int32_t>(code_.size());
      emit(kMove, r, expr(i->else_branch), 0, {});
      code_[jump].a = static_cast<int32_t>(code_.size());
      return r;
    }
    if (const auto* call = e.as<graph::CallNode>()) return call_expr(*call);
    if (const auto* g = e.as<ir::GlobalVarNode>()) fail("@" + g->name + " is used as a value; the VM calls functions");
    if (const auto* op = e.as<ir::OpNode>()) fail("operator '" + op->name + "' is used as a value");
    fail("cannot run a " + std::string(e->type_key()));
  }

  std::vector<int32_t> tuple_fields(const ir::Expr& e, const std::string& what) {
    const auto* t = e.as<graph::TupleNode>();
    if (!t) fail(what + " must be a tuple of arguments");
    std::vector<int32_t> out;
    for (const Any& f : t->fields) out.push_back(expr(f.cast<ir::Expr>()));
    return out;
  }

  int32_t alloc(const Type& type, const std::string& what) {
    const auto* t = type.as<ir::TensorTypeNode>();
    if (!t) fail(what + " must be a tensor, got " + ir::to_text(Any(type)));
    if (t->unknown_rank()) fail(what + " has no known shape (" + ir::to_text(Any(type)) + ")");
    std::vector<ObjectRef> shape;
    for (const Any& d : t->shape) {
      ObjectRef dim = d.as_object_ref();
      std::vector<const Object*> used;
      try {
        shape_vars_of(dim, used);
      } catch (const Error& e) {
        fail(what + ": " + e.what());
      }
      for (const Object* v : used) {
        if (std::none_of(shape_vars_.begin(), shape_vars_.end(), [&](const Any& s) { return s.object() == v; })) {
          fail(what + " has the dimension " + ir::to_text(Any(dim)) + ", and no parameter's shape binds %" +
               static_cast<const tir::VarNode*>(v)->name);
        }
      }
      shape.push_back(dim);
    }
    int32_t r = new_register();
    size_t pos = emit(kAlloc, r, static_cast<int32_t>(allocs_.size()), 0, {});
    allocs_.push_back(PendingAlloc{t->dtype, std::move(shape), r, pos});
    return r;
  }

  int32_t call_expr(const graph::CallNode& call) {
    if (const auto* op = call.callee.as<ir::OpNode>()) {
      if (op->name == "call_dps") {
        const auto* g = call.args[0].as_object_ref().as<ir::GlobalVarNode>();
        if (!g) fail("call_dps needs a global function");
        std::string what = "the output of call_dps @" + g->name;
        std::vector<int32_t> args = tuple_fields(call.args[1].cast<ir::Expr>(), "the inputs of call_dps @" + g->name);
        Type out = call.type_args[0].cast<Type>();
        int32_t result;
        if (const auto* tuple = out.as<ir::TupleTypeNode>()) {
          std::vector<int32_t> outs;
          for (const Any& f : tuple->fields) outs.push_back(alloc(f.cast<Type>(), what));
          args.insert(args.end(), outs.begin(), outs.end());
          result = new_register();
          emit(kCallDPS, -1, exe_.callee("dps:" + g->name), 0, args);
          emit(kTuple, result, 0, 0, outs);
        } else {
          result = alloc(out, what);
          args.push_back(result);
          emit(kCallDPS, -1, exe_.callee("dps:" + g->name), 0, args);
        }
        return result;
      }
      if (op->name == "call_packed") {
        std::string name = call.attrs.at("name").as_string();
        std::vector<int32_t> args = tuple_fields(call.args[0].cast<ir::Expr>(), "the arguments of call_packed");
        int32_t r = new_register();
        types_.push_back(call.type_args[0]);
        emit(kCallPacked, r, exe_.callee("packed:" + name), static_cast<int32_t>(types_.size() - 1), args);
        return r;
      }
      fail("operator '" + op->name + "' must be lowered before the VM runs it (LegalizeOps turns operators into "
           "call_dps of prim functions)");
    }
    if (const auto* g = call.callee.as<ir::GlobalVarNode>()) {
      auto found = graph_functions_.find(g->name);
      if (found == graph_functions_.end()) {
        fail("@" + g->name + " is not a graph function; call prim and extern functions through call_dps");
      }
      std::vector<int32_t> args;
      for (const Any& a : call.args) args.push_back(expr(a.cast<ir::Expr>()));
      int32_t r = new_register();
      emit(kCallGraph, r, found->second, 0, args);
      return r;
    }
    fail("calls of local function values are not supported; call global functions");
  }

  // ---- memory plan ----
  // Registers that may hold the same tensor are one class (moves, tuples
  // and their items, results of calls that may return an argument); a
  // class lives from its first to its last appearance in the code, which
  // only jumps forward, so no path uses a tensor outside that interval.
  int find(std::vector<int>& parent, int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }

  void plan(VMFunctionDefNode& def) {
    std::vector<int> parent(num_registers_);
    std::iota(parent.begin(), parent.end(), 0);
    auto unite = [&](int a, int b) { parent[find(parent, a)] = find(parent, b); };
    for (const Instr& in : code_) {
      if (in.op == kMove || in.op == kGetItem) unite(in.dst, in.a);
      if (in.op == kTuple || in.op == kCallGraph || in.op == kCallPacked)
        for (int32_t r : in.args) unite(in.dst, r);
    }
    std::vector<size_t> first(num_registers_, SIZE_MAX), last(num_registers_, 0);
    std::vector<bool> escapes(num_registers_, false);
    auto touch = [&](int32_t r, size_t pos) {
      int c = find(parent, r);
      first[c] = std::min(first[c], pos);
      last[c] = std::max(last[c], pos);
    };
    for (size_t pos = 0; pos < code_.size(); ++pos) {
      const Instr& in = code_[pos];
      if (in.dst >= 0) touch(in.dst, pos);
      for (int32_t r : in.args) touch(r, pos);
      if (in.op == kMove || in.op == kGetItem || in.op == kIfNot || in.op == kRet) touch(in.a, pos);
      if (in.op == kRet) escapes[find(parent, in.a)] = true;
    }

    struct Storage {
      std::optional<int64_t> bytes;  // constant size
      std::string key;               // symbolic size, compared by structure
      ObjectRef size;
      size_t busy_until;
    };
    std::vector<Storage> storages;
    std::vector<Any> alloc_nodes;
    for (const PendingAlloc& a : allocs_) {
      auto node = make_object<VMAllocNode>();
      node->dtype = a.dtype;
      node->shape = Array(std::vector<Any>(a.shape.begin(), a.shape.end()));
      int c = find(parent, a.reg);
      if (!escapes[c]) node->storage = assign(storages, a, first[c], last[c]);
      alloc_nodes.push_back(Any(ObjectRef(node)));
    }
    def.allocs = Array(alloc_nodes);
    std::vector<Any> sizes;
    for (const Storage& s : storages) sizes.push_back(Any(s.size));
    def.storage_sizes = Array(sizes);
  }

  template <class Storage>
  int64_t assign(std::vector<Storage>& storages, const PendingAlloc& a, size_t start, size_t end) {
    ObjectRef size = byte_size(a.dtype, a.shape);
    std::optional<int64_t> bytes = constant_of(size);
    std::string key = bytes ? "" : shape_key(size);
    int best = -1;
    for (size_t i = 0; i < storages.size(); ++i) {
      const Storage& s = storages[i];
      if (s.busy_until >= start) continue;
      if (bytes && s.bytes) {
        // Best fit: the smallest that holds it, else the largest (grown).
        if (best < 0) {
          best = static_cast<int>(i);
          continue;
        }
        const Storage& b = storages[best];
        bool fits = *s.bytes >= *bytes, best_fits = *b.bytes >= *bytes;
        if ((fits && (!best_fits || *s.bytes < *b.bytes)) || (!fits && !best_fits && *s.bytes > *b.bytes)) {
          best = static_cast<int>(i);
        }
      } else if (!bytes && !s.bytes && s.key == key) {
        best = static_cast<int>(i);
        break;
      }
    }
    if (best < 0) {
      storages.push_back(Storage{bytes, key, size, end});
      return static_cast<int64_t>(storages.size() - 1);
    }
    Storage& s = storages[best];
    if (bytes && *bytes > *s.bytes) {
      s.bytes = bytes;
      s.size = size;
    }
    s.busy_until = end;
    return best;
  }

  static std::string shape_key(const ObjectRef& e) {
    if (const auto* i = e.as<tir::IntImmNode>()) return std::to_string(i->value);
    if (e.as<tir::VarNode>()) {
      std::ostringstream s;
      s << "v" << e.get();
      return s.str();
    }
    const auto* b = e.as<tir::BinaryOpNode>();
    return std::string("(") + e->type_key() + " " + shape_key(b->a) + " " + shape_key(b->b) + ")";
  }

  std::string name_;
  ExecutableBuilder& exe_;
  const std::map<std::string, int>& graph_functions_;
  std::unordered_map<const Object*, int32_t> vars_;
  std::vector<Any> shape_vars_;
  std::vector<Instr> code_;
  std::vector<PendingAlloc> allocs_;
  std::vector<Any> types_;
  int32_t num_registers_ = 0;
};

int64_t threads_of(const ir::IRModule& module) {
  for (const char* key : {"host", "target"}) {
    if (!module->attrs.contains(key)) continue;
    target::Target target = module->attrs.at(key).cast<target::Target>();
    if (target.defined() && target->attrs.contains("num-threads")) return target->attrs.at("num-threads").as_int();
    return 0;
  }
  return 0;
}
}  // namespace

Module vm_compile(const ir::IRModule& input) {
  ir::IRModule module = ir::check_module(input);
  std::map<std::string, int> graph_functions;
  std::vector<std::string> names;
  for (const std::string& name : module.names()) {
    if (module.lookup(name).as<graph::FunctionNode>()) {
      graph_functions[name] = static_cast<int>(names.size());
      names.push_back(name);
    }
  }
  if (names.empty()) LOOM_THROW(Error) << "VM: the module has no graph function to compile";
  ExecutableBuilder builder;
  std::vector<Any> functions;
  for (const std::string& name : names) {
    FunctionCompiler compiler(name, builder, graph_functions);
    functions.push_back(Any(compiler.compile(*module.lookup(name).as<graph::FunctionNode>())));
  }
  auto exe = make_object<VMExecutableNode>();
  exe->functions = Array(functions);
  exe->constants = Array(builder.constants);
  exe->callees = Array(std::vector<Any>(builder.callees.begin(), builder.callees.end()));
  exe->num_threads = threads_of(module);
  return make_vm_module(ObjectRef(exe));
}

std::vector<ir::Type> param_types(const Module& vm, const std::string& function) {
  const auto* node = dynamic_cast<const VMModuleNode*>(vm.get());
  if (!node) LOOM_THROW(Error) << "param_types needs a VM module, got a " << vm->type_key() << " module";
  const auto* exe = node->executable.as<VMExecutableNode>();
  std::vector<std::string> names;
  for (const Any& fn : exe->functions) {
    const auto* def = fn.as_object_ref().as<VMFunctionDefNode>();
    names.push_back(def->name);
    if (def->name != function) continue;
    std::vector<ir::Type> out;
    for (const Any& t : def->param_types) out.push_back(t.is_none() ? ir::Type() : t.cast<ir::Type>());
    return out;
  }
  LOOM_THROW(LookupError) << "the VM module has no function @" << function << did_you_mean(function, names);
}

MemoryPlan memory_plan(const Module& vm, const std::string& function) {
  const auto* node = dynamic_cast<const VMModuleNode*>(vm.get());
  if (!node) LOOM_THROW(Error) << "memory_plan needs a VM module, got a " << vm->type_key() << " module";
  const auto* exe = node->executable.as<VMExecutableNode>();
  for (const Any& fn : exe->functions) {
    const auto* def = fn.as_object_ref().as<VMFunctionDefNode>();
    if (def->name != function) continue;
    MemoryPlan plan;
    plan.storages = static_cast<int64_t>(def->storage_sizes.size());
    // Sums as expressions, folded while constant.
    auto add = [](ObjectRef total, const ObjectRef& term) -> ObjectRef {
      auto a = constant_of(total), b = constant_of(term);
      if (a && b) return tir::IntImm(DataType::Int(64), *a + *b);
      if (a && *a == 0) return term;
      return tir::Add(tir::PrimExpr(total.object_ptr()), tir::PrimExpr(term.object_ptr()));
    };
    ObjectRef peak = tir::IntImm(DataType::Int(64), 0), naive = peak;
    for (const Any& s : def->storage_sizes) {
      ObjectRef size = s.as_object_ref();
      if (auto c = constant_of(size)) size = tir::IntImm(DataType::Int(64), static_cast<int64_t>(align_up(*c)));
      peak = add(peak, size);
    }
    for (const Any& a : def->allocs) {
      const auto* site = a.as_object_ref().as<VMAllocNode>();
      if (site->storage < 0) {
        ++plan.output_tensors;
        continue;
      }
      ++plan.planned_tensors;
      std::vector<ObjectRef> shape;
      for (const Any& d : site->shape) shape.push_back(d.as_object_ref());
      ObjectRef size = byte_size(site->dtype, shape);
      if (auto c = constant_of(size)) size = tir::IntImm(DataType::Int(64), static_cast<int64_t>(align_up(*c)));
      naive = add(naive, size);
    }
    plan.static_peak_bytes = constant_of(peak);
    plan.static_naive_bytes = constant_of(naive);
    plan.peak_bytes = plan.static_peak_bytes ? std::to_string(*plan.static_peak_bytes) : ir::to_text(Any(peak));
    plan.naive_bytes = plan.static_naive_bytes ? std::to_string(*plan.static_naive_bytes) : ir::to_text(Any(naive));
    return plan;
  }
  LOOM_THROW(LookupError) << "the VM module has no function '" << function << "'"
                          << did_you_mean(function, node->function_names());
}

}  // namespace loom::runtime
