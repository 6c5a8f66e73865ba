/* loom/c_api.h: Loom's stable C API (docs/c-api.md).
 *
 * A C99 program (or any language with a C foreign-function interface)
 * reaches Loom through one exported entry per library:
 *
 *   const LoomApi* LoomGetApi(uint32_t version);                libloom_runtime
 *   const LoomCompilerApi* LoomGetCompilerApi(uint32_t version); libloom_core
 *
 * Each returns a table of function pointers, or NULL for a version newer
 * than the library (LoomGetLastError() then names both versions).  A
 * deployed program links libloom_runtime alone and uses LoomApi: load an
 * exported library, get its functions, call them on DLPack tensors.
 *
 * Compatibility (docs/c-api.md, "Compatibility"):
 *  - A table is frozen per version: a new version only appends entries at
 *    its end and never changes or removes one, so a program built against
 *    version N runs with every library of a version >= N (it asks for N and
 *    gets a table whose first entries are those of N).
 *  - Every argument struct that may grow starts with `size_t struct_size`,
 *    which the caller sets to sizeof the struct it was built with; fields
 *    past that size take their defaults, so a program built against an
 *    older header passes a smaller struct safely.
 *  - Adding an entry or a struct field bumps LOOM_API_VERSION and the
 *    core's minor version; changing or removing one would bump the major
 *    version and is not done within a major version.
 *
 * Handles: a LoomObject* is one counted reference to a Loom object (a
 * module, a function, a tensor, any other object).  Every handle an entry
 * returns through an out-parameter is new and owned by the caller, who
 * gives it back with object_release; object_retain adds a reference.
 *
 * Errors: every entry returns LOOM_OK (0) or LOOM_ERROR; the message is
 * read with LoomGetLastError() (or the table's last_error), per thread,
 * valid until the thread's next failing call.  No entry throws, aborts or
 * lets a C++ exception cross this boundary.
 *
 * Threads: every entry may be called from any thread; one function may be
 * called from several threads at once.
 */
#ifndef LOOM_C_API_H_
#define LOOM_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The newest table version this header describes. */
#define LOOM_API_VERSION 1

typedef int32_t LoomStatus;
#define LOOM_OK 0
#define LOOM_ERROR 1

/* A counted reference to a Loom object (opaque). */
typedef struct LoomObject LoomObject;

/* What a LoomValue holds. */
typedef enum {
  LOOM_NONE = 0,
  LOOM_BOOL = 1,   /* v.v_int: 0 or 1 */
  LOOM_INT = 2,    /* v.v_int */
  LOOM_FLOAT = 3,  /* v.v_float */
  LOOM_STR = 4,    /* v.v_str, NUL-terminated UTF-8 */
  LOOM_OBJECT = 5, /* v.v_object: a module, function, tensor or other object */
  /* Arguments only.  A caller's DLTensor, described without copying: it
   * must be compact (strides NULL or row-major) and stay valid for the
   * call; a result that aliases it does not outlive the call safely. */
  LOOM_DLTENSOR = 6, /* v.v_dltensor */
  /* Arguments only.  A DLPack producer's tensor: Loom takes ownership
   * (without copying) and calls its deleter when done with it, also when
   * the call fails. */
  LOOM_DLMANAGED = 7 /* v.v_managed */
} LoomKind;

typedef struct {
  int32_t kind; /* a LoomKind */
  union {
    int64_t v_int;
    double v_float;
    const char* v_str;
    LoomObject* v_object;
    DLTensor* v_dltensor;
    DLManagedTensor* v_managed;
  } v;
} LoomValue;

/* A function written in C, made a Loom function by function_from_c.
 * `args` are borrowed for the call (retain an object to keep it).  It
 * sets `*result` (LOOM_NONE on entry; an object it puts there is passed to
 * Loom with that reference; a string is copied before the call returns)
 * and returns LOOM_OK, or sets an error with set_last_error and returns
 * LOOM_ERROR, which the caller of the Loom function sees as an Error
 * carrying the message. */
typedef LoomStatus (*LoomCFunction)(void* resource, const LoomValue* args, int32_t num_args, LoomValue* result);

