"""Variable: an array with the history of the computation that produced it
(chainer.Variable of Chainer 1.x), over a ch_variable handle."""

import numbers

import numpy as np

from . import _capi, _array
from ._capi import lib, c_void_p, byref, raise_status, check, PP, S

_c_void_p = c_void_p
_release = _capi.held.ch_variable_release
_var_data = lib.ch_variable_data
_var_grad = lib.ch_variable_grad
_new = _capi.held.ch_variable_new
_to_handle = _array.to_handle
_arr_release = _capi.held.ch_array_release
_handle_to_numpy = _array.handle_to_numpy
_sp = _capi.speedups
_sp_init = _sp.init_variable if _sp is not None else None
_sp_set_grad = _sp.set_grad if _sp is not None else None
if _sp is not None:
    _release = _sp.release_variable  # as ch_variable_release under the GIL, in C


def _d(name, argtypes):
    return _capi._decl(name, S, argtypes)


_V = c_void_p
_D = _capi.c_double
_f_add = _d("ch_functions_add", [PP, _V, _V])
_f_sub = _d("ch_functions_sub", [PP, _V, _V])
_f_mul = _d("ch_functions_mul", [PP, _V, _V])
_f_div = _d("ch_functions_div", [PP, _V, _V])
_f_add_s = _d("ch_functions_add_scalar", [PP, _V, _D])
_f_sub_s = _d("ch_functions_sub_scalar", [PP, _V, _D])
_f_rsub_s = _d("ch_functions_rsub_scalar", [PP, _V, _D])
_f_mul_s = _d("ch_functions_mul_scalar", [PP, _V, _D])
_f_div_s = _d("ch_functions_div_scalar", [PP, _V, _D])
_f_rdiv_s = _d("ch_functions_rdiv_scalar", [PP, _V, _D])
_f_pow_s = _d("ch_functions_pow_scalar", [PP, _V, _D])
_f_rpow_s = _d("ch_functions_rpow_scalar", [PP, _V, _D])
_f_neg = _d("ch_functions_neg", [PP, _V])
_f_exp = _d("ch_functions_exp", [PP, _V])
_f_log = _d("ch_functions_log", [PP, _V])

_SCALAR_TYPES = (int, float)
_set_requires_grad = _capi._decl("ch_variable_set_requires_grad", S, [_V, _capi.c_int32],
                                 optional=True)
_requires_grad = _capi._decl("ch_variable_requires_grad", _capi.c_int32, [_V], optional=True) \
    or (lambda h: 1)


def _new_var(h):
    v = object.__new__(Variable)
    v._h = h
    v._data = None
    return v


def _call1(fn, h):
    out = _c_void_p()
    st = fn(out, h)
    if st:
        raise_status(st)
    return _new_var(out.value)


def _call2(fn, a, b):
    out = _c_void_p()
    st = fn(out, a, b)
    if st:
        raise_status(st)
    return _new_var(out.value)


def _is_scalar(x):
    return type(x) in _SCALAR_TYPES or isinstance(x, (numbers.Real, np.generic)) and not \
        isinstance(x, (bool, np.bool_))


def _binary_op(scalar_fn, fn, reflected):
    """An operator method: the scalar C entry point for Python/NumPy scalars,
    the broadcasting one for variables and arrays (reflected: other op self)."""
    _new = object.__new__

    def op(self, other):
        out = _c_void_p()
        if type(other) in _SCALAR_TYPES:
            st = scalar_fn(out, self._h, other)
        elif _is_scalar(other):
            st = scalar_fn(out, self._h, float(other))
        else:
            o = self._other(other)
            st = fn(out, o._h, self._h) if reflected else fn(out, self._h, o._h)
        if st:
            raise_status(st)
        v = _new(Variable)
        v._h = out.value
        v._data = None
        return v
    return op


