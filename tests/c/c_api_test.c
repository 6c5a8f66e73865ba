/* The C API from C99 (docs/c-api.md): a program that links libloom_runtime
 * alone.  Usage: c_api_test LIBRARY.so EXPECTED.npy INPUT.npy..., where
 * the library is examples/mlp.loom built for configs/host.yaml and
 * EXPECTED is what `loomc run` gave on the INPUTs.  Prints "ok N checks"
 * or the first failure, and exits nonzero on failure. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/c_api.h>

#include "../../examples/c/npy.h"

static const LoomApi* api;
static int checks;

#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    ++checks;                                                                                \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "%s:%d: check failed: %s\n  ", __FILE__, __LINE__, #cond);             \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fprintf(stderr, "\n  last error: %s\n", api ? api->last_error() : LoomGetLastError()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

#define OK(call) CHECK((call) == LOOM_OK, "%s", #call)

static int contains(const char* text, const char* part) { return text && strstr(text, part) != NULL; }

static DLTensor describe(float* data, int64_t* shape, int32_t ndim) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* --- a C function: resource * a + b, and its finalizer --- */
static int finalized;
static LoomStatus scale(void* resource, const LoomValue* args, int32_t n, LoomValue* result) {
  if (n != 2 || args[0].kind != LOOM_INT || args[1].kind != LOOM_FLOAT) {
    api->set_last_error("scale expects (int, float)");
    return LOOM_ERROR;
  }
  result->kind = LOOM_FLOAT;
  result->v.v_float = *(double*)resource * (double)args[0].v.v_int + args[1].v.v_float;
  return LOOM_OK;
}
static void finalize(void* resource) {
  ++finalized;
  free(resource);
}

/* --- a DLPack producer's tensor over the caller's memory --- */
static int deleted;
static void count_delete(DLManagedTensor* self) {
  ++deleted;
  free(self);
}
static DLManagedTensor* managed_view(const DLTensor* t) {
  DLManagedTensor* m = (DLManagedTensor*)malloc(sizeof(DLManagedTensor));
  m->dl_tensor = *t;
  m->manager_ctx = NULL;
  m->deleter = count_delete;
  return m;
}

/* --- eight threads calling one function --- */
#define MAX_INPUTS 16
static int32_t num_inputs;
static LoomValue inputs[MAX_INPUTS];

struct job {
  LoomObject* fn;
  const float* expected;
  int64_t count;
  int failures;
};
static void* call_many(void* arg) {
  struct job* j = (struct job*)arg;
  int k;
  for (k = 0; k < 50; ++k) {
    LoomValue out;
    const DLTensor* y;
    if (api->function_call(j->fn, inputs, num_inputs, &out) != LOOM_OK ||
        api->tensor_get_dltensor(out.v.v_object, &y) != LOOM_OK ||
        memcmp(y->data, j->expected, (size_t)j->count * sizeof(float)) != 0)
      ++j->failures;
    api->value_release(&out);
  }
  return NULL;
}

