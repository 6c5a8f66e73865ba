/* The N-API half of the Node binding (bindings/node, docs/languages.md):
 * Loom's C API as a Node addon, loom.node.  Handles are JavaScript
 * objects wrapping one counted reference each (released by dispose() or
 * when collected); a failing call throws an Error with Loom's message.
 * Context-aware (worker_threads load it too).  Links libloom_runtime
 * alone. */
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/c_api.h>

static const LoomApi* api(void) { return LoomGetApi(1); }

#define CHECK_NAPI(call)                                        \
  do {                                                          \
    if ((call) != napi_ok) {                                    \
      napi_throw_error(env, NULL, "loom: a N-API call failed"); \
      return NULL;                                              \
    }                                                           \
  } while (0)

static napi_value throw_loom(napi_env env) {
  napi_throw_error(env, NULL, api() ? api()->last_error() : LoomGetLastError());
  return NULL;
}

/* ---- handles ---- */

/* A handle: an object with a hidden reference (napi_wrap) and "kind". */
typedef struct {
  LoomObject* object;
} Handle;

static void finalize(napi_env env, void* data, void* hint) {
  Handle* h = (Handle*)data;
  (void)env;
  (void)hint;
  if (h->object) api()->object_release(h->object);
  free(h);
}

/* kind: "tensor", "function", "module", "object" */
static const char* kind_of(LoomObject* o) {
  const char* key = "";
  size_t n;
  if (api()->object_type_key(o, &key) != LOOM_OK) return "object";
  if (strcmp(key, "runtime.NDArray") == 0) return "tensor";
  if (strcmp(key, "Function") == 0) return "function";
  n = strlen(key);
  return n >= 6 && strcmp(key + n - 6, "Module") == 0 ? "module" : "object";
}

/* A JavaScript object owning `o` (one reference, taken over). */
static napi_value wrap(napi_env env, LoomObject* o) {
  napi_value obj, kind;
  Handle* h = (Handle*)malloc(sizeof(Handle));
  h->object = o;
  CHECK_NAPI(napi_create_object(env, &obj));
  CHECK_NAPI(napi_create_string_utf8(env, kind_of(o), NAPI_AUTO_LENGTH, &kind));
  CHECK_NAPI(napi_set_named_property(env, obj, "kind", kind));
  CHECK_NAPI(napi_wrap(env, obj, h, finalize, NULL, NULL));
  return obj;
}

/* The reference a handle holds; NULL (with an Error thrown) for a value
 * that is not a live handle. */
static LoomObject* unwrap(napi_env env, napi_value value) {
  Handle* h = NULL;
  if (napi_unwrap(env, value, (void**)&h) != napi_ok || !h) {
    napi_throw_type_error(env, NULL, "loom: not a Loom handle");
    return NULL;
  }
  if (!h->object) {
    napi_throw_error(env, NULL, "loom: the handle was disposed");
    return NULL;
  }
  return h->object;
}

static int args_of(napi_env env, napi_callback_info info, size_t want, napi_value* argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
    napi_throw_type_error(env, NULL, "loom: too few arguments");
    return 0;
  }
  return 1;
}

static char* string_of(napi_env env, napi_value v) {
  size_t n = 0;
  char* s;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "loom: expected a string");
    return NULL;
  }
  s = (char*)malloc(n + 1);
  napi_get_value_string_utf8(env, v, s, n + 1, &n);
  return s;
}

/* dispose(handle): gives the reference back now. */
static napi_value js_dispose(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  Handle* h = NULL;
  if (!args_of(env, info, 1, argv)) return NULL;
  if (napi_unwrap(env, argv[0], (void**)&h) == napi_ok && h && h->object) {
    api()->object_release(h->object);
    h->object = NULL;
  }
  return NULL;
}

static napi_value js_use_count(napi_env env, napi_callback_info info) {
  napi_value argv[1], out;
  LoomObject* o;
  int32_t n = 0;
  if (!args_of(env, info, 1, argv) || !(o = unwrap(env, argv[0]))) return NULL;
  if (api()->object_use_count(o, &n) != LOOM_OK) return throw_loom(env);
  CHECK_NAPI(napi_create_int32(env, n, &out));
  return out;
}

