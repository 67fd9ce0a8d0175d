package chainerc

import (
	"errors"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	if Version() != 100 || VersionString() != "0.1.0" {
		t.Fatalf("version %d %q", Version(), VersionString())
	}
}

func TestArrays(t *testing.T) {
	noLeak(t, func() {
		a := must(NewArray([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
		defer a.Close()
		if a.Dtype() != Float32 || a.Ndim() != 2 || a.Size() != 6 || a.Nbytes() != 24 || a.Device() != CPU {
			t.Fatalf("bad metadata %v", a)
		}
		if s := a.Shape(); s[0] != 2 || s[1] != 3 {
			t.Fatalf("shape %v", s)
		}
		v := must(View[float32](a))
		if v[5] != 6 {
			t.Fatalf("view %v", v)
		}
		if x := must(a.At(4)); x != 5 {
			t.Fatalf("At %v", x)
		}
		r := must(a.Reshape(3, 2))
		defer r.Close()
		c := must(a.Copy())
		defer c.Close()
		ok(t, a.Fill(7))
		rv := must(Values[float32](r))
		cv := must(Values[float32](c))
		if rv[0] != 7 || cv[0] != 1 {
			t.Fatalf("reshape shares, copy does not: %v %v", rv, cv)
		}
		ok(t, Write(c, []float32{9, 9, 9, 9, 9, 9}))
		if x := must(c.At(2)); x != 9 {
			t.Fatalf("write %v", x)
		}
		s := must(NewScalar(int32(3)))
		defer s.Close()
		if s.Ndim() != 0 || s.Size() != 1 {
			t.Fatalf("scalar %v", s)
		}
		z := must(Zeros(Float64, 4))
		defer z.Close()
		zv := must(Values[float64](z))
		if len(zv) != 4 || zv[3] != 0 {
			t.Fatalf("zeros %v", zv)
		}
		e := must(Empty(Float64, 2))
		defer e.Close()
		ok(t, e.Fill(1.5))
		if x := must(e.At(1)); x != 1.5 {
			t.Fatalf("empty+fill %v", x)
		}
		el := must(EmptyLike(a))
		defer el.Close()
		fl := must(FullLike(a, 2.5))
		defer fl.Close()
		if el.Dtype() != Float32 || el.Size() != 6 || must(fl.At(5)) != 2.5 || fl.Shape()[1] != 3 {
			t.Fatalf("like: %v %v", el, fl)
		}
		r2 := a.Retain()
		r2.Close()
		r2.Close() // idempotent
	})
}

func TestArrayErrors(t *testing.T) {
	noLeak(t, func() {
		_, err := NewArray([]float32{1, 2}, 3)
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "2 elements") {
			t.Fatalf("got %v", err)
		}
		a := must(NewArray([]float32{1, 2}))
		defer a.Close()
		if _, err := View[float64](a); !errors.Is(err, ErrDtype) {
			t.Fatalf("got %v", err)
		}
		_, err = a.Reshape(3)
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "3") {
			t.Fatalf("got %v", err)
		}
		_, err = a.At(5)
		if !errors.Is(err, ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "CH_ERR_INVALID_ARGUMENT: ") {
			t.Fatalf("got %v", err)
		}
		if _, err := Full(Float32, 0, -1); !errors.Is(err, ErrShape) {
			t.Fatalf("got %v", err)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Message == "" {
			t.Fatalf("errors.As: %v", err)
		}
	})
}

func TestVariablesAndBackward(t *testing.T) {
	noLeak(t, func() {
		x := must(VariableOf([]float64{1, 2, 3}))
		defer x.Close()
		y := must(VariableOf([]float64{4, 5, 6}))
		defer y.Close()
		// z = sum(x*y + exp(log(x)) / y)
		xy := must(Mul(x, y))
		defer xy.Close()
		lx := must(Log(x))
		defer lx.Close()
		ex := must(Exp(lx))
		defer ex.Close()
		d := must(Div(ex, y))
		defer d.Close()
		s := must(Add(xy, d))
		defer s.Close()
		z := must(Sum(s))
		defer z.Close()
		ok(t, z.Backward())
		gx := must(x.GradFloat64s())
		gy := must(y.GradFloat64s())
		xs, ys := []float64{1, 2, 3}, []float64{4, 5, 6}
		wx, wy := make([]float64, 3), make([]float64, 3)
		for i := range xs {
			wx[i] = ys[i] + 1/ys[i]
			wy[i] = xs[i] - xs[i]/(ys[i]*ys[i])
		}
		if !close64(gx, wx, 1e-12) || !close64(gy, wy, 1e-12) {
			t.Fatalf("grads %v %v, want %v %v", gx, gy, wx, wy)
		}
		c := must(z.Creator())
		defer c.Close()
		if c.Name() == "" || c.InputCount() != 1 {
			t.Fatalf("creator %q %d", c.Name(), c.InputCount())
		}
		root := must(x.Creator())
		if root != nil {
			t.Fatal("a root has no creator")
		}
	})
}

func TestBackwardInitialErrorRetainGrad(t *testing.T) {
	noLeak(t, func() {
		x := must(VariableOf([]float32{1, 2}))
		defer x.Close()
		h := must(MulScalar(x, 3))
		defer h.Close()
		y := must(Exp(h))
		defer y.Close()
		if err := y.Backward(); !errors.Is(err, ErrGraph) {
			t.Fatalf("backward without initial error: %v", err)
		}
		g := must(NewArray([]float32{1, 0.5}))
		defer g.Close()
		ok(t, y.SetGrad(g))
		ok(t, y.BackwardRetainGrad())
		hg := must(h.Grad())
		if hg == nil {
			t.Fatal("retain_grad keeps intermediate grads")
		}
		hg.Close()
		ok(t, y.SetGrad(nil))
		if g2 := must(y.Grad()); g2 != nil {
			t.Fatal("grad cleared")
		}
	})
}

func TestVolatile(t *testing.T) {
	noLeak(t, func() {
		a := must(NewArray([]float32{1}))
		defer a.Close()
		x := must(NewVolatile(a))
		defer x.Close()
		y := must(AddScalar(x, 1))
		defer y.Close()
		if !y.IsVolatile() {
			t.Fatal("volatile propagates")
		}
		if c := must(y.Creator()); c != nil {
			t.Fatal("no history")
		}
		n := must(NewVariable(a))
		defer n.Close()
		if _, err := Add(x, n); !errors.Is(err, ErrGraph) {
			t.Fatalf("mixing volatile: %v", err)
		}
	})
}

func TestUnchainBackward(t *testing.T) {
	noLeak(t, func() {
		x := must(VariableOf([]float64{2}))
		defer x.Close()
		h := must(MulScalar(x, 3))
		defer h.Close()
		y := must(Mul(h, h))
		defer y.Close()
		ok(t, h.UnchainBackward())
		ok(t, y.Backward())
		if g := must(x.Grad()); g != nil {
			t.Fatal("unchained: no grad reaches x")
		}
		hg := must(h.GradFloat64s())
		if hg[0] != 12 {
			t.Fatalf("h grad %v", hg)
		}
	})
}

func TestBinaryErrors(t *testing.T) {
	noLeak(t, func() {
		a := must(VariableOf([]float32{1, 2}))
		defer a.Close()
		b := must(VariableOf([]float32{1, 2, 3}))
		defer b.Close()
		_, err := Mul(a, b)
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "3") {
			t.Fatalf("got %v", err)
		}
		c := must(VariableOf([]float64{1, 2}))
		defer c.Close()
		if _, err := Add(a, c); !errors.Is(err, ErrDtype) {
			t.Fatalf("got %v", err)
		}
	})
}

// Every built-in math function passes check_backward through a Go graph.
func TestBuiltinsCheckBackward(t *testing.T) {
	noLeak(t, func() {
		x := must(NewArray(values(6, 1, 0.5, 2), 2, 3))
		defer x.Close()
		y := must(NewArray(values(6, 2, 0.5, 2), 2, 3))
		defer y.Close()
		b := must(NewArray(values(3, 3, 0.5, 2), 3))
		defer b.Close()
		tol := Tolerance{Eps: 1e-4, Atol: 1e-6, Rtol: 1e-5}
		u := func(f func(*Variable) (*Variable, error)) GraphFunc {
			return func(in []*Variable) ([]*Variable, error) {
				o, err := f(in[0])
				return []*Variable{o}, err
			}
		}
		sc := func(f func(*Variable, float64) (*Variable, error), s float64) GraphFunc {
			return u(func(v *Variable) (*Variable, error) { return f(v, s) })
		}
		unary := map[string]GraphFunc{
			"neg": u(Neg), "exp": u(Exp), "log": u(Log), "sum": u(Sum), "identity": u(Identity),
			"sum_axis": u(func(v *Variable) (*Variable, error) { return SumAxis(v, -1, true) }),
			"reshape":  u(func(v *Variable) (*Variable, error) { return Reshape(v, 3, -1) }),
			"add_s":    sc(AddScalar, 1.5), "sub_s": sc(SubScalar, 1.5), "rsub_s": sc(RSubScalar, 1.5),
			"mul_s": sc(MulScalar, 1.5), "div_s": sc(DivScalar, 1.5), "rdiv_s": sc(RDivScalar, 1.5),
			"pow_s": sc(PowScalar, 2.5), "rpow_s": sc(RPowScalar, 1.7),
		}
		for name, g := range unary {
			if err := CheckBackwardGraph(g, []*Array{x}, []*Array{nil}, tol); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		bin := func(f func(a, b *Variable) (*Variable, error)) GraphFunc {
			return func(in []*Variable) ([]*Variable, error) {
				o, err := f(in[0], in[1])
				return []*Variable{o}, err
			}
		}
		for name, g := range map[string]GraphFunc{"add": bin(Add), "sub": bin(Sub), "mul": bin(Mul), "div": bin(Div)} {
			if err := CheckBackwardGraph(g, []*Array{x, y}, []*Array{nil}, tol); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if err := CheckBackwardGraph(g, []*Array{x, b}, []*Array{nil}, tol); err != nil {
				t.Errorf("%s broadcast: %v", name, err)
			}
		}
		bc := u(func(v *Variable) (*Variable, error) { return BroadcastTo(v, 2, 3) })
		if err := CheckBackwardGraph(bc, []*Array{b}, []*Array{nil}, tol); err != nil {
			t.Errorf("broadcast_to: %v", err)
		}
	})
}

func TestNumericalGradAndAllClose(t *testing.T) {
	noLeak(t, func() {
		x := must(NewArray([]float64{1, 2}))
		defer x.Close()
		gy := must(Ones(Float64, 2))
		defer gy.Close()
		g := must(NumericalGrad(func() ([]*Array, error) {
			v, err := View[float64](x)
			if err != nil {
				return nil, err
			}
			sq, err := NewArray([]float64{v[0] * v[0], v[1] * v[1]})
			return []*Array{sq}, err
		}, []*Array{x}, []*Array{gy}, 1e-3))
		defer g[0].Close()
		want := must(NewArray([]float64{2, 4}))
		defer want.Close()
		ok(t, g[0].AllClose(want, 1e-6, 1e-6))
		bad := must(NewArray([]float64{2, 5}))
		defer bad.Close()
		if err := g[0].AllClose(bad, 1e-6, 1e-6); !errors.Is(err, ErrNotClose) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestConfigAndMemoryStats(t *testing.T) {
	noLeak(t, func() { configAndMemoryStats(t) })
}

func configAndMemoryStats(t *testing.T) {
	Seed(1)
	if NumThreads() < 1 || BLAS() == "" {
		t.Fatal("config")
	}
	if err := SetNumThreads(0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("got %v", err)
	}
	if GEMM() != "auto" {
		t.Fatalf("GEMM() = %q at start", GEMM())
	}
	if err := SetGEMM("openblas"); err != nil || GEMM() != "openblas" {
		t.Fatalf("SetGEMM(openblas): %v, GEMM() = %q", err, GEMM())
	}
	if err := SetGEMM("no-such-blas"); !errors.Is(err, ErrInvalidArgument) || GEMM() != "openblas" {
		t.Fatalf("SetGEMM(no-such-blas): %v, GEMM() = %q", err, GEMM())
	}
	if err := SetGEMM("auto"); err != nil || GEMM() != "auto" {
		t.Fatalf("SetGEMM(auto): %v", err)
	}
	cache := GEMMCache()
	if err := SetGEMMCache(""); err != nil || GEMMCache() != "" ||
		!strings.HasSuffix(BLAS(), " | choices not kept on disk") {
		t.Fatalf("SetGEMMCache(\"\"): %v, GEMMCache() = %q, BLAS() = %q", err, GEMMCache(), BLAS())
	}
	if err := SetGEMMCache("/tmp/chainerc-go-test-gemm"); err != nil || GEMMCache() != "/tmp/chainerc-go-test-gemm" {
		t.Fatalf("SetGEMMCache(dir): %v, GEMMCache() = %q", err, GEMMCache())
	}
	if err := SetGEMMCache(strings.Repeat("x", 5000)); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "5000 bytes") || GEMMCache() != "/tmp/chainerc-go-test-gemm" {
		t.Fatalf("SetGEMMCache(too long): %v, GEMMCache() = %q", err, GEMMCache())
	}
	if err := ResetGEMMCache(); err != nil || GEMMCache() != cache {
		t.Fatalf("ResetGEMMCache: %v, GEMMCache() = %q, want %q", err, GEMMCache(), cache)
	}
	if !UseCuDNN() || AllowTF32() {
		t.Fatalf("defaults: UseCuDNN %v (want true), AllowTF32 %v (want false)", UseCuDNN(), AllowTF32())
	}
	if st, why, _ := CuDNNState(); st < 0 || st > 6 || (st != 0 && why == "") {
		t.Fatalf("CuDNNState: %d %q (a state 0..6, and a reason unless in use)", st, why)
	}
	if CuDNNCalls("no such kernel") != 0 {
		t.Fatal("CuDNNCalls of an unknown kernel is not 0")
	}
	ResetCuDNNCalls()
	SetUseCuDNN(false)
	if st, why, _ := CuDNNState(); st != 1 || !strings.Contains(why, "ch_config_set_use_cudnn(0)") {
		t.Fatalf("switched off: CuDNNState %d %q", st, why)
	}
	SetAllowTF32(true)
	if UseCuDNN() || !AllowTF32() {
		t.Fatalf("after setting: UseCuDNN %v, AllowTF32 %v", UseCuDNN(), AllowTF32())
	}
	SetUseCuDNN(true)
	SetAllowTF32(false)
	if !UseCuDNN() || AllowTF32() {
		t.Fatal("switches not restored")
	}
	if Deterministic() {
		t.Fatal("the determinism switch starts on")
	}
	SetDeterministic(true)
	if !Deterministic() {
		t.Fatal("SetDeterministic(true) did not stick")
	}
	SetDeterministic(false)
	if Deterministic() {
		t.Fatal("SetDeterministic(false) did not stick")
	}
	s := must(GetMemoryStats(CPU))
	if s.BytesInUse < 0 || s.Allocations < 0 {
		t.Fatalf("stats %+v", s)
	}
	ok(t, EmptyCache(CPU))
	if _, err := GetMemoryStats(CUDA(0)); err != nil && !errors.Is(err, ErrDevice) && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v", err)
	}
}

// Errors are read inside the same cgo call: many goroutines failing at once
// (moving between OS threads freely) each get their own message.
func TestErrorsFromManyGoroutines(t *testing.T) {
	done := make(chan error, 64)
	for i := 0; i < 64; i++ {
		go func(i int) {
			n := int64(i + 2)
			_, err := Full(Float32, 0, n, -n)
			if err == nil || !strings.Contains(err.Error(), "-") {
				done <- NewError(ErrInternal, "goroutine %d got %v", i, err)
				return
			}
			done <- nil
		}(i)
	}
	for i := 0; i < 64; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestWithoutFinalizers(t *testing.T) {
	noLeak(t, func() {
		SetFinalizers(false)
		defer SetFinalizers(true)
		x := must(VariableOf([]float32{1, 2}))
		y := must(MulScalar(x, 3))
		s := must(Sum(y))
		ok(t, s.Backward())
		if g := must(x.GradFloat32s()); g[1] != 3 {
			t.Fatalf("grad %v", g)
		}
		before := LiveHandles()
		for _, v := range []*Variable{s, y, x} {
			v.Close()
		}
		if LiveHandles() != before-3 {
			t.Fatal("Close releases handles made without finalizers")
		}
	})
}