/* Options of module_load; NULL means every default. */
typedef struct {
  size_t struct_size; /* sizeof(LoomLoadOptions) as the caller knows it */
  /* Nonzero: read the library's module tree without loading the library
   * or running any of its code (its functions are listed but cannot be
   * called).  Default 0. */
  int32_t inspect_only;
} LoomLoadOptions;

/* A device a plugin written in C provides (device_register): memory
 * and copies on it.  `resource` is the one given to device_register. */
typedef struct {
  size_t struct_size; /* sizeof(LoomDeviceInterface) as the caller knows it */
  /* `bytes` (at least 1) aligned to `alignment`; NULL when out of memory. */
  void* (*alloc)(void* resource, DLDevice device, size_t bytes, size_t alignment);
  void (*free)(void* resource, DLDevice device, void* ptr);
  /* Copies `from` to `to`: the same dtype and number of bytes, compact;
   * one of them is on this device, the other on it or on the CPU. */
  LoomStatus (*copy)(void* resource, const DLTensor* from, DLTensor* to);
  /* Waits for the device's queued work; NULL: nothing is ever queued. */
  LoomStatus (*synchronize)(void* resource, DLDevice device);
} LoomDeviceInterface;

/* Version 1 of the runtime table. */
typedef struct {
  size_t struct_size; /* sizeof the table in the library: entries past it do not exist */
  uint32_t version;   /* the library's newest version (at least the one asked for) */

  /* --- errors --- */
  /* The calling thread's last error message ("" if none). */
  const char* (*last_error)(void);
  /* Sets the calling thread's error message (for a LoomCFunction). */
  void (*set_last_error)(const char* message);

  /* --- objects --- */
  LoomStatus (*object_retain)(LoomObject* object);
  LoomStatus (*object_release)(LoomObject* object); /* NULL is allowed and does nothing */
  /* The type key ("runtime.NDArray", "Function", "runtime.Module"...);
   * the string lives as long as the process. */
  LoomStatus (*object_type_key)(LoomObject* object, const char** out);
  /* The reference count (for tests and leak checks). */
  LoomStatus (*object_use_count)(LoomObject* object, int32_t* out);
  /* The reflected field `name` of the object; error naming the type and
   * its fields when it has none of that name.  Release *out with
   * value_release. */
  LoomStatus (*object_get_field)(LoomObject* object, const char* name, LoomValue* out);
  /* Releases what a LoomValue returned by Loom holds (an object's
   * reference, a string's memory) and sets it to LOOM_NONE. */
  LoomStatus (*value_release)(LoomValue* value);

  /* --- modules --- */
  /* Loads an exported library (or a host library) and restores its module
   * tree, loading the plugins its module kinds need. */
  LoomStatus (*module_load)(const char* path, const LoomLoadOptions* options, LoomObject** out);
  /* The function `name` of the module or, depth first, of its imports;
   * error with the closest name when none defines it. */
  LoomStatus (*module_get_function)(LoomObject* module, const char* name, LoomObject** out);
  /* The names of the module's own functions, one per line, as a string
   * owned by the caller: release with value_release. */
  LoomStatus (*module_function_names)(LoomObject* module, LoomValue* out);

  /* --- functions --- */
  /* Calls `function`; `*result` is set (release it with value_release).
   * A tensor result is a LOOM_OBJECT of type runtime.NDArray. */
  LoomStatus (*function_call)(LoomObject* function, const LoomValue* args, int32_t num_args, LoomValue* result);
  /* A Loom function that calls `fn(resource, ...)`; `finalizer`, if not
   * NULL, is called with `resource` when the last reference goes. */
  LoomStatus (*function_from_c)(LoomCFunction fn, void* resource, void (*finalizer)(void* resource), LoomObject** out);
  /* The global function `name`; *out is NULL (and the status LOOM_OK)
   * when none is registered. */
  LoomStatus (*global_function_get)(const char* name, LoomObject** out);
  /* Registers `function` as the global `name`; error if the name is taken
   * and allow_override is 0. */
  LoomStatus (*global_function_register)(const char* name, LoomObject* function, int32_t allow_override);

  /* --- tensors --- */
  /* A new tensor of `shape` on `device` (contents not initialised). */
  LoomStatus (*tensor_empty)(const int64_t* shape, int32_t ndim, DLDataType dtype, DLDevice device, LoomObject** out);
  /* Takes a DLPack producer's tensor without copying (see LOOM_DLMANAGED). */
  LoomStatus (*tensor_from_dlpack)(DLManagedTensor* managed, LoomObject** out);
  /* Hands the tensor to a DLPack consumer without copying; it stays alive
   * until the consumer calls the deleter. */
  LoomStatus (*tensor_to_dlpack)(LoomObject* tensor, DLManagedTensor** out);
  /* The tensor's own DLTensor, borrowed: valid while the tensor lives. */
  LoomStatus (*tensor_get_dltensor)(LoomObject* tensor, const DLTensor** out);
  /* Copies `src` into `dst` (same dtype and shape; any devices). */
  LoomStatus (*tensor_copy)(LoomObject* src, LoomObject* dst);

  /* --- devices --- */
  /* The devices with a registered device API, at most `capacity` of them
   * into `out`; `*count` is how many there are. */
  LoomStatus (*device_list)(DLDevice* out, int32_t capacity, int32_t* count);
  /* Waits for the device's queued work. */
  LoomStatus (*device_synchronize)(DLDevice device);
  /* Registers the device API of device `name` (a plugin's init: docs/c-api.md,
   * "Plugins in C").  `type_code` names a vendor device (64 to 127, the
   * vendor's ABI: docs/runtime.md, "Vendor devices"), or is 0 for a name
   * Loom knows ("opencl").  `finalizer`, if not NULL, gets `resource` when
   * the device API goes. */
  LoomStatus (*device_register)(const char* name, int32_t type_code, const LoomDeviceInterface* device, void* resource,
                                void (*finalizer)(void* resource));
} LoomApi;

