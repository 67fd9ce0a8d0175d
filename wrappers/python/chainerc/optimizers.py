"""Optimizers (chainer.optimizers of Chainer 1.0.1, and Chainer 7's AdamW,
AMSGrad and NesterovAG) over ch_optimizer: SGD, MomentumSGD, AdaGrad,
AdaDelta, Adam, AdamW, RMSprop, NesterovAG. Parameters are updated
in place in the engine's arrays (shared with the functions, no copy).
Hyperparameters are attributes (opt.lr = 0.1)."""

import ctypes

from . import _capi, _array
from ._capi import lib, c_void_p, check, PP, S
from ._handle_owner import HandleOwner
from .function_set import FunctionSet, ParamsGrads

_d = _capi._decl
_D = _capi.c_double
_release = _d("ch_optimizer_release", S, [c_void_p])
_setup = _d("ch_optimizer_setup", S, [c_void_p, c_void_p])
_setup_arrays = _d("ch_optimizer_setup_arrays", S, [c_void_p, ctypes.POINTER(c_void_p),
                                                    ctypes.POINTER(c_void_p), ctypes.c_size_t])
_zero_grads = _d("ch_optimizer_zero_grads", S, [c_void_p])
_update = _d("ch_optimizer_update", S, [c_void_p])
_accumulate = _d("ch_optimizer_accumulate_grads", S, [c_void_p, ctypes.POINTER(c_void_p),
                                                      ctypes.c_size_t])
_norm = _d("ch_optimizer_compute_grads_norm", S, [ctypes.POINTER(_D), c_void_p])
_clip = _d("ch_optimizer_clip_grads", S, [c_void_p, _D])
_decay = _d("ch_optimizer_weight_decay", S, [c_void_p, _D])
_get_t = _d("ch_optimizer_t", ctypes.c_int64, [c_void_p])
_set_t = _d("ch_optimizer_set_t", S, [c_void_p, ctypes.c_int64])
_get_hp = _d("ch_optimizer_get_hyperparam", S, [ctypes.POINTER(_D), c_void_p, ctypes.c_char_p])
_set_hp = _d("ch_optimizer_set_hyperparam", S, [c_void_p, ctypes.c_char_p, _D])
_name = _d("ch_optimizer_name", ctypes.c_char_p, [c_void_p])
_param_count = _d("ch_optimizer_parameter_count", ctypes.c_size_t, [c_void_p])
_epoch = _d("ch_optimizer_epoch", ctypes.c_int64, [c_void_p], optional=True)
_new_epoch = _d("ch_optimizer_new_epoch", S, [c_void_p], optional=True)
_state_count = _d("ch_optimizer_state_count", ctypes.c_size_t, [c_void_p])
_state = _d("ch_optimizer_state", S, [PP, ctypes.POINTER(ctypes.c_char_p), c_void_p,
                                      ctypes.c_size_t])
_set_step_in_backward = _d("ch_optimizer_set_step_in_backward", S, [c_void_p, ctypes.c_int],
                           optional=True)
_step_in_backward = _d("ch_optimizer_step_in_backward", ctypes.c_int, [c_void_p], optional=True)
_parameter = _d("ch_optimizer_parameter", S, [PP, PP, ctypes.POINTER(ctypes.c_char_p), c_void_p,
                                              ctypes.c_size_t])


