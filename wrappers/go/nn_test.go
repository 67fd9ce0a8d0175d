package chainerc

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var nnTol = Tolerance{Eps: 1e-4, Atol: 1e-5, Rtol: 1e-4}

// away: values in [-1, 1) kept at least gap from 0 (kinks).
func away(n int, seed uint64, gap float64) []float64 {
	v := values(n, seed, -1, 1)
	for i := range v {
		if math.Abs(v[i]) < gap {
			v[i] += math.Copysign(gap, v[i])
		}
	}
	return v
}

func g1(f func(in []*Variable) (*Variable, error)) GraphFunc {
	return func(in []*Variable) ([]*Variable, error) {
		o, err := f(in)
		return []*Variable{o}, err
	}
}

func TestNNFunctionsCheckBackward(t *testing.T) {
	noLeak(t, func() {
		x := must(NewArray(away(12, 1, 0.1), 3, 4))
		defer x.Close()
		y := must(NewArray(values(12, 2, -1, 1), 3, 4))
		defer y.Close()
		unary := map[string]GraphFunc{
			"relu":      g1(func(v []*Variable) (*Variable, error) { return Relu(v[0]) }),
			"leaky":     g1(func(v []*Variable) (*Variable, error) { return LeakyRelu(v[0], 0.2) }),
			"sigmoid":   g1(func(v []*Variable) (*Variable, error) { return Sigmoid(v[0]) }),
			"tanh":      g1(func(v []*Variable) (*Variable, error) { return Tanh(v[0]) }),
			"softmax":   g1(func(v []*Variable) (*Variable, error) { return Softmax(v[0]) }),
			"transpose": g1(func(v []*Variable) (*Variable, error) { return Transpose(v[0], 1, 0) }),
			"copy":      g1(func(v []*Variable) (*Variable, error) { return Copy(v[0], CPU) }),
			"matmul":    g1(func(v []*Variable) (*Variable, error) { return MatMul(v[0], v[0], false, true) }),
		}
		for name, g := range unary {
			if err := CheckBackwardGraph(g, []*Array{x}, []*Array{nil}, nnTol); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		binary := map[string]GraphFunc{
			"concat":  g1(func(v []*Variable) (*Variable, error) { return Concat(v, 1) }),
			"matmulT": g1(func(v []*Variable) (*Variable, error) { return MatMul(v[0], v[1], true, false) }),
			"mse":     g1(func(v []*Variable) (*Variable, error) { return MeanSquaredError(v[0], v[1]) }),
		}
		for name, g := range binary {
			if err := CheckBackwardGraph(g, []*Array{x, y}, []*Array{nil}, nnTol); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		a := must(NewArray(values(24, 3, -1, 1), 2, 3, 4))
		defer a.Close()
		b := must(NewArray(values(16, 4, -1, 1), 2, 4, 2))
		defer b.Close()
		ok(t, CheckBackwardGraph(g1(func(v []*Variable) (*Variable, error) { return BatchMatMul(v[0], v[1], false, false) }),
			[]*Array{a, b}, []*Array{nil}, nnTol))
		c := must(NewArray(values(6, 5, -1, 1), 2, 3))
		defer c.Close()
		xs := must(NewArray(values(24, 6, -1, 1), 2, 12))
		defer xs.Close()
		ok(t, CheckBackwardGraph(func(v []*Variable) ([]*Variable, error) {
			c, h, err := LSTM(v[0], v[1])
			return []*Variable{c, h}, err
		}, []*Array{c, xs}, []*Array{nil, nil}, nnTol))
		// losses: softmax cross entropy (int32 labels are not checked)
		s := must(NewArray(values(12, 7, -2, 2), 4, 3))
		defer s.Close()
		lab := must(NewArray([]int32{0, 2, 1, 2}))
		defer lab.Close()
		ok(t, CheckBackwardGraph(g1(func(v []*Variable) (*Variable, error) { return SoftmaxCrossEntropy(v[0], v[1]) }),
			[]*Array{s, lab}, []*Array{nil}, nnTol))
		// pooling and normalization on distinct values
		pv := values(64, 8, -1, 1)
		for i := range pv {
			pv[i] += float64(i) * 0.01
		}
		p := must(NewArray(pv, 2, 2, 4, 4))
		defer p.Close()
		pool := map[string]GraphFunc{
			"max": g1(func(v []*Variable) (*Variable, error) { return MaxPooling2D(v[0], Pool2D{2, 2, 2, 2, 0, 0}, false) }),
			"avg": g1(func(v []*Variable) (*Variable, error) { return AveragePooling2D(v[0], Pool2D{3, 3, 1, 1, 1, 1}) }),
			"lrn": g1(func(v []*Variable) (*Variable, error) { return LocalResponseNormalization(v[0], 5, 2, 1e-4, 0.75) }),
		}
		for name, g := range pool {
			if err := CheckBackwardGraph(g, []*Array{p}, []*Array{nil}, nnTol); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
}

func TestAccuracyDropoutBatchNorm(t *testing.T) {
	noLeak(t, func() {
		y := must(VariableOf([]float32{0.9, 0.1, 0.2, 0.8, 0.5, 0.4}, 3, 2))
		defer y.Close()
		l := must(VariableOf([]int32{0, 1, 1}))
		defer l.Close()
		acc := must(Accuracy(y, l))
		defer acc.Close()
		if v := must(acc.Float32s()); math.Abs(float64(v[0])-2.0/3) > 1e-6 {
			t.Fatalf("accuracy %v", v)
		}
		bad := must(VariableOf([]int32{0, 1, 7}))
		defer bad.Close()
		if _, err := Accuracy(y, bad); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("got %v", err)
		}
		ones := must(Ones(Float32, 10000))
		defer ones.Close()
		ov := must(NewVariable(ones))
		defer ov.Close()
		Seed(3)
		d := must(Dropout(ov, 0.5, ModeTrain))
		defer d.Close()
		zeros := 0
		for _, v := range must(d.Float32s()) {
			if v == 0 {
				zeros++
			} else if math.Abs(float64(v)-2) > 1e-6 {
				t.Fatalf("kept value %v", v)
			}
		}
		if zeros < 4500 || zeros > 5500 {
			t.Fatalf("%d zeros", zeros)
		}
		dt := must(Dropout(ov, 0.5, ModeTest))
		defer dt.Close()
		if v := must(dt.Float32s()); v[0] != 1 {
			t.Fatal("test mode is the identity")
		}
		bn := must(NewBatchNormalization([]int64{2}, 0.9, 1e-5, Float64))
		defer bn.Close()
		xb := must(NewArray(values(8, 9, -3, 5), 4, 2))
		defer xb.Close()
		ok(t, CheckBackwardGraph(g1(func(v []*Variable) (*Variable, error) {
			return BatchNormalizationApply(bn, v[0], ModeTrain, false)
		}), []*Array{xb}, []*Array{nil}, Tolerance{1e-4, 1e-4, 1e-3}))
		m, va := must2(BatchNormalizationState(bn))
		defer m.Close()
		defer va.Close()
		if m.Size() != 2 || va.Size() != 2 {
			t.Fatal("state shapes")
		}
		ok(t, BatchNormalizationStartFinetuning(bn))
	})
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(mustFailure{err})
	}
	return a, b
}

func TestParameterizedBuiltins(t *testing.T) {
	noLeak(t, func() {
		w := must(NewArray([]float64{1, 2, 3, 4, 5, 6}, 2, 3))
		defer w.Close()
		b := must(NewArray([]float64{0.5, -0.5}))
		defer b.Close()
		o := DefaultLinear()
		o.Dtype, o.InitialW, o.InitialB = Float64, w, b
		lin := must(NewLinear(3, 2, o))
		defer lin.Close()
		x := must(VariableOf([]float64{1, 0, -1}, 1, 3))
		defer x.Close()
		yv := must(lin.Apply1(x))
		defer yv.Close()
		if v := must(yv.Float64s()); v[0] != -1.5 || v[1] != -2.5 {
			t.Fatalf("linear %v", v)
		}
		xs := must(NewArray(values(6, 10, -1, 1), 2, 3))
		defer xs.Close()
		ok(t, CheckBackward(lin, []*Array{xs}, nil, nnTol))
		co := DefaultConv()
		co.PH, co.PW, co.Dtype = 1, 1, Float64
		conv := must(NewConvolution2D(2, 3, 3, 3, co))
		defer conv.Close()
		xc := must(NewArray(values(64, 11, -1, 1), 2, 2, 4, 4))
		defer xc.Close()
		ok(t, CheckBackward(conv, []*Array{xc}, nil, nnTol))
		pr := must(NewPReLU([]int64{4}, Float64, 0.25))
		defer pr.Close()
		xp := must(NewArray(away(12, 12, 0.1), 3, 4))
		defer xp.Close()
		ok(t, CheckBackward(pr, []*Array{xp}, nil, nnTol))
		we := must(NewArray([]float64{0, 1, 10, 11, 20, 21}, 3, 2))
		defer we.Close()
		emb := must(NewEmbedID(3, 2, Float64, we))
		defer emb.Close()
		ids := must(VariableOf([]int32{2, 0}))
		defer ids.Close()
		e := must(emb.Apply1(ids))
		defer e.Close()
		if v := must(e.Float64s()); v[0] != 20 || v[3] != 1 {
			t.Fatalf("embed %v", v)
		}
		init := must(NewArray([]float64{1, 2}))
		defer init.Close()
		par := must(NewParameter(init))
		defer par.Close()
		pv := must(par.Apply1())
		defer pv.Close()
		if v := must(pv.Float64s()); v[1] != 2 {
			t.Fatalf("parameter %v", v)
		}
		Seed(2)
		inc := must(NewInception(2, 1, 1, 2, 1, 1, 1, Float64))
		defer inc.Close()
		if inc.ParameterCount() != 12 {
			t.Fatalf("inception parameters %d", inc.ParameterCount())
		}
		xi := must(NewArray(values(100, 14, -1, 1), 2, 2, 5, 5))
		defer xi.Close()
		ok(t, CheckBackward(inc, []*Array{xi}, nil, Tolerance{1e-4, 1e-4, 1e-3}))
		tree, nInternal := must2(CreateHuffmanTree([]float64{5, 1, 2, 8}))
		if nInternal != 3 || len(tree) != 6 {
			t.Fatalf("tree %v %d", tree, nInternal)
		}
		hs := must(NewBinaryHierarchicalSoftmax(3, tree, nInternal, Float64, nil))
		defer hs.Close()
		xh := must(NewArray(values(6, 13, -1, 1), 2, 3))
		defer xh.Close()
		th := must(NewArray([]int32{3, 1}))
		defer th.Close()
		ok(t, CheckBackward(hs, []*Array{xh, th}, nil, nnTol))
	})
}

func TestFunctionSetAndNPZ(t *testing.T) {
	noLeak(t, func() {
		dir := t.TempDir()
		Seed(1)
		mk := func() *FunctionSet {
			s := must(NewFunctionSet())
			l2 := must(NewLinear(4, 2, DefaultLinear()))
			defer l2.Close()
			l1 := must(NewLinear(3, 4, DefaultLinear()))
			defer l1.Close()
			ok(t, s.Add("l2", l2))
			ok(t, s.Add("l1", l1))
			enc := must(NewFunctionSet())
			defer enc.Close()
			o := DefaultLinear()
			o.NoBias = true
			lin := must(NewLinear(2, 2, o))
			defer lin.Close()
			ok(t, enc.Add("lin", lin))
			ok(t, s.AddSet("enc", enc))
			return s
		}
		model := mk()
		defer model.Close()
		names := must(model.MemberNames())
		if len(names) != 3 || names[0] != "enc" || names[2] != "l2" {
			t.Fatalf("members %v", names)
		}
		ps := must(model.Parameters())
		want := []string{"enc/lin/W", "l1/W", "l1/b", "l2/W", "l2/b"}
		for i, p := range ps {
			if p.Name != want[i] {
				t.Fatalf("paths %v", ps)
			}
			p.Close()
		}
		params, grads := must2(model.CollectParameters())
		defer closeAll(params)
		defer closeAll(grads)
		if len(params) != 5 {
			t.Fatalf("%d params", len(params))
		}
		f := must(model.Get("l1"))
		if f.Name() != "Linear" {
			t.Fatalf("member %q", f.Name())
		}
		f.Close()
		path := filepath.Join(dir, "model.npz")
		ok(t, model.SaveNPZ(path, true))
		saved := must(Values[float32](params[1]))
		for _, p := range params {
			ok(t, p.Fill(0))
		}
		ok(t, model.LoadNPZ(path))
		if got := must(Values[float32](params[1])); got[0] != saved[0] {
			t.Fatal("load restores")
		}
		entry := must(LoadNPZArray(path, "l1/W"))
		if got := must(Values[float32](entry)); got[3] != saved[3] {
			t.Fatal("numpy-compatible keys")
		}
		entry.Close()
		other := mk()
		defer other.Close()
		ok(t, other.CopyParametersFrom(model))
		if err := model.LoadNPZ(filepath.Join(dir, "missing.npz")); !errors.Is(err, ErrIO) {
			t.Fatalf("got %v", err)
		}
		a := must(NewArray([]float64{1, 2}))
		defer a.Close()
		ok(t, SaveNPZArrays(path, []string{"a"}, []*Array{a}, false))
		back := must(LoadNPZArray(path, "a"))
		defer back.Close()
		if v := must(Values[float64](back)); v[1] != 2 {
			t.Fatal("arrays roundtrip")
		}
		ok(t, model.ToCPU())
		// devices: a CUDA device without the CUDA backend is refused, nothing moves
		if err := model.ToGPU(CUDA(0)); err != nil && !errors.Is(err, ErrDevice) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("got %v", err)
		}
		xv := must(VariableOf([]float32{1, 2}))
		defer xv.Close()
		if c, err := Copy(xv, CUDA(0)); err != nil && !errors.Is(err, ErrDevice) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("got %v", err)
		} else if err == nil {
			c.Close() // a library with a CUDA device (the emulated one) made the copy
		}
		if _, err := Copy(xv, Device{Type: 99}); !errors.Is(err, ErrDevice) {
			t.Fatalf("unknown device type: %v", err)
		}
	})
}

// goSGD is a user-defined optimizer written in Go.
type goSGD struct{ lr float64 }

func (goSGD) StateNames() []string                    { return nil }
func (goSGD) InitState(_, _ *Array) ([]*Array, error) { return nil, nil }
func (o goSGD) UpdateOne(p, g *Array, _ []*Array, _ int64) error {
	pv, err := View[float64](p)
	if err != nil {
		return err
	}
	gv, err := View[float64](g)
	if err != nil {
		return err
	}
	for i := range pv {
		pv[i] -= o.lr * gv[i]
	}
	return nil
}

func TestEveryOptimizer(t *testing.T) {
	noLeak(t, func() {
		g0 := []float64{0.5, -2}
		type c struct {
			name string
			mk   func() (*Optimizer, error)
			want func(g float64) float64
		}
		cases := []c{
			{"SGD", func() (*Optimizer, error) { return NewSGD(0.1) }, func(g float64) float64 { return 1 - 0.1*g }},
			{"MomentumSGD", func() (*Optimizer, error) { return NewMomentumSGD(0.1, 0.9) }, func(g float64) float64 { return 1 - 0.1*g }},
			{"AdaGrad", func() (*Optimizer, error) { return NewAdaGrad(0.1, 1e-8) }, func(g float64) float64 { return 1 - 0.1*g/(math.Abs(g)+1e-8) }},
			{"AdaDelta", func() (*Optimizer, error) { return NewAdaDelta(0.95, 1e-6) }, func(g float64) float64 {
				return 1 - math.Sqrt(1e-6/(0.05*g*g+1e-6))*g
			}},
			{"Adam", NewAdamDefault, func(g float64) float64 {
				lr := 0.001 * math.Sqrt(1-0.999) / (1 - 0.9)
				return 1 - lr*0.1*g/(math.Sqrt(0.001*g*g)+1e-8)
			}},
			{"RMSprop", func() (*Optimizer, error) { return NewRMSprop(0.01, 0.99, 1e-8) }, func(g float64) float64 {
				return 1 - 0.01*g/(math.Sqrt(0.01*g*g)+1e-8)
			}},
			{"GoSGD", func() (*Optimizer, error) { return NewCustomOptimizer("GoSGD", goSGD{0.1}) }, func(g float64) float64 { return 1 - 0.1*g }},
		}
		for _, cs := range cases {
			opt := must(cs.mk())
			if opt.Name() != cs.name {
				t.Errorf("name %q", opt.Name())
			}
			w := must(NewArray([]float64{1, 1}))
			gw := must(NewArray(g0))
			ok(t, opt.SetupArrays([]*Array{w}, []*Array{gw}))
			ok(t, opt.Update())
			got := must(Values[float64](w))
			exp := []float64{cs.want(g0[0]), cs.want(g0[1])}
			if !close64(got, exp, 1e-9) || opt.T() != 1 {
				t.Errorf("%s: %v vs %v", cs.name, got, exp)
			}
			w.Close()
			gw.Close()
			// minimise sum((W - 3)^2): W of a Linear without bias applied to a one
			init := must(Zeros(Float64, 2, 1))
			lo := DefaultLinear()
			lo.Dtype, lo.NoBias, lo.InitialW = Float64, true, init
			par := must(NewLinear(1, 2, lo))
			init.Close()
			set := must(NewFunctionSet())
			ok(t, set.Add("p", par))
			ok(t, opt.Setup(set))
			if cs.name == "Adam" {
				ok(t, opt.SetHyperparam("alpha", 0.05))
			}
			if cs.name == "AdaGrad" {
				ok(t, opt.SetHyperparam("lr", 0.5))
			}
			one := must(VariableOf([]float64{1}, 1, 1))
			target := must(VariableOf([]float64{3, 3}, 1, 2))
			steps := 600
			if cs.name == "AdaDelta" {
				steps = 3000
			}
			var last float64
			for i := 0; i < steps; i++ {
				ok(t, opt.ZeroGrads())
				pv := must(par.Apply1(one))
				d := must(Sub(pv, target))
				d2 := must(Mul(d, d))
				loss := must(Sum(d2))
				ok(t, loss.Backward())
				ok(t, opt.Update())
				last = must(loss.Float64s())[0]
				for _, v := range []*Variable{pv, d, d2, loss} {
					v.Close()
				}
			}
			if last > 1e-2 {
				t.Errorf("%s: loss %v after %d steps", cs.name, last, steps)
			}
			target.Close()
			one.Close()
			set.Close()
			par.Close()
			opt.Close()
		}
		adam := must(NewAdamDefault())
		defer adam.Close()
		for name, want := range map[string]float64{"alpha": 0.001, "beta1": 0.9, "beta2": 0.999, "lam": 0.99999999, "eps": 1e-8} {
			if v := must(adam.Hyperparam(name)); v != want {
				t.Errorf("Adam default %s = %v, want %v", name, v, want)
			}
		}
		opt := must(NewMomentumSGD(0.01, 0.9))
		defer opt.Close()
		if v := must(opt.Hyperparam("momentum")); v != 0.9 {
			t.Fatalf("momentum %v", v)
		}
		if _, err := opt.Hyperparam("nope"); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("got %v", err)
		}
		w := must(NewArray([]float64{1, 1}))
		defer w.Close()
		gw := must(NewArray([]float64{3, 4}))
		defer gw.Close()
		ok(t, opt.SetupArrays([]*Array{w}, []*Array{gw}))
		if n := must(opt.GradsNorm()); math.Abs(n-5) > 1e-12 {
			t.Fatalf("norm %v", n)
		}
		ok(t, opt.ClipGrads(1))
		ok(t, opt.WeightDecay(0.1))
		if v := must(Values[float64](gw)); !close64(v, []float64{0.7, 0.9}, 1e-12) {
			t.Fatalf("clip + decay %v", v)
		}
		key, st := must2(opt.State(0))
		st.Close()
		if key != "0/v" || opt.StateCount() != 1 {
			t.Fatalf("state key %q", key)
		}
		if _, err := NewSGD(-1); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestOptimizerCheckpoint(t *testing.T) {
	noLeak(t, func() {
		path := filepath.Join(t.TempDir(), "opt.npz")
		w := must(NewArray([]float64{1, 1}))
		defer w.Close()
		gw := must(NewArray([]float64{0.5, -0.5}))
		defer gw.Close()
		opt := must(NewAdamDefault())
		defer opt.Close()
		ok(t, opt.SetupArrays([]*Array{w}, []*Array{gw}))
		for i := 0; i < 3; i++ {
			ok(t, opt.Update())
		}
		ok(t, opt.NewEpoch())
		if opt.Epoch() != 1 {
			t.Fatalf("epoch %d", opt.Epoch())
		}
		ok(t, opt.SaveNPZ(path, false))
		again := must(NewAdamDefault())
		defer again.Close()
		ok(t, again.SetupArrays([]*Array{w}, []*Array{gw}))
		ok(t, again.LoadNPZ(path))
		if again.T() != 3 || again.Epoch() != 1 {
			t.Fatalf("t = %d, epoch = %d", again.T(), again.Epoch())
		}
	})
}

func TestReadIDX(t *testing.T) {
	path := "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
	if _, err := os.Stat(path); err != nil {
		t.Skip("Fashion-MNIST not installed")
	}
	noLeak(t, func() {
		labels := must(ReadIDX(path, Int32, 1))
		defer labels.Close()
		if s := labels.Shape(); len(s) != 1 || s[0] != 10000 {
			t.Fatalf("shape %v", s)
		}
		for _, l := range must(View[int32](labels)) {
			if l < 0 || l > 9 {
				t.Fatalf("label %d", l)
			}
		}
		if _, err := ReadIDX("/nonexistent.idx", Float32, 1); !errors.Is(err, ErrIO) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestMLP10000StepsFlatMemory(t *testing.T) {
	noLeak(t, func() {
		Seed(5)
		l1 := must(NewLinear(4, 16, DefaultLinear()))
		defer l1.Close()
		l2 := must(NewLinear(16, 3, DefaultLinear()))
		defer l2.Close()
		model := must(NewFunctionSet())
		defer model.Close()
		ok(t, model.Add("l1", l1))
		ok(t, model.Add("l2", l2))
		opt := must(NewMomentumSGD(0.05, 0.9))
		defer opt.Close()
		ok(t, opt.Setup(model))
		const n = 8
		var first, last float64
		var warm [2]int64
		for step := 0; step < 10000; step++ {
			raw := values(n*4, uint64(step), -1, 1)
			xs := make([]float32, len(raw))
			for i, v := range raw {
				xs[i] = float32(v)
			}
			ts := make([]int32, n)
			for i := 0; i < n; i++ {
				best := 0
				for k := 1; k < 3; k++ {
					if xs[4*i+k] > xs[4*i+best] {
						best = k
					}
				}
				ts[i] = int32(best)
			}
			x := must(VariableOf(xs, n, 4))
			tv := must(VariableOf(ts))
			a := must(l1.Apply1(x))
			h := must(Relu(a))
			y := must(l2.Apply1(h))
			loss := must(SoftmaxCrossEntropy(y, tv))
			ok(t, opt.ZeroGrads())
			ok(t, loss.Backward())
			ok(t, opt.Update())
			l := float64(must(loss.Float32s())[0])
			if step < 100 {
				first += l / 100
			}
			if step >= 9900 {
				last += l / 100
			}
			for _, v := range []*Variable{x, tv, a, h, y, loss} {
				v.Close()
			}
			if step == 100 {
				warm = [2]int64{LiveHandles(), must(GetMemoryStats(CPU)).BytesInUse}
			}
		}
		end := [2]int64{LiveHandles(), must(GetMemoryStats(CPU)).BytesInUse}
		if end[0] > warm[0] || end[1] > warm[1] {
			t.Fatalf("after warm-up %v, at the end %v (handles, bytes)", warm, end)
		}
		if !(last < 0.5*first) {
			t.Fatalf("mean loss %v at the start, %v at the end", first, last)
		}
	})
}

// goMomentum is momentum SGD written in Go with one state array "v".
type goMomentum struct{ lr, momentum float64 }

func (goMomentum) StateNames() []string { return []string{"v"} }
func (goMomentum) InitState(p, _ *Array) ([]*Array, error) {
	z, err := FullLike(p, 0)
	return []*Array{z}, err
}
func (o goMomentum) UpdateOne(p, g *Array, st []*Array, _ int64) error {
	pv, gv, vv := must(View[float64](p)), must(View[float64](g)), must(View[float64](st[0]))
	for i := range pv {
		vv[i] = o.momentum*vv[i] - o.lr*gv[i]
		pv[i] += vv[i]
	}
	return nil
}

type badOptimizer struct{}

func (badOptimizer) StateNames() []string                    { return nil }
func (badOptimizer) InitState(_, _ *Array) ([]*Array, error) { return nil, nil }
func (badOptimizer) UpdateOne(_, _ *Array, _ []*Array, t int64) error {
	panic("update exploded")
}

func TestCustomOptimizerWithState(t *testing.T) {
	noLeak(t, func() {
		ours := must(NewCustomOptimizer("GoMomentum", goMomentum{0.1, 0.9}))
		defer ours.Close()
		theirs := must(NewMomentumSGD(0.1, 0.9))
		defer theirs.Close()
		w1 := must(NewArray([]float64{1, -1}))
		defer w1.Close()
		w2 := must(NewArray([]float64{1, -1}))
		defer w2.Close()
		g := must(NewArray([]float64{0.5, 0.25}))
		defer g.Close()
		ok(t, ours.SetupArrays([]*Array{w1}, []*Array{g}))
		ok(t, theirs.SetupArrays([]*Array{w2}, []*Array{g}))
		for i := 0; i < 3; i++ {
			ok(t, ours.Update())
			ok(t, theirs.Update())
		}
		if !close64(must(Values[float64](w1)), must(Values[float64](w2)), 1e-12) {
			t.Fatal("GoMomentum differs from MomentumSGD")
		}
		key, st := must2(ours.State(0))
		st.Close()
		if key != "0/v" {
			t.Fatalf("key %q", key)
		}
		bad := must(NewCustomOptimizer("Bad", badOptimizer{}))
		defer bad.Close()
		ok(t, bad.SetupArrays([]*Array{w1}, []*Array{g}))
		err := bad.Update()
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "update exploded" {
			t.Fatalf("got %v", err)
		}
	})
}

// Parameters get their gradients whatever the inputs' requires_grad:
// Parameter (no input at all) and a Linear applied to data that requires no
// gradient.
func TestParametersGetGradientsWhenInputsRequireNone(t *testing.T) {
	noLeak(t, func() {
		init := must(NewArray([]float64{1, 2}))
		defer init.Close()
		p := must(NewParameter(init))
		defer p.Close()
		pv := must(p.Apply1())
		defer pv.Close()
		y := must(MulScalar(pv, 3))
		defer y.Close()
		s := must(Sum(y))
		defer s.Close()
		ok(t, s.Backward())
		w := must(p.Param("W"))
		defer w.Close()
		if g := must(Values[float64](w.Grad)); g[0] != 3 || g[1] != 3 {
			t.Errorf("Parameter's gradient %v, want [3 3]", g)
		}
		wi := must(NewArray([]float64{1, 2}, 1, 2))
		defer wi.Close()
		lo := DefaultLinear()
		lo.Dtype, lo.NoBias, lo.InitialW = Float64, true, wi
		lin := must(NewLinear(2, 1, lo))
		defer lin.Close()
		x := must(VariableOf([]float64{5, 7}, 1, 2))
		defer x.Close()
		ok(t, x.SetRequiresGrad(false))
		ly := must(lin.Apply1(x))
		defer ly.Close()
		ls := must(Sum(ly))
		defer ls.Close()
		ok(t, ls.Backward())
		lw := must(lin.Param("W"))
		defer lw.Close()
		if g := must(Values[float64](lw.Grad)); g[0] != 5 || g[1] != 7 {
			t.Errorf("Linear's W gradient %v, want [5 7]", g)
		}
	})
}

// The weights' SGD step taken in backward gives the usual loop's parameters.
func TestSGDStepInBackwardMatchesTheUsualLoop(t *testing.T) {
	run := func(inBackward bool) [][]float64 {
		model := must(NewFunctionSet())
		defer model.Close()
		var layers []*Function
		for i, io := range [][2]int64{{6, 5}, {5, 3}} {
			w := must(NewArray(values(int(io[0]*io[1]), uint64(i+1), -0.5, 0.5), io[1], io[0]))
			lo := DefaultLinear()
			lo.Dtype, lo.InitialW = Float64, w
			l := must(NewLinear(io[0], io[1], lo))
			w.Close()
			defer l.Close()
			ok(t, model.Add([]string{"l1", "l2"}[i], l))
			layers = append(layers, l)
		}
		opt := must(NewSGD(0.2))
		defer opt.Close()
		ok(t, opt.Setup(model))
		ok(t, opt.SetStepInBackward(inBackward))
		if opt.StepInBackward() != inBackward {
			t.Fatalf("StepInBackward() is %v", opt.StepInBackward())
		}
		for step := 0; step < 4; step++ {
			ok(t, opt.ZeroGrads())
			x := must(VariableOf(values(48, uint64(10+step), -1, 1), 8, 6))
			tv := must(VariableOf([]int32{0, 1, 2, 0, 1, 2, 1, 0}))
			a := must(layers[0].Apply1(x))
			h := must(Relu(a))
			y := must(layers[1].Apply1(h))
			loss := must(SoftmaxCrossEntropy(y, tv))
			ok(t, loss.Backward())
			if (opt.ClipGrads(1) != nil) != inBackward {
				t.Fatalf("ClipGrads after backward: an error is expected exactly with the step in backward")
			}
			ok(t, opt.Update())
			for _, v := range []*Variable{x, tv, a, h, y, loss} {
				v.Close()
			}
		}
		var out [][]float64
		for _, p := range must(model.Parameters()) {
			out = append(out, must(Values[float64](p.Param)))
			p.Close()
		}
		return out
	}
	noLeak(t, func() {
		usual, stepped := run(false), run(true)
		for i := range usual {
			if !close64(usual[i], stepped[i], 1e-12) {
				t.Fatalf("parameter %d: %v vs %v", i, usual[i], stepped[i])
			}
		}
		if close64(usual[0], values(30, 1, -0.5, 0.5), 1e-3) {
			t.Fatalf("the weights did not move")
		}
		adam := must(NewAdamDefault())
		defer adam.Close()
		if adam.SetStepInBackward(true) == nil {
			t.Fatalf("Adam took a step in backward")
		}
	})
}

// One step from w = 1 with gradient g, by Chainer 7's AdamRule and
// NesterovAG.update_core_cpu (the C suite's references are cross-checked with
// Chainer 7 itself).
func TestChainer7OptimizersFollowChainer7sRules(t *testing.T) {
	g0 := []float64{0.5, -2}
	adamw := func(g float64) float64 {
		m, v := 0.1*g, 0.001*g*g
		lr := 0.01 * math.Sqrt(1-0.999) / (1 - 0.9)
		return (1 - 0.5*0.1) - 0.5*(lr/(math.Sqrt(v)+1e-8)*m)
	}
	o := DefaultAdamOptions()
	o.Alpha, o.Eta, o.WeightDecayRate = 0.01, 0.5, 0.1
	ams := o
	ams.AMSGrad = true
	cases := []struct {
		name   string
		mk     func() (*Optimizer, error)
		want   func(float64) float64
		states int
	}{
		{"NesterovAG", func() (*Optimizer, error) { return NewNesterovAG(0.1, 0.5) },
			func(g float64) float64 { return 1 + 0.25*(-0.1*g) - 1.5*0.1*g }, 1},
		{"Adam", func() (*Optimizer, error) { return NewAdamWith(&o) }, adamw, 2},
		{"Adam", func() (*Optimizer, error) { return NewAdamWith(&ams) }, adamw, 3},
	}
	for _, cs := range cases {
		opt := must(cs.mk())
		if opt.Name() != cs.name {
			t.Errorf("name %q", opt.Name())
		}
		w := must(NewArray([]float64{1, 1}))
		gw := must(NewArray(g0))
		ok(t, opt.SetupArrays([]*Array{w}, []*Array{gw}))
		ok(t, opt.Update())
		got := must(Values[float64](w))
		exp := []float64{cs.want(g0[0]), cs.want(g0[1])}
		if !close64(got, exp, 1e-12) || opt.StateCount() != cs.states {
			t.Errorf("%s: %v vs %v, %d states", cs.name, got, exp, opt.StateCount())
		}
		w.Close()
		gw.Close()
		opt.Close()
	}
	d := must(NewAdamWith(nil))
	defer d.Close()
	if v := must(d.Hyperparam("lam")); v != 1 {
		t.Errorf("default lam %v", v)
	}
	if err := d.SetHyperparam("amsgrad", 1); err == nil {
		t.Error("amsgrad was set")
	}
	bad := DefaultAdamOptions()
	bad.WeightDecayRate = -1
	if _, err := NewAdamWith(&bad); err == nil {
		t.Error("negative weight_decay_rate accepted")
	}
}
