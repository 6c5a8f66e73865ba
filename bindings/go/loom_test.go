package loom_test

// The Go binding against Loom itself: the MLP example exported for the
// CPU (loomc build), run from Go and compared with a float64 reference
// computed here; tensors from slices; errors; scalars, strings and
// tensors through a function written in Go; a panic; eight goroutines;
// DLPack; reference counts.  LOOMC names loomc (default: the build
// tree's).

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"loom"
)

var shapes = [][]int64{{64, 784}, {512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}}

var mlpOnce sync.Once
var mlpPath string

func mlpLibrary(t *testing.T) string {
	mlpOnce.Do(func() {
		root, _ := filepath.Abs("../..")
		loomc := os.Getenv("LOOMC")
		if loomc == "" {
			loomc = filepath.Join(root, "build", "bin", "loomc")
		}
		dir, err := os.MkdirTemp("", "loom-go-")
		if err != nil {
			t.Fatal(err)
		}
		mlpPath = filepath.Join(dir, "mlp.so")
		cmd := exec.Command(loomc, "build", filepath.Join(root, "examples", "mlp.loom"), "--config",
			filepath.Join(root, "configs", "host.yaml"), "-o", mlpPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("loomc build: %v\n%s", err, out)
		}
	})
	return mlpPath
}

func inputs(seed uint64) [][]float32 {
	state := seed
	var out [][]float32
	for _, s := range shapes {
		n := int64(1)
		for _, d := range s {
			n *= d
		}
		data := make([]float32, n)
		for k := range data {
			state = state*6364136223846793005 + 1442695040888963407
			data[k] = (float32(state>>40)/float32(1<<24) - 0.5) * 0.2
		}
		out = append(out, data)
	}
	return out
}

func tensors(t *testing.T, d [][]float32) []interface{} {
	var args []interface{}
	for k, data := range d {
		x, err := loom.NewTensor(data, shapes[k]...)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, x)
	}
	return args
}

func reference(d [][]float32) []float64 {
	dense := func(x []float64, rows int, w, b []float32, out int) []float64 {
		inner := len(x) / rows
		y := make([]float64, rows*out)
		for r := 0; r < rows; r++ {
			for o := 0; o < out; o++ {
				s := float64(b[o])
				for k := 0; k < inner; k++ {
					s += x[r*inner+k] * float64(w[o*inner+k])
				}
				y[r*out+o] = s
			}
		}
		return y
	}
	relu := func(v []float64) []float64 {
		for k := range v {
			v[k] = math.Max(v[k], 0)
		}
		return v
	}
	x := make([]float64, len(d[0]))
	for k, v := range d[0] {
		x[k] = float64(v)
	}
	h1 := relu(dense(x, 64, d[1], d[2], 512))
	h2 := relu(dense(h1, 64, d[3], d[4], 512))
	z := dense(h2, 64, d[5], d[6], 10)
	y := make([]float64, len(z))
	for r := 0; r < 64; r++ {
		row := z[r*10 : r*10+10]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for o := 0; o < 10; o++ {
			y[r*10+o] = math.Exp(row[o]-m) / s
		}
	}
	return y
}