class Optimizer(HandleOwner):
    """Base of the built-in optimizers (chainer.Optimizer)."""

    _hyperparams = ()

    def _init(self, ctor, *args):
        out = c_void_p()
        check(ctor(out, *[float(a) for a in args]))
        object.__setattr__(self, "_handle", out.value)
        object.__setattr__(self, "_target", None)

    _release_handle = staticmethod(_release)

    def release(self):
        """Drop the optimizer's engine handle (and its state) now."""
        HandleOwner.release(self)

    def __getattr__(self, name):
        if name in type(self)._hyperparams or name == "lr":
            v = _D()
            check(_get_hp(v, self.__dict__["_handle"], name.encode()))
            return v.value
        raise AttributeError("%s has no attribute %r" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        if name in type(self)._hyperparams:
            check(_set_hp(self._handle, name.encode(), float(value)))
        else:
            object.__setattr__(self, name, value)

    def setup(self, params_grads):
        """Prepare for optimization: a FunctionSet, the (params, grads) of its
        collect_parameters(), or any (params, grads) pair of array tuples."""
        if isinstance(params_grads, FunctionSet):
            check(_setup(self._handle, params_grads._handle))
            object.__setattr__(self, "_target", params_grads)
            return
        if isinstance(params_grads, ParamsGrads) and params_grads.function_set is not None:
            self.setup(params_grads.function_set)
            return
        params, grads = params_grads
        if len(params) != len(grads):
            raise ValueError("setup: %d parameters but %d gradients" % (len(params), len(grads)))
        hp = [_array.to_handle(p) for p in params]
        hg = [_array.to_handle(g) for g in grads]
        n = len(hp)
        try:
            check(_setup_arrays(self._handle, (c_void_p * max(n, 1))(*hp),
                                (c_void_p * max(n, 1))(*hg), n))
        finally:
            for h in hp + hg:
                lib.ch_array_release(h)
        object.__setattr__(self, "_target", (params, grads))

    def zero_grads(self):
        """Fill every gradient with zeros."""
        check(_zero_grads(self._handle))

    def update(self):
        """One step: t += 1, then update every parameter in place."""
        check(_update(self._handle))

    def accumulate_grads(self, grads):
        hs = [_array.to_handle(g) for g in grads]
        try:
            check(_accumulate(self._handle, (c_void_p * max(len(hs), 1))(*hs), len(hs)))
        finally:
            for h in hs:
                lib.ch_array_release(h)

    def compute_grads_norm(self):
        v = _D()
        check(_norm(v, self._handle))
        return v.value

    def clip_grads(self, maxnorm):
        check(_clip(self._handle, float(maxnorm)))

    def weight_decay(self, decay):
        check(_decay(self._handle, float(decay)))

    @property
    def step_in_backward(self):
        """Whether plain SGD's step is taken inside backward (see the setter)."""
        return bool(_step_in_backward(self._handle)) if _step_in_backward else False

    @step_in_backward.setter
    def step_in_backward(self, enable):
        """SGD only: in a step with zero_grads before backward, backward adds -lr * gy^T x
        straight into each Linear weight applied once (one GEMM) instead of
        writing its gradient, and update() steps the other parameters; those
        weights' gradients then read as zero until update, and
        compute_grads_norm, clip_grads, weight_decay and accumulate_grads
        raise (ch_optimizer_set_step_in_backward)."""
        check(_set_step_in_backward(self._handle, 1 if enable else 0))

    @property
    def t(self):
        return int(_get_t(self._handle))

    @t.setter
    def t(self, value):
        check(_set_t(self._handle, int(value)))

    @property
    def epoch(self):
        """Number of epochs finished (Chainer's Optimizer.epoch; in checkpoints)."""
        return int(_epoch(self._handle)) if _epoch else 0

    def new_epoch(self):
        """epoch += 1, e.g. after each pass over the training data."""
        check(_new_epoch(self._handle))

    @property
    def name(self):
        return _name(self._handle).decode()

    @property
    def states(self):
        """{"<path>/<state name>": array}: the optimizer's state arrays as NumPy
        views (writing them changes the state)."""
        res = {}
        for i in range(_state_count(self._handle)):
            a, key = c_void_p(), ctypes.c_char_p()
            check(_state(a, key, self._handle, i))
            res[key.value.decode()] = _array.handle_to_numpy(a.value)
        return res

    @property
    def parameter_paths(self):
        """Paths of the parameters set up ("l1/W", or "0", "1"... for arrays)."""
        res = []
        for i in range(_param_count(self._handle)):
            path = ctypes.c_char_p()
            check(_parameter(None, None, path, self._handle, i))
            res.append(path.value.decode())
        return tuple(res)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%g" % (h, getattr(self, h)) for h in type(self)._hyperparams))


def _make(cls_name, cname, params, doc):
    ctor = _d(cname, S, [PP] + [_D] * len(params))
    names = tuple(p for p, _ in params)

    def __init__(self, *args, **kwargs):
        values = dict(params)
        for name, v in zip(names, args):
            values[name] = v
        for name, v in kwargs.items():
            if name not in values:
                raise TypeError("%s() got an unexpected keyword argument %r" % (cls_name, name))
            values[name] = v
        self._init(ctor, *[values[n] for n in names])
    cls = type(cls_name, (Optimizer,), {"__init__": __init__, "_hyperparams": names,
                                        "__doc__": doc})
    globals()[cls_name] = cls
    return cls


_make("SGD", "ch_optimizer_sgd_new", [("lr", 0.01)], "SGD(lr=0.01): param -= lr * grad.")
_make("MomentumSGD", "ch_optimizer_momentum_sgd_new", [("lr", 0.01), ("momentum", 0.9)],
      "MomentumSGD(lr=0.01, momentum=0.9).")
_make("AdaGrad", "ch_optimizer_adagrad_new", [("lr", 0.001), ("eps", 1e-8)],
      "AdaGrad(lr=0.001, eps=1e-8).")
_make("AdaDelta", "ch_optimizer_adadelta_new", [("rho", 0.95), ("eps", 1e-6)],
      "AdaDelta(rho=0.95, eps=1e-6).")
_make("RMSprop", "ch_optimizer_rmsprop_new", [("lr", 0.01), ("alpha", 0.99), ("eps", 1e-8)],
      "RMSprop(lr=0.01, alpha=0.99, eps=1e-8).")
_make("NesterovAG", "ch_optimizer_nesterov_ag_new", [("lr", 0.01), ("momentum", 0.9)],
      "NesterovAG(lr=0.01, momentum=0.9) (Chainer 7).")


class _AdamOptions(ctypes.Structure):
    # include/ch/optimizer.h's ch_adam_options, version 1.
    _fields_ = [("version", ctypes.c_uint32), ("alpha", _D), ("beta1", _D), ("beta2", _D),
                ("eps", _D), ("eta", _D), ("weight_decay_rate", _D), ("amsgrad", ctypes.c_int32),
                ("lam", _D)]


_adam_new = _d("ch_optimizer_adam_new", S, [PP] + [_D] * 5)
_adam_new_ex = _d("ch_optimizer_adam_new_ex", S, [PP, ctypes.POINTER(_AdamOptions)],
                  optional=True)


class Adam(Optimizer):
    """Adam(alpha=0.001, beta1=0.9, beta2=0.999, lam=1-1e-8, eps=1e-8, *, eta=1.0,
    weight_decay_rate=0, amsgrad=False).

    The positional order is the seed's (Chainer 1.x: lam before eps); Chainer 7's
    terms are keywords: weight_decay_rate > 0 is decoupled weight decay (AdamW),
    eta scales the step, amsgrad divides by the running maximum of v (state
    "vhat"; fixed for the optimizer's life). lr is the bias-corrected step
    (read-only)."""

    _hyperparams = ("alpha", "beta1", "beta2", "lam", "eps", "eta", "weight_decay_rate",
                    "amsgrad")

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, lam=1 - 1e-8, eps=1e-8, *,
                 eta=1.0, weight_decay_rate=0.0, amsgrad=False):
        if _adam_new_ex is None:  # a library from before Chainer 7's Adam
            if eta != 1.0 or weight_decay_rate != 0.0 or amsgrad:
                raise NotImplementedError("this libchainerc has no ch_optimizer_adam_new_ex "
                                          "(eta, weight_decay_rate, amsgrad)")
            self._init(_adam_new, alpha, beta1, beta2, lam, eps)
            return
        o = _AdamOptions(1, alpha, beta1, beta2, eps, eta, weight_decay_rate,
                         1 if amsgrad else 0, lam)
        out = c_void_p()
        check(_adam_new_ex(out, ctypes.byref(o)))
        object.__setattr__(self, "_handle", out.value)
        object.__setattr__(self, "_target", None)

    def __getattr__(self, name):
        if name == "amsgrad":
            return bool(Optimizer.__getattr__(self, name))
        return Optimizer.__getattr__(self, name)


