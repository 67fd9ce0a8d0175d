package chainerc

import (
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// f64s reads a float32 or float64 array as float64s (a copy).
func f64s(a *Array) ([]float64, error) {
	if a.Dtype() == Float32 {
		v, err := View[float32](a)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out, nil
	}
	v, err := View[float64](a)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), v...), nil
}

// like makes an array of a's dtype and shape from float64 values.
func like(a *Array, v []float64) (*Array, error) {
	if a.Dtype() == Float32 {
		w := make([]float32, len(v))
		for i, x := range v {
			w[i] = float32(x)
		}
		return NewArray(w, a.Shape()...)
	}
	return NewArray(v, a.Shape()...)
}

// MulAdd: w = x*y + z.
type MulAdd struct{}

func (MulAdd) Forward(_ *Context, in []*Array) ([]*Array, error) {
	if len(in) != 3 {
		return nil, NewError(ErrInvalidArgument, "MulAdd takes 3 inputs, got %d", len(in))
	}
	x, y, z := must(f64s(in[0])), must(f64s(in[1])), must(f64s(in[2]))
	w := make([]float64, len(x))
	for i := range w {
		w[i] = x[i]*y[i] + z[i]
	}
	o, err := like(in[0], w)
	return []*Array{o}, err
}

func (MulAdd) Backward(_ *Context, in, _, g []*Array) ([]*Array, error) {
	x, y, gw := must(f64s(in[0])), must(f64s(in[1])), must(f64s(g[0]))
	gx, gy := make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		gx[i], gy[i] = gw[i]*y[i], gw[i]*x[i]
	}
	return []*Array{must(like(in[0], gx)), must(like(in[1], gy)), g[0]}, nil
}

// ExpAdd: y = exp(x) + z, keeping exp(x) for backward.
type ExpAdd struct{}

func (ExpAdd) Forward(ctx *Context, in []*Array) ([]*Array, error) {
	x, z := must(f64s(in[0])), must(f64s(in[1]))
	e := make([]float64, len(x))
	y := make([]float64, len(x))
	for i := range x {
		e[i] = math.Exp(x[i])
		y[i] = e[i] + z[i]
	}
	ea := must(like(in[0], e))
	defer ea.Close()
	if err := ctx.Save(ea); err != nil {
		return nil, err
	}
	return []*Array{must(like(in[0], y))}, nil
}

func (ExpAdd) Backward(ctx *Context, _, _, g []*Array) ([]*Array, error) {
	sa := must(ctx.Saved(0))
	defer sa.Close()
	e, gy := must(f64s(sa)), must(f64s(g[0]))
	gx := make([]float64, len(e))
	for i := range e {
		gx[i] = gy[i] * e[i]
	}
	return []*Array{must(like(g[0], gx)), g[0]}, nil
}

// Scale: y = W*x with a parameter W; backward accumulates gW += gy*x.
type Scale struct{}

func (Scale) Forward(ctx *Context, in []*Array) ([]*Array, error) {
	f := must(ctx.Function())
	defer f.Close()
	w := must(f.Param("W"))
	defer w.Close()
	x, wv := must(f64s(in[0])), must(f64s(w.Param))
	if len(x) != len(wv) {
		return nil, NewError(ErrShape, "x has %d elements, W %d", len(x), len(wv))
	}
	y := make([]float64, len(x))
	for i := range x {
		y[i] = wv[i] * x[i]
	}
	return []*Array{must(like(in[0], y))}, nil
}

func (Scale) Backward(ctx *Context, in, _, g []*Array) ([]*Array, error) {
	f := must(ctx.Function())
	defer f.Close()
	w := must(f.Param("W"))
	defer w.Close()
	x, gy, wv := must(f64s(in[0])), must(f64s(g[0])), must(f64s(w.Param))
	gw := must(View[float64](w.Grad))
	gx := make([]float64, len(x))
	for i := range x {
		gw[i] += gy[i] * x[i]
		gx[i] = gy[i] * wv[i]
	}
	return []*Array{must(like(in[0], gx))}, nil
}

