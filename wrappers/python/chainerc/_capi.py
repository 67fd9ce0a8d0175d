"""Loading libchainerc and declaring the C API for ctypes.

This module is the only place that knows where the library lives and which C
signatures it has. `check(status)` is the only place that turns a ch_status into
a Python exception.

Library search order:
  1. the environment variable CHAINERC_LIBRARY (a path to libchainerc.so),
  2. the library inside the installed package (chainerc/_lib/libchainerc.so.0,
     built by `pip install ./wrappers/python`),
  3. the build tree of the repository this package sits in
     (<repo>/build/src/libchainerc.so.0),
  4. ctypes.util.find_library("chainerc") (an installed library).
"""

import ctypes
import ctypes.util
import os

from . import errors

c_void_p = ctypes.c_void_p
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_size_t = ctypes.c_size_t
c_double = ctypes.c_double
c_char_p = ctypes.c_char_p
POINTER = ctypes.POINTER
byref = ctypes.byref

PP = POINTER(c_void_p)  # an `out` handle: ch_x**


class Device(ctypes.Structure):
    _fields_ = [("type", c_int32), ("index", c_int32)]


class MemoryStats(ctypes.Structure):
    _fields_ = [
        ("bytes_in_use", c_int64),
        ("bytes_cached", c_int64),
        ("peak_bytes_in_use", c_int64),
        ("allocations", c_int64),
        ("cache_misses", c_int64),
    ]


class AllcloseReport(ctypes.Structure):
    _fields_ = [
        ("worst_index", c_int64),
        ("actual", c_double),
        ("expected", c_double),
        ("abs_diff", c_double),
        ("tolerance", c_double),
    ]


# Callback types (include/ch/function.h, array.h, gradient_check.h, common.h).
ReleaseCallback = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)
DestroyCallback = ctypes.CFUNCTYPE(None, c_void_p)
ForwardCallback = ctypes.CFUNCTYPE(c_int32, c_void_p, c_void_p, POINTER(c_void_p), c_size_t)
BackwardCallback = ctypes.CFUNCTYPE(
    c_int32, c_void_p, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p), c_size_t,
    POINTER(c_void_p), c_size_t)
EvalCallback = ctypes.CFUNCTYPE(c_int32, c_void_p, c_void_p)
GraphCallback = ctypes.CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t,
                                 POINTER(c_void_p), c_size_t)
GraphBackwardCallback = ctypes.CFUNCTYPE(
    c_int32, c_void_p, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p), c_size_t,
    POINTER(c_void_p), c_size_t, POINTER(c_void_p))


class FunctionDef(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("name", c_char_p),
        ("forward", ForwardCallback),
        ("backward", BackwardCallback),
        ("forward_cpu", ForwardCallback),
        ("backward_cpu", BackwardCallback),
        ("forward_gpu", ForwardCallback),
        ("backward_gpu", BackwardCallback),
        ("user_data", c_void_p),
        ("destroy", DestroyCallback),
        ("graph_backward", GraphBackwardCallback),  # version 2
    ]


class BackwardOptions(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("retain_grad", c_int32),
        ("enable_double_backprop", c_int32),
    ]


CH_FLOAT32, CH_FLOAT64, CH_INT32 = 0, 1, 2
CH_DEVICE_CPU, CH_DEVICE_CUDA = 1, 2
CH_FUNCTION_DEF_VERSION = 1  # raised to 2 below where the library knows graph_backward
CH_BACKWARD_OPTIONS_VERSION = 1


def _candidates():
    env = os.environ.get("CHAINERC_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    cands = [os.path.join(here, "_lib", "libchainerc.so.0"),
             os.path.join(repo, "build", "src", "libchainerc.so.0"),
             os.path.join(repo, "build", "src", "libchainerc.so")]
    found = ctypes.util.find_library("chainerc")
    if found:
        cands.append(found)
    return cands, False


def _load():
    cands, explicit = _candidates()
    tried = []
    for path in cands:
        if not explicit and os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError(
        "chainerc: cannot load libchainerc; set CHAINERC_LIBRARY to the path of "
        "libchainerc.so or build it with `meson setup build && ninja -C build`. Tried: "
        + "; ".join(tried))


lib, library_path = _load()

S = c_int32  # ch_status


def _decl(name, restype, argtypes, optional=False):
    try:
        fn = getattr(lib, name)
    except AttributeError:
        if optional:
            return None
        raise ImportError("chainerc: %s lacks the symbol %s (library too old?)"
                          % (library_path, name))
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def has(name):
    """Whether the loaded library exports `name` (parts merged later)."""
    return hasattr(lib, name)


