"""Function: user-defined differentiable functions (chainer.Function of
Chainer 1.x) run by the engine through ch_function_new callbacks, and
FunctionNode, a function application found in a graph (Variable.creator)."""

import threading
import weakref

import numpy as np

from . import _capi, _array
from ._capi import lib, c_void_p, c_size_t, byref, check, raise_status
from .variable import Variable, _new_var

_MAX_OUTPUTS = 64
_SLOTS = ("forward", "backward", "forward_cpu", "backward_cpu", "forward_gpu", "backward_gpu")
_G = _capi.held
_objects = _capi._objects
_register = _capi.register
_retain = _G.ch_array_retain
_arr_release = _G.ch_array_release
_to_handle = _array.to_handle
_view = _array.handle_to_numpy
_add_output = _G.ch_context_add_output
_set_grad_input = _G.ch_context_set_grad_input
_set_user_data = _G.ch_context_set_user_data
_ctx_user_data = _G.ch_context_user_data
_data = _G.ch_array_data
_unregister_cb = _capi.unregister_cb
_fail = _capi.fail_in_callback
_apply = lib.ch_function_apply
_needs = getattr(_G, "ch_context_needs_input_grad", None)


_cpu_view = _array.cpu_view
_owned = _array.owned_handle
_ndarray = np.ndarray
_GpuArray = _array.Array
_new_obj = object.__new__
_CPU_ONLY = _array._CPU_ONLY
_CPU_TYPE = _capi.CH_DEVICE_CPU
_ctx_device = getattr(_G, "ch_context_device", None)
# The NumPy arrays behind the inputs of the Function.__call__ running on this
# thread (Variable._data, None where not known), for its forward callback.
class _Pending(threading.local):
    arrays = None


_pending = _Pending()
_PTRS = [c_void_p * i for i in range(17)]
_OUTS = c_void_p * _MAX_OUTPUTS


def _on_cpu(ctx):
    """Whether every array a callback sees is on the CPU: the context's device
    is the first input's not on the CPU (include/ch/function.h)."""
    return _CPU_ONLY or (_ctx_device is not None and _ctx_device(ctx).type == _CPU_TYPE)


def _views(arrays, n, cpu=False):
    """Read-only zero-copy NumPy views of borrowed ch_array handles (`cpu`:
    all are known to be on the CPU, so no device is asked for)."""
    view = _cpu_view if cpu else _view
    return tuple([view(_retain(arrays[i]), True) for i in range(n)])


def _input_views(pending, arrays, n, ctx, cpu):
    """Forward's input views: read-only views of the NumPy arrays the input
    Variables hold (x.data, the very memory the engine passes) where
    Function.__call__ knew them, which costs no call into the library; the
    others as _views."""
    res = []
    for i in range(n):
        a = pending[i]
        if type(a) is _ndarray:
            v = a.view()
            v.setflags(write=False)
        else:
            cpu = cpu or _on_cpu(ctx)
            v = (_cpu_view if cpu else _view)(_retain(arrays[i]), True)
        res.append(v)
    return tuple(res)


def _as_tuple(result, who, what):
    if isinstance(result, tuple):
        return result
    if isinstance(result, list):
        return tuple(result)
    raise TypeError("%s must return a tuple of %s; got %s (write `return y,` for one "
                    "array)" % (who, what, type(result).__name__))


def _application_copy(proto):
    """The seed's copy on call: a shallow copy of the function object per
    application, kept as the application's user data until it dies."""
    node = _new_obj(type(proto))
    d = node.__dict__
    d.update(proto.__dict__)
    d.pop("_chainerc_fn", None)
    return node


def _input_gradients(node, slot, gxs, n_in):
    """What a backward slot returned, as a tuple of n_in gradients (None: no
    gradient at all); TypeError / ValueError naming the slot otherwise."""
    if gxs is None:
        return None
    if type(gxs) is not tuple:
        gxs = _as_tuple(gxs, "%s.%s" % (type(node).__name__, slot), "input gradients")
    if len(gxs) != n_in:
        raise ValueError("%s.%s returned %d gradients for %d inputs"
                         % (type(node).__name__, slot, len(gxs), n_in))
    return gxs


