// Kernels of the connection functions (ops/connection): Linear, Convolution2D,
// EmbedID, Parameter, and the dtype conversion of a user's initial
// parameter array. Arguments are checked by the op; outputs are allocated by
// the op on the inputs' device; a kernel allocates only its own scratch.
// Linear's products go through kernels::gemm (math.h) from the op itself.
#pragma once

#include "kernels/registry.h"

namespace chainerc::kernels {

// y = x converted to y's dtype (float32, float64 or int32, either way; C++
// static_cast per element), y of x's shape: an initial parameter's copy.
inline Kernel<void(const Array& x, Array& y)> convert_dtype{"convert_dtype"};

// Linear's bias gradient: gb (out,) += gy (n, out) summed over its rows
// (added in row order in the element type).
inline Kernel<void(const Array& gy, Array& gb)> linear_bias_grad{"linear_bias_grad"};

// The geometry of a 2-D convolution on NCHW arrays (set and checked by the op):
// input channels and spatial size, kernel, stride, padding, output size.
struct Conv2D {
  int64_t c, h, w;
  int64_t kh, kw;
  int64_t sy, sx;
  int64_t ph, pw;
  int64_t oh, ow;
};
// y (N, O, oh, ow) = W (O, C, kh, kw) correlated with x (N, C, h, w), plus
// b (O,) when b is defined (an undefined Array for nobias).
inline Kernel<void(const Array& x, const Array& W, const Array& b, const Conv2D& g, Array& y)>
    conv2d_forward{"conv2d_forward"};
// Accumulates gW += dL/dW and, when gb is defined, gb += dL/db; when gx is
// defined (zero-filled by the op), gx += dL/dx.
inline Kernel<void(const Array& x, const Array& W, const Array& gy, const Conv2D& g, Array& gW,
                   Array& gb, Array& gx)>
    conv2d_backward{"conv2d_backward"};

// The flat index of the first id of `ids` (int32) outside [0, in_size), or
// -1 when all are in range (EmbedID's check, whose message the op writes).
inline Kernel<int64_t(const Array& ids, int64_t in_size)> embed_id_find_invalid{
    "embed_id_find_invalid"};
// y[k, :] = W[ids[k], :] for ids (int32, any shape, all in range), W
// (in_size, out_size), y (ids.size, out_size) in W's dtype.
inline Kernel<void(const Array& ids, const Array& W, Array& y)> embed_id_forward{
    "embed_id_forward"};
// gW[ids[k], :] += gy[k, :] (ids may repeat).
inline Kernel<void(const Array& ids, const Array& gy, Array& gW)> embed_id_backward{
    "embed_id_backward"};

}  // namespace chainerc::kernels
