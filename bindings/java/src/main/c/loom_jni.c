/* The JNI half of the Java binding (bindings/java, docs/languages.md):
 * org.loom.Native's methods over Loom's C API.  Handles cross as jlong
 * (a LoomObject*, one counted reference each); a failing call throws
 * org.loom.LoomException with Loom's message.  Links libloom_runtime
 * alone. */
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/c_api.h>

static const LoomApi* api(void) { return LoomGetApi(1); }

/* The JVM, for callbacks from threads Loom runs Java functions on. */
static JavaVM* jvm;

/* Classes, fields and methods every call uses, looked up once when the
 * library loads (in org.loom.Native's class loader). */
static struct {
  jclass handle, boolean, long_, integer, number, string, double_, object, function, throwable;
  jfieldID handle_field;
  jmethodID wrap, boolean_value, long_value, double_value, boolean_of, long_of, double_of, apply, to_string;
} J;

static jclass global_class(JNIEnv* env, const char* name) {
  jclass local = (*env)->FindClass(env, name);
  jclass global = local ? (jclass)(*env)->NewGlobalRef(env, local) : NULL;
  if (local) (*env)->DeleteLocalRef(env, local);
  return global;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env;
  (void)reserved;
  jvm = vm;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  J.handle = global_class(env, "org/loom/Handle");
  J.boolean = global_class(env, "java/lang/Boolean");
  J.long_ = global_class(env, "java/lang/Long");
  J.integer = global_class(env, "java/lang/Integer");
  J.number = global_class(env, "java/lang/Number");
  J.string = global_class(env, "java/lang/String");
  J.double_ = global_class(env, "java/lang/Double");
  J.object = global_class(env, "java/lang/Object");
  J.function = global_class(env, "java/util/function/Function");
  J.throwable = global_class(env, "java/lang/Throwable");
  if (!J.handle || !J.boolean || !J.long_ || !J.integer || !J.number || !J.string || !J.double_ || !J.object ||
      !J.function || !J.throwable) {
    return JNI_ERR;
  }
  J.handle_field = (*env)->GetFieldID(env, J.handle, "handle", "J");
  J.wrap = (*env)->GetStaticMethodID(env, J.handle, "wrap", "(JI)Lorg/loom/Handle;");
  J.boolean_value = (*env)->GetMethodID(env, J.boolean, "booleanValue", "()Z");
  J.long_value = (*env)->GetMethodID(env, J.number, "longValue", "()J");
  J.double_value = (*env)->GetMethodID(env, J.number, "doubleValue", "()D");
  J.boolean_of = (*env)->GetStaticMethodID(env, J.boolean, "valueOf", "(Z)Ljava/lang/Boolean;");
  J.long_of = (*env)->GetStaticMethodID(env, J.long_, "valueOf", "(J)Ljava/lang/Long;");
  J.double_of = (*env)->GetStaticMethodID(env, J.double_, "valueOf", "(D)Ljava/lang/Double;");
  J.apply = (*env)->GetMethodID(env, J.function, "apply", "(Ljava/lang/Object;)Ljava/lang/Object;");
  J.to_string = (*env)->GetMethodID(env, J.throwable, "toString", "()Ljava/lang/String;");
  if (!J.handle_field || !J.wrap || !J.boolean_value || !J.long_value || !J.double_value || !J.boolean_of ||
      !J.long_of || !J.double_of || !J.apply || !J.to_string) {
    return JNI_ERR;
  }
  return JNI_VERSION_1_8;
}

static void throw_loom(JNIEnv* env, const char* message) {
  jclass cls = (*env)->FindClass(env, "org/loom/LoomException");
  if (cls) {
    (*env)->ThrowNew(env, cls, message);
    (*env)->DeleteLocalRef(env, cls);
  }
}

/* Throws Loom's last error for a failed status; nonzero when it did. */
static int failed(JNIEnv* env, LoomStatus status) {
  if (status == LOOM_OK) return 0;
  throw_loom(env, api() ? api()->last_error() : LoomGetLastError());
  return 1;
}

static LoomObject* H(jlong h) { return (LoomObject*)(intptr_t)h; }

JNIEXPORT jlong JNICALL Java_org_loom_Native_moduleLoad(JNIEnv* env, jclass cls, jstring path) {
  const char* p = (*env)->GetStringUTFChars(env, path, NULL);
  LoomObject* out = NULL;
  LoomStatus s;
  (void)cls;
  if (!api()) {
    (*env)->ReleaseStringUTFChars(env, path, p);
    throw_loom(env, LoomGetLastError());
    return 0;
  }
  s = api()->module_load(p, NULL, &out);
  (*env)->ReleaseStringUTFChars(env, path, p);
  return failed(env, s) ? 0 : (jlong)(intptr_t)out;
}