def _set_grad(ctx, i, g, x):
    """ch_context_set_grad_input for gradient g of input view x: a GPU array
    as it is; anything else as a NumPy array of x's dtype (a one-element one
    broadcast to x's shape). Returns the status."""
    if type(g) is not _ndarray:
        if isinstance(g, _GpuArray):  # a GPU array (forward_gpu/backward_gpu)
            h = _retain(g.handle)
            st = _set_grad_input(ctx, i, h)
            _arr_release(h)
            return st
        g = np.asarray(g)
    if g.dtype != x.dtype:
        g = g.astype(x.dtype)
    if g.shape != x.shape and g.size == 1:
        g = np.full(x.shape, g.reshape(()), x.dtype)
    h = _owned(g)
    st = _set_grad_input(ctx, i, h)
    _arr_release(h)
    return st


def _make_forward(slot):
    cpu_slot = slot == "forward_cpu"  # the engine calls it for CPU inputs only

    def forward(user_data, ctx, inputs, n):
        try:
            proto = _objects[user_data]()
            if proto is None:
                raise RuntimeError("the Function object was garbage-collected")
            node = _application_copy(proto)
            pending = _pending.arrays
            if pending is not None and len(pending) == n:
                _pending.arrays = None  # this application's; a nested one sets its own
                xs = _input_views(pending, inputs, n, ctx, cpu_slot)
            else:
                xs = _views(inputs, n, cpu_slot or _on_cpu(ctx))
            # Backward reuses these views for inputs whose memory it gets again
            # (the engine checks the shape is forward's).
            if cpu_slot or _on_cpu(ctx):
                saved = (xs, tuple([_data(inputs[i]) for i in range(n)]))
            else:
                saved = None
            ys = getattr(node, slot)(xs)
            if type(ys) is not tuple:
                ys = _as_tuple(ys, "%s.%s" % (type(proto).__name__, slot), "output arrays")
            for y in ys:
                h = _owned(y)
                st = _add_output(ctx, h)
                _arr_release(h)
                if st:
                    raise_status(st)
            st = _set_user_data(ctx, _register((node, saved)), _unregister_cb)
            if st:
                raise_status(st)
            return 0
        except BaseException as e:  # carried to the caller, type and traceback intact
            return _fail(e)
    return _capi.immortal(_capi.ForwardCallback(forward))


def _reused_views(saved, arrays, n):
    """Backward's input views on the CPU: forward's view where the engine
    passes the same memory again, else a new view."""
    views, ptrs = saved
    res = []
    for i in range(n):
        h = arrays[i]
        res.append(views[i] if _data(h) == ptrs[i] else _cpu_view(_retain(h), True))
    return tuple(res)


def _make_backward(slot):
    cpu_slot = slot == "backward_cpu"

    def backward(user_data, ctx, inputs, n_in, outputs, n_out, grad_outputs, n_gout):
        try:
            node, saved = _objects[_ctx_user_data(ctx)]
            if _needs is not None:
                needs = tuple([_needs(ctx, i) != 0 for i in range(n_in)])
                node.__dict__["needs_input_grad"] = needs
            else:
                needs = None
            cpu = cpu_slot or _on_cpu(ctx)
            if cpu and saved is not None and len(saved[0]) == n_in:
                xs = _reused_views(saved, inputs, n_in)
            else:
                xs = _views(inputs, n_in, cpu)
            gys = _views(grad_outputs, n_gout, cpu)
            gxs = _input_gradients(node, slot, getattr(node, slot)(xs, gys), n_in)
            if gxs is None:
                return 0
            i = -1
            for g in gxs:
                i += 1
                if g is None or (needs is not None and not needs[i]):
                    continue
                st = _set_grad(ctx, i, g, xs[i])
                if st:
                    raise_status(st)
            return 0
        except BaseException as e:
            return _fail(e)
    return _capi.immortal(_capi.BackwardCallback(backward))


