"""chainer.cuda's API (the seed's section 2.2.1) over libchainerc's CUDA devices.

GPU arrays are chainerc.Array objects (`GPUArray` is an alias) holding a
ch_array on a CUDA device; they are DLPack producers too (torch.from_dlpack).
Device selection uses the library's per-thread device stack
(ch_cuda_device_push/pop), so `with cuda.using_device(1):` makes new arrays
(empty, zeros, to_gpu without a device) land on device 1.

cuda.elementwise and cuda.reduce build user kernels (include/ch/kernel.h): the
seed's PyCUDA-style argument lists ('float* w, const float* x', code indexing
`x[i]`) are translated to the library's typed parameter lists; the CuPy-style
form (in_params, out_params, operation, name) is accepted as well. Kernels are
compiled once per source and dtype (NVRTC on a GPU, the host compiler on the
emulated devices) and cached.

When the library has no CUDA device (a build without CUDA, or no GPU), every
GPU entry point raises chainerc.UnsupportedError with the reason; to_cpu and
get_array_module still work for CPU arrays.
"""

import re
import threading

import numpy as np

from . import _capi, errors
from ._array import Array, to_handle, handle_to_numpy
from ._capi import lib, c_void_p, c_int32, byref

GPUArray = Array
_has_cuda_api = _capi.has("ch_cuda_device_count")


def _probe():
    if not _has_cuda_api:
        return False, ("libchainerc (%s) was built without CUDA (rebuild with "
                       "`meson setup build -Dcuda=enabled`)" % _capi.library_path)
    if lib.ch_cuda_device_count() > 0:
        return True, None
    why = lib.ch_cuda_unavailable_reason().decode("utf-8", "replace")
    return False, "no CUDA device is available to libchainerc (%s): %s" % (
        _capi.library_path, why or "unknown reason")


available, _why = _probe()


def _unsupported(msg):
    return errors.UnsupportedError(msg, status=errors.CH_ERR_UNSUPPORTED,
                                   status_name="CH_ERR_UNSUPPORTED")


def check_cuda_available():
    """Raise chainerc.UnsupportedError if CUDA cannot be used."""
    if not available:
        raise _unsupported("CUDA is not available: " + _why)


def __getattr__(name):
    if name == "cupy":
        check_cuda_available()
        raise _unsupported("chainerc does not use CuPy; GPU arrays are chainerc.Array "
                           "objects (DLPack)")
    raise AttributeError(name)


def device_count():
    """Number of CUDA devices the library can use (0 without CUDA)."""
    return int(lib.ch_cuda_device_count()) if _has_cuda_api else 0


# --- devices ---------------------------------------------------------------------

class Device(object):
    """A CUDA device by its index (the seed's pycuda Device). Usable as a
    context manager: `with Device(1):` makes it current."""

    __slots__ = ("id", "_pushed")

    def __init__(self, index):
        self.id = int(index)
        self._pushed = 0

    def __int__(self):
        return self.id

    __index__ = __int__

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(("cuda", self.id))

    def __repr__(self):
        return "<chainerc.cuda.Device %d>" % self.id

    def synchronize(self):
        """Wait for all work queued on this device."""
        _capi.check(lib.ch_cuda_synchronize(self.id))

    def __enter__(self):
        _push(self.id)
        self._pushed += 1
        return self

    def __exit__(self, *exc):
        self._pushed -= 1
        _capi.check(lib.ch_cuda_device_pop())
        return False


def _push(index):
    check_cuda_available()
    _capi.check(lib.ch_cuda_device_push(int(index)))


def _current_index():
    check_cuda_available()
    out = c_int32()
    _capi.check(lib.ch_cuda_current_device(byref(out)))
    return out.value


def _gpu_index(a):
    """The CUDA device index of a chainerc array, or None for a CPU one."""
    if isinstance(a, Array):
        kind, index = a.device
        return index if kind == "cuda" else None
    return None


