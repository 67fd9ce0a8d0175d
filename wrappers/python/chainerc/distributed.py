"""Data-parallel training over processes (ChainerMN's API) on libchainerc_mpi.

    import chainerc.distributed as dist
    comm = dist.create_communicator()          # MPI; run under mpirun
    optimizer = dist.create_multi_node_optimizer(chainerc.optimizers.Adam(), comm)
    optimizer.setup(model)
    comm.bcast_data(model)                     # rank 0's initial parameters
    train = dist.scatter_dataset(train, comm, shuffle=True, seed=0)
    ... optimizer.update() now averages the gradients over the ranks first

The library is libchainerc_mpi (include/ch/distributed.h), found through the
environment variable CHAINERC_MPI_LIBRARY, next to the libchainerc in use,
in the repository's build tree, or installed (ctypes.util.find_library). It
is loaded with RTLD_GLOBAL: Open MPI's plugins need libmpi's symbols.
Importing this module does not initialise MPI; create_communicator does.
"""

import ctypes
import ctypes.util
import os

import numpy as np

from . import _capi, _array
from ._capi import c_void_p, check

__all__ = ["Communicator", "create_communicator", "create_multi_node_optimizer",
           "scatter_index", "scatter_dataset", "finalize", "library_path"]

CH_REDUCE_SUM, CH_REDUCE_MEAN = 0, 1


def _candidates():
    env = os.environ.get("CHAINERC_MPI_LIBRARY")
    if env:
        return [env]
    cands = []
    core = os.path.dirname(os.path.abspath(_capi.library_path))
    cands.append(os.path.join(core, "distributed", "libchainerc_mpi.so.0"))  # build/src
    cands.append(os.path.join(core, "libchainerc_mpi.so.0"))  # installed side by side
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    cands.append(os.path.join(repo, "build", "src", "distributed", "libchainerc_mpi.so.0"))
    found = ctypes.util.find_library("chainerc_mpi")
    if found:
        cands.append(found)
    return cands


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("chainerc.distributed: cannot load libchainerc_mpi (built with "
                      "-Dmpi=enabled where Open MPI's libopenmpi-dev is installed); set "
                      "CHAINERC_MPI_LIBRARY. Tried: " + "; ".join(tried))


_lib, library_path = _load()


