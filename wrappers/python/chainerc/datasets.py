"""Data sets: IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed,
read by the library."""

import ctypes
import os

import numpy as np

from . import _capi, _array
from ._capi import c_void_p, check, PP, S

_read_idx = _capi._decl("ch_datasets_read_idx", S, [PP, ctypes.c_char_p, ctypes.c_int32,
                                                     _capi.c_double])


def read_idx(path, dtype=np.float32, scale=1.0):
    """The IDX file at `path` as a NumPy array of `dtype` (float32/float64:
    values times `scale`; int32: exact, scale 1). The array is the library's
    memory, shared without a copy."""
    out = c_void_p()
    check(_read_idx(out, os.fsencode(path), _array.ch_dtype_of(dtype), float(scale)))
    return _array.handle_to_numpy(out.value)
