"""Built-in functions through chainerc.functions: forward values against
NumPy and backward against numerical gradients, float32 and float64."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, gradient_check
import chainerc.functions as F

DTYPES = [np.float32, np.float64]


def _tol(dtype):
    return dict(atol=1e-3, rtol=1e-3) if dtype == np.float32 else dict(atol=1e-5, rtol=1e-4)


UNARY = [
    ("exp", F.exp, np.exp, lambda s: np.random.uniform(-1, 1, s)),
    ("log", F.log, np.log, lambda s: np.random.uniform(0.5, 2, s)),
    ("neg", F.neg, np.negative, lambda s: np.random.randn(*s)),
    ("identity", F.identity, lambda a: a, lambda s: np.random.randn(*s)),
    ("x*2", lambda x: x * 2, lambda a: a * 2, lambda s: np.random.randn(*s)),
    ("2-x", lambda x: 2 - x, lambda a: 2 - a, lambda s: np.random.randn(*s)),
    ("x-2", lambda x: x - 2, lambda a: a - 2, lambda s: np.random.randn(*s)),
    ("x+3", lambda x: x + 3, lambda a: a + 3, lambda s: np.random.randn(*s)),
    ("3+x", lambda x: 3 + x, lambda a: 3 + a, lambda s: np.random.randn(*s)),
    ("x/4", lambda x: x / 4, lambda a: a / 4, lambda s: np.random.randn(*s)),
    ("4/x", lambda x: 4 / x, lambda a: 4 / a, lambda s: np.random.uniform(0.5, 2, s)),
    ("x**3", lambda x: x ** 3, lambda a: a ** 3, lambda s: np.random.randn(*s)),
    ("2**x", lambda x: 2 ** x, lambda a: 2 ** a, lambda s: np.random.randn(*s)),
    ("-x", lambda x: -x, lambda a: -a, lambda s: np.random.randn(*s)),
    ("sum", F.sum, np.sum, lambda s: np.random.randn(*s)),
    ("sum0", lambda x: F.sum(x, axis=0), lambda a: a.sum(axis=0), lambda s: np.random.randn(*s)),
    ("sum-1k", lambda x: F.sum(x, axis=-1, keepdims=True),
     lambda a: a.sum(axis=-1, keepdims=True), lambda s: np.random.randn(*s)),
    ("reshape", lambda x: F.reshape(x, (-1,)), lambda a: a.reshape(-1),
     lambda s: np.random.randn(*s)),
    ("broadcast_to", lambda x: F.broadcast_to(x, (2,) + x.shape),
     lambda a: np.broadcast_to(a, (2,) + a.shape), lambda s: np.random.randn(*s)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,f,ref,gen", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, f, ref, gen, dtype):
    a = gen((3, 4)).astype(dtype)
    y = f(Variable(a))
    assert y.data.dtype == dtype
    np.testing.assert_allclose(y.data, ref(a), **_tol(dtype))
    gy = np.asarray(np.random.randn(*y.data.shape)).astype(dtype)
    gradient_check.check_backward(f, a, gy, **_tol(dtype))


BINARY = [
    ("add", F.add, np.add), ("sub", F.sub, np.subtract), ("mul", F.mul, np.multiply),
    ("div", F.div, np.divide), ("+", lambda a, b: a + b, np.add),
    ("*", lambda a, b: a * b, np.multiply), ("/", lambda a, b: a / b, np.divide),
    ("-", lambda a, b: a - b, np.subtract), ("**", lambda a, b: a ** b, np.power),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,f,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcasting(name, f, ref, dtype):
    a = np.random.uniform(0.5, 2, (3, 4)).astype(dtype)
    b = np.random.uniform(0.5, 2, (4,)).astype(dtype)
    y = f(Variable(a), Variable(b))
    np.testing.assert_allclose(y.data, ref(a, b), **_tol(dtype))
    gradient_check.check_backward(f, (a, b), np.random.randn(3, 4).astype(dtype), **_tol(dtype))


def test_numpy_operands_become_constants():
    x = Variable(np.array([1., 2.], np.float32))
    y = x * np.array([3., 4.], np.float32) + np.float32(1)
    np.testing.assert_array_equal(y.data, [4., 9.])
    z = np.array([1., 1.], np.float32) - x
    np.testing.assert_array_equal(z.data, [0., -1.])
    F.sum(y).backward()
    np.testing.assert_array_equal(x.grad, [3., 4.])


def test_volatile_records_no_history():
    x = Variable(np.array([1., 2.], np.float32), volatile=True)
    y = F.exp(x * 2)
    assert y.volatile and y.creator is None
    np.testing.assert_allclose(y.data, np.exp([2., 4.]), rtol=1e-6)


def test_len_is_number_of_elements():
    assert len(Variable(np.zeros((2, 3), np.float32))) == 6


def test_numerical_grad_seed_example():
    x = np.random.randn(4, 3).astype(np.float32)
    gy = np.ones((4, 3), dtype=np.float32)
    f = lambda: (x * x,)  # noqa: E731
    gx = gradient_check.numerical_grad(f, (x,), (gy,))
    gradient_check.assert_allclose(gx[0], 2 * x, atol=1e-2, rtol=1e-2)


def test_numerical_grad_checks_engine_backward():
    x = Variable(np.random.randn(3, 2).astype(np.float64))
    y = F.exp(x) * x
    y.grad = np.random.randn(3, 2)
    y.backward()
    f = lambda: ((F.exp(x) * x).data,)  # noqa: E731
    gx, = gradient_check.numerical_grad(f, (x.data,), (y.grad,))
    gradient_check.assert_allclose(gx, x.grad)


def test_assert_allclose_failure_names_the_element():
    with pytest.raises(AssertionError) as info:
        gradient_check.assert_allclose(np.array([1., 2., 3.]), np.array([1., 2., 4.]))
    assert "index" in str(info.value) and "4" in str(info.value)
    assert isinstance(info.value, chainerc.NotCloseError)
