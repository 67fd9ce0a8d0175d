"""chainerc.functions: the built-in differentiable functions of
include/ch/functions.h (Chainer's chainer.functions).

Every plain function is one `_define` call: its Python signature and the C
entry point, generated into _generated.py from src/ops/manifest.py
(scripts/gen_functions.py). Argument kinds in the signature:
  x        a variable (a Variable, or an array made into one)
  name:d   a float (C double)           name:i   an int (C int32)
  name:q   an int (C int64)
  name:b   a bool (C int32 0/1)         name:u   an unsigned 64-bit int
  name:s   a shape tuple (C int64* + int32 ndim)
  name:m   a train flag: True/False/None (C CH_MODE_TRAIN/TEST/DEFAULT)
  name:a   an optional array (C const ch_array*, NULL for None)
and `=default` makes an argument optional. A function whose C entry point takes
a versioned options struct (more than four options) is defined with
`options=<version>`: its non-variable arguments become the struct's fields
(chainerc._options), filled from the call's arguments at that version.
Parameterized functions (Linear, Convolution2D, ...) are classes over the C
constructors (see _link.py).
"""

import ctypes

import numpy as np

from .. import _capi, _array, _options
from .._capi import lib, c_void_p, raise_status, PP, S
from ..variable import Variable

_KINDS = {"d": _capi.c_double, "i": _capi.c_int32, "b": _capi.c_int32, "q": _capi.c_int64,
          "u": ctypes.c_uint64, "m": _capi.c_int32, "a": c_void_p}


def _var(x, volatile=False):
    return x if isinstance(x, Variable) else Variable(x, volatile)


def _volatile_of(*xs):
    """Arrays given with variables become variables of the same volatility."""
    for x in xs:
        if isinstance(x, Variable):
            return x.volatile
    return False


def _mode(train):
    return -1 if train is None else (1 if train else 0)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    return (_capi.c_int64 * len(shape))(*shape), len(shape)


class _ArrayArg(object):
    """Keeps a ch_array handle for the duration of one call."""

    __slots__ = ("h",)

    def __init__(self, a):
        self.h = None if a is None else _array.to_handle(a)

    def __del__(self, _release=lib.ch_array_release):
        if self.h:
            _release(self.h)
            self.h = None


def _define(signature, cname, doc="", options=0):
    """Define module-level function from `signature` ('name(x, y, axis:i=0)')
    calling C `cname`; absent from the library -> not defined. With `options`
    (a struct version), the options go to C in a `const ch_<name>_options*`."""
    if not _capi.has(cname):
        return None
    pyname, rest = signature.split("(", 1)
    params = [p.strip() for p in rest.rstrip(")").split(",") if p.strip()]
    argtypes = [PP]
    py_params, prelude, call_args = [], [], []
    var_names = [p.strip() for p in params if ":" not in p.split("=")[0]]
    if len(var_names) > 1:
        prelude.append("    _vol = _volatile_of(%s)" % ", ".join(var_names))
    for p in params:
        default = None
        if "=" in p:
            p, default = p.split("=", 1)
        name, _, kind = p.partition(":")
        py_params.append(name if default is None else "%s=%s" % (name, default))
        if options and kind:
            continue  # an options-struct field, filled below
        if not kind:  # a variable
            vol = ", _vol" if len(var_names) > 1 else ""
            prelude.append("    %s = _var(%s%s)" % (name, name, vol))
            call_args.append("%s._h" % name)
            argtypes.append(c_void_p)
        elif kind == "s":
            prelude.append("    %s_p, %s_n = _shape(%s)" % (name, name, name))
            call_args += ["%s_p" % name, "%s_n" % name]
            argtypes += [ctypes.POINTER(_capi.c_int64), _capi.c_int32]
        elif kind == "m":
            call_args.append("_mode(%s)" % name)
            argtypes.append(_KINDS[kind])
        elif kind == "b":
            call_args.append("1 if %s else 0" % name)
            argtypes.append(_KINDS[kind])
        elif kind == "a":
            prelude.append("    %s_a = _ArrayArg(%s)" % (name, name))
            call_args.append("%s_a.h" % name)
            argtypes.append(_KINDS[kind])
        else:
            call_args.append(name)
            argtypes.append(_KINDS[kind])
    env_struct = None
    if options:
        fields = _options.struct_fields(signature)
        env_struct = _options.options_struct(cname.replace("ch_functions_", "ch_") + "_options",
                                              fields)
        conv = {"b": "1 if %s else 0", "m": "_mode(%s)"}
        prelude.append("    _o = _Options(%d, %s)" % (options, ", ".join(
            conv.get(k, "%s") % n for n, k in fields)))
        call_args.append("_byref(_o)")
        argtypes.append(ctypes.POINTER(env_struct))
    fn = _capi._decl(cname, S, argtypes)
    src = ("def %s(%s):\n%s\n"
           "    out = c_void_p()\n"
           "    st = _fn(out, %s)\n"
           "    if st:\n"
           "        raise_status(st)\n"
           "    v = _new(_Variable)\n"
           "    v._h = out.value\n"
           "    v._data = None\n"
           "    return v\n"
           % (pyname, ", ".join(py_params), "\n".join(prelude) or "    pass",
              ", ".join(call_args)))
    env = dict(_var=_var, _volatile_of=_volatile_of, _shape=_shape, _mode=_mode,
               _ArrayArg=_ArrayArg, c_void_p=c_void_p, raise_status=raise_status, _fn=fn,
               _new=object.__new__, _Variable=Variable, _Options=env_struct,
               _byref=ctypes.byref)
    exec(src, env)
    f = env[pyname]
    f.__doc__ = doc or "chainerc built-in %s (C: %s)." % (pyname, cname)
    f.__module__ = __name__
    globals()[pyname] = f
    return f


