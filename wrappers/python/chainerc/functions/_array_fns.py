"""The array functions of issue 42 whose Python signature is not the C one
(Chainer 7's chainer.functions): squeeze, repeat, tile, pad, cast, stack,
split_axis, get_item (and Variable.__getitem__) and scatter_add. The plain
ones (expand_dims, flatten, swapaxes, flip, select_item) are generated. Each
is skipped when the loaded library lacks it."""

import ctypes

import numpy as np

from .. import _capi, _array
from .._capi import c_void_p, raise_status, PP, S
from ..variable import Variable, _new_var

__all__ = []

_I32P = ctypes.POINTER(ctypes.c_int32)
_I64P = ctypes.POINTER(ctypes.c_int64)


def _var(x):
    return x if isinstance(x, Variable) else Variable(x)


def _ints(v):
    if isinstance(v, (int, np.integer)):
        v = (v,)
    v = tuple(int(a) for a in v)
    return (ctypes.c_int32 * max(1, len(v)))(*v), len(v)


def _done(st, out):
    if st:
        raise_status(st)
    return _new_var(out.value)


def _export(name, f):
    globals()[name] = f
    __all__.append(name)


if _capi.has("ch_functions_squeeze"):
    _squeeze = _capi._decl("ch_functions_squeeze", S, [PP, c_void_p, _I32P, ctypes.c_int32])

    def squeeze(x, axis=None):
        """x without axes of extent 1: all of them (axis None) or those in axis."""
        x = _var(x)
        out = c_void_p()
        if axis is None:
            return _done(_squeeze(out, x._h, None, 0), out)
        p, n = _ints(axis)
        return _done(_squeeze(out, x._h, p, n), out)
    _export("squeeze", squeeze)

if _capi.has("ch_functions_repeat"):
    _repeat = _capi._decl("ch_functions_repeat", S,
                          [PP, c_void_p, _I32P, ctypes.c_int32, _I32P, ctypes.c_int32])

    def repeat(x, repeats, axis=None):
        """Each element repeated along axis (NumPy's repeat; axis None: flattened)."""
        x = _var(x)
        p, n = _ints(repeats)
        out = c_void_p()
        if axis is None:
            return _done(_repeat(out, x._h, p, n, None, 0), out)
        a = ctypes.c_int32(int(axis))
        return _done(_repeat(out, x._h, p, n, ctypes.byref(a), 1), out)
    _export("repeat", repeat)

if _capi.has("ch_functions_tile"):
    _tile = _capi._decl("ch_functions_tile", S, [PP, c_void_p, _I32P, ctypes.c_int32])

    def tile(x, reps):
        """x tiled reps times along each axis (NumPy's tile)."""
        x = _var(x)
        p, n = _ints(reps)
        out = c_void_p()
        return _done(_tile(out, x._h, p, n), out)
    _export("tile", tile)

if _capi.has("ch_functions_pad"):
    _pad = _capi._decl("ch_functions_pad", S,
                       [PP, c_void_p, _I32P, ctypes.c_int32, ctypes.c_double])

    def pad(x, pad_width, mode="constant", constant_values=0):
        """x padded (Chainer 7's pad; mode 'constant' only). pad_width: an int,
        (before, after), or one such pair per axis."""
        if mode != "constant":
            raise NotImplementedError("pad: mode %r; only 'constant' is supported" % (mode,))
        x = _var(x)
        w = np.asarray(pad_width, dtype=np.int64)
        if w.ndim == 2:
            flat = w.reshape(-1)
        elif w.ndim <= 1:
            flat = w.reshape(-1)
        else:
            raise ValueError("pad: pad_width of shape %s" % (w.shape,))
        p, n = _ints(flat.tolist())
        out = c_void_p()
        return _done(_pad(out, x._h, p, n, float(constant_values)), out)
    _export("pad", pad)

_DTYPE_CODES = {np.dtype(np.float32): _capi.CH_FLOAT32, np.dtype(np.float64): _capi.CH_FLOAT64,
                np.dtype(np.int32): _capi.CH_INT32}

if _capi.has("ch_functions_cast"):
    _cast = _capi._decl("ch_functions_cast", S, [PP, c_void_p, ctypes.c_int32])

    def cast(x, type):  # noqa: A002 - Chainer's name
        """x converted to dtype `type` (float32, float64, int32); gradient cast back."""
        x = _var(x)
        code = _DTYPE_CODES.get(np.dtype(type))
        if code is None:
            raise TypeError("cast: dtype %s; float32, float64 or int32 expected" % np.dtype(type))
        out = c_void_p()
        return _done(_cast(out, x._h, code), out)
    _export("cast", cast)

if _capi.has("ch_functions_stack"):
    _stack = _capi._decl("ch_functions_stack", S,
                         [PP, ctypes.POINTER(c_void_p), ctypes.c_size_t, ctypes.c_int32])

    def stack(xs, axis=0):
        """Join variables of one shape along a new axis (Chainer 7's stack)."""
        vs = [_var(x) for x in xs]
        out = c_void_p()
        return _done(_stack(out, (c_void_p * max(1, len(vs)))(*[v._h for v in vs]), len(vs),
                            int(axis)), out)
    _export("stack", stack)

