/*
 * chainerc — the C API. Include this one header.
 *
 *   common.h          version, status codes, dtypes, devices, errors, debugging
 *   array.h           ch_array: n-dimensional arrays, host memory statistics
 *   variable.h        ch_variable: define-by-run variables and backward
 *   function.h        ch_function: user-defined functions through callbacks
 *   functions.h       built-in differentiable functions
 *   gradient_check.h  numerical_grad, allclose, check_backward
 *   config.h          train/test default, CPU threads, random seed, BLAS
 *   function_set.h    ch_function_set: named, nested parameterized functions
 *   optimizer.h       ch_optimizer: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop
 *   serializers.h     .npz checkpoints of function sets and optimizers
 *   datasets.h        IDX (MNIST-format) files
 *   kernel.h          user elementwise and reduction kernels from source strings
 */
#ifndef CH_CH_H
#define CH_CH_H

#include "common.h"
#include "array.h"
#include "variable.h"
#include "function.h"
#include "index.h"
#include "functions.h"
#include "gradient_check.h"
#include "config.h"
#include "function_set.h"
#include "optimizer.h"
#include "serializers.h"
#include "datasets.h"
#include "cuda.h"
#include "kernel.h"

#endif /* CH_CH_H */