int main(int argc, char** argv) {
  LoomObject *lib, *fn, *tensor, *copy, *global, *c_fn, *again;
  LoomValue in[MAX_INPUTS], out, args[2], field;
  LoomLoadOptions small;
  DLTensor x_t[MAX_INPUTS], *bad;
  const DLTensor* y;
  DLManagedTensor* managed;
  DLDevice devices[16];
  float *x[MAX_INPUTS], *expected;
  int64_t x_shape[MAX_INPUTS][NPY_MAX_DIMS], e_shape[NPY_MAX_DIMS], count = 1, strides[2];
  int32_t x_ndim, e_ndim, n, k, uses, cycles;
  const char* key;
  double* factor;
  char err[512];
  pthread_t threads[8];
  struct job jobs[8];

  if (argc < 4 || argc - 3 > MAX_INPUTS) {
    fprintf(stderr, "usage: %s LIBRARY.so EXPECTED.npy INPUT.npy...\n", argv[0]);
    return 2;
  }
  /* Versions: 1 exists, a newer one is refused naming both. */
  CHECK(LoomGetApi(2) == NULL, "version 2 was given");
  CHECK(contains(LoomGetLastError(), "version 2") && contains(LoomGetLastError(), "1 to 1"), "%s", LoomGetLastError());
  CHECK(LoomGetApi(0) == NULL, "version 0 was given");
  api = LoomGetApi(1);
  CHECK(api != NULL, "no version 1");
  CHECK(api->version >= 1 && api->struct_size >= sizeof(LoomApi), "version %u size %lu", api->version,
        (unsigned long)api->struct_size);
  /* Version 1 is frozen: its last entry stays where it is. */
  CHECK(sizeof(void*) != 8 || offsetof(LoomApi, device_register) == 192, "offset %lu",
        (unsigned long)offsetof(LoomApi, device_register));
  CHECK(sizeof(void*) != 8 || offsetof(LoomCompilerApi, pass_register) == 40, "offset %lu",
        (unsigned long)offsetof(LoomCompilerApi, pass_register));

  CHECK(npy_read(argv[2], &expected, e_shape, &e_ndim, err, sizeof err) == 0, "%s", err);
  for (k = 0; k < e_ndim; ++k) count *= e_shape[k];
  for (num_inputs = 0; num_inputs < argc - 3; ++num_inputs) {
    CHECK(npy_read(argv[3 + num_inputs], &x[num_inputs], x_shape[num_inputs], &x_ndim, err, sizeof err) == 0, "%s",
          err);
    x_t[num_inputs] = describe(x[num_inputs], x_shape[num_inputs], x_ndim);
    inputs[num_inputs].kind = LOOM_DLTENSOR;
    inputs[num_inputs].v.v_dltensor = &x_t[num_inputs];
  }

  /* Errors name what and where. */
  CHECK(api->module_load("/nonexistent/model.so", NULL, &lib) == LOOM_ERROR, "loaded a missing file");
  CHECK(contains(api->last_error(), "/nonexistent/model.so"), "%s", api->last_error());
  /* A smaller options struct (an older caller's): the rest defaults. */
  small.struct_size = sizeof(size_t);
  small.inspect_only = 1; /* beyond struct_size: must be ignored */
  OK(api->module_load(argv[1], &small, &lib));
  CHECK(api->module_get_function(lib, "mian", &fn) == LOOM_ERROR, "found 'mian'");
  CHECK(contains(api->last_error(), "main"), "no suggestion: %s", api->last_error());
  OK(api->module_get_function(lib, "main", &fn));
  OK(api->object_type_key(fn, &key));
  CHECK(strcmp(key, "Function") == 0, "type key %s", key);

  /* A call on the caller's memory gives what loomc run gave, bit for bit. */
  OK(api->function_call(fn, inputs, num_inputs, &out));
  CHECK(out.kind == LOOM_OBJECT, "result kind %d", out.kind);
  OK(api->tensor_get_dltensor(out.v.v_object, &y));
  CHECK(y->ndim == e_ndim && y->shape[0] == e_shape[0] && y->dtype.code == kDLFloat && y->dtype.bits == 32,
        "result ndim %d", y->ndim);
  CHECK(memcmp(y->data, expected, (size_t)count * sizeof(float)) == 0, "result differs from loomc run's");
  /* Reflected fields of the result. */
  OK(api->object_get_field(out.v.v_object, "dtype", &field));
  CHECK(field.kind == LOOM_STR && strcmp(field.v.v_str, "float32") == 0, "dtype kind %d", field.kind);
  OK(api->value_release(&field));
  CHECK(api->object_get_field(out.v.v_object, "colour", &field) == LOOM_ERROR, "read a missing field");
  CHECK(contains(api->last_error(), "shape"), "fields not listed: %s", api->last_error());

  /* Through DLPack: the result handed out and taken back, no copy. */
  OK(api->tensor_to_dlpack(out.v.v_object, &managed));
  CHECK(managed->dl_tensor.data == y->data, "to_dlpack copied");
  OK(api->tensor_from_dlpack(managed, &tensor));
  OK(api->tensor_get_dltensor(tensor, &y));
  CHECK(y->data == managed->dl_tensor.data, "from_dlpack copied");
  /* A copy into a new tensor, compared. */
  OK(api->tensor_empty(e_shape, e_ndim, y->dtype, y->device, &copy));
  OK(api->tensor_copy(tensor, copy));
  OK(api->tensor_get_dltensor(copy, &y));
  CHECK(memcmp(y->data, expected, (size_t)count * sizeof(float)) == 0, "tensor_copy differs");
  OK(api->object_release(copy));
  OK(api->object_release(tensor));
  OK(api->value_release(&out));

  /* A LOOM_DLMANAGED argument is Loom's: its deleter runs once, after a
   * call that succeeds and after one that fails before taking it. */
  memcpy(in, inputs, sizeof in);
  in[0].kind = LOOM_DLMANAGED;
  in[0].v.v_managed = managed_view(&x_t[0]);
  OK(api->function_call(fn, in, num_inputs, &out));
  OK(api->tensor_get_dltensor(out.v.v_object, &y));
  CHECK(memcmp(y->data, expected, (size_t)count * sizeof(float)) == 0, "a DLPack input gave another result");
  OK(api->value_release(&out));
  CHECK(deleted == 1, "deleter ran %d times after a call", deleted);
  in[0].v.v_managed = managed_view(&x_t[0]);
  CHECK(api->function_call(fn, in, num_inputs, NULL) == LOOM_ERROR, "a NULL result was taken");
  CHECK(deleted == 2, "deleter ran %d times in all after a failed call", deleted);

  /* Bad arguments are errors, never crashes. */
  CHECK(api->function_call(fn, NULL, 0, &out) == LOOM_ERROR, "called main without its input");
  CHECK(contains(api->last_error(), "argument"), "%s", api->last_error());
  memcpy(in, inputs, sizeof in);
  /* The first input's transposed view (a 2-D one): not compact. */
  strides[0] = 1;
  strides[1] = x_shape[0][0];
  x_t[0].strides = strides;
  if (x_t[0].ndim == 2 && x_shape[0][0] > 1 && x_shape[0][1] > 1) {
    CHECK(api->function_call(fn, in, num_inputs, &out) == LOOM_ERROR, "took a transposed view");
    CHECK(contains(api->last_error(), "not compact") && contains(api->last_error(), "argument 0"), "%s",
          api->last_error());
  }
  x_t[0].strides = NULL;
  bad = NULL;
  in[0].v.v_dltensor = bad;
  CHECK(api->function_call(fn, in, num_inputs, &out) == LOOM_ERROR, "took a NULL tensor");
  in[0].kind = 99;
  CHECK(api->function_call(fn, in, num_inputs, &out) == LOOM_ERROR, "took kind 99");
  CHECK(contains(api->last_error(), "99"), "%s", api->last_error());
  CHECK(api->object_type_key(NULL, &key) == LOOM_ERROR, "typed NULL");
  OK(api->object_release(NULL));

  /* A C function as a global, called through the registry. */
  factor = (double*)malloc(sizeof(double));
  *factor = 2.0;
  OK(api->function_from_c(scale, factor, finalize, &c_fn));
  OK(api->global_function_register("c_api_test.scale", c_fn, 0));
  CHECK(api->global_function_register("c_api_test.scale", c_fn, 0) == LOOM_ERROR, "registered twice");
  OK(api->global_function_get("c_api_test.scale", &global));
  CHECK(global != NULL, "not registered");
  args[0].kind = LOOM_INT;
  args[0].v.v_int = 3;
  args[1].kind = LOOM_FLOAT;
  args[1].v.v_float = 0.5;
  OK(api->function_call(global, args, 2, &out));
  CHECK(out.kind == LOOM_FLOAT && out.v.v_float == 6.5, "scale gave kind %d", out.kind);
  CHECK(api->function_call(global, args, 1, &out) == LOOM_ERROR, "scale took one argument");
  CHECK(contains(api->last_error(), "scale expects (int, float)"), "%s", api->last_error());
  OK(api->global_function_get("c_api_test.no_such_function", &again));
  CHECK(again == NULL, "found a missing global");
  OK(api->object_use_count(c_fn, &uses));
  CHECK(uses >= 2, "use count %d", uses);
  OK(api->object_release(global));
  OK(api->object_release(c_fn));
  CHECK(finalized == 0, "finalized while registered");

  /* Devices: the CPU at least. */
  OK(api->device_list(devices, 16, &n));
  CHECK(n >= 1, "no device");
  for (k = 0; k < n && k < 16 && devices[k].device_type != kDLCPU; ++k) {
  }
  CHECK(k < n, "no CPU among %d devices", n);
  OK(api->device_synchronize(devices[k]));

  /* Running the library mapped no compiler: its host code is machine
   * code, and a backend it needs comes as its runtime half (opencl_runtime,
   * vulkan_runtime, npu_runtime): neither libloom_core nor a plugin whose
   * name does not end in _runtime is mapped (LOOM_C_API_TEST_RUNTIME_ONLY=0
   * for a library of a backend with one plugin: torchscript). */
  if (!getenv("LOOM_C_API_TEST_RUNTIME_ONLY") || strcmp(getenv("LOOM_C_API_TEST_RUNTIME_ONLY"), "0") != 0) {
    char line[1024];
    FILE* maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "no /proc/self/maps");
    while (fgets(line, sizeof line, maps)) {
      CHECK(!contains(line, "libloom_core"), "mapped: %s", line);
      CHECK(!contains(line, "/plugins/loom_") || contains(line, "_runtime.so"), "a compiler half is mapped: %s", line);
    }
    fclose(maps);
  }

  /* Eight threads calling main at once agree with one. */
  for (k = 0; k < 8; ++k) {
    jobs[k].fn = fn;
    jobs[k].expected = expected;
    jobs[k].count = count;
    jobs[k].failures = 0;
    CHECK(pthread_create(&threads[k], NULL, call_many, &jobs[k]) == 0, "thread %d", k);
  }
  for (k = 0; k < 8; ++k) {
    pthread_join(threads[k], NULL);
    CHECK(jobs[k].failures == 0, "thread %d: %d failed calls", k, jobs[k].failures);
  }

  /* Load, call and unload many times (LOOM_C_API_TEST_CYCLES, 200 by
   * default; 1,000 under valgrind): nothing stays behind. */
  cycles = getenv("LOOM_C_API_TEST_CYCLES") ? atoi(getenv("LOOM_C_API_TEST_CYCLES")) : 200;
  for (k = 0; k < cycles; ++k) {
    LoomObject *l, *f;
    OK(api->module_load(argv[1], NULL, &l));
    OK(api->module_get_function(l, "main", &f));
    OK(api->function_call(f, inputs, num_inputs, &out));
    OK(api->value_release(&out));
    OK(api->object_release(f));
    OK(api->object_release(l));
  }
  OK(api->object_release(fn));
  OK(api->object_release(lib));
  for (k = 0; k < num_inputs; ++k) free(x[k]);
  free(expected);
  printf("ok %d checks\n", checks);
  return 0;
}
