"""The reductions of issue 42 in Python under Chainer 7's names: F.sum with
a tuple axis, F.mean / F.average, F.max, F.min, F.argmax, F.argmin,
F.logsumexp, F.softmax(axis=), F.log_softmax; values against NumPy,
gradients against numerical ones (check_backward, check_double_backward)."""

import numpy as np
import pytest

import chainerc
from chainerc import Variable, gradient_check
import chainerc.functions as F


def _x(shape=(2, 3, 4), seed=0, dtype=np.float64):
    return np.random.RandomState(seed).uniform(-2, 2, size=shape).astype(dtype)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (1,), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_mean_max_min_values(axis, keepdims):
    x = _x()
    for f, ref in ((F.sum, np.sum), (F.mean, np.mean), (F.max, np.amax), (F.min, np.amin)):
        y = f(x, axis=axis, keepdims=keepdims).data
        np.testing.assert_allclose(y, ref(x, axis=axis, keepdims=keepdims), rtol=1e-13)


def test_argmax_argmin_int32():
    x = _x()
    for axis in (None, 0, 1, -1):
        a = F.argmax(x, axis=axis)
        assert a.data.dtype == np.int32
        np.testing.assert_array_equal(a.data, np.argmax(x, axis=axis))
        np.testing.assert_array_equal(F.argmin(x, axis=axis).data, np.argmin(x, axis=axis))
    assert F.argmax(x).creator is None
    with pytest.raises(TypeError):
        F.argmax(x, axis=(0, 1))


def test_average_weights():
    x, w = _x((3, 4)), np.random.RandomState(1).uniform(0.5, 2, size=4)
    y = F.average(x, axis=1, weights=w)
    np.testing.assert_allclose(y.data, np.average(x, axis=1, weights=w), rtol=1e-13)
    w2 = np.random.RandomState(2).uniform(0.5, 2, size=(3, 4))
    np.testing.assert_allclose(F.mean(x, weights=w2).data, np.average(x, weights=w2), rtol=1e-13)


def test_softmax_log_softmax_logsumexp():
    x = _x()
    for axis in (0, 1, 2, -1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        sm = e / e.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(F.softmax(x, axis=axis).data, sm, rtol=1e-12)
        np.testing.assert_allclose(F.log_softmax(x, axis=axis).data, np.log(sm), rtol=1e-12,
                                   atol=1e-14)
    np.testing.assert_allclose(F.logsumexp(x, axis=(0, 2)).data,
                               np.log(np.exp(x).sum(axis=(0, 2))), rtol=1e-12)
    np.testing.assert_allclose(F.softmax(x).data, F.softmax(x, axis=1).data)


@pytest.mark.parametrize("fn", [
    lambda x: F.sum(x, axis=(0, 2), keepdims=True),
    lambda x: F.mean(x, axis=(1, 2)),
    lambda x: F.max(x, axis=1),
    lambda x: F.min(x, axis=(0, -1), keepdims=True),
    lambda x: F.logsumexp(x, axis=2),
    lambda x: F.softmax(x, axis=2),
    lambda x: F.log_softmax(x, axis=0),
])
def test_double_backward(fn):
    x = _x()
    y = fn(x).data
    rng = np.random.RandomState(3)
    gy = rng.uniform(-1, 1, size=y.shape)
    ggx = rng.uniform(-1, 1, size=x.shape)
    gradient_check.check_backward(fn, x, gy, eps=1e-6, atol=1e-7, rtol=1e-6)
    gradient_check.check_double_backward(fn, x, gy, ggx, eps=1e-4, atol=1e-6, rtol=1e-5)


def test_max_gradient_to_every_tie():
    x = Variable(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]))
    y = F.max(x, axis=1)
    y.grad = np.array([1.0, 2.0])
    y.backward()
    np.testing.assert_array_equal(x.grad, [[0, 1, 1], [2, 0, 2]])  # Chainer 7: gy * (x == y)


def test_bad_axes_name_the_function_and_axis():
    x = _x()
    with pytest.raises(chainerc.ChainerError if hasattr(chainerc, "ChainerError")
                       else Exception, match="max: axis 3"):
        F.max(x, axis=3)
    with pytest.raises(Exception, match="repeated"):
        F.sum(x, axis=(1, -2))
    with pytest.raises(Exception, match="log_softmax: axis -4"):
        F.log_softmax(x, axis=-4)


@pytest.mark.parametrize("sa,sb,ta,tb", [
    ((4,), (4, 2), False, False), ((3, 4), (4,), False, False), ((3,), (3,), True, False),
    ((2, 3, 4), (4, 5), False, False), ((2, 1, 3, 4), (5, 4, 2), False, False),
    ((2, 4, 3), (1, 2, 4), True, True), ((3,), (2, 3, 4), False, False)])
def test_matmul_numpy_rules(sa, sb, ta, tb):
    """Chainer 7's F.matmul: NumPy's matmul of op(a), op(b) (op ignored for 1-D)."""
    rng = np.random.RandomState(5)
    a, b = rng.uniform(-1, 1, sa), rng.uniform(-1, 1, sb)
    op = lambda m, t: np.swapaxes(m, -1, -2) if t and m.ndim > 1 else m  # noqa: E731
    np.testing.assert_allclose(F.matmul(a, b, transa=ta, transb=tb).data,
                               np.matmul(op(a, ta), op(b, tb)), rtol=1e-12, atol=1e-12)
    f = lambda x, y: F.matmul(x, y, transa=ta, transb=tb)  # noqa: E731
    gy = rng.uniform(-1, 1, np.matmul(op(a, ta), op(b, tb)).shape)
    gradient_check.check_double_backward(f, (a, b), gy, (rng.uniform(-1, 1, sa),
                                                         rng.uniform(-1, 1, sb)),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)


def test_cumsum():
    x = _x()
    for axis in (None, 0, 1, -1):
        np.testing.assert_allclose(F.cumsum(x, axis=axis).data, np.cumsum(x, axis=axis),
                                   rtol=1e-12, atol=1e-13)
    gy = np.random.RandomState(4).uniform(-1, 1, x.shape)
    gradient_check.check_double_backward(lambda v: F.cumsum(v, axis=1), x, gy, gy[::-1].copy(),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)