/* ---- modules and functions ---- */

static napi_value js_load(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  LoomObject* out = NULL;
  char* path;
  LoomStatus s;
  if (!args_of(env, info, 1, argv) || !(path = string_of(env, argv[0]))) return NULL;
  if (!api()) {
    free(path);
    napi_throw_error(env, NULL, LoomGetLastError());
    return NULL;
  }
  s = api()->module_load(path, NULL, &out);
  free(path);
  return s == LOOM_OK ? wrap(env, out) : throw_loom(env);
}

static napi_value js_get_function(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  LoomObject *m, *out = NULL;
  char* name;
  LoomStatus s;
  if (!args_of(env, info, 2, argv) || !(m = unwrap(env, argv[0])) || !(name = string_of(env, argv[1]))) return NULL;
  s = api()->module_get_function(m, name, &out);
  free(name);
  return s == LOOM_OK ? wrap(env, out) : throw_loom(env);
}

static napi_value js_function_names(napi_env env, napi_callback_info info) {
  napi_value argv[1], out;
  LoomObject* m;
  LoomValue v;
  if (!args_of(env, info, 1, argv) || !(m = unwrap(env, argv[0]))) return NULL;
  if (api()->module_function_names(m, &v) != LOOM_OK) return throw_loom(env);
  napi_create_string_utf8(env, v.v.v_str ? v.v.v_str : "", NAPI_AUTO_LENGTH, &out);
  api()->value_release(&v);
  return out;
}

static napi_value js_global(napi_env env, napi_callback_info info) {
  napi_value argv[1], none;
  LoomObject* out = NULL;
  char* name;
  LoomStatus s;
  if (!args_of(env, info, 1, argv) || !(name = string_of(env, argv[0]))) return NULL;
  s = api()->global_function_get(name, &out);
  free(name);
  if (s != LOOM_OK) return throw_loom(env);
  if (!out) {
    napi_get_null(env, &none);
    return none;
  }
  return wrap(env, out);
}

/* A JavaScript value from a result (its reference moves over). */
static napi_value from_value(napi_env env, LoomValue* v) {
  napi_value out = NULL;
  switch (v->kind) {
    case LOOM_BOOL:
      napi_get_boolean(env, v->v.v_int != 0, &out);
      break;
    case LOOM_INT:
      napi_create_int64(env, v->v.v_int, &out);
      break;
    case LOOM_FLOAT:
      napi_create_double(env, v->v.v_float, &out);
      break;
    case LOOM_STR:
      napi_create_string_utf8(env, v->v.v_str, NAPI_AUTO_LENGTH, &out);
      break;
    case LOOM_OBJECT:
      out = wrap(env, v->v.v_object);
      v->kind = LOOM_NONE;
      break;
    default:
      napi_get_null(env, &out);
  }
  api()->value_release(v);
  return out;
}

/* call(function, [args...]): handles, numbers (an integer is an int64,
 * else a double), BigInts, booleans, strings, null. */
