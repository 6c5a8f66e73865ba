/* Calls through the C API's tables for cgo, which cannot call a function
 * pointer itself (bindings/go, docs/languages.md). */
#ifndef LOOM_GO_API_H_
#define LOOM_GO_API_H_

#include <stdlib.h>
#include <string.h>

#include <loom/c_api.h>

static const LoomApi* loom_go_api(void) { return LoomGetApi(1); }
static const char* loom_go_last_error(void) { return LoomGetLastError(); }
static LoomStatus loom_go_release(LoomObject* o) { return LoomGetApi(1)->object_release(o); }
static LoomStatus loom_go_retain(LoomObject* o) { return LoomGetApi(1)->object_retain(o); }
static LoomStatus loom_go_use_count(LoomObject* o, int32_t* n) { return LoomGetApi(1)->object_use_count(o, n); }
static LoomStatus loom_go_type_key(LoomObject* o, const char** k) { return LoomGetApi(1)->object_type_key(o, k); }
static LoomStatus loom_go_value_release(LoomValue* v) { return LoomGetApi(1)->value_release(v); }
static LoomStatus loom_go_module_load(const char* path, LoomObject** out) {
  return LoomGetApi(1)->module_load(path, NULL, out);
}
static LoomStatus loom_go_get_function(LoomObject* m, const char* name, LoomObject** out) {
  return LoomGetApi(1)->module_get_function(m, name, out);
}
static LoomStatus loom_go_function_names(LoomObject* m, LoomValue* out) {
  return LoomGetApi(1)->module_function_names(m, out);
}
/* The call, whether its result is a tensor, and on failure a copy of the
 * message (the caller frees it): one crossing for all, so the goroutine
 * need not stay on its thread to read the thread's error. */
static LoomStatus loom_go_call(LoomObject* f, const LoomValue* args, int32_t n, LoomValue* out, int* is_tensor,
                               char** error) {
  const LoomApi* api = LoomGetApi(1);
  const char* key = NULL;
  LoomStatus status = api->function_call(f, args, n, out);
  *is_tensor = status == LOOM_OK && out->kind == LOOM_OBJECT &&
               api->object_type_key(out->v.v_object, &key) == LOOM_OK && strcmp(key, "runtime.NDArray") == 0;
  *error = status == LOOM_OK ? NULL : strdup(api->last_error());
  return status;
}
static LoomStatus loom_go_global_get(const char* name, LoomObject** out) {
  return LoomGetApi(1)->global_function_get(name, out);
}
static LoomStatus loom_go_global_register(const char* name, LoomObject* f, int32_t allow) {
  return LoomGetApi(1)->global_function_register(name, f, allow);
}
static LoomStatus loom_go_tensor_empty(const int64_t* shape, int32_t ndim, uint8_t code, uint8_t bits,
                                       LoomObject** out) {
  DLDataType t = {code, bits, 1};
  DLDevice cpu = {kDLCPU, 0};
  return LoomGetApi(1)->tensor_empty(shape, ndim, t, cpu, out);
}
static LoomStatus loom_go_dltensor(LoomObject* t, const DLTensor** out) {
  return LoomGetApi(1)->tensor_get_dltensor(t, out);
}
static LoomStatus loom_go_to_dlpack(LoomObject* t, DLManagedTensor** out) {
  return LoomGetApi(1)->tensor_to_dlpack(t, out);
}
static LoomStatus loom_go_from_dlpack(DLManagedTensor* m, LoomObject** out) {
  return LoomGetApi(1)->tensor_from_dlpack(m, out);
}
static void loom_go_set_error(const char* message) { LoomGetApi(1)->set_last_error(message); }

/* A Go function as a Loom function (callback.go). */
extern LoomStatus loomGoCallback(void* resource, LoomValue* args, int32_t num_args, LoomValue* result);
extern void loomGoRelease(void* resource);
/* A string result stays allocated until the same thread's next one: Loom
 * copies it when the callback returns, after the Go side could free it. */
static __thread char* loom_go_last_string;
static LoomStatus loom_go_trampoline(void* resource, const LoomValue* args, int32_t n, LoomValue* result) {
  LoomStatus status = loomGoCallback(resource, (LoomValue*)args, n, result);
  if (status == LOOM_OK && result->kind == LOOM_STR) {
    free(loom_go_last_string);
    loom_go_last_string = (char*)result->v.v_str;
  }
  return status;
}
static LoomStatus loom_go_function_from_go(uintptr_t id, LoomObject** out) {
  return LoomGetApi(1)->function_from_c(loom_go_trampoline, (void*)id, loomGoRelease, out);
}

#endif