_CALLBACKS = {s: (_make_backward(s) if s.startswith("backward") else _make_forward(s))
              for s in _SLOTS}


def _node_of(ctx):
    """The application's Function copy (its context's user data)."""
    return _objects[_ctx_user_data(ctx)][0]


# --- with chainerc._speedups ------------------------------------------------------
# The engine calls C trampolines (_speedups.c), which take the GIL, make the
# CPU views and call these bodies; the application's user data is the tuple
# (Function copy, forward's input views) itself, dropped by a C destroy
# callback. What the bodies do is what forward/backward above do.
_sp = _capi.speedups
if _sp is not None:
    _sp_add_output = _sp.add_output
    _sp_set_grad_input = _sp.set_grad_input
    _sp_set_user_data = _sp.set_user_data
    _sp_input_views = _sp.input_views
    _sp_apply = _sp.apply
    _sp_addrs = _sp.callbacks()
    _SP_CALLBACKS = {s: (_capi.BackwardCallback if s.startswith("backward")
                         else _capi.ForwardCallback)(_sp_addrs[i])
                     for i, s in enumerate(_SLOTS)}
    _SP_DESTROY = _capi.DestroyCallback(_sp_addrs[len(_SLOTS) + 1])

    def _node_of(ctx, _user=_sp.user_data):  # noqa: F811
        return _user(ctx)[0]

    def _make_sp_forward(slot):
        def forward(wr, ctx, xs, hs, pending):
            try:
                proto = wr()
                if proto is None:
                    raise RuntimeError("the Function object was garbage-collected")
                node = _application_copy(proto)
                if xs is None:  # not all on the CPU
                    n = len(hs)
                    if pending is not None:
                        xs = _input_views([x._data for x in pending], hs, n, ctx, False)
                    else:
                        xs = _views(hs, n, False)
                ys = getattr(node, slot)(xs)
                if type(ys) is not tuple:
                    ys = _as_tuple(ys, "%s.%s" % (type(proto).__name__, slot), "output arrays")
                for y in ys:
                    st = _sp_add_output(ctx, y)
                    if st < 0:
                        h = _owned(y)
                        st = _add_output(ctx, h)
                        _arr_release(h)
                    if st:
                        raise_status(st)
                st = _sp_set_user_data(ctx, (node, xs))
                if st:
                    raise_status(st)
                return 0
            except BaseException as e:
                return _fail(e)
        return forward

    def _make_sp_backward(slot):
        def backward(ud, ctx, hs, gys, ghs, needs):
            try:
                node, saved = ud
                if needs is not None:
                    node.__dict__["needs_input_grad"] = needs
                n_in = len(hs)
                if gys is not None:  # on the CPU
                    xs = _sp_input_views(hs, saved)
                else:
                    xs = _views(hs, n_in, False)
                    gys = _views(ghs, len(ghs), False)
                gxs = _input_gradients(node, slot, getattr(node, slot)(xs, gys), n_in)
                if gxs is None:
                    return 0
                i = -1
                for g in gxs:
                    i += 1
                    if g is None or (needs is not None and not needs[i]):
                        continue
                    st = _sp_set_grad_input(ctx, i, g, xs[i])
                    if st < 0:  # not a plain array: the general path
                        st = _set_grad(ctx, i, g, xs[i])
                    if st:
                        raise_status(st)
                return 0
            except BaseException as e:
                return _fail(e)
        return backward

    _sp.set_bodies(tuple([(_make_sp_backward(s) if s.startswith("backward")
                           else _make_sp_forward(s)) for s in _SLOTS]),
                   _fail, raise_status, Variable)
else:
    _sp_apply = None