JNIEXPORT jlong JNICALL Java_org_loom_Native_moduleFunction(JNIEnv* env, jclass cls, jlong module, jstring name) {
  const char* n = (*env)->GetStringUTFChars(env, name, NULL);
  LoomObject* out = NULL;
  LoomStatus s = api()->module_get_function(H(module), n, &out);
  (void)cls;
  (*env)->ReleaseStringUTFChars(env, name, n);
  return failed(env, s) ? 0 : (jlong)(intptr_t)out;
}

JNIEXPORT jstring JNICALL Java_org_loom_Native_moduleFunctionNames(JNIEnv* env, jclass cls, jlong module) {
  LoomValue v;
  jstring out;
  (void)cls;
  if (failed(env, api()->module_function_names(H(module), &v))) return NULL;
  out = (*env)->NewStringUTF(env, v.v.v_str ? v.v.v_str : "");
  api()->value_release(&v);
  return out;
}

JNIEXPORT jlong JNICALL Java_org_loom_Native_globalFunction(JNIEnv* env, jclass cls, jstring name) {
  const char* n = (*env)->GetStringUTFChars(env, name, NULL);
  LoomObject* out = NULL;
  LoomStatus s = api()->global_function_get(n, &out);
  (void)cls;
  (*env)->ReleaseStringUTFChars(env, name, n);
  return failed(env, s) ? 0 : (jlong)(intptr_t)out;
}

JNIEXPORT void JNICALL Java_org_loom_Native_release(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  api()->object_release(H(h));
}

JNIEXPORT jint JNICALL Java_org_loom_Native_useCount(JNIEnv* env, jclass cls, jlong h) {
  int32_t n = 0;
  (void)cls;
  failed(env, api()->object_use_count(H(h), &n));
  return n;
}

JNIEXPORT jstring JNICALL Java_org_loom_Native_typeKey(JNIEnv* env, jclass cls, jlong h) {
  const char* key = "";
  (void)cls;
  if (failed(env, api()->object_type_key(H(h), &key))) return NULL;
  return (*env)->NewStringUTF(env, key);
}

/* A CPU tensor of `shape` and dtype (code, bits) holding `bytes` bytes
 * copied from `src`. */
static jlong tensor_of(JNIEnv* env, const void* src, size_t bytes, jlongArray shape, int code, int bits) {
  jsize ndim = (*env)->GetArrayLength(env, shape);
  jlong* dims = (*env)->GetLongArrayElements(env, shape, NULL);
  int64_t* d = (int64_t*)malloc(sizeof(int64_t) * (size_t)(ndim + 1));
  LoomObject* out = NULL;
  const DLTensor* t;
  DLDataType dtype;
  DLDevice cpu = {kDLCPU, 0};
  int64_t count = 1;
  jsize k;
  for (k = 0; k < ndim; ++k) d[k] = dims[k], count *= dims[k];
  (*env)->ReleaseLongArrayElements(env, shape, dims, JNI_ABORT);
  if (count < 0 || (size_t)count * (size_t)(bits / 8) != bytes) {
    free(d);
    throw_loom(env, "the data does not hold as many elements as the shape says");
    return 0;
  }
  dtype.code = (uint8_t)code;
  dtype.bits = (uint8_t)bits;
  dtype.lanes = 1;
  if (failed(env, api()->tensor_empty(d, (int32_t)ndim, dtype, cpu, &out))) {
    free(d);
    return 0;
  }
  free(d);
  api()->tensor_get_dltensor(out, &t);
  if (bytes) memcpy((char*)t->data + t->byte_offset, src, bytes);
  return (jlong)(intptr_t)out;
}

JNIEXPORT jlong JNICALL Java_org_loom_Native_tensorFromFloats(JNIEnv* env, jclass cls, jfloatArray data,
                                                              jlongArray shape) {
  jsize n = (*env)->GetArrayLength(env, data);
  jfloat* p = (*env)->GetPrimitiveArrayCritical(env, data, NULL);
  jlong out;
  (void)cls;
  /* Copy out of the critical region before calling into Loom. */
  float* copy = (float*)malloc(sizeof(float) * (size_t)(n + 1));
  if (n) memcpy(copy, p, sizeof(float) * (size_t)n);
  (*env)->ReleasePrimitiveArrayCritical(env, data, p, JNI_ABORT);
  out = tensor_of(env, copy, sizeof(float) * (size_t)n, shape, kDLFloat, 32);
  free(copy);
  return out;
}

