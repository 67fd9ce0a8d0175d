// Internal differentiable functions that the built-in functions' graph
// backwards (double backprop) are made of, where no public function does
// the job: the fused gradient kernels of pooling and convolution as
// functions with their own backward, and a split along an axis. Not part of
// the C API; each is defined next to the function whose backward it is.
#pragma once

#include <vector>

#include "core/variable.h"
#include "kernels/array.h"
#include "kernels/connection.h"

namespace chainerc::ops {

// x split along `axis` into pieces of the given shapes (equal to x's but
// along the axis, and summing to x's extent there); the backward of concat
// (array/concat.cpp). Its backward concatenates the pieces' gradients.
std::vector<VarPtr> split_axis(const VarPtr& x, int32_t axis, std::vector<Shape> shapes);

// ---- strided gather / scatter (array/strided.cpp), each the other's
// backward: the array functions that move elements (get_item, flip, tile,
// repeat, pad, select_item) are one of them. `index` is an int32 array on
// x's device (checked by the caller) or undefined.

// y of `shape` read from x through `view` (kernels::gather).
VarPtr strided_gather(const VarPtr& x, const kernels::StridedView& view, const Shape& shape,
                      const Array& index);
// zeros of `x_shape` with y added at its view positions (kernels::scatter_add).
VarPtr strided_scatter(const VarPtr& y, const kernels::StridedView& view, const Shape& x_shape,
                       const Array& index);
// The contiguous strides (in elements) of shape s.
void contiguous_strides(const Shape& s, int64_t* strides);

// ---- convolution (connection/convolution_2d.cpp): the three linear maps of
// a 2-D convolution without bias, each the backward of the others.

// y = W (*) x (correlation with geometry g; no bias).
VarPtr conv2d_of(const VarPtr& x, const VarPtr& W, const kernels::Conv2D& g);
// The gradient of x from gy: the transposed convolution of gy with W, shaped
// `x_shape` (deconvolution).
VarPtr conv2d_grad_x(const VarPtr& gy, const VarPtr& W, const kernels::Conv2D& g,
                     const Shape& x_shape);
// The gradient of W from x and gy, shaped `w_shape`.
VarPtr conv2d_grad_w(const VarPtr& x, const VarPtr& gy, const kernels::Conv2D& g,
                     const Shape& w_shape);
// The graph backward of a Convolution2D node (also a sub-convolution of
// Inception, whose input x is an array of the composite): the parameters'
// gradients added from x and gy as arrays (when parameter_grads_enabled()),
// and gx = conv2d_grad_x(gy, W) with W as a parameter variable, or null
// when !want_gx.
VarPtr convolution_2d_graph_grad(const FuncPtr& conv, const Array& x, const VarPtr& gy,
                                 bool want_gx);

// ---- pooling (pooling/max_pooling_2d.cpp, average_pooling_2d.cpp)

// max_pooling_2d's backward as a function of gy: gy routed to each window's
// first maximum as the applied pooling node `pool` found them on x (its
// forward's input). Its backward gathers by the same positions.
VarPtr max_pooling_2d_grad(const FuncPtr& pool, const Array& x, const VarPtr& gy);

}  // namespace chainerc::ops