# The symbol by which a library reports its CUDA devices (include/ch/cuda.h).
# A library without it only ever holds CPU arrays.
CUDA_PROBES = ("ch_cuda_device_count",)
cuda_symbols = any(has(n) for n in CUDA_PROBES)


# --- common.h ---------------------------------------------------------------
_decl("ch_version", c_int32, [])
_decl("ch_version_string", c_char_p, [])
_decl("ch_error_status", S, [])
_decl("ch_error_message", c_char_p, [])
_decl("ch_status_name", c_char_p, [S])
_decl("ch_error_set", None, [S, c_char_p])
_decl("ch_error_set_payload", None, [c_void_p, DestroyCallback])
_decl("ch_error_take_payload", c_void_p, [])
for _n in ("handles", "arrays", "variables", "functions"):
    _decl("ch_debug_live_" + _n, c_int64, [])
_decl("ch_debug_report_live_handles", None, [])

# --- array.h ------------------------------------------------------------------
_decl("ch_dtype_size", c_size_t, [c_int32])
_decl("ch_dtype_name", c_char_p, [c_int32])
_decl("ch_device_cpu", Device, [])
_decl("ch_array_new", S, [PP, c_int32, POINTER(c_int64), c_int32, c_void_p, Device])
_decl("ch_array_new_empty", S, [PP, c_int32, POINTER(c_int64), c_int32, Device])
_decl("ch_array_new_full", S, [PP, c_int32, POINTER(c_int64), c_int32, c_double, Device])
_decl("ch_array_wrap", S, [PP, c_int32, POINTER(c_int64), c_int32, c_void_p, Device,
                           ReleaseCallback, c_void_p])
_decl("ch_array_copy", S, [PP, c_void_p])
_decl("ch_array_reshape", S, [PP, c_void_p, POINTER(c_int64), c_int32])
_decl("ch_array_read", S, [c_void_p, c_void_p, c_size_t])
_decl("ch_array_write", S, [c_void_p, c_void_p, c_size_t])
_decl("ch_array_fill", S, [c_void_p, c_double])
_decl("ch_array_get", S, [POINTER(c_double), c_void_p, c_int64])
_decl("ch_array_retain", c_void_p, [c_void_p])
_decl("ch_array_release", S, [c_void_p])
_decl("ch_array_data", c_void_p, [c_void_p])
_decl("ch_array_dtype", c_int32, [c_void_p])
_decl("ch_array_ndim", c_int32, [c_void_p])
_decl("ch_array_shape", POINTER(c_int64), [c_void_p])
_decl("ch_array_size", c_int64, [c_void_p])
_decl("ch_array_nbytes", c_size_t, [c_void_p])
_decl("ch_array_device", Device, [c_void_p])
_decl("ch_memory_stats_get", S, [POINTER(MemoryStats), Device])
_decl("ch_memory_empty_cache", S, [Device])

# --- variable.h -------------------------------------------------------------
# Double backprop (optional: a library without it has version-1 definitions).
_decl("ch_variable_backward_ex", S, [c_void_p, POINTER(BackwardOptions)], optional=True)
_decl("ch_variable_grad_var", S, [PP, c_void_p], optional=True)
_decl("ch_grad", S, [POINTER(c_void_p), POINTER(c_void_p), c_size_t, POINTER(c_void_p), c_size_t,
                     POINTER(c_void_p), POINTER(BackwardOptions)], optional=True)
_decl("ch_config_set_enable_backprop", None, [c_int32], optional=True)
_decl("ch_config_enable_backprop", c_int32, [], optional=True)
_decl("ch_backprop_mode_push", S, [c_int32], optional=True)
_decl("ch_backprop_mode_pop", S, [], optional=True)
_decl("ch_backprop_mode_enabled", c_int32, [], optional=True)
if has("ch_grad"):
    CH_FUNCTION_DEF_VERSION = 2
_decl("ch_variable_new", S, [PP, c_void_p, c_int32])
_decl("ch_variable_retain", c_void_p, [c_void_p])
_decl("ch_variable_release", S, [c_void_p])
_decl("ch_variable_data", S, [PP, c_void_p])
_decl("ch_variable_set_data", S, [c_void_p, c_void_p])
_decl("ch_variable_grad", S, [PP, c_void_p])
_decl("ch_variable_set_grad", S, [c_void_p, c_void_p])
_decl("ch_variable_creator", S, [PP, c_void_p])
_decl("ch_variable_is_volatile", c_int32, [c_void_p])
_decl("ch_variable_size", c_int64, [c_void_p])
_decl("ch_variable_backward", S, [c_void_p, c_int32])
_decl("ch_variable_unchain_backward", S, [c_void_p])

