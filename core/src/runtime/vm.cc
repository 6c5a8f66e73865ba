// The VM: the executable's runtime objects and the interpreter that runs
// it (docs/runtime.md, "VM").  The compiler that writes executables is
// loom/driver/vm_compiler.h; nothing here knows the IR.
//
// Executable (saved as JSON through the object system): the graph
// functions, each with its parameter types, flat bytecode, allocation
// sites, storages of the memory plan and the names of its shape variables;
// the constants; and the callees (a prim/extern function name or a
// registry function name).  Bytecode: every instruction is [op, dst, a, b,
// n, args...].
#include "loom/support/size.h"
#include "loom/support/stack.h"
#include "loom/runtime/vm.h"

#include "loom/runtime/profiler.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <sstream>

#include "loom/object/serialization.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/support/strings.h"

namespace loom::runtime {

LOOM_REGISTER_OBJECT(ShapeExprNode);
LOOM_REGISTER_OBJECT(VMTypeNode);
LOOM_REGISTER_OBJECT(VMAllocNode);
LOOM_REGISTER_OBJECT(VMFunctionDefNode);
LOOM_REGISTER_OBJECT(VMExecutableNode);

namespace {
constexpr size_t kStorageAlignment = 64;

size_t element_bytes(DataType t) { return static_cast<size_t>((t.bits + 7) / 8) * t.lanes; }
size_t align_up(size_t n) { return (n + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment; }

bool is_binary(ShapeOp op) { return op >= ShapeOp::kAdd && op <= ShapeOp::kMax; }
}  // namespace

// ---- shapes ------------------------------------------------------------------------------
ShapeExpr ShapeExpr::constant(int64_t value) {
  auto node = make_object<ShapeExprNode>();
  node->op = static_cast<int64_t>(ShapeOp::kConst);
  node->value = value;
  return ShapeExpr(node);
}

ShapeExpr ShapeExpr::var(int64_t slot) {
  auto node = make_object<ShapeExprNode>();
  node->op = static_cast<int64_t>(ShapeOp::kVar);
  node->value = slot;
  return ShapeExpr(node);
}

ShapeExpr ShapeExpr::binary(ShapeOp op, ShapeExpr a, ShapeExpr b) {
  if (!is_binary(op)) LOOM_THROW(Error) << "ShapeExpr::binary: not a binary operation";
  auto node = make_object<ShapeExprNode>();
  node->op = static_cast<int64_t>(op);
  node->a = std::move(a);
  node->b = std::move(b);
  return ShapeExpr(node);
}

std::optional<int64_t> ShapeExpr::as_constant() const {
  if (get()->shape_op() == ShapeOp::kConst) return get()->value;
  return std::nullopt;
}

namespace {
// An operand of a binary shape expression: a ShapeExprNode (the loader
// checks what it reads; one built by hand is checked here), compared by
// its exact type, without the registry's walk or a reference count.
const ShapeExprNode* shape_operand(const ObjectRef& r) {
  const Object* o = r.get();
  if (!o || o->type_index() != ShapeExprNode::runtime_type_index()) {
    LOOM_THROW(Error) << "a shape expression's operand is not a runtime.ShapeExpr";
  }
  return static_cast<const ShapeExprNode*>(o);
}

int64_t evaluate_node(const ShapeExprNode* n, const std::vector<int64_t>& values) {
  switch (n->shape_op()) {
    case ShapeOp::kConst:
      return n->value;
    case ShapeOp::kVar:
      if (n->value < 0 || static_cast<size_t>(n->value) >= values.size()) {
        LOOM_THROW(Error) << "shape variable " << n->value << " out of range";
      }
      if (values[n->value] == INT64_MIN) {  // InputChecker's mark: no input gave it a value
        LOOM_THROW(Error) << "shape variable " << n->value << " is not bound by any input";
      }
      return values[n->value];
    default:
      break;
  }
  int64_t x = evaluate_node(shape_operand(n->a), values), y = evaluate_node(shape_operand(n->b), values);
  int64_t out = 0;
  auto overflow = [&](const char* op) -> int64_t {
    LOOM_THROW(Error) << "a shape expression overflows 64 bits: " << x << " " << op << " " << y;
  };
  switch (n->shape_op()) {
    case ShapeOp::kAdd:
      return __builtin_add_overflow(x, y, &out) ? overflow("+") : out;
    case ShapeOp::kSub:
      return __builtin_sub_overflow(x, y, &out) ? overflow("-") : out;
    case ShapeOp::kMul:
      return __builtin_mul_overflow(x, y, &out) ? overflow("*") : out;
    case ShapeOp::kMin:
      return std::min(x, y);
    case ShapeOp::kMax:
      return std::max(x, y);
    default:
      break;
  }
  if (y == 0) LOOM_THROW(Error) << "division by zero in a shape expression";
  if (x == INT64_MIN && y == -1) return overflow("/");
  if (n->shape_op() == ShapeOp::kDiv) return x / y;
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // floor
  if (n->shape_op() == ShapeOp::kFloorDiv) return q;
  return x - q * y;  // kFloorMod
}
}  // namespace

int64_t evaluate(const ShapeExpr& e, const std::vector<int64_t>& values) { return evaluate_node(e.get(), values); }

namespace {
// The IR printer's precedences, so that texts read as the IR writes them.
std::string shape_text(const ShapeExpr& e, const std::vector<std::string>& names, int parent, bool right) {
  const ShapeExprNode* n = e.get();
  auto operand = [&](const ObjectRef& x, int precedence, bool is_right) {
    return shape_text(downcast<ShapeExpr>(x), names, precedence, is_right);
  };
  switch (n->shape_op()) {
    case ShapeOp::kConst:
      return std::to_string(n->value);
    case ShapeOp::kVar:
      return n->value >= 0 && static_cast<size_t>(n->value) < names.size() ? "%" + names[n->value]
                                                                           : "%v" + std::to_string(n->value);
    case ShapeOp::kMin:
      return "min(" + operand(n->a, 0, false) + ", " + operand(n->b, 0, false) + ")";
    case ShapeOp::kMax:
      return "max(" + operand(n->a, 0, false) + ", " + operand(n->b, 0, false) + ")";
    default:
      break;
  }
  static const char* symbols[] = {"", "", "+", "-", "*", "/", "//", "%"};
  int precedence = n->shape_op() == ShapeOp::kAdd || n->shape_op() == ShapeOp::kSub ? 4 : 5;
  std::string s = operand(n->a, precedence, false) + " " + symbols[n->op] + " " + operand(n->b, precedence, true);
  bool paren = precedence < parent || (precedence == parent && right);
  return paren ? "(" + s + ")" : s;
}
}  // namespace

std::string shape_expr_text(const ShapeExpr& e, const std::vector<std::string>& var_names) {
  return shape_text(e, var_names, 0, false);
}

ShapeExpr tensor_bytes(DataType dtype, const std::vector<ShapeExpr>& shape) {
  int64_t factor = static_cast<int64_t>(element_bytes(dtype));
  ShapeExpr symbolic;
  for (const ShapeExpr& d : shape) {
    if (auto c = d.as_constant()) {
      factor *= *c;
    } else {
      symbolic = symbolic.defined() ? ShapeExpr::binary(ShapeOp::kMul, symbolic, d) : d;
    }
  }
  ShapeExpr constant = ShapeExpr::constant(factor);
  if (!symbolic.defined()) return constant;
  return ShapeExpr::binary(ShapeOp::kMul, symbolic, constant);
}

// ---- types -------------------------------------------------------------------------------
namespace {
ObjectPtr<VMTypeNode> make_type(VMTypeKind kind) {
  auto node = make_object<VMTypeNode>();
  node->kind = static_cast<int64_t>(kind);
  node->fields = Array(std::vector<Any>{});
  return node;
}
}  // namespace

VMType VMType::any() { return VMType(make_type(VMTypeKind::kAny)); }

VMType VMType::tensor(DataType dtype, std::optional<std::vector<ShapeExpr>> shape) {
  auto node = make_type(VMTypeKind::kTensor);
  node->dtype = dtype;
  if (shape) node->shape = Array(std::vector<Any>(shape->begin(), shape->end()));
  return VMType(node);
}

VMType VMType::tuple(std::vector<VMType> fields) {
  auto node = make_type(VMTypeKind::kTuple);
  node->fields = Array(std::vector<Any>(fields.begin(), fields.end()));
  return VMType(node);
}

VMType VMType::scalar(DataType dtype) {
  auto node = make_type(VMTypeKind::kScalar);
  node->dtype = dtype;
  return VMType(node);
}

std::string vm_type_text(const VMType& type, const std::vector<std::string>& var_names) {
  const VMTypeNode* t = type.get();
  switch (t->type_kind()) {
    case VMTypeKind::kAny:
      return "any";
    case VMTypeKind::kScalar:
      return t->dtype.to_string();
    case VMTypeKind::kTensor: {
      std::string shape = "?";
      if (t->shape.defined()) {
        shape = "(";
        for (size_t i = 0; i < t->shape.size(); ++i) {
          shape += (i ? ", " : "") + shape_expr_text(t->shape[i].cast<ShapeExpr>(), var_names);
        }
        shape += ")";
      }
      return "Tensor[" + shape + ", " + t->dtype.to_string() + "]";
    }
    case VMTypeKind::kTuple: {
      std::string s = "(";
      for (size_t i = 0; i < t->fields.size(); ++i) {
        s += (i ? ", " : "") + with_stack([&] { return vm_type_text(t->fields[i].cast<VMType>(), var_names); });
      }
      return s + (t->fields.size() == 1 ? ",)" : ")");
    }
  }
  return "?";
}

namespace {
// ---- runtime form -------------------------------------------------------------------------
struct Instr {
  int32_t op, dst, a, b;
  std::vector<int32_t> args;
};

struct AllocSite {
  DataType dtype;
  std::vector<ShapeExpr> shape;
  std::optional<std::vector<int64_t>> static_shape;
  Array static_shape_array;  // shared by every tensor of a static site
  int32_t storage;
  uint64_t static_bytes = 0;  // of a static shape
  int32_t device = 0;         // in the device table
};

struct FunctionRt {
  std::string name;
  std::vector<std::string> param_names;
  std::vector<VMType> param_types;
  int32_t num_registers = 0;
  std::vector<Instr> code;
  std::vector<AllocSite> allocs;
  std::vector<ShapeExpr> storage_sizes;
  // Each storage's device; the host's are placed in one arena, each of
  // another device's is a buffer of its own (a kernel takes no offset).
  std::vector<int32_t> storage_device;
  bool device_storages = false;
  std::vector<size_t> static_offsets;  // when every storage size is constant
  size_t static_arena = 0;
  bool static_plan = true;
  std::vector<std::vector<int32_t>> param_devices;  // besides the host, per parameter
  std::vector<VMType> types;
  std::vector<std::string> shape_vars;
};

// A malformed executable is reported, never run: every node has the type
// and fields the interpreter relies on.
class Decoder {
 public:
  Decoder(const VMFunctionDefNode& def, size_t num_devices) : def_(def), num_devices_(num_devices) {}

