"""Exceptions raised for failed chainerc calls, one class per ch_status.

Every class derives from ChainerError; where a built-in Python exception means
the same thing the class derives from it too (a ShapeError is a ValueError, a
DTypeError a TypeError, a NotCloseError an AssertionError...), so code that
catches the usual Python exceptions keeps working.
"""

CH_OK = 0
CH_ERR_INVALID_ARGUMENT = -1
CH_ERR_NULL_HANDLE = -2
CH_ERR_RELEASED_HANDLE = -3
CH_ERR_SHAPE = -4
CH_ERR_DTYPE = -5
CH_ERR_DEVICE = -6
CH_ERR_OUT_OF_MEMORY = -7
CH_ERR_CALLBACK = -8
CH_ERR_GRAPH = -9
CH_ERR_NOT_CLOSE = -10
CH_ERR_IO = -11
CH_ERR_UNSUPPORTED = -12
CH_ERR_INTERNAL = -13


class ChainerError(Exception):
    """A chainerc call failed. `status` is the ch_status code, `status_name` its name."""

    status = 0
    status_name = ""

    def __init__(self, message, status=None, status_name=None):
        super().__init__(message)
        if status is not None:
            self.status = status
        if status_name is not None:
            self.status_name = status_name


class InvalidArgumentError(ChainerError, ValueError):
    status, status_name = CH_ERR_INVALID_ARGUMENT, "CH_ERR_INVALID_ARGUMENT"


class NullHandleError(ChainerError, ValueError):
    status, status_name = CH_ERR_NULL_HANDLE, "CH_ERR_NULL_HANDLE"


class ReleasedHandleError(ChainerError, ValueError):
    status, status_name = CH_ERR_RELEASED_HANDLE, "CH_ERR_RELEASED_HANDLE"


class ShapeError(ChainerError, ValueError):
    status, status_name = CH_ERR_SHAPE, "CH_ERR_SHAPE"


class DTypeError(ChainerError, TypeError):
    status, status_name = CH_ERR_DTYPE, "CH_ERR_DTYPE"


class DeviceError(ChainerError, ValueError):
    status, status_name = CH_ERR_DEVICE, "CH_ERR_DEVICE"


class OutOfMemoryError(ChainerError, MemoryError):
    status, status_name = CH_ERR_OUT_OF_MEMORY, "CH_ERR_OUT_OF_MEMORY"


class CallbackError(ChainerError, RuntimeError):
    status, status_name = CH_ERR_CALLBACK, "CH_ERR_CALLBACK"


class GraphError(ChainerError, RuntimeError):
    status, status_name = CH_ERR_GRAPH, "CH_ERR_GRAPH"


class NotCloseError(ChainerError, AssertionError):
    status, status_name = CH_ERR_NOT_CLOSE, "CH_ERR_NOT_CLOSE"


class ChainerIOError(ChainerError, OSError):
    status, status_name = CH_ERR_IO, "CH_ERR_IO"


class UnsupportedError(ChainerError, NotImplementedError):
    status, status_name = CH_ERR_UNSUPPORTED, "CH_ERR_UNSUPPORTED"


class InternalError(ChainerError, RuntimeError):
    status, status_name = CH_ERR_INTERNAL, "CH_ERR_INTERNAL"


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, NullHandleError, ReleasedHandleError, ShapeError, DTypeError,
    DeviceError, OutOfMemoryError, CallbackError, GraphError, NotCloseError, ChainerIOError,
    UnsupportedError, InternalError)}


def error_class(status):
    return _BY_STATUS.get(status, ChainerError)


__all__ = [n for n in dir() if n.endswith("Error")]
