package chainerc

import (
	"strings"
	"testing"
)

type closer interface{ Close() }

// The seed's section 1.4.4 idiom: numerical_grad of y.creator's forward on
// x's data equals backward's gradient; forward on the recorded inputs gives
// the graph's output.
func TestFunctionForwardSeedIdiom(t *testing.T) {
	noLeak(t, func() {
		var own []closer
		defer func() {
			for i := len(own) - 1; i >= 0; i-- {
				own[i].Close()
			}
		}()
		keep := func(c closer) { own = append(own, c) }
		xa := must(NewArray(values(6, 5, -1, 1), 3, 2))
		keep(xa)
		x := must(NewVariable(xa))
		keep(x)
		y := must(Relu(x))
		keep(y)
		gy := must(NewArray(values(6, 6, -1, 1), 3, 2))
		keep(gy)
		must(0, y.SetGrad(gy))
		must(0, y.Backward())
		fn := must(y.Creator())
		keep(fn)
		xd := must(x.Data())
		keep(xd)
		gx := must(NumericalGrad(func() ([]*Array, error) { return fn.Forward(xd) }, []*Array{xd}, []*Array{gy}, 1e-3))
		keep(gx[0])
		xg := must(x.Grad())
		keep(xg)
		if !close64(must(Values[float64](gx[0])), must(Values[float64](xg)), 1e-6) {
			t.Fatalf("numerical %v, backward %v", must(Values[float64](gx[0])), must(Values[float64](xg)))
		}
		la := must(NewArray([]int32{1, 0, 1}, 3))
		keep(la)
		lbl := must(NewVariable(la))
		keep(lbl)
		loss := must(SoftmaxCrossEntropy(x, lbl))
		keep(loss)
		fl := must(loss.Creator())
		keep(fl)
		out := must(fl.Forward(xd, la))
		for _, o := range out {
			keep(o)
		}
		ld := must(loss.Data())
		keep(ld)
		if len(out) != 1 || must(Values[float64](out[0]))[0] != must(Values[float64](ld))[0] {
			t.Fatalf("forward gave %v, the graph %v", must(Values[float64](out[0])), must(Values[float64](ld)))
		}
		if _, err := fl.Forward(xd); err == nil || !strings.Contains(err.Error(), "takes 2 inputs, got 1") {
			t.Fatalf("wrong arity: %v", err)
		}
	})
}

func TestGraphDotMLP(t *testing.T) {
	noLeak(t, func() {
		var own []closer
		defer func() {
			for i := len(own) - 1; i >= 0; i-- {
				own[i].Close()
			}
		}()
		keep := func(c closer) { own = append(own, c) }
		l1 := must(NewLinear(3, 4, DefaultLinear()))
		keep(l1)
		l2 := must(NewLinear(4, 2, DefaultLinear()))
		keep(l2)
		xa := must(NewArray([]float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, 2, 3))
		keep(xa)
		x := must(NewVariable(xa))
		keep(x)
		la := must(NewArray([]int32{1, 0}, 2))
		keep(la)
		lbl := must(NewVariable(la))
		keep(lbl)
		h1 := must(l1.Apply1(x))
		keep(h1)
		a := must(Relu(h1))
		keep(a)
		h2 := must(l2.Apply1(a))
		keep(h2)
		loss := must(SoftmaxCrossEntropy(h2, lbl))
		keep(loss)
		dot := must(loss.GraphDot())
		if strings.Count(dot, `shape="box"`) != 4 || strings.Count(dot, `shape="oval"`) != 10 ||
			strings.Count(dot, "->") != 13 || !strings.Contains(dot, `[label="W\n(4, 3), float32"`) {
			t.Fatalf("unexpected DOT:\n%s", dot)
		}
		bare := must(GraphDot([]*Variable{loss}, GraphDotOptions{OutputNames: []string{"loss"}, HideParameters: true, Rankdir: "LR"}))
		if strings.Count(bare, "->") != 9 || !strings.Contains(bare, `[label="loss\n(), float32"`) || !strings.Contains(bare, "rankdir=LR;") {
			t.Fatalf("unexpected DOT:\n%s", bare)
		}
		if _, err := GraphDot([]*Variable{loss}, GraphDotOptions{Rankdir: "up"}); err == nil {
			t.Fatal("a bad rankdir was accepted")
		}
	})
}
