"""Checkpoints as NumPy .npz files (chainer.serializers.save_npz/load_npz):
a FunctionSet's parameters keyed by path ("l1/W"), an optimizer's t and
state. numpy.load reads them directly."""

import ctypes
import os

from . import _capi
from ._capi import c_void_p, check, S

_d = _capi._decl
_fs_save = _d("ch_function_set_save_npz", S, [c_void_p, ctypes.c_char_p, ctypes.c_int32])
_fs_load = _d("ch_function_set_load_npz", S, [c_void_p, ctypes.c_char_p])
_opt_save = _d("ch_optimizer_save_npz", S, [c_void_p, ctypes.c_char_p, ctypes.c_int32])
_opt_load = _d("ch_optimizer_load_npz", S, [c_void_p, ctypes.c_char_p])
_save_arrays = _d("ch_serializers_save_npz_arrays", S,
                  [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(c_void_p),
                   ctypes.c_size_t, ctypes.c_int32])
_load_array = _d("ch_serializers_load_npz_array", S,
                 [_capi.PP, ctypes.c_char_p, ctypes.c_char_p])


def _target(obj):
    from .function_set import FunctionSet
    from .optimizers import Optimizer
    if isinstance(obj, FunctionSet):
        return obj._handle, _fs_save, _fs_load
    if isinstance(obj, Optimizer):
        return obj._handle, _opt_save, _opt_load
    raise TypeError("save_npz/load_npz take a FunctionSet or an Optimizer; got %s"
                    % type(obj).__name__)


def save_npz(path, obj, compression=True):
    """Save `obj` (FunctionSet or Optimizer) to the .npz file `path`."""
    h, save, _ = _target(obj)
    check(save(h, os.fsencode(path), 1 if compression else 0))


def load_npz(path, obj):
    """Load `obj` (FunctionSet or Optimizer) from `path`, in place; on any error
    nothing is changed."""
    h, _, load = _target(obj)
    check(load(h, os.fsencode(path)))


def save_npz_arrays(path, arrays, compression=True):
    """Write a {key: array} dict as an .npz file (the library's writer)."""
    from . import _array
    keys = [k.encode() for k in arrays]
    hs = [_array.to_handle(arrays[k]) for k in arrays]
    try:
        n = len(hs)
        check(_save_arrays(os.fsencode(path), (ctypes.c_char_p * max(n, 1))(*keys),
                           (c_void_p * max(n, 1))(*hs), n, 1 if compression else 0))
    finally:
        for h in hs:
            _capi.lib.ch_array_release(h)


def load_npz_array(path, key):
    """The entry `key` of the .npz file at `path` as a NumPy array."""
    from . import _array
    out = c_void_p()
    check(_load_array(out, os.fsencode(path), key.encode()))
    return _array.handle_to_numpy(out.value)
