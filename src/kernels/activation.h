// Kernels of the activation functions (ops/activation). Arguments are checked
// by the op; outputs are allocated by the op on the inputs' device (float32 or
// float64, one dtype). The per-element math is in pointwise/activation.h.
// The gradients (relu_grad, leaky_relu_grad, sigmoid_grad, tanh_grad) may
// write gx over gy: the op passes gy itself as the output where it may
// (run_over_grad).
#pragma once

#include "kernels/registry.h"

namespace chainerc::kernels {

inline Kernel<UnaryFn> relu{"relu"};                               // y = max(0, x)
inline Kernel<BinaryFn> relu_grad{"relu_grad"};                    // (gy, y) -> gx
inline Kernel<UnaryScalarFn> leaky_relu{"leaky_relu"};             // (x, slope) -> y
inline Kernel<BinaryScalarFn> leaky_relu_grad{"leaky_relu_grad"};  // (gy, x, slope) -> gx
inline Kernel<UnaryFn> sigmoid{"sigmoid"};                         // y = 1 / (1 + exp(-x))
inline Kernel<BinaryFn> sigmoid_grad{"sigmoid_grad"};              // (gy, y) -> gx
inline Kernel<UnaryFn> tanh{"tanh"};                               // y = tanh(x)
inline Kernel<BinaryFn> tanh_grad{"tanh_grad"};                    // (gy, y) -> gx

// Softmax over axis 1 of an (N, C, ...) array (ndim >= 2, checked by the op):
// y = exp(x - max) / sum, every position of the trailing axes on its own.
inline Kernel<void(const Array& x, Array& y)> softmax{"softmax"};
// gx = y (gy - sum(gy y, axis 1)), all of y's shape.
inline Kernel<void(const Array& y, const Array& gy, Array& gx)> softmax_grad{"softmax_grad"};

// PReLU with the parameter W applying to the axes 1..W.ndim of x (shapes
// checked by the op), broadcast over the batch axis and the axes after W's.
inline Kernel<void(const Array& x, const Array& W, Array& y)> prelu{"prelu"};
// gx (allocated by the op, x's shape) and gW += the gradient of W (W's shape,
// accumulated in place).
inline Kernel<void(const Array& x, const Array& gy, const Array& W, Array& gx, Array& gW)>
    prelu_grad{"prelu_grad"};

// The LSTM cell over c_prev (N, U, ...) and x (N, 4U, ...) whose gates are
// interleaved along axis 1 (a = x[:, 0::4], i = x[:, 1::4], f = x[:, 2::4],
// o = x[:, 3::4]); c and h have c_prev's shape.
inline Kernel<void(const Array& c_prev, const Array& x, Array& c, Array& h)> lstm{"lstm"};
// From the inputs and the gradients gc, gh of c and h (c_prev's shape): the
// gradients gc_prev (c_prev's shape) and gx (x's shape); the gates are
// recomputed from x.
inline Kernel<void(const Array& c_prev, const Array& x, const Array& gc, const Array& gh,
                   Array& gc_prev, Array& gx)>
    lstm_grad{"lstm_grad"};

}  // namespace chainerc::kernels
