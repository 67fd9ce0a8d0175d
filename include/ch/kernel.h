/*
 * chainerc — user kernels from source strings (ch_elementwise_kernel,
 * ch_reduction_kernel): the seed's cuda.elementwise and cuda.reduce, as
 * CuPy's ElementwiseKernel and ReductionKernel.
 *
 * Parameters are comma-separated "type name" entries. Types: float32 (or
 * float), float64 (double), int32 (int), or one capital letter, a type
 * placeholder resolved from the dtypes of the arrays bound to it (all must
 * agree). "raw T x" binds the whole array as a pointer `x` that the code
 * indexes itself; raw inputs take no part in broadcasting. Names are C
 * identifiers, not starting with '_' and not `i`.
 *
 * The code is C (on CUDA devices, CUDA C++): in an elementwise operation each
 * input is a const scalar, each output an lvalue of its element, and `i` the
 * element index (long long). Non-raw inputs broadcast (NumPy rules) to the
 * iteration shape. Math functions of <math.h> (exp, log, tanh, sqrt, fabs,
 * pow, ... and the float versions expf, ...), max, min, INFINITY and NAN are
 * available on both devices.
 *
 * Where it runs: on the device of the arguments (all on one device). On the
 * CPU the generated C is compiled in memory by libtcc once per process and
 * (source, dtypes) and runs on chainerc's CPU threads; on a CUDA device it is
 * compiled by NVRTC for the device's architecture, cached on disk in
 * $CH_KERNEL_CACHE_DIR (default $XDG_CACHE_HOME/chainerc/kernels, else
 * ~/.cache/chainerc/kernels), and the loaded module is cached per device.
 * Code errors are reported when a kernel is first called with a given set of
 * dtypes: CH_ERR_INVALID_ARGUMENT with the compiler's log in the message.
 *
 * Threading: a kernel object is immutable after creation; it may be called
 * from several threads at once.
 */
#ifndef CH_KERNEL_H
#define CH_KERNEL_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ch_elementwise_kernel ch_elementwise_kernel;
typedef struct ch_reduction_kernel ch_reduction_kernel;

/* New elementwise kernel. `in_params` (may be "" for none) and `out_params`
 * (at least one, none raw) are parameter lists, `operation` the code run per
 * element, `name` a C identifier naming the kernel (in error messages, and
 * the CUDA function shown by profilers). Strings are copied. Parameter
 * errors (unknown type, bad or duplicate name) are CH_ERR_INVALID_ARGUMENT;
 * the code itself is compiled at the first call.
 * Example: in "float32 x, float32 y, float32 z", out "float32 w",
 * operation "w = x * y + z", name "muladd_fwd".
 * *out: new reference; release with ch_elementwise_kernel_release. */
CH_API ch_status ch_elementwise_kernel_new(ch_elementwise_kernel** out, const char* in_params,
                                           const char* out_params, const char* operation,
                                           const char* name);

/* Add a reference; returns `kernel`, or NULL if it is not a live kernel. */
CH_API ch_elementwise_kernel* ch_elementwise_kernel_retain(ch_elementwise_kernel* kernel);
/* Drop a reference. NULL is a no-op. */
CH_API ch_status ch_elementwise_kernel_release(ch_elementwise_kernel* kernel);

/* Run the kernel. `inputs`: n_inputs borrowed arrays, one per input
 * parameter, in order. `outputs`: n_outputs slots, one per output parameter:
 * a non-NULL entry is an array to write into (borrowed; it must have the
 * iteration shape and the parameter's dtype, and stays the caller's: no new
 * reference); a NULL entry is allocated with the iteration shape and
 * receives a new reference; release with ch_array_release. On failure, NULL
 * entries stay NULL. Errors: wrong argument counts or unresolved
 * placeholders CH_ERR_INVALID_ARGUMENT; dtype mismatches CH_ERR_DTYPE;
 * shapes that do not broadcast CH_ERR_SHAPE; arrays on different devices
 * CH_ERR_DEVICE; code that does not compile CH_ERR_INVALID_ARGUMENT with the
 * compiler's log. */
CH_API ch_status ch_elementwise_kernel_call(const ch_elementwise_kernel* kernel,
                                            ch_array* const* inputs, size_t n_inputs,
                                            ch_array** outputs, size_t n_outputs);

/* New reduction kernel. For each output element: every input element of
 * its reduced slice is mapped by `map_expr` (an expression of the inputs),
 * the values are combined pairwise by `reduce_expr` (an expression of `a`
 * and `b`), and `post_map_expr` (code using the result `a`) assigns the
 * outputs; "" means "<output> = a" for a single output. `identity` is the
 * neutral element as a C expression (e.g. "0", "-INFINITY"), or NULL/"" for
 * none (then reducing zero elements is CH_ERR_SHAPE). `reduce_type` is the
 * type of `a` and `b` (a type name or placeholder; NULL/"" = the first
 * output's type); `_type_reduce` names it in the code and `_reduce_size` is
 * the number of elements reduced per output. Strings are copied.
 * Example, sum of squares: in "T x", out "T y", map "x * x", reduce "a + b",
 * post_map "y = a", identity "0".
 * *out: new reference; release with ch_reduction_kernel_release. */
CH_API ch_status ch_reduction_kernel_new(ch_reduction_kernel** out, const char* in_params,
                                         const char* out_params, const char* map_expr,
                                         const char* reduce_expr, const char* post_map_expr,
                                         const char* identity, const char* name,
                                         const char* reduce_type);

/* Add a reference; returns `kernel`, or NULL if it is not a live kernel. */
CH_API ch_reduction_kernel* ch_reduction_kernel_retain(ch_reduction_kernel* kernel);
/* Drop a reference. NULL is a no-op. */
CH_API ch_status ch_reduction_kernel_release(ch_reduction_kernel* kernel);

/* Pass as n_axes to reduce every axis (CuPy's axis=None). */
#define CH_REDUCE_ALL_AXES (-1)

/* Run the reduction over `axes` (n_axes entries, negative ones count from
 * the end) of the broadcast shape of the non-raw inputs. n_axes
 * CH_REDUCE_ALL_AXES reduces every axis, 0 none (axes may then be NULL).
 * keepdims != 0 keeps reduced axes with extent 1. Inputs and outputs
 * as in ch_elementwise_kernel_call (outputs have the reduced shape).
 * Errors as there, plus an axis out of range or repeated
 * (CH_ERR_INVALID_ARGUMENT). */
CH_API ch_status ch_reduction_kernel_call(const ch_reduction_kernel* kernel,
                                          ch_array* const* inputs, size_t n_inputs,
                                          ch_array** outputs, size_t n_outputs, const int32_t* axes,
                                          int32_t n_axes, int32_t keepdims);

/* Number of input / output parameters; 0 for an invalid handle. Cannot fail. */
CH_API size_t ch_elementwise_kernel_input_count(const ch_elementwise_kernel* kernel);
CH_API size_t ch_elementwise_kernel_output_count(const ch_elementwise_kernel* kernel);
CH_API size_t ch_reduction_kernel_input_count(const ch_reduction_kernel* kernel);
CH_API size_t ch_reduction_kernel_output_count(const ch_reduction_kernel* kernel);

/* Capabilities of this build: 1 if user kernels run on the CPU (libtcc) /
 * can be compiled and launched on CUDA devices (NVRTC), else 0. Cannot fail. */
CH_API int32_t ch_kernel_cpu_supported(void);
CH_API int32_t ch_kernel_cuda_supported(void);

#ifdef __cplusplus
}
#endif
#endif /* CH_KERNEL_H */