JNIEXPORT jlong JNICALL Java_org_loom_Native_tensorFromBuffer(JNIEnv* env, jclass cls, jobject buffer,
                                                              jlongArray shape) {
  void* p = (*env)->GetDirectBufferAddress(env, buffer);
  jlong capacity = (*env)->GetDirectBufferCapacity(env, buffer);
  (void)cls;
  if (!p || capacity < 0) {
    throw_loom(env, "not a direct buffer (ByteBuffer.allocateDirect(...).asFloatBuffer())");
    return 0;
  }
  return tensor_of(env, p, sizeof(float) * (size_t)capacity, shape, kDLFloat, 32);
}

JNIEXPORT jlongArray JNICALL Java_org_loom_Native_tensorShape(JNIEnv* env, jclass cls, jlong h) {
  const DLTensor* t;
  jlongArray out;
  jlong dims[64];
  int k;
  (void)cls;
  if (failed(env, api()->tensor_get_dltensor(H(h), &t))) return NULL;
  for (k = 0; k < t->ndim && k < 64; ++k) dims[k] = t->shape[k];
  out = (*env)->NewLongArray(env, t->ndim);
  (*env)->SetLongArrayRegion(env, out, 0, t->ndim, dims);
  return out;
}

JNIEXPORT jstring JNICALL Java_org_loom_Native_tensorDtype(JNIEnv* env, jclass cls, jlong h) {
  static const char* kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const DLTensor* t;
  char text[32];
  (void)cls;
  if (failed(env, api()->tensor_get_dltensor(H(h), &t))) return NULL;
  snprintf(text, sizeof text, "%s%d", t->dtype.code < 7 ? kinds[t->dtype.code] : "code", t->dtype.bits);
  return (*env)->NewStringUTF(env, text);
}

JNIEXPORT jfloatArray JNICALL Java_org_loom_Native_tensorToFloats(JNIEnv* env, jclass cls, jlong h) {
  const DLTensor* t;
  jfloatArray out;
  int64_t count = 1;
  int k;
  (void)cls;
  if (failed(env, api()->tensor_get_dltensor(H(h), &t))) return NULL;
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    throw_loom(env, "the tensor does not hold float32");
    return NULL;
  }
  if (t->device.device_type != kDLCPU) {
    throw_loom(env, "the tensor is not on the CPU: copy it there first");
    return NULL;
  }
  for (k = 0; k < t->ndim; ++k) count *= t->shape[k];
  out = (*env)->NewFloatArray(env, (jsize)count);
  if (count) (*env)->SetFloatArrayRegion(env, out, 0, (jsize)count, (const jfloat*)((char*)t->data + t->byte_offset));
  return out;
}

/* ---- calls ---- */

/* A LoomValue for a Java argument: Handle (its handle), Long/Integer,
 * Double/Float, Boolean, String (a copy in *text, freed by the caller),
 * null.  Zero for a type Loom does not take (an exception is pending). */
static int to_value(JNIEnv* env, jobject a, jsize index, LoomValue* v, char** text) {
  if (!a) {
    v->kind = LOOM_NONE;
  } else if ((*env)->IsInstanceOf(env, a, J.handle)) {
    v->kind = LOOM_OBJECT;
    v->v.v_object = H((*env)->GetLongField(env, a, J.handle_field));
    if (!v->v.v_object) {
      throw_loom(env, "an argument was closed already");
      return 0;
    }
  } else if ((*env)->IsInstanceOf(env, a, J.boolean)) {
    v->kind = LOOM_BOOL;
    v->v.v_int = (*env)->CallBooleanMethod(env, a, J.boolean_value);
  } else if ((*env)->IsInstanceOf(env, a, J.long_) || (*env)->IsInstanceOf(env, a, J.integer)) {
    v->kind = LOOM_INT;
    v->v.v_int = (*env)->CallLongMethod(env, a, J.long_value);
  } else if ((*env)->IsInstanceOf(env, a, J.number)) {
    v->kind = LOOM_FLOAT;
    v->v.v_float = (*env)->CallDoubleMethod(env, a, J.double_value);
  } else if ((*env)->IsInstanceOf(env, a, J.string)) {
    const char* s = (*env)->GetStringUTFChars(env, (jstring)a, NULL);
    *text = strdup(s);
    (*env)->ReleaseStringUTFChars(env, (jstring)a, s);
    v->kind = LOOM_STR;
    v->v.v_str = *text;
  } else {
    char message[160];
    snprintf(message, sizeof message,
             "argument %d: Loom takes a Tensor, Function, Module, Long, Integer, Double, Float, Boolean, String or "
             "null",
             (int)index);
    throw_loom(env, message);
    return 0;
  }
  return 1;
}