/* A pass written in C: `module` is borrowed; `*out` gets the new module
 * (a new reference, which the pass passes to Loom).  On failure it sets
 * an error with set_last_error and returns LOOM_ERROR. */
typedef LoomStatus (*LoomPassFunction)(void* resource, LoomObject* module, LoomObject** out);

/* What pass_register registers. */
typedef struct {
  size_t struct_size;  /* sizeof(LoomPassInfo) as the caller knows it */
  const char* name;    /* the pass's name in pipelines ("MyPass") */
  int32_t opt_level;   /* runs when the pipeline's opt level is at least this (default 0) */
  const char* summary; /* one line for `loomc passes list` (default "") */
} LoomPassInfo;

/* Version 1 of the compiler table (libloom_core). */
typedef struct {
  size_t struct_size;
  uint32_t version;
  /* Parses IR text (docs/ir-text-format.md) into an IRModule; `name`
   * stands for the file in messages (file:line:col). */
  LoomStatus (*ir_parse)(const char* text, const char* name, LoomObject** out);
  /* The module as IR text, owned by the caller: release with the runtime
   * table's value_release. */
  LoomStatus (*ir_print)(LoomObject* module, LoomValue* out);
  /* Runs the registered passes named in `passes` (comma separated, as a
   * YAML pipeline names them) on `module` at `opt_level`; the new module. */
  LoomStatus (*run_passes)(LoomObject* module, const char* passes, int32_t opt_level, LoomObject** out);
  /* Registers a pass (Module -> Module) under info->name, so pipelines
   * (YAML configs, run_passes, Python) run it like any other;
   * `finalizer`, if not NULL, gets `resource` when the pass goes. */
  LoomStatus (*pass_register)(const LoomPassInfo* info, LoomPassFunction fn, void* resource,
                              void (*finalizer)(void* resource));
} LoomCompilerApi;

/* The runtime table of `version` (1 .. LOOM_API_VERSION of the library),
 * or NULL with an error naming both versions. */
const LoomApi* LoomGetApi(uint32_t version);
/* The compiler table, exported by libloom_core, on the same rules. */
const LoomCompilerApi* LoomGetCompilerApi(uint32_t version);
/* The calling thread's last error message ("" if none). */
const char* LoomGetLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_C_API_H_ */
