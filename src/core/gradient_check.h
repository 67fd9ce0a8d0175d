// Gradient checking (the seed's chainer.gradient_check).
#pragma once

#include <functional>
#include <string>

#include "variable.h"

namespace chainerc {

// Central differences: each element of each input (float32/float64, any device) is
// moved by +-eps in place and restored; grads accumulate in double.
Arrays numerical_grad(const std::function<Arrays()>& f, const Arrays& inputs,
                      const Arrays& grad_outputs, double eps);

// numpy.allclose with a report of the worst element; on mismatch, `message`
// (if given) describes it.
// The worst element of a comparison (ch_allclose_report's fields).
struct AllcloseReport {
  int64_t worst_index = -1;  // flat index of the element with the largest excess
  double actual = 0, expected = 0, abs_diff = 0, tolerance = 0;
};

bool allclose(const Array& a, const Array& b, double atol, double rtol, AllcloseReport* report,
              std::string* message);

// Chainer's check_backward for a graph built by `build` from input variables.
// grad_outputs entries may be undefined (= ones). Throws Error(CH_ERR_NOT_CLOSE).
void check_backward(const std::function<std::vector<VarPtr>(const std::vector<VarPtr>&)>& build,
                    const Arrays& inputs, const Arrays& grad_outputs, double eps, double atol,
                    double rtol, bool volatile_eval = true, bool graph_first_order = false);

// Chainer's check_double_backward: check_backward of (x, gy) -> gx, the
// first backward taken with double backprop (see ch_check_double_backward).
void check_double_backward(
    const std::function<std::vector<VarPtr>(const std::vector<VarPtr>&)>& build,
    const Arrays& inputs, const Arrays& grad_outputs, const Arrays& grad_grad_inputs, double eps,
    double atol, double rtol);

}  // namespace chainerc
