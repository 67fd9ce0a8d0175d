"""Double backprop from Python: Variable.backward(enable_double_backprop=True),
chainerc.grad, no_backprop_mode, check_double_backward, a user Function with
a backward over Variables (Chainer 7's FunctionNode style), a WGAN-GP-style
gradient penalty trained a few steps, and the Chainer 1.x call signatures
(use_cudnn=, identity(*inputs))."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, Function, gradient_check
import chainerc.functions as F


def test_backward_enable_double_backprop():
    x = Variable(np.array([0.5, -1.0, 2.0]))
    y = F.sum(x ** 3)
    y.backward(enable_double_backprop=True)
    np.testing.assert_allclose(x.grad, 3 * x.data ** 2)
    gx = x.grad_var
    assert gx.creator is not None
    x.cleargrad()
    F.sum(gx).backward()
    np.testing.assert_allclose(x.grad, 6 * x.data)
    x.cleargrad()


def test_grad_leaves_grads_untouched():
    x = Variable(np.array([0.3, -0.7]))
    x.grad = np.array([42.0, 43.0])
    y = F.sum(F.tanh(x) * x)
    gx, = chainerc.grad([y], [x], enable_double_backprop=True)
    t = np.tanh(x.data)
    np.testing.assert_allclose(gx.data, (1 - t ** 2) * x.data + t)
    np.testing.assert_allclose(x.grad, [42.0, 43.0])
    # second derivative: d/dx sum(gx) against central differences
    ggx, = chainerc.grad([F.sum(gx)], [x])

    def g(v):
        t = np.tanh(v)
        return (1 - t ** 2) * v + t
    e = 1e-6
    num = (g(x.data + e) - g(x.data - e)) / (2 * e)
    np.testing.assert_allclose(ggx.data, num, rtol=1e-5)


def test_no_backprop_mode():
    x = Variable(np.ones(3))
    with chainerc.no_backprop_mode():
        y = F.exp(x)
        with chainerc.force_backprop_mode():
            z = F.exp(x)
    assert y.creator is None
    assert z.creator is not None
    assert F.exp(x).creator is not None


@pytest.mark.parametrize("fn", [F.tanh, F.sigmoid, F.exp, F.softmax,
                                lambda x: F.leaky_relu(x, 0.2), lambda x: x * x / (x + 3.0)])
def test_check_double_backward_builtins(fn):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 3))
    gy = rng.uniform(-1, 1, (2, 3))
    ggx = rng.uniform(-1, 1, (2, 3))
    gradient_check.check_double_backward(fn, x, gy, ggx, eps=1e-4, atol=1e-6, rtol=1e-5)


class MulAdd(Function):
    def forward_cpu(self, inputs):
        x, y, z = inputs
        return x * y + z,

    def backward_cpu(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        return y * gw, x * gw, gw

    def backward_graph(self, inputs, outputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        return gw * y, gw * x, gw


class MulAddArraysOnly(MulAdd):
    backward_graph = None


def test_user_function_twice_differentiable():
    rng = np.random.RandomState(1)
    xs = tuple(rng.uniform(-1, 1, (2, 2)) for _ in range(3))

    def f(x, y, z):
        w = MulAdd()(x, y, z)
        return w * w
    gradient_check.check_double_backward(f, xs, None, None, eps=1e-4, atol=1e-6, rtol=1e-5)


def test_double_backprop_without_graph_backward_is_an_error():
    x, y, z = (Variable(np.array([1.0, 2.0])) for _ in range(3))
    s = F.sum(MulAddArraysOnly()(x, y, z))
    with pytest.raises(chainerc.GraphError, match="MulAddArraysOnly"):
        s.backward(enable_double_backprop=True)
    s.backward()
    np.testing.assert_allclose(x.grad, y.data)


def critic_penalty(W1, x, w2):
    xv = Variable(x)
    d = F.sum(F.matmul(F.tanh(F.matmul(xv, W1)), Variable(w2)))
    g, = chainerc.grad([d], [xv], enable_double_backprop=True)
    norm = F.sum(g * g, axis=1) ** 0.5
    return F.sum((norm - 1.0) * (norm - 1.0)) / float(x.shape[0])


def test_gradient_penalty_trains():
    rng = np.random.RandomState(2)
    x = rng.uniform(-1, 1, (4, 2))
    w2 = rng.uniform(-1, 1, (3, 1))
    w = rng.uniform(-1, 1, (2, 3))
    W1 = Variable(w.copy())
    p = critic_penalty(W1, x, w2)
    p.backward()
    e = 1e-6
    num = np.zeros_like(w)
    for i in np.ndindex(*w.shape):
        wp, wm = w.copy(), w.copy()
        wp[i] += e
        wm[i] -= e
        num[i] = (critic_penalty(Variable(wp), x, w2).data - critic_penalty(Variable(wm), x, w2).data) / (2 * e)
    np.testing.assert_allclose(W1.grad, num, rtol=1e-5, atol=1e-8)
    start = float(p.data)
    for _ in range(30):
        W1 = Variable(w)
        p = critic_penalty(W1, x, w2)
        p.backward()
        w = w - 0.2 * W1.grad
    assert float(critic_penalty(Variable(w), x, w2).data) < 0.5 * start


def test_chainer1_signatures():
    x = Variable(np.array([[-1.0, 2.0]], dtype=np.float32))
    np.testing.assert_allclose(F.relu(x, use_cudnn=False).data, [[0, 2]])
    F.sigmoid(x, use_cudnn=True)
    F.tanh(x, use_cudnn=False)
    F.softmax(x, use_cudnn=False)
    t = Variable(np.array([1], dtype=np.int32))
    F.softmax_cross_entropy(x, t, use_cudnn=False)
    a, b = F.identity(x, x)
    np.testing.assert_allclose(a.data, x.data)
    np.testing.assert_allclose(b.data, x.data)
    assert F.identity(x).data.shape == (1, 2)