func closeAll(as []*Array) {
	for _, a := range as {
		a.Close()
	}
}

func TestMulAdd(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("MulAdd", MulAdd{}))
		defer f.Close()
		if f.Name() != "MulAdd" {
			t.Fatalf("name %q", f.Name())
		}
		x := must(VariableOf([]float32{1, 2}))
		defer x.Close()
		y := must(VariableOf([]float32{3, 4}))
		defer y.Close()
		z := must(VariableOf([]float32{5, 6}))
		defer z.Close()
		w := must(f.Apply1(x, y, z))
		defer w.Close()
		if v := must(w.Float32s()); v[0] != 8 || v[1] != 14 {
			t.Fatalf("forward %v", v)
		}
		g := must(NewArray([]float32{1, 2}))
		defer g.Close()
		ok(t, w.SetGrad(g))
		ok(t, w.Backward())
		gx, gy, gz := must(x.GradFloat32s()), must(y.GradFloat32s()), must(z.GradFloat32s())
		if gx[1] != 8 || gy[1] != 4 || gz[1] != 2 {
			t.Fatalf("grads %v %v %v", gx, gy, gz)
		}
		outs := must(f.Apply(x, y, z))
		if len(outs) != 1 {
			t.Fatalf("outputs %d", len(outs))
		}
		outs[0].Close()
		var in64, in32 []*Array
		for s := uint64(0); s < 3; s++ {
			v := values(6, s+10, -1, 1)
			in64 = append(in64, must(NewArray(v, 2, 3)))
			v32 := make([]float32, 6)
			for i := range v {
				v32[i] = float32(v[i])
			}
			in32 = append(in32, must(NewArray(v32, 2, 3)))
		}
		defer closeAll(in64)
		defer closeAll(in32)
		ok(t, CheckBackward(f, in64, nil, Tolerance{1e-3, 1e-7, 1e-6}))
		ok(t, CheckBackward(f, in32, nil, Tolerance{1e-2, 1e-3, 1e-2}))
	})
}

func TestExpAdd(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("ExpAdd", ExpAdd{}))
		defer f.Close()
		x := must(NewArray(values(5, 3, -1, 1)))
		defer x.Close()
		z := must(NewArray(values(5, 4, -1, 1)))
		defer z.Close()
		ok(t, CheckBackward(f, []*Array{x, z}, nil, Tolerance{1e-3, 1e-7, 1e-6}))
		// inside a larger graph: sum(ExpAdd(2x, z) * 3)
		ok(t, CheckBackwardGraph(func(in []*Variable) ([]*Variable, error) {
			x2 := must(MulScalar(in[0], 2))
			defer x2.Close()
			e := must(f.Apply1(x2, in[1]))
			defer e.Close()
			e3 := must(MulScalar(e, 3))
			defer e3.Close()
			s, err := Sum(e3)
			return []*Variable{s}, err
		}, []*Array{x, z}, []*Array{nil}, Tolerance{1e-3, 1e-6, 1e-5}))
	})
}

func TestParameterizedFunction(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("Scale", Scale{}))
		defer f.Close()
		w := must(NewArray(values(4, 7, 0.5, 1.5)))
		defer w.Close()
		gw := must(Zeros(Float64, 4))
		defer gw.Close()
		ok(t, f.AddParameter("W", w, gw))
		if f.ParameterCount() != 1 {
			t.Fatal("one parameter")
		}
		p := must(f.Parameter(0))
		if p.Name != "W" {
			t.Fatalf("name %q", p.Name)
		}
		p.Close()
		x := must(NewArray(values(4, 8, -1, 1)))
		defer x.Close()
		ok(t, CheckBackward(f, []*Array{x}, nil, Tolerance{1e-3, 1e-7, 1e-6}))
		// the accumulated parameter gradient vs the numerical one
		ok(t, gw.Fill(0))
		xv := must(NewVariable(x))
		defer xv.Close()
		yv := must(f.Apply1(xv))
		defer yv.Close()
		s := must(Sum(yv))
		defer s.Close()
		ok(t, s.Backward())
		ones := must(Ones(Float64, 4))
		defer ones.Close()
		num := must(NumericalGrad(func() ([]*Array, error) {
			v, err := NewVolatile(x)
			if err != nil {
				return nil, err
			}
			defer v.Close()
			o, err := f.Apply1(v)
			if err != nil {
				return nil, err
			}
			defer o.Close()
			d, err := o.Data()
			return []*Array{d}, err
		}, []*Array{w}, []*Array{ones}, 1e-3))
		defer closeAll(num)
		ok(t, gw.AllClose(num[0], 1e-7, 1e-6))
	})
}

