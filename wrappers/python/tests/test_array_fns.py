"""The array functions of issue 42 from Python under Chainer 7's names
(F.get_item and Variable.__getitem__, F.scatter_add, F.stack, F.split_axis,
F.expand_dims, F.squeeze, F.flatten, F.swapaxes, F.transpose, F.flip,
F.repeat, F.tile, F.pad, F.cast, F.select_item): values against NumPy,
gradients against NumPy's adjoints and check_backward, the second derivative
with check_double_backward, and bad arguments."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, gradient_check
import chainerc.functions as F

rng = np.random.default_rng(7)
X = rng.uniform(-2, 2, (3, 4, 5))


def _grad(f, x, gy=None):
    v = Variable(x.copy())
    y = f(v)
    if gy is None:
        gy = np.ones(y.data.shape, y.data.dtype)
    y.grad = gy
    y.backward()
    return y.data, v.grad


KEYS = [1, -1, (slice(None), 2), (Ellipsis, slice(None, None, -2)), (None, 0, slice(1, 3)),
        (slice(3, 0, -1), None, Ellipsis), (np.array([2, 0, 2]),), (slice(None), [1, -1, 0]),
        (0, Ellipsis, np.array([[1, 4], [0, 0]])), ()]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_get_item_values_and_gradient(key):
    gy = rng.standard_normal(X[key].shape)
    y, gx = _grad(lambda v: v[key], X, gy)
    np.testing.assert_array_equal(y, X[key])
    expected = np.zeros_like(X)
    np.add.at(expected, key, gy)
    np.testing.assert_allclose(gx, expected)
    y2 = F.get_item(Variable(X), key)
    np.testing.assert_array_equal(y2.data, X[key])


def test_get_item_double_backward():
    key = (slice(None, None, -1), np.array([1, 1, 3]))
    x = rng.uniform(-1, 1, (3, 4))
    gy = rng.standard_normal(x[key].shape)
    gradient_check.check_double_backward(lambda v: v[key] * v[key], x, gy, x.copy(),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)


def test_get_item_errors():
    x = Variable(X)
    with pytest.raises(Exception, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(Exception, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(Exception, match="index 9"):
        x[:, [0, 9]]
    with pytest.raises(IndexError):
        x[3]
    rows = [r.data for r in Variable(X[:, 0, 0])]  # iteration stops at the end
    np.testing.assert_array_equal(rows, X[:, 0, 0])


def test_scatter_add():
    a = rng.uniform(-1, 1, (4, 3))
    b = rng.uniform(-1, 1, (3, 3))
    idx = np.array([0, 2, 0])
    y = F.scatter_add(Variable(a), idx, Variable(b))
    expected = a.copy()
    np.add.at(expected, idx, b)
    np.testing.assert_allclose(y.data, expected)
    gy = rng.standard_normal(a.shape)
    gradient_check.check_backward(lambda u, v: F.scatter_add(u, idx, v), (a, b), gy,
                                  eps=1e-4, atol=1e-6, rtol=1e-5)
    gradient_check.check_double_backward(lambda u, v: F.scatter_add(u * u, idx, v * v), (a, b),
                                         gy, (a.copy(), b.copy()), eps=1e-4, atol=1e-6, rtol=1e-5)


def test_stack_and_split_axis():
    xs = [rng.uniform(-1, 1, (2, 3)) for _ in range(3)]
    for axis in (0, 1, 2, -1):
        y = F.stack([Variable(x) for x in xs], axis)
        np.testing.assert_array_equal(y.data, np.stack(xs, axis))
    x = rng.uniform(-1, 1, (6, 4))
    for ios in (3, [1, 4], [2, -1]):
        pieces = F.split_axis(Variable(x), ios, 0)
        for p, q in zip(pieces, np.split(x, ios, 0)):
            np.testing.assert_array_equal(p.data, q)
    gradient_check.check_double_backward(
        lambda v: F.stack(F.split_axis(v * v, 2, 1), 0), x, rng.standard_normal((2, 6, 2)),
        x.copy(), eps=1e-4, atol=1e-6, rtol=1e-5)
    with pytest.raises(Exception, match="cannot be split into 4 equal sections"):
        F.split_axis(Variable(x), 4, 0)
    one = F.split_axis(Variable(x), 1, 0, force_tuple=False)
    assert isinstance(one, Variable)


@pytest.mark.parametrize("name,f,ref", [
    ("expand_dims", lambda v: F.expand_dims(v, 1), lambda a: np.expand_dims(a, 1)),
    ("squeeze", lambda v: F.squeeze(F.expand_dims(v, 0)), lambda a: a),
    ("squeeze_axis", lambda v: F.squeeze(F.expand_dims(v, -1), -1), lambda a: a),
    ("flatten", F.flatten, lambda a: a.ravel()),
    ("swapaxes", lambda v: F.swapaxes(v, 0, 2), lambda a: np.swapaxes(a, 0, 2)),
    ("transpose", lambda v: F.transpose(v, (1, 2, 0)), lambda a: np.transpose(a, (1, 2, 0))),
    ("flip", lambda v: F.flip(v, 1), lambda a: np.flip(a, 1)),
    ("repeat", lambda v: F.repeat(v, 2, 1), lambda a: np.repeat(a, 2, 1)),
    ("repeat_list", lambda v: F.repeat(v, (1, 0, 3), 0), lambda a: np.repeat(a, (1, 0, 3), 0)),
    ("repeat_flat", lambda v: F.repeat(v, 2), lambda a: np.repeat(a, 2)),
    ("tile", lambda v: F.tile(v, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2))),
    ("pad", lambda v: F.pad(v, ((1, 0), (0, 2), (1, 1)), constant_values=0.5),
     lambda a: np.pad(a, ((1, 0), (0, 2), (1, 1)), mode="constant", constant_values=0.5)),
    ("pad_int", lambda v: F.pad(v, 1), lambda a: np.pad(a, 1, mode="constant")),
])
def test_shape_functions(name, f, ref):
    y = f(Variable(X))
    np.testing.assert_array_equal(y.data, ref(X))
    gy = rng.standard_normal(y.data.shape)
    gradient_check.check_backward(f, X, gy, eps=1e-4, atol=1e-6, rtol=1e-5)
    gradient_check.check_double_backward(lambda v: f(v * v), X, gy, X.copy(),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)


def test_cast():
    x = Variable(np.array([1.5, -2.25], np.float64))
    y = F.cast(x, np.float32)
    assert y.data.dtype == np.float32
    y.grad = np.array([1.0, 2.0], np.float32)
    y.backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, [1.0, 2.0])
    np.testing.assert_array_equal(F.cast(x, "int32").data, [1, -2])


def test_select_item():
    x = rng.uniform(-1, 1, (3, 4))
    t = np.array([3, 0, 1], np.int32)
    y = F.select_item(Variable(x), Variable(t))
    np.testing.assert_array_equal(y.data, x[np.arange(3), t])
    gradient_check.check_double_backward(lambda v: F.select_item(v * v, Variable(t)), x,
                                         np.array([1.0, -2.0, 0.5]), x.copy(),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)
    with pytest.raises(Exception, match=r"t\[0\] = 4"):
        F.select_item(Variable(x), Variable(np.array([4, 0, 0], np.int32)))


def test_bad_arguments():
    x = Variable(X)
    with pytest.raises(Exception, match="pad width -1"):
        F.pad(x, (1, -1))
    with pytest.raises(NotImplementedError):
        F.pad(x, 1, mode="edge")
    with pytest.raises(Exception, match="axis 3"):
        F.flip(x, 3)
    with pytest.raises(Exception, match="extent 3"):
        F.squeeze(x, 0)
