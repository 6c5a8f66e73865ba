package loom

// Functions written in Go, callable through Loom (from any language):
// NewFunction.  A file with //export may hold only declarations in its
// preamble (cgo's rule), so the trampoline is in api.h.

/*
#include <stdint.h>
#include <stdlib.h>
#include <loom/c_api.h>
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// GoFunction is a function Loom can call: it gets the arguments as Call
// returns values (nil, int64, float64, bool, string, *Tensor, *Object)
// and returns one of those or an error.
type GoFunction func(args []interface{}) (interface{}, error)

var (
	callbacksMu sync.Mutex
	callbacks   = map[uintptr]GoFunction{}
	nextID      uintptr
)

func register(f GoFunction) uintptr {
	callbacksMu.Lock()
	defer callbacksMu.Unlock()
	nextID++
	callbacks[nextID] = f
	return nextID
}

func lookup(id uintptr) GoFunction {
	callbacksMu.Lock()
	defer callbacksMu.Unlock()
	return callbacks[id]
}

//export loomGoCallback
func loomGoCallback(resource unsafe.Pointer, args *C.LoomValue, n C.int32_t, result *C.LoomValue) (status C.LoomStatus) {
	f := lookup(uintptr(resource))
	fail := func(message string) C.LoomStatus {
		cs := C.CString(message)
		defer C.free(unsafe.Pointer(cs))
		setError(cs)
		return 1
	}
	defer func() {
		if p := recover(); p != nil {
			status = fail(fmt.Sprintf("a Go function panicked: %v", p))
		}
	}()
	if f == nil {
		return fail("a Go function that was released was called")
	}
	values := make([]interface{}, int(n))
	if n > 0 {
		raw := (*[1 << 20]C.LoomValue)(unsafe.Pointer(args))[:n:n]
		for k := range values {
			values[k] = borrowForGo(&raw[k])
		}
	}
	out, err := f(values)
	if err != nil {
		return fail(err.Error())
	}
	if msg := setResult(result, out); msg != "" {
		return fail(msg)
	}
	return 0
}

func forget(id uintptr) {
	callbacksMu.Lock()
	defer callbacksMu.Unlock()
	delete(callbacks, id)
}

//export loomGoRelease
func loomGoRelease(resource unsafe.Pointer) { forget(uintptr(resource)) }

// NewFunction makes f a Loom function, callable through Loom from any
// language and any thread (register it with RegisterGlobal to call it by
// name).  A panic in f becomes an error of its caller.
func NewFunction(f GoFunction) (*Function, error) {
	id := register(f)
	h, err := functionFromGo(id)
	if err != nil {
		forget(id)
		return nil, err
	}
	return h, nil
}