def get_device(arg=None):
    """The Device for `arg` (the seed's rule): None -> the current device;
    an int -> that device; a Device -> itself; a GPU array -> the device it
    is on; a NumPy array (or a CPU chainerc array) -> None."""
    if arg is None:
        return Device(_current_index())
    if isinstance(arg, Device):
        return arg
    if isinstance(arg, (bool, np.bool_)):
        raise TypeError("get_device: a bool is not a device")
    if isinstance(arg, (int, np.integer)):
        check_cuda_available()
        n = device_count()
        if not 0 <= int(arg) < n:
            raise errors.DeviceError("get_device: no CUDA device %d (there are %d)" % (arg, n),
                                     status=errors.CH_ERR_DEVICE, status_name="CH_ERR_DEVICE")
        return Device(int(arg))
    from .variable import Variable
    if isinstance(arg, Variable):
        arg = arg.data
    index = _gpu_index(arg)
    return None if index is None else Device(index)


def _device_index(device):
    """Index of a device specifier (None: the current device)."""
    d = get_device(device)
    if d is None:
        raise TypeError("not a CUDA device specifier: %r" % (type(device).__name__,))
    return d.id


class DeviceUser(object):
    """RAII-style device switcher (the seed's DeviceUser): `with` makes
    `device` current and restores the previous one; inactive for None."""

    def __init__(self, arg):
        self.device = None if arg is None else get_device(arg)
        self._depth = 0

    @property
    def is_active(self):
        return self.device is not None

    def __enter__(self):
        if self.device is not None:
            _push(self.device.id)
            self._depth += 1
        return self

    def __exit__(self, *exc):
        if self.device is not None and self._depth:
            self._depth -= 1
            _capi.check(lib.ch_cuda_device_pop())
        return False


def using_device(*args):
    """A DeviceUser for the first argument that names a GPU device (a GPU
    array, a Variable holding one, an int or a Device); an inactive one if
    none does (so CPU code runs unchanged)."""
    for a in args:
        if a is None:
            continue
        if isinstance(a, (Device, int, np.integer)) and not isinstance(a, bool):
            return DeviceUser(a)
        d = get_device(a)
        if d is not None:
            return DeviceUser(d)
    return DeviceUser(None)


_used = threading.local()


def use_device(arg, pop=True):
    """Make the device of `arg` current on this thread (the seed's use_device).
    With pop=True the device set by the previous use_device call on this
    thread is replaced instead of stacked."""
    d = get_device(arg)
    if d is None:
        return
    depth = getattr(_used, "depth", 0)
    if pop and depth:
        _capi.check(lib.ch_cuda_device_pop())
        depth -= 1
    _push(d.id)
    _used.depth = depth + 1


def init(device=None):
    """Check that CUDA can be used and, with `device`, make it current
    (chainerc initializes its devices lazily: nothing else to do)."""
    check_cuda_available()
    if device is not None:
        use_device(device)


def synchronize(device=None):
    """Wait for the work queued on `device` (None: the current device)."""
    _capi.check(lib.ch_cuda_synchronize(_device_index(device)))


# --- arrays ------------------------------------------------------------------------

def _cuda(index):
    return lib.ch_device_cuda(int(index))


def _to_device(h, device):
    out = c_void_p()
    _capi.check(lib.ch_array_to_device(byref(out), h, device))
    return out.value


def to_gpu(array, device=None):
    """Copy a CPU array (NumPy or chainerc) to `device` (None: the current
    device). A GPU array is returned as is, without a copy (the seed's rule,
    even when `device` names another device: use copy for that)."""
    check_cuda_available()
    if isinstance(array, Array) and _gpu_index(array) is not None:
        return array
    index = _device_index(device)
    h = to_handle(array if isinstance(array, Array) else np.asarray(array))
    try:
        return Array._from_handle(_to_device(h, _cuda(index)))
    finally:
        lib.ch_array_release(h)