  FunctionRt decode() {
    FunctionRt f;
    f.name = def_.name;
    for (const Any& v : def_.shape_vars) {
      if (v.kind() != AnyKind::kStr) bad("a shape variable name is not a string");
      f.shape_vars.push_back(v.as_string());
    }
    for (const Any& n : def_.param_names) {
      if (n.kind() != AnyKind::kStr) bad("a parameter name is not a string");
      f.param_names.push_back(n.as_string());
    }
    for (const Any& t : def_.param_types) f.param_types.push_back(type(t));
    if (f.param_types.size() != f.param_names.size()) bad("parameter names and types differ in number");
    f.num_registers = static_cast<int32_t>(def_.num_registers);
    if (def_.num_registers < 0 || def_.num_registers > INT32_MAX) bad("bad register count");
    if (static_cast<int64_t>(f.param_types.size()) > def_.num_registers) bad("more parameters than registers");
    std::vector<int32_t> flat;
    for (const Any& v : def_.code) {
      if (v.kind() != AnyKind::kInt || v.as_int() < INT32_MIN || v.as_int() > INT32_MAX)
        bad("the code holds a non-integer");
      flat.push_back(static_cast<int32_t>(v.as_int()));
    }
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
      if (in.op < kVMConst || in.op > kVMDim) bad("unknown opcode " + std::to_string(in.op));
      if (in.op != kVMCallDPS && in.op != kVMIfNot && in.op != kVMGoto && in.op != kVMRet) check_reg(in.dst);
      f.code.push_back(std::move(in));
      pc += 5 + n;
    }
    for (const Instr& in : f.code) {
      if ((in.op == kVMIfNot && (in.b < 0 || in.b >= static_cast<int32_t>(f.code.size()))) ||
          (in.op == kVMGoto && (in.a < 0 || in.a >= static_cast<int32_t>(f.code.size())))) {
        bad("jump out of range");
      }
      if (reads_register_a(in.op)) check_reg(in.a);
      if (in.op == kVMConst) device(in.b);
    }
    if (f.code.empty() || f.code.back().op != kVMRet) bad("the code does not end with a return");
    for (const Any& s : def_.storage_sizes) {
      f.storage_sizes.push_back(shape(s));
      if (auto bytes = f.storage_sizes.back().as_constant()) {
        if (*bytes < 0 || static_cast<uint64_t>(*bytes) > kMaxTensorBytes) {
          bad("storage " + std::to_string(f.storage_sizes.size() - 1) + " has " + std::to_string(*bytes) + " bytes");
        }
      } else {
        f.static_plan = false;
      }
    }
    f.storage_device.assign(f.storage_sizes.size(), 0);
    if (def_.storage_devices.defined() && def_.storage_devices.size()) {
      if (def_.storage_devices.size() != f.storage_sizes.size()) bad("storage devices and sizes differ in number");
      for (size_t k = 0; k < f.storage_sizes.size(); ++k) {
        f.storage_device[k] = device(def_.storage_devices[k]);
        f.device_storages |= f.storage_device[k] != 0;
      }
    }
    if (def_.param_devices.defined() && def_.param_devices.size()) {
      if (def_.param_devices.size() != f.param_names.size()) bad("parameter devices and names differ in number");
      for (const Any& list : def_.param_devices) {
        const auto* a = dynamic_cast<const ArrayNode*>(list.object());
        if (!a) bad("a parameter's devices are not a list");
        f.param_devices.emplace_back();
        for (const Any& d : a->items) f.param_devices.back().push_back(device(d));
      }
    } else {
      f.param_devices.resize(f.param_names.size());
    }
    if (f.static_plan) {
      for (size_t k = 0; k < f.storage_sizes.size(); ++k) {
        f.static_offsets.push_back(f.static_arena);
        if (f.storage_device[k] != 0) continue;  // a buffer of its own
        f.static_arena += align_up(static_cast<size_t>(*f.storage_sizes[k].as_constant()));
        if (f.static_arena > kMaxTensorBytes) bad("the storages add up to more than Loom allocates");
      }
    }
    for (const Any& a : def_.allocs) {
      const auto* node = dynamic_cast<const VMAllocNode*>(a.object());
      if (!node) bad("an allocation site is not a runtime.VMAlloc");
      AllocSite site{node->dtype, {}, std::vector<int64_t>{}, Array(), static_cast<int32_t>(node->storage)};
      if (node->storage < -1 || node->storage >= static_cast<int64_t>(f.storage_sizes.size())) {
        bad("an allocation names a missing storage");
      }
      site.device = device(Any(node->device));
      if (node->storage >= 0 && f.storage_device[node->storage] != site.device) {
        bad("an allocation is on another device than its storage " + std::to_string(node->storage));
      }
      for (const Any& d : node->shape) {
        site.shape.push_back(shape(d));
        if (auto c = site.shape.back().as_constant()) {
          if (site.static_shape) site.static_shape->push_back(*c);
        } else {
          site.static_shape.reset();
        }
      }
      if (site.static_shape) {
        site.static_shape_array = Array(std::vector<Any>(site.static_shape->begin(), site.static_shape->end()));
        std::string what = "allocation " + std::to_string(f.allocs.size());
        try {
          site.static_bytes = checked_nbytes(*site.static_shape, static_cast<int>(element_bytes(site.dtype)), what);
        } catch (const Error& e) {
          bad(e.what());
        }
        if (site.storage >= 0) {
          if (auto room = f.storage_sizes[site.storage].as_constant(); room && site.static_bytes > uint64_t(*room)) {
            bad(what + " needs " + std::to_string(site.static_bytes) + " bytes; its storage " +
                std::to_string(site.storage) + " has " + std::to_string(*room));
          }
        }
      }
      f.allocs.push_back(std::move(site));
    }
    for (const Any& t : def_.types) f.types.push_back(type(t));
    return f;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    LOOM_THROW(Error) << "VM function '" << def_.name << "': " << why;
  }