class Variable(object):
    """Array with a structure to keep track of computation (chainer.Variable).

    Args:
        data: the initial data array: a NumPy array (shared, not copied, when it
            is C-contiguous float32/float64/int32), a chainerc.Array, or any
            DLPack producer (e.g. a torch tensor; shared, not copied).
        volatile (bool): a volatile variable records no history.
    """

    __slots__ = ("_h", "_data", "__weakref__")
    __array_priority__ = 200  # NumPy defers to our reflected operators
    __array_ufunc__ = None

    def __init__(self, data, volatile=False):
        self._h = None
        self._data = None
        if _sp_init is not None and _sp_init(self, data, volatile):
            return  # chainerc._speedups did it (a plain NumPy array)
        h = _to_handle(data)
        out = c_void_p()
        st = _new(byref(out), h, 1 if volatile else 0)
        _arr_release(h)
        if st:
            raise_status(st)
        self._h = out.value
        if type(data) is np.ndarray and data.flags.c_contiguous and \
                data.dtype in _array._DTYPE_TO_CH:
            self._data = data  # Chainer's identity: x.data is the array given

    def __del__(self, _release=_release):
        h = self._h
        if h:
            self._h = None
            _release(h)

    # --- deterministic release (finalizers do it otherwise) ---------------------------
    def release(self):
        """Drop this object's reference to the engine's variable now (what the
        finalizer would do later). NumPy views already taken stay valid; using
        the variable afterwards raises NullHandleError."""
        h = self._h
        self._h = None
        self._data = None
        if h:
            check(_release(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    # --- data and gradient ------------------------------------------------------
    @property
    def data(self):
        """The data array: a NumPy array sharing the variable's memory."""
        d = self._data
        if d is None:
            out = c_void_p()
            st = _var_data(byref(out), self._h)
            if st:
                raise_status(st)
            d = self._data = _handle_to_numpy(out.value)
        return d

    @data.setter
    def data(self, value):
        h = _to_handle(value)
        st = lib.ch_variable_set_data(self._h, h)
        _arr_release(h)
        check(st)
        self._data = value if type(value) is np.ndarray and value.flags.c_contiguous \
            and value.dtype in _array._DTYPE_TO_CH else None

    @property
    def grad(self):
        """The gradient (a NumPy array sharing the engine's memory) or None."""
        out = c_void_p()
        st = _var_grad(byref(out), self._h)
        if st:
            raise_status(st)
        if not out.value:
            return None
        return _handle_to_numpy(out.value)

    @grad.setter
    def grad(self, value):
        if type(value) is np.ndarray and _sp_set_grad is not None:
            st = _sp_set_grad(self._h, value)
            if st >= 0:
                if st:
                    raise_status(st)
                return
        if value is None:
            check(lib.ch_variable_set_grad(self._h, None))
            return
        if not (isinstance(value, (np.ndarray, _array.Array)) or hasattr(value, "__dlpack__")):
            value = np.asarray(value, dtype=self.dtype)
        h = _to_handle(value)
        st = lib.ch_variable_set_grad(self._h, h)
        _arr_release(h)
        check(st)

    # --- graph --------------------------------------------------------------
    @property
    def creator(self):
        """The function application that created this variable, or None."""
        out = c_void_p()
        check(lib.ch_variable_creator(byref(out), self._h))
        if not out.value:
            return None
        from .function import FunctionNode
        return FunctionNode._from_handle(out.value)

    def graph_dot(self, name=None, rankdir="TB", show_parameters=True):
        """The graph behind this variable as Graphviz DOT text
        (computational_graph.build_computational_graph((self,)).dump())."""
        from .computational_graph import build_computational_graph
        return build_computational_graph((self,), names=None if name is None else (name,),
                                         rankdir=rankdir,
                                         show_parameters=show_parameters).dump()

    @property
    def volatile(self):
        return bool(lib.ch_variable_is_volatile(self._h))

    @volatile.setter
    def volatile(self, value):
        """Change the volatility (the seed's `feat.volatile = False`): this
        object becomes a root variable with the same data (shared, no copy)
        and the new flag; the history behind it is no longer reachable from it."""
        value = bool(value)
        if value == self.volatile:
            return
        out = c_void_p()
        check(_var_data(byref(out), self._h))
        try:
            nv = c_void_p()
            check(_new(byref(nv), out.value, 1 if value else 0))
        finally:
            _arr_release(out.value)
        old, self._h = self._h, nv.value
        _release(old)

    @property
    def requires_grad(self):
        """Whether backward computes a gradient for this variable (default
        True; Chainer v2's flag). Set it to False on inputs such as training
        data so that functions skip their gradient."""
        return bool(_requires_grad(self._h))

    @requires_grad.setter
    def requires_grad(self, value):
        if _set_requires_grad is None:
            raise NotImplementedError("this libchainerc has no ch_variable_set_requires_grad")
        check(_set_requires_grad(self._h, 1 if value else 0))

    def backward(self, retain_grad=False, enable_double_backprop=False):
        """Error backpropagation from this variable (see Chainer's
        Variable.backward). If its data has one element and no grad is set,
        the initial error is 1. With enable_double_backprop the gradients are
        built as graphs: x.grad_var is then a Variable that can be
        differentiated again (clear it with x.cleargrad() when done: it may
        reference x)."""
        if not enable_double_backprop:
            st = lib.ch_variable_backward(self._h, 1 if retain_grad else 0)
        else:
            st = lib.ch_variable_backward_ex(self._h, byref(_options(retain_grad, True)))
        if st:
            raise_status(st)

    @property
    def grad_var(self):
        """The gradient as a Variable (Chainer's grad_var), or None. After
        backward(enable_double_backprop=True) it carries the gradient's graph."""
        out = c_void_p()
        check(lib.ch_variable_grad_var(byref(out), self._h))
        return _new_var(out.value) if out.value else None

    def cleargrad(self):
        """Clear the gradient (Chainer's cleargrad)."""
        check(lib.ch_variable_set_grad(self._h, None))

    def unchain_backward(self):
        """Delete the references to the functions and variables before this
        one: later backward calls stop here (truncated BPTT)."""
        check(lib.ch_variable_unchain_backward(self._h))

    def __len__(self):
        """Number of elements of the data (Chainer 1.x's Variable.__len__)."""
        return int(lib.ch_variable_size(self._h))

    # --- convenience ----------------------------------------------------------
    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return int(lib.ch_variable_size(self._h))

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def handle(self):
        """The ch_variable handle (borrowed; valid while this object lives)."""
        return self._h

    def __repr__(self):
        try:
            return "variable(%s)" % (np.array2string(np.asarray(self.data)),)
        except Exception:
            return "variable(<released>)"

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of the data (no copy)."""
        out = c_void_p()
        check(_var_data(byref(out), self._h))
        try:
            return _array.handle_to_dlpack(out.value)
        finally:
            _arr_release(out.value)

    def __dlpack_device__(self):
        out = c_void_p()
        check(_var_data(byref(out), self._h))
        d = lib.ch_array_device(out.value)
        _arr_release(out.value)
        return (d.type, d.index)

    # --- operators --------------------------------------------------------------
    def _other(self, other):
        if isinstance(other, Variable):
            return other
        return Variable(np.asarray(other, dtype=self.dtype), volatile=self.volatile)

    def __neg__(self):
        return _call1(_f_neg, self._h)

    __add__ = _binary_op(_f_add_s, _f_add, False)
    __radd__ = _binary_op(_f_add_s, _f_add, True)
    __sub__ = _binary_op(_f_sub_s, _f_sub, False)
    __rsub__ = _binary_op(_f_rsub_s, _f_sub, True)
    __mul__ = _binary_op(_f_mul_s, _f_mul, False)
    __rmul__ = _binary_op(_f_mul_s, _f_mul, True)
    __truediv__ = _binary_op(_f_div_s, _f_div, False)
    __rtruediv__ = _binary_op(_f_rdiv_s, _f_div, True)

    def __pow__(self, other):
        if type(other) in _SCALAR_TYPES or _is_scalar(other):
            return _call2(_f_pow_s, self._h, float(other))
        # x ** y for a variable exponent: exp(y * log(x)), differentiable in both.
        o = self._other(other)
        t = o * _call1(_f_log, self._h)
        return _call1(_f_exp, t._h)

    def __rpow__(self, other):
        if type(other) in _SCALAR_TYPES or _is_scalar(other):
            return _call2(_f_rpow_s, self._h, float(other))
        return self._other(other).__pow__(self)

    __hash__ = object.__hash__


def _options(retain_grad, enable_double_backprop):
    o = _capi.BackwardOptions()
    o.version = _capi.CH_BACKWARD_OPTIONS_VERSION
    o.retain_grad = 1 if retain_grad else 0
    o.enable_double_backprop = 1 if enable_double_backprop else 0
    return o


def grad(outputs, inputs, grad_outputs=None, grad_inputs=None, set_grad=False,
         retain_grad=False, enable_double_backprop=False):
    """Chainer's chainer.grad: the gradients of `outputs` with respect to
    `inputs` as a list of new Variables (None where no gradient reaches an
    input). No variable's grad changes (intermediates' do with retain_grad).
    With enable_double_backprop the results can be differentiated again."""
    if grad_inputs is not None or set_grad:
        raise NotImplementedError("chainerc.grad: grad_inputs and set_grad are not supported")
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for v in outputs + inputs:
        if not isinstance(v, Variable):
            raise TypeError("chainerc.grad: outputs and inputs must be Variables, got %r"
                            % type(v).__name__)
    gys = None
    if grad_outputs is not None:
        grad_outputs = list(grad_outputs)
        if len(grad_outputs) != len(outputs):
            raise ValueError("chainerc.grad: %d outputs but %d grad_outputs"
                             % (len(outputs), len(grad_outputs)))
        grad_outputs = [g if g is None or isinstance(g, Variable) else Variable(g)
                        for g in grad_outputs]
        gys = (c_void_p * len(outputs))(*[None if g is None else g._h for g in grad_outputs])
    ys = (c_void_p * len(outputs))(*[y._h for y in outputs])
    xs = (c_void_p * max(len(inputs), 1))(*[x._h for x in inputs])
    out = (c_void_p * max(len(inputs), 1))()
    st = lib.ch_grad(out, ys, len(outputs), xs, len(inputs), gys,
                     byref(_options(retain_grad, enable_double_backprop)))
    if st:
        raise_status(st)
    return [_new_var(out[i]) if out[i] else None for i in range(len(inputs))]


class _BackpropMode(object):
    def __init__(self, enable):
        self._enable = enable

    def __enter__(self):
        check(lib.ch_backprop_mode_push(self._enable))
        return self

    def __exit__(self, *exc):
        check(lib.ch_backprop_mode_pop())
        return False


def no_backprop_mode():
    """Context manager in which functions record no graph on this thread
    (Chainer's no_backprop_mode)."""
    return _BackpropMode(0)


def force_backprop_mode():
    """Context manager in which functions record a graph on this thread even
    inside no_backprop_mode (Chainer's force_backprop_mode)."""
    return _BackpropMode(1)


def as_variable(x):
    """`x` if it is a Variable, else a new (non-volatile) Variable holding it."""
    if isinstance(x, Variable):
        return x
    return Variable(x)