func call(t *testing.T, f *loom.Function, args []interface{}) []float32 {
	out, err := f.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	y := out.(*loom.Tensor)
	defer y.Close()
	v, err := y.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTheMLPMatchesAFloat64Reference(t *testing.T) {
	lib, err := loom.Load(mlpLibrary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	names, err := lib.FunctionNames()
	if err != nil || len(names) == 0 {
		t.Fatalf("%v %v", names, err)
	}
	main, err := lib.Function("main")
	if err != nil {
		t.Fatal(err)
	}
	d := inputs(11)
	out, err := main.Call(tensors(t, d)...)
	if err != nil {
		t.Fatal(err)
	}
	y := out.(*loom.Tensor)
	if got := y.Shape(); len(got) != 2 || got[0] != 64 || got[1] != 10 {
		t.Fatalf("shape %v", got)
	}
	if y.DType() != "float32" {
		t.Fatalf("dtype %s", y.DType())
	}
	v, _ := y.Float32s()
	want := reference(d)
	worst := 0.0
	for k := range v {
		worst = math.Max(worst, math.Abs(float64(v[k])-want[k]))
	}
	if worst > 1e-5 {
		t.Fatalf("%g from the reference", worst)
	}
}

func TestErrorsCarryLoomsMessage(t *testing.T) {
	_, err := loom.Load("/nonexistent/model.so")
	var le *loom.Error
	if !errors.As(err, &le) || !strings.Contains(le.Message, "/nonexistent/model.so") {
		t.Fatalf("%v", err)
	}
	lib, _ := loom.Load(mlpLibrary(t))
	defer lib.Close()
	if _, err := lib.Function("mian"); err == nil || !strings.Contains(err.Error(), "main") {
		t.Fatalf("%v", err)
	}
	main, _ := lib.Function("main")
	if _, err := main.Call(int64(1)); err == nil || !strings.Contains(err.Error(), "7 arguments") {
		t.Fatalf("%v", err)
	}
	d := inputs(13)
	args := tensors(t, d)
	wrong, _ := loom.NewTensor(d[0][:32*784], 32, 784)
	args[0] = wrong
	if _, err := main.Call(args...); err == nil || !strings.Contains(err.Error(), "32") {
		t.Fatalf("%v", err)
	}
	if _, err := main.Call([]float32{1}); err == nil || !strings.Contains(err.Error(), "NewTensor") {
		t.Fatalf("%v", err)
	}
	x, _ := loom.NewTensor([]float32{1, 2}, 2)
	if _, err := x.Int32s(); err == nil || !strings.Contains(err.Error(), "float32") {
		t.Fatalf("%v", err)
	}
	if _, err := loom.NewTensor([]float32{1, 2}, 3); err == nil {
		t.Fatal("a shape that does not fit the slice was accepted")
	}
	if _, err := loom.GlobalFunction("no.such.function"); err == nil {
		t.Fatal("no error for a missing global function")
	}
	closed, _ := loom.NewTensor([]float32{1}, 1)
	closed.Close()
	if _, err := closed.Float32s(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("%v", err)
	}
	if _, err := main.Call(closed); err == nil || !strings.Contains(err.Error(), "was closed") {
		t.Fatalf("%v", err)
	}
}

func TestScalarsAndFunctionsWrittenInGo(t *testing.T) {
	f, err := loom.NewFunction(func(args []interface{}) (interface{}, error) {
		if len(args) != 2 {
			return nil, errors.New("go_test.axpb takes 2 numbers")
		}
		a, ok1 := args[0].(float64)
		b, ok2 := args[1].(int64)
		if !ok1 || !ok2 {
			return nil, errors.New("go_test.axpb takes a float and an int")
		}
		return a*2 + float64(b), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RegisterGlobal("go_test.axpb", true); err != nil {
		t.Fatal(err)
	}
	g, err := loom.GlobalFunction("go_test.axpb")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := g.Call(1.5, int64(3)); err != nil || out.(float64) != 6 {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := g.Call(1); err == nil || !strings.Contains(err.Error(), "takes 2 numbers") {
		t.Fatalf("%v", err)
	}
	echo, _ := loom.NewFunction(func(args []interface{}) (interface{}, error) {
		switch x := args[0].(type) {
		case string:
			return x + "!", nil
		case *loom.Tensor:
			return x, nil
		}
		return nil, nil
	})
	if out, err := echo.Call("loom"); err != nil || out.(string) != "loom!" {
		t.Fatalf("%v %v", out, err)
	}
	x, _ := loom.NewTensor([]int32{1, 2, 3}, 3)
	out, err := echo.Call(x)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := out.(*loom.Tensor).Int32s(); len(v) != 3 || v[2] != 3 {
		t.Fatalf("%v", v)
	}
	boom, _ := loom.NewFunction(func([]interface{}) (interface{}, error) { panic("deliberately") })
	if _, err := boom.Call(); err == nil || !strings.Contains(err.Error(), "panicked: deliberately") {
		t.Fatalf("%v", err)
	}
}

func TestEightGoroutinesCallingOneFunctionAgreeWithOne(t *testing.T) {
	lib, _ := loom.Load(mlpLibrary(t))
	defer lib.Close()
	main, _ := lib.Function("main")
	args := tensors(t, inputs(14))
	want := call(t, main, args)
	var wg sync.WaitGroup
	failures := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				out, err := main.Call(args...)
				if err != nil {
					failures <- err.Error()
					return
				}
				got, _ := out.(*loom.Tensor).Float32s()
				for i := range got {
					if got[i] != want[i] {
						failures <- "a result differs from one goroutine's"
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Fatal(f)
	}
}

func TestDLPackAndReferenceCounts(t *testing.T) {
	x, _ := loom.NewTensor([]float64{1, 2, 3, 4}, 2, 2)
	if n := x.UseCount(); n != 1 {
		t.Fatalf("use count %d", n)
	}
	managed, err := x.ToDLPack()
	if err != nil {
		t.Fatal(err)
	}
	if n := x.UseCount(); n != 2 {
		t.Fatalf("use count with a DLPack consumer %d", n)
	}
	back, err := loom.FromDLPack(managed)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := back.Float64s()
	if len(v) != 4 || v[3] != 4 || back.Shape()[0] != 2 {
		t.Fatalf("%v %v", v, back.Shape())
	}
	back.Close()
	back.Close() // a second Close does nothing
	if n := x.UseCount(); n != 1 {
		t.Fatalf("use count after the consumer's release %d", n)
	}
	runtime.GC()
}

func TestHandlesCollectedUnclosedAreGivenBack(t *testing.T) {
	x, _ := loom.NewTensor([]float32{1, 2}, 2)
	defer x.Close()
	same, err := loom.NewFunction(func(args []interface{}) (interface{}, error) { return args[0], nil })
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	for k := 0; k < 200; k++ {
		out, err := same.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		// Each result is one more reference to x; half are closed, and
		// their guards go to the next results, which are left to the
		// collector like the rest.
		if k%2 == 0 {
			out.(*loom.Tensor).Close()
		}
	}
	if n := x.UseCount(); n < 2 {
		t.Fatalf("use count %d with 100 results unclosed", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for x.UseCount() != 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := x.UseCount(); n != 1 {
		t.Fatalf("use count %d after collecting the unclosed results", n)
	}
}
