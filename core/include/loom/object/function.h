// Packed functions and the global function registry.
//
// A Function is an object wrapping a callable that takes a span of Any and
// returns an Any; Function::typed() wraps an ordinary C++ callable and checks
// argument count and types with messages that name the function and the
// argument.  The registry maps dotted names ("hello.greet") to functions.
//
// Registry rules:
//   - names are [A-Za-z0-9_.]+, not empty;
//   - registering a name that exists is an Error naming the current owner,
//     unless allow_override is set (the previous entry comes back if the
//     registering plugin's init later fails);
//   - a lookup that misses asks the plugin manager for the capability
//     "function:NAME" (lazy loading) before reporting LookupError with the
//     closest registered name.
#ifndef LOOM_OBJECT_FUNCTION_H_
#define LOOM_OBJECT_FUNCTION_H_

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/object/any.h"
#include "loom/object/object.h"
#include "loom/object/reflection.h"

namespace loom {

class FunctionNode : public Object {
 public:
  using Body = std::function<Any(const Any* args, int32_t count)>;
  Body body;
  std::string name;  // for messages; may be empty
  LOOM_OBJECT(FunctionNode, Object, "Function");
};

class Function : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Function, ObjectRef, FunctionNode)
  Function(FunctionNode::Body body, std::string name = "");

  Any call(const Any* args, int32_t count) const;
  template <class... Args>
  Any operator()(Args&&... args) const {
    if constexpr (sizeof...(Args) == 0) {
      return call(nullptr, 0);
    } else {
      const Any packed[] = {Any(std::forward<Args>(args))...};
      return call(packed, static_cast<int32_t>(sizeof...(Args)));
    }
  }

  // Wraps a C++ callable with typed parameters (bool, integers, floats,
  // std::string, DataType, Device, void*, Any or object handles).
  template <class F>
  static Function typed(F callable, std::string name = "");

 private:
  template <class R, class... Args>
  static Function typed_impl(std::function<R(Args...)> fn, std::string name);
};

[[noreturn]] void throw_arity_error(const std::string& name, int expected, int got);
[[noreturn]] void throw_argument_error(const std::string& name, int index, const std::exception& e);

namespace detail {
template <class T>
T cast_argument(const Any* args, int index, const std::string& name) {
  try {
    return args[index].template cast<T>();
  } catch (const std::exception& e) {
    throw_argument_error(name, index, e);
  }
}

template <class R, class... Args, size_t... I>
Any invoke_typed(const std::function<R(Args...)>& fn, const Any* args, const std::string& name,
                 std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    fn(cast_argument<std::decay_t<Args>>(args, static_cast<int>(I), name)...);
    return Any();
  } else {
    return Any(fn(cast_argument<std::decay_t<Args>>(args, static_cast<int>(I), name)...));
  }
}
}  // namespace detail

template <class R, class... Args>
Function Function::typed_impl(std::function<R(Args...)> fn, std::string name) {
  return Function(
      [fn = std::move(fn), name](const Any* args, int32_t count) -> Any {
        constexpr int32_t arity = sizeof...(Args);
        if (count != arity) throw_arity_error(name, arity, count);
        return detail::invoke_typed(fn, args, name, std::index_sequence_for<Args...>{});
      },
      name);
}

template <class F>
Function Function::typed(F callable, std::string name) {
  return typed_impl(std::function(std::move(callable)), std::move(name));
}

struct FunctionEntry {
  std::string name;
  Function function;
  std::string doc;
  std::string owner;  // "core", a plugin name, ...
};

class FunctionRegistry {
 public:
  static void register_function(const std::string& name, Function function, std::string doc = "",
                                bool allow_override = false);
  // Looks up `name`, loading the plugin that provides it if needed.
  static std::optional<Function> find(const std::string& name);
  // As find(), but throws LookupError ("no function 'x'; did you mean 'y'?").
  static Function get(const std::string& name);
  static std::optional<FunctionEntry> entry(const std::string& name);
  static std::vector<std::string> list();
  static std::vector<std::string> list_owned_by(const std::string& owner);
  static bool remove(const std::string& name);
};

}  // namespace loom

#endif  // LOOM_OBJECT_FUNCTION_H_
