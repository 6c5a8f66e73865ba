// Package loom runs libraries Loom exported, from Go, through Loom's
// stable C API (loom/c_api.h, docs/c-api.md) with the runtime library
// alone (cgo and the standard library; docs/languages.md).
//
//	lib, err := loom.Load("mlp.so")
//	main, err := lib.Function("main")
//	x, err := loom.NewTensor([]float32{...}, 64, 784)
//	y, err := main.Call(x, w1, b1, ...)
//	t := y.(*loom.Tensor); t.Shape(); t.DType(); t.Float32s()
//
// Handles (Module, Function, Tensor, Object) are counted references to
// Loom objects: Close gives one back at once, and a finalizer does it for
// a handle that is garbage collected unclosed.  Errors are *loom.Error
// carrying Loom's message.  Every call may come from any goroutine; one
// function may be called from many at once.
package loom

/*
#cgo CFLAGS: -I${SRCDIR}/../../core/include
#cgo LDFLAGS: -L${SRCDIR}/../../build/lib -Wl,-rpath,${SRCDIR}/../../build/lib -lloom_runtime
#include "api.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Error is Loom's error: the message of the C API's last error on the
// calling thread.
type Error struct {
	Message string
}

func (e *Error) Error() string { return e.Message }

func lastError() error {
	return &Error{Message: C.GoString(C.loom_go_last_error())}
}

func check(status C.LoomStatus) error {
	if status == C.LOOM_OK {
		return nil
	}
	return lastError()
}

// The C API needs the calling thread's error right after a failing call:
// calls that may fail run locked to their OS thread.
func locked(f func() C.LoomStatus) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(f())
}

// Object is one counted reference to a Loom object.
type Object struct {
	h      *C.LoomObject
	closed uint32 // set by the first Close
	guard  *guard // gives h back if the Object is collected unclosed
}

// track gives o its guard: the finalizer that frees a handle nobody
// closed.
func track(o *Object) { o.guard = takeGuard(o.h) }

func newObject(h *C.LoomObject) *Object {
	o := &Object{h: h}
	track(o)
	return o
}

// Close gives the reference back (once; later calls do nothing), and its
// guard to the free list.
func (o *Object) Close() {
	if atomic.CompareAndSwapUint32(&o.closed, 0, 1) {
		C.loom_go_release(o.h)
		giveGuard(o.guard)
		o.guard = nil
	}
}

// A guard belongs to one open Object, which alone refers to it; when the
// Object is collected unclosed, so is the guard, and its finalizer gives
// the reference back.  Setting a finalizer costs about as much as the
// rest of a no-op call (bench/languages.py), so a closed Object's guard
// goes to a free list and the next handle reuses it, finalizer and all.
type guard struct{ h *C.LoomObject }

func (g *guard) release() {
	if g.h != nil {
		C.loom_go_release(g.h)
	}
}

var guards struct {
	sync.Mutex
	free []*guard
}

func takeGuard(h *C.LoomObject) *guard {
	guards.Lock()
	if n := len(guards.free); n > 0 {
		g := guards.free[n-1]
		guards.free[n-1] = nil // the list no longer keeps it: its Object alone does
		guards.free = guards.free[:n-1]
		guards.Unlock()
		g.h = h
		return g
	}
	guards.Unlock()
	g := &guard{h: h}
	runtime.SetFinalizer(g, (*guard).release)
	return g
}

func giveGuard(g *guard) {
	if g == nil {
		return
	}
	g.h = nil // a guard dropped here is collected with nothing to release
	guards.Lock()
	if len(guards.free) < 1024 {
		guards.free = append(guards.free, g)
	}
	guards.Unlock()
}

// TypeKey is the object's type ("runtime.NDArray", "Function", ...).
func (o *Object) TypeKey() string {
	var key *C.char
	if C.loom_go_type_key(o.h, &key) != C.LOOM_OK {
		return ""
	}
	return C.GoString(key)
}

// UseCount is the object's reference count (for tests and leak checks).
func (o *Object) UseCount() int {
	var n C.int32_t
	C.loom_go_use_count(o.h, &n)
	return int(n)
}

// Module is an exported library's module tree.
type Module struct{ Object }

// Load loads an exported library (loomc build ... -o LIB.so), loading
// the runtime halves of the backends it names.
func Load(path string) (*Module, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var h *C.LoomObject
	if err := locked(func() C.LoomStatus { return C.loom_go_module_load(cpath, &h) }); err != nil {
		return nil, err
	}
	m := &Module{Object{h: h}}
	track(&m.Object)
	return m, nil
}

// Function is the function name of the module or, depth first, of its
// imports; an error names the closest name when none defines it.
func (m *Module) Function(name string) (*Function, error) {
	if m.object() == nil {
		return nil, errClosed("module")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var h *C.LoomObject
	if err := locked(func() C.LoomStatus { return C.loom_go_get_function(m.h, cname, &h) }); err != nil {
		return nil, err
	}
	return newFunction(h), nil
}

// FunctionNames lists the module's own functions.
func (m *Module) FunctionNames() ([]string, error) {
	var v C.LoomValue
	if err := locked(func() C.LoomStatus { return C.loom_go_function_names(m.h, &v) }); err != nil {
		return nil, err
	}
	defer C.loom_go_value_release(&v)
	text := C.GoString(strOf(&v))
	if text == "" {
		return nil, nil
	}
	return strings.Split(strings.TrimRight(text, "\n"), "\n"), nil
}

// Function is a Loom function: a module's, a global one, or one written
// in Go (NewFunction).
type Function struct{ Object }

func newFunction(h *C.LoomObject) *Function {
	f := &Function{Object{h: h}}
	track(&f.Object)
	return f
}

// GlobalFunction is the global function name; an error when none is
// registered.
func GlobalFunction(name string) (*Function, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var h *C.LoomObject
	if err := locked(func() C.LoomStatus { return C.loom_go_global_get(cname, &h) }); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, &Error{Message: fmt.Sprintf("no global function named '%s'", name)}
	}
	return newFunction(h), nil
}

// RegisterGlobal registers the function as the global name.
func (f *Function) RegisterGlobal(name string, allowOverride bool) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	allow := C.int32_t(0)
	if allowOverride {
		allow = 1
	}
	return locked(func() C.LoomStatus { return C.loom_go_global_register(cname, f.h, allow) })
}

// Call calls the function.  Arguments: *Tensor (or any *Object handle's
// embedding type), int, int64, float64, float32, bool, string, nil.  The
// result is nil, int64, float64, bool, string, *Tensor or *Object.
func (f *Function) Call(args ...interface{}) (interface{}, error) {
	if f.object() == nil {
		return nil, errClosed("function")
	}
	n := len(args)
	frame := frames.Get().(*callFrame)
	var cstrs []*C.char
	defer func() {
		for _, s := range cstrs {
			C.free(unsafe.Pointer(s))
		}
		frames.Put(frame)
	}()
	values := frame.values[:]
	if n >= len(frame.values) {
		values = make([]C.LoomValue, n+1)
	}
	for k, a := range args {
		cstr, ok := setValue(&values[k], a, false)
		if !ok {
			if h, isHandle := a.(handle); isHandle && h.object() == nil {
				return nil, &Error{Message: fmt.Sprintf("argument %d: the %T was closed", k, a)}
			}
			return nil, &Error{Message: fmt.Sprintf("argument %d: a %T cannot be passed to Loom (make a *loom.Tensor of a slice with NewTensor)", k, a)}
		}
		if cstr != nil {
			cstrs = append(cstrs, cstr)
		}
	}
	result := &values[n]
	if C.loom_go_call(f.h, &values[0], C.int32_t(n), result, &frame.isTensor, &frame.message) != C.LOOM_OK {
		defer C.free(unsafe.Pointer(frame.message))
		return nil, &Error{Message: C.GoString(frame.message)}
	}
	// Keep the handles alive until the call has returned.
	runtime.KeepAlive(args)
	runtime.KeepAlive(f)
	if frame.isTensor != 0 {
		t := &Tensor{Object{h: objectOf(result)}}
		track(&t.Object)
		return t, nil
	}
	return takeValue(result), nil
}

// callFrame is the memory a call passes to C: the arguments, the result
// (the entry after the last argument), whether it is a tensor, and the
// error message.  Go memory that holds C pointers only (handles, C
// strings), which cgo allows to pass; pooled, so that a call does not
// allocate it (bench/languages.py measures the cost of a call).
type callFrame struct {
	values   [9]C.LoomValue
	isTensor C.int
	message  *C.char
}

var frames = sync.Pool{New: func() interface{} { return new(callFrame) }}

// takeValue converts a value Loom returned, taking over its reference.
func takeValue(v *C.LoomValue) interface{} {
	switch v.kind {
	case C.LOOM_OBJECT:
		return wrapObject(objectOf(v))
	case C.LOOM_NONE:
		return nil
	}
	out := borrowValue(v)
	C.loom_go_value_release(v)
	return out
}

// borrowValue converts a value Loom keeps (objects are retained).
func borrowValue(v *C.LoomValue) interface{} {
	switch v.kind {
	case C.LOOM_BOOL:
		return intOf(v) != 0
	case C.LOOM_INT:
		return int64(intOf(v))
	case C.LOOM_FLOAT:
		return float64(floatOf(v))
	case C.LOOM_STR:
		return C.GoString(strOf(v))
	case C.LOOM_OBJECT:
		C.loom_go_retain(objectOf(v))
		return wrapObject(objectOf(v))
	}
	return nil
}

func wrapObject(h *C.LoomObject) interface{} {
	var key *C.char
	if C.loom_go_type_key(h, &key) == C.LOOM_OK && C.GoString(key) == "runtime.NDArray" {
		t := &Tensor{Object{h: h}}
		track(&t.Object)
		return t
	}
	return newObject(h)
}

// Tensor is a Loom tensor (runtime.NDArray).
type Tensor struct{ Object }

// elementsOf is a slice's length and first element's address.
func elementsOf[T any](d []T) (int, unsafe.Pointer) {
	if len(d) == 0 {
		return 0, nil
	}
	return len(d), unsafe.Pointer(&d[0])
}

// dtypeOf is the dtype (DLPack's code and bits) of a Go slice's elements,
// its length and its data.
func dtypeOf(data interface{}) (code, bits C.uint8_t, count int, src unsafe.Pointer, err error) {
	switch d := data.(type) {
	case []float32:
		code, bits = 2, 32
		count, src = elementsOf(d)
	case []float64:
		code, bits = 2, 64
		count, src = elementsOf(d)
	case []int32:
		code, bits = 0, 32
		count, src = elementsOf(d)
	case []int64:
		code, bits = 0, 64
		count, src = elementsOf(d)
	case []uint8:
		code, bits = 1, 8
		count, src = elementsOf(d)
	default:
		err = &Error{Message: fmt.Sprintf("a %T is not a slice of float32, float64, int32, int64 or uint8", data)}
	}
	return
}

// NewTensor is a CPU tensor of the given shape (row-major) holding a copy
// of data: a []float32, []float64, []int32, []int64 or []uint8.
func NewTensor(data interface{}, shape ...int64) (*Tensor, error) {
	code, bits, count, src, err := dtypeOf(data)
	if err != nil {
		return nil, err
	}
	total := int64(1)
	for _, d := range shape {
		if d < 0 {
			return nil, &Error{Message: fmt.Sprintf("shape %v has a negative extent", shape)}
		}
		total *= d
	}
	if total != int64(count) {
		return nil, &Error{Message: fmt.Sprintf("a tensor of shape %v holds %d elements, the slice %d", shape, total, count)}
	}
	dims := make([]C.int64_t, len(shape)+1) // Go memory without pointers: cgo may pass it
	for k, d := range shape {
		dims[k] = C.int64_t(d)
	}
	var h *C.LoomObject
	if err := locked(func() C.LoomStatus {
		return C.loom_go_tensor_empty(&dims[0], C.int32_t(len(shape)), code, bits, &h)
	}); err != nil {
		return nil, err
	}
	t := &Tensor{Object{h: h}}
	track(&t.Object)
	if count > 0 {
		dl := t.dl()
		dst := unsafe.Pointer(uintptr(dl.data) + uintptr(dl.byte_offset))
		C.memcpy(dst, src, C.size_t(count*int(bits)/8))
	}
	runtime.KeepAlive(data)
	return t, nil
}

// dl is the tensor's DLTensor, or nil once it is closed.
func (t *Tensor) dl() *C.DLTensor {
	h := t.object()
	if h == nil {
		return nil
	}
	var out *C.DLTensor
	C.loom_go_dltensor(h, &out)
	return out
}

// Shape is the tensor's shape (nil once it is closed).
func (t *Tensor) Shape() []int64 {
	dl := t.dl()
	if dl == nil {
		return nil
	}
	out := make([]int64, int(dl.ndim))
	dims := (*[64]C.int64_t)(unsafe.Pointer(dl.shape))
	for k := range out {
		out[k] = int64(dims[k])
	}
	return out
}

// DType is the element type's name ("float32", "int64", ...; "" once
// the tensor is closed).
func (t *Tensor) DType() string {
	dl := t.dl()
	if dl == nil {
		return ""
	}
	names := map[int]string{0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}
	return fmt.Sprintf("%s%d", names[int(dl.dtype.code)], int(dl.dtype.bits))
}

func (t *Tensor) elements(code, bits int) (unsafe.Pointer, int, error) {
	dl := t.dl()
	if dl == nil {
		return nil, 0, errClosed("tensor")
	}
	if int(dl.dtype.code) != code || int(dl.dtype.bits) != bits || dl.dtype.lanes != 1 {
		return nil, 0, &Error{Message: fmt.Sprintf("the tensor holds %s", t.DType())}
	}
	if dl.device.device_type != C.kDLCPU {
		return nil, 0, &Error{Message: "the tensor is not on the CPU: copy it there first"}
	}
	count := 1
	for _, d := range t.Shape() {
		count *= int(d)
	}
	return unsafe.Pointer(uintptr(dl.data) + uintptr(dl.byte_offset)), count, nil
}

// copyElements copies the elements of a CPU tensor of dtype (code, bits).
func copyElements[T any](t *Tensor, code, bits int) ([]T, error) {
	p, n, err := t.elements(code, bits)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	if n > 0 {
		copy(out, unsafe.Slice((*T)(p), n))
	}
	runtime.KeepAlive(t)
	return out, nil
}

// Float32s copies a float32 tensor's elements into a new slice.
func (t *Tensor) Float32s() ([]float32, error) { return copyElements[float32](t, 2, 32) }

// Float64s copies a float64 tensor's elements into a new slice.
func (t *Tensor) Float64s() ([]float64, error) { return copyElements[float64](t, 2, 64) }

// Int32s copies an int32 tensor's elements into a new slice.
func (t *Tensor) Int32s() ([]int32, error) { return copyElements[int32](t, 0, 32) }

// Int64s copies an int64 tensor's elements into a new slice.
func (t *Tensor) Int64s() ([]int64, error) { return copyElements[int64](t, 0, 64) }

// Uint8s copies a uint8 tensor's elements into a new slice.
func (t *Tensor) Uint8s() ([]uint8, error) { return copyElements[uint8](t, 1, 8) }

// ToDLPack hands the tensor to a DLPack consumer without copying (a
// *C.DLManagedTensor as an unsafe.Pointer); it lives until the consumer
// calls the deleter.
func (t *Tensor) ToDLPack() (unsafe.Pointer, error) {
	var out *C.DLManagedTensor
	if err := locked(func() C.LoomStatus { return C.loom_go_to_dlpack(t.h, &out) }); err != nil {
		return nil, err
	}
	return unsafe.Pointer(out), nil
}

// FromDLPack takes a DLPack producer's tensor (a *DLManagedTensor)
// without copying; Loom calls its deleter, also on failure.
func FromDLPack(managed unsafe.Pointer) (*Tensor, error) {
	var h *C.LoomObject
	if err := locked(func() C.LoomStatus {
		return C.loom_go_from_dlpack((*C.DLManagedTensor)(managed), &h)
	}); err != nil {
		return nil, err
	}
	t := &Tensor{Object{h: h}}
	track(&t.Object)
	return t, nil
}

// ---- helpers for callback.go (whose preamble may not define C code) ----

func setError(message *C.char) { C.loom_go_set_error(message) }

func borrowForGo(v *C.LoomValue) interface{} {
	if v.kind == C.LOOM_NONE {
		return nil
	}
	return borrowValue(v)
}

func functionFromGo(id uintptr) (*Function, error) {
	var h *C.LoomObject
	if err := locked(func() C.LoomStatus { return C.loom_go_function_from_go(C.uintptr_t(id), &h) }); err != nil {
		return nil, err
	}
	return newFunction(h), nil
}

// handle is what every handle type has (through the embedded Object).
type handle interface{ object() *C.LoomObject }

// object is the reference, or nil once the handle is closed.
func (o *Object) object() *C.LoomObject {
	if atomic.LoadUint32(&o.closed) != 0 {
		return nil
	}
	return o.h
}

func errClosed(what string) error { return &Error{Message: "the " + what + " was closed"} }

// LoomValue's union, field by field, in Go: cgo sees a union as bytes,
// and a cgo call per field would cost more than a no-op Loom call itself
// (bench/languages.py).
func unionOf(v *C.LoomValue) unsafe.Pointer { return unsafe.Pointer(&v.v) }

func setInt(v *C.LoomValue, kind C.int32_t, x int64) {
	v.kind = kind
	*(*int64)(unionOf(v)) = x
}

func setFloat(v *C.LoomValue, x float64) {
	v.kind = C.LOOM_FLOAT
	*(*float64)(unionOf(v)) = x
}

func setStr(v *C.LoomValue, s *C.char) {
	v.kind = C.LOOM_STR
	*(**C.char)(unionOf(v)) = s
}

func setObject(v *C.LoomValue, h *C.LoomObject) {
	v.kind = C.LOOM_OBJECT
	*(**C.LoomObject)(unionOf(v)) = h
}

func intOf(v *C.LoomValue) int64            { return *(*int64)(unionOf(v)) }
func floatOf(v *C.LoomValue) float64        { return *(*float64)(unionOf(v)) }
func strOf(v *C.LoomValue) *C.char          { return *(**C.char)(unionOf(v)) }
func objectOf(v *C.LoomValue) *C.LoomObject { return *(**C.LoomObject)(unionOf(v)) }

// setValue stores x in v: a scalar, a string (a C copy, returned for the
// caller to free), or a handle (retained first when the reference passes
// to Loom).  false for a type Loom does not take.
func setValue(v *C.LoomValue, x interface{}, retain bool) (*C.char, bool) {
	switch x := x.(type) {
	case nil:
		setInt(v, C.LOOM_NONE, 0)
	case bool:
		b := 0
		if x {
			b = 1
		}
		setInt(v, C.LOOM_BOOL, int64(b))
	case int:
		setInt(v, C.LOOM_INT, int64(x))
	case int64:
		setInt(v, C.LOOM_INT, int64(x))
	case int32:
		setInt(v, C.LOOM_INT, int64(x))
	case float64:
		setFloat(v, float64(x))
	case float32:
		setFloat(v, float64(x))
	case string:
		s := C.CString(x)
		setStr(v, s)
		return s, true
	case handle:
		h := x.object()
		if h == nil {
			return nil, false
		}
		if retain {
			C.loom_go_retain(h)
		}
		setObject(v, h)
	default:
		return nil, false
	}
	return nil, true
}

// setResult stores a Go function's result; "" or what is wrong with it.
// A string stays allocated for the trampoline to free (api.h).
func setResult(v *C.LoomValue, out interface{}) string {
	if _, ok := setValue(v, out, true); !ok {
		return fmt.Sprintf("a Go function returned a %T, which Loom does not take", out)
	}
	return ""
}