def to_cpu(array):
    """A NumPy array for `array`: itself if it already is one, a copy of a GPU
    array, a zero-copy view of a CPU chainerc array."""
    if isinstance(array, np.ndarray):
        return array
    from .variable import Variable
    if isinstance(array, Variable):
        array = array.data
        if isinstance(array, np.ndarray):
            return array
    if isinstance(array, Array):
        if _gpu_index(array) is None:
            return array.numpy()
        return handle_to_numpy(_to_device(array.handle, _capi.cpu()))
    return np.asarray(array)


def copy(array, out=None, out_device=None):
    """Copy a GPU array into `out` (same dtype and size, any device) or into a
    new array on `out_device` (None: the array's own device)."""
    check_cuda_available()
    if not isinstance(array, Array):
        raise TypeError("copy: expected a chainerc GPU array, got %s" % type(array).__name__)
    if out is not None:
        if not isinstance(out, Array):
            raise TypeError("copy: out must be a chainerc GPU array, got %s"
                            % type(out).__name__)
        _capi.check(lib.ch_array_copy_from(out.handle, array.handle))
        return out
    if out_device is None:
        index = _gpu_index(array)
        if index is None:
            index = _current_index()
    else:
        index = _device_index(out_device)
    return Array._from_handle(_to_device(array.handle, _cuda(index)))


