package chainerc

import (
	"os"
	"strings"
	"testing"
)

// Without a GPU (this CI machine) every CUDA request is ErrDevice with the
// reason; on a machine with one, arrays make the round trip.
func TestDevicesAndCopies(t *testing.T) {
	noLeak(t, func() {
		// CPU copies through the device API: values kept, memory separate.
		a := must(NewArray([]float64{1, 2, 3, 4}, 2, 2))
		defer a.Close()
		b := must(a.ToDevice(CPU))
		defer b.Close()
		ok(t, b.Fill(0))
		if v := must(Values[float64](a)); v[0] != 1 {
			t.Fatalf("ToDevice shares memory: %v", v)
		}
		ok(t, b.CopyFrom(a))
		if v := must(Values[float64](b)); !close64(v, []float64{1, 2, 3, 4}, 0) {
			t.Fatalf("CopyFrom: %v", v)
		}
		// Random fills stay in their range.
		u := must(Empty(Float32, 1000))
		defer u.Close()
		ok(t, u.FillUniform(-2, 3))
		for _, x := range must(Values[float32](u)) {
			if x < -2 || x >= 3 {
				t.Fatalf("FillUniform gave %v", x)
			}
		}
		ok(t, u.FillNormal(0, 1))
		if u.IsPinned() {
			t.Fatal("an ordinary array reads as pinned")
		}
		if DeviceCount() == 0 {
			if os.Getenv("CH_REQUIRE_GPU") == "1" {
				t.Fatalf("CH_REQUIRE_GPU=1 but no CUDA device: %s", UnavailableReason())
			}
			if UnavailableReason() == "" {
				t.Fatal("no device and no reason")
			}
			_, err := a.ToDevice(CUDA(0))
			if statusOf(err) != ErrDevice || !strings.Contains(err.Error(), "cuda:0") {
				t.Fatalf("ToDevice(cuda:0) without a GPU: %v", err)
			}
			if _, err := NewStream(CUDA(0)); statusOf(err) != ErrDevice {
				t.Fatalf("NewStream without a GPU: %v", err)
			}
			if err := PushDevice(0); statusOf(err) != ErrDevice {
				t.Fatalf("PushDevice without a GPU: %v", err)
			}
			if _, err := MemoryLimit(CUDA(0)); err == nil {
				t.Fatal("MemoryLimit of a missing device succeeded")
			}
			return
		}
		// A GPU is there: host -> device -> host, and an asynchronous copy.
		g := must(a.ToDevice(CUDA(0)))
		defer g.Close()
		back := must(g.ToDevice(CPU))
		defer back.Close()
		if v := must(Values[float64](back)); !close64(v, []float64{1, 2, 3, 4}, 0) {
			t.Fatalf("round trip: %v", v)
		}
		s := must(NewStream(CUDA(0)))
		defer s.Close()
		p := must(NewPinnedArray(Float64, 2, 2))
		defer p.Close()
		ok(t, p.CopyFrom(a))
		h := must(p.ToDeviceAsync(CUDA(0), s))
		defer h.Close()
		ok(t, s.Synchronize())
		if s.Device() != CUDA(0) || s.Native() == nil {
			t.Fatalf("stream device %v native %v", s.Device(), s.Native())
		}
	})
}

// The seed's MulAdd as a user kernel with a type placeholder, and a
// sum-of-squares reduction; references computed here.
func TestUserKernels(t *testing.T) {
	if !KernelCPUSupported() {
		t.Skip("user kernels do not run on the CPU in this build (libtcc missing)")
	}
	noLeak(t, func() {
		k := must(NewElementwiseKernel("T x, T y, T z", "T w", "w = x * y + z", "muladd"))
		defer k.Close()
		if k.Inputs() != 3 || k.Outputs() != 1 {
			t.Fatalf("counts %d %d", k.Inputs(), k.Outputs())
		}
		xs, ys, zs := values(6, 1, -1, 1), values(6, 2, -1, 1), values(6, 3, -1, 1)
		x, y, z := must(NewArray(xs, 2, 3)), must(NewArray(ys, 2, 3)), must(NewArray(zs, 2, 3))
		defer x.Close()
		defer y.Close()
		defer z.Close()
		out := must(k.Call([]*Array{x, y, z}, nil))
		defer out[0].Close()
		want := make([]float64, 6)
		for i := range want {
			want[i] = xs[i]*ys[i] + zs[i]
		}
		if got := must(Values[float64](out[0])); !close64(got, want, 1e-15) {
			t.Fatalf("muladd %v, want %v", got, want)
		}
		// Written into a given output.
		w := must(Empty(Float64, 2, 3))
		defer w.Close()
		res := must(k.Call([]*Array{x, y, z}, []*Array{w}))
		if res[0] != w || !close64(must(Values[float64](w)), want, 1e-15) {
			t.Fatal("given output not written")
		}

		ss := must(NewReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sum_sq", ""))
		defer ss.Close()
		rows := must(ss.Call([]*Array{x}, nil, []int32{1}, false))
		defer rows[0].Close()
		r0, r1 := 0.0, 0.0
		for i := 0; i < 3; i++ {
			r0 += xs[i] * xs[i]
			r1 += xs[3+i] * xs[3+i]
		}
		if got := must(Values[float64](rows[0])); !close64(got, []float64{r0, r1}, 1e-14) {
			t.Fatalf("sum of squares %v, want %v %v", got, r0, r1)
		}

		// A syntax error carries the compiler's log; the library keeps working.
		bad := must(NewElementwiseKernel("T x", "T y", "y = x +* 1", "broken"))
		defer bad.Close()
		if _, err := bad.Call([]*Array{x}, nil); statusOf(err) != ErrInvalidArgument {
			t.Fatalf("syntax error: %v", err)
		}
		again := must(k.Call([]*Array{x, y, z}, nil))
		again[0].Close()
	})
}
