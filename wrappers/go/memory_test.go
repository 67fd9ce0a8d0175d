package chainerc

import (
	"testing"
)

// 10,000 training steps keep memory flat: live handles and the allocator's
// bytes in use after the loop equal those after the warm-up (no timing).
func TestTenThousandStepsFlatMemory(t *testing.T) {
	noLeak(t, func() {
		const n = 16
		f := must(NewFunction("Scale", Scale{}))
		defer f.Close()
		w := must(Full(Float64, 0.1, n))
		defer w.Close()
		gw := must(Zeros(Float64, n))
		defer gw.Close()
		ok(t, f.AddParameter("W", w, gw))
		xs, ts := make([]float64, n), make([]float64, n)
		for k := range xs {
			xs[k] = float64(k) / n
			ts[k] = 0.5 + 2*float64(k)/n
		}
		x := must(NewArray(xs))
		defer x.Close()
		tv := must(VariableOf(ts))
		defer tv.Close()
		bias := must(VariableOf(make([]float64, n)))
		defer bias.Close()
		var first, last float64
		var warm [2]int64
		for step := 0; step < 10000; step++ {
			xv := must(NewVariable(x))
			y := must(f.Apply1(xv))
			yb := must(Add(y, bias))
			d := must(Sub(yb, tv))
			d2 := must(Mul(d, d))
			s := must(Sum(d2))
			loss := must(MulScalar(s, 1.0/n))
			ok(t, gw.Fill(0))
			ok(t, loss.Backward())
			wv, gv := must(View[float64](w)), must(View[float64](gw))
			for k := range wv {
				wv[k] -= 0.5 * gv[k]
			}
			l := must(loss.Float64s())[0]
			if step == 0 {
				first = l
			}
			last = l
			for _, v := range []*Variable{xv, y, yb, d, d2, s, loss} {
				v.Close()
			}
			if step == 100 {
				warm = [2]int64{LiveHandles(), must(GetMemoryStats(CPU)).BytesInUse}
			}
		}
		end := [2]int64{LiveHandles(), must(GetMemoryStats(CPU)).BytesInUse}
		if end[0] > warm[0] {
			t.Fatalf("live handles after warm-up %d, after 10,000 steps %d", warm[0], end[0])
		}
		if end[1] > warm[1] {
			t.Fatalf("bytes in use grew from %d to %d", warm[1], end[1])
		}
		if !(last < first*0.01) {
			t.Fatalf("loss went from %v to %v", first, last)
		}
	})
}
