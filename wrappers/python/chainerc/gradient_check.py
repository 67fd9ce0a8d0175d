"""Gradient checking (chainer.gradient_check) on top of the engine's
ch_numerical_grad, ch_allclose, ch_check_backward and ch_check_backward_graph."""

import numpy as np

from . import _capi, _array, errors
from ._capi import lib, c_void_p, raise_status
from .variable import Variable, _new_var

_fail = _capi.fail_in_callback
_arr_release = lib.ch_array_release


def _data_of(x):
    """The array behind `x`: a Variable's data; a chainerc.Array stays one
    (GPU arrays cannot be NumPy views)."""
    if isinstance(x, Variable):
        return x.data
    return x


def _fresh(x):
    """A copy of `x` on its own device."""
    x = _data_of(x)
    if isinstance(x, _array.Array) and x.device[0] != "cpu":
        from . import cuda
        return cuda.copy(x)
    return np.array(x, copy=True)


def _host(x):
    """`x` as a NumPy array (GPU arrays are copied to the host)."""
    x = _data_of(x)
    if isinstance(x, _array.Array):
        return x.get() if x.device[0] != "cpu" else x.numpy()
    return np.asarray(x)


def _handles(arrays):
    hs = [_array.to_handle(_data_of(a)) for a in arrays]
    return hs, (c_void_p * max(len(hs), 1))(*hs)


def _release_all(hs):
    for h in hs:
        if h:
            _arr_release(h)


def numerical_grad(f, inputs, grad_outputs, eps=1e-3):
    """Numerical gradients of sum(f() * grad_outputs) w.r.t. `inputs` by central
    differences (chainer.gradient_check.numerical_grad).

    `f` is a closure returning a tuple of arrays computed from `inputs`, which
    are changed in place: C-contiguous float32 or float64 NumPy arrays (the
    engine perturbs their memory, with no copy) or chainerc GPU arrays
    (perturbed on their device; the gradients then are GPU arrays there)."""
    inputs = tuple(inputs)
    grad_outputs = tuple(grad_outputs)
    for i, x in enumerate(inputs):
        if isinstance(x, _array.Array) and x.device[0] != "cpu":
            if x.dtype not in (np.float32, np.float64):
                raise TypeError("numerical_grad: inputs[%d] is a %s GPU array; float32 or "
                                "float64 needed" % (i, x.dtype))
            continue
        if not (isinstance(x, np.ndarray) and x.flags.c_contiguous and x.flags.writeable
                and x.dtype in (np.float32, np.float64)):
            raise TypeError("numerical_grad: inputs[%d] must be a writable C-contiguous "
                            "float32/float64 NumPy array or a GPU array (it is perturbed in "
                            "place)" % i)

    def evaluate(user_data, ctx):
        try:
            ys = f()
            if not isinstance(ys, (tuple, list)):
                raise TypeError("numerical_grad: f must return a tuple of arrays; got %s"
                                % type(ys).__name__)
            for y in ys:
                y = _data_of(y)
                if isinstance(y, _array.Array):  # the engine copies what it keeps
                    h = _array.to_handle(y)
                else:
                    h = _array.to_handle(np.array(y, copy=True) if isinstance(y, np.ndarray)
                                         else np.asarray(y))
                st = lib.ch_context_add_output(ctx, h)
                _arr_release(h)
                if st:
                    raise_status(st)
            return 0
        except BaseException as e:
            return _fail(e)

    cb = _capi.EvalCallback(evaluate)
    hx, ax = _handles(inputs)
    hg, ag = _handles(grad_outputs)
    outs = (c_void_p * max(len(inputs), 1))()
    try:
        st = lib.ch_numerical_grad(outs, cb, None, ax, len(inputs), ag, len(grad_outputs),
                                   float(eps))
        if st:
            raise_status(st)
    finally:
        _release_all(hx)
        _release_all(hg)
    return tuple(_array.handle_to_numpy(outs[i]) for i in range(len(inputs)))


def assert_allclose(x, y, atol=1e-5, rtol=1e-4, verbose=True):
    """Assert |x - y| <= atol + rtol * |y| elementwise (chainer.testing.assert_allclose);
    raises chainerc.NotCloseError (an AssertionError) naming the worst element.
    x and y may be CPU or GPU arrays (GPU ones are copied to the host)."""
    x = _host(x)
    y = _host(y)
    if x.shape != y.shape:
        raise errors.NotCloseError("assert_allclose: shapes differ: %s vs %s" % (x.shape, y.shape),
                                   status=errors.CH_ERR_NOT_CLOSE,
                                   status_name="CH_ERR_NOT_CLOSE")
    if x.dtype not in _array._DTYPE_TO_CH:
        x = x.astype(np.float64)
    if y.dtype != x.dtype:
        y = y.astype(x.dtype)
    hx, hy = _array.to_handle(x), _array.to_handle(y)
    try:
        report = _capi.AllcloseReport()
        st = lib.ch_allclose(hx, hy, float(atol), float(rtol), _capi.byref(report))
        if st:
            if st == errors.CH_ERR_NOT_CLOSE and verbose:
                msg = lib.ch_error_message().decode()
                lib.ch_error_take_payload()
                raise errors.NotCloseError(
                    "%s\nx: %s\ny: %s" % (msg, np.array2string(x), np.array2string(y)),
                    status=st, status_name="CH_ERR_NOT_CLOSE")
            raise_status(st)
    finally:
        _arr_release(hx)
        _arr_release(hy)


