// What the C API's two tables share (core/src/runtime/c_api.cc for the
// runtime's, core/src/driver/c_compiler_api.cc for the compiler's): the
// per-thread error, handles, value conversions and the guard that keeps
// every exception on this side of the boundary (docs/c-api.md).
#ifndef LOOM_SRC_RUNTIME_C_API_INTERNAL_H_
#define LOOM_SRC_RUNTIME_C_API_INTERNAL_H_

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
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
// The reference a callback hands over with `handle` (NULL: none), now the
// caller's: the handle's own reference is released.
ObjectRef take(LoomObject* handle);
// `resource`, kept while a copy lives, then given to `finalizer` (if not NULL).
std::shared_ptr<void> owned_resource(void* resource, void (*finalizer)(void*));

// A caller's argument struct `in`, which may come from an older header and
// be smaller than T: the fields its struct_size covers, over `defaults`.
// Error naming `what` when it is NULL or its struct_size is unset.
template <class T>
T with_defaults(const T* in, T defaults, const std::string& what) {
  if (!in || in->struct_size < sizeof(size_t))
    throw Error(what + ": no struct, or its struct_size (" + (in ? std::to_string(in->struct_size) : "-") +
                ") is unset; set it to sizeof the struct");
  std::memcpy(&defaults, in, std::min(in->struct_size, sizeof(T)));
  return defaults;
}

// Runs a C callback (`call`, returning its status) so that the thread's
// error after a failure is the callback's own ("" when it set none), and
// the message an earlier call left comes back after a success.
template <class F>
LoomStatus call_back(F&& call) {
  std::string earlier = last_error();
  set_last_error("");
  LoomStatus status = call();
  if (status == LOOM_OK) set_last_error(earlier.c_str());
  return status;
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