class Stream(object):
    """A CUDA stream on a device (None: the current device), ordered with the
    device's default stream, on which chainerc's own work runs. Copies queued
    on it (to_gpu_async, to_cpu_async, copy_async) are complete after
    synchronize()."""

    def __init__(self, device=None):
        check_cuda_available()
        out = c_void_p()
        _capi.check(lib.ch_stream_new(byref(out), _cuda(_device_index(device))))
        self._h = out.value

    @property
    def handle(self):
        """The cudaStream_t (an int address), for other CUDA libraries."""
        return lib.ch_stream_native(self._h)

    @property
    def device(self):
        return Device(lib.ch_stream_device(self._h).index)

    def synchronize(self):
        _capi.check(lib.ch_stream_synchronize(self._h))

    def release(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            lib.ch_stream_release(h)

    def __del__(self, _release=lib.ch_stream_release if _has_cuda_api else None):
        h = getattr(self, "_h", None)
        if h and _release is not None:
            self._h = None
            _release(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False


def to_gpu_async(array, stream=None):
    """Copy a CPU array to the current device on `stream` (None: a
    synchronous to_gpu). The result is valid after stream.synchronize();
    the source must not be written before. A GPU array is returned as is."""
    if stream is None:
        return to_gpu(array)
    if isinstance(array, Array) and _gpu_index(array) is not None:
        return array
    h = to_handle(array if isinstance(array, Array) else np.asarray(array))
    try:
        out = c_void_p()
        _capi.check(lib.ch_array_to_device_async(byref(out), h, _cuda(_current_index()),
                                                 stream._h))
        return Array._from_handle(out.value)
    finally:
        lib.ch_array_release(h)


def to_cpu_async(array, stream=None):
    """Copy a GPU array to page-locked host memory on `stream` (None: a
    synchronous to_cpu); read the NumPy result after stream.synchronize().
    A NumPy array is returned as is."""
    if stream is None or not isinstance(array, Array) or _gpu_index(array) is None:
        return to_cpu(array)
    out = c_void_p()
    _capi.check(lib.ch_array_to_device_async(byref(out), array.handle, _capi.cpu(), stream._h))
    return handle_to_numpy(out.value)


def copy_async(array, out=None, out_device=None, stream=None):
    """copy() queued on `stream` (None: synchronous); complete after
    stream.synchronize()."""
    if stream is None:
        return copy(array, out, out_device)
    if out is None:
        index = _gpu_index(array) if out_device is None else _device_index(out_device)
        r = c_void_p()
        _capi.check(lib.ch_array_to_device_async(byref(r), array.handle, _cuda(index),
                                                 stream._h))
        return Array._from_handle(r.value)
    _capi.check(lib.ch_array_copy_from_async(out.handle, array.handle, stream._h))
    return out


def _shape_of(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if len(shape) > 8:
        raise errors.ShapeError("chainerc arrays have at most 8 dimensions; got shape %s"
                                % (shape,), status=errors.CH_ERR_SHAPE,
                                status_name="CH_ERR_SHAPE")
    return shape


def _new(shape, dtype, fill, device=None):
    from ._array import ch_dtype_of, _SHAPES
    check_cuda_available()
    shape = _shape_of(shape)
    code = ch_dtype_of(dtype)
    dev = _cuda(_current_index() if device is None else device)
    out = c_void_p()
    if fill is None:
        st = lib.ch_array_new_empty(byref(out), code, _SHAPES[len(shape)](*shape), len(shape),
                                    dev)
    else:
        st = lib.ch_array_new_full(byref(out), code, _SHAPES[len(shape)](*shape), len(shape),
                                   float(fill), dev)
    _capi.check(st)
    return Array._from_handle(out.value)


def _like(array):
    if not isinstance(array, (Array, np.ndarray)):
        array = np.asarray(array)
    return array.shape, array.dtype, _gpu_index(array)


def empty(shape, dtype=np.float32):
    """Uninitialized GPU array on the current device."""
    return _new(shape, dtype, None)


def full(shape, fill_value, dtype=np.float32, stream=None):
    """GPU array on the current device filled with `fill_value`."""
    return _new(shape, dtype, fill_value)


def zeros(shape, dtype=np.float32, stream=None):
    return _new(shape, dtype, 0)


def ones(shape, dtype=np.float32, stream=None):
    return _new(shape, dtype, 1)


def empty_like(array):
    """Uninitialized GPU array of the shape and dtype of `array`, on its
    device (the current device for a CPU array)."""
    shape, dtype, index = _like(array)
    return _new(shape, dtype, None, index)


def full_like(array, fill_value, stream=None):
    shape, dtype, index = _like(array)
    return _new(shape, dtype, fill_value, index)


def zeros_like(array, stream=None):
    return full_like(array, 0)


def ones_like(array, stream=None):
    return full_like(array, 1)


def get_array_module(*args):
    """The array module for `args`: numpy (chainerc's Python side computes on
    NumPy; GPU arrays are computed on by chainerc's functions and by
    cuda.elementwise / cuda.reduce kernels)."""
    return np


# --- user kernels --------------------------------------------------------------------

_C_TYPES = {"float": "float32", "float32": "float32", "double": "float64",
            "float64": "float64", "int": "int32", "int32": "int32"}
_NP_TO_KERNEL = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
                 np.dtype(np.int32): "int32"}
_ARG = re.compile(r"^(const\s+)?(\w+)\s*(\*)?\s*(\w+)$")


def _indexed_only(name, code):
    """Whether every use of `name` in `code` is `name[i]`."""
    uses = re.findall(r"\b%s\b(\s*\[\s*i\s*\])?" % re.escape(name), code)
    return all(u for u in uses)


def _unindex(name, code):
    return re.sub(r"\b%s\s*\[\s*i\s*\]" % re.escape(name), name, code)


def _parse_pycuda_args(arguments, who):
    args = []
    for raw in arguments.replace("\n", " ").split(","):
        entry = " ".join(raw.split())
        if not entry:
            continue
        m = _ARG.match(entry)
        if not m or m.group(2) not in _C_TYPES:
            raise ValueError("%s: cannot read the argument %r (expected e.g. 'float* w', "
                             "'const double* x' or 'float a'; types float, double, int)"
                             % (who, entry))
        const, ctype, ptr, name = m.groups()
        args.append((name, _C_TYPES[ctype], bool(ptr), bool(const)))
    if not args:
        raise ValueError("%s: no arguments in %r" % (who, arguments))
    return args


class ElementwiseKernel(object):
    """A user elementwise kernel (ch_elementwise_kernel), CuPy style:
    ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = x * y', 'mul').
    Call it with the inputs, then optionally the outputs to write into; it
    returns the output array (a tuple for several)."""

    def __init__(self, in_params, out_params, operation, name):
        if not _capi.has("ch_elementwise_kernel_new"):
            raise _unsupported("this libchainerc has no user kernels")
        out = c_void_p()
        _capi.check(lib.ch_elementwise_kernel_new(byref(out), in_params.encode(),
                                                  out_params.encode(), operation.encode(),
                                                  name.encode()))
        self._h = out.value
        self.name = name
        self.n_in = len([p for p in in_params.split(",") if p.strip()])
        self.n_out = len([p for p in out_params.split(",") if p.strip()])

    def __del__(self, _release=lib.ch_elementwise_kernel_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    def __call__(self, *args):
        if len(args) not in (self.n_in, self.n_in + self.n_out):
            raise TypeError("%s takes %d inputs (and optionally %d outputs); got %d arguments"
                            % (self.name, self.n_in, self.n_out, len(args)))
        ins = args[:self.n_in]
        given = args[self.n_in:]
        hs = [to_handle(a) for a in ins]
        try:
            ain = (c_void_p * max(len(hs), 1))(*hs)
            aout = (c_void_p * self.n_out)(*[a.handle if isinstance(a, Array) else None
                                             for a in given])
            for a in given:
                if not isinstance(a, Array):
                    raise TypeError("%s: outputs must be chainerc arrays (e.g. cuda.empty_like)"
                                    % self.name)
            _capi.check(lib.ch_elementwise_kernel_call(self._h, ain, len(hs), aout,
                                                       self.n_out))
        finally:
            for h in hs:
                lib.ch_array_release(h)
        if given:
            res = tuple(given)
        else:
            res = tuple(Array._from_handle(aout[i]) for i in range(self.n_out))
        return res[0] if len(res) == 1 else res


class _PyCudaElementwise(object):
    """The seed's cuda.elementwise kernel: called with every argument in the
    order of its argument list (outputs included, written in place)."""

    def __init__(self, arguments, operation, name):
        who = "cuda.elementwise(%s)" % name
        args = _parse_pycuda_args(arguments, who)
        ins, outs, code = [], [], operation
        self._order = []  # (is_output, is_scalar, dtype name) per argument
        for aname, dtype, ptr, const in args:
            indexed = _indexed_only(aname, operation)
            if ptr and not const:
                if not indexed:
                    raise _unsupported(
                        "%s: the output %s is used other than as %s[i]; chainerc's elementwise "
                        "kernels write one element per index (read other elements through a "
                        "const input)" % (who, aname, aname))
                outs.append("%s %s" % (dtype, aname))
                code = _unindex(aname, code)
            elif ptr and indexed:
                ins.append("%s %s" % (dtype, aname))
                code = _unindex(aname, code)
            elif ptr:
                ins.append("raw %s %s" % (dtype, aname))
            else:
                ins.append("%s %s" % (dtype, aname))
            self._order.append((ptr and not const, not ptr, dtype))
        if not outs:
            raise ValueError("%s: no output argument (a non-const pointer such as 'float* y')"
                             % who)
        # The library's iteration shape is the broadcast of the elementwise
        # inputs; with none (raw pointers and scalars only), `i` must still run
        # over the first output (PyCUDA's rule): bind it as an unused input.
        self._iter_input = not any(ptr and (const and _indexed_only(aname, operation))
                                   for aname, _, ptr, const in args)
        if self._iter_input:
            first_out = next(a for a in args if a[2] and not a[3])
            ins.append("%s chainerc_iter" % first_out[1])
        self.kernel = ElementwiseKernel(", ".join(ins), ", ".join(outs), code, name)
        self.name = name

    def __call__(self, *args, **kwargs):
        if len(args) != len(self._order):
            raise TypeError("%s takes %d arguments; got %d"
                            % (self.name, len(self._order), len(args)))
        index = next((_gpu_index(a) for a in args if _gpu_index(a) is not None), None)
        ins, outs = [], []
        for a, (is_out, is_scalar, dtype) in zip(args, self._order):
            if is_scalar:
                a = (full((), a, np.dtype(dtype)) if index is not None
                     else np.array(a, dtype=np.dtype(dtype)))
                if index is not None and _gpu_index(a) != index:
                    a = copy(a, out_device=index)
            (outs if is_out else ins).append(a)
        if self._iter_input:
            ins.append(outs[0])
        self.kernel(*(ins + outs))


def _dtype_name(dtype):
    try:
        return _NP_TO_KERNEL[np.dtype(dtype)]
    except KeyError:
        raise errors.DTypeError("user kernels take float32, float64 or int32; got %s" % dtype,
                                status=errors.CH_ERR_DTYPE, status_name="CH_ERR_DTYPE")


_memo = {}
_memo_lock = threading.Lock()


def _memoize(key, make):
    with _memo_lock:
        k = _memo.get(key)
    if k is None:
        k = make()
        with _memo_lock:
            k = _memo.setdefault(key, k)
    return k


def clear_memo():
    """Drop the cached kernel objects of cuda.elementwise / cuda.reduce (their
    handles are released; the compiled code stays in the library's cache)."""
    with _memo_lock:
        _memo.clear()


def elementwise(*args, **kwargs):
    """The seed's cuda.elementwise(arguments, operation, name): a kernel
    object called with all its arguments, outputs written in place:

        cuda.elementwise('float* w, const float* x, const float* y',
                         'w[i] = x[i] * y[i]', 'mul')(w, x, y)

    Pointer arguments used only as `name[i]` become elementwise parameters,
    other const pointers raw ones; scalars ('float a') are broadcast. Also
    the CuPy form elementwise(in_params, out_params, operation, name), which
    returns an ElementwiseKernel. Kernels are cached per arguments."""
    for k in ("keep", "options", "preamble", "loop_prep", "after_loop"):
        v = kwargs.pop(k, None)
        if v not in (None, False, ""):
            raise _unsupported("cuda.elementwise: %s=%r is not supported by chainerc" % (k, v))
    if kwargs:
        raise TypeError("cuda.elementwise: unexpected arguments %s" % sorted(kwargs))
    if len(args) == 4 and all(isinstance(a, str) for a in args):
        return _memoize(("cupy",) + args, lambda: ElementwiseKernel(*args))
    if len(args) != 3:
        raise TypeError("cuda.elementwise(arguments, operation, name) or "
                        "cuda.elementwise(in_params, out_params, operation, name)")
    return _memoize(("pycuda",) + args, lambda: _PyCudaElementwise(*args))


class ReductionKernel(object):
    """A user reduction kernel (ch_reduction_kernel), CuPy style. Call it
    with the inputs (and optionally outputs); `axis` (None: all) and
    `keepdims` as keywords."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                 identity, name, reduce_type=None):
        if not _capi.has("ch_reduction_kernel_new"):
            raise _unsupported("this libchainerc has no user kernels")
        out = c_void_p()
        enc = lambda s: None if s is None else s.encode()  # noqa: E731
        _capi.check(lib.ch_reduction_kernel_new(
            byref(out), in_params.encode(), out_params.encode(), map_expr.encode(),
            reduce_expr.encode(), enc(post_map_expr or ""), enc(identity), name.encode(),
            enc(reduce_type or "")))
        self._h = out.value
        self.name = name
        self.n_in = len([p for p in in_params.split(",") if p.strip()])
        self.n_out = len([p for p in out_params.split(",") if p.strip()])

    def __del__(self, _release=lib.ch_reduction_kernel_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    def __call__(self, *args, axis=None, keepdims=False):
        if len(args) not in (self.n_in, self.n_in + self.n_out):
            raise TypeError("%s takes %d inputs (and optionally %d outputs); got %d arguments"
                            % (self.name, self.n_in, self.n_out, len(args)))
        hs = [to_handle(a) for a in args[:self.n_in]]
        given = args[self.n_in:]
        if axis is None:
            axes, n_axes = None, -1
        else:
            ax = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
            axes, n_axes = (c_int32 * max(len(ax), 1))(*ax), len(ax)
        try:
            ain = (c_void_p * max(len(hs), 1))(*hs)
            aout = (c_void_p * self.n_out)(*[a.handle for a in given])
            _capi.check(lib.ch_reduction_kernel_call(self._h, ain, len(hs), aout, self.n_out,
                                                     axes, n_axes, 1 if keepdims else 0))
        finally:
            for h in hs:
                lib.ch_array_release(h)
        res = tuple(given) if given else tuple(Array._from_handle(aout[i])
                                               for i in range(self.n_out))
        return res[0] if len(res) == 1 else res


class _PyCudaReduction(object):
    def __init__(self, arguments, map_expr, reduce_expr, neutral, name, dtype_out):
        who = "cuda.reduce(%s)" % name
        args = _parse_pycuda_args(arguments, who)
        ins, code = [], map_expr
        for aname, dtype, ptr, const in args:
            if ptr:
                if not _indexed_only(aname, map_expr):
                    raise _unsupported("%s: %s is used other than as %s[i] in map_expr"
                                       % (who, aname, aname))
                code = _unindex(aname, code)
            ins.append("%s %s" % (dtype, aname))
        self._scalars = [not ptr for _, _, ptr, _ in args]
        self._dtypes = [np.dtype(dtype) for _, dtype, _, _ in args]
        out_type = _dtype_name(dtype_out)
        self.kernel = ReductionKernel(", ".join(ins), "%s chainerc_out" % out_type, code,
                                      reduce_expr, "chainerc_out = a", str(neutral), name,
                                      out_type)
        self.name = name

    def __call__(self, *args, **kwargs):
        if len(args) != len(self._scalars):
            raise TypeError("%s takes %d arguments; got %d"
                            % (self.name, len(self._scalars), len(args)))
        index = next((_gpu_index(a) for a in args if _gpu_index(a) is not None), None)
        ins = []
        for a, scalar, dt in zip(args, self._scalars, self._dtypes):
            if scalar:
                a = full((), a, dt) if index is not None else np.array(a, dtype=dt)
            ins.append(a)
        return self.kernel(*ins)


def reduce(*args, **kwargs):
    """The seed's cuda.reduce(arguments, map_expr, reduce_expr, neutral, name,
    dtype_out=numpy.float32): a kernel reducing over every element, returning
    a 0-d array on the inputs' device:

        cuda.reduce('const float* x, const float* y', 'x[i] * y[i]', 'a + b',
                    '0', 'dot')(x, y)

    Also the CuPy form reduce(in_params, out_params, map_expr, reduce_expr,
    post_map_expr, identity, name[, reduce_type]) returning a
    ReductionKernel. Kernels are cached per arguments."""
    for k in ("keep", "options", "preamble"):
        v = kwargs.pop(k, None)
        if v not in (None, False, ""):
            raise _unsupported("cuda.reduce: %s=%r is not supported by chainerc" % (k, v))
    dtype_out = kwargs.pop("dtype_out", np.float32)
    if kwargs:
        raise TypeError("cuda.reduce: unexpected arguments %s" % sorted(kwargs))
    if len(args) in (7, 8):
        return _memoize(("cupy",) + args, lambda: ReductionKernel(*args))
    if len(args) == 6:
        args, dtype_out = args[:5], args[5]
    if len(args) != 5:
        raise TypeError("cuda.reduce(arguments, map_expr, reduce_expr, neutral, name, "
                        "dtype_out=numpy.float32)")
    key = ("pycuda",) + tuple(args) + (np.dtype(dtype_out).str,)
    return _memoize(key, lambda: _PyCudaReduction(*(tuple(args) + (dtype_out,))))
