"""Issue 42's hand-bound elementwise functions in Python: F.gelu's approximate
dispatch, F.where's conditions (bool / int32 / float arrays, a Variable), and the
option errors (against NumPy's values)."""
import math

import numpy as np
import pytest

import chainerc.functions as F
from chainerc import Variable, gradient_check


def test_gelu_dispatches_on_approximate():
    x = np.linspace(-3, 3, 7)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(F.gelu(Variable(x)).data, 0.5 * x * (1 + erf(x / np.sqrt(2))),
                               rtol=1e-12, atol=1e-12)
    u = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    np.testing.assert_allclose(F.gelu(Variable(x), approximate="tanh").data,
                               0.5 * x * (1 + np.tanh(u)), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(Variable(x), approximate="fast")


@pytest.mark.parametrize("cond", [
    np.array([[True, False, True], [False, True, False]]),
    np.array([[1, 0, 1], [0, 1, 0]], np.int32),
    np.array([[2.0, 0.0, -1.0], [0.0, 0.5, 0.0]]),
    [[True, False, True], [False, True, False]],
])
def test_where_conditions_and_gradients(cond):
    x = Variable(np.arange(6, dtype=np.float64).reshape(2, 3))
    y = Variable(np.array([-1.0, -2.0, -3.0]))
    z = F.where(cond, x, y)
    c = np.asarray(cond) != 0
    np.testing.assert_array_equal(z.data, np.where(c, x.data, y.data))
    z.grad = np.ones((2, 3))
    z.backward()
    np.testing.assert_array_equal(x.grad, c * 1.0)
    np.testing.assert_array_equal(y.grad, (~c).sum(axis=0) * 1.0)


def test_where_takes_a_variable_condition_and_double_backward():
    cond = Variable(np.array([1.0, 0.0, 1.0]))
    rng = np.random.RandomState(0)
    x, y, gz = rng.uniform(-1, 1, (3, 3))
    gradient_check.check_double_backward(lambda a, b: F.where(cond, a, b), (x, y), gz,
                                         (rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)


def test_maximum_minimum_ties_go_to_a():
    a = Variable(np.array([1.0, 2.0, 3.0]))
    b = Variable(np.array([1.0, 3.0, 3.0]))
    for f in (F.maximum, F.minimum):
        a.cleargrad()
        b.cleargrad()
        y = f(a, b)
        y.grad = np.ones(3)
        y.backward()
        ref = np.maximum if f is F.maximum else np.minimum
        np.testing.assert_array_equal(y.data, ref(a.data, b.data))
        mine = a.data >= b.data if f is F.maximum else a.data <= b.data
        np.testing.assert_array_equal(a.grad, mine * 1.0)
        np.testing.assert_array_equal(b.grad, (~mine) * 1.0)


def test_option_errors_name_the_values():
    x = Variable(np.ones(3))
    with pytest.raises(Exception, match="x_min must be less than x_max"):
        F.clip(x, 1.0, -1.0)
    with pytest.raises(Exception, match="beta"):
        F.softplus(x, 0.0)
    with pytest.raises(Exception, match="z must be positive"):
        F.clipped_relu(x, -1.0)


def test_swish_matches_chainer7():
    # Chainer 7.8.1's F.swish(x, beta) at these inputs (y, x.grad, beta.grad for gy).
    x = Variable(np.array([[-2.0, 0.5, 1.5], [1.0, -0.5, 3.0]]))
    beta = Variable(np.array([0.5, 1.0, 2.0]))
    y = F.swish(x, beta)
    y.grad = np.array([[1.0, -1.0, 0.5], [2.0, 0.25, -0.5]])
    y.backward()
    np.testing.assert_allclose(y.data, [[-0.5378828427399902, 0.3112296656009273,
                                         1.4288611902336499],
                                        [0.6224593312018546, -0.1887703343990727,
                                         2.9925821305300957]], rtol=1e-12)
    np.testing.assert_allclose(x.grad, [[0.07232948812851331, -0.7399611873026519,
                                         0.5440520530075847],
                                        [1.4799223746053038, 0.06500970317433705,
                                         -0.5061632162957626]], rtol=1e-12)
    np.testing.assert_allclose(beta.grad, [1.2564551573691163, -0.04406319603779897,
                                           0.039724450386155935], rtol=1e-12)


def test_swish_double_backward_and_shape_error():
    rng = np.random.RandomState(1)
    x = rng.uniform(-2, 2, (2, 3, 2))
    beta = rng.uniform(0.5, 2, (3,))
    gy = rng.uniform(-1, 1, (2, 3, 2))
    gradient_check.check_backward(F.swish, (x, beta), gy, eps=1e-6, atol=1e-7, rtol=1e-6)
    gradient_check.check_double_backward(F.swish, (x, beta), gy,
                                         (rng.uniform(-1, 1, (2, 3, 2)), rng.uniform(-1, 1, 3)),
                                         eps=1e-4, atol=1e-6, rtol=1e-5)
    with pytest.raises(Exception, match="swish"):
        F.swish(Variable(x), Variable(np.ones(2)))