class AdamW(Adam):
    """Chainer 7's AdamW(alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8, eta=1.0,
    weight_decay_rate=0): Adam with decoupled weight decay, Chainer 7's positional
    order and no decay of beta1 (lam = 1)."""

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8, eta=1.0,
                 weight_decay_rate=0.0):
        Adam.__init__(self, alpha, beta1, beta2, 1.0, eps, eta=eta,
                      weight_decay_rate=weight_decay_rate)

# --- optimizers written in Python (ch_optimizer_new callbacks) ---------------------

InitStateCallback = ctypes.CFUNCTYPE(_capi.c_int32, c_void_p, c_void_p, c_void_p,
                                     ctypes.POINTER(c_void_p), ctypes.c_size_t)
UpdateOneCallback = ctypes.CFUNCTYPE(_capi.c_int32, c_void_p, c_void_p, c_void_p,
                                     ctypes.POINTER(c_void_p), ctypes.c_size_t, ctypes.c_int64)


class _OptimizerDef(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("n_states", ctypes.c_size_t), ("state_names", ctypes.POINTER(ctypes.c_char_p)),
                ("init_state", InitStateCallback), ("update_one", UpdateOneCallback),
                ("user_data", c_void_p), ("destroy", _capi.DestroyCallback)]


_new_user = _d("ch_optimizer_new", S, [PP, ctypes.POINTER(_OptimizerDef)], optional=True)
_view = _array.handle_to_numpy
_retain = lib.ch_array_retain