/* What kind of handle an object is, for Handle.wrap: 1 tensor, 2 function,
 * 3 module, 0 another object. */
static jint handle_kind(LoomObject* o) {
  const char* key = "";
  size_t n;
  if (api()->object_type_key(o, &key) != LOOM_OK) return 0;
  if (strcmp(key, "runtime.NDArray") == 0) return 1;
  if (strcmp(key, "Function") == 0) return 2;
  n = strlen(key);
  return n >= 6 && strcmp(key + n - 6, "Module") == 0 ? 3 : 0;
}

/* The Java object for a result Loom returned (its reference moves over):
 * a Tensor, another Handle, Long, Double, Boolean, String or null. */
static jobject from_value(JNIEnv* env, LoomValue* v) {
  jobject out = NULL;
  switch (v->kind) {
    case LOOM_BOOL:
      out = (*env)->CallStaticObjectMethod(env, J.boolean, J.boolean_of, (jboolean)(v->v.v_int != 0));
      break;
    case LOOM_INT:
      out = (*env)->CallStaticObjectMethod(env, J.long_, J.long_of, (jlong)v->v.v_int);
      break;
    case LOOM_FLOAT:
      out = (*env)->CallStaticObjectMethod(env, J.double_, J.double_of, v->v.v_float);
      break;
    case LOOM_STR:
      out = (*env)->NewStringUTF(env, v->v.v_str);
      break;
    case LOOM_OBJECT:
      out = (*env)->CallStaticObjectMethod(env, J.handle, J.wrap, (jlong)(intptr_t)v->v.v_object,
                                           handle_kind(v->v.v_object));
      v->kind = LOOM_NONE; /* the reference moved into the Java object */
      break;
    default:
      break;
  }
  api()->value_release(v);
  return out;
}

/* The end of a call: an error becomes a LoomException; an object result
 * goes back through handle_out (wrapped on the Java side, Function.call,
 * without a call back into the JVM); any other value is converted. */
static jobject call_result(JNIEnv* env, LoomStatus s, LoomValue* result, jlongArray handle_out) {
  if (failed(env, s)) return NULL;
  if (result->kind == LOOM_OBJECT) {
    jlong handle[2];
    handle[0] = (jlong)(intptr_t)result->v.v_object;
    handle[1] = handle_kind(result->v.v_object);
    (*env)->SetLongArrayRegion(env, handle_out, 0, 2, handle);
    return NULL;
  }
  return from_value(env, result);
}

JNIEXPORT jobject JNICALL Java_org_loom_Native_call(JNIEnv* env, jclass cls, jlong fn, jobjectArray args,
                                                    jlongArray handle_out) {
  /* Up to 8 arguments on the stack: the cost of a call is what
   * bench/languages.py measures against C's. */
  LoomValue small_values[9];
  char* small_texts[9] = {NULL};
  jsize n = args ? (*env)->GetArrayLength(env, args) : 0, k;
  int heap = n >= 9;
  LoomValue* values = heap ? (LoomValue*)calloc((size_t)n + 1, sizeof(LoomValue)) : small_values;
  char** texts = heap ? (char**)calloc((size_t)n + 1, sizeof(char*)) : small_texts;
  LoomValue result;
  LoomStatus s = LOOM_ERROR;
  int ok = values && texts;
  (void)cls;
  if (!ok) throw_loom(env, "out of memory for the call's arguments");
  for (k = 0; k < n && ok; ++k) {
    jobject a = (*env)->GetObjectArrayElement(env, args, k);
    ok = to_value(env, a, k, &values[k], &texts[k]);
    (*env)->DeleteLocalRef(env, a);
  }
  if (ok) s = api()->function_call(H(fn), values, (int32_t)n, &result);
  for (k = 0; texts && k < n; ++k) free(texts[k]);
  if (heap) {
    free(texts);
    free(values);
  }
  if (!ok) return NULL;
  return call_result(env, s, &result, handle_out);
}

/* Function.call's path when every argument is an open handle (at most 8). */
JNIEXPORT jobject JNICALL Java_org_loom_Native_callHandles(JNIEnv* env, jclass cls, jlong fn, jlongArray handles,
                                                           jlongArray handle_out) {
  jlong raw[8];
  LoomValue values[8], result;
  jsize n = (*env)->GetArrayLength(env, handles), k;
  (void)cls;
  if (n > 8) {
    throw_loom(env, "callHandles takes at most 8 handles");
    return NULL;
  }
  (*env)->GetLongArrayRegion(env, handles, 0, n, raw);
  for (k = 0; k < n; ++k) {
    values[k].kind = LOOM_OBJECT;
    values[k].v.v_object = H(raw[k]);
  }
  return call_result(env, api()->function_call(H(fn), values, (int32_t)n, &result), &result, handle_out);
}