# --- function.h -------------------------------------------------------------
_decl("ch_function_new", S, [PP, POINTER(FunctionDef)])
_decl("ch_function_retain", c_void_p, [c_void_p])
_decl("ch_function_release", S, [c_void_p])
_decl("ch_function_apply", S, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                               c_size_t, POINTER(c_size_t)])
_decl("ch_function_name", c_char_p, [c_void_p])
_decl("ch_function_forward", S, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                                 c_size_t, POINTER(c_size_t)])


class GraphDotOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("hide_parameters", c_int32),
                ("rankdir", c_char_p), ("output_names", POINTER(c_char_p))]


CH_GRAPH_DOT_OPTIONS_VERSION = 1
_decl("ch_variable_graph_dot", S, [POINTER(c_void_p), POINTER(c_void_p), c_size_t,
                                   POINTER(GraphDotOptions)])
_decl("ch_string_free", None, [c_void_p])
_decl("ch_function_input_count", c_size_t, [c_void_p])
_decl("ch_function_output_count", c_size_t, [c_void_p])
_decl("ch_function_input", S, [PP, c_void_p, c_size_t])
_decl("ch_function_output", S, [PP, c_void_p, c_size_t])
_decl("ch_function_unchain", S, [c_void_p])
_decl("ch_function_add_parameter", S, [c_void_p, c_char_p, c_void_p, c_void_p])
_decl("ch_function_parameter_count", c_size_t, [c_void_p])
_decl("ch_function_parameter", S, [PP, PP, POINTER(c_char_p), c_void_p, c_size_t])
_decl("ch_context_add_output", S, [c_void_p, c_void_p])
_decl("ch_context_set_grad_input", S, [c_void_p, c_size_t, c_void_p])
_decl("ch_context_save", S, [c_void_p, c_void_p])
_decl("ch_context_saved_count", c_size_t, [c_void_p])
_decl("ch_context_saved", S, [PP, c_void_p, c_size_t])
_decl("ch_context_set_user_data", S, [c_void_p, c_void_p, DestroyCallback])
_decl("ch_context_user_data", c_void_p, [c_void_p])
_decl("ch_context_function", S, [PP, c_void_p])
_decl("ch_context_needs_input_grad", c_int32, [c_void_p, c_size_t], optional=True)

# Context of GPU callbacks (device and stream); optional: older libraries lack them.
_decl("ch_context_device", Device, [c_void_p], optional=True)
_decl("ch_context_stream", c_void_p, [c_void_p], optional=True)

# --- cuda.h and the device parts of array.h (optional: CPU-only libraries) ----
_decl("ch_cuda_device_count", c_int32, [], optional=True)
_decl("ch_cuda_unavailable_reason", c_char_p, [], optional=True)
_decl("ch_device_cuda", Device, [c_int32], optional=True)
_decl("ch_cuda_current_device", S, [POINTER(c_int32)], optional=True)
_decl("ch_cuda_device_push", S, [c_int32], optional=True)
_decl("ch_cuda_device_pop", S, [], optional=True)
_decl("ch_cuda_synchronize", S, [c_int32], optional=True)
_decl("ch_array_to_device", S, [PP, c_void_p, Device], optional=True)
_decl("ch_array_copy_from", S, [c_void_p, c_void_p], optional=True)
_decl("ch_stream_new", S, [PP, Device], optional=True)
_decl("ch_stream_synchronize", S, [c_void_p], optional=True)
_decl("ch_stream_release", S, [c_void_p], optional=True)
_decl("ch_stream_native", c_void_p, [c_void_p], optional=True)
_decl("ch_stream_device", Device, [c_void_p], optional=True)
_decl("ch_array_to_device_async", S, [PP, c_void_p, Device, c_void_p], optional=True)
_decl("ch_array_copy_from_async", S, [c_void_p, c_void_p, c_void_p], optional=True)
_decl("ch_cuda_engine_stream", c_void_p, [c_int32], optional=True)
_decl("ch_cuda_graph_begin_capture", S, [Device], optional=True)
_decl("ch_cuda_graph_end_capture", S, [PP, Device], optional=True)
_decl("ch_cuda_graph_replay", S, [c_void_p], optional=True)
_decl("ch_cuda_graph_replay_with", S, [c_void_p, POINTER(c_void_p), POINTER(c_void_p), c_int32],
      optional=True)