# --- the plain functions, generated from src/ops/manifest.py ---------------------------
from . import _generated  # noqa: E402

_generated.define_all(_define)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - Chainer's name
    """Sum of the elements: all of them (a 0-d variable), along `axis` or
    over a tuple of axes (Chainer 7)."""
    if axis is None:
        if keepdims:
            x = _var(x)
            return reshape(_sum_all(x), (1,) * x.ndim)
        return _sum_all(x)
    if isinstance(axis, (int, np.integer)):
        return _sum_axis(x, int(axis), keepdims)
    return _reduce._sum_axes(x, axis, keepdims)


# --- issue 42 reductions over axes (hand-bound: their C entry points take axes) --------
from . import _reduce  # noqa: E402

for _name in ("average", "mean", "max", "min", "argmax", "argmin", "logsumexp", "cumsum"):
    if getattr(_reduce, "_" + _name if _name not in ("average", "mean") else "_mean", None):
        globals()[_name] = getattr(_reduce, _name)


def gelu(x, approximate="none"):
    """GELU (PyTorch's F.gelu): x Phi(x) exactly, or with approximate='tanh' the tanh
    approximation (ch_functions_gelu, ch_functions_gelu_tanh)."""
    if approximate == "none":
        return _gelu(x)
    if approximate == "tanh":
        return _gelu_tanh(x)
    raise ValueError("gelu: approximate must be 'none' or 'tanh' (got %r)" % (approximate,))


_define("_where(condition:a, x, y)", "ch_functions_where")


def where(condition, x, y):
    """Chainer's F.where: x where `condition` is true (nonzero), else y, with NumPy
    broadcasting. condition: a boolean, int32 or float array (or Variable: its data),
    not differentiated."""
    if isinstance(condition, Variable):
        condition = condition.data
    if isinstance(condition, (bool, np.bool_)) or (
            isinstance(condition, np.ndarray) and condition.dtype == np.bool_):
        condition = np.asarray(condition, dtype=np.int32)
    elif not isinstance(condition, (np.ndarray, _array.Array)) and not hasattr(
            condition, "__dlpack__"):
        condition = np.asarray(condition)
        if condition.dtype == np.bool_ or condition.dtype.kind in "iu":
            condition = condition.astype(np.int32)
    return _where(condition, x, y)



def linear(x, W, b=None, n_batch_axes=1):
    """Linear function y = x W^T + b (Chainer 7's F.linear): W (out_size, in_size),
    b (out_size,) or None; the first n_batch_axes axes of x are batch axes."""
    if b is None:
        return _linear_nobias(x, W, n_batch_axes)
    return _linear(x, W, b, n_batch_axes)


# --- neural-network functions: see _nn.py and _link.py ---------------------------------
from . import _nn  # noqa: E402

for _name in ("max_pooling_2d", "average_pooling_2d", "transpose", "concat", "copy", "lstm"):
    if hasattr(_nn, _name):
        globals()[_name] = getattr(_nn, _name)
from ._link import *  # noqa: E402,F401,F403
from ._array_fns import *  # noqa: E402,F401,F403


# --- Chainer 1.x call signatures -------------------------------------------------------
# The seed's relu, sigmoid, tanh, softmax, softmax_cross_entropy and the
# poolings take use_cudnn=True; use_cudnn=False runs the call with cuDNN off
# (ch_config_set_use_cudnn, restored afterwards), as Chainer 1.x did.
def _with_use_cudnn(f):
    import functools

    @functools.wraps(f)
    def call(*args, **kwargs):
        use_cudnn = kwargs.pop("use_cudnn", True)
        if use_cudnn or not _capi.has("ch_config_set_use_cudnn"):
            return f(*args, **kwargs)
        before = lib.ch_config_use_cudnn()
        lib.ch_config_set_use_cudnn(0)
        try:
            return f(*args, **kwargs)
        finally:
            lib.ch_config_set_use_cudnn(before)
    return call


if "_softmax_axis" in globals():
    _softmax_axis1 = softmax

    def softmax(x, axis=1):
        """Softmax along `axis` (Chainer 7's F.softmax(x, axis=1))."""
        return _softmax_axis1(x) if axis == 1 else _softmax_axis(x, axis)

for _name in ("relu", "sigmoid", "tanh", "softmax", "softmax_cross_entropy", "max_pooling_2d",
              "average_pooling_2d"):
    if _name in globals():
        globals()[_name] = _with_use_cudnn(globals()[_name])

if "identity" in globals():
    _identity1 = identity

    def identity(*inputs):
        """Returns its inputs (a tuple for several); gradients pass through
        (Chainer 1.x's identity(*inputs))."""
        if len(inputs) == 1:
            return _identity1(inputs[0])
        return tuple(_identity1(x) for x in inputs)
