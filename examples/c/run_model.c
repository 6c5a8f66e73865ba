/* run_model: runs a library that Loom exported on inputs read from .npy
 * files (one per parameter, in order) and prints the output's shape and
 * its five largest entries (the top-5 classes of a classifier).  It links
 * libloom_runtime alone, through the C API (docs/c-api.md):
 *
 *   run_model LIBRARY.so [--function NAME] [--raw OUT.f32] INPUT.npy...
 *
 * --raw writes the output's elements (float32, C order, no header) to a
 * file, for comparing runs bit by bit (tests/bindings/agreement.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/c_api.h>

#include "npy.h"

#define MAX_INPUTS 64

int main(int argc, char** argv) {
  const LoomApi* api;
  LoomObject *lib = NULL, *fn = NULL;
  LoomValue args[MAX_INPUTS], out;
  DLTensor inputs[MAX_INPUTS];
  const DLTensor* result;
  float* data[MAX_INPUTS];
  int64_t shapes[MAX_INPUTS][NPY_MAX_DIMS], numel = 1, i;
  int32_t ndim, k, n = 0, best[5], first = 2;
  const char* function = "main";
  const char* raw = NULL; /* --raw: the output's bytes written there */
  char err[512];
  int status = 1;

  while (first + 1 < argc && (strcmp(argv[first], "--function") == 0 || strcmp(argv[first], "--raw") == 0)) {
    if (strcmp(argv[first], "--function") == 0) {
      function = argv[first + 1];
    } else {
      raw = argv[first + 1];
    }
    first += 2;
  }
  if (argc <= first || argc - first > MAX_INPUTS) {
    fprintf(stderr, "usage: %s LIBRARY.so [--function NAME] [--raw OUT.f32] INPUT.npy... (at most %d inputs)\n",
            argv[0], MAX_INPUTS);
    return 2;
  }
  api = LoomGetApi(1);
  if (!api) {
    fprintf(stderr, "loom: %s\n", LoomGetLastError());
    return 1;
  }
  for (n = 0; first + n < argc; ++n) {
    if (npy_read(argv[first + n], &data[n], shapes[n], &ndim, err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      goto done;
    }
    /* Each input described without copying. */
    memset(&inputs[n], 0, sizeof inputs[n]);
    inputs[n].data = data[n];
    inputs[n].device.device_type = kDLCPU;
    inputs[n].ndim = ndim;
    inputs[n].dtype.code = kDLFloat;
    inputs[n].dtype.bits = 32;
    inputs[n].dtype.lanes = 1;
    inputs[n].shape = shapes[n];
    args[n].kind = LOOM_DLTENSOR;
    args[n].v.v_dltensor = &inputs[n];
  }
  if (api->module_load(argv[1], NULL, &lib) != LOOM_OK || api->module_get_function(lib, function, &fn) != LOOM_OK ||
      api->function_call(fn, args, n, &out) != LOOM_OK) {
    fprintf(stderr, "loom: %s\n", api->last_error());
    goto done;
  }
  if (out.kind != LOOM_OBJECT || api->tensor_get_dltensor(out.v.v_object, &result) != LOOM_OK ||
      result->dtype.code != kDLFloat || result->dtype.bits != 32) {
    fprintf(stderr, "loom: the function did not return a float32 tensor\n");
    api->value_release(&out);
    goto done;
  }
  printf("output: float32 (");
  for (k = 0; k < result->ndim; ++k) {
    printf(k ? ", %lld" : "%lld", (long long)result->shape[k]);
    numel *= result->shape[k];
  }
  printf(")\ntop-5:");
  if (raw) {
    FILE* f = fopen(raw, "wb");
    size_t bytes = (size_t)numel * sizeof(float);
    int written = f && fwrite((const char*)result->data + result->byte_offset, 1, bytes, f) == bytes;
    if (f && fclose(f) != 0) written = 0;
    if (!written) {
      fprintf(stderr, "%s: cannot write\n", raw);
      api->value_release(&out);
      goto done;
    }
  }
  for (k = 0; k < 5 && k < numel; ++k) {
    const float* y = (const float*)((const char*)result->data + result->byte_offset);
    int32_t j, taken;
    best[k] = -1;
    for (i = 0; i < numel; ++i) {
      for (taken = 0, j = 0; j < k; ++j) taken |= best[j] == i;
      if (!taken && (best[k] < 0 || y[i] > y[best[k]])) best[k] = (int32_t)i;
    }
    printf(" %d (%g)", best[k], (double)y[best[k]]);
  }
  printf("\n");
  api->value_release(&out);
  status = 0;
done:
  api->object_release(fn);
  api->object_release(lib);
  for (k = 0; k < n; ++k) free(data[k]);
  return status;
}
