/*
 * chainerc — ch_optimizer: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam (with Chainer 7's AdamW
 * weight decay and AMSGrad), RMSprop, NesterovAG and user-defined optimizers.
 *
 * An optimizer is set up with parameter arrays and their gradient arrays
 * (from a ch_function_set, or as two lists), keeps per-parameter state arrays
 * (made by its init_state at setup), and on every ch_optimizer_update first
 * increments its step count t and then updates each parameter in place from
 * its gradient (the seed's Optimizer). It keeps references to the arrays, not
 * copies: the function objects that own them see every update, and they must
 * keep using the same arrays (the seed's note on Optimizer).
 *
 * Update rules (Chainer 1.0.1; all arithmetic in the parameter's dtype, state
 * arrays have the parameter's shape and dtype and start at zero):
 *   SGD          param -= lr * grad
 *   MomentumSGD  v = momentum * v - lr * grad;  param += v              state "v"
 *   AdaGrad      h += grad^2;  param -= lr * grad / (sqrt(h) + eps)     state "h"
 *   AdaDelta     msg = rho * msg + (1 - rho) * grad^2
 *                dx = sqrt((msdx + eps) / (msg + eps)) * grad
 *                msdx = rho * msdx + (1 - rho) * dx^2;  param -= dx     states "msg", "msdx"
 *   Adam         beta1_t = beta1 * lam^(t-1)
 *                m += (1 - beta1_t) * (grad - m);  v += (1 - beta2) * (grad^2 - v)
 *                lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t)
 *                param -= lr * m / (sqrt(v) + eps)                      states "m", "v"
 *                (lam = 1 gives the Adam of later Chainer versions)
 *   Adam, Chainer 7 (ch_optimizer_adam_new_ex): as above, then
 *                param -= eta * (lr * m / (sqrt(v) + eps) + weight_decay_rate * param)
 *                (decoupled weight decay: AdamW); with amsgrad, vhat = max(vhat, v)
 *                takes v's place in the step                            state "vhat" too
 *   NesterovAG   v = momentum * v - lr * grad
 *                param += momentum^2 * v - (1 + momentum) * lr * grad     state "v"
 *   RMSprop      ms = alpha * ms + (1 - alpha) * grad^2
 *                param -= lr * grad / (sqrt(ms) + eps)                  state "ms"
 *
 * Threading: an optimizer is used by one thread at a time (updates write the
 * shared parameter arrays). Handles may be retained and released from any
 * thread.
 */
#ifndef CH_OPTIMIZER_H
#define CH_OPTIMIZER_H

#include "common.h"
#include "function_set.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ch_optimizer ch_optimizer;

/* Defaults of the seed's constructors. */
#define CH_SGD_DEFAULT_LR 0.01
#define CH_MOMENTUM_SGD_DEFAULT_LR 0.01
#define CH_MOMENTUM_SGD_DEFAULT_MOMENTUM 0.9
#define CH_ADAGRAD_DEFAULT_LR 0.001
#define CH_ADAGRAD_DEFAULT_EPS 1e-8
#define CH_ADADELTA_DEFAULT_RHO 0.95
#define CH_ADADELTA_DEFAULT_EPS 1e-6
#define CH_ADAM_DEFAULT_ALPHA 0.001
#define CH_ADAM_DEFAULT_BETA1 0.9
#define CH_ADAM_DEFAULT_BETA2 0.999
#define CH_ADAM_DEFAULT_LAM 0.99999999
#define CH_ADAM_DEFAULT_EPS 1e-8
#define CH_RMSPROP_DEFAULT_LR 0.01
#define CH_RMSPROP_DEFAULT_ALPHA 0.99
#define CH_RMSPROP_DEFAULT_EPS 1e-8
#define CH_NESTEROV_AG_DEFAULT_LR 0.01
#define CH_NESTEROV_AG_DEFAULT_MOMENTUM 0.9

/* --- built-in optimizers ---------------------------------------------------
 * Hyperparameters must be finite; learning rates and eps >= 0; momentum, rho,
 * beta1, beta2 and RMSprop's alpha in [0, 1); lam in (0, 1]. Otherwise
 * CH_ERR_INVALID_ARGUMENT naming the value. Each *out: new reference; release
 * with ch_optimizer_release. */

/* Vanilla stochastic gradient descent. Name "SGD". Default lr = 0.01. */
CH_API ch_status ch_optimizer_sgd_new(ch_optimizer** out, double lr);
/* Classical momentum SGD. Name "MomentumSGD". Defaults lr = 0.01,
 * momentum = 0.9. */
