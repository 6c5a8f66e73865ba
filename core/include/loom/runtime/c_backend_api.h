/* The C interface between compiled host code and the Loom runtime
 * (docs/runtime.md, "Host libraries").  Plain C, so that generated C, LLVM
 * IR and hand-written assembly can all follow it.
 *
 * A host library is a shared object that defines:
 *   - its functions, each a LoomBackendFunc;
 *   - `__loom_library_abi` (uint32_t, LOOM_LIBRARY_ABI);
 *   - `__loom_function_table`: {name, function} pairs ending with {0, 0};
 *   - `__loom_host_api` and `__loom_module_ctx`: two pointers the runtime
 *     fills when it opens the library, before any function runs;
 *   - optionally `__loom_module_blob` / `__loom_module_blob_size`: the
 *     serialized module tree (export_library writes these).
 * export_library generates all but the functions themselves.
 *
 * Host code reaches the runtime only through `__loom_host_api` (never by
 * linking libloom_core), so a library loads the same way into loomc, a test
 * or Python.  A function returns 0 on success; on failure it calls
 * set_last_error and returns non-zero, and the runtime raises the message. */
#ifndef LOOM_RUNTIME_C_BACKEND_API_H_
#define LOOM_RUNTIME_C_BACKEND_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_LIBRARY_ABI 1u

/* Type codes of LoomValue. */
enum {
  kLoomNull = 0,
  kLoomInt = 1,      /* v_int64 */
  kLoomFloat = 2,    /* v_float64 */
  kLoomHandle = 3,   /* v_handle: an opaque pointer */
  kLoomDLTensor = 4, /* v_handle: a DLTensor* valid for the call */
  kLoomStr = 5,      /* v_str: valid for the call */
};

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
} LoomValue;

/* A function of a host library.  `ret` / `ret_code` receive the result
 * (ret_code kLoomNull for none); `resource` is reserved (null). */
typedef int32_t (*LoomBackendFunc)(const LoomValue* args, const int32_t* codes, int32_t num_args, LoomValue* ret,
                                   int32_t* ret_code, void* resource);

typedef struct {
  const char* name;
  LoomBackendFunc function;
} LoomFunctionEntry;

/* Filled by the runtime; `version` is LOOM_LIBRARY_ABI. */
typedef struct {
  uint32_t version;
  /* The function `name` of the calling library's imported modules (depth
   * first); *out stays valid while the library is loaded.  Non-zero (with
   * the last error set) when no import defines it. */
  int32_t (*get_function)(void* module_ctx, const char* name, void** out);
  /* Calls a function from get_function; a kLoomDLTensor result is not
   * allowed (destination passing). */
  int32_t (*call_function)(void* function, const LoomValue* args, const int32_t* codes, int32_t num_args,
                           LoomValue* ret, int32_t* ret_code);
  void (*set_last_error)(const char* message);
  /* Runs body(begin', end', closure) on chunks of [begin, end) in the
   * runtime's thread pool; non-zero when a chunk returned non-zero. */
  int32_t (*parallel_for)(int64_t begin, int64_t end, int32_t (*body)(int64_t, int64_t, void*), void* closure);
  /* Temporary buffers on a device (DLPack device type and id). */
  void* (*alloc_workspace)(int32_t device_type, int32_t device_id, uint64_t bytes);
  int32_t (*free_workspace)(int32_t device_type, int32_t device_id, void* ptr);
} LoomHostApi;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_RUNTIME_C_BACKEND_API_H_ */
