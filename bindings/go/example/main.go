// Runs the MLP example built for the CPU and prints its output:
//
//	build/bin/loomc build examples/mlp.loom --config configs/host.yaml -o /tmp/mlp.so
//	cd bindings/go && go run ./example /tmp/mlp.so
//
// The inputs are seeded pseudo-random numbers (the same in every run).
package main

import (
	"fmt"
	"os"

	"loom"
)

func main() {
	path := "mlp.so"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := run(path); err != nil {
		fmt.Fprintln(os.Stderr, "loom:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	lib, err := loom.Load(path)
	if err != nil {
		return err
	}
	defer lib.Close()
	main, err := lib.Function("main")
	if err != nil {
		return err
	}
	defer main.Close()
	shapes := [][]int64{{64, 784}, {512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}}
	state := uint64(1)
	var args []interface{}
	for _, s := range shapes {
		n := int64(1)
		for _, d := range s {
			n *= d
		}
		data := make([]float32, n)
		for k := range data {
			state = state*6364136223846793005 + 1442695040888963407
			data[k] = (float32(state>>40)/float32(1<<24) - 0.5) * 0.1
		}
		t, err := loom.NewTensor(data, s...)
		if err != nil {
			return err
		}
		defer t.Close()
		args = append(args, t)
	}
	out, err := main.Call(args...)
	if err != nil {
		return err
	}
	y := out.(*loom.Tensor)
	defer y.Close()
	values, err := y.Float32s()
	if err != nil {
		return err
	}
	fmt.Printf("output: %s %v\nrow 0: %v\n", y.DType(), y.Shape(), values[:10])
	return nil
}
