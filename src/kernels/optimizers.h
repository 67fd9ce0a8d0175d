// Kernels of the optimizers (src/train/optimizers/) and of the gradient
// utilities of their base class (src/train/optimizer.cpp). Every array is
// allocated by the caller: a parameter, its gradient and its state arrays have
// one shape, one floating dtype and one device (the optimizer checks this at
// setup), and the kernels update them in place. The per-element math and the
// hyperparameter structs are in pointwise/optimizers.h.
#pragma once

#include <vector>

#include "kernels/pointwise/optimizers.h"
#include "kernels/registry.h"

namespace chainerc::kernels {

using pointwise::AdaDeltaHyper;
using pointwise::AdaGradHyper;
using pointwise::AdamHyper;
using pointwise::AdamWHyper;
using pointwise::MomentumSgdHyper;
using pointwise::NesterovAgHyper;
using pointwise::RmspropHyper;
using pointwise::SgdHyper;

// One update step of a parameter from its gradient: the rules of
// pointwise/optimizers.h applied to every element. The state arrays are named
// as Chainer names them (the optimizer's state keys).
inline Kernel<void(const SgdHyper& hp, Array& param, const Array& grad)> sgd_update{"sgd_update"};
inline Kernel<void(const MomentumSgdHyper& hp, Array& param, const Array& grad, Array& v)>
    momentum_sgd_update{"momentum_sgd_update"};
inline Kernel<void(const AdaGradHyper& hp, Array& param, const Array& grad, Array& h)>
    adagrad_update{"adagrad_update"};
inline Kernel<void(const AdaDeltaHyper& hp, Array& param, const Array& grad, Array& msg,
                   Array& msdx)>
    adadelta_update{"adadelta_update"};
inline Kernel<void(const AdamHyper& hp, Array& param, const Array& grad, Array& m, Array& v)>
    adam_update{"adam_update"};
inline Kernel<void(const AdamWHyper& hp, Array& param, const Array& grad, Array& m, Array& v)>
    adamw_update{"adamw_update"};
inline Kernel<void(const AdamWHyper& hp, Array& param, const Array& grad, Array& m, Array& v,
                   Array& vhat)>
    amsgrad_update{"amsgrad_update"};
inline Kernel<void(const RmspropHyper& hp, Array& param, const Array& grad, Array& ms)>
    rmsprop_update{"rmsprop_update"};
inline Kernel<void(const NesterovAgHyper& hp, Array& param, const Array& grad, Array& v)>
    nesterov_ag_update{"nesterov_ag_update"};

// x = 0 in place (zero_grads), any dtype.
inline Kernel<void(Array& x)> zero_fill{"zero_fill"};
// x *= s in place, s converted to x's dtype (clip_grads).
inline Kernel<void(Array& x, double s)> scale_in_place{"scale_in_place"};
// y += s * x in place, same shape and dtype, s converted to the dtype
// (weight_decay: grad += decay * param).
inline Kernel<void(Array& y, double s, const Array& x)> add_scaled_in_place{"add_scaled_in_place"};
// The sum of the squares of x's elements, accumulated in double in fixed
// blocks whose sums are added in order, so that the result does not depend on
// the thread count (compute_grads_norm: sqrt of the sum over the gradients).
inline Kernel<double(const Array& x)> sum_of_squares{"sum_of_squares"};
// sums[i] = sum_of_squares(xs[i]) for arrays on one device (run with .on()),
// the same values, in one pass: on CUDA one copy to the host for all of them
// rather than one per array (compute_grads_norm, clip_grads).
inline Kernel<void(const std::vector<Array>& xs, std::vector<double>& sums)> sum_of_squares_all{
    "sum_of_squares_all"};

}  // namespace chainerc::kernels