def _decl(name, restype, argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


_S = ctypes.c_int32
_I64 = ctypes.c_int64
_new = _decl("ch_communicator_new_mpi", _S, [ctypes.POINTER(c_void_p)])
_release = _decl("ch_communicator_release", _S, [c_void_p])
_rank = _decl("ch_communicator_rank", ctypes.c_int32, [c_void_p])
_size = _decl("ch_communicator_size", ctypes.c_int32, [c_void_p])
_intra_rank = _decl("ch_communicator_intra_rank", ctypes.c_int32, [c_void_p])
_intra_size = _decl("ch_communicator_intra_size", ctypes.c_int32, [c_void_p])
_barrier = _decl("ch_communicator_barrier", _S, [c_void_p])
_bcast_data = _decl("ch_communicator_bcast_data", _S, [c_void_p, c_void_p])
_allreduce_grads = _decl("ch_communicator_allreduce_grads", _S, [c_void_p, c_void_p])
_allreduce_array = _decl("ch_communicator_allreduce_array", _S, [c_void_p, c_void_p,
                                                                 ctypes.c_int32])
_multi_node = _decl("ch_optimizer_new_multi_node", _S, [ctypes.POINTER(c_void_p), c_void_p,
                                                        c_void_p])
_scatter = _decl("ch_communicator_scatter_indices", _S,
                 [ctypes.POINTER(_I64), _I64, ctypes.POINTER(_I64), c_void_p, _I64,
                  ctypes.c_int32, ctypes.c_uint64])
_has_nccl = _decl("ch_communicator_has_nccl", ctypes.c_int32, [])
_finalize = _decl("ch_communicator_finalize", _S, [])
_optimizer_release = _capi._decl("ch_optimizer_release", _S, [c_void_p])


class Communicator(object):
    """A communicator over every process of the MPI job (ChainerMN's
    CommunicatorBase): rank, size, intra_rank, intra_size, bcast_data,
    allreduce_grad, allreduce, barrier. Collective methods must be called by
    every rank in the same order."""

    def __init__(self):
        out = c_void_p()
        check(_new(ctypes.byref(out)))
        self._handle = out.value

    def __del__(self):
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            _release(h)

    def release(self):
        h, self._handle = self._handle, None
        if h:
            check(_release(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def _h(self):
        if not self._handle:
            from . import errors
            raise errors.ReleasedHandleError(
                "chainerc.distributed: the communicator was released",
                status=errors.CH_ERR_RELEASED_HANDLE, status_name="CH_ERR_RELEASED_HANDLE")
        return self._handle

    rank = property(lambda self: _rank(self._h()))
    size = property(lambda self: _size(self._h()))
    intra_rank = property(lambda self: _intra_rank(self._h()))
    intra_size = property(lambda self: _intra_size(self._h()))
    has_nccl = property(lambda self: bool(_has_nccl()))

    def barrier(self):
        check(_barrier(self._h()))

    def bcast_data(self, model):
        """Copy every parameter of `model` (a FunctionSet) from rank 0."""
        check(_bcast_data(self._h(), model.__dict__["_handle"]))

    def allreduce_grad(self, model):
        """Average the gradients of `model` over the ranks, in place."""
        check(_allreduce_grads(self._h(), model.__dict__["_handle"]))

    def allreduce(self, x, op="sum"):
        """Sum (op='sum') or mean (op='mean') of an array or number over the
        ranks; returns a new NumPy array (a float for a Python number)."""
        if op not in ("sum", "mean"):
            raise ValueError("op must be 'sum' or 'mean', got %r" % (op,))
        scalar = np.isscalar(x)
        a = np.array(x, dtype=np.float64 if scalar else None, copy=True)
        h = _array.numpy_to_handle(a)
        try:
            check(_allreduce_array(self._h(), h,
                                   CH_REDUCE_SUM if op == "sum" else CH_REDUCE_MEAN))
        finally:
            _capi.lib.ch_array_release(h)
        return float(a) if scalar else a


def create_communicator(communicator_name="flat"):
    """ChainerMN's create_communicator. Every name ('flat', 'naive',
    'hierarchical', 'pure_nccl', ...) gives the one communicator chainerc
    has: a flat buffer per dtype, MPI for CPU arrays and NCCL for CUDA arrays
    where compiled in."""
    del communicator_name
    return Communicator()


def create_multi_node_optimizer(actual_optimizer, communicator):
    """ChainerMN's create_multi_node_optimizer: from now on every
    actual_optimizer.update() averages the gradients over the ranks first.
    Returns actual_optimizer itself (hyperparameters, state and checkpoints
    stay its own)."""
    out = c_void_p()
    check(_multi_node(ctypes.byref(out), actual_optimizer.__dict__["_handle"],
                      communicator._h()))
    check(_optimizer_release(out.value))  # the same optimizer: keep one reference
    actual_optimizer.__dict__["_communicator"] = communicator  # keep it alive
    return actual_optimizer


def scatter_index(n, comm, shuffle=False, seed=0):
    """This rank's share of range(n) (ch_communicator_scatter_indices): every
    rank gets ceil(n / size) indices; rank 0's seed decides the shuffle."""
    count = _I64()
    check(_scatter(None, 0, ctypes.byref(count), comm._h(), int(n), int(bool(shuffle)),
                   int(seed or 0) & 0xFFFFFFFFFFFFFFFF))
    out = np.empty(count.value, dtype=np.int64)
    check(_scatter(out.ctypes.data_as(ctypes.POINTER(_I64)), count.value, None, comm._h(),
                   int(n), int(bool(shuffle)), int(seed or 0) & 0xFFFFFFFFFFFFFFFF))
    return out


def scatter_dataset(dataset, comm, shuffle=False, seed=0):
    """ChainerMN's scatter_dataset: this rank's share of `dataset` (a NumPy
    array, a tuple of arrays indexed together, or any sequence). Shares are
    equal in size; where size does not divide len(dataset), neighbouring
    shares overlap by a sample (see scatter_index)."""
    n = len(dataset[0]) if isinstance(dataset, tuple) else len(dataset)
    idx = scatter_index(n, comm, shuffle, seed)
    if isinstance(dataset, tuple):
        return tuple(np.asarray(d)[idx] for d in dataset)
    if isinstance(dataset, np.ndarray):
        return dataset[idx]
    return [dataset[int(i)] for i in idx]


def finalize():
    """Finalize MPI now if create_communicator initialised it (else nothing).
    Not needed at a normal exit (a C exit handler does it); for os._exit."""
    check(_finalize())