type probe struct{ addr uintptr }

func (p *probe) Forward(_ *Context, in []*Array) ([]*Array, error) {
	v := must(View[float32](in[0]))
	p.addr = uintptr(unsafe.Pointer(&v[0]))
	return []*Array{in[0]}, nil // a borrowed input shared as the output
}
func (p *probe) ForwardCPU(c *Context, in []*Array) ([]*Array, error) { return p.Forward(c, in) }
func (p *probe) Backward(_ *Context, _, _, g []*Array) ([]*Array, error) {
	return []*Array{g[0]}, nil
}

func TestZeroCopyInputsAndCPUDispatch(t *testing.T) {
	noLeak(t, func() {
		pr := &probe{}
		f := must(NewFunction("Probe", pr))
		defer f.Close()
		a := must(NewArray([]float32{1, 2}))
		defer a.Close()
		x := must(NewVariable(a))
		defer x.Close()
		y := must(f.Apply1(x))
		defer y.Close()
		v := must(View[float32](a))
		if pr.addr != uintptr(unsafe.Pointer(&v[0])) {
			t.Fatal("the callback saw a copy")
		}
	})
}

type failing struct{ panicBackward bool }

type myErr struct{ code int }

func (e *myErr) Error() string { return "my error" }

func (f failing) Forward(_ *Context, in []*Array) ([]*Array, error) {
	switch in[0].Size() {
	case 3:
		return nil, NewError(ErrShape, "failing refuses 3 elements")
	case 4:
		panic("forward exploded")
	case 5:
		return nil, &myErr{code: 42}
	}
	c, err := in[0].Copy()
	return []*Array{c}, err
}

func (f failing) Backward(_ *Context, _, _, g []*Array) ([]*Array, error) {
	if f.panicBackward {
		panic(errors.New("backward exploded"))
	}
	return []*Array{g[0], g[0]}, nil
}

func TestCallbackErrorsAndPanics(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("Failing", failing{panicBackward: true}))
		defer f.Close()
		x3 := must(VariableOf([]float32{1, 2, 3}))
		defer x3.Close()
		_, err := f.Apply1(x3)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Message, "Failing") || !strings.Contains(ce.Message, "refuses 3 elements") {
			t.Fatalf("got %v", err)
		}
		var inner *Error
		if !errors.As(ce.Cause, &inner) || inner.Status != ErrShape {
			t.Fatalf("cause %v", ce.Cause)
		}
		x5 := must(VariableOf([]float32{1, 2, 3, 4, 5}))
		defer x5.Close()
		_, err = f.Apply1(x5)
		var me *myErr
		if !errors.As(err, &me) || me.code != 42 {
			t.Fatalf("a Go error type survives the round trip: %v", err)
		}
		x4 := must(VariableOf([]float32{1, 2, 3, 4}))
		defer x4.Close()
		_, err = f.Apply1(x4)
		var pe *PanicError
		if !errors.Is(err, ErrCallback) || !errors.As(err, &pe) || pe.Value != "forward exploded" || !strings.Contains(err.Error(), "forward exploded") {
			t.Fatalf("got %v", err)
		}
		x1 := must(VariableOf([]float32{1}))
		defer x1.Close()
		y := must(f.Apply1(x1))
		defer y.Close()
		err = y.Backward()
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "backward exploded") {
			t.Fatalf("got %v", err)
		}
		g := must(NewFunction("Failing", failing{}))
		defer g.Close()
		y2 := must(g.Apply1(x1))
		defer y2.Close()
		err = y2.Backward()
		if err == nil || !strings.Contains(err.Error(), "2 gradients for 1 inputs") {
			t.Fatalf("got %v", err)
		}
	})
}