def _graph_backward(user_data, ctx, inputs, n_in, outputs, n_out, grad_outputs, n_gout, gx):
    try:
        node = _node_of(ctx)
        xs = tuple([_new_var(lib.ch_variable_retain(inputs[i])) for i in range(n_in)])
        ys = tuple([_new_var(lib.ch_variable_retain(outputs[i])) for i in range(n_out)])
        gys = tuple([_new_var(lib.ch_variable_retain(grad_outputs[i])) for i in range(n_gout)])
        gxs = node.backward_graph(xs, ys, gys)
        gxs = _as_tuple(gxs, "%s.backward_graph" % type(node).__name__, "input gradients")
        if len(gxs) != n_in:
            raise ValueError("%s.backward_graph returned %d gradients for %d inputs"
                             % (type(node).__name__, len(gxs), n_in))
        for i, g in enumerate(gxs):
            if g is None:
                continue
            if not isinstance(g, Variable):
                raise TypeError("%s.backward_graph must return Variables (or None), got %r for "
                                "input %d" % (type(node).__name__, type(g).__name__, i))
            gx[i] = lib.ch_variable_retain(g._h)
        return 0
    except BaseException as e:
        return _fail(e)


_GRAPH_BACKWARD = _capi.immortal(_capi.GraphBackwardCallback(_graph_backward))


