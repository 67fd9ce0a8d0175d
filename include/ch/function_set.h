/*
 * chainerc — ch_function_set: named collections of parameterized functions (the seed's
 * FunctionSet).
 *
 * A function set maps member names to parameterized function objects
 * (ch_function, e.g. a Linear made by a ch_functions_*_new constructor or a
 * user function given parameters with ch_function_add_parameter) or to other
 * function sets (nesting). It collects their parameters and gradients in one
 * stable order, as Chainer 1.x's FunctionSet does: members sorted by name
 * (byte-wise), each function's parameters in its own parameter order, nested
 * sets recursively. Each parameter has a path made of the member names and
 * the parameter name joined by '/', e.g. "l1/W" or "enc/l1/b"; these paths are
 * the keys of .npz checkpoints (see serializers.h).
 *
 * The set holds references to its members: the function objects stay alive
 * while the set does, even after the caller released its own handles. The
 * parameter arrays are shared with the functions, never copied: optimizers
 * update them in place.
 *
 * Threading: any number of threads may read a set (get members, list or
 * collect parameters) at once. Adding or removing members while another
 * thread uses the same set (or a set that contains it) is the caller's race
 * to avoid. Handles may be retained and released from any thread.
 */
#ifndef CH_FUNCTION_SET_H
#define CH_FUNCTION_SET_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ch_function_set ch_function_set;

/* New empty function set. *out: new reference; release with
 * ch_function_set_release. */
CH_API ch_status ch_function_set_new(ch_function_set** out);
/* New reference to the same set: retain. Returns `set`, or NULL if `set` is
 * not a live ch_function_set. */
CH_API ch_function_set* ch_function_set_retain(ch_function_set* set);
/* Drop a reference. NULL is a no-op. Members are released with the last
 * reference. */
CH_API ch_status ch_function_set_release(ch_function_set* set);

/* Add (or replace) the member `name`: a function object. `name` (copied) must
 * be non-empty and must not contain '/'. A member of the same name is
 * replaced, as setting an attribute of a Python FunctionSet does. A function
 * without parameters is accepted and contributes none. The set retains
 * `function`; the caller keeps its own reference. */
CH_API ch_status ch_function_set_add_function(ch_function_set* set, const char* name,
                                              ch_function* function);
/* Add (or replace) the member `name`: a nested function set. Adding a set to
 * itself, or to a set it contains, is CH_ERR_INVALID_ARGUMENT (no cycles).
 * The set retains `member`; the caller keeps its own reference. */
CH_API ch_status ch_function_set_add_set(ch_function_set* set, const char* name,
                                         ch_function_set* member);
/* Remove the member `name`; CH_ERR_INVALID_ARGUMENT if there is none. */
CH_API ch_status ch_function_set_remove(ch_function_set* set, const char* name);

/* Number of direct members (0 for an invalid handle). Cannot fail. */
CH_API size_t ch_function_set_member_count(const ch_function_set* set);
/* Name of direct member `index` in sorted order. *out: borrowed; valid while
 * `set` is alive. */
CH_API ch_status ch_function_set_member_name(const char** out, const ch_function_set* set,
                                             size_t index);
/* The member `name` if it is a function object; CH_ERR_INVALID_ARGUMENT if
 * there is no such member or it is a set. *out: new reference; release with
 * ch_function_release. */
CH_API ch_status ch_function_set_get_function(ch_function** out, const ch_function_set* set,
                                              const char* name);
/* The member `name` if it is a nested set; CH_ERR_INVALID_ARGUMENT if there is
 * no such member or it is a function. *out: new reference; release with
 * ch_function_set_release. */
CH_API ch_status ch_function_set_get_set(ch_function_set** out, const ch_function_set* set,
                                         const char* name);

/* Number of parameters of every member, nested sets included (0 for an
 * invalid handle). Cannot fail. */
CH_API size_t ch_function_set_parameter_count(const ch_function_set* set);
/* Parameter `index` in the set's order, its gradient and its path ("l1/W").
 * Each out may be NULL. *param, *grad: new references (sharing the function's
 * arrays); release with ch_array_release. *path: borrowed; valid while `set`
 * is alive. */
CH_API ch_status ch_function_set_parameter(ch_array** param, ch_array** grad, const char** path,
                                           const ch_function_set* set, size_t index);
/* The seed's collect_parameters(): writes the first `capacity` parameters to
 * params[] and their gradients to grads[] (either may be NULL to skip it), and
 * the total number of parameters to *n_params (may be NULL). Call with
 * capacity 0 to learn the count. params[i], grads[i]: new references;
 * release each with ch_array_release. */
CH_API ch_status ch_function_set_collect_parameters(ch_array** params, ch_array** grads,
                                                    size_t capacity, size_t* n_params,
                                                    const ch_function_set* set);

/* Copy the parameter values of `source` into `set`'s parameters without
 * reallocation (the seed's copy_parameters_from). Both sets must have the
 * same number of parameters with the same shapes and dtypes, position by
 * position (paths may differ); otherwise CH_ERR_SHAPE / CH_ERR_DTYPE naming
 * the path and the values, and nothing is copied. Gradients are not copied.
 * The two sets may be on different devices (a GPU model into a CPU one, or
 * between GPUs). */
CH_API ch_status ch_function_set_copy_parameters_from(ch_function_set* set,
                                                      const ch_function_set* source);
/* As ch_function_set_copy_parameters_from, from `n` arrays in the set's
 * parameter order (e.g. the params of another set's collect_parameters). */
CH_API ch_status ch_function_set_copy_parameters_from_arrays(ch_function_set* set,
                                                             ch_array* const* params, size_t n);

/* Migrate every parameter and gradient to the CPU (the seed's to_cpu). Arrays
 * already there are kept as they are. Handles to the old arrays stay valid
 * (and keep the old values); an optimizer set up on the set must be set up
 * again. A BatchNormalization's running averages follow its parameters at its
 * next application. Nothing changes on error. */
CH_API ch_status ch_function_set_to_cpu(ch_function_set* set);
/* Migrate every parameter and gradient to `device` (the seed's to_gpu), as
 * ch_function_set_to_cpu does to the CPU. A CPU device is the same as
 * ch_function_set_to_cpu. Without that CUDA device (no GPU, or a build without
 * the CUDA backend) it is CH_ERR_DEVICE and nothing changes. */
CH_API ch_status ch_function_set_to_gpu(ch_function_set* set, ch_device device);

#ifdef __cplusplus
}
#endif
#endif /* CH_FUNCTION_SET_H */
