/*
 * chainerc — the C API. Include this one header.
 *
 *   common.h          version, status codes, dtypes, devices, errors, debugging
 *   array.h           ch_array: n-dimensional arrays, host memory statistics
 *   variable.h        ch_variable: define-by-run variables and backward
 *   function.h        ch_function: user-defined functions through callbacks
 *   functions.h       built-in differentiable functions
 *   gradient_check.h  numerical_grad, allclose, check_backward
 */
#ifndef CH_CH_H
#define CH_CH_H

#include "common.h"
#include "array.h"
#include "variable.h"
#include "function.h"
#include "functions.h"
#include "gradient_check.h"

#endif /* CH_CH_H */
