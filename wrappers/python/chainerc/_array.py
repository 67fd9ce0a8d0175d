"""Arrays: zero-copy conversion between NumPy arrays, chainerc arrays (ch_array
handles) and DLPack capsules.

- NumPy -> chainerc: ch_array_wrap on the NumPy buffer; the array object is kept
  in a registry until chainerc's release callback drops it. No copy for
  C-contiguous float32/float64/int32 arrays (other layouts are made
  contiguous first, which copies).
- chainerc -> NumPy: a view of ch_array_data whose base object owns a reference
  to the ch_array handle, so the memory lives as long as any view does.
- DLPack: Array.__dlpack__ exports a ch_array as a "dltensor" capsule;
  from_dlpack imports any DLPack producer (NumPy, PyTorch, ...) through
  ch_array_wrap with a release callback that calls the producer's deleter.
"""

import ctypes

import numpy as np

from . import _capi
from ._capi import lib, c_void_p, c_int64, byref
from . import errors

_DTYPE_TO_CH = {np.dtype(np.float32): _capi.CH_FLOAT32, np.dtype(np.float64): _capi.CH_FLOAT64,
                np.dtype(np.int32): _capi.CH_INT32}
_CH_TO_DTYPE = {v: k for k, v in _DTYPE_TO_CH.items()}
_CH_TO_TYPESTR = {k: v.str for k, v in _CH_TO_DTYPE.items()}

_G = _capi.held
_wrap = _G.ch_array_wrap
_release = _G.ch_array_release
_retain = _G.ch_array_retain
_data = _G.ch_array_data
_dtype = _G.ch_array_dtype
_ndim = _G.ch_array_ndim
_shape = _G.ch_array_shape
_device = _G.ch_array_device
_size = _G.ch_array_size
_CPU = _capi.cpu()
_register = _capi.register
_objects = _capi._objects
_release_cb = _capi.release_cb
_SHAPES = [c_int64 * n for n in range(9)]
_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof
_CPU_ONLY = not _capi.cuda_symbols


def ch_dtype_of(dtype):
    try:
        return _DTYPE_TO_CH[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise errors.DTypeError(
            "chainerc arrays hold float32, float64 or int32 elements; got dtype %s%s"
            % (dtype, " (labels and ids: .astype(np.int32))" if np.dtype(dtype).kind in "iub"
               else " (convert with .astype(np.float32))"),
            status=errors.CH_ERR_DTYPE, status_name="CH_ERR_DTYPE") from None


_new = _G.ch_array_new
_shape_cache = {}
# Arrays a callback returns up to this size are copied into the engine's
# memory: a copy of a few KiB costs less than registering the array and the
# release callback that would later come back into Python for it.
COPY_BELOW = 16384


def _c_shape(shape, nd):
    """The int64 extents of `shape` as a ctypes array (the engine copies them;
    one array per shape is kept, the few shapes of a program)."""
    c = _shape_cache.get(shape)
    if c is None:
        if nd > 8:
            raise errors.ShapeError("chainerc arrays have at most 8 dimensions; got shape %s"
                                    % (shape,), status=errors.CH_ERR_SHAPE,
                                    status_name="CH_ERR_SHAPE")
        c = _SHAPES[nd](*shape)
        if len(_shape_cache) < 4096:
            _shape_cache[shape] = c
    return c


def _native(a):
    """`a` as a C-contiguous NumPy array of a chainerc dtype, and that dtype."""
    if type(a) is not np.ndarray:
        a = np.asarray(a)
    code = _DTYPE_TO_CH.get(a.dtype)
    if code is None:
        native = a.dtype.newbyteorder("=")
        if native in _DTYPE_TO_CH:  # byte-swapped (e.g. read from a big-endian file)
            a = a.astype(native)
            code = _DTYPE_TO_CH[native]
        else:
            code = ch_dtype_of(a.dtype)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a, code


def numpy_to_handle(a):
    """New ch_array handle sharing the memory of NumPy array `a` (new reference)."""
    code = _DTYPE_TO_CH.get(a.dtype) if type(a) is np.ndarray else None
    if code is None or not a.flags.c_contiguous:
        a, code = _native(a)
    shape = _shape_cache.get(a.shape) or _c_shape(a.shape, a.ndim)
    try:
        ptr = _addressof(_from_buffer(a))  # 4x faster than a.ctypes.data
    except (TypeError, ValueError, BufferError):  # read-only or empty
        ptr = a.ctypes.data
    key = _register(a)
    out = c_void_p()
    st = _wrap(out, code, shape, a.ndim, ptr, _CPU, _release_cb, key)
    if st:
        _objects.pop(key, None)  # on failure the release callback is not called
        _capi.raise_status(st)
    return out.value


def numpy_to_owned_handle(a):
    """New ch_array handle for NumPy array `a` that the engine may keep
    (new reference): a copy when it is small, else shared as numpy_to_handle."""
    code = _DTYPE_TO_CH.get(a.dtype) if type(a) is np.ndarray else None
    if code is None or not a.flags.c_contiguous:
        a, code = _native(a)
    if a.nbytes > COPY_BELOW or not a.size:
        return numpy_to_handle(a)
    out = c_void_p()
    try:
        ptr = _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):  # read-only
        ptr = a.ctypes.data
    st = _new(out, code, _c_shape(a.shape, a.ndim), a.ndim, ptr, _CPU)
    if st:
        _capi.raise_status(st)
    return out.value


