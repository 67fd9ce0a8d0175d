// One epoch of the seed's MNIST MLP (784-100-100-10, ReLU, softmax cross
// entropy, Adam, mini-batches of 100 shuffled) on Fashion-MNIST through the
// library's IDX reader, then the test accuracy.
//
// Run (from wrappers/go): go run ./examples/mnist [-data DIR] [-epochs N]
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand"
	"time"

	ch "chainerc.dev/chainerc"
)

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

type mlp struct {
	l1, l2, l3 *ch.Function
	set        *ch.FunctionSet
}

func newMLP(hidden int64) *mlp {
	m := &mlp{}
	var err error
	m.l1, err = ch.NewLinear(784, hidden, ch.DefaultLinear())
	check(err)
	m.l2, err = ch.NewLinear(hidden, hidden, ch.DefaultLinear())
	check(err)
	m.l3, err = ch.NewLinear(hidden, 10, ch.DefaultLinear())
	check(err)
	m.set, err = ch.NewFunctionSet()
	check(err)
	check(m.set.Add("l1", m.l1))
	check(m.set.Add("l2", m.l2))
	check(m.set.Add("l3", m.l3))
	return m
}

// forward returns the scores; every intermediate handle is closed at once
// (the graph stays alive through the output).
func (m *mlp) forward(x *ch.Variable) *ch.Variable {
	a1, err := m.l1.Apply1(x)
	check(err)
	h1, err := ch.Relu(a1)
	check(err)
	a1.Close()
	a2, err := m.l2.Apply1(h1)
	check(err)
	h1.Close()
	h2, err := ch.Relu(a2)
	check(err)
	a2.Close()
	y, err := m.l3.Apply1(h2)
	check(err)
	h2.Close()
	return y
}

func batch(x []float32, t []int32, d int, idx []int, volatile bool) (*ch.Variable, *ch.Variable) {
	xs := make([]float32, 0, len(idx)*d)
	ts := make([]int32, 0, len(idx))
	for _, i := range idx {
		xs = append(xs, x[i*d:(i+1)*d]...)
		ts = append(ts, t[i])
	}
	xa, err := ch.NewArray(xs, int64(len(idx)), int64(d))
	check(err)
	defer xa.Close()
	ta, err := ch.NewArray(ts)
	check(err)
	defer ta.Close()
	mk := ch.NewVariable
	if volatile {
		mk = ch.NewVolatile
	}
	xv, err := mk(xa)
	check(err)
	tv, err := mk(ta)
	check(err)
	return xv, tv
}

func scalar(v *ch.Variable) float64 {
	d, err := v.Data()
	check(err)
	defer d.Close()
	x, err := d.At(0)
	check(err)
	return x
}

func main() {
	dir := flag.String("data", "/usr/share/datasets/fashion-mnist", "directory of the IDX files")
	epochs := flag.Int("epochs", 1, "epochs")
	flag.Parse()
	load := func(name string, dtype ch.Dtype, scale float64) *ch.Array {
		a, err := ch.ReadIDX(*dir+"/"+name, dtype, scale)
		check(err)
		return a
	}
	xTrain := load("train-images-idx3-ubyte.gz", ch.Float32, 1.0/255)
	tTrain := load("train-labels-idx1-ubyte.gz", ch.Int32, 1)
	xTest := load("t10k-images-idx3-ubyte.gz", ch.Float32, 1.0/255)
	tTest := load("t10k-labels-idx1-ubyte.gz", ch.Int32, 1)
	defer func() {
		for _, a := range []*ch.Array{xTrain, tTrain, xTest, tTest} {
			a.Close()
		}
	}()
	fmt.Printf("train %v, test %v from %s\n", xTrain.Shape(), xTest.Shape(), *dir)
	xtr, _ := ch.View[float32](xTrain)
	ttr, _ := ch.View[int32](tTrain)
	xte, _ := ch.View[float32](xTest)
	tte, _ := ch.View[int32](tTest)
	const d = 784

	ch.Seed(1)
	m := newMLP(100)
	opt, err := ch.NewAdamDefault()
	check(err)
	check(opt.Setup(m.set))
	rng := rand.New(rand.NewSource(1))
	for epoch := 1; epoch <= *epochs; epoch++ {
		order := rng.Perm(len(ttr))
		t0 := time.Now()
		var sumLoss, sumAcc float64
		batches := 0
		for b := 0; b < len(order); b += 100 {
			x, t := batch(xtr, ttr, d, order[b:b+100], false)
			y := m.forward(x)
			loss, err := ch.SoftmaxCrossEntropy(y, t)
			check(err)
			acc, err := ch.Accuracy(y, t)
			check(err)
			check(opt.ZeroGrads())
			check(loss.Backward())
			check(opt.Update())
			sumLoss += scalar(loss)
			sumAcc += scalar(acc)
			batches++
			for _, v := range []*ch.Variable{x, t, y, loss, acc} {
				v.Close()
			}
		}
		secs := time.Since(t0).Seconds()
		var correct, testLoss float64
		for b := 0; b < len(tte); b += 1000 {
			idx := make([]int, 1000)
			for i := range idx {
				idx[i] = b + i
			}
			x, t := batch(xte, tte, d, idx, true)
			y := m.forward(x)
			acc, err := ch.Accuracy(y, t)
			check(err)
			loss, err := ch.SoftmaxCrossEntropy(y, t)
			check(err)
			correct += scalar(acc) * 1000
			testLoss += scalar(loss) * 1000
			for _, v := range []*ch.Variable{x, t, y, acc, loss} {
				v.Close()
			}
		}
		fmt.Printf("epoch %d: train loss %.4f accuracy %.4f (%.0f samples/s); test loss %.4f accuracy %.4f\n",
			epoch, sumLoss/float64(batches), sumAcc/float64(batches), float64(len(ttr))/secs,
			testLoss/float64(len(tte)), correct/float64(len(tte)))
	}
	// keep the data arrays alive while their views were used
	_ = xTrain.Size() + tTrain.Size() + xTest.Size() + tTest.Size()
}
