"""The seed's tutorial (Chainer 1.0.1 docs, section 1.1 Forward/Backward
Computation) run verbatim except for the import line; the expected values are
the ones the seed prints."""
import numpy as np

from chainerc import Variable, Function, FunctionSet, optimizers, cuda, gradient_check  # noqa: F401
import chainerc.functions as F  # noqa: F401


def test_scalar_forward_backward():
    x_data = np.array([5], dtype=np.float32)
    x = Variable(x_data)
    y = x**2 - 2 * x + 1
    np.testing.assert_array_equal(y.data, np.array([16.], dtype=np.float32))
    assert y.data.dtype == np.float32
    y.backward()
    np.testing.assert_array_equal(x.grad, np.array([8.], dtype=np.float32))


def test_retain_grad():
    x = Variable(np.array([5], dtype=np.float32))
    z = 2*x
    y = x**2 - z + 1
    y.backward(retain_grad=True)
    np.testing.assert_array_equal(z.grad, np.array([-1.], dtype=np.float32))


def test_intermediate_grad_freed_without_retain_grad():
    x = Variable(np.array([5], dtype=np.float32))
    z = 2*x
    y = x**2 - z + 1
    y.backward()
    assert z.grad is None
    np.testing.assert_array_equal(x.grad, np.array([8.], dtype=np.float32))


def test_multi_element_initial_error():
    x = Variable(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32))
    y = x**2 - 2*x + 1
    y.grad = np.ones((2, 3), dtype=np.float32)
    y.backward()
    np.testing.assert_array_equal(x.grad, np.array([[0., 2., 4.], [6., 8., 10.]],
                                                   dtype=np.float32))


def test_multi_element_without_initial_error_is_a_graph_error():
    import chainerc
    x = Variable(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32))
    y = x**2 - 2*x + 1
    try:
        y.backward()
    except chainerc.GraphError as e:
        assert "grad" in str(e) or "initial" in str(e)
    else:
        raise AssertionError("backward without an initial error on 6 elements succeeded")
