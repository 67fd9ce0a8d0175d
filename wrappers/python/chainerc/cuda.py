"""chainer.cuda's API. chainerc runs CUDA inside the C library; from Python,
arrays on the GPU travel through DLPack (from_dlpack / __dlpack__). When the
library was built without CUDA (or no GPU is present) every GPU entry point
raises chainerc.UnsupportedError with the reason."""

import numpy as np

from . import _capi, errors

_lib = _capi.lib


def _probe():
    for name in _capi.CUDA_PROBES:
        if _capi.has(name):
            fn = _capi._decl(name, _capi.c_int32, [])
            return bool(fn()), None
    return False, ("libchainerc (%s) was built without CUDA (rebuild with "
                   "`meson setup build -Dcuda=enabled`)" % _capi.library_path)


available, _why = _probe()
if not available and _why is None:
    _why = "no CUDA device is available to libchainerc (%s)" % _capi.library_path


def check_cuda_available():
    """Raise chainerc.UnsupportedError if CUDA cannot be used."""
    if not available:
        raise errors.UnsupportedError("CUDA is not available: " + _why,
                                      status=errors.CH_ERR_UNSUPPORTED,
                                      status_name="CH_ERR_UNSUPPORTED")


def __getattr__(name):
    if name == "cupy":
        check_cuda_available()
        raise errors.UnsupportedError("chainerc does not use CuPy; GPU arrays are chainerc.Array "
                                      "objects (DLPack)", status=errors.CH_ERR_UNSUPPORTED,
                                      status_name="CH_ERR_UNSUPPORTED")
    raise AttributeError(name)


def to_gpu(array, device=None):
    """Copy an array to the GPU (needs a CUDA build of libchainerc)."""
    check_cuda_available()
    raise errors.UnsupportedError("to_gpu: this libchainerc exposes no device copy",
                                  status=errors.CH_ERR_UNSUPPORTED,
                                  status_name="CH_ERR_UNSUPPORTED")


def to_cpu(array):
    """A NumPy array for `array` (itself if it already is one)."""
    if isinstance(array, np.ndarray):
        return array
    from ._array import Array
    if isinstance(array, Array):
        return array.numpy()
    return np.asarray(array)


def get_array_module(*args):
    """The array module for `args`: numpy (chainerc's Python side computes on NumPy)."""
    return np


def get_device(*args):
    return None


def init(device=None):
    check_cuda_available()