CH_API ch_status ch_optimizer_momentum_sgd_new(ch_optimizer** out, double lr, double momentum);
/* AdaGrad. Name "AdaGrad". Defaults lr = 0.001, eps = 1e-8. */
CH_API ch_status ch_optimizer_adagrad_new(ch_optimizer** out, double lr, double eps);
/* Zeiler's ADADELTA. Name "AdaDelta". Defaults rho = 0.95, eps = 1e-6. */
CH_API ch_status ch_optimizer_adadelta_new(ch_optimizer** out, double rho, double eps);
/* Adam. Name "Adam". Defaults alpha = 0.001, beta1 = 0.9, beta2 = 0.999,
 * lam = 0.99999999 (= 1 - 1e-8), eps = 1e-8. */
CH_API ch_status ch_optimizer_adam_new(ch_optimizer** out, double alpha, double beta1, double beta2,
                                       double lam, double eps);
/* Hinton's RMSprop. Name "RMSprop". Defaults lr = 0.01, alpha = 0.99,
 * eps = 1e-8. */
CH_API ch_status ch_optimizer_rmsprop_new(ch_optimizer** out, double lr, double alpha, double eps);
/* Sutskever's form of Nesterov's accelerated gradient (Chainer 7's NesterovAG).
 * Name "NesterovAG". Defaults lr = 0.01, momentum = 0.9. */
CH_API ch_status ch_optimizer_nesterov_ag_new(ch_optimizer** out, double lr, double momentum);

/* Chainer 7's Adam(alpha, beta1, beta2, eps, eta, weight_decay_rate, amsgrad),
 * plus the seed's lam; the fields of a versioned struct (initialise it with
 * CH_ADAM_OPTIONS_INIT, Chainer 7's defaults, so that fields added later get
 * theirs). weight_decay_rate > 0 is AdamW (Chainer 7's AdamW is this Adam);
 * eta >= 0 and weight_decay_rate >= 0; amsgrad is 0 or 1 and fixed for the
 * optimizer's life (hyperparameter "amsgrad" reads it). */
#define CH_ADAM_OPTIONS_VERSION 1
typedef struct ch_adam_options {
  uint32_t version;         /* CH_ADAM_OPTIONS_VERSION */
  double alpha;             /* default 0.001 */
  double beta1;             /* default 0.9 */
  double beta2;             /* default 0.999 */
  double eps;               /* default 1e-8 */
  double eta;               /* default 1 (the schedule multiplier of Chainer 7) */
  double weight_decay_rate; /* default 0 */
  int32_t amsgrad;          /* default 0 */
  double lam;               /* default 1 (Chainer 7 has no lam; the seed's 1 - 1e-8) */
} ch_adam_options;
#define CH_ADAM_OPTIONS_INIT \
  { CH_ADAM_OPTIONS_VERSION, 0.001, 0.9, 0.999, 1e-8, 1.0, 0.0, 0, 1.0 }
/* Adam from `options` (NULL: CH_ADAM_OPTIONS_INIT). Name "Adam". A version
 * this library does not know is CH_ERR_INVALID_ARGUMENT naming
 * ch_adam_options and the version. */
CH_API ch_status ch_optimizer_adam_new_ex(ch_optimizer** out, const ch_adam_options* options);

/* --- user-defined optimizers (the seed's Optimizer base class) ------------ */

/* Creates the state arrays of one parameter at setup. `param` and `grad` are
 * borrowed (valid during the call). The callback stores n_states new array
 * references in states[0..n_states) (ownership passes to the optimizer; on
 * failure, arrays already stored are released by the optimizer). */
typedef ch_status (*ch_optimizer_init_state_callback)(void* user_data, ch_array* param,
                                                      ch_array* grad, ch_array** states,
                                                      size_t n_states);
/* Updates one parameter in place from its gradient and state arrays, at step
 * t (already incremented). All arrays are borrowed for the call; `param` and
 * the states are written in place, `grad` must not be written. */
typedef ch_status (*ch_optimizer_update_one_callback)(void* user_data, ch_array* param,
                                                      ch_array* grad, ch_array* const* states,
                                                      size_t n_states, int64_t t);

#define CH_OPTIMIZER_DEF_VERSION 1

typedef struct ch_optimizer_def {
  uint32_t version; /* CH_OPTIMIZER_DEF_VERSION */
  const char* name; /* copied; used in error messages */
  /* Number of state arrays per parameter and their names (copied; used as
   * checkpoint keys "<path>/<state name>"). state_names may be NULL when
   * n_states is 0; names must be distinct, non-empty, without '/'. */
  size_t n_states;
  const char* const* state_names;
  /* May be NULL: every state array is then zeros like the parameter. */
  ch_optimizer_init_state_callback init_state;
  ch_optimizer_update_one_callback update_one; /* required */
  void* user_data;                             /* passed to every callback */
  void (*destroy)(void* user_data);            /* called once, when the optimizer is gone */
} ch_optimizer_def;