/* ---- functions written in Java (org.loom.Function.of) ---- */

/* The calling thread's JNIEnv, attaching a thread the JVM does not know
 * (as a daemon: Loom's threads must not keep the JVM alive). */
static JNIEnv* env_here(void) {
  JNIEnv* env = NULL;
  if ((*jvm)->GetEnv(jvm, (void**)&env, JNI_VERSION_1_8) == JNI_OK) return env;
  if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void**)&env, NULL) != JNI_OK) return NULL;
  return env;
}

/* resource: a global reference to a java.util.function.Function<Object[], Object>. */
static LoomStatus java_trampoline(void* resource, const LoomValue* args, int32_t n, LoomValue* result) {
  static __thread char* last_string; /* a string result lives until this thread's next */
  JNIEnv* env = env_here();
  jobjectArray array;
  jobject out;
  jthrowable error;
  int32_t k;
  if (!env) {
    api()->set_last_error("a Java function was called on a thread the JVM could not attach");
    return LOOM_ERROR;
  }
  (*env)->PushLocalFrame(env, n + 16);
  array = (*env)->NewObjectArray(env, n, J.object, NULL);
  for (k = 0; k < n; ++k) {
    LoomValue v = args[k];
    if (v.kind == LOOM_OBJECT) api()->object_retain(v.v.v_object); /* from_value takes a reference over */
    if (v.kind == LOOM_STR) {
      (*env)->SetObjectArrayElement(env, array, k, (*env)->NewStringUTF(env, v.v.v_str));
      continue;
    }
    (*env)->SetObjectArrayElement(env, array, k, from_value(env, &v));
  }
  out = (*env)->CallObjectMethod(env, (jobject)resource, J.apply, array);
  error = (*env)->ExceptionOccurred(env);
  if (error) {
    jstring text;
    const char* message;
    (*env)->ExceptionClear(env);
    text = (jstring)(*env)->CallObjectMethod(env, error, J.to_string);
    message = text ? (*env)->GetStringUTFChars(env, text, NULL) : "a Java function threw";
    {
      char buffer[1024];
      snprintf(buffer, sizeof buffer, "a Java function threw %s", message);
      api()->set_last_error(buffer);
    }
    if (text) (*env)->ReleaseStringUTFChars(env, text, message);
    (*env)->PopLocalFrame(env, NULL);
    return LOOM_ERROR;
  }
  {
    char* text = NULL;
    int ok = to_value(env, out, 0, result, &text);
    if (ok && result->kind == LOOM_OBJECT) api()->object_retain(result->v.v_object); /* passes to Loom */
    if (ok && result->kind == LOOM_STR) {
      free(last_string);
      last_string = text;
    } else {
      free(text);
    }
    if (!ok) {
      (*env)->ExceptionClear(env);
      api()->set_last_error("a Java function returned a value Loom does not take");
      (*env)->PopLocalFrame(env, NULL);
      return LOOM_ERROR;
    }
  }
  (*env)->PopLocalFrame(env, NULL);
  return LOOM_OK;
}

static void java_release(void* resource) {
  JNIEnv* env = env_here();
  if (env) (*env)->DeleteGlobalRef(env, (jobject)resource);
}

JNIEXPORT jlong JNICALL Java_org_loom_Native_functionOf(JNIEnv* env, jclass cls, jobject fn) {
  jobject global = (*env)->NewGlobalRef(env, fn);
  LoomObject* out = NULL;
  (void)cls;
  if (api()->function_from_c(java_trampoline, global, java_release, &out) != LOOM_OK) {
    (*env)->DeleteGlobalRef(env, global);
    failed(env, LOOM_ERROR);
    return 0;
  }
  return (jlong)(intptr_t)out;
}

JNIEXPORT void JNICALL Java_org_loom_Native_registerGlobal(JNIEnv* env, jclass cls, jstring name, jlong fn,
                                                           jboolean allow_override) {
  const char* n = (*env)->GetStringUTFChars(env, name, NULL);
  LoomStatus s = api()->global_function_register(n, H(fn), allow_override ? 1 : 0);
  (void)cls;
  (*env)->ReleaseStringUTFChars(env, name, n);
  failed(env, s);
}
