// chainerc — the C++ API: a header-only layer over the C API of <ch/ch.h>.
//
//   #include <ch/ch.hpp>
//
//   ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
//   ch::Variable y = x * x - 2 * x + 1;  // 16
//   y.backward();                        // x.grad() holds 8
//
// What it adds to the C API:
//  - ch::Error and ch::check(): the one place where a ch_status becomes an exception.
//  - RAII handles: ch::Array, ch::Variable, ch::Function. Copying one retains the handle,
//    destroying it releases it; nobody calls *_release by hand.
//  - Operators and free functions over ch::Variable for the built-in functions.
//  - ch::FunctionBase: subclass it to write a differentiable function in C++.
//  - Gradient checking: ch::numerical_grad, ch::allclose, ch::check_backward.
//  - ch::F: the neural-network functions (F::relu, F::Linear(...), ...); ch::config.
//  - Training: ch::FunctionSet, ch::Optimizer, ch::datasets.
//
// Exceptions and callbacks. No C++ exception ever unwinds through the C library: every
// callback this header hands to the library catches everything. An exception thrown inside
// a user's forward or backward (or a numerical_grad / check_backward callback) travels as
// the error's payload (ch_error_set_payload) to the caller of the C call that failed, where
// ch::check() rethrows the original exception object, with its original type and message.
// Failures that carry no C++ exception are thrown as ch::Error.
//
// Threading: as the C API. Handles may be copied and destroyed on any thread; one graph
// must not be used from two threads at once; callbacks run on the thread that called
// forward or backward.
#ifndef CH_CH_HPP
#define CH_CH_HPP

// One header per noun, as the C headers are: <ch/array.hpp> is ch::Array over <ch/array.h>,
// and so on. Each may be included alone.
#include <ch/array.hpp>
#include <ch/common.hpp>
#include <ch/config.hpp>
#include <ch/cuda.hpp>
#include <ch/datasets.hpp>
#include <ch/function.hpp>
#include <ch/function_set.hpp>
#include <ch/functions.hpp>
#include <ch/gradient_check.hpp>
#include <ch/kernel.hpp>
#include <ch/optimizer.hpp>
#include <ch/variable.hpp>

#include <ch/cuda_graph.hpp>  // ch::CudaGraph

#endif  // CH_CH_HPP
