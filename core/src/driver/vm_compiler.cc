// The VM compiler (loom/driver/vm_compiler.h): graph functions to the
// executable of loom/runtime/vm.h.  Shapes become runtime ShapeExprs over
// each function's shape variables (the symbolic dimensions its parameters
// bind), types become VMTypes, and the static memory plan comes from
// memory_planner.h.
#include "loom/driver/vm_compiler.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "loom/graph/bindings.h"
#include "loom/graph/function.h"
#include "loom/graph/shared.h"
#include "loom/graph/well_formed.h"
#include "loom/ir/text.h"
#include "loom/runtime/vm.h"
#include "loom/support/stack.h"
#include "loom/support/strings.h"
#include "loom/target/target.h"
#include "loom/tir/functor.h"
#include "loom/tir/stmt.h"
#include "loom/tir/util.h"
#include "loom/transform/property.h"
#include "memory_planner.h"

namespace loom::driver {

namespace {
using ir::Type;
using runtime::ShapeExpr;
using runtime::ShapeOp;
using runtime::VMType;
using vm::Instr;

class ExecutableBuilder {
 public:
  explicit ExecutableBuilder(const ir::IRModule& module) : module_(module) {}

  // The index of `d` in the device table (0: the host).
  int32_t device(const Device& d) {
    auto found = std::find(devices.begin(), devices.end(), d);
    if (found != devices.end()) return static_cast<int32_t>(found - devices.begin());
    devices.push_back(d);
    return static_cast<int32_t>(devices.size() - 1);
  }
  const ir::IRModule& module() const { return module_; }
  // Where a call_dps of @name runs (target::call_device, as PlanDevices
  // placed it), in the device table.
  int32_t callee_device(const std::string& name) {
    auto found = callee_devices_.find(name);
    if (found != callee_devices_.end()) return found->second;
    return callee_devices_[name] = device(target::call_device(module_, name));
  }

  // One pool entry per array, however many places load it (Winograd's
  // strips share their transformed weights): an exported executable
  // saves it once, and a loaded one holds it once.
  int constant(const Any& c) {
    auto [found, added] = constant_index_.emplace(c.object(), static_cast<int>(constants.size()));
    if (added) constants.push_back(c);
    return found->second;
  }
  int callee(const std::string& key) {
    auto found = std::find(callees.begin(), callees.end(), key);
    if (found != callees.end()) return static_cast<int>(found - callees.begin());
    callees.push_back(key);
    return static_cast<int>(callees.size() - 1);
  }
  std::vector<Any> constants;
  std::unordered_map<const Object*, int> constant_index_;  // an array -> its entry in `constants`
  std::vector<std::string> callees;
  std::vector<Device> devices{Device()};

 private:
  const ir::IRModule& module_;
  std::map<std::string, int32_t> callee_devices_;
};

class FunctionCompiler {
 public:
  FunctionCompiler(std::string name, ExecutableBuilder& exe, const std::map<std::string, int>& graph_functions)
      : name_(std::move(name)), exe_(exe), graph_functions_(graph_functions) {}

