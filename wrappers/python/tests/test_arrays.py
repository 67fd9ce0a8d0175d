"""Zero-copy sharing between NumPy and the engine, and DLPack round trips
with NumPy and (when importable) PyTorch."""
import gc

import numpy as np
import pytest

import chainerc
from chainerc import Variable
import chainerc.functions as F


def test_variable_shares_numpy_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = Variable(a)
    assert x.data is a
    y = F.exp(x)
    d = y.data
    assert d.dtype == np.float32 and d.shape == (2, 3)
    assert np.shares_memory(d, y.data)
    a[0, 0] = 10.0  # the engine sees writes to the NumPy array
    z = F.identity(x)
    assert z.data[0, 0] == 10.0


def test_identity_output_shares_input_memory():
    a = np.ones((4,), np.float64)
    z = F.identity(Variable(a))
    assert np.shares_memory(z.data, a)


def test_view_keeps_engine_memory_alive():
    y = F.exp(Variable(np.zeros((1000,), np.float32)))
    d = y.data
    del y
    gc.collect()
    np.testing.assert_array_equal(d, np.ones(1000, np.float32))


def test_non_contiguous_input_is_copied_correctly():
    a = np.arange(12, dtype=np.float64).reshape(3, 4).T
    x = Variable(a)
    np.testing.assert_array_equal(x.data, a)


def test_grad_set_shares_memory():
    x = Variable(np.ones((2, 2), np.float32))
    g = np.full((2, 2), 5, np.float32)
    x.grad = g
    assert np.shares_memory(x.grad, g)
    x.grad = None
    assert x.grad is None


def test_zero_d_and_empty():
    s = F.sum(Variable(np.arange(4, dtype=np.float64)))
    assert s.data.shape == () and float(s.data) == 6.0
    e = Variable(np.zeros((0, 3), np.float32))
    assert e.data.shape == (0, 3)


def test_dlpack_numpy_round_trip():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = chainerc.from_dlpack(a)
    assert c.shape == (2, 3) and c.dtype == np.float32
    assert np.shares_memory(np.asarray(c), a)
    b = np.from_dlpack(c)
    assert np.shares_memory(a, b)
    x = Variable(a)
    y = F.mul_scalar(x, 2.0)
    yd = np.from_dlpack(y)  # Variable exports its data
    assert np.shares_memory(yd, y.data)
    np.testing.assert_array_equal(yd, a * 2)
    assert y.__dlpack_device__() == (1, 0)


def test_dlpack_from_numpy_capsule_and_consumption():
    a = np.arange(3, dtype=np.int32)
    cap = a.__dlpack__()
    c = chainerc.from_dlpack(cap)
    assert np.shares_memory(np.asarray(c), a)
    with pytest.raises(ValueError):  # a capsule is consumed once
        chainerc.from_dlpack(cap)


def test_unconsumed_capsule_releases_its_array():
    before = chainerc.live_handles()["arrays"]
    x = Variable(np.ones(3, np.float32))
    cap = x.__dlpack__()
    del x
    gc.collect()
    assert chainerc.live_handles()["arrays"] > before  # the capsule holds the array
    del cap
    gc.collect()
    assert chainerc.live_handles()["arrays"] == before


def test_dlpack_rejects_unsupported_dtype():
    with pytest.raises(TypeError):
        chainerc.from_dlpack(np.ones(3, np.int16).__dlpack__())


def _torch():
    import os
    if os.environ.get("CHAINERC_TESTS_NO_TORCH"):
        pytest.skip("CHAINERC_TESTS_NO_TORCH is set")
    try:
        import torch
        return torch
    except ImportError:
        pytest.skip("torch is not importable")


def test_dlpack_torch_round_trip():
    torch = _torch()
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = Variable(t)  # any DLPack producer, no copy
    assert x.data.ctypes.data == t.data_ptr()
    y = F.exp(x)
    ty = torch.from_dlpack(y)
    assert ty.data_ptr() == y.data.ctypes.data
    assert torch.allclose(ty, torch.exp(t))
    y.grad = torch.ones(2, 3)
    y.backward()
    np.testing.assert_allclose(x.grad, np.exp(t.numpy()), rtol=1e-6)
    tg = torch.from_dlpack(chainerc.asarray(x.grad))
    assert tg.data_ptr() == x.grad.ctypes.data
    c = chainerc.from_dlpack(torch.ones(3, dtype=torch.float64))
    assert c.dtype == np.float64


def test_dlpack_torch_non_contiguous_is_refused():
    torch = _torch()
    with pytest.raises(BufferError, match="contiguous"):
        chainerc.from_dlpack(torch.ones(3, 4).t())


def test_function_computed_with_torch_inside():
    torch = _torch()
    from chainerc import Function, gradient_check

    class TorchSin(Function):
        """forward/backward in PyTorch on the engine's memory (no copies)."""

        def forward(self, inputs):
            x = torch.from_dlpack(chainerc.asarray(inputs[0]))
            return np.from_dlpack(torch.sin(x)),

        def backward(self, inputs, grad_outputs):
            x = torch.from_dlpack(chainerc.asarray(inputs[0]))
            gy = torch.from_dlpack(chainerc.asarray(grad_outputs[0]))
            return np.from_dlpack(gy * torch.cos(x)),
    a = np.random.randn(3, 4)
    y = TorchSin()(Variable(a))
    np.testing.assert_allclose(y.data, np.sin(a), rtol=1e-12)
    gradient_check.check_backward(TorchSin(), a, np.random.randn(3, 4))