def owned_handle(x):
    """to_handle for an array a callback returns: a view of an engine array
    is retained, a small NumPy array copied (numpy_to_owned_handle)."""
    if type(x) is np.ndarray:
        base = x.base
        if type(base) is _Owner:
            h = handle_of_view(x)
            if h is not None:
                return _retain(h)
        return numpy_to_owned_handle(x)
    return to_handle(x)


class _Owner(object):
    """Base object of NumPy views of a ch_array: owns one reference to it."""

    # view: id() of the ndarray made on it (handle_of_view)
    __slots__ = ("__array_interface__", "handle", "view", "__weakref__")

    def __del__(self, _release=_release):
        h = self.handle
        if h:
            self.handle = None
            _release(h)


def handle_to_numpy(h, readonly=False):
    """NumPy view of ch_array `h`, taking over the reference `h` (no copy).

    Arrays on another device come back as chainerc.Array objects."""
    if not _CPU_ONLY and _device(h).type != _capi.CH_DEVICE_CPU:
        return Array._from_handle(h)
    return cpu_view(h, readonly)


def cpu_view(h, readonly=False, _Owner=_Owner, _asarray=np.asarray, _TYPESTR=_CH_TO_TYPESTR,
             _ndim=_ndim, _size=_size, _shape=_shape, _dtype=_dtype, _data=_data):
    """handle_to_numpy for an `h` known to be on the CPU."""
    nd = _ndim(h)
    if nd == 1:
        shape = (_size(h),)
    elif nd == 2:
        sp = _shape(h)
        shape = (sp[0], sp[1])
    else:
        shape = tuple(_shape(h)[:nd]) if nd else ()
    code = _dtype(h)
    owner = _Owner()
    owner.handle = h
    ptr = _data(h)
    if not ptr:  # empty array: nothing to share
        return np.empty(shape, _CH_TO_DTYPE[code])
    owner.__array_interface__ = {"data": (ptr, readonly), "shape": shape,
                                 "typestr": _TYPESTR[code], "version": 3}
    a = _asarray(owner)
    owner.view = id(a)
    return a


