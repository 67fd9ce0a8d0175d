// Checks of functions with parameters and of error paths on cuda:0, shared by
// test_loss.cpp and test_connection.cpp (agreement.h compares against the
// CPU; check_backward perturbs inputs only).
#pragma once

#include <string>

#include "agreement.h"

namespace gputest {

// The gradients of the case's function parameters on cuda:0 against central
// differences of sum(y * gy) computed on cuda:0, every parameter element
// perturbed by +-eps (keep the parameters small); float64 parameters.
void expect_parameter_gradients(const Case& c, double eps = 1e-3, double atol = 1e-4,
                                double rtol = 1e-3);

// The status and message that running `c` (forward only) raises on `device`;
// status CH_OK and an empty message when nothing is raised.
struct Raised {
  ch_status status = CH_OK;
  std::string message;
};
Raised raised_on(const Case& c, Device device);

// Expects the same error on cuda:0 as on the CPU, with status `status` and a
// message containing `needle`.
void expect_same_error(const Case& c, ch_status status, const std::string& needle);

}  // namespace gputest
