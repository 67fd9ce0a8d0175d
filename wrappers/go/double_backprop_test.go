package chainerc

import "testing"

// Double backprop from Go: y = sum(x^3), y' = 3x^2, y” = 6x (by hand).
func TestDoubleBackpropCube(t *testing.T) {
	noLeak(t, func() {
		xa := must(NewArray([]float64{0.5, -1, 2}, 3))
		defer xa.Close()
		x := must(NewVariable(xa))
		defer x.Close()
		c := must(PowScalar(x, 3))
		defer c.Close()
		y := must(Sum(c))
		defer y.Close()
		ok(t, y.BackwardDouble(false))
		gx := must(x.GradVar())
		defer gx.Close()
		if g := must(gx.Float64s()); !close64(g, []float64{0.75, 3, 12}, 1e-12) {
			t.Fatalf("grad_var %v", g)
		}
		ok(t, x.SetGrad(nil))
		s := must(Sum(gx))
		defer s.Close()
		h := must(Grad([]*Variable{s}, []*Variable{x}, false))
		defer h[0].Close()
		if g := must(h[0].Float64s()); !close64(g, []float64{3, -6, 12}, 1e-12) {
			t.Fatalf("second derivative %v", g)
		}
		ok(t, NoBackpropMode(func() error {
			e := must(Exp(x))
			defer e.Close()
			if cr := must(e.Creator()); cr != nil {
				t.Fatalf("no_backprop_mode recorded a creator")
			}
			return nil
		}))
	})
}

func TestCheckDoubleBackwardTanh(t *testing.T) {
	noLeak(t, func() {
		x := must(NewArray(values(6, 3, -1, 1), 2, 3))
		defer x.Close()
		build := func(in []*Variable) ([]*Variable, error) {
			y, err := Tanh(in[0])
			if err != nil {
				return nil, err
			}
			return []*Variable{y}, nil
		}
		ok(t, CheckDoubleBackward(build, []*Array{x}, []*Array{nil}, nil, Tolerance{Eps: 1e-4, Atol: 1e-6, Rtol: 1e-5}))
		if !EnableBackprop() || !BackpropModeEnabled() {
			t.Fatalf("recording is on by default")
		}
	})
}

// MulAdd with a backward over variables: twice differentiable.
type mulAddGraph struct{ MulAdd }

func (mulAddGraph) BackwardGraph(in, _, g []*Variable) ([]*Variable, error) {
	gx, err := Mul(g[0], in[1])
	if err != nil {
		return nil, err
	}
	gy, err := Mul(g[0], in[0])
	if err != nil {
		gx.Close()
		return nil, err
	}
	return []*Variable{gx, gy, g[0]}, nil
}

// s = sum(w^2), w = x y + z: ds/dx = 2 w y, d2s/dx2 = 2 y^2 (by hand).
func TestCustomMulAddTwiceDifferentiable(t *testing.T) {
	noLeak(t, func() {
		f := must(NewFunction("MulAdd", mulAddGraph{}))
		defer f.Close()
		mk := func(v []float64) *Variable {
			a := must(NewArray(v, 2))
			defer a.Close()
			return must(NewVariable(a))
		}
		x, y, z := mk([]float64{1, 2}), mk([]float64{3, -1}), mk([]float64{0.5, 0.5})
		defer x.Close()
		defer y.Close()
		defer z.Close()
		w := must(f.Apply1(x, y, z))
		defer w.Close()
		w2 := must(Mul(w, w))
		defer w2.Close()
		s := must(Sum(w2))
		defer s.Close()
		g := must(Grad([]*Variable{s}, []*Variable{x}, true))
		defer g[0].Close()
		if v := must(g[0].Float64s()); !close64(v, []float64{21, 3}, 1e-12) {
			t.Fatalf("first derivative %v", v)
		}
		sg := must(Sum(g[0]))
		defer sg.Close()
		gg := must(Grad([]*Variable{sg}, []*Variable{x}, false))
		defer gg[0].Close()
		if v := must(gg[0].Float64s()); !close64(v, []float64{18, 2}, 1e-12) {
			t.Fatalf("second derivative %v", v)
		}
	})
}