def handle_of_view(a):
    """If `a` is a whole, unmodified-layout view made by handle_to_numpy, the
    ch_array handle behind it (borrowed), else None."""
    base = a.base
    if type(base) is _Owner and base.handle:
        ai = base.__array_interface__
        # The very ndarray cpu_view made (alive, so its id is not reused) has
        # the owner's data pointer; its shape, dtype or strides may have been
        # set in place since. Other views over the owner are compared in full.
        if base.view == id(a):
            same = a.shape == ai["shape"] and a.dtype.str == ai["typestr"]
        else:
            same = (a.ctypes.data == ai["data"][0] and a.shape == ai["shape"]
                    and a.dtype.str == ai["typestr"])
        if same and a.flags.c_contiguous:
            return base.handle
    return None


def to_handle(x):
    """New ch_array reference for an array-like (NumPy, chainerc.Array, DLPack)."""
    if type(x) is np.ndarray:
        h = handle_of_view(x)
        if h is not None:
            return _retain(h)
        return numpy_to_handle(x)
    if isinstance(x, Array):
        return _retain(x.handle)
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        return _dlpack_to_handle(x)
    return numpy_to_handle(np.asarray(x))


class Array(object):
    """A chainerc array (ch_array handle): what from_dlpack returns.

    On the CPU `numpy()` (or np.asarray) gives a zero-copy NumPy view; the array
    is also a DLPack producer (np.from_dlpack, torch.from_dlpack)."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, obj):
        self.handle = None
        self.handle = to_handle(obj)

    @classmethod
    def _from_handle(cls, h):
        self = object.__new__(cls)
        self.handle = h
        return self

    def __del__(self, _release=_release):
        h = getattr(self, "handle", None)
        if h:
            self.handle = None
            _release(h)

    def release(self):
        """Drop the reference now; NumPy views already taken stay valid."""
        h = self.handle
        self.handle = None
        if h:
            _release(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    @property
    def shape(self):
        nd = _ndim(self.handle)
        return tuple(_shape(self.handle)[:nd]) if nd else ()

    @property
    def ndim(self):
        return _ndim(self.handle)

    @property
    def size(self):
        return _size(self.handle)

    @property
    def dtype(self):
        return _CH_TO_DTYPE[_dtype(self.handle)]

    @property
    def device(self):
        d = _device(self.handle)
        return ("cpu" if d.type == _capi.CH_DEVICE_CPU else "cuda", d.index)

    def numpy(self):
        """Zero-copy NumPy view (CPU arrays only)."""
        if _device(self.handle).type != _capi.CH_DEVICE_CPU:
            raise errors.DeviceError("Array.numpy(): the array is on %s:%d; copy it to the "
                                     "CPU first (cuda.to_cpu)" % self.device,
                                     status=errors.CH_ERR_DEVICE, status_name="CH_ERR_DEVICE")
        return handle_to_numpy(_retain(self.handle))

    def get(self):
        """A NumPy copy of the array, from any device (PyCUDA's GPUArray.get)."""
        if _device(self.handle).type == _capi.CH_DEVICE_CPU:
            return np.array(self.numpy(), copy=True)
        out = c_void_p()
        _capi.check(lib.ch_array_to_device(byref(out), self.handle, _CPU))
        return handle_to_numpy(out.value)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d array")
        return s[0]

    def __repr__(self):
        if _device(self.handle).type == _capi.CH_DEVICE_CPU:
            return "chainerc.Array(%s)" % (np.array2string(self.numpy()),)
        return "chainerc.Array(shape=%s, dtype=%s, device=%s:%d)" % (
            (self.shape, self.dtype) + self.device)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("chainerc.Array.__dlpack__: copy=True is not supported")
        return handle_to_dlpack(self.handle)

    def __dlpack_device__(self):
        d = _device(self.handle)
        return (d.type, d.index)


# --- DLPack -------------------------------------------------------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(c_int64)),
                ("strides", ctypes.POINTER(c_int64)), ("byte_offset", ctypes.c_uint64)]


DLDeleter = ctypes.CFUNCTYPE(None, c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DLDeleter)]