def _py_init_state(user_data, param, grad, states, n):
    try:
        opt = _capi._objects[user_data]()
        p, g = _view(_retain(param)), _view(_retain(grad), True)
        st = opt.init_state(p, g)
        st = st if isinstance(st, (tuple, list)) else (st,)
        if len(st) != n:
            raise ValueError("%s.init_state returned %d arrays for %d state_names"
                             % (type(opt).__name__, len(st), n))
        for i, a in enumerate(st):
            states[i] = _array.to_handle(a)  # ownership passes to the optimizer
        return 0
    except BaseException as e:
        return _capi.fail_in_callback(e)


def _py_update_one(user_data, param, grad, states, n, t):
    try:
        opt = _capi._objects[user_data]()
        p, g = _view(_retain(param)), _view(_retain(grad), True)
        st = tuple(_view(_retain(states[i])) for i in range(n))
        opt.update_one(p, g, st if n != 1 else st[0], t)
        return 0
    except BaseException as e:
        return _capi.fail_in_callback(e)


_init_state_cb = _capi.immortal(InitStateCallback(_py_init_state))
_update_one_cb = _capi.immortal(UpdateOneCallback(_py_update_one))


class UserOptimizer(Optimizer):
    """An optimizer written in Python, run by the engine (the seed's Optimizer
    base class). Subclasses set `state_names` and define
    update_one(param, grad, state, t) updating `param` (and the state) in
    place; init_state(param, grad) returns the state arrays (default: zeros
    like param for each name). With one state name, `state` is that array;
    otherwise a tuple."""

    state_names = ()

    def __init__(self):
        import weakref
        names = [n.encode() for n in self.state_names]
        keep = (ctypes.c_char_p * max(len(names), 1))(*names)
        d = _OptimizerDef()
        d.version = 1
        d.name = type(self).__name__.encode()
        d.n_states = len(names)
        d.state_names = ctypes.cast(keep, ctypes.POINTER(ctypes.c_char_p))
        d.init_state = _init_state_cb
        d.update_one = _update_one_cb
        key = _capi.register(weakref.ref(self))
        d.user_data = key
        d.destroy = _capi.unregister_cb
        out = c_void_p()
        st = _new_user(out, d)
        if st:
            _capi._objects.pop(key, None)
            _capi.raise_status(st)
        object.__setattr__(self, "_handle", out.value)
        object.__setattr__(self, "_target", None)

    def init_state(self, param, grad):
        import numpy as np
        return tuple(np.zeros_like(param) for _ in self.state_names)

    def update_one(self, param, grad, state, t):
        raise NotImplementedError


__all__ = ["Optimizer", "UserOptimizer", "SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam",
           "AdamW", "RMSprop", "NesterovAG"]
