package chainerc

/*
#include "capi_gen.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Neural-network built-ins (include/ch/functions.h): stateless functions
// return variables; parameterized ones (Linear, Convolution2D, EmbedID,
// PReLU, Parameter, Inception, BatchNormalization, BinaryHierarchicalSoftmax) are
// *Function objects applied with Apply1, whose parameters are shared by every
// application and updated in place by optimizers.

func b32(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

func arrPtr(a *Array) *C.ch_array {
	if a == nil {
		return nil
	}
	return a.p
}

func fn1(r C.gres, keep ...any) (*Function, error) {
	runtime.KeepAlive(keep)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newFunction(r.out), nil
}

// ---- activation

// LSTM returns the new cell state and output from the previous cell state
// and the (N, 4*units) input.
func LSTM(cPrev, x *Variable) (c, h *Variable, err error) {
	var cp, hp *C.ch_variable
	r := C.g_ch_functions_lstm(&cp, &hp, cPrev.p, x.p)
	runtime.KeepAlive(cPrev)
	runtime.KeepAlive(x)
	if err := errOf(r); err != nil {
		return nil, nil, err
	}
	return newVariable(unsafe.Pointer(cp)), newVariable(unsafe.Pointer(hp)), nil
}

// ---- array

// Transpose permutes the axes.
func Transpose(x *Variable, axes ...int32) (*Variable, error) {
	var p *C.int32_t
	if len(axes) > 0 {
		p = (*C.int32_t)(unsafe.Pointer(&axes[0]))
	}
	r := C.g_ch_functions_transpose(x.p, p, C.int32_t(len(axes)))
	runtime.KeepAlive(axes)
	return out1(r, x)
}

// Concat along axis (Chainer's default 1).
func Concat(xs []*Variable, axis int) (*Variable, error) {
	ps := varPtrs(xs)
	r := C.g_ch_functions_concat(firstVar(ps), C.size_t(len(ps)), C.int32_t(axis))
	runtime.KeepAlive(xs)
	return out1(r)
}

// ---- pooling

// Pool2D describes a 2-d pooling window: kernel, stride, padding.
type Pool2D struct {
	KH, KW, SY, SX, PH, PW int64
}

// MaxPooling2D (cover_all as Chainer).
func MaxPooling2D(x *Variable, p Pool2D, coverAll bool) (*Variable, error) {
	return out1(C.g_ch_functions_max_pooling_2d(x.p, C.int64_t(p.KH), C.int64_t(p.KW), C.int64_t(p.SY), C.int64_t(p.SX),
		C.int64_t(p.PH), C.int64_t(p.PW), b32(coverAll)), x)
}

// AveragePooling2D.
func AveragePooling2D(x *Variable, p Pool2D) (*Variable, error) {
	return out1(C.g_ch_functions_average_pooling_2d(x.p, C.int64_t(p.KH), C.int64_t(p.KW), C.int64_t(p.SY), C.int64_t(p.SX),
		C.int64_t(p.PH), C.int64_t(p.PW)), x)
}

// ---- parameterized functions

// LinearOptions: Chainer's defaults are Float32, WScale 1, Bias 0, with a
// bias, random W (use DefaultLinear()).
type LinearOptions struct {
	Dtype              Dtype
	WScale, Bias       float64
	NoBias             bool
	InitialW, InitialB *Array
}

// DefaultLinear is LinearOptions with Chainer's defaults.
func DefaultLinear() LinearOptions { return LinearOptions{Dtype: Float32, WScale: 1} }

// NewLinear makes a Linear layer: parameters "W" (out, in) and "b" (out).
func NewLinear(inSize, outSize int64, o LinearOptions) (*Function, error) {
	return fn1(C.g_ch_functions_linear_new(C.int64_t(inSize), C.int64_t(outSize), C.ch_dtype(o.Dtype), C.double(o.WScale),
		C.double(o.Bias), b32(o.NoBias), arrPtr(o.InitialW), arrPtr(o.InitialB)), o.InitialW, o.InitialB)
}

// ConvOptions: Chainer's defaults are stride 1, no padding, Float32, WScale
// 1, Bias 0 (use DefaultConv()).
type ConvOptions struct {
	SY, SX, PH, PW     int64
	Dtype              Dtype
	WScale, Bias       float64
	NoBias             bool
	InitialW, InitialB *Array
}

// DefaultConv is ConvOptions with Chainer's defaults.
func DefaultConv() ConvOptions { return ConvOptions{SY: 1, SX: 1, Dtype: Float32, WScale: 1} }

// NewConvolution2D makes a 2-d convolution: "W" (out, in, kh, kw), "b" (out).
func NewConvolution2D(inChannels, outChannels, kh, kw int64, o ConvOptions) (*Function, error) {
	return fn1(C.g_ch_functions_convolution_2d_new(C.int64_t(inChannels), C.int64_t(outChannels), C.int64_t(kh), C.int64_t(kw),
		C.int64_t(o.SY), C.int64_t(o.SX), C.int64_t(o.PH), C.int64_t(o.PW), C.ch_dtype(o.Dtype), C.double(o.WScale), C.double(o.Bias),
		b32(o.NoBias), arrPtr(o.InitialW), arrPtr(o.InitialB)), o.InitialW, o.InitialB)
}

// NewEmbedID makes an embedding of int32 ids: "W" (inSize, outSize).
func NewEmbedID(inSize, outSize int64, dtype Dtype, initialW *Array) (*Function, error) {
	return fn1(C.g_ch_functions_embed_id_new(C.int64_t(inSize), C.int64_t(outSize), C.ch_dtype(dtype), arrPtr(initialW)), initialW)
}

// NewPReLU makes a parametric ReLU with slopes "W" of shape, set to init
// (Chainer: 0.25).
func NewPReLU(shape []int64, dtype Dtype, init float64) (*Function, error) {
	r := C.g_ch_functions_prelu_new(shapePtr(shape), C.int32_t(len(shape)), C.ch_dtype(dtype), C.double(init))
	return fn1(r, shape)
}

// NewParameter makes a function of no input returning its parameter "W".
func NewParameter(initial *Array) (*Function, error) {
	return fn1(C.g_ch_functions_parameter_new(initial.p), initial)
}

// NewInception makes GoogLeNet's Inception module (twelve parameters
// "conv1/W" ... "projp/b").
func NewInception(inChannels, out1, proj3, out3, proj5, out5, projPool int64, dtype Dtype) (*Function, error) {
	return fn1(C.g_ch_functions_inception_new(C.int64_t(inChannels), C.int64_t(out1), C.int64_t(proj3), C.int64_t(out3),
		C.int64_t(proj5), C.int64_t(out5), C.int64_t(projPool), C.ch_dtype(dtype)))
}

// NewBatchNormalization over size (Chainer's defaults decay 0.9, eps 1e-5).
func NewBatchNormalization(size []int64, decay, eps float64, dtype Dtype) (*Function, error) {
	r := C.g_ch_functions_batch_normalization_new(shapePtr(size), C.int32_t(len(size)), C.double(decay), C.double(eps), C.ch_dtype(dtype))
	return fn1(r, size)
}

// BatchNormalizationApply applies bn in a mode (finetune accumulates the
// population statistics).
func BatchNormalizationApply(bn *Function, x *Variable, mode Mode, finetune bool) (*Variable, error) {
	r := C.g_ch_functions_batch_normalization_apply(bn.p, x.p, C.int32_t(mode), b32(finetune))
	runtime.KeepAlive(bn)
	return out1(r, x)
}

// BatchNormalizationState returns the running mean and variance.
func BatchNormalizationState(bn *Function) (mean, variance *Array, err error) {
	var m, v *C.ch_array
	r := C.g_ch_functions_batch_normalization_state(&m, &v, bn.p)
	runtime.KeepAlive(bn)
	if err := errOf(r); err != nil {
		return nil, nil, err
	}
	return newArray(unsafe.Pointer(m)), newArray(unsafe.Pointer(v)), nil
}

// BatchNormalizationStartFinetuning resets the statistics before fine-tuning.
func BatchNormalizationStartFinetuning(bn *Function) error {
	r := C.g_ch_functions_batch_normalization_start_finetuning(bn.p)
	runtime.KeepAlive(bn)
	return errOf(r)
}

// NewBinaryHierarchicalSoftmax over a tree from CreateHuffmanTree.
func NewBinaryHierarchicalSoftmax(inSize int64, tree []int32, nInternal int64, dtype Dtype, initialW *Array) (*Function, error) {
	var tp *C.int32_t
	if len(tree) > 0 {
		tp = (*C.int32_t)(unsafe.Pointer(&tree[0]))
	}
	r := C.g_ch_functions_binary_hierarchical_softmax_new(C.int64_t(inSize), tp, C.int64_t(nInternal), C.ch_dtype(dtype), arrPtr(initialW))
	return fn1(r, tree, initialW)
}

// CreateHuffmanTree is Chainer's create_huffman_tree for words 0..len(counts)-1.
func CreateHuffmanTree(counts []float64) (tree []int32, nInternal int64, err error) {
	n := int64(len(counts))
	capacity := 2 * (n - 1)
	if capacity < 1 {
		capacity = 1
	}
	tree = make([]int32, capacity)
	var cp *C.double
	if n > 0 {
		cp = (*C.double)(unsafe.Pointer(&counts[0]))
	}
	r := C.g_ch_functions_binary_hierarchical_softmax_create_huffman_tree((*C.int32_t)(unsafe.Pointer(&tree[0])), C.int64_t(capacity), cp, C.int64_t(n))
	runtime.KeepAlive(counts)
	if err := errOf(r); err != nil {
		return nil, 0, err
	}
	return tree[:2*(n-1)], n - 1, nil
}