_kDLInt, _kDLUInt, _kDLFloat = 0, 1, 2
_DL_OF_CH = {_capi.CH_FLOAT32: (_kDLFloat, 32), _capi.CH_FLOAT64: (_kDLFloat, 64),
             _capi.CH_INT32: (_kDLInt, 32)}
_CH_OF_DL = {v: k for k, v in _DL_OF_CH.items()}

_DLTENSOR = b"dltensor"
_USED_DLTENSOR = b"used_dltensor"

_PyCapsule_New = ctypes.pythonapi["PyCapsule_New"]
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
_PyCapsule_GetPointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_PyCapsule_GetPointer.restype = c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_SetName = ctypes.pythonapi["PyCapsule_SetName"]
_PyCapsule_SetName.restype = ctypes.c_int
_PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_IsValid = ctypes.pythonapi["PyCapsule_IsValid"]
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [c_void_p, ctypes.c_char_p]
_PyCapsule_GetPointer_raw = ctypes.pythonapi["PyCapsule_GetPointer"]
_PyCapsule_GetPointer_raw.restype = c_void_p
_PyCapsule_GetPointer_raw.argtypes = [c_void_p, ctypes.c_char_p]


_CTX_OFFSET = DLManagedTensor.manager_ctx.offset


def _dl_delete(ptr, _pop=_objects.pop, _release=_release, _off=_CTX_OFFSET):
    # Our own deleter: the registry entry (struct, shape, array reference) goes away.
    try:
        key = ctypes.c_void_p.from_address(ptr + _off).value
        entry = _pop(key, None)
        if entry is not None:
            _release(entry[2])
    except BaseException:  # pragma: no cover - interpreter shutdown
        pass


_dl_deleter = _capi.immortal(DLDeleter(_dl_delete))


def _capsule_destructor(cap, _valid=_PyCapsule_IsValid, _get=_PyCapsule_GetPointer_raw,
                        _name=_DLTENSOR, _delete=_dl_delete):
    # A capsule never consumed still owns its tensor (DLPack's rule).
    try:
        if _valid(cap, _name):
            _delete(_get(cap, _name))
    except Exception:  # pragma: no cover - interpreter shutdown
        pass


_capsule_destructor_cb = _capi.immortal(ctypes.CFUNCTYPE(None, c_void_p)(_capsule_destructor))
_capsule_destructor_ptr = ctypes.cast(_capsule_destructor_cb, c_void_p).value


def handle_to_dlpack(h):
    """A "dltensor" capsule for ch_array `h` (borrowed): the capsule and its
    consumer hold their own reference to the array."""
    code = _dtype(h)
    nd = _ndim(h)
    mt = DLManagedTensor()
    shape = _SHAPES[nd](*(_shape(h)[:nd] if nd else ()))
    t = mt.dl_tensor
    t.data = _data(h)
    dev = _device(h)
    t.device.device_type = dev.type
    t.device.device_id = dev.index
    t.ndim = nd
    t.dtype.code, t.dtype.bits = _DL_OF_CH[code]
    t.dtype.lanes = 1
    t.shape = ctypes.cast(shape, ctypes.POINTER(c_int64))
    t.strides = None  # C-contiguous
    t.byte_offset = 0
    mt.deleter = _dl_deleter
    key = _register((mt, shape, _retain(h)))
    mt.manager_ctx = key
    return _PyCapsule_New(ctypes.addressof(mt), _DLTENSOR, _capsule_destructor_ptr)


def _call_dl_deleter(ptr):
    mt = DLManagedTensor.from_address(ptr)
    deleter = mt.deleter
    if deleter:
        deleter(ptr)


def _dl_release(data, key, _pop=_objects.pop, _call=_call_dl_deleter):
    try:
        ptr = _pop(key, None)
        if ptr is not None:
            _call(ptr)
    except Exception:  # pragma: no cover - interpreter shutdown
        pass


