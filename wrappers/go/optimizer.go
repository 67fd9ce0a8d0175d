package chainerc

/*
#include <stdlib.h>
#include "capi_gen.h"
#include "capi_extra.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// Optimizer is SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop or a Go
// optimizer (OptimizerImpl). It keeps references to the parameter arrays it
// was set up with and updates them in place.
type Optimizer struct {
	p *C.ch_optimizer
}

func newOptimizer(r C.gres) (*Optimizer, error) {
	if err := errOf(r); err != nil {
		return nil, err
	}
	o := &Optimizer{p: (*C.ch_optimizer)(r.out)}
	runtime.SetFinalizer(o, (*Optimizer).Close)
	return o, nil
}

// NewSGD (Chainer's default lr 0.01).
func NewSGD(lr float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_sgd_new(C.double(lr)))
}

// NewMomentumSGD (lr 0.01, momentum 0.9).
func NewMomentumSGD(lr, momentum float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_momentum_sgd_new(C.double(lr), C.double(momentum)))
}

// NewAdaGrad (lr 0.001, eps 1e-8).
func NewAdaGrad(lr, eps float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_adagrad_new(C.double(lr), C.double(eps)))
}

// NewAdaDelta (rho 0.95, eps 1e-6).
func NewAdaDelta(rho, eps float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_adadelta_new(C.double(rho), C.double(eps)))
}

// NewAdam (alpha 0.001, beta1 0.9, beta2 0.999, lam 1-1e-8, eps 1e-8).
func NewAdam(alpha, beta1, beta2, lam, eps float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_adam_new(C.double(alpha), C.double(beta1), C.double(beta2), C.double(lam), C.double(eps)))
}

// NewNesterovAG is Chainer 7's NesterovAG (lr 0.01, momentum 0.9).
func NewNesterovAG(lr, momentum float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_nesterov_ag_new(C.double(lr), C.double(momentum)))
}

// AdamOptions are Chainer 7's Adam hyperparameters (ch_adam_options):
// WeightDecayRate > 0 is decoupled weight decay (AdamW), Eta scales the step,
// AMSGrad divides by the running maximum of v (fixed for the optimizer's life),
// Lam is the seed's decay of beta1 (1: none).
type AdamOptions struct {
	Alpha, Beta1, Beta2, Eps, Eta, WeightDecayRate float64
	AMSGrad                                        bool
	Lam                                            float64
}

// DefaultAdamOptions are Chainer 7's defaults.
func DefaultAdamOptions() AdamOptions {
	return AdamOptions{Alpha: 0.001, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Eta: 1, Lam: 1}
}

// NewAdamWith is Chainer 7's Adam (AdamW with WeightDecayRate, AMSGrad);
// nil options are DefaultAdamOptions().
func NewAdamWith(o *AdamOptions) (*Optimizer, error) {
	if o == nil {
		d := DefaultAdamOptions()
		o = &d
	}
	ams := C.int32_t(0)
	if o.AMSGrad {
		ams = 1
	}
	c := C.ch_adam_options{version: 1, alpha: C.double(o.Alpha), beta1: C.double(o.Beta1),
		beta2: C.double(o.Beta2), eps: C.double(o.Eps), eta: C.double(o.Eta),
		weight_decay_rate: C.double(o.WeightDecayRate), amsgrad: ams, lam: C.double(o.Lam)}
	return newOptimizer(C.g_ch_optimizer_adam_new_ex(&c))
}

// The seed's defaults (CH_*_DEFAULT_* in optimizer.h). They are spelled out
// here: cgo reads floating-point macros such as 1e-8 as 0.
const (
	SGDDefaultLR             = 0.01
	MomentumSGDDefaultLR     = 0.01
	MomentumSGDDefaultMoment = 0.9
	AdaGradDefaultLR         = 0.001
	AdaGradDefaultEps        = 1e-8
	AdaDeltaDefaultRho       = 0.95
	AdaDeltaDefaultEps       = 1e-6
	AdamDefaultAlpha         = 0.001
	AdamDefaultBeta1         = 0.9
	AdamDefaultBeta2         = 0.999
	AdamDefaultLam           = 0.99999999
	AdamDefaultEps           = 1e-8
	RMSpropDefaultLR         = 0.01
	RMSpropDefaultAlpha      = 0.99
	RMSpropDefaultEps        = 1e-8
)

// NewAdamDefault is Adam with the seed's defaults.
func NewAdamDefault() (*Optimizer, error) {
	return NewAdam(AdamDefaultAlpha, AdamDefaultBeta1, AdamDefaultBeta2, AdamDefaultLam, AdamDefaultEps)
}

// NewRMSprop (lr 0.01, alpha 0.99, eps 1e-8).
func NewRMSprop(lr, alpha, eps float64) (*Optimizer, error) {
	return newOptimizer(C.g_ch_optimizer_rmsprop_new(C.double(lr), C.double(alpha), C.double(eps)))
}

// OptimizerImpl is an optimizer rule written in Go (the seed's Optimizer
// subclass). The arrays passed are borrowed for the call.
type OptimizerImpl interface {
	// StateNames names each parameter's state arrays (checkpoint keys).
	StateNames() []string
	// InitState returns the state arrays of one parameter (handed to the
	// engine); return nil for zeros like the parameter.
	InitState(param, grad *Array) ([]*Array, error)
	// UpdateOne updates param in place at step t.
	UpdateOne(param, grad *Array, states []*Array, t int64) error
}

// NewCustomOptimizer makes an optimizer from a Go implementation.
func NewCustomOptimizer(name string, impl OptimizerImpl) (*Optimizer, error) {
	names := impl.StateNames()
	cn := make([]*C.char, len(names))
	for i, n := range names {
		cn[i] = C.CString(n)
		defer C.free(unsafe.Pointer(cn[i]))
	}
	// The list of C strings is copied by ch_optimizer_new; it is built in C
	// memory so that the definition struct handed to C holds no Go pointer.
	var list **C.char
	if len(cn) > 0 {
		list = (**C.char)(C.malloc(C.size_t(len(cn)) * C.size_t(unsafe.Sizeof(cn[0]))))
		defer C.free(unsafe.Pointer(list))
		copy(unsafe.Slice(list, len(cn)), cn)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h := cgo.NewHandle(impl)
	return newOptimizer(C.gch_optimizer_new(cname, C.uintptr_t(h), C.size_t(len(names)), list))
}

//export chainercGoOptInit
func chainercGoOptInit(user C.uintptr_t, param, grad *C.ch_array, states **C.ch_array, n C.size_t) C.ch_status {
	return guard(func() error {
		impl := cgo.Handle(user).Value().(OptimizerImpl)
		p, g := borrowedArray(param), borrowedArray(grad)
		st, err := impl.InitState(p, g)
		if err != nil {
			consume(st)
			return err
		}
		if st == nil {
			for i := 0; i < int(n); i++ {
				z, err := Zeros(p.Dtype(), p.Shape()...)
				if err != nil {
					consume(st)
					return err
				}
				st = append(st, z)
			}
		}
		if len(st) != int(n) {
			consume(st)
			return NewError(ErrCallback, "InitState made %d arrays, %d expected", len(st), int(n))
		}
		dst := unsafe.Slice(states, int(n))
		for i, a := range st {
			dst[i] = C.ch_array_retain(a.p)
		}
		consume(st)
		return nil
	})
}

//export chainercGoOptUpdate
func chainercGoOptUpdate(user C.uintptr_t, param, grad *C.ch_array, states **C.ch_array, n C.size_t, t C.int64_t) C.ch_status {
	return guard(func() error {
		impl := cgo.Handle(user).Value().(OptimizerImpl)
		return impl.UpdateOne(borrowedArray(param), borrowedArray(grad), borrowedArrays(states, n), int64(t))
	})
}

// Close releases the handle (idempotent).
func (o *Optimizer) Close() {
	if o == nil || o.p == nil {
		return
	}
	C.ch_optimizer_release(o.p)
	o.p = nil
	runtime.SetFinalizer(o, nil)
}

// Name is "SGD", "Adam", ... or a custom optimizer's name.
func (o *Optimizer) Name() string {
	s := C.GoString(C.ch_optimizer_name(o.p))
	runtime.KeepAlive(o)
	return s
}

// Hyperparam reads a hyperparameter ("lr", "momentum", "eps", ...).
func (o *Optimizer) Hyperparam(name string) (float64, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	r := C.g_ch_optimizer_get_hyperparam(o.p, cs)
	runtime.KeepAlive(o)
	if err := errOf(r); err != nil {
		return 0, err
	}
	return float64(r.d), nil
}

// SetHyperparam sets one.
func (o *Optimizer) SetHyperparam(name string, v float64) error {
	defer runtime.KeepAlive(o)
	return withCString(name, func(n *C.char) C.gres { return C.g_ch_optimizer_set_hyperparam(o.p, n, C.double(v)) })
}

// Setup with every parameter of a set (fresh state, t = 0).
func (o *Optimizer) Setup(s *FunctionSet) error {
	r := C.g_ch_optimizer_setup(o.p, s.p)
	runtime.KeepAlive(o)
	runtime.KeepAlive(s)
	return errOf(r)
}

// SetupArrays with parameter and gradient arrays.
func (o *Optimizer) SetupArrays(params, grads []*Array) error {
	if len(params) != len(grads) {
		return NewError(ErrInvalidArgument, "%d parameters and %d gradients", len(params), len(grads))
	}
	ps, gs := arrayPtrs(params), arrayPtrs(grads)
	r := C.g_ch_optimizer_setup_arrays(o.p, firstArr(ps), firstArr(gs), C.size_t(len(ps)))
	runtime.KeepAlive(o)
	runtime.KeepAlive(params)
	runtime.KeepAlive(grads)
	return errOf(r)
}

// ParameterCount is the number of parameters set up.
func (o *Optimizer) ParameterCount() int {
	n := int(C.ch_optimizer_parameter_count(o.p))
	runtime.KeepAlive(o)
	return n
}

// Parameter i with its path.
func (o *Optimizer) Parameter(i int) (Parameter, error) {
	var p, g *C.ch_array
	var path *C.char
	r := C.g_ch_optimizer_parameter(&p, &g, &path, o.p, C.size_t(i))
	defer runtime.KeepAlive(o)
	if err := errOf(r); err != nil {
		return Parameter{}, err
	}
	return Parameter{Name: C.GoString(path), Param: newArray(unsafe.Pointer(p)), Grad: newArray(unsafe.Pointer(g))}, nil
}

// T is the number of update steps done.
func (o *Optimizer) T() int64 {
	t := int64(C.ch_optimizer_t(o.p))
	runtime.KeepAlive(o)
	return t
}

// Epoch is the number of epochs finished (saved in checkpoints).
func (o *Optimizer) Epoch() int64 {
	e := int64(C.ch_optimizer_epoch(o.p))
	runtime.KeepAlive(o)
	return e
}

// NewEpoch: epoch += 1 (Chainer's new_epoch).
func (o *Optimizer) NewEpoch() error {
	r := C.g_ch_optimizer_new_epoch(o.p)
	runtime.KeepAlive(o)
	return errOf(r)
}

// SetT sets t (resuming).
func (o *Optimizer) SetT(t int64) error {
	r := C.g_ch_optimizer_set_t(o.p, C.int64_t(t))
	runtime.KeepAlive(o)
	return errOf(r)
}

// ZeroGrads fills every gradient with zeros.
func (o *Optimizer) ZeroGrads() error {
	r := C.g_ch_optimizer_zero_grads(o.p)
	runtime.KeepAlive(o)
	return errOf(r)
}

// SetStepInBackward takes plain SGD's step inside backward
// (ch_optimizer_set_step_in_backward): in a step with ZeroGrads before backward, each Linear
// weight applied once is stepped by one GEMM into W and its gradient is not
// written, so the gradient utilities fail until Update. Errors for other
// optimizers.
func (o *Optimizer) SetStepInBackward(enable bool) error {
	r := C.g_ch_optimizer_set_step_in_backward(o.p, C.int(cBool(enable)))
	runtime.KeepAlive(o)
	return errOf(r)
}

// StepInBackward reports whether SGD's step is taken inside backward.
func (o *Optimizer) StepInBackward() bool {
	r := C.ch_optimizer_step_in_backward(o.p)
	runtime.KeepAlive(o)
	return r != 0
}

// Update: t += 1, then every parameter is updated in place.
func (o *Optimizer) Update() error {
	r := C.g_ch_optimizer_update(o.p)
	runtime.KeepAlive(o)
	return errOf(r)
}

// AccumulateGrads adds grads (one per parameter) into the gradients.
func (o *Optimizer) AccumulateGrads(grads []*Array) error {
	gs := arrayPtrs(grads)
	r := C.g_ch_optimizer_accumulate_grads(o.p, firstArr(gs), C.size_t(len(gs)))
	runtime.KeepAlive(o)
	runtime.KeepAlive(grads)
	return errOf(r)
}

// GradsNorm is the L2 norm of all gradients together.
func (o *Optimizer) GradsNorm() (float64, error) {
	r := C.g_ch_optimizer_compute_grads_norm(o.p)
	runtime.KeepAlive(o)
	if err := errOf(r); err != nil {
		return 0, err
	}
	return float64(r.d), nil
}

// ClipGrads scales the gradients so that their norm is at most maxnorm.
func (o *Optimizer) ClipGrads(maxnorm float64) error {
	r := C.g_ch_optimizer_clip_grads(o.p, C.double(maxnorm))
	runtime.KeepAlive(o)
	return errOf(r)
}

// WeightDecay: grad += decay * param.
func (o *Optimizer) WeightDecay(decay float64) error {
	r := C.g_ch_optimizer_weight_decay(o.p, C.double(decay))
	runtime.KeepAlive(o)
	return errOf(r)
}

// StateCount is the number of state arrays of all parameters.
func (o *Optimizer) StateCount() int {
	n := int(C.ch_optimizer_state_count(o.p))
	runtime.KeepAlive(o)
	return n
}

// State i with its key ("l1/W/v").
func (o *Optimizer) State(i int) (string, *Array, error) {
	var a *C.ch_array
	var key *C.char
	r := C.g_ch_optimizer_state(&a, &key, o.p, C.size_t(i))
	defer runtime.KeepAlive(o)
	if err := errOf(r); err != nil {
		return "", nil, err
	}
	return C.GoString(key), newArray(unsafe.Pointer(a)), nil
}

// SaveNPZ writes t and the state.
func (o *Optimizer) SaveNPZ(path string, compressed bool) error {
	defer runtime.KeepAlive(o)
	return withCString(path, func(p *C.char) C.gres { return C.g_ch_optimizer_save_npz(o.p, p, npzFlags(compressed)) })
}

// LoadNPZ reads t and the state into a set-up optimizer.
func (o *Optimizer) LoadNPZ(path string) error {
	defer runtime.KeepAlive(o)
	return withCString(path, func(p *C.char) C.gres { return C.g_ch_optimizer_load_npz(o.p, p) })
}

// Retain returns another owned handle to the same optimizer.
func (o *Optimizer) Retain() *Optimizer {
	p := C.ch_optimizer_retain(o.p)
	runtime.KeepAlive(o)
	r := &Optimizer{p: p}
	runtime.SetFinalizer(r, (*Optimizer).Close)
	return r
}
