package chainerc

import (
	"os"
	"testing"
)

// The seed's MulAdd (section 1.4.2) with its GPU half written as user
// kernels on the device: forward w = x*y + z, backward gx = y*gw, gy = x*gw,
// gz = gw. The GPU methods check what the callback context gives them.
type gpuMulAdd struct {
	t        *testing.T
	fwd, bwd *ElementwiseKernel
	gpuCalls int
}

func (m *gpuMulAdd) Forward(ctx *Context, in []*Array) ([]*Array, error) {
	m.t.Error("the generic Forward ran although ForwardGPU exists")
	return nil, nil
}

func (m *gpuMulAdd) Backward(ctx *Context, in, out, gout []*Array) ([]*Array, error) {
	m.t.Error("the generic Backward ran although BackwardGPU exists")
	return nil, nil
}

func (m *gpuMulAdd) checkContext(ctx *Context, in []*Array) {
	m.gpuCalls++
	if d := ctx.Device(); d != CUDA(0) {
		m.t.Errorf("Context.Device() = %+v in a GPU callback, want cuda:0", d)
	}
	if s, want := ctx.Stream(), EngineStream(0); s == nil || s != want {
		m.t.Errorf("Context.Stream() = %v, want cuda:0's engine stream %v", s, want)
	}
	if cur, err := CurrentDevice(); err != nil || cur != 0 {
		m.t.Errorf("current device in a GPU callback: %d, %v", cur, err)
	}
	for _, a := range in {
		if a.Device() != CUDA(0) || a.DataPointer() == nil {
			m.t.Errorf("GPU callback input on %+v, data %v", a.Device(), a.DataPointer())
		}
	}
}

func (m *gpuMulAdd) ForwardGPU(ctx *Context, in []*Array) ([]*Array, error) {
	m.checkContext(ctx, in)
	return m.fwd.Call(in, nil)
}

func (m *gpuMulAdd) BackwardGPU(ctx *Context, in, out, gout []*Array) ([]*Array, error) {
	m.checkContext(ctx, in)
	gxy, err := m.bwd.Call([]*Array{in[0], in[1], gout[0]}, nil)
	if err != nil {
		return nil, err
	}
	return []*Array{gxy[0], gxy[1], gout[0]}, nil
}

func TestGPUCallbackMulAddWithUserKernels(t *testing.T) {
	if DeviceCount() == 0 || !KernelCUDASupported() {
		if os.Getenv("CH_REQUIRE_GPU") == "1" {
			t.Fatalf("CH_REQUIRE_GPU=1 but no CUDA device: %s", UnavailableReason())
		}
		t.Skip("no CUDA device with user kernels: " + UnavailableReason())
	}
	fwd := must(NewElementwiseKernel("float64 x, float64 y, float64 z", "float64 w",
		"w = x * y + z", "muladd_fwd"))
	defer fwd.Close()
	bwd := must(NewElementwiseKernel("float64 x, float64 y, float64 gw", "float64 gx, float64 gy",
		"gx = y * gw; gy = x * gw", "muladd_bwd"))
	defer bwd.Close()
	impl := &gpuMulAdd{t: t, fwd: fwd, bwd: bwd}
	f := must(NewFunction("MulAdd", impl))
	defer f.Close()
	var ins []*Array
	for k := 0; k < 3; k++ {
		host := make([]float64, 35)
		for i := range host {
			host[i] = float64((i*7+k*13)%11)/5 - 1
		}
		h := must(NewArray(host, 5, 7))
		ins = append(ins, must(h.ToDevice(CUDA(0))))
		h.Close()
	}
	ok(t, CheckBackward(f, ins, nil, Tolerance{Eps: 1e-6, Atol: 1e-8, Rtol: 1e-6}))
	if impl.gpuCalls == 0 {
		t.Fatal("CheckBackward on cuda:0 never called the GPU callbacks")
	}
	for _, a := range ins {
		a.Close()
	}
}

// trainOn runs five momentum-SGD steps of a Linear + ReLU + softmax cross
// entropy loop on `dev` (the model moved there with ToGPU, each batch with
// ToDevice) and returns the final parameters.
func trainOn(t *testing.T, dev Device) [][]float32 {
	w := must(NewArray([]float32{-0.5, -0.4, -0.3, -0.2, -0.1, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, 3, 4))
	defer w.Close()
	b := must(NewArray([]float32{0.1, -0.2, 0.3}))
	defer b.Close()
	o := DefaultLinear()
	o.InitialW, o.InitialB = w, b
	l1 := must(NewLinear(4, 3, o))
	defer l1.Close()
	model := must(NewFunctionSet())
	defer model.Close()
	ok(t, model.Add("l1", l1))
	if dev != CPU {
		ok(t, model.ToGPU(dev))
	}
	opt := must(NewMomentumSGD(0.1, 0.9))
	defer opt.Close()
	ok(t, opt.Setup(model))
	for step := 0; step < 5; step++ {
		xs := make([]float32, 8*4)
		for i := range xs {
			xs[i] = float32((i*7+step)%11) / 11
		}
		ts := make([]int32, 8)
		for i := range ts {
			ts[i] = int32((i + step) % 3)
		}
		xh := must(NewArray(xs, 8, 4))
		th := must(NewArray(ts, 8))
		xd := must(xh.ToDevice(dev))
		td := must(th.ToDevice(dev))
		x := must(NewVariable(xd))
		tv := must(NewVariable(td))
		a := must(l1.Apply1(x))
		h := must(Relu(a))
		loss := must(SoftmaxCrossEntropy(h, tv))
		ok(t, opt.ZeroGrads())
		ok(t, loss.Backward())
		ok(t, opt.Update())
		for _, v := range []*Variable{x, tv, a, h, loss} {
			v.Close()
		}
		for _, arr := range []*Array{xh, th, xd, td} {
			arr.Close()
		}
	}
	params := must(model.Parameters())
	out := [][]float32{}
	for _, p := range params {
		out = append(out, must(Values[float32](p.Param)))
		p.Close()
	}
	return out
}

// A training loop written for the CPU runs on cuda:0 by moving its model and
// data, and ends with the CPU's parameters.
func TestGPUTrainingLoopMatchesTheCPU(t *testing.T) {
	if DeviceCount() == 0 {
		t.Skip("no CUDA device")
	}
	noLeak(t, func() {
		onCPU, onGPU := trainOn(t, CPU), trainOn(t, CUDA(0))
		if len(onCPU) != len(onGPU) {
			t.Fatalf("%d parameters on the CPU, %d on the GPU", len(onCPU), len(onGPU))
		}
		for i := range onCPU {
			for k := range onCPU[i] {
				if d := onCPU[i][k] - onGPU[i][k]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("parameter %d element %d: %v on the CPU, %v on cuda:0", i, k, onCPU[i][k], onGPU[i][k])
				}
			}
		}
		if onCPU[1][0] == 0.1 && onCPU[1][1] == -0.2 {
			t.Fatalf("the loop did not train: l1/b %v", onCPU[1])
		}
	})
}
