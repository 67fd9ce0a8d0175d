"""The reductions over axes of issue 42 (Chainer 7's F.sum with a tuple,
F.mean / F.average, F.max, F.min, F.argmax, F.argmin, F.logsumexp), bound by
hand: their C entry points take an axes array (naxes 0 meaning every axis,
Chainer's axis=None). axis=() reduces nothing (NumPy): the input comes back
through identity."""

import ctypes

import numpy as np

from .. import _capi
from .._capi import c_void_p, raise_status, PP, S
from ..variable import Variable, _new_var

_AX = [PP, c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32]


def _var(x):
    return x if isinstance(x, Variable) else Variable(x)


def _axes(axis):
    """(C array, count) for None, an int or a tuple of ints; None for ()."""
    if axis is None:
        return None, 0
    if isinstance(axis, (int, np.integer)):
        ax = (int(axis),)
    else:
        ax = tuple(int(a) for a in axis)
        if not ax:
            return ()
    return (ctypes.c_int32 * len(ax))(*ax), len(ax)


def _call(fn, x, *args):
    out = c_void_p()
    st = fn(out, x._h, *args)
    if st:
        raise_status(st)
    return _new_var(out.value)


def _identity(x):
    from . import identity
    return identity(x)


def _reduce_keepdims(cname):
    if not _capi.has(cname):
        return None
    fn = _capi._decl(cname, S, _AX + [ctypes.c_int32])

    def f(x, axis=None, keepdims=False):
        x = _var(x)
        ax = _axes(axis)
        if ax == ():
            return _identity(x)
        return _call(fn, x, ax[0], ax[1], 1 if keepdims else 0)
    return f


def _reduce(cname):
    if not _capi.has(cname):
        return None
    fn = _capi._decl(cname, S, _AX)

    def f(x, axis=None):
        x = _var(x)
        ax = _axes(axis)
        if ax == ():
            return _identity(x)
        return _call(fn, x, ax[0], ax[1])
    return f


_sum_axes = _reduce_keepdims("ch_functions_sum_axes")
_mean = _reduce_keepdims("ch_functions_mean")
_max = _reduce_keepdims("ch_functions_max")
_min = _reduce_keepdims("ch_functions_min")
_argmax = _reduce("ch_functions_argmax")
_argmin = _reduce("ch_functions_argmin")
_logsumexp = _reduce("ch_functions_logsumexp")
_cumsum = _reduce("ch_functions_cumsum")

if _capi.has("ch_functions_average"):
    _average_c = _capi._decl("ch_functions_average", S, _AX + [c_void_p, ctypes.c_int32])
else:
    _average_c = None


def average(x, axis=None, weights=None, keepdims=False):
    """Weighted average over all axes or one axis (Chainer 7's F.average);
    without weights the arithmetic mean over any axes."""
    if weights is None:
        return _mean(x, axis, keepdims)
    x = _var(x)
    w = weights if isinstance(weights, Variable) else Variable(weights, x.volatile)
    ax = _axes(axis)
    if ax == ():
        raise ValueError("average: axis=() with weights")
    return _call(_average_c, x, ax[0], ax[1], w._h, 1 if keepdims else 0)


def mean(x, axis=None, weights=None, keepdims=False):
    """Chainer 7's F.mean: the same function as F.average."""
    return average(x, axis, weights, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001 - Chainer's name
    """Maximum over axes (None: all); the gradient goes to every maximum."""
    return _max(x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001 - Chainer's name
    """Minimum over axes (None: all); the gradient goes to every minimum."""
    return _min(x, axis, keepdims)


def argmax(x, axis=None):
    """int32 index of the first maximum (axis None: the flat index)."""
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError("argmax: axis must be None or an int")
    return _argmax(x, axis)


def argmin(x, axis=None):
    """int32 index of the first minimum (axis None: the flat index)."""
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError("argmin: axis must be None or an int")
    return _argmin(x, axis)


def logsumexp(x, axis=None):
    """log(sum(exp(x))) over axes (None: all), computed stably."""
    return _logsumexp(x, axis)


def cumsum(x, axis=None):
    """Cumulative sum along `axis` (None: of the flattened x; Chainer 7)."""
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError("cumsum: axis must be None or an int")
    return _cumsum(x, axis)