  int32_t device(const Any& index) const {
    if (index.kind() != AnyKind::kInt || index.as_int() < 0 || static_cast<uint64_t>(index.as_int()) >= num_devices_) {
      bad("device " + index.describe() + " is not in the device table of " + std::to_string(num_devices_));
    }
    return static_cast<int32_t>(index.as_int());
  }

  // Shape expressions the compiler writes are a few levels deep, but a sum
  // of sizes the data decides grows with the model (a detector's concat of
  // 90 per-class results); the interpreter evaluates them recursively.
  static constexpr int kMaxShapeDepth = 1024;

  ShapeExpr shape(const Any& value, int depth = 0) {
    const auto* n = dynamic_cast<const ShapeExprNode*>(value.object());
    if (!n) bad("a shape is not a runtime.ShapeExpr: " + value.describe());
    if (depth > kMaxShapeDepth) bad("a shape expression nests deeper than " + std::to_string(kMaxShapeDepth));
    if (n->shape_op() == ShapeOp::kVar && (n->value < 0 || static_cast<size_t>(n->value) >= def_.shape_vars.size())) {
      bad("a shape names variable " + std::to_string(n->value) + " of " + std::to_string(def_.shape_vars.size()));
    }
    if (n->shape_op() != ShapeOp::kConst && n->shape_op() != ShapeOp::kVar) {
      if (!is_binary(n->shape_op())) bad("a shape has the unknown operation " + std::to_string(n->op));
      shape(Any(n->a), depth + 1);
      shape(Any(n->b), depth + 1);
    }
    return ShapeExpr(ObjectPtr<Object>(const_cast<ShapeExprNode*>(n)));
  }

  VMType type(const Any& value) {
    const auto* t = dynamic_cast<const VMTypeNode*>(value.object());
    if (!t) bad("a type is not a runtime.VMType: " + value.describe());
    if (t->kind < 0 || t->kind > static_cast<int64_t>(VMTypeKind::kScalar))
      bad("a type has the unknown kind " + std::to_string(t->kind));
    if (t->shape.defined())
      for (const Any& d : t->shape) shape(d);
    for (const Any& f : t->fields) type(f);
    return VMType(ObjectPtr<Object>(const_cast<VMTypeNode*>(t)));
  }

