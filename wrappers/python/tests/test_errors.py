"""Failed calls become Python exceptions of the status's class, with the
library's message; a Python exception raised inside forward/backward comes
back to the caller as the same object, type and traceback intact."""
import traceback

import numpy as np
import pytest

import chainerc
from chainerc import Variable, Function, gradient_check
import chainerc.functions as F


class FailingBackward(Function):
    def forward(self, inputs):
        return inputs[0] * 2,

    def backward(self, inputs, grad_outputs):
        raise KeyError("no gradient today")


class FailingForward(Function):
    def forward(self, inputs):
        return _helper_that_raises(inputs[0])


def _helper_that_raises(x):
    raise ZeroDivisionError("forward failed on %d elements" % x.size)


class MyError(Exception):
    pass


def test_exception_in_backward_round_trip():
    x = Variable(np.ones(3, np.float32))
    y = F.sum(FailingBackward()(x))
    with pytest.raises(KeyError) as info:
        y.backward()
    assert info.value.args == ("no gradient today",)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "backward" in frames  # the user's frame is in the traceback
    assert "test_exception_in_backward_round_trip" in frames
    # the graph stays usable: a second backward fails the same way
    with pytest.raises(KeyError):
        y.backward()


def test_exception_in_forward_round_trip():
    x = Variable(np.ones(3, np.float32))
    with pytest.raises(ZeroDivisionError, match="forward failed on 3 elements") as info:
        FailingForward()(x)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "_helper_that_raises" in frames and "forward" in frames


def test_custom_exception_class_and_identity():
    err = MyError("mine")

    class Raiser(Function):
        def forward(self, inputs):
            raise err
    with pytest.raises(MyError) as info:
        Raiser()(Variable(np.ones(1, np.float32)))
    assert info.value is err


def test_exception_in_check_backward_graph_callback():
    def f(x):
        raise MyError("inside the graph")
    with pytest.raises(MyError, match="inside the graph"):
        gradient_check.check_backward(f, np.ones(2), y_grad=np.ones(2))


def test_exception_in_numerical_grad_closure():
    x = np.ones(2)

    def f():
        raise MyError("closure")
    with pytest.raises(MyError):
        gradient_check.numerical_grad(f, (x,), (np.ones(2),))


def test_status_classes():
    a = Variable(np.ones(3, np.float32))
    b = Variable(np.ones(4, np.float32))
    with pytest.raises(chainerc.ShapeError) as info:
        a + b
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, chainerc.ChainerError)
    assert e.status == -4 and e.status_name == "CH_ERR_SHAPE"
    assert "(3,)" in str(e) and "(4,)" in str(e)  # the message names the values
    c = Variable(np.ones(3, np.float64))
    with pytest.raises(chainerc.DTypeError) as info:
        a * c
    assert isinstance(info.value, TypeError)
    assert "float32" in str(info.value) and "float64" in str(info.value)


def test_unsupported_numpy_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="float16"):
        Variable(np.ones(3, np.float16))


def test_volatile_mixing_is_a_graph_error():
    a = Variable(np.ones(3, np.float32), volatile=True)
    b = Variable(np.ones(3, np.float32))
    with pytest.raises(chainerc.GraphError) as info:
        a + b
    assert isinstance(info.value, RuntimeError)
    assert "volatile" in str(info.value)


def test_error_classes_cover_every_status():
    for status in range(-13, 0):
        cls = chainerc.errors.error_class(status)
        assert cls is not chainerc.ChainerError and cls.status == status


def test_cuda_without_gpu_raises_a_clear_error():
    from chainerc import cuda
    if cuda.available:
        pytest.skip("this library has CUDA")
    assert cuda.get_array_module(np.ones(1)) is np
    a = np.ones(2, np.float32)
    assert cuda.to_cpu(a) is a
    with pytest.raises(chainerc.UnsupportedError, match="CUDA") as info:
        cuda.to_gpu(a)
    assert isinstance(info.value, NotImplementedError)
    with pytest.raises(chainerc.UnsupportedError, match="CUDA"):
        cuda.cupy


def test_callbacks_from_threads():
    import threading

    class Twice(Function):
        def forward(self, inputs):
            return inputs[0] * 2,

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0] * 2,
    errors = []

    def work():
        try:
            for _ in range(200):
                x = Variable(np.ones(3, np.float32))
                y = F.sum(Twice()(x) * 3)
                y.backward()
                assert (x.grad == 6).all()
        except BaseException as e:  # pragma: no cover
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