static napi_value js_call(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  LoomObject* fn;
  uint32_t n = 0, k;
  LoomValue *values, result;
  char** texts;
  LoomStatus s = LOOM_ERROR;
  int ok = 1;
  if (!args_of(env, info, 2, argv) || !(fn = unwrap(env, argv[0]))) return NULL;
  CHECK_NAPI(napi_get_array_length(env, argv[1], &n));
  values = (LoomValue*)calloc(n + 1, sizeof(LoomValue));
  texts = (char**)calloc(n + 1, sizeof(char*));
  for (k = 0; k < n && ok; ++k) {
    napi_value a;
    napi_valuetype t;
    napi_get_element(env, argv[1], k, &a);
    napi_typeof(env, a, &t);
    if (t == napi_null || t == napi_undefined) {
      values[k].kind = LOOM_NONE;
    } else if (t == napi_boolean) {
      bool b;
      napi_get_value_bool(env, a, &b);
      values[k].kind = LOOM_BOOL;
      values[k].v.v_int = b;
    } else if (t == napi_number) {
      double d;
      napi_get_value_double(env, a, &d);
      if (d == (double)(int64_t)d && d > -9.2e18 && d < 9.2e18) {
        values[k].kind = LOOM_INT;
        values[k].v.v_int = (int64_t)d;
      } else {
        values[k].kind = LOOM_FLOAT;
        values[k].v.v_float = d;
      }
    } else if (t == napi_bigint) {
      bool lossless;
      values[k].kind = LOOM_INT;
      napi_get_value_bigint_int64(env, a, &values[k].v.v_int, &lossless);
    } else if (t == napi_string) {
      texts[k] = string_of(env, a);
      values[k].kind = LOOM_STR;
      values[k].v.v_str = texts[k];
    } else if (t == napi_object) {
      values[k].kind = LOOM_OBJECT;
      values[k].v.v_object = unwrap(env, a);
      ok = values[k].v.v_object != NULL;
    } else {
      napi_throw_type_error(env, NULL,
                            "loom: an argument Loom does not take (a Tensor, number, string, boolean, null)");
      ok = 0;
    }
  }
  if (ok) s = api()->function_call(fn, values, (int32_t)n, &result);
  for (k = 0; k < n; ++k) free(texts[k]);
  free(texts);
  free(values);
  if (!ok) return NULL;
  if (s != LOOM_OK) return throw_loom(env);
  return from_value(env, &result);
}

/* ---- tensors ---- */

/* tensor(typedArray, shape): a CPU tensor holding a copy (Float32Array,
 * Float64Array, Int32Array, BigInt64Array, Uint8Array). */
static napi_value js_tensor(napi_env env, napi_callback_info info) {
  napi_value argv[2], ab;
  napi_typedarray_type type;
  size_t length, offset;
  void* data;
  uint32_t ndim, k;
  int64_t shape[64], count = 1;
  DLDataType dtype = {kDLFloat, 32, 1};
  DLDevice cpu = {kDLCPU, 0};
  LoomObject* out = NULL;
  const DLTensor* t;
  bool is_typed;
  if (!args_of(env, info, 2, argv)) return NULL;
  napi_is_typedarray(env, argv[0], &is_typed);
  if (!is_typed) {
    napi_throw_type_error(env, NULL, "loom: tensor() takes a typed array (Float32Array, ...) and a shape");
    return NULL;
  }
  CHECK_NAPI(napi_get_typedarray_info(env, argv[0], &type, &length, &data, &ab, &offset));
  switch (type) {
    case napi_float32_array:
      break;
    case napi_float64_array:
      dtype.bits = 64;
      break;
    case napi_int32_array:
      dtype.code = kDLInt;
      break;
    case napi_bigint64_array:
      dtype.code = kDLInt;
      dtype.bits = 64;
      break;
    case napi_uint8_array:
      dtype.code = kDLUInt;
      dtype.bits = 8;
      break;
    default:
      napi_throw_type_error(env, NULL, "loom: Float32Array, Float64Array, Int32Array, BigInt64Array or Uint8Array");
      return NULL;
  }
  CHECK_NAPI(napi_get_array_length(env, argv[1], &ndim));
  if (ndim > 64) {
    napi_throw_range_error(env, NULL, "loom: more than 64 dimensions");
    return NULL;
  }
  for (k = 0; k < ndim; ++k) {
    napi_value d;
    napi_get_element(env, argv[1], k, &d);
    napi_get_value_int64(env, d, &shape[k]);
    count *= shape[k];
    if (shape[k] < 0) count = -1;
  }
  if (count < 0 || (size_t)count != length) {
    napi_throw_range_error(env, NULL, "loom: the typed array does not hold as many elements as the shape says");
    return NULL;
  }
  if (api()->tensor_empty(shape, (int32_t)ndim, dtype, cpu, &out) != LOOM_OK) return throw_loom(env);
  api()->tensor_get_dltensor(out, &t);
  if (length) memcpy((char*)t->data + t->byte_offset, data, length * (dtype.bits / 8));
  return wrap(env, out);
}

