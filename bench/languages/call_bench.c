/* The C side of bench/languages.py: the time per call of @noop and @add1k
 * of bench/languages/calls.loom (exported), called through the C API with
 * DLTensor arguments, the median of 7 batches of CALLS calls each after a
 * warm-up.  Prints "noop US" and "add1k US".  Links libloom_runtime alone.
 *
 *   call_bench LIB.so [CALLS]
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <loom/c_api.h>

static const LoomApi* api;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median microseconds per call of fn(args). */
static double time_calls(LoomObject* fn, const LoomValue* args, int32_t n, long calls) {
  double batches[7];
  long k;
  int b;
  LoomValue out;
  for (k = 0; k < calls / 10 + 1; ++k) {
    if (api->function_call(fn, args, n, &out) != LOOM_OK) return -1;
    api->value_release(&out);
  }
  for (b = 0; b < 7; ++b) {
    double start = now();
    for (k = 0; k < calls; ++k) {
      if (api->function_call(fn, args, n, &out) != LOOM_OK) return -1;
      api->value_release(&out);
    }
    batches[b] = (now() - start) / (double)calls * 1e6;
  }
  qsort(batches, 7, sizeof batches[0], by_value);
  return batches[3];
}

int main(int argc, char** argv) {
  static float x[1024], y[1024];
  int64_t one = 1, n1k = 1024;
  DLTensor tx = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &one, NULL, 0};
  DLTensor t1 = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &n1k, NULL, 0};
  DLTensor t2 = {y, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &n1k, NULL, 0};
  LoomValue a1[1], a2[2];
  LoomObject *lib = NULL, *noop = NULL, *add = NULL;
  long calls = argc > 2 ? atol(argv[2]) : 20000;
  double t_noop, t_add;
  int k;
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIB.so [CALLS]\n", argv[0]);
    return 2;
  }
  for (k = 0; k < 1024; ++k) x[k] = (float)k, y[k] = 1.0f;
  api = LoomGetApi(1);
  if (!api || api->module_load(argv[1], NULL, &lib) != LOOM_OK ||
      api->module_get_function(lib, "noop", &noop) != LOOM_OK ||
      api->module_get_function(lib, "add1k", &add) != LOOM_OK) {
    fprintf(stderr, "loom: %s\n", LoomGetLastError());
    return 1;
  }
  a1[0].kind = LOOM_DLTENSOR;
  a1[0].v.v_dltensor = &tx;
  a2[0].kind = a2[1].kind = LOOM_DLTENSOR;
  a2[0].v.v_dltensor = &t1;
  a2[1].v.v_dltensor = &t2;
  t_noop = time_calls(noop, a1, 1, calls);
  t_add = time_calls(add, a2, 2, calls);
  if (t_noop < 0 || t_add < 0) {
    fprintf(stderr, "loom: %s\n", LoomGetLastError());
    return 1;
  }
  printf("noop %.3f\nadd1k %.3f\n", t_noop, t_add);
  api->object_release(add);
  api->object_release(noop);
  api->object_release(lib);
  return 0;
}