_decl("ch_cuda_graph_size", c_int64, [c_void_p], optional=True)
_decl("ch_cuda_graph_release", S, [c_void_p], optional=True)

# --- kernel.h (user kernels: cuda.elementwise / cuda.reduce) ------------------
_decl("ch_elementwise_kernel_new", S, [PP, c_char_p, c_char_p, c_char_p, c_char_p],
      optional=True)
_decl("ch_elementwise_kernel_release", S, [c_void_p], optional=True)
_decl("ch_elementwise_kernel_call", S, [c_void_p, POINTER(c_void_p), c_size_t,
                                        POINTER(c_void_p), c_size_t], optional=True)
_decl("ch_reduction_kernel_new", S, [PP, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p,
                                     c_char_p, c_char_p, c_char_p], optional=True)
_decl("ch_reduction_kernel_release", S, [c_void_p], optional=True)
_decl("ch_reduction_kernel_call", S, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                                      c_size_t, POINTER(c_int32), c_int32, c_int32],
      optional=True)
_decl("ch_kernel_cpu_supported", c_int32, [], optional=True)
_decl("ch_kernel_cuda_supported", c_int32, [], optional=True)

# --- gradient_check.h -------------------------------------------------------
_decl("ch_numerical_grad", S, [POINTER(c_void_p), EvalCallback, c_void_p, POINTER(c_void_p),
                               c_size_t, POINTER(c_void_p), c_size_t, c_double])
_decl("ch_allclose", S, [c_void_p, c_void_p, c_double, c_double, POINTER(AllcloseReport)])
_decl("ch_check_backward", S, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                               c_size_t, c_double, c_double, c_double])
_decl("ch_check_backward_graph", S, [GraphCallback, c_void_p, POINTER(c_void_p), c_size_t,
                                     POINTER(c_void_p), c_size_t, c_double, c_double, c_double])
_decl("ch_check_double_backward", S, [GraphCallback, c_void_p, POINTER(c_void_p), c_size_t,
                                      POINTER(c_void_p), c_size_t, POINTER(c_void_p), c_size_t,
                                      c_double, c_double, c_double], optional=True)

# --- config.h -----------------------------------------------------------------
_decl("ch_config_set_train", None, [c_int32])
_decl("ch_config_train", c_int32, [])
_decl("ch_config_set_num_threads", S, [c_int32])
_decl("ch_config_num_threads", c_int32, [])
_decl("ch_config_seed", None, [ctypes.c_uint64])
_decl("ch_config_blas", c_char_p, [])
_decl("ch_config_set_gemm", S, [c_char_p], optional=True)
_decl("ch_config_gemm", c_char_p, [], optional=True)
_decl("ch_config_set_gemm_cache", S, [c_char_p], optional=True)
_decl("ch_config_gemm_cache", c_char_p, [], optional=True)
_decl("ch_config_set_use_cudnn", None, [c_int32])
_decl("ch_config_use_cudnn", c_int32, [])
_decl("ch_config_set_allow_tf32", None, [c_int32])
_decl("ch_config_allow_tf32", c_int32, [])
_decl("ch_config_set_deterministic", None, [c_int32], optional=True)
_decl("ch_config_deterministic", c_int32, [], optional=True)
_decl("ch_config_cudnn", c_int32, [POINTER(c_char_p), POINTER(c_int32)], optional=True)
_decl("ch_config_cudnn_calls", c_int64, [c_char_p], optional=True)
_decl("ch_config_reset_cudnn_calls", None, [], optional=True)

# --- calls that keep the GIL ----------------------------------------------------
# The calls made for every array a user Function sees or returns, and for each
# Variable made and freed, go through a second handle on the library that keeps
# the GIL (ctypes.PyDLL): letting the GIL go and taking it back costs more than
# they do. They never wait for another thread: at most they hold one of the
# library's short internal locks, under which it calls nothing back, and a
# callback they cause (a release callback, a user data destructor) runs on
# this thread, which has the GIL. A release may free a whole graph, as a
# Python object's deallocation does, under the GIL too. Every other call
# (functions, backward, ...) releases the GIL as usual (ctypes.CDLL).
_gil_lib = ctypes.PyDLL(library_path)


class _HeldCalls(object):
    pass


held = _HeldCalls()
for _n in ("ch_array_retain", "ch_array_release", "ch_array_data", "ch_array_dtype",
           "ch_array_ndim", "ch_array_shape", "ch_array_size", "ch_array_device",
           "ch_array_new", "ch_array_wrap", "ch_variable_new", "ch_variable_release",
           "ch_variable_is_volatile", "ch_context_user_data", "ch_context_device",
           "ch_context_needs_input_grad", "ch_context_add_output", "ch_context_set_grad_input",
           "ch_context_set_user_data"):
    if has(_n):
        _f, _d = getattr(_gil_lib, _n), getattr(lib, _n)
        _f.restype, _f.argtypes = _d.restype, _d.argtypes
        setattr(held, _n, _f)
