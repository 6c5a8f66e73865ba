/* Greedy generation from a library written by loom.llm's Engine.export,
 * in C99 through the C API alone (docs/llm.md, "From C").  Usage:
 *   generate_c MODEL.so COUNT TOKEN...
 * prints the COUNT new token ids, one line, space separated.  The KV
 * cache is the runtime's (runtime.kv_cache.*); the model's sizes come
 * from its `metadata` function (JSON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/c_api.h>

static const LoomApi* api;

static void fail(const char* what) {
  fprintf(stderr, "loom: %s: %s\n", what, api ? api->last_error() : LoomGetLastError());
  exit(1);
}
#define OK(call, what) \
  if ((call) != LOOM_OK) fail(what)

static LoomObject* global(const char* name) {
  LoomObject* f = NULL;
  OK(api->global_function_get(name, &f), name);
  return f;
}

static DLTensor int64_tensor(int64_t* data, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.dtype.code = kDLInt;
  t.dtype.bits = 64;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* The integer after "key": in the metadata's JSON. */
static int64_t json_int(const char* json, const char* key) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char* at = strstr(json, pattern);
  if (!at) {
    fprintf(stderr, "loom: the model's metadata has no %s\n", key);
    exit(1);
  }
  return strtoll(at + strlen(pattern), NULL, 10);
}

/* Calls f(args), returns the result (a tensor object). */
static LoomObject* call(LoomObject* f, LoomValue* args, int32_t n, const char* what) {
  LoomValue out;
  OK(api->function_call(f, args, n, &out), what);
  if (out.kind != LOOM_OBJECT) {
    fprintf(stderr, "loom: %s returned kind %d, not a tensor\n", what, (int)out.kind);
    exit(1);
  }
  return out.v.v_object;
}

/* The index of the largest logit of the last row of a (rows, vocab) float32 tensor. */
static int64_t argmax_last_row(LoomObject* logits) {
  const DLTensor* t = NULL;
  OK(api->tensor_get_dltensor(logits, &t), "logits");
  int64_t vocab = t->shape[1];
  const float* row = (const float*)t->data + (t->shape[0] - 1) * vocab;
  int64_t best = 0;
  for (int64_t k = 1; k < vocab; ++k)
    if (row[k] > row[best]) best = k;
  return best;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODEL.so COUNT TOKEN...\n", argv[0]);
    return 2;
  }
  api = LoomGetApi(1);
  if (!api) fail("LoomGetApi(1)");
  LoomObject* lib = NULL;
  OK(api->module_load(argv[1], NULL, &lib), argv[1]);
  LoomObject *prefill = NULL, *decode = NULL, *metadata = NULL;
  OK(api->module_get_function(lib, "prefill", &prefill), "prefill");
  OK(api->module_get_function(lib, "decode", &decode), "decode");
  OK(api->module_get_function(lib, "metadata", &metadata), "metadata");

  /* The model's sizes from its metadata (JSON bytes in a uint8 tensor). */
  LoomObject* meta = call(metadata, NULL, 0, "metadata");
  const DLTensor* mt = NULL;
  OK(api->tensor_get_dltensor(meta, &mt), "metadata");
  char* json = calloc((size_t)mt->shape[0] + 1, 1);
  memcpy(json, mt->data, (size_t)mt->shape[0]);
  api->object_release(meta);

  const int64_t count = strtoll(argv[2], NULL, 10), prompt = argc - 3;
  int64_t* ids = malloc(sizeof(int64_t) * (size_t)(prompt + 1));
  int64_t* positions = malloc(sizeof(int64_t) * (size_t)(prompt + 1));
  for (int64_t k = 0; k < prompt; ++k) {
    ids[k] = strtoll(argv[3 + k], NULL, 10);
    positions[k] = k;
  }

  /* A cache for one sequence of prompt + count tokens. */
  LoomValue args[6];
  const char* sizes[] = {"layers", "kv_heads", "head_dim"};
  for (int k = 0; k < 3; ++k) {
    args[k].kind = LOOM_INT;
    args[k].v.v_int = json_int(json, sizes[k]);
  }
  args[3].kind = LOOM_INT;
  args[3].v.v_int = prompt + count;
  args[4].kind = LOOM_INT;
  args[4].v.v_int = 1;
  LoomValue cache_value;
  OK(api->function_call(global("runtime.kv_cache.create"), args, 5, &cache_value), "runtime.kv_cache.create");
  LoomObject* cache = cache_value.v.v_object;
  LoomObject *add = global("runtime.kv_cache.add_sequence"), *begin = global("runtime.kv_cache.begin_step"),
             *end = global("runtime.kv_cache.end_step");
  LoomValue none;
  args[0].kind = LOOM_OBJECT;
  args[0].v.v_object = cache;
  args[1].kind = LOOM_INT;
  args[1].v.v_int = 0;
  OK(api->function_call(add, args, 2, &none), "add_sequence");

  int64_t seq = 0, n = prompt, one = 1, row = prompt - 1;
  for (int64_t step = 0; step < count; ++step) {
    /* begin_step(cache, [0], [n]) with int64 tensors for the lists */
    int64_t shape_one = 1;
    DLTensor seqs = int64_tensor(&seq, &shape_one), counts = int64_tensor(&n, &shape_one);
    args[1].kind = LOOM_DLTENSOR;
    args[1].v.v_dltensor = &seqs;
    args[2].kind = LOOM_DLTENSOR;
    args[2].v.v_dltensor = &counts;
    OK(api->function_call(begin, args, 3, &none), "begin_step");
    int64_t shape_n = n;
    DLTensor t_ids = int64_tensor(ids, &shape_n), t_pos = int64_tensor(positions, &shape_n);
    DLTensor t_rows = int64_tensor(&row, &one);
    LoomObject* logits;
    LoomValue in[4];
    in[0].kind = LOOM_DLTENSOR;
    in[0].v.v_dltensor = &t_ids;
    in[1].kind = LOOM_DLTENSOR;
    in[1].v.v_dltensor = &t_pos;
    if (step == 0) {
      in[2].kind = LOOM_DLTENSOR;
      in[2].v.v_dltensor = &t_rows;
      in[3].kind = LOOM_OBJECT;
      in[3].v.v_object = cache;
      logits = call(prefill, in, 4, "prefill");
    } else {
      in[2].kind = LOOM_OBJECT;
      in[2].v.v_object = cache;
      logits = call(decode, in, 3, "decode");
    }
    OK(api->function_call(end, args, 1, &none), "end_step");
    int64_t token = argmax_last_row(logits);
    api->object_release(logits);
    printf(step ? " %lld" : "%lld", (long long)token);
    /* the next step feeds the new token at the next position */
    ids[0] = token;
    positions[0] = prompt + step;
    n = 1;
  }
  printf("\n");
  api->object_release(cache);
  api->object_release(lib);
  free(json);
  free(ids);
  free(positions);
  return 0;
}
