"""Parameterized built-in functions (Linear, Convolution2D, EmbedID, PReLU,
Parameter, BatchNormalization, BinaryHierarchicalSoftmax) over the
ch_functions_*_new constructors.

Their parameters live in the engine; `f.W`, `f.gW`, `f.parameters`,
`f.gradients` are NumPy views of those very arrays (no copy): writing them
(`f.gW.fill(0)`, `f.W[...] = w`) changes what the engine and optimizers use.
Assigning `f.W = array` copies the values into the existing array."""

import ctypes

import numpy as np

from .. import _capi, _array
from .._capi import lib, c_void_p, c_size_t, byref, check, raise_status, PP, S
from ..variable import Variable, _new_var

_MAX_OUTPUTS = 16
__all__ = ["ParameterizedFunction"]


def _dtype_code(dtype):
    return _array.ch_dtype_of(dtype)


class _ArrayArg(object):
    __slots__ = ("h",)

    def __init__(self, a, dtype=None):
        if a is None:
            self.h = None
        else:
            a = np.asarray(a if not isinstance(a, Variable) else a.data)
            if dtype is not None and a.dtype != np.dtype(dtype):
                a = a.astype(dtype)
            self.h = _array.to_handle(a)

    def __del__(self, _release=lib.ch_array_release):
        if self.h:
            _release(self.h)
            self.h = None


