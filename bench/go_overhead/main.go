// go_overhead: per-op overhead of chainerc called from Go through the
// wrapper: the op chain of bench/overhead.cpp (1,000 ops cycling x*2, +1,
// exp, log, +(-1), *0.5, exp, log on 1-element float32 arrays), forward +
// backward, forward only, forward without history (volatile); plus the
// MulAdd custom function (w = x*y + z on 10 elements) written in Go. Each
// figure is the median over repeats (each at least -min-time) of the time per
// op (or per call) in microseconds, as the C benchmark computes it. The
// "without finalizers" rows run with ch.SetFinalizers(false) (every handle is
// closed explicitly anyway).
//
// Usage: go_overhead [-ops N] [-repeats N] [-min-time SECONDS] [-quick]
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	ch "chainerc.dev/chainerc"
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_overhead:", err)
		os.Exit(2)
	}
}

func step(i int, x *ch.Variable) *ch.Variable {
	var y *ch.Variable
	var err error
	switch i % 8 {
	case 0:
		y, err = ch.MulScalar(x, 2)
	case 1:
		y, err = ch.AddScalar(x, 1)
	case 2:
		y, err = ch.Exp(x)
	case 3:
		y, err = ch.Log(x)
	case 4:
		y, err = ch.AddScalar(x, -1)
	case 5:
		y, err = ch.MulScalar(x, 0.5)
	case 6:
		y, err = ch.Exp(x)
	default:
		y, err = ch.Log(x)
	}
	check(err)
	return y
}

// chain closes every intermediate handle as soon as the next op exists, as
// the C benchmark releases them.
func chain(x *ch.Variable, gy *ch.Array, nOps int, backward bool) {
	cur := x
	for i := 0; i < nOps; i++ {
		next := step(i, cur)
		if cur != x {
			cur.Close()
		}
		cur = next
	}
	if backward {
		check(cur.SetGrad(gy))
		check(cur.Backward())
	}
	cur.Close()
}

type mulAdd struct{}

func (mulAdd) Forward(_ *ch.Context, in []*ch.Array) ([]*ch.Array, error) {
	x, _ := ch.View[float32](in[0])
	y, _ := ch.View[float32](in[1])
	z, _ := ch.View[float32](in[2])
	out, err := ch.EmptyLike(in[0])
	if err != nil {
		return nil, err
	}
	w, _ := ch.View[float32](out)
	for k := range w {
		w[k] = x[k]*y[k] + z[k]
	}
	return []*ch.Array{out}, nil
}

func (mulAdd) Backward(_ *ch.Context, in, _, g []*ch.Array) ([]*ch.Array, error) {
	x, _ := ch.View[float32](in[0])
	y, _ := ch.View[float32](in[1])
	gw, _ := ch.View[float32](g[0])
	ga, err := ch.EmptyLike(in[0])
	if err != nil {
		return nil, err
	}
	gb, err := ch.EmptyLike(in[1])
	if err != nil {
		ga.Close()
		return nil, err
	}
	gx, _ := ch.View[float32](ga)
	gy, _ := ch.View[float32](gb)
	for k := range gw {
		gx[k] = gw[k] * y[k]
		gy[k] = gw[k] * x[k]
	}
	return []*ch.Array{ga, gb, g[0]}, nil
}

type bench struct {
	name    string
	per     float64
	body    func()
	iters   int
	samples []float64
}

func main() {
	nOps := flag.Int("ops", 1000, "ops per chain")
	repeats := flag.Int("repeats", 7, "repeats")
	minTime := flag.Float64("min-time", 0.05, "seconds per repeat")
	quick := flag.Bool("quick", false, "3 repeats of 10 ms")
	flag.Parse()
	if *quick {
		*repeats, *minTime = 3, 0.01
	}
	xa, err := ch.Full(ch.Float32, 0.5, 1)
	check(err)
	gy, err := ch.Full(ch.Float32, 1, 1)
	check(err)
	x, err := ch.NewVariable(xa)
	check(err)
	xv, err := ch.NewVolatile(xa)
	check(err)
	chain(x, gy, *nOps, true)
	g, err := x.GradFloat32s()
	check(err)
	if g[0] < 0.999 || g[0] > 1.001 {
		check(fmt.Errorf("d(chain)/dx = %v, expected 1", g[0]))
	}
	f, err := ch.NewFunction("MulAdd", mulAdd{})
	check(err)
	var abc []*ch.Variable
	for _, v := range []float64{2, 3, 4} {
		a, err := ch.Full(ch.Float32, v, 10)
		check(err)
		vv, err := ch.NewVariable(a)
		check(err)
		a.Close()
		abc = append(abc, vv)
	}
	gw, err := ch.Full(ch.Float32, 1, 10)
	check(err)
	call := func(backward bool) {
		w, err := f.Apply1(abc...)
		check(err)
		if backward {
			check(w.SetGrad(gw))
			check(w.Backward())
		}
		w.Close()
	}
	call(true)
	if gx, _ := abc[0].GradFloat32s(); gx[0] != 3 {
		check(fmt.Errorf("MulAdd gradient %v", gx))
	}
	n := float64(*nOps)
	benches := []*bench{
		{name: "per op: forward + backward (history), 1 element", per: n, body: func() { chain(x, gy, *nOps, true) }},
		{name: "per op: forward only (history), 1 element", per: n, body: func() { chain(x, gy, *nOps, false) }},
		{name: "per op: forward (no history), 1 element", per: n, body: func() { chain(xv, gy, *nOps, false) }},
		{name: "per op: forward + backward (history), 1 element, without finalizers", per: n, body: func() {
			ch.SetFinalizers(false)
			chain(x, gy, *nOps, true)
			ch.SetFinalizers(true)
		}},
		{name: "per op: forward (no history), 1 element, without finalizers", per: n, body: func() {
			ch.SetFinalizers(false)
			chain(xv, gy, *nOps, false)
			ch.SetFinalizers(true)
		}},
		{name: "MulAdd custom function (Go): forward + backward, 10 elements", per: 1, body: func() { call(true) }},
		{name: "MulAdd custom function (Go): forward only, 10 elements", per: 1, body: func() { call(false) }},
	}
	for _, b := range benches {
		b.body()
		b.body()
		iters := 1
		for {
			t0 := time.Now()
			for i := 0; i < iters; i++ {
				b.body()
			}
			dt := time.Since(t0).Seconds()
			if dt >= *minTime || iters >= 1<<26 {
				break
			}
			scale := 16.0
			if dt > 0 {
				scale = 1.2 * *minTime / dt
			}
			next := int(float64(iters) * scale)
			if next < iters*2 {
				next = iters * 2
			}
			iters = next
		}
		b.iters = iters
	}
	for r := 0; r < *repeats; r++ {
		for _, b := range benches {
			t0 := time.Now()
			for i := 0; i < b.iters; i++ {
				b.body()
			}
			b.samples = append(b.samples, time.Since(t0).Seconds()/float64(b.iters)*1e6/b.per)
		}
	}
	fmt.Printf("## chainerc from Go: per-call overhead (CPU, float32)\n\n")
	fmt.Printf("Chain of %d ops cycling x*2, +1, exp, log, +(-1), *0.5, exp, log (as bench/overhead.cpp); median of %d repeats of at least %.0f ms.\n\n", *nOps, *repeats, *minTime*1e3)
	fmt.Println("| what | µs |")
	fmt.Println("| --- | ---: |")
	for _, b := range benches {
		sort.Float64s(b.samples)
		fmt.Printf("| %s | %.3f |\n", b.name, b.samples[len(b.samples)/2])
	}
}
