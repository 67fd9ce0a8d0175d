"""F.linear (Chainer 7's, with b=None and n_batch_axes), F.layer_normalization,
F.rms_normalization and F.group_normalization from Python: values and
gradients against NumPy formulas, check_double_backward, and the errors
naming the function."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, gradient_check
import chainerc.functions as F


def _layer(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = x.var(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def test_linear_with_and_without_bias_and_batch_axes():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 3, 4))
    W = rng.uniform(-1, 1, (5, 4))
    b = rng.uniform(-1, 1, (5,))
    y = F.linear(Variable(x), Variable(W), Variable(b), n_batch_axes=2)
    np.testing.assert_allclose(y.data, x @ W.T + b, rtol=1e-12)
    y = F.linear(Variable(x), Variable(rng.uniform(-1, 1, (5, 12))))
    assert y.data.shape == (2, 5)
    Wv = Variable(W)
    gW, = chainerc.grad([F.sum(F.linear(Variable(x), Wv, n_batch_axes=2))], [Wv])
    np.testing.assert_allclose(gW.data, np.ones((2, 3, 5)).reshape(6, 5).T @ x.reshape(6, 4))
    gradient_check.check_double_backward(
        lambda x, W, b: F.linear(x, W, b, n_batch_axes=2) ** 2, (x, W, b), None, None,
        eps=1e-4, atol=1e-6, rtol=1e-5)


def test_layer_normalization():
    rng = np.random.RandomState(1)
    x, g, b = rng.uniform(-1, 2, (2, 3, 6)), rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, 6)
    y = F.layer_normalization(Variable(x), Variable(g), Variable(b))
    np.testing.assert_allclose(y.data, _layer(x, g, b, 1e-5), rtol=1e-12, atol=1e-12)
    gradient_check.check_double_backward(
        lambda x, g, b: F.layer_normalization(x, g, b, eps=1e-3) ** 2, (x, g, b), None, None,
        eps=1e-4, atol=1e-6, rtol=1e-5)


def test_rms_normalization():
    rng = np.random.RandomState(2)
    x, g = rng.uniform(-1, 2, (4, 5)), rng.uniform(0.5, 1.5, 5)
    y = F.rms_normalization(Variable(x), Variable(g), 1e-6)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(y.data, want, rtol=1e-12, atol=1e-12)
    gradient_check.check_double_backward(
        lambda x, g: F.rms_normalization(x, g, 1e-3) ** 2, (x, g), None, None,
        eps=1e-4, atol=1e-6, rtol=1e-5)


def test_group_normalization():
    rng = np.random.RandomState(3)
    x, g, b = rng.uniform(-1, 2, (2, 6, 3)), rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, 6)
    y = F.group_normalization(Variable(x), 3, Variable(g), Variable(b))
    xg = x.reshape(2, 3, -1)
    xh = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5))
    want = xh.reshape(x.shape) * g[:, None] + b[:, None]
    np.testing.assert_allclose(y.data, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(chainerc.InvalidArgumentError, match="group_normalization.*channels 6.*groups 4"):
        F.group_normalization(Variable(x), 4, Variable(g), Variable(b))
    with pytest.raises(chainerc.ShapeError, match="layer_normalization: gamma"):
        F.layer_normalization(Variable(x), Variable(g[:5]), Variable(b))
