// What the C API's two tables share (core/src/runtime/c_api.cc for the
// runtime's, core/src/driver/c_compiler_api.cc for the compiler's): the
// per-thread error, handles, value conversions and the guard that keeps
// every exception on this side of the boundary (docs/c-api.md).
#ifndef LOOM_SRC_RUNTIME_C_API_INTERNAL_H_
#define LOOM_SRC_RUNTIME_C_API_INTERNAL_H_

#include <exception>
#include <string>

#include "loom/c_api.h"
#include "loom/object/any.h"
#include "loom/support/error.h"

namespace loom::c_api {

// Sets the calling thread's error; LOOM_ERROR.
LoomStatus fail(const std::string& message);
const char* last_error();
void set_last_error(const char* message);
// Whether `version` of `table` ("LoomApi") exists; otherwise the error names both versions.
bool version_supported(uint32_t version, const char* table);

// The object of a handle; Error naming `what` for NULL.
Object* object_of(LoomObject* handle, const char* what);
// A new reference to `ref`'s object as a handle (NULL for an undefined ref).
LoomObject* give(const ObjectRef& ref);
// The handle's object as a reference of its own.
ObjectRef ref_of(LoomObject* handle);
// The handle as a `Ref` (a module, a function, a tensor); Error naming
// `what` for NULL and the object's type for another kind of object.
template <class Ref>
Ref handle_as(LoomObject* handle, const char* what) {
  ObjectRef ref = ref_of(handle ? handle : throw Error(std::string(what) + " is NULL"));
  if (!ref.get()->is_instance<typename Ref::ContainerType>())
    throw Error(std::string("expected ") + what + " (" + Ref::ContainerType::_type_key + "), got an object of type " +
                ref.get()->type_key());
  return Ref(ref.object_ptr());
}
// An argument as an Any (objects with a reference of the Any's own).
Any to_any(const LoomValue& value);
// A result as a LoomValue the caller owns (release_value).
LoomValue to_value(const Any& value);
void release_value(LoomValue* value);

// Runs `f`; LOOM_OK, or the exception's message as the thread's error.
template <class F>
LoomStatus guard(F&& f) noexcept {
  try {
    f();
    return LOOM_OK;
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("an unknown C++ exception");
  }
}

}  // namespace loom::c_api

#endif  // LOOM_SRC_RUNTIME_C_API_INTERNAL_H_
