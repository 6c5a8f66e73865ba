/* The C interface between compiled host code and the Loom runtime
 * (docs/runtime.md, "Host libraries").  Plain C, so that generated C, LLVM
 * IR and hand-written assembly can all follow it.  It is the one source of
 * this ABI: the runtime, the llvm codegen (offsets taken with offsetof) and
 * every generated C file (the table export_library writes, the asm
 * plugin's wrappers, which #include this very text) read its layout from
 * here.
 *
 * A host library is a shared object that defines:
 *   - its functions, each a LoomBackendFunc;
 *   - `__loom_library_abi` (uint32_t, LOOM_LIBRARY_ABI);
 *   - `__loom_host_api_size` (uint32_t): sizeof(LoomHostApi) as the
 *     library's code was compiled; the runtime refuses a library that
 *     expects more than it provides;
 *   - `__loom_function_table`: LoomFunctionEntry items ending with one
 *     whose name is null;
 *   - `__loom_host_api` and `__loom_module_ctx`: two pointers the runtime
 *     fills when it opens the library, before any function runs;
 *   - optionally `__loom_module_blob` / `__loom_module_blob_size`: the
 *     serialized module tree (export_library writes these).
 * export_library generates all but the functions themselves.
 *
 * Host code reaches the runtime only through `__loom_host_api` (never by
 * linking libloom_runtime), so a library loads the same way into loomc, a
 * test or Python.  A function returns 0 on success; on failure it calls
 * set_last_error and returns non-zero, and the runtime raises the message.
 *
 * Rules: every struct that crosses between the runtime and generated code
 * starts with `struct_size`; fields are only appended (the struct_size
 * tells each side what the other has).  Any other change bumps
 * LOOM_LIBRARY_ABI.  Changelog:
 *   1  first version.
 *   2  struct_size first in LoomHostApi and LoomFunctionEntry;
 *      __loom_host_api_size. */
#ifndef LOOM_RUNTIME_C_BACKEND_API_H_
#define LOOM_RUNTIME_C_BACKEND_API_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_LIBRARY_ABI 2u

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

/* One function of a library's table; every entry has the same size. */
typedef struct {
  uint32_t struct_size; /* sizeof(LoomFunctionEntry) as the library was compiled */
  const char* name;     /* null in the entry that ends the table */
  LoomBackendFunc function;
} LoomFunctionEntry;

/* Filled by the runtime. */
typedef struct {
  uint32_t struct_size; /* sizeof(LoomHostApi) as the runtime knows it */
  uint32_t version;     /* LOOM_LIBRARY_ABI */
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