class Function(object):
    """Function of variable(s) to variable(s) that leaves footprint to the
    output variables on application (chainer.Function).

    Subclasses implement forward/backward, or forward_cpu/backward_cpu (and
    forward_gpu/backward_gpu). They take tuples of NumPy arrays (read-only
    views of the engine's memory, no copy) and return tuples of arrays.
    When the inputs are on a GPU the engine calls forward_gpu/backward_gpu
    (forward/backward if those are not defined) with chainerc.Array GPU
    arrays, with their device current (cuda.get_device() names it), and
    takes GPU arrays back (made with cuda.empty_like, cuda.elementwise, ...).
    Calling the object copies it (shallowly) per application, so attributes set
    in forward are there in backward of the same application.

    For double backprop (gradients of gradients), define
    backward_graph(self, inputs, outputs, grad_outputs) over Variables, as
    Chainer 7's FunctionNode.backward: it returns the input gradients as
    Variables computed with chainerc functions (and other Functions), so
    that they can be differentiated again. Without it, backward with
    enable_double_backprop=True through the function raises GraphError
    naming it.

    In backward, `self.needs_input_grad` (a tuple of bools, one per input)
    tells which inputs need a gradient (those whose variables have
    requires_grad False do not); gradients for the others are dropped.

    Parameterized functions list their parameter and gradient attributes
    (NumPy arrays) in parameter_names and gradient_names; the engine shares
    those arrays (no copy) with optimizers, and backward must accumulate into
    the gradient arrays in place.
    """

    parameter_names = ()
    gradient_names = ()

    def __call__(self, *inputs):
        fh = self._chainerc_function()
        n = len(inputs)
        ins = inputs
        for x in inputs:
            if not isinstance(x, Variable):
                vol = next((x.volatile for x in inputs if isinstance(x, Variable)), False)
                ins = [x if isinstance(x, Variable) else Variable(x, vol) for x in inputs]
                break
        if _sp_apply is not None:
            return _sp_apply(fh, tuple(ins), self)
        hs = (_PTRS[n] if n < 17 else c_void_p * n)(*[x._h for x in ins])
        outs = _OUTS()
        n_out = c_size_t()
        _pending.arrays = [x._data for x in ins]
        try:
            st = _apply(fh, hs, n, outs, _MAX_OUTPUTS, n_out)
        finally:
            _pending.arrays = None
        if st:
            raise_status(st)
        n_out = n_out.value
        if n_out == 1:
            return _new_var(outs[0])
        if n_out > _MAX_OUTPUTS:
            for i in range(_MAX_OUTPUTS):
                lib.ch_variable_release(outs[i])
            raise ValueError("%s: %d outputs; chainerc's Python wrapper returns at most %d"
                             % (type(self).__name__, n_out, _MAX_OUTPUTS))
        return tuple([_new_var(outs[i]) for i in range(n_out)])

    # --- the engine's function object ----------------------------------------------
    def _chainerc_function(self):
        d = self.__dict__
        state = d.get("_chainerc_fn")
        params = self.parameters if self.parameter_names else ()
        if state is not None:
            if not params or state.params == tuple(map(id, params)) + tuple(
                    map(id, self.gradients)):
                return state.handle
        state = _FunctionHandle(self)
        d["_chainerc_fn"] = state
        return state.handle

    def release(self):
        """Drop the engine's function object now (a later call makes a new one)."""
        state = self.__dict__.pop("_chainerc_fn", None)
        if state is not None and state.handle:
            h, state.handle = state.handle, None
            check(lib.ch_function_release(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    @property
    def label(self):
        return type(self).__name__

    # --- defaults, as chainer.Function --------------------------------------------
    def forward(self, inputs):
        if any(not isinstance(x, np.ndarray) for x in inputs):
            return self.forward_gpu(inputs)
        return self.forward_cpu(inputs)

    def backward(self, inputs, grad_outputs):
        if any(not isinstance(x, np.ndarray) for x in inputs):
            return self.backward_gpu(inputs, grad_outputs)
        return self.backward_cpu(inputs, grad_outputs)

    def forward_cpu(self, inputs):
        raise NotImplementedError("%s implements no forward_cpu" % type(self).__name__)

    def forward_gpu(self, inputs):
        raise NotImplementedError("%s implements no forward_gpu" % type(self).__name__)

    def backward_cpu(self, inputs, grad_outputs):
        return tuple(None for _ in inputs)

    def backward_gpu(self, inputs, grad_outputs):
        return tuple(None for _ in inputs)

    @property
    def parameters(self):
        return tuple(getattr(self, name) for name in self.parameter_names)

    @parameters.setter
    def parameters(self, values):
        for name, value in zip(self.parameter_names, values):
            setattr(self, name, value)

    @property
    def gradients(self):
        return tuple(getattr(self, name) for name in self.gradient_names)

    @gradients.setter
    def gradients(self, values):
        for name, value in zip(self.gradient_names, values):
            setattr(self, name, value)

    def to_cpu(self):
        return self

    def to_gpu(self, device=None):
        """Nothing to move for a Function without parameters. A parameterized
        user Function keeps NumPy parameters, which the engine shares with
        optimizers on the host: it cannot move them (UnsupportedError)."""
        from . import cuda, errors
        cuda.check_cuda_available()
        if self.parameter_names:
            raise errors.UnsupportedError(
                "%s.to_gpu: the parameters of a user Function are NumPy arrays shared with the "
                "engine and stay on the CPU; use built-in parameterized functions (F.Linear, "
                "...) in a FunctionSet for parameters on a GPU" % type(self).__name__,
                status=errors.CH_ERR_UNSUPPORTED, status_name="CH_ERR_UNSUPPORTED")
        return self


class _FunctionHandle(object):
    """The ch_function object of a Python Function instance."""

    __slots__ = ("handle", "params")

    def __init__(self, fn):
        self.handle = None
        cls = type(fn)
        d = _capi.FunctionDef()
        d.version = _capi.CH_FUNCTION_DEF_VERSION
        d.name = cls.__name__.encode()
        any_forward = False
        callbacks = _CALLBACKS if _sp is None else _SP_CALLBACKS
        for slot in _SLOTS:
            if getattr(cls, slot) is not getattr(Function, slot):
                setattr(d, slot, callbacks[slot])
                any_forward = any_forward or slot.startswith("forward")
        if not any_forward:
            raise TypeError("%s defines none of forward, forward_cpu, forward_gpu"
                            % cls.__name__)
        if getattr(cls, "backward_graph", None) is not None:
            if d.version < 2:
                raise NotImplementedError("%s.backward_graph: this libchainerc has no graph "
                                          "backward (ch_function_def version 2)" % cls.__name__)
            d.graph_backward = _GRAPH_BACKWARD
        if _sp is None:
            key = _register(weakref.ref(fn))
            d.destroy = _unregister_cb
        else:
            key = _sp.hold(weakref.ref(fn))  # the weak reference itself, dropped in C
            d.destroy = _SP_DESTROY
        d.user_data = key
        out = c_void_p()
        st = lib.ch_function_new(byref(out), byref(d))
        if st:
            if _sp is None:
                _objects.pop(key, None)
            else:
                _sp.drop(key)
            raise_status(st)
        self.handle = out.value
        params = fn.parameters if fn.parameter_names else ()
        grads = fn.gradients if fn.parameter_names else ()
        if len(params) != len(grads):
            raise ValueError("%s: %d parameter_names but %d gradient_names"
                             % (cls.__name__, len(params), len(grads)))
        for name, p, g in zip(fn.parameter_names, params, grads):
            for what, a in (("parameter", p), ("gradient", g)):
                if not (isinstance(a, np.ndarray) and a.flags.c_contiguous
                        and a.dtype in _array._DTYPE_TO_CH):
                    raise TypeError(
                        "%s: %s %r must be a C-contiguous float32/float64 NumPy array so that "
                        "the engine and optimizers share it" % (cls.__name__, what, name))
            hp, hg = _to_handle(p), _to_handle(g)
            st = lib.ch_function_add_parameter(self.handle, name.encode(), hp, hg)
            _arr_release(hp)
            _arr_release(hg)
            check(st)
        self.params = tuple(map(id, params)) + tuple(map(id, grads))

    def __del__(self, _release=lib.ch_function_release):
        h = self.handle
        if h:
            self.handle = None
            _release(h)


class FunctionNode(object):
    """A function application in a graph (what Variable.creator returns)."""

    __slots__ = ("_h", "__weakref__")

    @classmethod
    def _from_handle(cls, h):
        self = object.__new__(cls)
        self._h = h
        return self

    def __del__(self, _release=lib.ch_function_release):
        h = self._h
        if h:
            self._h = None
            _release(h)

    @property
    def label(self):
        return lib.ch_function_name(self._h).decode()

    name = label

    @property
    def inputs(self):
        res = []
        for i in range(lib.ch_function_input_count(self._h)):
            out = c_void_p()
            check(lib.ch_function_input(byref(out), self._h, i))
            res.append(_new_var(out.value) if out.value else None)
        return tuple(res)

    @property
    def outputs(self):
        res = []
        for i in range(lib.ch_function_output_count(self._h)):
            out = c_void_p()
            check(lib.ch_function_output(byref(out), self._h, i))
            res.append(_new_var(out.value) if out.value else None)
        return tuple(res)

    def unchain(self):
        check(lib.ch_function_unchain(self._h))

    def forward(self, inputs):
        """Run this application's forward computation again on plain arrays and
        return a tuple of NumPy arrays, recording nothing (the seed's
        `func = y.creator; f = lambda: func.forward((x.data,))` inside
        gradient_check.numerical_grad). The graph stays usable: a built-in node
        recomputes what its backward keeps from its own inputs afterwards (see
        ch_function_forward); a live dropout node refuses (its mask would change).
        A user Function's application runs the Function object's forward on a
        fresh copy, so that object must still be alive."""
        if isinstance(inputs, (np.ndarray, _array.Array)) or not isinstance(inputs, (tuple, list)):
            raise TypeError("forward takes a tuple of arrays; write func.forward((x,)) for one")
        hs = [_to_handle(x.data if isinstance(x, Variable) else x) for x in inputs]
        try:
            ins = (c_void_p * max(len(hs), 1))(*hs)
            outs = (c_void_p * _MAX_OUTPUTS)()
            n_out = c_size_t()
            st = lib.ch_function_forward(self._h, ins, len(hs), outs, _MAX_OUTPUTS, byref(n_out))
        finally:
            for h in hs:
                _arr_release(h)
        if st:
            raise_status(st)
        n = n_out.value
        res = tuple([_view(outs[i]) for i in range(min(n, _MAX_OUTPUTS))])
        if n > _MAX_OUTPUTS:
            raise ValueError("%s: %d outputs; chainerc's Python wrapper returns at most %d"
                             % (self.label, n, _MAX_OUTPUTS))
        return res

    def __repr__(self):
        return "<chainerc FunctionNode %s>" % self.label