def _as_tuple(x):
    if x is None:
        return None
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _output_grads(func, xs, gys):
    """`gys`, or one None (ones) per output of func when not given (counted
    with a trial run on copies of the inputs)."""
    if gys is not None:
        return gys
    ys = func(*[Variable(_fresh(x)) for x in xs])
    return (None,) * (len(ys) if isinstance(ys, (tuple, list)) else 1)


def _graph_callback(func, who):
    """The ch_graph_callback through which the engine builds func's graph on
    the inputs it lends; `who` names the checker in errors."""
    def build(user_data, inputs, n_in, outputs, n_out):
        try:
            vs = [_new_var(lib.ch_variable_retain(inputs[i])) for i in range(n_in)]
            ys = func(*vs)
            ys = tuple(ys) if isinstance(ys, (tuple, list)) else (ys,)
            if len(ys) != n_out:
                raise ValueError("%s: func returned %d outputs but %d output gradients were "
                                 "given" % (who, len(ys), n_out))
            for i, y in enumerate(ys):
                outputs[i] = lib.ch_variable_retain(y._h)
            return 0
        except BaseException as e:
            return _fail(e)
    return _capi.GraphCallback(build)


def _optional_handles(arrays):
    """Handles of `arrays` (None entries stay NULL: ones) and their C array
    (None for an empty list)."""
    hs = [None if a is None else _array.to_handle(_data_of(a)) for a in arrays]
    return hs, ((c_void_p * len(hs))(*hs) if hs else None)


def check_double_backward(func, x_data, y_grad, x_grad_grad, eps=1e-3, atol=1e-4, rtol=1e-3):
    """Check `func`'s second derivative (Chainer's
    gradient_check.check_double_backward): the first backward, taken with
    enable_double_backprop, is checked as a function of (x, gy) against
    numerical gradients, with x_grad_grad as the gradients of gx. func is a
    callable taking Variables and returning a Variable or a tuple of them.
    y_grad / x_grad_grad: arrays or tuples (None entries mean ones). Use
    float64 data. Raises NotCloseError (or GraphError for a function without
    a graph backward)."""
    xs = _as_tuple(x_data)
    gys = _output_grads(func, xs, _as_tuple(y_grad))
    ggs = _as_tuple(x_grad_grad) or ()
    cb = _graph_callback(func, "check_double_backward")
    hx, ax = _handles(xs)
    hg, ag = _optional_handles(gys)
    hgg, agg = _optional_handles(ggs)
    try:
        st = lib.ch_check_double_backward(cb, None, ax, len(xs), ag, len(hg), agg, len(hgg),
                                          eps, atol, rtol)
    finally:
        _release_all(hx)
        _release_all(hg)
        _release_all(hgg)
    if st:
        raise_status(st)


def check_backward(func, x_data, y_grad=None, eps=1e-3, atol=1e-5, rtol=1e-4):
    """Check `func`'s backward against numerical gradients (Chainer's
    gradient_check.check_backward): raises NotCloseError naming the input and
    the worst element.

    func: a chainerc Function (e.g. a user-defined Function, a built-in
        parameterized function) or any callable taking Variables and returning
        a Variable or a tuple of them.
    x_data: an input array or a tuple of them (copied, not changed).
    y_grad: the output gradient(s); None means ones.
    """
    xs = _as_tuple(x_data)
    gys = _as_tuple(y_grad)
    from .function import Function
    from .functions._link import ParameterizedFunction
    if isinstance(func, (Function, ParameterizedFunction)):
        fh = func._chainerc_function()
        hx, ax = _handles(xs)
        hg, ag = _handles(gys) if gys is not None else ([], None)
        try:
            st = lib.ch_check_backward(fh, ax, len(xs), ag, len(hg), eps, atol, rtol)
        finally:
            _release_all(hx)
            _release_all(hg)
    else:
        gys = _output_grads(func, xs, gys)
        cb = _graph_callback(func, "check_backward")
        hx, ax = _handles(xs)
        hg, ag = _optional_handles(gys)
        try:
            st = lib.ch_check_backward_graph(cb, None, ax, len(xs), ag, len(hg), eps, atol, rtol)
        finally:
            _release_all(hx)
            _release_all(hg)
    if st:
        raise_status(st)