static napi_value js_shape(napi_env env, napi_callback_info info) {
  napi_value argv[1], out;
  LoomObject* o;
  const DLTensor* t;
  int k;
  if (!args_of(env, info, 1, argv) || !(o = unwrap(env, argv[0]))) return NULL;
  if (api()->tensor_get_dltensor(o, &t) != LOOM_OK) return throw_loom(env);
  CHECK_NAPI(napi_create_array_with_length(env, (size_t)t->ndim, &out));
  for (k = 0; k < t->ndim; ++k) {
    napi_value d;
    napi_create_int64(env, t->shape[k], &d);
    napi_set_element(env, out, (uint32_t)k, d);
  }
  return out;
}

static napi_value js_dtype(napi_env env, napi_callback_info info) {
  static const char* kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  napi_value argv[1], out;
  LoomObject* o;
  const DLTensor* t;
  char text[32];
  if (!args_of(env, info, 1, argv) || !(o = unwrap(env, argv[0]))) return NULL;
  if (api()->tensor_get_dltensor(o, &t) != LOOM_OK) return throw_loom(env);
  snprintf(text, sizeof text, "%s%d", t->dtype.code < 7 ? kinds[t->dtype.code] : "code", t->dtype.bits);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &out);
  return out;
}

/* data(tensor): a new typed array holding a copy of a CPU tensor's elements. */
static napi_value js_data(napi_env env, napi_callback_info info) {
  napi_value argv[1], ab, out;
  LoomObject* o;
  const DLTensor* t;
  napi_typedarray_type type;
  int64_t count = 1;
  int k;
  void* dst;
  if (!args_of(env, info, 1, argv) || !(o = unwrap(env, argv[0]))) return NULL;
  if (api()->tensor_get_dltensor(o, &t) != LOOM_OK) return throw_loom(env);
  if (t->device.device_type != kDLCPU) {
    napi_throw_error(env, NULL, "loom: the tensor is not on the CPU: copy it there first");
    return NULL;
  }
  if (t->dtype.lanes != 1)
    type = (napi_typedarray_type)-1;
  else if (t->dtype.code == kDLFloat && t->dtype.bits == 32)
    type = napi_float32_array;
  else if (t->dtype.code == kDLFloat && t->dtype.bits == 64)
    type = napi_float64_array;
  else if (t->dtype.code == kDLInt && t->dtype.bits == 32)
    type = napi_int32_array;
  else if (t->dtype.code == kDLInt && t->dtype.bits == 64)
    type = napi_bigint64_array;
  else if (t->dtype.code == kDLUInt && t->dtype.bits == 8)
    type = napi_uint8_array;
  else
    type = (napi_typedarray_type)-1;
  if ((int)type < 0) {
    napi_throw_type_error(env, NULL, "loom: no typed array holds this tensor's dtype");
    return NULL;
  }
  for (k = 0; k < t->ndim; ++k) count *= t->shape[k];
  CHECK_NAPI(napi_create_arraybuffer(env, (size_t)count * (t->dtype.bits / 8), &dst, &ab));
  if (count) memcpy(dst, (char*)t->data + t->byte_offset, (size_t)count * (t->dtype.bits / 8));
  CHECK_NAPI(napi_create_typedarray(env, type, (size_t)count, ab, 0, &out));
  return out;
}

NAPI_MODULE_INIT() {
  struct {
    const char* name;
    napi_callback fn;
  } entries[] = {{"load", js_load},
                 {"getFunction", js_get_function},
                 {"functionNames", js_function_names},
                 {"globalFunction", js_global},
                 {"call", js_call},
                 {"tensor", js_tensor},
                 {"shape", js_shape},
                 {"dtype", js_dtype},
                 {"data", js_data},
                 {"dispose", js_dispose},
                 {"useCount", js_use_count}};
  size_t k;
  for (k = 0; k < sizeof entries / sizeof entries[0]; ++k) {
    napi_value f;
    if (napi_create_function(env, entries[k].name, NAPI_AUTO_LENGTH, entries[k].fn, NULL, &f) != napi_ok ||
        napi_set_named_property(env, exports, entries[k].name, f) != napi_ok) {
      return NULL;
    }
  }
  return exports;
}