del _n, _f, _d

# --- host-side registry of Python objects behind C `void*` user data ----------
# C code gets small integer keys, never PyObject pointers; `destroy` callbacks
# drop the entry. Keys start at 1 so that no key is NULL.
_objects = {}
_keys = __import__("itertools").count(1)  # next() is atomic under the GIL


def register(obj, _next=_keys.__next__):
    key = _next()
    _objects[key] = obj
    return key


def lookup(key):
    return _objects[key]


def _unregister(key, _pop=_objects.pop):
    # Runs from C, possibly while the interpreter shuts down: only bound names.
    try:
        _pop(key, None)
    except BaseException:  # pragma: no cover
        pass


def immortal(cb):
    """Keep a ctypes callback object (and so its C thunk) alive until the
    process exits: the library may call it while Python tears modules down
    (an array released by the last Variable freed at shutdown)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(cb))
    return cb


# One callback object for the whole process: drop the registry entry `key`.
unregister_cb = immortal(DestroyCallback(_unregister))
release_cb = immortal(ReleaseCallback(lambda data, key, _u=_unregister: _u(key)))

# --- errors -------------------------------------------------------------------
_error_message = lib.ch_error_message
_take_payload = lib.ch_error_take_payload


def raise_status(status):
    """Raise the exception for a failed call; call it right after the call."""
    message = _error_message().decode("utf-8", "replace")
    payload = _take_payload()
    if payload:
        exc = _objects.pop(payload, None)
        if isinstance(exc, BaseException):
            # The host exception raised inside a callback, with its own traceback.
            if hasattr(exc, "add_note") and message:
                exc.add_note("(chainerc: %s)" % message)
            raise exc
    name = lib.ch_status_name(status).decode()
    raise errors.error_class(status)(message or name, status=status, status_name=name)


def check(status):
    if status:
        raise_status(status)


def fail_in_callback(exc):
    """Record `exc` for the engine from inside a callback; returns the status."""
    status = errors.CH_ERR_CALLBACK
    if isinstance(exc, errors.ChainerError) and exc.status:
        status = exc.status
    try:
        msg = "%s: %s" % (type(exc).__name__, exc)
    except Exception:  # pragma: no cover - str() itself failed
        msg = type(exc).__name__
    lib.ch_error_set(status, msg.encode("utf-8", "replace"))
    lib.ch_error_set_payload(register(exc), unregister_cb)
    return status


def cpu():
    return Device(CH_DEVICE_CPU, 0)


# --- chainerc._speedups (optional C paths) -------------------------------------
# The C extension built from _speedups.c (build_speedups.py, test.sh) does the
# hot paths of user Functions and of Variables made from NumPy arrays with the
# semantics of the ctypes code in function.py, variable.py and _array.py,
# which runs where it is absent or CHAINERC_NO_SPEEDUPS=1. It gets the
# addresses of this library's functions (it is not linked against one).
def load_speedups(copy_below):
    """The set-up chainerc._speedups module, or None (absent, or
    CHAINERC_NO_SPEEDUPS set to anything but 0)."""
    if os.environ.get("CHAINERC_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    try:
        from . import _speedups as sp
    except Exception:  # absent, or built for another Python or NumPy: the ctypes paths
        return None
    if getattr(sp, "API_VERSION", None) != SPEEDUPS_API_VERSION:
        return None  # built from another version of _speedups.c: rebuild it
    table = {}
    for name in ("ch_array_retain", "ch_array_release", "ch_array_data", "ch_array_dtype",
                 "ch_array_ndim", "ch_array_shape", "ch_array_wrap", "ch_array_new",
                 "ch_variable_new", "ch_variable_release", "ch_variable_set_grad",
                 "ch_function_apply", "ch_context_add_output", "ch_context_set_grad_input",
                 "ch_context_set_user_data", "ch_context_user_data", "ch_context_device",
                 "ch_context_needs_input_grad"):
        if has(name):
            table[name] = ctypes.cast(getattr(lib, name), c_void_p).value
    sp.setup(table, not cuda_symbols, copy_below)
    return sp


speedups = None  # the module once _array.py loaded it
SPEEDUPS_API_VERSION = 1  # _speedups.c's API_VERSION