_dl_release_cb = _capi.immortal(_capi.ReleaseCallback(_dl_release))


def _dlpack_to_handle(obj):
    if hasattr(obj, "__dlpack__"):
        if hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] == _capi.CH_DEVICE_CPU:
            cap = obj.__dlpack__()
        else:
            cap = obj.__dlpack__(stream=None)
    else:
        cap = obj
    ptr = _PyCapsule_GetPointer(cap, _DLTENSOR)  # ValueError if consumed or not DLPack
    mt = DLManagedTensor.from_address(ptr)
    t = mt.dl_tensor
    key_dt = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key_dt not in _CH_OF_DL:
        raise errors.DTypeError(
            "from_dlpack: chainerc takes float32, float64 or int32; got DLPack dtype code %d, "
            "%d bits, %d lanes" % (t.dtype.code, t.dtype.bits, t.dtype.lanes),
            status=errors.CH_ERR_DTYPE, status_name="CH_ERR_DTYPE")
    nd = t.ndim
    if nd > 8:
        raise errors.ShapeError("from_dlpack: %d dimensions; chainerc takes at most 8" % nd,
                                status=errors.CH_ERR_SHAPE, status_name="CH_ERR_SHAPE")
    shape = [t.shape[i] for i in range(nd)]
    if t.strides:
        expect = 1
        for i in reversed(range(nd)):
            if shape[i] != 1 and t.strides[i] != expect:
                raise BufferError(
                    "from_dlpack: chainerc arrays are C-contiguous; the tensor has shape %s and "
                    "strides %s (make it contiguous first)"
                    % (tuple(shape), tuple(t.strides[i] for i in range(nd))))
            expect *= shape[i]
    dev = _capi.Device(t.device.device_type, t.device.device_id)
    data = (t.data or 0) + t.byte_offset
    key = _register(ptr)
    out = c_void_p()
    st = _wrap(byref(out), _CH_OF_DL[key_dt], _SHAPES[nd](*shape), nd, data, dev,
               _dl_release_cb, key)
    if st:
        _objects.pop(key, None)
        _capi.raise_status(st)  # the capsule stays unconsumed; its destructor frees it
    _PyCapsule_SetName(cap, _USED_DLTENSOR)
    return out.value


def from_dlpack(obj):
    """chainerc.Array sharing the memory of a DLPack producer (an object with
    __dlpack__, e.g. a NumPy array or a torch tensor) or of a "dltensor" capsule."""
    if isinstance(obj, np.ndarray):
        return Array._from_handle(to_handle(obj))
    return Array._from_handle(_dlpack_to_handle(obj))


def asarray(obj):
    """chainerc.Array from a NumPy array or array-like (no copy when possible)."""
    return Array._from_handle(to_handle(obj))


# --- chainerc._speedups ----------------------------------------------------------
# With the C extension, views are made in C (their base object is
# _speedups.Owner instead of _Owner) and plain arrays (exact, C-contiguous
# NumPy arrays of a chainerc dtype) become handles in C; everything else, and
# every error, takes the Python code above.
speedups = _capi.speedups = _capi.load_speedups(COPY_BELOW)
if speedups is not None:
    _py_to_handle = to_handle
    _py_owned_handle = owned_handle
    cpu_view = speedups.cpu_view
    handle_of_view = speedups.handle_of_view

    def to_handle(x, _c=speedups.to_handle, _py=_py_to_handle):
        """New ch_array reference for an array-like (NumPy, chainerc.Array, DLPack)."""
        h = _c(x)
        return _py(x) if h is None else h

    def owned_handle(x, _c=speedups.owned_handle, _py=_py_owned_handle):
        """to_handle for an array a callback returns: a view of an engine array
        is retained, a small NumPy array copied (numpy_to_owned_handle)."""
        h = _c(x)
        return _py(x) if h is None else h