type wrong struct{}

func (wrong) Forward(_ *Context, in []*Array) ([]*Array, error) {
	x := must(f64s(in[0]))
	for i := range x {
		x[i] *= x[i]
	}
	return []*Array{must(like(in[0], x))}, nil
}
func (wrong) Backward(_ *Context, in, _, g []*Array) ([]*Array, error) {
	x, gy := must(f64s(in[0])), must(f64s(g[0]))
	for i := range x {
		x[i] *= gy[i] // should be 2x
	}
	return []*Array{must(like(in[0], x))}, nil
}

func TestCheckBackwardFindsWrongBackward(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("Wrong", wrong{}))
		defer f.Close()
		x := must(NewArray([]float64{1, 2}))
		defer x.Close()
		if err := CheckBackward(f, []*Array{x}, nil, DefaultTolerance); !errors.Is(err, ErrNotClose) {
			t.Fatalf("got %v", err)
		}
	})
}

// twice: y = a + b; backward returns one owned array as both gradients.
type twice struct{}

func (twice) Forward(_ *Context, in []*Array) ([]*Array, error) {
	a, b := must(f64s(in[0])), must(f64s(in[1]))
	for i := range a {
		a[i] += b[i]
	}
	return []*Array{must(like(in[0], a))}, nil
}

func (twice) Backward(_ *Context, _, _, g []*Array) ([]*Array, error) {
	c := must(g[0].Copy())
	return []*Array{c, c}, nil
}

func TestSameGradientArrayForTwoInputs(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("Twice", twice{}))
		defer f.Close()
		a := must(VariableOf([]float64{1, 2}))
		defer a.Close()
		b := must(VariableOf([]float64{3, 4}))
		defer b.Close()
		y := must(f.Apply1(a, b))
		defer y.Close()
		s := must(Sum(y))
		defer s.Close()
		ok(t, s.Backward())
		ga, gb := must(a.GradFloat64s()), must(b.GradFloat64s())
		if ga[1] != 1 || gb[0] != 1 {
			t.Fatalf("grads %v %v", ga, gb)
		}
	})
}

type needsProbe struct{ mask *int }

func (needsProbe) Forward(_ *Context, in []*Array) ([]*Array, error) {
	c, err := in[0].Copy()
	return []*Array{c}, err
}

func (p needsProbe) Backward(ctx *Context, in, _, g []*Array) ([]*Array, error) {
	*p.mask = 0
	for i := range in {
		if ctx.NeedsInputGrad(i) {
			*p.mask |= 1 << i
		}
	}
	return []*Array{g[0], g[0]}, nil
}

func TestRequiresGradAndNeedsInputGrad(t *testing.T) {
	noLeak(t, func() {
		mask := 99
		f := must(NewFunction("NeedsProbe", needsProbe{&mask}))
		defer f.Close()
		x := must(VariableOf([]float64{1, 2}))
		defer x.Close()
		data := must(VariableOf([]float64{3, 4}))
		defer data.Close()
		if !data.RequiresGrad() {
			t.Fatal("default requires_grad")
		}
		ok(t, data.SetRequiresGrad(false))
		y := must(f.Apply1(x, data))
		defer y.Close()
		s := must(Sum(y))
		defer s.Close()
		ok(t, s.Backward())
		if mask != 1 {
			t.Fatalf("needs-input-grad mask %b", mask)
		}
		if g := must(data.Grad()); g != nil {
			t.Fatal("no gradient stored for data")
		}
	})
}
