"""A training step captured as a CUDA graph and replayed (libchainerc's
ch_cuda_graph_*, include/ch/cuda.h; docs/gpu.md).

    step()                                      # one eager step first
    graph = cuda_graph.capture(lambda: step())  # recorded on cuda:0, not run
    for xb, tb in batches:
        graph.replay_with([x_gpu, t_gpu], [xb, tb])   # copy the batch in, replay

The arrays the captured step made keep their memory: read the captured loss
after a replay. Bad use (the CPU, a host synchronisation or host copy during
the capture, another shape on replay) raises the library's error.
"""

from ctypes import byref, c_void_p

from . import _capi
from ._array import to_handle
from ._capi import lib
from .cuda import _cuda, _device_index, check_cuda_available


class CudaGraph(object):
    """A captured graph (owns its ch_cuda_graph; release() or garbage collection)."""

    def __init__(self, handle):
        self._h = handle

    def replay(self):
        _capi.check(lib.ch_cuda_graph_replay(self._h))

    def replay_with(self, targets, values):
        """Copy values[i] (NumPy or chainerc arrays, same dtype and shape) into
        targets[i] (chainerc arrays the captured step reads), then replay."""
        if len(targets) != len(values):
            raise ValueError("replay_with: %d targets but %d values" % (len(targets), len(values)))
        handles = [to_handle(a) for a in list(targets) + list(values)]
        try:
            n = len(targets)
            arr = (c_void_p * max(n, 1))
            t = arr(*handles[:n])
            v = arr(*handles[n:])
            _capi.check(lib.ch_cuda_graph_replay_with(self._h, t, v, n))
        finally:
            for h in handles:
                lib.ch_array_release(h)

    @property
    def size(self):
        """Kernels and cuBLAS calls recorded."""
        return lib.ch_cuda_graph_size(self._h)

    def release(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            lib.ch_cuda_graph_release(h)

    def __del__(self, _release=getattr(lib, "ch_cuda_graph_release", None)):
        h = getattr(self, "_h", None)
        if h and _release is not None:
            self._h = None
            _release(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False


def capture(body, device=None):
    """Runs body() with the device's work captured; the CudaGraph it recorded.
    A body that raises ends the capture (its graph dropped) and re-raises."""
    check_cuda_available()
    dev = _cuda(_device_index(device))
    _capi.check(lib.ch_cuda_graph_begin_capture(dev))
    out = c_void_p()
    try:
        body()
    except BaseException:
        if lib.ch_cuda_graph_end_capture(byref(out), dev) == 0 and out.value:
            lib.ch_cuda_graph_release(out.value)
        raise
    _capi.check(lib.ch_cuda_graph_end_capture(byref(out), dev))
    return CudaGraph(out.value)


__all__ = ["CudaGraph", "capture"]