  const VMFunctionDefNode& def_;
  size_t num_devices_;
};

// An arena: the storages of one call, as workspace blocks (one on the
// host, one per storage on another device).
class ArenaNode : public Object {
 public:
  std::vector<std::pair<Device, void*>> blocks;
  ~ArenaNode() override {
    for (const auto& [device, data] : blocks) DeviceAPIRegistry::get(device).free_workspace(device, data);
  }
  void* add(Device device, size_t bytes) {
    blocks.reserve(blocks.size() + 1);
    void* data = DeviceAPIRegistry::get(device).alloc_workspace(device, bytes);
    blocks.emplace_back(device, data);
    return data;
  }
  LOOM_OBJECT(ArenaNode, Object, "runtime.VMArena");
};

bool truthy(const Any& v, const std::string& function) {
  auto where = [&] { return "@" + function; };
  if (v.kind() == AnyKind::kBool) return v.as_bool();
  if (v.kind() == AnyKind::kInt) return v.as_int() != 0;
  if (const auto* a = dynamic_cast<const NDArrayNode*>(v.object())) {
    if (a->numel() != 1 || a->device.device_type != Device::kCPU) {
      LOOM_THROW(Error) << where() << ": the condition of an If must be a one-element host tensor, got " << a->numel()
                        << " elements on " << a->device.to_string();
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
  const std::vector<Device>& devices;
  std::vector<int64_t> bound;
  std::vector<int> bound_by;

  InputChecker(const FunctionRt& fn, const std::vector<Device>& table)
      : f(fn), devices(table), bound(fn.shape_vars.size(), INT64_MIN), bound_by(fn.shape_vars.size(), -1) {}

  std::vector<std::string> result_binders;  // by slot: the call_packed whose result bound it

  std::string argument(int i) const {
    return "@" + f.name + ": argument " + std::to_string(i) + " (%" + f.param_names[i] + ")";
  }
  // What bound the variable in `slot`: an argument or a call's result.
  std::string binder(int64_t slot) const {
    if (bound_by[slot] >= 0) return argument(bound_by[slot]);
    if (bound_by[slot] == -2) return "the result of " + result_binders[slot];
    return "@" + f.name + "'s arguments";
  }
  std::string text(const VMType& type) const { return vm_type_text(type, f.shape_vars); }

  // `top`: the value is the argument itself (not a field of it).
  void check(const Any& value, const VMType& type, const Label& what, int arg, bool top = true) {
    const VMTypeNode* t = type.get();
    switch (t->type_kind()) {
      case VMTypeKind::kAny:
        return;
      case VMTypeKind::kTensor:
        return check_tensor(value, type, what, arg, top);
      case VMTypeKind::kTuple: {
        const auto* a = dynamic_cast<const ArrayNode*>(value.object());
        if (!a || a->items.size() != t->fields.size()) {
          LOOM_THROW(TypeError) << what() << " must be a tuple of " << t->fields.size() << " values, got "
                                << value.describe();
        }
        for (size_t i = 0; i < t->fields.size(); ++i) {
          with_stack([&] {
            check(
                a->items[i], t->fields[i].cast<VMType>(), [&] { return what() + " field " + std::to_string(i); }, arg,
                false);
          });
        }
        return;
      }
      case VMTypeKind::kScalar: {
        bool ok =
            t->dtype.code == DataType::kFloat
                ? value.kind() == AnyKind::kFloat || value.kind() == AnyKind::kInt
                : (t->dtype.code == DataType::kBool ? value.kind() == AnyKind::kBool : value.kind() == AnyKind::kInt);
        if (!ok)
          LOOM_THROW(TypeError) << what() << " must be a " << t->dtype.to_string() << ", got " << value.describe();
        return;
      }
    }
  }

  void check_tensor(const Any& value, const VMType& type, const Label& what, int arg, bool top) {
    const VMTypeNode* t = type.get();
    const auto* a = dynamic_cast<const NDArrayNode*>(value.object());
    if (!a) LOOM_THROW(TypeError) << what() << " must be a tensor of " << text(type) << ", got " << value.describe();
    if (a->dtype != t->dtype) {
      LOOM_THROW(TypeError) << what() << " has dtype " << a->dtype.to_string() << "; expected " << t->dtype.to_string();
    }
    if (a->device.device_type != Device::kCPU) {
      // On the one device the function only copies it to: used as it is.
      const std::vector<int32_t> none;
      const std::vector<int32_t>& also = top ? f.param_devices[arg] : none;
      bool ok = std::any_of(also.begin(), also.end(), [&](int32_t d) { return devices[d] == a->device; });
      if (!ok) {
        std::string where = "cpu:0";
        for (int32_t d : also) where += " or " + devices[d].to_string();
        LOOM_THROW(Error) << what() << " is on " << a->device.to_string() << "; @" << f.name << " takes it on "
                          << where;
      }
    }
    if (!a->is_contiguous()) {
      LOOM_THROW(Error) << what() << " is not contiguous; compiled code needs compact row-major tensors";
    }
    if (!t->shape.defined()) return;
    const DLTensor& dl = a->dl_tensor();
    auto shape = [&] { return loom::shape_text(std::vector<int64_t>(dl.shape, dl.shape + dl.ndim)); };
    if (static_cast<size_t>(dl.ndim) != t->shape.size()) {
      LOOM_THROW(TypeError) << what() << " has shape " << shape() << "; expected " << text(type);
    }
    for (int i = 0; i < dl.ndim; ++i) {
      const auto* dim = static_cast<const ShapeExprNode*>(t->shape[i].object());
      if (dim->shape_op() == ShapeOp::kConst) {
        if (dim->value != dl.shape[i]) {
          LOOM_THROW(TypeError) << what() << " has shape " << shape() << "; expected " << text(type) << " (dimension "
                                << i << " must be " << dim->value << ")";
        }
      } else if (dim->shape_op() == ShapeOp::kVar) {
        int64_t slot = dim->value;
        if (bound[slot] == INT64_MIN) {
          bound[slot] = dl.shape[i];
          bound_by[slot] = arg;
        } else if (bound[slot] != dl.shape[i]) {
          LOOM_THROW(TypeError) << what() << " has shape " << shape() << "; expected " << text(type) << " (dimension "
                                << i << " is " << dl.shape[i] << ", but %" << f.shape_vars[slot] << " is "
                                << bound[slot] << " from " << binder(slot) << ")";
        }
      }
    }
  }

  // A composite dimension as scale * %var + offset where %var is the one
  // unbound variable in it (the others count as constants): {slot, scale,
  // offset}, or nullopt.
  struct Linear {
    int64_t slot = -1, scale = 0, offset = 0;
  };
  std::optional<Linear> linear(const ShapeExprNode* e) const {
    switch (e->shape_op()) {
      case ShapeOp::kConst:
        return Linear{-1, 0, e->value};
      case ShapeOp::kVar:
        if (bound[e->value] != INT64_MIN) return Linear{-1, 0, bound[e->value]};
        return Linear{e->value, 1, 0};
      default:
        break;
    }
    auto a = linear(static_cast<const ShapeExprNode*>(e->a.get()));
    auto b = linear(static_cast<const ShapeExprNode*>(e->b.get()));
    if (!a || !b || (a->slot >= 0 && b->slot >= 0 && a->slot != b->slot)) return std::nullopt;
    int64_t slot = std::max(a->slot, b->slot);
    switch (e->shape_op()) {
      case ShapeOp::kAdd:
        return Linear{slot, a->scale + b->scale, a->offset + b->offset};
      case ShapeOp::kSub:
        return Linear{slot, a->scale - b->scale, a->offset - b->offset};
      case ShapeOp::kMul:
        if (a->scale != 0 && b->scale != 0) return std::nullopt;
        return Linear{slot, a->scale * b->offset + b->scale * a->offset, a->offset * b->offset};
      default:
        return std::nullopt;
    }
  }

  // Whether `e` mentions a variable that no input has bound (bind_linear
  // found no dimension linear in it that fits).
  bool unbound(const ShapeExprNode* e) const {
    if (e->shape_op() == ShapeOp::kConst) return false;
    if (e->shape_op() == ShapeOp::kVar) return bound[e->value] == INT64_MIN;
    return unbound(static_cast<const ShapeExprNode*>(e->a.get())) ||
           unbound(static_cast<const ShapeExprNode*>(e->b.get()));
  }

  // Binds a variable that only composite dimensions mention (a fused
  // function over a reshape's (%n * 128, 256)) from the first such
  // dimension that is linear in it; the checks of check_composite follow.
  void bind_linear(const Any& value, const VMType& type) {
    const VMTypeNode* t = type.get();
    if (t->type_kind() == VMTypeKind::kTuple) {
      const auto* a = static_cast<const ArrayNode*>(value.object());
      for (size_t i = 0; i < t->fields.size(); ++i) bind_linear(a->items[i], t->fields[i].cast<VMType>());
      return;
    }
    if (t->type_kind() != VMTypeKind::kTensor || !t->shape.defined()) return;
    const auto* a = static_cast<const NDArrayNode*>(value.object());
    for (size_t i = 0; i < t->shape.size(); ++i) {
      const auto* dim = static_cast<const ShapeExprNode*>(t->shape[i].object());
      if (dim->shape_op() == ShapeOp::kConst || dim->shape_op() == ShapeOp::kVar) continue;
      auto form = linear(dim);
      if (!form || form->slot < 0 || form->scale == 0) continue;
      int64_t rest = a->dl_tensor().shape[i] - form->offset;
      // An inexact division is left to check_composite, which names the
      // dimension and what it should be.
      if (rest % form->scale == 0) bound[form->slot] = rest / form->scale;
    }
  }

  // A call_packed result against its declared type: its dtype, rank and
  // constant dimensions; a lone variable no input or earlier result has
  // bound is bound by it (a shape the data decides: NonZero's count), the
  // others must agree (docs/runtime.md, "Shapes the data decides").
  void bind_result(const Any& value, const VMType& type, const std::string& what) {
    const VMTypeNode* t = type.get();
    auto wrong = [&]() {
      const auto* a = dynamic_cast<const NDArrayNode*>(value.object());
      std::string shape = a ? " of shape " +
                                  loom::shape_text(std::vector<int64_t>(a->dl_tensor().shape,
                                                                        a->dl_tensor().shape + a->dl_tensor().ndim)) +
                                  " " + a->dtype.to_string()
                            : "";
      LOOM_THROW(TypeError) << what << " returned " << value.describe() << shape << "; expected " << text(type);
    };
    if (t->type_kind() == VMTypeKind::kTuple) {
      const auto* a = dynamic_cast<const ArrayNode*>(value.object());
      if (!a || a->items.size() != t->fields.size()) wrong();
      for (size_t i = 0; i < t->fields.size(); ++i) {
        with_stack([&] { bind_result(a->items[i], t->fields[i].cast<VMType>(), what); });
      }
      return;
    }
    if (t->type_kind() != VMTypeKind::kTensor) return;
    const auto* a = dynamic_cast<const NDArrayNode*>(value.object());
    if (!a || a->dtype != t->dtype) wrong();
    if (!t->shape.defined()) return;
    const DLTensor& dl = a->dl_tensor();
    if (static_cast<size_t>(dl.ndim) != t->shape.size()) wrong();
    for (int i = 0; i < dl.ndim; ++i) {
      const auto* dim = static_cast<const ShapeExprNode*>(t->shape[i].object());
      if (dim->shape_op() == ShapeOp::kConst && dim->value != dl.shape[i]) wrong();
      if (dim->shape_op() != ShapeOp::kVar) continue;
      int64_t slot = dim->value;
      if (bound[slot] == INT64_MIN) {
        bound[slot] = dl.shape[i];
        bound_by[slot] = -2;
        result_binders.resize(bound.size());
        result_binders[slot] = what;
      } else if (bound[slot] != dl.shape[i]) {
        LOOM_THROW(TypeError) << what << " returned a tensor of shape "
                              << loom::shape_text(std::vector<int64_t>(dl.shape, dl.shape + dl.ndim)) << "; expected "
                              << text(type) << " (dimension " << i << " is " << dl.shape[i] << ", but %"
                              << f.shape_vars[slot] << " is " << bound[slot] << " from " << binder(slot) << ")";
      }
    }
    bind_linear(value, type);
    check_composite(value, type, [&] { return what + "'s result"; });
  }

  // Composite dimensions (not a constant or a lone variable), once every
  // variable is bound.
  void check_composite(const Any& value, const VMType& type, const Label& what) {
    const VMTypeNode* t = type.get();
    if (t->type_kind() == VMTypeKind::kTensor) {
      if (!t->shape.defined()) return;
      const auto* a = static_cast<const NDArrayNode*>(value.object());
      for (size_t i = 0; i < t->shape.size(); ++i) {
        ShapeExpr dim = t->shape[i].cast<ShapeExpr>();
        if (dim->shape_op() == ShapeOp::kConst || dim->shape_op() == ShapeOp::kVar) continue;
        if (unbound(dim.get())) {
          LOOM_THROW(Error) << what() << ": dimension " << i << " is " << a->dl_tensor().shape[i] << ", which is not "
                            << shape_expr_text(dim, f.shape_vars) << " for any whole value of its variables";
        }
        int64_t want = evaluate(dim, bound), got = a->dl_tensor().shape[i];
        if (want != got) {
          LOOM_THROW(Error) << what() << ": dimension " << i << " is " << got << "; expected "
                            << shape_expr_text(dim, f.shape_vars) << " = " << want;
        }
      }
    } else if (t->type_kind() == VMTypeKind::kTuple) {
      const auto* a = static_cast<const ArrayNode*>(value.object());
      for (size_t i = 0; i < t->fields.size(); ++i) {
        with_stack([&] { check_composite(a->items[i], t->fields[i].cast<VMType>(), what); });
      }
    }
  }
};

// ---- the VM module --------------------------------------------------------------------------
class VMModuleNode : public ModuleNode {
 public:
  ObjectRef executable;
  std::vector<FunctionRt> functions;
  std::vector<Any> constants;
  std::vector<std::string> callees;
  std::vector<int64_t> callee_flops;  // per callee, one call's float operations (-1: unknown)
  std::vector<Device> devices;        // the device table; devices[0] is the host

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
      return Function(
          [self, i](const Any* args, int32_t n) -> Any {
            return static_cast<const VMModuleNode*>(self.get())->invoke(i, args, n);
          },
          name);
    }
    return std::nullopt;
  }
  std::string save_to_binary() const override { return save_binary(Any(executable)); }
  std::vector<std::string> describe() const override;
  std::string inspect_source(const std::string& format) const override {
    if (format == "bytecode") return disassemble();
    return ModuleNode::inspect_source(format);
  }

  const FunctionRt& function(const std::string& name) const {
    for (const FunctionRt& f : functions)
      if (f.name == name) return f;
    LOOM_THROW(LookupError) << "the VM module has no function '" << name << "'" << did_you_mean(name, function_names());
  }

  Any invoke(size_t index, const Any* args, int32_t count) const;
  std::string disassemble() const;
  // docs/rpc.md, "Profiles and traces": each kernel and graph function
  // call while profiling.
  void set_profiling(bool on) override {
    if (on) profiler_.start();
    profiling_.store(on, std::memory_order_relaxed);
    if (on) profiled_.store(true);
  }
  std::string profile() const override { return profiled_.load() ? profiler_.to_json() : ""; }
  LOOM_OBJECT(VMModuleNode, ModuleNode, "runtime.VMModule");

 private:
  void resolve() const;
  // Constant `index` on devices[device], copied there on first use.
  Any constant_on(int32_t index, int32_t device) const;
  mutable std::mutex constants_mutex_;
  mutable std::map<std::pair<int32_t, int32_t>, Any> device_constants_;
  mutable std::mutex resolve_mutex_;
  mutable std::atomic<bool> resolved_{false};
  mutable std::vector<Function> callee_functions_;
  Any run(size_t index, const Any* args, int32_t count) const;
  // One call's frame; a call in tail position (the bytecode's call with
  // b = 1) ends it, leaving the callee and its arguments in `tail`.
  struct TailCall {
    bool pending = false;
    size_t callee = 0;
    std::vector<Any> args;
  };
  Any run_frame(size_t index, const Any* args, int32_t count, TailCall& tail) const;
  // A kernel call timed to the end of its device's work, with its tensors' bytes.
  Any call_profiled(size_t callee, const std::vector<Any>& args) const;
  mutable Profiler profiler_;
  std::atomic<bool> profiling_{false};
  std::atomic<bool> profiled_{false};  // a profile was ever started: profile() reports it
};

Any VMModuleNode::call_profiled(size_t callee, const std::vector<Any>& args) const {
  int64_t bytes = 0;
  Device device = devices.empty() ? Device() : devices[0];
  for (const Any& a : args) {
    if (const auto* t = dynamic_cast<const NDArrayNode*>(a.object())) {
      bytes += static_cast<int64_t>(t->nbytes());
      device = t->device;  // a call_dps's outputs come last: the device that runs it
    }
  }
  int64_t start = profiler_.now_ns();
  Any result = callee_functions_[callee].call(args.data(), static_cast<int32_t>(args.size()));
  if (device.device_type != Device::kCPU) DeviceAPIRegistry::get(device).synchronize(device, nullptr);
  int64_t end = profiler_.now_ns();
  profiler_.record({"@" + callees[callee].substr(callees[callee].find(':') + 1), "kernel", device.to_string(), start,
                    end - start, bytes, callee_flops[callee]});
  return result;
}

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

Any VMModuleNode::constant_on(int32_t index, int32_t device) const {
  std::lock_guard<std::mutex> lock(constants_mutex_);
  Any& placed = device_constants_[{index, device}];
  if (placed.is_none()) placed = constants[index].cast<NDArray>().copy_to(devices[device]);
  return placed;
}

// `from` copied into `to` (another device): the source device's stream is
// synchronised first, so the kernels that wrote it have finished.
void copy_across(const NDArray& from, const NDArray& to) {
  if (from->device.device_type != Device::kCPU) DeviceAPIRegistry::get(from->device).synchronize(from->device, nullptr);
  to.copy_from(from);
}

Any VMModuleNode::invoke(size_t index, const Any* args, int32_t count) const {
  if (!profiling_.load(std::memory_order_relaxed)) return run(index, args, count);
  int64_t start = profiler_.now_ns();
  Any result = run(index, args, count);
  int64_t end = profiler_.now_ns();
  profiler_.record({"@" + functions[index].name, "function", (devices.empty() ? Device() : devices[0]).to_string(),
                    start, end - start, 0});
  return result;
}

namespace {
class RegisterFile {
 public:
  explicit RegisterFile(size_t size) {
    if (!pool().empty()) {
      regs = std::move(pool().back());
      pool().pop_back();
    }
    regs.resize(size);
  }
  ~RegisterFile() {
    regs.clear();  // releases every value; the capacity stays
    if (pool().size() < 8) pool().push_back(std::move(regs));
  }
  RegisterFile(const RegisterFile&) = delete;
  RegisterFile& operator=(const RegisterFile&) = delete;
  std::vector<Any> regs;

