// The Go side of bench/languages.py: the time per call of @noop and
// @add1k of bench/languages/calls.loom (exported), the median of 7
// batches after a warm-up, as call_bench.c does in C; the arguments are
// tensors made once from Go slices.  Prints "noop US" and "add1k US".
//
//	go run ./bench LIB.so [CALLS]
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"loom"
)

func medianUS(calls int, f func() error) (float64, error) {
	for k := 0; k < calls/10+1; k++ {
		if err := f(); err != nil {
			return 0, err
		}
	}
	var batches []float64
	for b := 0; b < 7; b++ {
		start := time.Now()
		for k := 0; k < calls; k++ {
			if err := f(); err != nil {
				return 0, err
			}
		}
		batches = append(batches, time.Since(start).Seconds()/float64(calls)*1e6)
	}
	sort.Float64s(batches)
	return batches[3], nil
}

func main() {
	calls := 20000
	if len(os.Args) > 2 {
		calls, _ = strconv.Atoi(os.Args[2])
	}
	if err := run(os.Args[1], calls); err != nil {
		fmt.Fprintln(os.Stderr, "loom:", err)
		os.Exit(1)
	}
}

func run(path string, calls int) error {
	lib, err := loom.Load(path)
	if err != nil {
		return err
	}
	noop, err := lib.Function("noop")
	if err != nil {
		return err
	}
	add, err := lib.Function("add1k")
	if err != nil {
		return err
	}
	x := make([]float32, 1024)
	y := make([]float32, 1024)
	for k := range x {
		x[k], y[k] = float32(k), 1
	}
	x1, _ := loom.NewTensor(x[:1], 1)
	tx, _ := loom.NewTensor(x, 1024)
	ty, _ := loom.NewTensor(y, 1024)
	call := func(f *loom.Function, args ...interface{}) func() error {
		return func() error {
			out, err := f.Call(args...)
			if t, ok := out.(*loom.Tensor); ok {
				t.Close()
			}
			return err
		}
	}
	a, err := medianUS(calls, call(noop, x1))
	if err != nil {
		return err
	}
	b, err := medianUS(calls, call(add, tx, ty))
	if err != nil {
		return err
	}
	fmt.Printf("noop %.3f\nadd1k %.3f\n", a, b)
	return nil
}
