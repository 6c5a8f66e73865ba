"""Python and C on one boundary (docs/c-api.md): a function a C library
registers through the C table is callable from Python, a Python function
registered as a global is callable through the C table, and the compiler
table parses, transforms and prints IR.  The C side is a real C file
compiled here with the system compiler against loom/c_api.h."""
import ctypes
import subprocess

import pytest

import loom
from conftest import ROOT

def loaded(name):
    """The path of the shared object `name` this process has loaded: its C
    table is the one the loom package's runtime uses (dlopen of a loaded
    path gives that library)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if f"/{name}.so" in line:
                return line.split()[-1]
    raise AssertionError(f"{name} is not loaded")

class Value(ctypes.Structure):
    class _V(ctypes.Union):
        _fields_ = [("v_int", ctypes.c_int64), ("v_float", ctypes.c_double), ("v_str", ctypes.c_char_p),
                    ("v_object", ctypes.c_void_p)]
    _fields_ = [("kind", ctypes.c_int32), ("v", _V)]

NONE, BOOL, INT, FLOAT, STR, OBJECT = range(6)
STATUS = ctypes.c_int32
HANDLE = ctypes.c_void_p
# The runtime table's entries, in order (loom/c_api.h, version 1).
ENTRIES = [
    ("last_error", ctypes.CFUNCTYPE(ctypes.c_char_p)),
    ("set_last_error", ctypes.CFUNCTYPE(None, ctypes.c_char_p)),
    ("object_retain", ctypes.CFUNCTYPE(STATUS, HANDLE)),
    ("object_release", ctypes.CFUNCTYPE(STATUS, HANDLE)),
    ("object_type_key", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.POINTER(ctypes.c_char_p))),
    ("object_use_count", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.POINTER(ctypes.c_int32))),
    ("object_get_field", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.c_char_p, ctypes.POINTER(Value))),
    ("value_release", ctypes.CFUNCTYPE(STATUS, ctypes.POINTER(Value))),
    ("module_load", ctypes.CFUNCTYPE(STATUS, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(HANDLE))),
    ("module_get_function", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.c_char_p, ctypes.POINTER(HANDLE))),
    ("module_function_names", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.POINTER(Value))),
    ("function_call", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.POINTER(Value), ctypes.c_int32, ctypes.POINTER(Value))),
    ("function_from_c", ctypes.c_void_p),
    ("global_function_get", ctypes.CFUNCTYPE(STATUS, ctypes.c_char_p, ctypes.POINTER(HANDLE))),
    ("global_function_register", ctypes.CFUNCTYPE(STATUS, ctypes.c_char_p, HANDLE, ctypes.c_int32)),
]

class Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("version", ctypes.c_uint32)] + ENTRIES

class CompilerApi(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("version", ctypes.c_uint32),
                ("ir_parse", ctypes.CFUNCTYPE(STATUS, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(HANDLE))),
                ("ir_print", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.POINTER(Value))),
                ("run_passes", ctypes.CFUNCTYPE(STATUS, HANDLE, ctypes.c_char_p, ctypes.c_int32,
                                                ctypes.POINTER(HANDLE)))]

@pytest.fixture(scope="module")
def api():
    runtime = ctypes.CDLL(loaded("libloom_runtime"))
    runtime.LoomGetApi.restype = ctypes.POINTER(Api)
    table = runtime.LoomGetApi(1)
    assert table, "LoomGetApi(1) gave NULL"
    return table.contents

def call(api, handle, *args):
    packed = (Value * max(len(args), 1))()
    for slot, a in zip(packed, args):
        if isinstance(a, bool):
            slot.kind, slot.v.v_int = BOOL, int(a)
        elif isinstance(a, int):
            slot.kind, slot.v.v_int = INT, a
        elif isinstance(a, float):
            slot.kind, slot.v.v_float = FLOAT, a
        else:
            slot.kind, slot.v.v_str = STR, a.encode()
    out = Value()
    if api.function_call(handle, packed, len(args), ctypes.byref(out)) != 0:
        raise RuntimeError(api.last_error().decode())
    try:
        return {NONE: lambda: None, BOOL: lambda: bool(out.v.v_int), INT: lambda: out.v.v_int,
                FLOAT: lambda: out.v.v_float, STR: lambda: out.v.v_str.decode()}[out.kind]()
    finally:
        api.value_release(ctypes.byref(out))

def global_function(api, name):
    handle = HANDLE()
    assert api.global_function_get(name.encode(), ctypes.byref(handle)) == 0, api.last_error()
    return handle

C_LIBRARY = r"""
#include <stdlib.h>
#include <string.h>
#include <loom/c_api.h>

static const LoomApi* api;

static LoomStatus affine(void* resource, const LoomValue* args, int32_t n, LoomValue* result) {
  if (n != 2 || args[0].kind != LOOM_INT || args[1].kind != LOOM_FLOAT) {
    api->set_last_error("c.affine expects (int, float)");
    return LOOM_ERROR;
  }
  result->kind = LOOM_FLOAT;
  result->v.v_float = *(double*)resource * (double)args[0].v.v_int + args[1].v.v_float;
  return LOOM_OK;
}

static LoomStatus greet(void* resource, const LoomValue* args, int32_t n, LoomValue* result) {
  (void)resource;
  if (n != 1 || args[0].kind != LOOM_STR) {
    /* A failing callback may leave a result behind: a string of its own,
     * which Loom must neither use nor free. */
    result->kind = LOOM_STR;
    result->v.v_str = "not freed";
    api->set_last_error("c.greet expects a str");
    return LOOM_ERROR;
  }
  result->kind = LOOM_STR;
  result->v.v_str = strcmp(args[0].v.v_str, "loom") == 0 ? "hello, loom" : "hello, stranger";
  return LOOM_OK;
}