/* New user-defined optimizer from `def` (copied). A callback that returns a
 * non-zero status fails the call that ran it with CH_ERR_CALLBACK and a
 * message naming the optimizer, the callback and the parameter path, plus the
 * message the callback gave with ch_error_set (and its payload, see
 * ch_error_set_payload). On failure def->destroy is NOT called.
 * *out: new reference; release with ch_optimizer_release. */
CH_API ch_status ch_optimizer_new(ch_optimizer** out, const ch_optimizer_def* def);

/* New reference to the same optimizer: retain. Returns `optimizer`, or NULL
 * if it is not a live ch_optimizer. */
CH_API ch_optimizer* ch_optimizer_retain(ch_optimizer* optimizer);
/* Drop a reference. NULL is a no-op. */
CH_API ch_status ch_optimizer_release(ch_optimizer* optimizer);

/* Name ("SGD", "Adam", a user optimizer's name). Borrowed; valid while the
 * optimizer is alive. "" for an invalid handle. */
CH_API const char* ch_optimizer_name(const ch_optimizer* optimizer);

/* Hyperparameters by name, for schedules: "lr" (SGD, MomentumSGD, AdaGrad,
 * RMSprop, NesterovAG), "momentum", "eps", "rho", "alpha", "beta1", "beta2",
 * "lam", "eta", "weight_decay_rate" as in the constructors (Adam has the last
 * two whichever constructor made it), and Adam's read-only "amsgrad" (0 or 1). For Adam, "lr" is
 * read-only and is the bias-corrected step alpha * sqrt(1 - beta2^t) / (1 - beta1^t)
 * (CH_ERR_INVALID_ARGUMENT while t = 0). Unknown names: CH_ERR_INVALID_ARGUMENT listing the known
 * ones. User-defined optimizers have none (they keep theirs in user_data). */
CH_API ch_status ch_optimizer_get_hyperparam(double* out, const ch_optimizer* optimizer,
                                             const char* name);
CH_API ch_status ch_optimizer_set_hyperparam(ch_optimizer* optimizer, const char* name,
                                             double value);

/* Set up with every parameter of `set` (in its order, with its paths) and
 * make fresh state; t is reset to 0. The optimizer keeps the arrays, not the
 * set: members added later need another setup. */
CH_API ch_status ch_optimizer_setup(ch_optimizer* optimizer, const ch_function_set* set);
/* Set up with `n` parameter arrays and their gradient arrays (same shape,
 * dtype and device, floating dtype), as the seed's setup(params_grads). Their
 * paths are "0", "1", ... (for checkpoint keys). The optimizer retains the
 * arrays. t is reset to 0. */
CH_API ch_status ch_optimizer_setup_arrays(ch_optimizer* optimizer, ch_array* const* params,
                                           ch_array* const* grads, size_t n);

/* Number of parameters set up (0 for an invalid handle). Cannot fail. */
CH_API size_t ch_optimizer_parameter_count(const ch_optimizer* optimizer);
/* Parameter `index`, its gradient and its path. Each out may be NULL.
 * *param, *grad: new references. *path: borrowed; valid until the next setup
 * or the optimizer's release. */
CH_API ch_status ch_optimizer_parameter(ch_array** param, ch_array** grad, const char** path,
                                        const ch_optimizer* optimizer, size_t index);

/* Number of update steps done (the seed's t). 0 for an invalid handle. */
CH_API int64_t ch_optimizer_t(const ch_optimizer* optimizer);
/* Set t (e.g. when resuming); must be >= 0. */
CH_API ch_status ch_optimizer_set_t(ch_optimizer* optimizer, int64_t t);

/* Number of epochs finished (Chainer's Optimizer.epoch; saved in checkpoints
 * as "epoch"). 0 for an invalid handle. */
CH_API int64_t ch_optimizer_epoch(const ch_optimizer* optimizer);
/* epoch += 1 (Chainer's Optimizer.new_epoch), e.g. after each pass over the
 * training data. */
CH_API ch_status ch_optimizer_new_epoch(ch_optimizer* optimizer);