if _capi.has("ch_functions_split_axis"):
    _split = _capi._decl("ch_functions_split_axis", S,
                         [ctypes.POINTER(c_void_p), ctypes.c_size_t, c_void_p, _I64P,
                          ctypes.c_int32, ctypes.c_int32, ctypes.c_int32])

    def split_axis(x, indices_or_sections, axis, force_tuple=True):
        """x cut along axis into equal sections (an int) or at sorted indices
        (Chainer 7's split_axis): a tuple of variables (a single piece
        without force_tuple is returned as it is)."""
        x = _var(x)
        if isinstance(indices_or_sections, (int, np.integer)):
            sections = int(indices_or_sections)
            n = max(sections, 0)
            res = (c_void_p * max(1, n))()
            st = _split(res, n, x._h, None, 0, sections, int(axis))
        else:
            idx = [int(i) for i in indices_or_sections]
            n = len(idx) + 1
            res = (c_void_p * n)()
            st = _split(res, n, x._h, (ctypes.c_int64 * max(1, len(idx)))(*idx), len(idx), 0,
                        int(axis))
        if st:
            raise_status(st)
        pieces = tuple(_new_var(res[i]) for i in range(n))
        if not force_tuple and len(pieces) == 1:
            return pieces[0]
        return pieces
    _export("split_axis", split_axis)


class _Index(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("kind", ctypes.c_int32), ("flags", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("start", ctypes.c_int64), ("stop", ctypes.c_int64),
                ("step", ctypes.c_int64), ("array", c_void_p)]


_INT, _SLICE, _NEWAXIS, _ELLIPSIS, _ARRAY = 0, 1, 2, 3, 4


class _Key(object):
    """A Python key as ch_index items; keeps the index arrays' handles."""

    def __init__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        self.handles = []
        items = []
        for k in key:
            it = _Index(1, _SLICE, 0, 0, 0, 0, 1, None)
            if k is None:
                it.kind = _NEWAXIS
            elif k is Ellipsis:
                it.kind = _ELLIPSIS
            elif isinstance(k, slice):
                if k.start is not None:
                    it.flags |= 1
                    it.start = int(k.start)
                if k.stop is not None:
                    it.flags |= 2
                    it.stop = int(k.stop)
                if k.step is not None:
                    if int(k.step) == 0:
                        raise ValueError("slice step cannot be zero")
                    it.step = int(k.step)
            elif isinstance(k, (bool, np.bool_)):
                raise TypeError("get_item: boolean indices are not supported")
            elif isinstance(k, (int, np.integer)):
                it.kind = _INT
                it.start = int(k)
            else:
                a = k.data if isinstance(k, Variable) else k
                if isinstance(a, np.ndarray) or isinstance(a, (list, tuple)):
                    a = np.asarray(a)
                    if a.dtype.kind not in "iu":
                        raise TypeError("get_item: index array of dtype %s; integers expected"
                                        % a.dtype)
                    a = np.ascontiguousarray(a, dtype=np.int32)
                h = _array.to_handle(a)
                self.handles.append(h)
                it.kind = _ARRAY
                it.array = h
            items.append(it)
        self.n = len(items)
        self.items = (_Index * max(1, len(items)))(*items)

    def __del__(self, _release=_capi.lib.ch_array_release):
        for h in self.handles:
            _release(h)
        self.handles = []


if _capi.has("ch_functions_get_item"):
    _get_item = _capi._decl("ch_functions_get_item", S,
                            [PP, c_void_p, ctypes.POINTER(_Index), ctypes.c_int32])

    def get_item(x, slices):
        """x[slices] (Chainer 7's get_item): ints, slices (any step), None,
        Ellipsis and one integer array."""
        x = _var(x)
        k = _Key(slices)
        out = c_void_p()
        return _done(_get_item(out, x._h, k.items, k.n), out)
    _export("get_item", get_item)

    def _getitem(self, key):
        # IndexError where NumPy raises it, so that iteration stops as it does
        # over an array (the library's error is chained).
        try:
            return get_item(self, key)
        except Exception as e:
            if "out of bounds" in str(e) or "too many indices" in str(e):
                raise IndexError(str(e)) from e
            raise
    Variable.__getitem__ = _getitem

if _capi.has("ch_functions_scatter_add"):
    _scatter_add = _capi._decl("ch_functions_scatter_add", S,
                               [PP, c_void_p, ctypes.POINTER(_Index), ctypes.c_int32, c_void_p])

    def scatter_add(a, slices, b):
        """A copy of a with b added at a[slices] (Chainer 7's scatter_add;
        repeated positions add up)."""
        a, b = _var(a), _var(b)
        k = _Key(slices)
        out = c_void_p()
        return _done(_scatter_add(out, a._h, k.items, k.n, b._h), out)
    _export("scatter_add", scatter_add)
