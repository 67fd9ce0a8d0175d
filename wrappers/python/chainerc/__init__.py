"""chainerc: Chainer 1.x's define-by-run API in Python over libchainerc's C ABI.

    from chainerc import Variable, Function, FunctionSet, optimizers, cuda, gradient_check
    import chainerc.functions as F

NumPy arrays are shared with the engine without copies; DLPack moves arrays
to and from NumPy and PyTorch without copies (from_dlpack, __dlpack__).
"""

import ctypes
import os as _os

from . import _capi
from .errors import *  # noqa: F401,F403
from . import errors
from ._array import Array, from_dlpack, asarray
from .variable import Variable, grad, no_backprop_mode, force_backprop_mode
from .function import Function, FunctionNode
from . import functions, gradient_check, testing, cuda, computational_graph

library_path = _capi.library_path
__version__ = _capi.lib.ch_version_string().decode()


def version():
    """The library's run-time version string, e.g. "0.1.0"."""
    return _capi.lib.ch_version_string().decode()


# --- process-wide settings (include/ch/config.h) ------------------------------------
def set_train(train):
    """Default train/test flag for dropout and batch normalization."""
    _capi.lib.ch_config_set_train(1 if train else 0)


def get_train():
    return bool(_capi.lib.ch_config_train())


def set_num_threads(n):
    _capi.check(_capi.lib.ch_config_set_num_threads(int(n)))


def get_num_threads():
    return int(_capi.lib.ch_config_num_threads())


def seed(value):
    """Reseed the engine's random generator (initialisation, dropout)."""
    _capi.lib.ch_config_seed(int(value) & 0xFFFFFFFFFFFFFFFF)


def blas():
    """The CPU's GEMM: the candidate libraries, the mode, and the library
    chosen per shape class (include/ch/config.h, ch_config_blas)."""
    return _capi.lib.ch_config_blas().decode()


def set_gemm(library):
    """Fix the library of the CPU's matrix products ("openblas", "onednn",
    "blis", "libxsmm", "onednn-matmul"), or "auto" (the default): the fastest measured per shape class.
    Raises for a library that is not available, naming the candidates."""
    _capi.check(_capi.lib.ch_config_set_gemm(str(library).encode()))


def get_gemm():
    """"auto" or the library set by set_gemm or CH_GEMM."""
    return _capi.lib.ch_config_gemm().decode()


def set_gemm_cache(directory):
    """Where the GEMM choices are kept on disk, for later processes: a
    directory, "" (kept in this process only: nothing read or written), or
    None (the environment's: $CH_GEMM_CACHE_DIR, else
    ~/.cache/chainerc/gemm; none with CH_GEMM_CACHE=0). Clears the choices
    made so far."""
    arg = None if directory is None else _os.fsencode(directory)
    _capi.check(_capi.lib.ch_config_set_gemm_cache(arg))


def get_gemm_cache():
    """The directory of the GEMM choices; "" when they are not kept on disk."""
    return _os.fsdecode(_capi.lib.ch_config_gemm_cache())


def set_use_cudnn(on):
    """Whether the CUDA backend may use cuDNN (the seed's use_cudnn, here one
    process-wide switch; on at start). Off, or where cuDNN is absent,
    chainerc's own CUDA kernels run."""
    _capi.lib.ch_config_set_use_cudnn(1 if on else 0)


def get_use_cudnn():
    return bool(_capi.lib.ch_config_use_cudnn())


CUDNN_STATES = ("in use", "switched off", "not built", "not found", "version mismatch",
                "no device", "init failed")


def cudnn_state():
    """Whether cuDNN is in use and, if not, why (ch_config_cudnn): a tuple
    (state, reason, version), state one of CUDNN_STATES ("in use": reason
    ""), version cudnnGetVersion() or 0. Loads libcudnn if not done yet."""
    reason = ctypes.c_char_p()
    version = ctypes.c_int32()
    st = _capi.lib.ch_config_cudnn(ctypes.byref(reason), ctypes.byref(version))
    name = CUDNN_STATES[st] if 0 <= st < len(CUDNN_STATES) else str(st)
    return name, (reason.value or b"").decode(), version.value


def cudnn_calls(function=None):
    """Calls into cuDNN for chainerc's kernel `function` ("conv2d_forward",
    "relu", ...), or for all with None (ch_config_cudnn_calls)."""
    return _capi.lib.ch_config_cudnn_calls(None if function is None else function.encode())


def reset_cudnn_calls():
    _capi.lib.ch_config_reset_cudnn_calls()


def set_allow_tf32(on):
    """Whether float32 GEMMs and convolutions on CUDA may use TF32 tensor
    cores (off at start)."""
    _capi.lib.ch_config_set_allow_tf32(1 if on else 0)


def get_allow_tf32():
    return bool(_capi.lib.ch_config_allow_tf32())


def set_deterministic(on):
    """Whether work on CUDA devices must give bit-identical results from run
    to run (off at start; cuDNN then uses deterministic algorithms only;
    chainerc's own kernels and the CPU are deterministic either way)."""
    _capi.lib.ch_config_set_deterministic(1 if on else 0)


def get_deterministic():
    return bool(_capi.lib.ch_config_deterministic())


# --- memory and leaks --------------------------------------------------------------
def memory_stats():
    """The CPU caching allocator's statistics as a dict (bytes_in_use,
    bytes_cached, peak_bytes_in_use, allocations, cache_misses)."""
    s = _capi.MemoryStats()
    _capi.check(_capi.lib.ch_memory_stats_get(_capi.byref(s), _capi.cpu()))
    return {name: getattr(s, name) for name, _ in _capi.MemoryStats._fields_}


def empty_cache():
    """Return cached CPU blocks to the system."""
    _capi.check(_capi.lib.ch_memory_empty_cache(_capi.cpu()))


def live_handles():
    """Live chainerc handles of each kind (for leak checks)."""
    lib = _capi.lib
    return {"all": lib.ch_debug_live_handles(), "arrays": lib.ch_debug_live_arrays(),
            "variables": lib.ch_debug_live_variables(),
            "functions": lib.ch_debug_live_functions()}


def _optional(name):
    import importlib
    try:
        return importlib.import_module("." + name, __name__)
    except ImportError:  # the library lacks that part yet
        return None


optimizers = _optional("optimizers")
serializers = _optional("serializers")
datasets = _optional("datasets")
try:
    from .function_set import FunctionSet  # noqa: F401
except ImportError:
    FunctionSet = None