/* Take plain SGD's step inside backward (enable != 0), where it can be: in
 * a step with ch_optimizer_zero_grads before backward (before or after
 * forward), the backward of a Linear layer applied once since the last
 * update adds -lr * gy^T x straight into its W (one GEMM, after the layer's
 * input gradient has read W) instead of writing W's gradient, and
 * ch_optimizer_update then steps only the other parameters (biases, other
 * functions, layers applied more than once, which keep the usual path).
 * The result is the same step (to rounding); what is saved is the update's
 * pass over the weights and their gradients. The contract: between backward
 * and update those weights already hold their new values and their
 * gradients were never written (they read as zero), so
 * ch_optimizer_compute_grads_norm, _clip_grads, _weight_decay and
 * _accumulate_grads then fail with CH_ERR_INVALID_ARGUMENT; a second
 * backward through such a layer before update (gradients accumulated over
 * several passes) fails with CH_ERR_GRAPH; nothing else in the graph may
 * read such a W (a variable over the parameter's array). lr is read when the
 * step is taken. Only for the optimizer of ch_optimizer_sgd_new without an
 * update hook (a multi-node optimizer): CH_ERR_INVALID_ARGUMENT otherwise.
 * enable 0 turns it off (a step already taken stays taken until update).
 * Off by default. */
CH_API ch_status ch_optimizer_set_step_in_backward(ch_optimizer* optimizer, int enable);
/* 1 if the optimizer takes its step in backward, else 0 (also for an
 * invalid handle). Cannot fail. */
CH_API int ch_optimizer_step_in_backward(const ch_optimizer* optimizer);

/* Fill every gradient array with zeros. A CPU gradient that no ch_array_data
 * pointer has been taken of is only marked zero here and written at its first
 * use (a Linear layer's backward then writes its weight gradient instead of
 * adding to zeros): every read through the API sees zeros. */
CH_API ch_status ch_optimizer_zero_grads(ch_optimizer* optimizer);
/* t += 1, then update every parameter in place from its gradient and state.
 * Fails with CH_ERR_INVALID_ARGUMENT before setup. If a user callback fails,
 * parameters before it have been updated and t stays incremented. */
CH_API ch_status ch_optimizer_update(ch_optimizer* optimizer);
/* grad_i += grads[i] for the n gradient arrays of another source (n must be
 * the parameter count; shapes and dtypes must match; checked before any
 * change). grads[] are borrowed and may be on other devices than the
 * parameters (a replica on another GPU): they are copied over first. */
CH_API ch_status ch_optimizer_accumulate_grads(ch_optimizer* optimizer, ch_array* const* grads,
                                               size_t n);
/* L2 norm of all gradients together: sqrt of the sum of squares of every
 * gradient element (accumulated in double). */
CH_API ch_status ch_optimizer_compute_grads_norm(double* out, const ch_optimizer* optimizer);
/* If the gradient norm exceeds `maxnorm` (>= 0), scale every gradient by
 * maxnorm / norm. */
CH_API ch_status ch_optimizer_clip_grads(ch_optimizer* optimizer, double maxnorm);
/* grad += decay * param for every parameter (call before update). */
CH_API ch_status ch_optimizer_weight_decay(ch_optimizer* optimizer, double decay);

/* --- update hook -----------------------------------------------------------
 * For wrappers that must act on the gradients of every step before the update
 * rule runs, e.g. ch_optimizer_new_multi_node (<ch/distributed.h>), which
 * averages them over processes. */

/* Called by ch_optimizer_update before anything else (t not yet
 * incremented), with the handle ch_optimizer_update was given (borrowed for
 * the call). A non-zero status fails that ch_optimizer_update with the same
 * status and the message the hook recorded with ch_error_set; the parameters
 * and t are then unchanged. */
typedef ch_status (*ch_optimizer_update_hook)(void* user_data, ch_optimizer* optimizer);

/* Install `hook` on `optimizer` (the object: every handle to it sees it),
 * replacing any previous hook (whose destroy is then called); hook NULL
 * removes it (user_data and destroy are then ignored). destroy (may be NULL) is called with
 * user_data once, when the hook is replaced or removed or the optimizer is gone. On failure destroy
 * is NOT called and the caller keeps user_data. */
CH_API ch_status ch_optimizer_set_update_hook(ch_optimizer* optimizer,
                                              ch_optimizer_update_hook hook, void* user_data,
                                              void (*destroy)(void* user_data));

/* --- state, for checkpoints ------------------------------------------------ */

/* Number of state arrays of all parameters together (e.g. 2 per parameter
 * for Adam). 0 for an invalid handle. Cannot fail. */
CH_API size_t ch_optimizer_state_count(const ch_optimizer* optimizer);
/* State array `index`, parameter by parameter in setup order and, within a
 * parameter, in the optimizer's state order; *key is "<path>/<state name>",
 * e.g. "l1/W/v". Each out may be NULL. *array: new reference sharing the
 * optimizer's state (writing it changes the state). *key: borrowed; valid
 * until the next setup or the optimizer's release. */
CH_API ch_status ch_optimizer_state(ch_array** array, const char** key,
                                    const ch_optimizer* optimizer, size_t index);

#ifdef __cplusplus
}
#endif
#endif /* CH_OPTIMIZER_H */