  ObjectRef compile(const graph::FunctionNode& fn) {
    auto def = make_object<runtime::VMFunctionDefNode>();
    def->name = name_;
    std::vector<Type> types;
    std::vector<Any> names;
    for (const Any& p : fn.params) {
      const auto* var = p.as_object_ref().as<graph::VarNode>();
      Type type = var->annotation.defined() ? var->annotation : var->checked_type;
      vars_[var] = new_register();
      names.push_back(var->name);
      types.push_back(type);
      bind_shape_vars(type);
    }
    // Every parameter binds its variables before any type is converted,
    // so a composite dimension may use the variables of a later parameter.
    std::vector<Any> param_types;
    for (const Type& type : types) param_types.push_back(Any(vm_type(type, "a parameter's type", false)));
    // A value used in several places is computed once, into one register.
    ir::Expr body = graph::bind_shared_values(fn.body);
    find_binders(body);
    int32_t result = expr(body);
    emit(runtime::kVMRet, -1, result, 0, {});
    mark_tail_calls();
    def->param_names = Array(names);
    def->param_types = Array(param_types);
    def->num_registers = num_registers_;

    vm::StoragePlan plan = vm::plan_storage(code_, num_registers_, allocations_);
    std::vector<Any> allocs;
    for (size_t k = 0; k < allocations_.size(); ++k) {
      auto node = make_object<runtime::VMAllocNode>();
      node->dtype = allocations_[k].dtype;
      node->shape = Array(std::vector<Any>(allocations_[k].shape.begin(), allocations_[k].shape.end()));
      node->storage = plan.storage_of[k];
      node->device = allocations_[k].device;
      allocs.push_back(Any(ObjectRef(node)));
    }
    def->allocs = Array(allocs);
    def->storage_sizes = Array(std::vector<Any>(plan.storage_bytes.begin(), plan.storage_bytes.end()));
    if (std::any_of(plan.storage_device.begin(), plan.storage_device.end(), [](int32_t d) { return d != 0; })) {
      def->storage_devices = Array(std::vector<Any>(plan.storage_device.begin(), plan.storage_device.end()));
    }
    def->param_devices = param_devices(fn.params.size());
    std::vector<Any> flat;
    for (const Instr& in : code_) {
      for (int32_t v : {in.op, in.dst, in.a, in.b, static_cast<int32_t>(in.args.size())}) flat.push_back(v);
      for (int32_t r : in.args) flat.push_back(r);
    }
    def->code = Array(flat);
    def->types = Array(types_);
    std::vector<Any> var_names;
    for (const auto& v : shape_vars_) var_names.push_back(v.second);
    def->shape_vars = Array(var_names);
    return ObjectRef(def);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { LOOM_THROW(Error) << "VM: @" << name_ << ": " << message; }
  int32_t new_register() { return num_registers_++; }

  // A call of a graph function whose result reaches the return unchanged
  // (through moves and jumps only: the last call of a branch of the body's
  // if) is in tail position: the VM runs it in place of this frame, so a
  // loop written as a recursion runs in constant stack.
  void mark_tail_calls() {
    for (Instr& call : code_) {
      if (call.op != runtime::kVMCallGraph) continue;
      int32_t value = call.dst;
      size_t pc = static_cast<size_t>(&call - code_.data()) + 1;
      for (size_t steps = 0; pc < code_.size() && steps <= code_.size(); ++steps) {
        const Instr& next = code_[pc];
        if (next.op == runtime::kVMMove && next.a == value) {
          value = next.dst;
          ++pc;
        } else if (next.op == runtime::kVMGoto) {
          pc = static_cast<size_t>(next.a);
        } else {
          if (next.op == runtime::kVMRet && next.a == value) call.b = 1;
          break;
        }
      }
    }
  }
  size_t emit(int32_t op, int32_t dst, int32_t a, int32_t b, std::vector<int32_t> args) {
    code_.push_back(Instr{op, dst, a, b, std::move(args)});
    return code_.size() - 1;
  }

  // The devices each parameter may be passed on besides the host: the one
  // device it is copied to, when copying it there is all the function does
  // with it (the copy then uses the caller's array as it is).  Empty when
  // no parameter has one.
  Array param_devices(size_t count) const {
    std::vector<Any> out;
    bool any = false;
    for (size_t p = 0; p < count; ++p) {
      std::optional<int32_t> only;
      bool copied_only = true;
      auto use = [&](const Instr& in, int32_t r) {
        if (r != static_cast<int32_t>(p)) return;
        int32_t d = in.op == runtime::kVMCopy ? allocations_[alloc_of_.at(in.dst)].device : -1;
        if (d < 0 || (only && *only != d)) copied_only = false;
        only = d;
      };
      for (const Instr& in : code_) {
        for (int32_t r : in.args) use(in, r);
        if (runtime::reads_register_a(in.op)) use(in, in.a);
      }
      std::vector<Any> devices;
      if (copied_only && only) devices.push_back(int64_t{*only});
      any |= !devices.empty();
      out.push_back(Array(devices));
    }
    return any ? Array(out) : Array(std::vector<Any>{});
  }

  // ---- shapes and types ----
  std::optional<int64_t> slot_of(const Object* var) const {
    for (size_t k = 0; k < shape_vars_.size(); ++k)
      if (shape_vars_[k].first == var) return static_cast<int64_t>(k);
    return std::nullopt;
  }

  int64_t add_shape_var(const tir::VarNode* var, bool from_result = false) {
    // Names are made unique, so messages tell two variables named n apart.
    std::string name = var->name;
    for (int k = 1;
         std::any_of(shape_vars_.begin(), shape_vars_.end(), [&](const auto& v) { return v.second == name; }); ++k) {
      name = var->name + "_" + std::to_string(k);
    }
    shape_vars_.emplace_back(var, name);
    from_result_.push_back(from_result);
    return static_cast<int64_t>(shape_vars_.size() - 1);
  }

  // The lone-variable dimensions of a parameter bind those variables.
  void bind_shape_vars(const Type& type) {
    if (const auto* t = type.as<ir::TensorTypeNode>()) {
      if (t->unknown_rank()) return;
      // The variables of composite dimensions too (%n in (%n * 128, 256)):
      // the VM binds them from a dimension linear in them.
      for (const Any& d : t->shape) {
        if (!dynamic_cast<const tir::PrimExprNode*>(d.object())) continue;
        tir::pre_order(
            tir::Evaluate(d.cast<tir::PrimExpr>()), [](const tir::Stmt&) { return true; },
            [&](const tir::PrimExpr& e) {
              const auto* var = e.as<tir::VarNode>();
              if (var && !slot_of(var)) add_shape_var(var);
              return true;
            });
      }
    } else if (const auto* t = type.as<ir::TupleTypeNode>()) {
      for (const Any& f : t->fields) bind_shape_vars(f.cast<Type>());
    }
  }

  // A dimension as a ShapeExpr: integer arithmetic over bound variables.
  // `free_ok`: a variable no parameter binds gets a slot of its own (a
  // call_packed result type, which is only checked where it is constant).
  ShapeExpr shape(const Any& dim, const std::string& what, bool free_ok) { return shape(dim, dim, what, free_ok); }
  ShapeExpr shape(const Any& part, const Any& dim, const std::string& what, bool free_ok) {
    const Object* o = part.object();
    if (const auto* i = dynamic_cast<const tir::IntImmNode*>(o)) return ShapeExpr::constant(i->value);
    if (const auto* v = dynamic_cast<const tir::VarNode*>(o)) {
      if (auto slot = slot_of(v)) return ShapeExpr::var(*slot);
      if (free_ok) return ShapeExpr::var(add_shape_var(v, true));
      // A size the data decides, read (through a type) before the call
      // that returns it comes in the code (zeros of a selection's length,
      // made from a shape, not from the selection): that call first.
      auto binder = binder_of_.find(v);
      if (binder != binder_of_.end() && binder->second.second == branch_depth_ &&
          !compiled_packed_.count(binder->second.first) && pure_packed(*binder->second.first)) {
        call_expr(*binder->second.first);
        if (auto slot = slot_of(v)) return ShapeExpr::var(*slot);
      }
      fail(what + " has the dimension " + ir::to_text(dim) + ", and no parameter's shape binds %" + v->name);
    }
    static const std::vector<std::pair<uint32_t, ShapeOp>> ops = {
        {tir::AddNode::runtime_type_index(), ShapeOp::kAdd},
        {tir::SubNode::runtime_type_index(), ShapeOp::kSub},
        {tir::MulNode::runtime_type_index(), ShapeOp::kMul},
        {tir::DivNode::runtime_type_index(), ShapeOp::kDiv},
        {tir::FloorDivNode::runtime_type_index(), ShapeOp::kFloorDiv},
        {tir::FloorModNode::runtime_type_index(), ShapeOp::kFloorMod},
        {tir::MinNode::runtime_type_index(), ShapeOp::kMin},
        {tir::MaxNode::runtime_type_index(), ShapeOp::kMax}};
    if (const auto* b = dynamic_cast<const tir::BinaryOpNode*>(o)) {
      for (const auto& [index, op] : ops) {
        if (b->type_index() == index) {
          return ShapeExpr::binary(op, shape(Any(b->a), dim, what, free_ok), shape(Any(b->b), dim, what, free_ok));
        }
      }
    }
    fail(what + ": the shape expression " + ir::to_text(part) + " is not integer arithmetic");
  }

  VMType vm_type(const Type& type, const std::string& what, bool free_ok) {
    if (const auto* t = type.as<ir::TensorTypeNode>()) {
      if (t->unknown_rank()) return VMType::tensor(t->dtype, std::nullopt);
      std::vector<ShapeExpr> dims;
      for (const Any& d : t->shape) dims.push_back(shape(d, what, free_ok));
      return VMType::tensor(t->dtype, dims);
    }
    if (const auto* t = type.as<ir::TupleTypeNode>()) {
      std::vector<VMType> fields;
      for (const Any& f : t->fields)
        fields.push_back(with_stack([&] { return vm_type(f.cast<Type>(), what, free_ok); }));
      return VMType::tuple(fields);
    }
    if (const auto* t = type.as<ir::PrimTypeNode>()) return VMType::scalar(t->dtype);
    return VMType::any();  // undefined, function and opaque types are not checked
  }

  // ---- code ----
  int32_t expr(const ir::Expr& e) {
    return with_stack([&] { return expr_here(e); });  // one level of stack per level of nesting
  }

  int32_t expr_here(const ir::Expr& e) {
    if (e.as<graph::LetNode>()) {
      // Iterative over let chains, which can be long.  Outside any if, a
      // binding may have been compiled before its turn, when a size the
      // data decides was needed early (shape() compiles the call that
      // returns it, and that call what it reads: find_binders).
      ir::Expr cur = e;
      while (const auto* l = cur.as<graph::LetNode>()) {
        if (!vars_.count(l->var.get())) vars_[l->var.get()] = expr(l->value);
        cur = l->body;
      }
      return expr(cur);
    }
    if (const auto* var = e.as<graph::VarNode>()) {
      auto found = vars_.find(var);
      if (found == vars_.end()) {
        auto pending = pending_.find(var);
        if (pending == pending_.end() || pending->second.second != branch_depth_ || !early_ok(pending->second.first) ||
            !compiling_early_.insert(var).second) {
          fail("%" + var->name + " is not bound");
        }
        int32_t r = expr(pending->second.first);
        found = vars_.emplace(var, r).first;
      }
      return found->second;
    }
    if (const auto* c = e.as<graph::ConstantNode>()) {
      int32_t r = new_register();
      emit(runtime::kVMConst, r, exe_.constant(Any(c->data)), 0, {});
      return r;
    }
    if (const auto* t = e.as<graph::TupleNode>()) {
      std::vector<int32_t> fields;
      for (const Any& f : t->fields) fields.push_back(expr(f.cast<ir::Expr>()));
      int32_t r = new_register();
      emit(runtime::kVMTuple, r, 0, 0, fields);
      return r;
    }
    if (const auto* g = e.as<graph::TupleGetItemNode>()) {
      int32_t tuple = expr(g->tuple);
      int32_t r = new_register();
      emit(runtime::kVMGetItem, r, tuple, static_cast<int32_t>(g->index), {});
      return r;
    }
    if (const auto* i = e.as<graph::IfNode>()) {
      int32_t cond = expr(i->cond);
      size_t branch = emit(runtime::kVMIfNot, -1, cond, 0, {});
      int32_t r = new_register();
      ++branch_depth_;  // what a branch computes is not there for the other, nor after the if
      emit(runtime::kVMMove, r, in_branch(i->then_branch), 0, {});
      size_t jump = emit(runtime::kVMGoto, -1, 0, 0, {});
      code_[branch].b = static_cast<int32_t>(code_.size());
      emit(runtime::kVMMove, r, in_branch(i->else_branch), 0, {});
      code_[jump].a = static_cast<int32_t>(code_.size());
      --branch_depth_;
      return r;
    }
    if (const auto* call = e.as<graph::CallNode>()) return call_expr(*call);
    if (const auto* g = e.as<ir::GlobalVarNode>()) fail("@" + g->name + " is used as a value; the VM calls functions");
    if (const auto* op = e.as<ir::OpNode>()) fail("operator '" + op->name + "' is used as a value");
    fail("cannot run a " + std::string(e->type_key()));
  }

  // An if's branch: within it, a size the data decides may be computed
  // early from a call in the branch itself (a loop's body, which runs in
  // the branch that calls the loop again), never from one outside it; what
  // the branch computes is forgotten after it.
  int32_t in_branch(const ir::Expr& e) {
    auto binders = binder_of_;
    auto binds = binds_;
    auto compiled = compiled_packed_;
    auto pending = pending_;
    find_binders(e);
    int32_t r = expr(e);
    binder_of_ = std::move(binders), binds_ = std::move(binds);
    compiled_packed_ = std::move(compiled), pending_ = std::move(pending);
    return r;
  }

  std::vector<int32_t> tuple_fields(const ir::Expr& e, const std::string& what) {
    const auto* t = e.as<graph::TupleNode>();
    if (!t) fail(what + " must be a tuple of arguments");
    std::vector<int32_t> out;
    for (const Any& f : t->fields) out.push_back(expr(f.cast<ir::Expr>()));
    return out;
  }

  int32_t alloc(const Type& type, const std::string& what, int32_t device = 0) {
    const auto* t = type.as<ir::TensorTypeNode>();
    if (!t) fail(what + " must be a tensor, got " + ir::to_text(Any(type)));
    if (t->unknown_rank()) fail(what + " has no known shape (" + ir::to_text(Any(type)) + ")");
    std::vector<ShapeExpr> dims;
    for (const Any& d : t->shape) dims.push_back(shape(d, what, false));
    int32_t r = new_register();
    emit(runtime::kVMAlloc, r, static_cast<int32_t>(allocations_.size()), 0, {});
    alloc_of_[r] = allocations_.size();
    // A shape the data decides is known only once the call that returns
    // it has run: such a tensor is allocated where it is made, outside the
    // plan, whose storages are sized when the function starts.
    bool own = std::any_of(dims.begin(), dims.end(), [&](const ShapeExpr& d) { return decided_by_data(d); });
    allocations_.push_back(vm::Allocation{t->dtype, std::move(dims), r, device, own});
    return r;
  }

  bool decided_by_data(const ShapeExpr& e) const { return decided_by_data(e.get()); }
  bool decided_by_data(const runtime::ShapeExprNode* n) const {
    if (n->shape_op() == ShapeOp::kConst) return false;
    if (n->shape_op() == ShapeOp::kVar) return from_result_[n->value];
    return decided_by_data(static_cast<const runtime::ShapeExprNode*>(n->a.get())) ||
           decided_by_data(static_cast<const runtime::ShapeExprNode*>(n->b.get()));
  }

  int32_t call_expr(const graph::CallNode& call) {
    if (const auto* op = call.callee.as<ir::OpNode>()) {
      if (op->name == "call_dps") {
        const auto* g = call.args[0].as_object_ref().as<ir::GlobalVarNode>();
        if (!g) fail("call_dps needs a global function");
        std::string what = "the output of call_dps @" + g->name;
        std::vector<int32_t> args = tuple_fields(call.args[1].cast<ir::Expr>(), "the inputs of call_dps @" + g->name);
        Type out = call.type_args[0].cast<Type>();
        int32_t device = exe_.callee_device(g->name);
        std::vector<int32_t> dims = scalar_arguments(*g, call, out);
        int32_t result;
        if (const auto* tuple = out.as<ir::TupleTypeNode>()) {
          std::vector<int32_t> outs;
          for (const Any& f : tuple->fields) outs.push_back(alloc(f.cast<Type>(), what, device));
          args.insert(args.end(), outs.begin(), outs.end());
          args.insert(args.end(), dims.begin(), dims.end());
          result = new_register();
          emit(runtime::kVMCallDPS, -1, exe_.callee("dps:" + g->name), 0, args);
          emit(runtime::kVMTuple, result, 0, 0, outs);
        } else {
          result = alloc(out, what, device);
          args.push_back(result);
          args.insert(args.end(), dims.begin(), dims.end());
          emit(runtime::kVMCallDPS, -1, exe_.callee("dps:" + g->name), 0, args);
        }
        return result;
      }
      if (op->name == "device_copy") return device_copy(call);
      if (op->name == "call_packed") {
        auto done = compiled_packed_.find(&call);
        if (done != compiled_packed_.end()) return done->second;  // compiled early, where a type needed it
        std::string name = call.attrs.at("name").as_string();
        std::vector<int32_t> args = tuple_fields(call.args[0].cast<ir::Expr>(), "the arguments of call_packed");
        int32_t r = new_register();
        types_.push_back(
            Any(vm_type(call.type_args[0].cast<Type>(), "the result of call_packed '" + name + "'", true)));
        emit(runtime::kVMCallPacked, r, exe_.callee("packed:" + name), static_cast<int32_t>(types_.size() - 1), args);
        if (binds_.count(&call)) compiled_packed_[&call] = r;
        return r;
      }
      fail("operator '" + op->name +
           "' must be lowered before the VM runs it (LegalizeOps turns operators into "
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
      emit(runtime::kVMCallGraph, r, found->second, 0, args);
      return r;
    }
    fail("calls of local function values are not supported; call global functions");
  }

  // Whether a value may be computed before its turn: no effect to reorder
  // (the registry functions of sizes the data decides have none).
  static bool early_ok(const ir::Expr& value) {
    if (const auto* c = value.as<graph::CallNode>()) {
      const auto* op = c->callee.as<ir::OpNode>();
      if (op && op->name == "call_packed") return pure_packed(*c);
    }
    return graph::is_pure(value);
  }
  static bool pure_packed(const graph::CallNode& call) {
    static const std::set<std::string> pure = {"runtime.nonzero",    "runtime.unique", "runtime.non_max_suppression",
                                               "runtime.topk",       "runtime.slice",  "runtime.roi_align",
                                               "runtime.bind_shape", "runtime.dims"};
    return pure.count(call.attrs.at("name").as_string()) > 0;
  }

  // The call_packed calls whose result type names a variable no parameter
  // binds (a size the data decides), by variable: the first in `root`
  // outside any if within it, which the compiler may compile early where a
  // type at the same if depth needs its size; and the lets outside any if
  // within root, by variable, which such a call may read.  Root is the
  // function's body, then each if's branch as it is compiled (in_branch()).
  void find_binders(const ir::Expr& root) {
    std::vector<const Object*> stack{root.get()};
    std::unordered_set<const Object*> seen;
    auto push = [&](const Any& a) {
      if (a.object() && dynamic_cast<const ir::ExprNode*>(a.object())) stack.push_back(a.object());
    };
    while (!stack.empty()) {
      const Object* o = stack.back();
      stack.pop_back();
      if (!seen.insert(o).second) continue;
      if (const auto* l = dynamic_cast<const graph::LetNode*>(o)) {
        pending_.emplace(l->var.get(), std::make_pair(l->value, branch_depth_));
        push(Any(l->body)), push(Any(l->value));  // (a stack: the value, earlier in the program, first)
      } else if (const auto* t = dynamic_cast<const graph::TupleNode*>(o)) {
        for (const Any& f : t->fields) push(f);
      } else if (const auto* g = dynamic_cast<const graph::TupleGetItemNode*>(o)) {
        push(Any(g->tuple));
      } else if (const auto* c = dynamic_cast<const graph::CallNode*>(o)) {
        for (const Any& a : c->args) push(a);
        const auto* op = c->callee.as<ir::OpNode>();
        if (op && op->name == "call_packed" && c->type_args.size() > 0) {
          // The call that makes the size, not one that only passes it on
          // (roi_align's regions, counted by the nonzero before it).
          std::unordered_set<const Object*> read;
          if (const auto* args = c->args[0].as_object_ref().as<graph::TupleNode>()) {
            for (const Any& a : args->fields) {
              for (const tir::VarNode* v :
                   tir::used_vars(Any(a.cast<ir::Expr>()->checked_type), [](const tir::VarNode*) { return true; })) {
                read.insert(v);
              }
            }
          }
          for (const tir::VarNode* v : whole_dim_vars(c->type_args[0].cast<Type>())) {
            if (!slot_of(v) && !read.count(v) && binder_of_.emplace(v, std::make_pair(c, branch_depth_)).second) {
              binds_.insert(c);
            }
          }
        }
      }
      // (an if's branches are not searched: what they compute is theirs)
      if (const auto* i = dynamic_cast<const graph::IfNode*>(o)) push(Any(i->cond));
    }
  }

  static std::vector<const tir::VarNode*> whole_dim_vars(const Type& type) {
    std::vector<const tir::VarNode*> out;
    if (const auto* t = type.as<ir::TensorTypeNode>()) {
      if (!t->unknown_rank())
        for (const Any& d : t->shape)
          if (const auto* v = dynamic_cast<const tir::VarNode*>(d.object())) out.push_back(v);
    } else if (const auto* t = type.as<ir::TupleTypeNode>()) {
      for (const Any& f : t->fields)
        for (const tir::VarNode* v : whole_dim_vars(f.cast<Type>())) out.push_back(v);
    }
    return out;
  }

  // The scalar parameters of a prim function when one is not a whole
  // dimension of its buffers (%n where they only have min(%n, 150)): the
  // kernel cannot read it from its buffers' shapes, so the call passes
  // them all, each found by matching the kernel's buffer shapes against
  // the call's tensor types (and the expressions its composite dimensions'
  // scalars stand for, the attribute composite_scalars) and computed from
  // this frame's variables (kVMDim).  Empty when the kernel can read every one, or when one cannot
  // be found (the kernel then reports it when called).
  std::vector<int32_t> scalar_arguments(const ir::GlobalVarNode& g, const graph::CallNode& call, const Type& out) {
    const auto* f = exe_.module().lookup(g.name).as<tir::PrimFuncNode>();
    if (!f) return {};
    std::vector<const tir::BufferNode*> buffers;
    std::vector<const tir::VarNode*> scalars;
    std::unordered_map<const Object*, Any> value_of;  // kernel variable -> the caller's dimension
    for (const Any& p : f->params) {
      if (const auto* b = p.as_object_ref().as<tir::BufferNode>()) {
        if (!scalars.empty()) return {};  // scalars must follow the buffers
        buffers.push_back(b);
      } else if (const auto* v = p.as_object_ref().as<tir::VarNode>()) {
        scalars.push_back(v);
      }
    }
    if (scalars.empty()) return {};
    std::set<const Object*> readable;  // the variables that are a whole dimension of a buffer
    for (const tir::BufferNode* b : buffers)
      for (const Any& d : b->shape) readable.insert(d.object());
    if (std::all_of(scalars.begin(), scalars.end(), [&](const tir::VarNode* v) { return readable.count(v); }))
      return {};
    std::vector<Type> types;  // the tensors the kernel gets, in order
    if (const auto* inputs = call.args[1].as_object_ref().as<graph::TupleNode>())
      for (const Any& a : inputs->fields) types.push_back(a.cast<ir::Expr>()->checked_type);
    if (const auto* tuple = out.as<ir::TupleTypeNode>()) {
      for (const Any& t : tuple->fields) types.push_back(t.cast<Type>());
    } else {
      types.push_back(out);
    }
    if (types.size() != buffers.size()) return {};
    for (size_t k = 0; k < buffers.size(); ++k) {
      const auto* t = types[k].as<ir::TensorTypeNode>();
      if (!t || t->unknown_rank() || t->shape.size() != buffers[k]->shape.size()) return {};
      for (size_t d = 0; d < t->shape.size(); ++d) match(buffers[k]->shape[d], t->shape[d], value_of);
    }
    // A dimension's own scalar (PrimBuilder: min(%n, 150)) gives the variables it stands for over.
    if (f->attrs.defined() && f->attrs.contains("composite_scalars")) {
      for (const Any& entry : f->attrs.at("composite_scalars").cast<Array>()) {
        const Array pair = entry.cast<Array>();
        auto known = value_of.find(pair[0].object());
        if (pair.size() == 2 && known != value_of.end()) match(pair[1], known->second, value_of);
      }
    }
    std::vector<int32_t> regs;
    for (const tir::VarNode* v : scalars) {
      auto found = value_of.find(v);
      if (found == value_of.end() || !computable(found->second)) return {};
      types_.push_back(Any(VMType::tensor(
          DataType::Int(64), std::vector<ShapeExpr>{shape(found->second, "a scalar argument of @" + g.name, false)})));
      int32_t r = new_register();
      emit(runtime::kVMDim, r, 0, static_cast<int32_t>(types_.size() - 1), {});
      regs.push_back(r);
    }
    return regs;
  }

  // Whether a caller's dimension has only variables this frame binds.
  bool computable(const Any& dim) const {
    for (const tir::VarNode* v : tir::used_vars(dim, [](const tir::VarNode*) { return true; }))
      if (!slot_of(v) && !binder_of_.count(v)) return false;
    return true;
  }

  // Matches a kernel's dimension against the caller's, node by node: each
  // kernel variable takes the caller's expression in its place.
  static void match(const Any& kernel, const Any& caller, std::unordered_map<const Object*, Any>& value_of) {
    if (dynamic_cast<const tir::VarNode*>(kernel.object())) {
      value_of.emplace(kernel.object(), caller);
      return;
    }
    const auto* a = dynamic_cast<const tir::BinaryOpNode*>(kernel.object());
    const auto* b = dynamic_cast<const tir::BinaryOpNode*>(caller.object());
    if (a && b && a->type_index() == b->type_index()) {
      match(Any(a->a), Any(b->a), value_of);
      match(Any(a->b), Any(b->b), value_of);
    }
  }

  // device_copy(x, src, dst): a constant is placed on dst once (kVMConst
  // with a device); another value is copied into a tensor allocated on
  // dst from dst's plan.
  int32_t device_copy(const graph::CallNode& call) {
    ir::Expr x = call.args[0].cast<ir::Expr>();
    int32_t dst = exe_.device(call.attrs.at("dst").as_device());
    if (const auto* c = x.as<graph::ConstantNode>()) {
      int32_t r = new_register();
      emit(runtime::kVMConst, r, exe_.constant(Any(c->data)), dst, {});
      return r;
    }
    int32_t src = expr(x);
    if (call.attrs.at("src").as_device() == call.attrs.at("dst").as_device()) return src;
    int32_t r = alloc(call.checked_type, "the result of device_copy", dst);
    emit(runtime::kVMCopy, r, src, 0, {});
    return r;
  }

  std::string name_;
  ExecutableBuilder& exe_;
  const std::map<std::string, int>& graph_functions_;
  std::unordered_map<const Object*, int32_t> vars_;
  std::vector<std::pair<const Object*, std::string>> shape_vars_;  // by slot
  std::vector<bool> from_result_;  // by slot: bound by a call_packed result (the data decides it), not a parameter
  // find_binders: a variable -> the call that binds it, at its if depth
  std::unordered_map<const Object*, std::pair<const graph::CallNode*, int>> binder_of_;
  std::unordered_set<const graph::CallNode*> binds_;                     // the calls in binder_of_
  std::unordered_map<const graph::CallNode*, int32_t> compiled_packed_;  // such a call -> its register
  int branch_depth_ = 0;                                                 // inside how many if branches
  // find_binders: a let's variable -> its value, at its if depth
  std::unordered_map<const Object*, std::pair<ir::Expr, int>> pending_;
  std::unordered_set<const Object*> compiling_early_;  // the lets compiled before their turn
  std::vector<Instr> code_;
  std::vector<vm::Allocation> allocations_;
  std::unordered_map<int32_t, size_t> alloc_of_;  // register -> allocation
  std::vector<Any> types_;
  int32_t num_registers_ = 0;
};

// The host target's thread count (else the target's), through its kind's
// threads trait.
int64_t threads_of(const ir::IRModule& module) {
  for (const char* key : {"host", "target"}) {
    if (!module->attrs.contains(key)) continue;
    target::Target target = module->attrs.at(key).cast<target::Target>();
    return target.defined() ? target::num_threads(target) : 0;
  }
  return 0;
}
// The float operations of one call of `callee` ("dps:NAME"), -1 when
// unknown: a prim function's count (tir::float_ops, the kernels a host
// function launches included); externs, regions and packed calls are -1.
int64_t callee_flops(const ir::IRModule& module, const std::string& callee) {
  auto prim = [&](const std::string& name) -> std::optional<tir::PrimFunc> {
    if (!module.contains(name) || !module.lookup(name).as<tir::PrimFuncNode>()) return std::nullopt;
    return downcast<tir::PrimFunc>(module.lookup(name));
  };
  if (!starts_with(callee, "dps:")) return -1;
  std::optional<tir::PrimFunc> f = prim(callee.substr(4));
  if (!f) return -1;
  std::optional<int64_t> n = tir::float_ops(*f, [&](const std::string& kernel) -> std::optional<int64_t> {
    std::optional<tir::PrimFunc> k = prim(kernel);
    return k ? tir::float_ops(*k) : std::nullopt;
  });
  return n.value_or(-1);
}

}  // namespace

const std::vector<std::string>& vm_needs() {
  // (Types it infers itself: check_module.)
  static const std::vector<std::string> needs{transform::property::kOpsLowered};
  return needs;
}

runtime::Module vm_compile(const ir::IRModule& input) {
  ir::IRModule module = graph::check_module(input);
  std::map<std::string, int> graph_functions;
  std::vector<std::string> names;
  for (const std::string& name : module.names()) {
    // A codegen's functions (a partitioned region, its composites) are
    // built by that codegen and called through call_dps.
    if (module.lookup(name).as<graph::FunctionNode>() && graph::codegen_of(module.lookup(name)).empty()) {
      graph_functions[name] = static_cast<int>(names.size());
      names.push_back(name);
    }
  }
  if (names.empty()) LOOM_THROW(Error) << "VM: the module has no graph function to compile";
  ExecutableBuilder builder(module);
  std::vector<Any> functions;
  for (const std::string& name : names) {
    FunctionCompiler compiler(name, builder, graph_functions);
    functions.push_back(Any(compiler.compile(*module.lookup(name).as<graph::FunctionNode>())));
  }
  auto exe = make_object<runtime::VMExecutableNode>();
  exe->functions = Array(functions);
  exe->constants = Array(builder.constants);
  exe->callees = Array(std::vector<Any>(builder.callees.begin(), builder.callees.end()));
  if (builder.devices.size() > 1)
    exe->devices = Array(std::vector<Any>(builder.devices.begin(), builder.devices.end()));
  exe->num_threads = threads_of(module);
  std::vector<Any> flops;
  for (const std::string& callee : builder.callees) flops.push_back(Any(callee_flops(module, callee)));
  exe->callee_flops = Array(flops);
  return runtime::make_vm_module(ObjectRef(exe));
}

}  // namespace loom::driver
