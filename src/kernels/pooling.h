// Kernels of the 2-D pooling functions (ops/pooling) on NCHW arrays.
// Window arguments and x are checked by the op (ops/pooling/pool_util.h);
// outputs are allocated by the op on x's device.
#pragma once

#include "kernels/registry.h"

namespace chainerc::kernels {

// Window geometry: kernel, stride, padding (as Chainer's get_conv_outsize),
// and the sizes of x (n, c, h, w) and of y (oh, ow).
struct Pool2D {
  int64_t kh, kw, sy, sx, ph, pw;
  bool cover_all;
  int64_t n, c, h, w, oh, ow;
};

// y = the maximum of each window of x (padding never wins; -inf for a window
// wholly in the padding; NaN for a window holding a NaN, as NumPy's max).
// `argmax` (undefined on entry) may be set by a backend that finds its
// backward faster with it: int32, y's shape, each output's first maximum
// (below) as a flat index in the (h, w) plane, -1 for none. The CPU's forward
// sets it; the CUDA ones (own and cuDNN) leave it undefined.
inline Kernel<void(const Array& x, const Pool2D& p, Array& y, Array& argmax)> max_pool_2d_forward{
    "max_pool_2d_forward"};
// gx (zero-filled by the op) += gy routed, for each window, to its first
// maximum: the first position in window order (row by row) where x equals
// forward's y (for a NaN y, the first NaN). x and y are forward's (what
// cudnnPoolingBackward takes too); argmax is what forward set: when it is
// defined the backward routes by it and x may be a placeholder without data
// (the node then keeps neither x's data nor y), else it finds the first
// maxima from x and y.
inline Kernel<void(const Array& x, const Array& y, const Array& argmax, const Array& gy,
                   const Pool2D& p, Array& gx)>
    max_pool_2d_backward{"max_pool_2d_backward"};
// The adjoint of max_pool_2d_backward (max pooling's double backprop): ggy
// (y's shape) = ggx (x's shape) at each window's first maximum, as
// max_pool_2d_backward finds it from x, y and argmax; 0 for a window wholly
// in the padding.
inline Kernel<void(const Array& x, const Array& y, const Array& argmax, const Array& ggx,
                   const Pool2D& p, Array& ggy)>
    max_pool_2d_gather{"max_pool_2d_gather"};

// y = the sum of each window of x divided by kh * kw (padding counts as 0).
inline Kernel<void(const Array& x, const Pool2D& p, Array& y)> average_pool_2d_forward{
    "average_pool_2d_forward"};
// gx (zero-filled by the op) += gy / (kh * kw) spread over each window.
inline Kernel<void(const Array& gy, const Pool2D& p, Array& gx)> average_pool_2d_backward{
    "average_pool_2d_backward"};

}  // namespace chainerc::kernels
