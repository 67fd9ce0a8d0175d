"""FunctionSet (Chainer 1.x) over ch_function_set: named parameterized
functions whose parameters and gradients are collected in one stable order
(members sorted by name) and shared, not copied, with optimizers."""

import ctypes

from . import _capi, _array
from ._capi import lib, c_void_p, check, PP, S
from ._handle_owner import HandleOwner

_d = _capi._decl
_new = _d("ch_function_set_new", S, [PP])
_release = _d("ch_function_set_release", S, [c_void_p])
_add_function = _d("ch_function_set_add_function", S, [c_void_p, ctypes.c_char_p, c_void_p])
_add_set = _d("ch_function_set_add_set", S, [c_void_p, ctypes.c_char_p, c_void_p])
_remove = _d("ch_function_set_remove", S, [c_void_p, ctypes.c_char_p])
_param_count = _d("ch_function_set_parameter_count", ctypes.c_size_t, [c_void_p])
_parameter = _d("ch_function_set_parameter", S, [PP, PP, ctypes.POINTER(ctypes.c_char_p),
                                                c_void_p, ctypes.c_size_t])
_copy_from = _d("ch_function_set_copy_parameters_from", S, [c_void_p, c_void_p])
_copy_from_arrays = _d("ch_function_set_copy_parameters_from_arrays", S,
                       [c_void_p, ctypes.POINTER(c_void_p), ctypes.c_size_t])
_to_cpu = _d("ch_function_set_to_cpu", S, [c_void_p])
_to_gpu = _d("ch_function_set_to_gpu", S, [c_void_p, _capi.Device])


class ParamsGrads(tuple):
    """(parameters, gradients) as collect_parameters returns them; remembers
    its FunctionSet so that Optimizer.setup keeps the parameter paths."""

    function_set = None


class FunctionSet(HandleOwner):
    """Set of parameterized functions (chainer.FunctionSet): members are given
    as keyword arguments or set as attributes."""

    def __init__(self, **functions):
        out = c_void_p()
        check(_new(out))
        object.__setattr__(self, "_handle", out.value)
        object.__setattr__(self, "_members", {})
        for name in sorted(functions):
            setattr(self, name, functions[name])

    _release_handle = staticmethod(_release)

    def release(self):
        """Drop the set's engine handle now (members stay usable)."""
        HandleOwner.release(self)

    def __setattr__(self, name, value):
        from .function import Function
        from .functions._link import ParameterizedFunction
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if isinstance(value, FunctionSet):
            check(_add_set(self._handle, name.encode(), value._handle))
        elif isinstance(value, (Function, ParameterizedFunction)):
            check(_add_function(self._handle, name.encode(), value._chainerc_function()))
        else:
            if name in self._members:
                check(_remove(self._handle, name.encode()))
                del self._members[name]
            object.__setattr__(self, name, value)
            return
        self._members[name] = value
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        members = self.__dict__.get("_members", {})
        if name in members:
            return members[name]
        raise AttributeError("FunctionSet has no member %r" % name)

    def __delattr__(self, name):
        if name in self._members:
            check(_remove(self._handle, name.encode()))
            del self._members[name]
        else:
            object.__delattr__(self, name)

    def __contains__(self, name):
        return name in self._members

    def __iter__(self):
        return iter(sorted(self._members.items()))

    def _collect(self):
        params, grads, paths = [], [], []
        for i in range(_param_count(self._handle)):
            p, g, path = c_void_p(), c_void_p(), ctypes.c_char_p()
            check(_parameter(p, g, path, self._handle, i))
            params.append(_array.handle_to_numpy(p.value))
            grads.append(_array.handle_to_numpy(g.value))
            paths.append(path.value.decode())
        return tuple(params), tuple(grads), tuple(paths)

    @property
    def parameters(self):
        """Tuple of every parameter array (NumPy views, shared with the functions)."""
        return self._collect()[0]

    @parameters.setter
    def parameters(self, params):
        self.copy_parameters_from(params)

    @property
    def gradients(self):
        """Tuple of every gradient array (NumPy views, shared with the functions)."""
        return self._collect()[1]

    @property
    def parameter_paths(self):
        """Paths of the parameters ("l1/W"), the keys of .npz checkpoints."""
        return self._collect()[2]

    def collect_parameters(self):
        """(parameters, gradients), for Optimizer.setup."""
        params, grads, _ = self._collect()
        pg = ParamsGrads((params, grads))
        pg.function_set = self
        return pg

    def copy_parameters_from(self, params):
        """Copy values into the parameters in place (a FunctionSet or arrays)."""
        if isinstance(params, FunctionSet):
            check(_copy_from(self._handle, params._handle))
            return
        hs = [_array.to_handle(p) for p in params]
        try:
            check(_copy_from_arrays(self._handle, (c_void_p * max(len(hs), 1))(*hs), len(hs)))
        finally:
            for h in hs:
                lib.ch_array_release(h)

    def _refresh_members(self):
        from .functions._link import ParameterizedFunction
        for member in self._members.values():
            if isinstance(member, FunctionSet):
                member._refresh_members()
            elif isinstance(member, ParameterizedFunction):
                member._refresh()

    def to_cpu(self):
        """Move parameters and gradients to the CPU (members' f.W become NumPy views)."""
        check(_to_cpu(self._handle))
        self._refresh_members()
        return self

    def to_gpu(self, device=None):
        """Move parameters and gradients to `device` (a device specifier of
        cuda.get_device; None: the current device)."""
        from . import cuda
        cuda.check_cuda_available()
        index = cuda.get_device(device).id
        check(_to_gpu(self._handle, _capi.Device(_capi.CH_DEVICE_CUDA, index)))
        self._refresh_members()
        return self

    def __repr__(self):
        return "FunctionSet(%s)" % ", ".join("%s=%r" % kv for kv in self)