class ParameterizedFunction(object):
    """A built-in function object with parameters (a ch_function handle)."""

    _handle = None

    def _init_handle(self, ctor, *args):
        out = c_void_p()
        st = ctor(out, *args)
        if st:
            raise_status(st)
        object.__setattr__(self, "_handle", out.value)
        self._refresh()

    def _refresh(self):
        """Read the parameter and gradient arrays from the engine again (after
        they moved between devices): NumPy views on the CPU, chainerc.Array
        objects on a GPU."""
        names, params, grads = [], [], []
        h = self._handle
        for i in range(lib.ch_function_parameter_count(h)):
            p, g, name = c_void_p(), c_void_p(), ctypes.c_char_p()
            check(lib.ch_function_parameter(p, g, name, h, i))
            names.append(name.value.decode())
            params.append(_array.handle_to_numpy(p.value))
            grads.append(_array.handle_to_numpy(g.value))
        object.__setattr__(self, "parameter_names", tuple(names))
        object.__setattr__(self, "gradient_names", tuple("g" + n for n in names))
        object.__setattr__(self, "_params", dict(zip(names, params)))
        object.__setattr__(self, "_grads", dict(zip(("g" + n for n in names), grads)))

    def __del__(self, _release=lib.ch_function_release):
        h = self._handle
        if h:
            object.__setattr__(self, "_handle", None)
            _release(h)

    def release(self):
        """Drop this object's reference to the engine's function object now;
        graphs already built keep theirs."""
        h = self._handle
        object.__setattr__(self, "_handle", None)
        if h:
            check(lib.ch_function_release(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def _chainerc_function(self):
        return self._handle

    def __getattr__(self, name):
        d = self.__dict__
        if "_params" in d:
            if name in d["_params"]:
                return d["_params"][name]
            if name in d["_grads"]:
                return d["_grads"][name]
        raise AttributeError("%s has no attribute %r" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        d = self.__dict__
        target = d.get("_params", {}).get(name)
        if target is None:
            target = d.get("_grads", {}).get(name)
        if target is not None:
            if isinstance(target, _array.Array):  # on a GPU: copy into it there
                src = _array.to_handle(value if isinstance(value, _array.Array)
                                       else np.ascontiguousarray(value, dtype=target.dtype))
                try:
                    check(lib.ch_array_copy_from(target.handle, src))
                finally:
                    lib.ch_array_release(src)
                return
            np.copyto(target, np.asarray(value))  # the engine keeps its arrays
            return
        object.__setattr__(self, name, value)

    @property
    def parameters(self):
        return tuple(self._params[n] for n in self.parameter_names)

    @property
    def gradients(self):
        return tuple(self._grads[n] for n in self.gradient_names)

    @property
    def label(self):
        return lib.ch_function_name(self._handle).decode()

    def __call__(self, *inputs):
        vol = next((x.volatile for x in inputs if isinstance(x, Variable)), False)
        ins = [x if isinstance(x, Variable) else Variable(x, vol) for x in inputs]
        n = len(ins)
        hs = (c_void_p * max(n, 1))(*[x._h for x in ins])
        outs = (c_void_p * _MAX_OUTPUTS)()
        n_out = c_size_t()
        st = lib.ch_function_apply(self._handle, hs, n, outs, _MAX_OUTPUTS, byref(n_out))
        if st:
            raise_status(st)
        k = min(n_out.value, _MAX_OUTPUTS)
        ys = tuple(_new_var(outs[i]) for i in range(k))
        return ys[0] if k == 1 else ys

    def to_cpu(self):
        """Move the parameters and gradients to the CPU (ch_function_set_to_cpu
        on a set holding this function); f.W etc. then are NumPy views."""
        from ..function_set import FunctionSet
        s = FunctionSet(f=self)
        try:
            s.to_cpu()
        finally:
            s.release()
        return self

    def to_gpu(self, device=None):
        """Move the parameters and gradients to `device` (None: the current
        device); f.W etc. then are chainerc.Array GPU arrays."""
        from ..function_set import FunctionSet
        s = FunctionSet(f=self)
        try:
            s.to_gpu(device)
        finally:
            s.release()
        return self

    def __repr__(self):
        return "<chainerc.functions.%s %s>" % (type(self).__name__, ", ".join(
            "%s%s" % (n, self._params[n].shape) for n in self.parameter_names))


def _ctor(name, argtypes):
    return _capi._decl(name, S, [PP] + argtypes, optional=True)


_D, _I32, _I64, _P = _capi.c_double, _capi.c_int32, _capi.c_int64, c_void_p
_linear_new = _ctor("ch_functions_linear_new", [_I64, _I64, _I32, _D, _D, _I32, _P, _P])
_conv_new = _ctor("ch_functions_convolution_2d_new",
                  [_I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I32, _D, _D, _I32, _P, _P])
_embed_new = _ctor("ch_functions_embed_id_new", [_I64, _I64, _I32, _P])
_prelu_new = _ctor("ch_functions_prelu_new", [ctypes.POINTER(_I64), _I32, _I32, _D])
_param_new = _ctor("ch_functions_parameter_new", [_P])
_inception_new = _ctor("ch_functions_inception_new", [_I64] * 7 + [_I32])
_bn_new = _ctor("ch_functions_batch_normalization_new",
                [ctypes.POINTER(_I64), _I32, _D, _D, _I32])
_bn_apply = _capi._decl("ch_functions_batch_normalization_apply", S,
                        [PP, _P, _P, _I32, _I32], optional=True)
_bn_state = _capi._decl("ch_functions_batch_normalization_state", S, [PP, PP, _P], optional=True)
_bn_finetune = _capi._decl("ch_functions_batch_normalization_start_finetuning", S, [_P],
                           optional=True)
_bhs_new = _ctor("ch_functions_binary_hierarchical_softmax_new",
                 [_I64, ctypes.POINTER(_I32), _I64, _I32, _P])
_huffman = _capi._decl("ch_functions_binary_hierarchical_softmax_create_huffman_tree", S,
                       [ctypes.POINTER(_I32), _I64, ctypes.POINTER(_D), _I64], optional=True)


def _pair(v):
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    return int(v), int(v)


if _linear_new:
    class Linear(ParameterizedFunction):
        """Linear(in_size, out_size, wscale=1, bias=0, nobias=False,
        initialW=None, initial_bias=None): y = x W^T + b (Chainer 1.0.1)."""

        def __init__(self, in_size, out_size, wscale=1, bias=0, nobias=False, initialW=None,
                     initial_bias=None, dtype=np.float32):
            w, b = _ArrayArg(initialW, dtype), _ArrayArg(initial_bias, dtype)
            self._init_handle(_linear_new, int(in_size), int(out_size), _dtype_code(dtype),
                              float(wscale), float(bias), 1 if nobias else 0, w.h, b.h)
    __all__.append("Linear")

if _conv_new:
    class Convolution2D(ParameterizedFunction):
        """Convolution2D(in_channels, out_channels, ksize, stride=1, pad=0,
        wscale=1, bias=0, nobias=False, use_cudnn=True, initialW=None,
        initial_bias=None) (Chainer 1.0.1; NCHW)."""

        def __init__(self, in_channels, out_channels, ksize, stride=1, pad=0, wscale=1, bias=0,
                     nobias=False, use_cudnn=True, initialW=None, initial_bias=None,
                     dtype=np.float32):
            kh, kw = _pair(ksize)
            sy, sx = _pair(stride)
            ph, pw = _pair(pad)
            w, b = _ArrayArg(initialW, dtype), _ArrayArg(initial_bias, dtype)
            self._init_handle(_conv_new, int(in_channels), int(out_channels), kh, kw, sy, sx,
                              ph, pw, _dtype_code(dtype), float(wscale), float(bias),
                              1 if nobias else 0, w.h, b.h)
    __all__.append("Convolution2D")

if _embed_new:
    class EmbedID(ParameterizedFunction):
        """EmbedID(in_size, out_size): W[ids] for int32 ids (Chainer 1.0.1)."""

        def __init__(self, in_size, out_size, initialW=None, dtype=np.float32):
            w = _ArrayArg(initialW, dtype)
            self._init_handle(_embed_new, int(in_size), int(out_size), _dtype_code(dtype), w.h)
    __all__.append("EmbedID")

if _prelu_new:
    class PReLU(ParameterizedFunction):
        """PReLU(shape=(), init=0.25): x for x >= 0, W x for x < 0."""

        def __init__(self, shape=(), init=0.25, dtype=np.float32):
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            self._init_handle(_prelu_new, (_I64 * max(len(shape), 1))(*shape), len(shape),
                              _dtype_code(dtype), float(init))
    __all__.append("PReLU")

if _inception_new:
    class Inception(ParameterizedFunction):
        """Inception(in_channels, out1, proj3, out3, proj5, out5, proj_pool)
        (Chainer 1.0.1, GoogLeNet's module); parameters "conv1/W", "conv1/b",
        ... "projp/b" (attributes: f.parameters / f.gradients)."""

        def __init__(self, in_channels, out1, proj3, out3, proj5, out5, proj_pool,
                     dtype=np.float32):
            self._init_handle(_inception_new, int(in_channels), int(out1), int(proj3), int(out3),
                              int(proj5), int(out5), int(proj_pool), _dtype_code(dtype))
    __all__.append("Inception")

if _param_new:
    class Parameter(ParameterizedFunction):
        """Parameter(array): a function of no inputs returning its parameter W."""

        def __init__(self, array):
            a = _ArrayArg(array)
            self._init_handle(_param_new, a.h)
    __all__.append("Parameter")

if _bn_new:
    class BatchNormalization(ParameterizedFunction):
        """BatchNormalization(size, decay=0.9, eps=1e-5) (Chainer 1.x):
        call as bn(x, test=False, finetune=False); test=None follows
        chainerc.set_train."""

        def __init__(self, size, decay=0.9, eps=1e-5, dtype=np.float32):
            size = (size,) if isinstance(size, int) else tuple(size)
            self._init_handle(_bn_new, (_I64 * len(size))(*size), len(size), float(decay),
                              float(eps), _dtype_code(dtype))

        def __call__(self, x, test=False, finetune=False):
            x = x if isinstance(x, Variable) else Variable(x)
            train = -1 if test is None else (0 if test else 1)
            out = c_void_p()
            st = _bn_apply(out, self._handle, x._h, train, 1 if finetune else 0)
            if st:
                raise_status(st)
            return _new_var(out.value)

        def _state(self, which):
            a, b = c_void_p(), c_void_p()
            check(_bn_state(a, b, self._handle))
            keep, drop = (a, b) if which == 0 else (b, a)
            lib.ch_array_release(drop.value)
            return _array.handle_to_numpy(keep.value)

        @property
        def avg_mean(self):
            return self._state(0)

        @property
        def avg_var(self):
            return self._state(1)

        def start_finetuning(self):
            check(_bn_finetune(self._handle))
    __all__.append("BatchNormalization")

if _bhs_new:
    def _flatten_tree(tree):
        """Nested pairs ((0, 1), 2) -> the C encoding, internal nodes in pre-order."""
        codes = []

        def visit(node):
            if isinstance(node, (tuple, list)):
                if len(node) != 2:
                    raise ValueError("BinaryHierarchicalSoftmax: every internal node of the tree "
                                     "must be a pair; got %r" % (node,))
                k = len(codes) // 2
                codes.extend([0, 0])
                codes[2 * k] = visit(node[0])
                codes[2 * k + 1] = visit(node[1])
                return k
            return -int(node) - 1
        if not isinstance(tree, (tuple, list)):
            raise ValueError("BinaryHierarchicalSoftmax: the tree needs at least one pair")
        visit(tree)
        return codes

    def _nest_tree(codes):
        def node(c):
            if c < 0:
                return -c - 1
            return (node(codes[2 * c]), node(codes[2 * c + 1]))
        return node(0)

    class BinaryHierarchicalSoftmax(ParameterizedFunction):
        """BinaryHierarchicalSoftmax(in_size, tree) (Chainer 1.0.1): tree is
        nested pairs of word ids, e.g. ((0, 1), 2); call as f(x, t)."""

        def __init__(self, in_size, tree, initialW=None, dtype=np.float32):
            codes = _flatten_tree(tree)
            n_internal = len(codes) // 2
            w = _ArrayArg(initialW, dtype)
            self._init_handle(_bhs_new, int(in_size), (_I32 * len(codes))(*codes), n_internal,
                              _dtype_code(dtype), w.h)

        @staticmethod
        def create_huffman_tree(word_counts):
            """Huffman tree (nested pairs) of a dict {word id: count}, ids 0..n-1."""
            n = len(word_counts)
            counts = (_D * n)(*[float(word_counts[w]) for w in range(n)])
            cap = 2 * (n - 1) if n > 1 else 0
            tree = (_I32 * max(cap, 1))()
            check(_huffman(tree, cap, counts, n))
            return _nest_tree(list(tree[:cap]))
    __all__.append("BinaryHierarchicalSoftmax")
