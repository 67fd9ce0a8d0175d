"""Neural-network built-ins of include/ch/functions.h whose Python signature
is not the C one (poolings with ksize/stride/pad pairs, transpose, concat,
copy, lstm); the plain ones are generated (_generated.py). Each is skipped
when the loaded library lacks it."""

import ctypes

from .. import _capi
from .._capi import c_void_p, raise_status, PP, S
from ..variable import Variable, _new_var

def _var(x):
    return x if isinstance(x, Variable) else Variable(x)


def _pair(v):
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    return int(v), int(v)


def max_pooling_2d(x, ksize, stride=None, pad=0, cover_all=True):
    """Spatial max pooling (Chainer 1.0.1): ksize, stride (None = ksize), pad
    are ints or pairs."""
    from . import _max_pooling_2d
    kh, kw = _pair(ksize)
    sy, sx = _pair(stride) if stride is not None else (kh, kw)
    ph, pw = _pair(pad)
    return _max_pooling_2d(x, kh, kw, sy, sx, ph, pw, cover_all)


def average_pooling_2d(x, ksize, stride=None, pad=0):
    """Spatial average pooling (Chainer 1.0.1); padding counts as zeros."""
    from . import _average_pooling_2d
    kh, kw = _pair(ksize)
    sy, sx = _pair(stride) if stride is not None else (kh, kw)
    ph, pw = _pair(pad)
    return _average_pooling_2d(x, kh, kw, sy, sx, ph, pw)


if _capi.has("ch_functions_transpose"):
    _transpose = _capi._decl("ch_functions_transpose", S,
                             [PP, c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32])

    def transpose(x, axes=None):
        """Permute the axes (NumPy's transpose); None reverses them."""
        x = _var(x)
        out = c_void_p()
        if axes is None:
            st = _transpose(out, x._h, None, 0)
        else:
            axes = tuple(int(a) for a in axes)
            st = _transpose(out, x._h, (ctypes.c_int32 * len(axes))(*axes), len(axes))
        if st:
            raise_status(st)
        return _new_var(out.value)

if _capi.has("ch_functions_concat"):
    _concat = _capi._decl("ch_functions_concat", S,
                          [PP, ctypes.POINTER(c_void_p), ctypes.c_size_t, ctypes.c_int32])

    def concat(xs, axis=1):
        """Concatenate variables along `axis` (Chainer's default axis 1)."""
        vs = [_var(x) for x in xs]
        out = c_void_p()
        st = _concat(out, (c_void_p * len(vs))(*[v._h for v in vs]), len(vs), int(axis))
        if st:
            raise_status(st)
        return _new_var(out.value)

if _capi.has("ch_functions_copy"):
    _copy = _capi._decl("ch_functions_copy", S, [PP, c_void_p, _capi.Device])

    def copy(x, dst):
        """Copy to device `dst` (-1 or None = CPU, n >= 0 = GPU n; Chainer's copy)."""
        x = _var(x)
        dev = _capi.cpu() if dst is None or dst < 0 else _capi.Device(_capi.CH_DEVICE_CUDA, dst)
        out = c_void_p()
        st = _copy(out, x._h, dev)
        if st:
            raise_status(st)
        return _new_var(out.value)

if _capi.has("ch_functions_lstm"):
    _lstm = _capi._decl("ch_functions_lstm", S, [PP, PP, c_void_p, c_void_p])

    def lstm(c_prev, x):
        """LSTM units (Chainer 1.0.1's lstm; gates interleaved): returns (c, h)."""
        c_prev, x = _var(c_prev), _var(x)
        c, h = c_void_p(), c_void_p()
        st = _lstm(c, h, c_prev._h, x._h)
        if st:
            raise_status(st)
        return _new_var(c.value), _new_var(h.value)
