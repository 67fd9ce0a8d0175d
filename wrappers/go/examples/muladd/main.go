// A custom differentiable function written in Go: w = x*y + z.
// Run: go run ./examples/muladd (from wrappers/go).
package main

import (
	"fmt"
	"log"

	ch "chainerc.dev/chainerc"
)

// MulAdd's methods are called by the engine through C callbacks; the arrays
// arrive without copying (ch.View gives their memory as a slice).
type MulAdd struct{}

func (MulAdd) Forward(_ *ch.Context, in []*ch.Array) ([]*ch.Array, error) {
	x, _ := ch.View[float64](in[0])
	y, _ := ch.View[float64](in[1])
	z, _ := ch.View[float64](in[2])
	w := make([]float64, len(x))
	for i := range w {
		w[i] = x[i]*y[i] + z[i]
	}
	out, err := ch.NewArray(w, in[0].Shape()...)
	return []*ch.Array{out}, err
}

func (MulAdd) Backward(_ *ch.Context, in, _, gout []*ch.Array) ([]*ch.Array, error) {
	x, _ := ch.View[float64](in[0])
	y, _ := ch.View[float64](in[1])
	gw, _ := ch.View[float64](gout[0])
	gx, gy := make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		gx[i], gy[i] = gw[i]*y[i], gw[i]*x[i]
	}
	ga, err := ch.NewArray(gx, in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	gb, err := ch.NewArray(gy, in[1].Shape()...)
	return []*ch.Array{ga, gb, gout[0]}, err // gz = gw, shared
}

func main() {
	f, err := ch.NewFunction("MulAdd", MulAdd{})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	x, _ := ch.VariableOf([]float64{1, 2, 3})
	y, _ := ch.VariableOf([]float64{4, 5, 6})
	z, _ := ch.VariableOf([]float64{7, 8, 9})
	defer x.Close()
	defer y.Close()
	defer z.Close()

	w, err := f.Apply1(x, y, z)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	w2, _ := ch.MulScalar(w, 2)
	defer w2.Close()
	loss, _ := ch.Sum(w2)
	defer loss.Close()
	if err := loss.Backward(); err != nil {
		log.Fatal(err)
	}
	wv, _ := w.Float64s()
	gx, _ := x.GradFloat64s()
	gy, _ := y.GradFloat64s()
	gz, _ := z.GradFloat64s()
	fmt.Println("w     =", wv)
	fmt.Println("dL/dx =", gx)
	fmt.Println("dL/dy =", gy)
	fmt.Println("dL/dz =", gz)

	var inputs []*ch.Array
	for _, v := range []*ch.Variable{x, y, z} {
		d, _ := v.Data()
		defer d.Close()
		inputs = append(inputs, d)
	}
	if err := ch.CheckBackward(f, inputs, nil, ch.DefaultTolerance); err != nil {
		log.Fatal(err)
	}
	fmt.Println("check_backward: ok")
}