static void finalize(void* resource) { free(resource); }

/* Registers c.affine (2.0 * a + b) and c.greet; 0, or 1 with the error. */
int c_register(void) {
  LoomObject* f;
  double* factor = (double*)malloc(sizeof(double));
  api = LoomGetApi(1);
  if (!api) return 1;
  *factor = 2.0;
  if (api->function_from_c(affine, factor, finalize, &f) != LOOM_OK) return 1;
  if (api->global_function_register("c.affine", f, 1) != LOOM_OK) return 1;
  api->object_release(f);
  if (api->function_from_c(greet, NULL, NULL, &f) != LOOM_OK) return 1;
  if (api->global_function_register("c.greet", f, 1) != LOOM_OK) return 1;
  api->object_release(f);
  return 0;
}
"""

@pytest.fixture(scope="module")
def c_library(tmp_path_factory):
    d = tmp_path_factory.mktemp("c_api")
    (d / "register.c").write_text(C_LIBRARY)
    runtime = loaded("libloom_runtime")
    out = subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Werror", "-shared", "-fPIC",
                          f"-I{ROOT / 'core' / 'include'}", str(d / "register.c"), runtime,
                          "-o", str(d / "libregister.so")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lib = ctypes.CDLL(str(d / "libregister.so"))
    core = ctypes.CDLL(runtime)
    core.LoomGetLastError.restype = ctypes.c_char_p
    assert lib.c_register() == 0, core.LoomGetLastError().decode()
    return lib

def test_a_function_registered_from_c_is_callable_from_python(c_library):
    affine = loom.runtime.get_global_func("c.affine")
    assert affine(3, 0.5) == 6.5
    assert affine(-4, 1.25) == -6.75
    assert loom.runtime.get_global_func("c.greet")("loom") == "hello, loom"
    with pytest.raises(Exception, match=r"c\.greet expects a str"):
        loom.runtime.get_global_func("c.greet")(7)
    # The C function's error reaches Python with its message.
    with pytest.raises(Exception, match=r"c\.affine expects \(int, float\)"):
        affine("three", 0.5)

def test_a_python_function_registered_as_a_global_is_callable_through_the_c_table(api):
    loom.runtime.register_func("pytest.c_api.join", lambda a, b, sep: f"{a}{sep}{b}", override=True)
    loom.runtime.register_func("pytest.c_api.twice", lambda x: 2 * x, override=True)
    assert call(api, global_function(api, "pytest.c_api.join"), "left", "right", "-") == "left-right"
    assert call(api, global_function(api, "pytest.c_api.twice"), 21) == 42
    assert call(api, global_function(api, "pytest.c_api.twice"), 1.5) == 3.0
    # A Python exception comes back as the C caller's error, with its message.
    def fail(x):
        raise ValueError(f"no {x} here")
    loom.runtime.register_func("pytest.c_api.fail", fail, override=True)
    with pytest.raises(RuntimeError, match="no 7 here"):
        call(api, global_function(api, "pytest.c_api.fail"), 7)
    # A missing global is NULL with no error; a taken name needs override.
    missing = HANDLE()
    assert api.global_function_get(b"pytest.c_api.none", ctypes.byref(missing)) == 0 and not missing.value
    with pytest.raises(Exception, match="pytest.c_api.twice"):
        loom.runtime.register_func("pytest.c_api.twice", lambda x: x)

def test_a_newer_table_than_the_library_is_refused_naming_both_versions():
    runtime = ctypes.CDLL(loaded("libloom_runtime"))
    runtime.LoomGetApi.restype = ctypes.c_void_p
    runtime.LoomGetLastError.restype = ctypes.c_char_p
    assert runtime.LoomGetApi(7) is None
    message = runtime.LoomGetLastError().decode()
    assert "version 7" in message and "versions 1 to 1" in message, message

def test_the_compiler_table_parses_transforms_and_prints_ir(api):
    core = ctypes.CDLL(loaded("libloom_core"))
    core.LoomGetCompilerApi.restype = ctypes.POINTER(CompilerApi)
    compiler = core.LoomGetCompilerApi(1).contents
    text = (ROOT / "examples" / "mlp.loom").read_text()
    module, typed = HANDLE(), HANDLE()
    assert compiler.ir_parse(text.encode(), b"mlp.loom", ctypes.byref(module)) == 0, api.last_error()
    assert compiler.run_passes(module, b"InferType, FuseOps", 2, ctypes.byref(typed)) == 0, api.last_error()
    out = Value()
    assert compiler.ir_print(typed, ctypes.byref(out)) == 0 and out.kind == STR
    printed = out.v.v_str.decode()
    api.value_release(ctypes.byref(out))
    # The same as the Python API's passes on the same text.
    want = loom.transform.Sequential(["InferType", "FuseOps"])(loom.ir.parse(text, "mlp.loom")).script()
    assert printed == want
    # Errors name the file, the line and the column; unknown passes the closest name.
    bad = HANDLE()
    assert compiler.ir_parse(b"@main = fn(%x: Tensor[(2), float32]) {\n  %y\n}", b"bad.loom", ctypes.byref(bad)) != 0
    assert "bad.loom:2:" in api.last_error().decode()
    assert compiler.run_passes(module, b"InferTyp", 2, ctypes.byref(bad)) != 0
    assert "InferType" in api.last_error().decode()
    for h in (module, typed):
        assert api.object_release(h) == 0