 private:
  static std::vector<std::vector<Any>>& pool() {
    thread_local std::vector<std::vector<Any>> files;
    return files;
  }
};

// The shape of a tensor a site with a dynamic shape places in the arena,
// as an Array: the one this thread built for the site last time when the
// dimensions are the same (a decode step's tensors keep their shapes step
// after step), else a new one.  Keyed by the site's address and compared
// by value, so a site freed and another made at its address is harmless.
const Array& shape_array(const AllocSite* site, const std::vector<int64_t>& dims) {
  thread_local std::unordered_map<const AllocSite*, Array> last;
  if (last.size() > 4096) last.clear();
  Array& a = last[site];
  bool same = a.size() == dims.size() && a.defined();
  for (size_t k = 0; same && k < dims.size(); ++k) same = a[k].as_int() == dims[k];
  if (!same) a = Array(std::vector<Any>(dims.begin(), dims.end()));
  return a;
}
}  // namespace

// Calls of graph functions nest on the C++ stack, except those in tail
// position, which replace the caller's frame (a loop written as a
// recursion runs in constant stack).  Deeper nesting than this is a
// recursion that does not end, or one not in tail position.
constexpr int kMaxCallDepth = 256;

Any VMModuleNode::run(size_t index, const Any* args, int32_t count) const {
  thread_local int depth = 0;
  if (depth >= kMaxCallDepth) {
    LOOM_THROW(Error) << "@" << functions[index].name << ": graph function calls nest deeper than " << kMaxCallDepth
                      << " (a recursion that does not end, or one whose call is not in tail position)";
  }
  struct Nested {
    Nested() { ++depth; }
    ~Nested() { --depth; }
  } nested;
  std::vector<Any> tail_args;
  for (;;) {
    TailCall tail;
    Any result = run_frame(index, args, count, tail);
    if (!tail.pending) return result;
    tail_args = std::move(tail.args);  // the finished frame's arguments go; its arena lives while they use it
    index = tail.callee;
    args = tail_args.data();
    count = static_cast<int32_t>(tail_args.size());
  }
}

Any VMModuleNode::run_frame(size_t index, const Any* args, int32_t count, TailCall& tail) const {
  if (!resolved_.load(std::memory_order_acquire)) resolve();
  const FunctionRt& f = functions[index];
  auto where = [&] { return "@" + f.name; };
  if (count != static_cast<int32_t>(f.param_types.size())) {
    LOOM_THROW(TypeError) << where() << " takes " << f.param_types.size() << " argument"
                          << (f.param_types.size() == 1 ? "" : "s") << ", got " << count;
  }
  InputChecker checker(f, devices);
  for (int32_t i = 0; i < count; ++i) {
    checker.check(
        args[i], f.param_types[i], [&] { return checker.argument(i); }, i);
  }
  for (int32_t i = 0; i < count; ++i) checker.bind_linear(args[i], f.param_types[i]);
  for (int32_t i = 0; i < count; ++i) {
    checker.check_composite(args[i], f.param_types[i], [&] { return checker.argument(i); });
  }
  // The shape variables' values: the arguments bind them, and call_packed
  // results the ones the data decides.
  const std::vector<int64_t>& bound = checker.bound;

  // The register file, from this thread's pool (a call nested in another,
  // a graph function's, takes a second): 8 KB for a decode step's 510
  // registers, allocated per call, sent glibc's malloc into consolidating
  // its free lists every call.  Emptied when the call ends, so no value
  // outlives it.
  RegisterFile file(f.num_registers);
  std::vector<Any>& regs = file.regs;
  for (int32_t i = 0; i < count; ++i) regs[i] = args[i];

  // The arena for this call.
  const Device device{Device::kCPU, 0};
  ObjectRef arena;
  char* base = nullptr;
  std::vector<void*> device_buffers;  // by storage, for those on another device
  std::vector<size_t> dynamic_offsets;
  std::vector<uint64_t> dynamic_sizes;
  const std::vector<size_t>* offsets = &f.static_offsets;
  size_t arena_bytes = f.static_arena;
  if (!f.static_plan) {
    arena_bytes = 0;
    for (const ShapeExpr& s : f.storage_sizes) {
      int64_t bytes = evaluate(s, bound);
      if (bytes < 0 || static_cast<uint64_t>(bytes) > kMaxTensorBytes - arena_bytes) {
        LOOM_THROW(Error) << where() << ": storage " << dynamic_sizes.size() << " would have " << bytes
                          << " bytes, after " << readable_bytes(arena_bytes) << " of other storages";
      }
      dynamic_offsets.push_back(arena_bytes);
      dynamic_sizes.push_back(static_cast<uint64_t>(bytes));
      if (f.storage_device[dynamic_sizes.size() - 1] == 0) arena_bytes += align_up(static_cast<size_t>(bytes));
    }
    offsets = &dynamic_offsets;
  }
  // A tensor placed in a storage fits it (checked when the executable was
  // loaded for static shapes in a static plan).
  auto check_fits = [&](const AllocSite& site, uint64_t bytes, const std::vector<int64_t>& dims) {
    uint64_t room = f.static_plan ? static_cast<uint64_t>(*f.storage_sizes[site.storage].as_constant())
                                  : dynamic_sizes[site.storage];
    if (bytes > room) {
      LOOM_THROW(Error) << where() << ": a tensor of shape " << loom::shape_text(dims) << " (" << bytes
                        << " bytes) does not fit its storage " << site.storage << " (" << room << " bytes)";
    }
  };
  if (arena_bytes || f.device_storages) {
    auto node = make_object<ArenaNode>();
    if (arena_bytes) base = static_cast<char*>(node->add(device, arena_bytes));
    if (f.device_storages) {
      device_buffers.assign(f.storage_sizes.size(), nullptr);
      for (size_t k = 0; k < f.storage_sizes.size(); ++k) {
        if (f.storage_device[k] == 0) continue;
        size_t bytes = f.static_plan ? static_cast<size_t>(*f.storage_sizes[k].as_constant()) : dynamic_sizes[k];
        try {
          device_buffers[k] = node->add(devices[f.storage_device[k]], std::max<size_t>(bytes, 1));
        } catch (const std::exception& e) {
          LOOM_THROW(Error) << where() << ": storage " << k << " (" << readable_bytes(bytes) << " on "
                            << devices[f.storage_device[k]].to_string() << "): " << e.what();
        }
      }
    }
    arena = ObjectRef(node);
  }
  // Where a storage's tensors start: in the host arena, or a device buffer.
  auto storage_data = [&](int32_t storage) -> void* {
    if (f.device_storages && f.storage_device[storage] != 0) return device_buffers[storage];
    return base + (*offsets)[storage];
  };

  std::vector<Any> scratch;
  std::vector<int64_t> shape;
  for (size_t pc = 0;;) {
    const Instr& in = f.code[pc];
    switch (in.op) {
      case kVMConst:
        regs[in.dst] = in.b == 0 ? constants[in.a] : constant_on(in.a, in.b);
        ++pc;
        break;
      case kVMCopy: {
        const auto* from = dynamic_cast<const NDArrayNode*>(regs[in.a].object());
        if (!from) LOOM_THROW(Error) << where() << ": device_copy of " << regs[in.a].describe() << ", not a tensor";
        NDArray to = regs[in.dst].cast<NDArray>();
        if (from->device == to->device) {
          regs[in.dst] = regs[in.a];  // an argument already on the device
        } else {
          copy_across(regs[in.a].cast<NDArray>(), to);
        }
        ++pc;
        break;
      }
      case kVMAlloc: {
        const AllocSite& site = f.allocs[in.a];
        const Device on = site.device == 0 ? device : devices[site.device];
        if (site.static_shape && site.storage >= 0) {
          if (!f.static_plan) check_fits(site, site.static_bytes, *site.static_shape);
          regs[in.dst] =
              NDArray::wrap_shape(storage_data(site.storage), site.static_shape_array, site.dtype, on, arena);
          ++pc;
          break;
        }
        if (site.static_shape) {
          shape = *site.static_shape;
        } else {
          shape.clear();
          for (const ShapeExpr& d : site.shape) shape.push_back(evaluate(d, bound));
        }
        if (site.storage >= 0) {
          check_fits(site, checked_nbytes(shape, static_cast<int>(element_bytes(site.dtype)), where()), shape);
        }
        regs[in.dst] = site.storage < 0 ? NDArray::empty(shape, site.dtype, on)
                                        : NDArray::wrap_shape(storage_data(site.storage), shape_array(&site, shape),
                                                              site.dtype, on, arena);
        ++pc;
        break;
      }
      case kVMCallDPS:
      case kVMCallPacked:
      case kVMCallGraph: {
        scratch.clear();
        for (int32_t r : in.args) scratch.push_back(regs[r]);
        const auto n = static_cast<int32_t>(scratch.size());
        try {
          if (in.op == kVMCallGraph && in.b == 1) {
            tail.pending = true;  // in tail position: the callee replaces this frame
            tail.callee = static_cast<size_t>(in.a);
            tail.args = scratch;
            return Any();
          }
          if (in.op == kVMCallGraph) {
            regs[in.dst] = invoke(static_cast<size_t>(in.a), scratch.data(), n);
          } else {
            Any result = profiling_.load(std::memory_order_relaxed) ? call_profiled(static_cast<size_t>(in.a), scratch)
                                                                    : callee_functions_[in.a].call(scratch.data(), n);
            if (in.op == kVMCallPacked) {
              checker.bind_result(result, f.types[in.b], "call_packed '" + callees[in.a].substr(7) + "'");
              regs[in.dst] = std::move(result);
            }
          }
        } catch (const std::exception& e) {
          std::string callee = in.op == kVMCallGraph ? "@" + functions[in.a].name
                               : in.op == kVMCallDPS ? "@" + callees[in.a].substr(4)
                                                     : "call_packed '" + callees[in.a].substr(7) + "'";
          LOOM_THROW(Error) << where() << ": " << callee << ": " << e.what();
        }
        ++pc;
        break;
      }
      case kVMTuple: {
        std::vector<Any> fields;
        for (int32_t r : in.args) fields.push_back(regs[r]);
        regs[in.dst] = Array(std::move(fields));
        ++pc;
        break;
      }
      case kVMGetItem: {
        const auto* tuple = dynamic_cast<const ArrayNode*>(regs[in.a].object());
        if (!tuple || in.b < 0 || static_cast<size_t>(in.b) >= tuple->items.size()) {
          LOOM_THROW(Error) << where() << ": item " << in.b << " of " << regs[in.a].describe();
        }
        regs[in.dst] = tuple->items[in.b];
        ++pc;
        break;
      }
      case kVMMove:
        regs[in.dst] = regs[in.a];
        ++pc;
        break;
      case kVMIfNot:
        pc = truthy(regs[in.a], f.name) ? pc + 1 : static_cast<size_t>(in.b);
        break;
      case kVMGoto:
        pc = static_cast<size_t>(in.a);
        break;
      case kVMRet:
        return regs[in.a];
      case kVMDim:
        regs[in.dst] = Any(evaluate(f.types[in.b].get()->shape[0].cast<ShapeExpr>(), bound));
        ++pc;
        break;
    }
  }
}

std::string VMModuleNode::disassemble() const {
  static const char* names[] = {"const", "alloc",  "call_dps", "call_packed", "call", "tuple", "get_item",
                                "move",  "if_not", "goto",     "ret",         "copy", "dim"};
  auto on = [&](int32_t d) { return d == 0 ? std::string() : " on " + devices[d].to_string(); };
  std::ostringstream out;
  for (const FunctionRt& f : functions) {
    out << "@" << f.name << ": " << f.num_registers << " registers, " << f.storage_sizes.size() << " storages\n";
    for (size_t pc = 0; pc < f.code.size(); ++pc) {
      const Instr& in = f.code[pc];
      out << "  " << pc << ": " << names[in.op];
      switch (in.op) {
        case kVMConst:
          out << " r" << in.dst << " <- constant " << in.a << on(in.b);
          break;
        case kVMCopy:
          out << " r" << in.dst << " <- r" << in.a;
          break;
        case kVMAlloc: {
          const AllocSite& s = f.allocs[in.a];
          out << " r" << in.dst << " <- " << s.dtype.to_string() << " ";
          out << (s.storage < 0 ? "output" : "storage " + std::to_string(s.storage)) << on(s.device);
          break;
        }
        case kVMCallDPS:
          out << " " << callees[in.a];
          break;
        case kVMCallPacked:
          out << " r" << in.dst << " <- " << callees[in.a];
          break;
        case kVMCallGraph:
          out << " r" << in.dst << " <- @" << functions[in.a].name << (in.b == 1 ? " (tail)" : "");
          break;
        case kVMTuple:
          out << " r" << in.dst;
          break;
        case kVMGetItem:
          out << " r" << in.dst << " <- r" << in.a << "[" << in.b << "]";
          break;
        case kVMMove:
          out << " r" << in.dst << " <- r" << in.a;
          break;
        case kVMIfNot:
          out << " r" << in.a << " else " << in.b;
          break;
        case kVMGoto:
          out << " " << in.a;
          break;
        case kVMRet:
          out << " r" << in.a;
          break;
        case kVMDim:
          out << " r" << in.dst << " <- the dimension of type " << in.b;
          break;
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

const VMModuleNode& vm_node(const Module& vm, const char* what) {
  const auto* node = dynamic_cast<const VMModuleNode*>(vm.get());
  if (!node) LOOM_THROW(Error) << what << " needs a VM module, got a " << vm->type_key() << " module";
  return *node;
}

const bool vm_loader_registered = [] {
  ModuleLoaderRegistry::register_loader(
      "vm",
      Function::typed(
          [](std::string bytes) { return make_vm_module(load_document(bytes, "<vm executable>").as_object_ref()); },
          "vm.load"));
  return true;
}();
}  // namespace

LOOM_REGISTER_OBJECT(VMModuleNode);
LOOM_REGISTER_OBJECT(ArenaNode);

Module make_vm_module(const ObjectRef& executable) {
  const auto* exe = executable.as<VMExecutableNode>();
  if (!exe) LOOM_THROW(Error) << "not a VM executable";
  if (exe->format != kVMExecutableFormat) {
    LOOM_THROW(Error) << "the VM executable has format " << exe->format << ", this runtime reads format "
                      << kVMExecutableFormat << " (rebuild the library with this version of Loom)";
  }
  auto node = make_object<VMModuleNode>();
  node->executable = executable;
  node->devices.push_back(Device());
  if (exe->devices.defined() && exe->devices.size()) {
    node->devices.clear();
    for (const Any& d : exe->devices) {
      if (d.kind() != AnyKind::kDevice) LOOM_THROW(Error) << "a VM device is not a device: " << d.describe();
      node->devices.push_back(d.as_device());
    }
    if (node->devices[0] != Device()) LOOM_THROW(Error) << "the VM's device table does not start with the host (cpu:0)";
  }
  for (const Any& c : exe->constants) {
    if (!dynamic_cast<const NDArrayNode*>(c.object())) LOOM_THROW(Error) << "a VM constant is not an NDArray";
    node->constants.push_back(c);
  }
  for (const Any& c : exe->callees) {
    if (c.kind() != AnyKind::kStr || (!starts_with(c.as_string(), "dps:") && !starts_with(c.as_string(), "packed:"))) {
      LOOM_THROW(Error) << "a VM callee is not 'dps:NAME' or 'packed:NAME': " << c.describe();
    }
    node->callees.push_back(c.as_string());
  }
  if (exe->callee_flops.size() != 0 && exe->callee_flops.size() != exe->callees.size()) {
    LOOM_THROW(Error) << "the VM's callee_flops has " << exe->callee_flops.size() << " entries for "
                      << exe->callees.size() << " callees";
  }
  for (const Any& c : exe->callee_flops) {
    if (c.kind() != AnyKind::kInt) LOOM_THROW(Error) << "a VM callee's flops is not an int: " << c.describe();
    node->callee_flops.push_back(c.as_int());
  }
  node->callee_flops.resize(node->callees.size(), -1);
  for (const Any& fn : exe->functions) {
    const auto* def = dynamic_cast<const VMFunctionDefNode*>(fn.object());
    if (!def) LOOM_THROW(Error) << "a VM function is not a runtime.VMFunctionDef";
    node->functions.push_back(Decoder(*def, node->devices.size()).decode());
  }
  // Operands that index the executable's tables.
  for (const FunctionRt& f : node->functions) {
    for (const Instr& in : f.code) {
      auto check = [&](bool ok, const char* what) {
        if (!ok) LOOM_THROW(Error) << "VM function '" << f.name << "': " << what << " out of range";
      };
      if (in.op == kVMConst) check(in.a >= 0 && static_cast<size_t>(in.a) < node->constants.size(), "constant");
      if (in.op == kVMAlloc) check(in.a >= 0 && static_cast<size_t>(in.a) < f.allocs.size(), "allocation");
      if (in.op == kVMCallDPS || in.op == kVMCallPacked) {
        check(in.a >= 0 && static_cast<size_t>(in.a) < node->callees.size(), "callee");
      }
      if (in.op == kVMCallPacked || in.op == kVMDim)
        check(in.b >= 0 && static_cast<size_t>(in.b) < f.types.size(), "type");
      if (in.op == kVMDim) {
        const VMTypeNode* t = f.types[in.b].get();
        check(t->type_kind() == VMTypeKind::kTensor && t->shape.defined() && t->shape.size() == 1, "dimension");
      }
      if (in.op == kVMCallGraph) {
        check(in.a >= 0 && static_cast<size_t>(in.a) < node->functions.size(), "function");
        check(in.b == 0 || in.b == 1, "tail-call flag");
      }
    }
  }
  if (exe->num_threads > 0) ThreadPool::global().set_num_threads(exe->num_threads);
  return Module(node);
}

VMSignature signature(const Module& vm, const std::string& function) {
  const FunctionRt& f = vm_node(vm, "signature").function(function);
  return VMSignature{f.param_names, f.param_types, f.shape_vars};
}

MemoryPlan memory_plan(const Module& vm, const std::string& function) {
  const VMModuleNode& node = vm_node(vm, "memory_plan");
  const FunctionRt& f = node.function(function);
  MemoryPlan plan;
  plan.storages = static_cast<int64_t>(f.storage_sizes.size());
  // Sums as expressions, folded while constant; constant sizes aligned as
  // the arena aligns them.
  auto aligned = [](const ShapeExpr& size) {
    auto c = size.as_constant();
    return c ? ShapeExpr::constant(static_cast<int64_t>(align_up(static_cast<size_t>(*c)))) : size;
  };
  auto add = [](const ShapeExpr& total, const ShapeExpr& term) {
    auto a = total.as_constant(), b = term.as_constant();
    if (a && b) return ShapeExpr::constant(*a + *b);
    if (a && *a == 0) return term;
    return ShapeExpr::binary(ShapeOp::kAdd, total, term);
  };
  ShapeExpr peak = ShapeExpr::constant(0), naive = peak;
  std::map<std::string, ShapeExpr> by_device;
  for (size_t k = 0; k < f.storage_sizes.size(); ++k) {
    const ShapeExpr& s = f.storage_sizes[k];
    peak = add(peak, aligned(s));
    if (!f.device_storages) continue;
    std::string device = node.devices[f.storage_device[k]].to_string();
    by_device[device] = add(by_device.count(device) ? by_device[device] : ShapeExpr::constant(0), aligned(s));
  }
  for (const auto& [device, bytes] : by_device) plan.device_peak_bytes[device] = shape_expr_text(bytes, f.shape_vars);
  for (const AllocSite& site : f.allocs) {
    if (site.storage < 0) {
      ++plan.output_tensors;
      continue;
    }
    ++plan.planned_tensors;
    naive = add(naive, aligned(tensor_bytes(site.dtype, site.shape)));
  }
  plan.static_peak_bytes = peak.as_constant();
  plan.static_naive_bytes = naive.as_constant();
  plan.peak_bytes = shape_expr_text(peak, f.shape_vars);
  plan.naive_bytes = shape_expr_text(naive, f.shape_vars);
  return plan;
}

std::vector<std::string> VMModuleNode::describe() const {
  std::vector<std::string> out;
  Module self(ObjectPtr<Object>(const_cast<VMModuleNode*>(this)));
  for (const FunctionRt& f : functions) {
    MemoryPlan plan = memory_plan(self, f.name);
    out.push_back("@" + f.name + ": " + std::to_string(plan.planned_tensors) + " planned tensors in " +
                  std::to_string(plan.storages) + " storages, peak " + plan.peak_bytes + " bytes (one buffer each: " +
                  plan.naive_bytes + "), " + std::to_string(plan.output_tensors) + " outputs");
    for (const auto& [device, bytes] : plan.device_peak_bytes)
      out.push_back("  on " + device + ": peak " + bytes + " bytes");
  }
  return out;
}

}  // namespace loom::runtime
