// Runs an exported library's main on float32 .npy inputs and writes the
// output's elements (float32, C order, no header) to a file: the Go side
// of tests/bindings/agreement.sh, which compares six languages' runs bit
// by bit.
//
//	go run ./cmd/run_npy LIB.so OUT.f32 INPUT.npy...
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"loom"
)

// readNpy reads a C-ordered little-endian float32 .npy file.
func readNpy(path string) ([]float32, []int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return nil, nil, fmt.Errorf("%s: not a .npy file", path)
	}
	n, start := int(binary.LittleEndian.Uint16(b[8:10])), 10
	if b[6] != 1 {
		n, start = int(binary.LittleEndian.Uint32(b[8:12])), 12
	}
	if start+n > len(b) {
		return nil, nil, fmt.Errorf("%s: truncated", path)
	}
	header := string(b[start : start+n])
	if !strings.Contains(header, "'descr': '<f4'") || !strings.Contains(header, "'fortran_order': False") {
		return nil, nil, fmt.Errorf("%s: not a C-ordered little-endian float32 array", path)
	}
	dims := strings.SplitN(strings.SplitN(header, "'shape': (", 2)[1], ")", 2)[0]
	var shape []int64
	for _, d := range strings.Split(dims, ",") {
		if d = strings.TrimSpace(d); d != "" {
			v, err := strconv.ParseInt(d, 10, 64)
			if err != nil {
				return nil, nil, err
			}
			shape = append(shape, v)
		}
	}
	data := make([]float32, (len(b)-start-n)/4)
	for k := range data {
		data[k] = math.Float32frombits(binary.LittleEndian.Uint32(b[start+n+4*k:]))
	}
	return data, shape, nil
}

func run(lib, out string, inputs []string) error {
	m, err := loom.Load(lib)
	if err != nil {
		return err
	}
	defer m.Close()
	f, err := m.Function("main")
	if err != nil {
		return err
	}
	var args []interface{}
	for _, p := range inputs {
		d, s, err := readNpy(p)
		if err != nil {
			return err
		}
		t, err := loom.NewTensor(d, s...)
		if err != nil {
			return err
		}
		defer t.Close()
		args = append(args, t)
	}
	y, err := f.Call(args...)
	if err != nil {
		return err
	}
	values, err := y.(*loom.Tensor).Float32s()
	if err != nil {
		return err
	}
	b := make([]byte, 4*len(values))
	for k, v := range values {
		binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(v))
	}
	return os.WriteFile(out, b, 0o644)
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: run_npy LIB.so OUT.f32 INPUT.npy...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3:]); err != nil {
		fmt.Fprintln(os.Stderr, "loom:", err)
		os.Exit(1)
	}
}
