"""User-defined functions in Python (the seed's MulAdd and ExpAdd, and a
parameterized function as chainer.Function's parameter_names describe) run by
the engine through ch_function_new callbacks, checked with check_backward."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, Function, cuda, gradient_check
import chainerc.functions as F


class MulAdd(Function):
    def forward_cpu(self, inputs):
        x, y, z = inputs
        w = x * y + z
        return w,

    def backward_cpu(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        gx = y * gw
        gy = x * gw
        gz = gw
        return gx, gy, gz


def muladd(x, y, z):
    return MulAdd()(x, y, z)


class ExpAdd(Function):
    def forward(self, inputs):
        xp = cuda.get_array_module(*inputs)
        x, y = inputs
        z = xp.exp(x) + xp.exp(y)
        return z,

    def backward(self, inputs, grad_outputs):
        xp = cuda.get_array_module(*inputs)
        x, y = inputs
        gz, = grad_outputs
        gx = gz * xp.exp(x)
        gy = gz * xp.exp(y)
        return gx, gy


def expadd(x, y):
    return ExpAdd()(x, y)


class EltwiseParamProduct(Function):
    """y = W * x for a parameter W of shape x.shape[1:]; backward accumulates gW."""

    parameter_names = ('W',)
    gradient_names = ('gW',)

    def __init__(self, shape, dtype=np.float32):
        self.W = np.random.randn(*shape).astype(dtype)
        self.gW = np.zeros(shape, dtype=dtype)

    def forward(self, inputs):
        x, = inputs
        return (self.W * x).astype(x.dtype),

    def backward(self, inputs, grad_outputs):
        x, = inputs
        gy, = grad_outputs
        self.gW += (gy * x).sum(axis=0)
        return gy * self.W,


def _uniform(*shape):
    return np.random.uniform(-1, 1, shape).astype(np.float32)


def test_muladd_seed_usage():
    x = Variable(_uniform(3, 2))
    y = Variable(_uniform(3, 2))
    z = Variable(_uniform(3, 2))
    w = MulAdd()(x, y, z)
    np.testing.assert_allclose(w.data, x.data * y.data + z.data, rtol=1e-6)
    w = muladd(x, y, z)
    w.grad = np.ones((3, 2), dtype=np.float32)
    w.backward()
    np.testing.assert_allclose(x.grad, y.data)
    np.testing.assert_allclose(y.grad, x.data)
    np.testing.assert_allclose(z.grad, np.ones((3, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_muladd_check_backward(dtype):
    xs = tuple(np.random.uniform(-1, 1, (3, 2)).astype(dtype) for _ in range(3))
    gy = np.random.uniform(-1, 1, (3, 2)).astype(dtype)
    tol = dict(atol=1e-3, rtol=1e-3) if dtype == np.float32 else {}
    gradient_check.check_backward(MulAdd(), xs, gy, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expadd_check_backward(dtype):
    xs = tuple(np.random.uniform(-1, 1, (4, 3)).astype(dtype) for _ in range(2))
    gy = np.random.uniform(-1, 1, (4, 3)).astype(dtype)
    tol = dict(atol=1e-3, rtol=1e-3) if dtype == np.float32 else {}
    gradient_check.check_backward(ExpAdd(), xs, gy, **tol)
    z = expadd(Variable(xs[0]), Variable(xs[1]))
    np.testing.assert_allclose(z.data, np.exp(xs[0]) + np.exp(xs[1]), rtol=1e-6)


def test_wrong_backward_is_caught_by_check_backward():
    class WrongMulAdd(MulAdd):
        def backward_cpu(self, inputs, grad_outputs):
            gx, gy, gz = MulAdd.backward_cpu(self, inputs, grad_outputs)
            return gx * 2, gy, gz
    xs = tuple(_uniform(3, 2) for _ in range(3))
    with pytest.raises(chainerc.NotCloseError) as info:
        gradient_check.check_backward(WrongMulAdd(), xs, atol=1e-3, rtol=1e-3)
    assert isinstance(info.value, AssertionError)
    assert "input 0" in str(info.value) or "inputs[0]" in str(info.value) or "0" in str(info.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parameterized_function(dtype):
    f = EltwiseParamProduct((3,), dtype)
    x = Variable(np.random.randn(4, 3).astype(dtype))
    y = f(x)
    np.testing.assert_allclose(y.data, f.W * x.data, rtol=1e-6)
    y.grad = np.ones((4, 3), dtype=dtype)
    y.backward()
    np.testing.assert_allclose(f.gW, x.data.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(x.grad, np.broadcast_to(f.W, (4, 3)), rtol=1e-6)
    # accumulates like Chainer 1.x
    y.backward()
    np.testing.assert_allclose(f.gW, 2 * x.data.sum(axis=0), rtol=1e-5)
    # the engine sees the very same parameter arrays (no copy)
    from chainerc._capi import lib
    fh = f._chainerc_function()
    assert lib.ch_function_parameter_count(fh) == 1
    tol = dict(atol=1e-3, rtol=1e-3) if dtype == np.float32 else {}
    gradient_check.check_backward(f, np.random.randn(2, 3).astype(dtype), **tol)


def test_parameters_shared_with_engine_without_copy():
    from chainerc._capi import lib, c_void_p, byref, c_char_p
    f = EltwiseParamProduct((3,))
    fh = f._chainerc_function()
    p, g, name = c_void_p(), c_void_p(), c_char_p()
    assert lib.ch_function_parameter(byref(p), byref(g), byref(name), fh, 0) == 0
    try:
        assert name.value == b"W"
        assert lib.ch_array_data(p) == f.W.ctypes.data
        assert lib.ch_array_data(g) == f.gW.ctypes.data
    finally:
        lib.ch_array_release(p)
        lib.ch_array_release(g)


def test_attributes_set_in_forward_reach_backward_of_same_application():
    class Square(Function):
        def forward(self, inputs):
            self.saved = inputs[0] * 1
            return inputs[0] ** 2,

        def backward(self, inputs, grad_outputs):
            return 2 * self.saved * grad_outputs[0],
    sq = Square()
    a = Variable(np.array([1., 2.], np.float32))
    b = Variable(np.array([3., 4.], np.float32))
    ya, yb = sq(a), sq(b)  # one object, two applications
    assert not hasattr(sq, "saved")  # copy on call
    F.sum(ya + yb).backward()
    np.testing.assert_array_equal(a.grad, [2., 4.])
    np.testing.assert_array_equal(b.grad, [6., 8.])


def test_inputs_arrive_without_copy_and_read_only():
    seen = {}

    class Probe(Function):
        def forward(self, inputs):
            seen["ptr"] = inputs[0].ctypes.data
            seen["writeable"] = inputs[0].flags.writeable
            return inputs[0] * 2,

        def backward(self, inputs, grad_outputs):
            seen["gptr"] = grad_outputs[0].ctypes.data
            return grad_outputs[0] * 2,
    data = np.ones((5,), np.float32)
    x = Variable(data)
    y = Probe()(x)
    assert seen["ptr"] == data.ctypes.data
    assert seen["writeable"] is False
    g = np.full((5,), 3, np.float32)
    y.grad = g
    y.backward()
    assert seen["gptr"] == g.ctypes.data
    np.testing.assert_array_equal(x.grad, np.full((5,), 6, np.float32))


def test_returning_grad_output_itself_is_zero_copy():
    class Ident(Function):
        def forward(self, inputs):
            return inputs[0].copy(),

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0],
    x = Variable(np.ones(4, np.float32))
    y = Ident()(x)
    g = np.arange(4, dtype=np.float32)
    y.grad = g
    y.backward()
    assert x.grad.ctypes.data == g.ctypes.data


def test_small_outputs_are_copied_large_ones_shared():
    """Arrays a callback returns: up to chainerc._array.COPY_BELOW bytes the
    engine keeps a copy (the value is the same, later writes to the array do
    not reach it), above that it shares the memory."""
    from chainerc import _array
    kept = {}

    class Twice(Function):
        def forward(self, inputs):
            kept["y"] = inputs[0] * 2
            return kept["y"],

        def backward(self, inputs, grad_outputs):
            kept["gx"] = grad_outputs[0] * 2
            return kept["gx"],
    small = np.arange(4, dtype=np.float32)
    y = Twice()(Variable(small))
    np.testing.assert_array_equal(y.data, small * 2)
    assert not np.shares_memory(y.data, kept["y"])
    kept["y"][:] = -1  # the engine's copy keeps forward's values
    np.testing.assert_array_equal(y.data, small * 2)
    y.grad = np.ones(4, np.float32)
    y.backward()
    np.testing.assert_array_equal(y.creator.inputs[0].grad, np.full(4, 2, np.float32))

    n = _array.COPY_BELOW // 4 + 1  # float32 elements just above the bound
    large = np.ones(n, np.float32)
    x = Variable(large)
    y = Twice()(x)
    assert np.shares_memory(y.data, kept["y"])
    y.grad = np.ones(n, np.float32)
    y.backward()
    assert np.shares_memory(x.grad, kept["gx"])
    np.testing.assert_array_equal(x.grad, np.full(n, 2, np.float32))


def test_forward_sees_each_applications_own_inputs():
    """Forward's input views come from the arrays the input Variables hold;
    a nested application, one given raw arrays, a re-run through
    FunctionNode.forward and the applications of other threads each see
    their own inputs."""
    import threading

    class Scale(Function):
        def __init__(self, k):
            self.k = k

        def forward(self, inputs):
            assert not inputs[0].flags.writeable
            return inputs[0] * self.k,

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0] * self.k,

    class Nested(Function):
        def forward(self, inputs):
            inner = Scale(10)(Variable(inputs[1] + 0))  # an application inside forward
            return inputs[0] + inner.data,

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0], grad_outputs[0] * 10
    a, b = np.full(3, 1, np.float32), np.full(3, 2, np.float32)
    y = Nested()(Variable(a), Variable(b))
    np.testing.assert_array_equal(y.data, np.full(3, 21, np.float32))
    s3 = Scale(3)  # alive: FunctionNode.forward runs it again
    y2 = s3(np.full(3, 5, np.float32))  # a raw array: a Variable made on the way
    np.testing.assert_array_equal(y2.data, np.full(3, 15, np.float32))
    again, = y2.creator.forward((np.full(3, 7, np.float32),))
    np.testing.assert_array_equal(again, np.full(3, 21, np.float32))

    errors = []

    def run(k):
        try:
            f = Scale(k)
            for i in range(200):
                x = np.full(4, i, np.float64)
                out = f(Variable(x))
                np.testing.assert_array_equal(out.data, x * k)
        except BaseException as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(k,)) for k in (2, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_several_outputs_and_none_gradient():
    class Split(Function):
        def forward(self, inputs):
            x, = inputs
            return x * 2, x * 3

        def backward(self, inputs, grad_outputs):
            g2, g3 = grad_outputs
            return 2 * g2 + 3 * g3,

    class NoGrad(Function):
        def forward(self, inputs):
            return inputs[0] + inputs[1],

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0], None
    x = Variable(np.array([1., 2.], np.float32))
    a, b = Split()(x)
    np.testing.assert_array_equal(a.data, [2., 4.])
    np.testing.assert_array_equal(b.data, [3., 6.])
    F.sum(a + b).backward()
    np.testing.assert_array_equal(x.grad, [5., 5.])
    u = Variable(np.array([1.], np.float32))
    v = Variable(np.array([1.], np.float32))
    NoGrad()(u, v).backward()
    assert u.grad is not None and v.grad is None


def test_function_without_backward_is_not_differentiable():
    class FwdOnly(Function):
        def forward(self, inputs):
            return inputs[0] * 2,
    x = Variable(np.array([1.], np.float32))
    y = FwdOnly()(x) + x
    y.backward()
    np.testing.assert_array_equal(x.grad, [1.])


def test_forward_must_return_tuple():
    class NotTuple(Function):
        def forward(self, inputs):
            return inputs[0]
    with pytest.raises(TypeError, match="tuple"):
        NotTuple()(Variable(np.ones(2, np.float32)))


def test_class_without_forward_is_a_type_error():
    class Empty(Function):
        pass
    with pytest.raises(TypeError, match="forward"):
        Empty()(Variable(np.ones(2, np.float32)))


def test_creator_and_unchain_backward():
    x = Variable(np.array([2.], np.float32))
    y = MulAdd()(x, x, x)
    assert y.creator is not None and y.creator.label == "MulAdd"
    assert len(y.creator.inputs) == 3
    z = F.exp(y)
    y.unchain_backward()
    assert y.creator is None
    z.backward()
    assert x.grad is None
    np.testing.assert_allclose(y.grad, np.exp(y.data))


def test_requires_grad_and_needs_input_grad():
    from chainerc import _capi
    if not _capi.has("ch_variable_set_requires_grad"):
        pytest.skip("this library has no requires_grad")
    seen = {}

    class Probe(MulAdd):
        def backward_cpu(self, inputs, grad_outputs):
            seen["needs"] = self.needs_input_grad
            return MulAdd.backward_cpu(self, inputs, grad_outputs)
    x = Variable(_uniform(2, 2))
    y = Variable(_uniform(2, 2))
    z = Variable(_uniform(2, 2))
    assert x.requires_grad
    y.requires_grad = False
    assert not y.requires_grad
    w = Probe()(x, y, z)
    F.sum(w).backward()
    assert seen["needs"] == (True, False, True)
    assert x.grad is not None and y.grad is None and z.grad is not None
