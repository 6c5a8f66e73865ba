// The ir base's constructors in the global function registry, under each
// node's type key ("ir.GlobalVar", "ir.IRModule", ...), plus the operator
// registry's queries ("ir.op_info", ...).  The graph and tir areas register
// their own nodes' constructors the same way (core/src/graph/constructors.cc,
// core/src/tir/constructors.cc), with the argument checks of
// loom/ir/constructors.h: this is how a frontend (the Python package,
// docs/python.md "Builders") builds nodes, through the C++ constructors, so
// derived fields and checks are the same as in C++.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loom/ir/constructors.h"
#include "loom/ir/module.h"
#include "loom/ir/op.h"
#include "loom/support/registration.h"

namespace loom::ir {
namespace {

using namespace constructor_args;  // NOLINT: def, need, list, or_empty

void register_types() {
  def(
      "ir.GlobalVar", [](std::string name) { return GlobalVar(std::move(name)); }, "ir.GlobalVar(name)");
  def(
      "ir.Op", [](std::string name) { return Op::get(name); },
      "ir.Op(name): the registered operator (loads the plugin that provides it)");
  def(
      "ir.PrimType", [](DataType dtype) { return PrimType(dtype); }, "ir.PrimType(dtype)");
  def(
      "ir.TupleType", [](Array fields) { return TupleType(list<Type>(fields, "ir.TupleType", "fields")); },
      "ir.TupleType(fields)");
  def(
      "ir.FuncType", [](Array params, Type ret) { return FuncType(list<Type>(params, "ir.FuncType", "params"), ret); },
      "ir.FuncType(params, ret or none)");
  def(
      "ir.OpaqueType", [](std::string name) { return OpaqueType(std::move(name)); }, "ir.OpaqueType(name)");
}

void register_module() {
  def(
      "ir.ExternFunc",
      [](std::string kind, std::string payload, FuncType signature, std::string convention, Map attrs,
         std::string encoding) {
        if (encoding != "text" && encoding != "base64") {
          LOOM_THROW(Error) << "ir.ExternFunc: encoding is 'text' or 'base64', not '" << encoding << "'";
        }
        ExternFunc f(std::move(kind), std::move(payload), need(signature, "ir.ExternFunc", "signature"),
                     std::move(convention), or_empty(attrs));
        const_cast<ExternFuncNode*>(f.get())->encoding = encoding;  // a new node: not shared yet
        return f;
      },
      "ir.ExternFunc(kind, payload, signature: FuncType, convention 'dps' or 'packed', attrs, encoding 'text' or "
      "'base64')");
  def(
      "ir.IRModule",
      [](Map functions, Map attrs, Map global_infos) {
        std::map<std::string, Any> checked;
        if (functions.defined()) {
          for (const auto& [name, f] : functions.get()->items) {
            try {
              checked[name] = need(f.cast<BaseFunc>(), "ir.IRModule", "a function");
            } catch (const Error& e) {
              LOOM_THROW(TypeError) << "ir.IRModule: function '" << name << "': " << e.what();
            }
          }
        }
        return IRModule(checked, or_empty(attrs), or_empty(global_infos));
      },
      "ir.IRModule(functions: {name: function}, attrs, global_infos)");
  def(
      "ir.IRModule.with_function",
      [](IRModule mod, std::string name, BaseFunc f) {
        return need(mod, "ir.IRModule.with_function", "module")
            .with_function(name, need(f, "ir.IRModule.with_function", "function"));
      },
      "the module with `name` bound to `function`");
  def(
      "ir.IRModule.with_attr",
      [](IRModule mod, std::string key, Any value) {
        return need(mod, "ir.IRModule.with_attr", "module").with_attr(key, value);
      },
      "the module with attribute `key` set");
}

// The operator registry, for builders that check a call before making it.
void register_op_queries() {
  def(
      "ir.op_list", [] { return to_array(with_available(OpRegistry::list(), "op")); },
      "the operators registered or provided by a discovered plugin (loads nothing)");
  def(
      "ir.op_info",
      [](std::string name) {
        OpEntry e = OpRegistry::get(name);
        std::vector<Any> attrs;
        for (const OpAttrField& f : e.def.attrs) {
          attrs.push_back(Map{{"name", f.name}, {"type", f.type}, {"default", f.default_value}, {"doc", f.doc}});
        }
        return Map{{"name", e.name},        {"num_inputs", static_cast<int64_t>(e.def.num_inputs)},
                   {"attrs", Array(attrs)}, {"pattern", std::string(pattern_kind_name(e.def.pattern))},
                   {"doc", e.def.doc},      {"owner", e.owner}};
      },
      "an operator's arity (-1: any), attribute schema (name, type, default: none if required, doc), "
      "pattern, doc and owner");
  def(
      "ir.op_check_attrs", [](std::string name, Map attrs) { return OpRegistry::check_attrs(name, or_empty(attrs)); },
      "the attributes checked against the operator's schema, defaults filled in (TypeError otherwise)");
}

const bool registered = [] {
  register_types();
  register_module();
  register_op_queries();
  return true;
}();

}  // namespace
}  // namespace loom::ir
