"""chainerc._speedups, the optional C paths of user Functions and Variables:
used when the module is there (test.sh builds it next to the package; the
tests that need it skip where it could not be built), and the pure-ctypes
paths with CHAINERC_NO_SPEEDUPS=1, with the same results (NumPy as the
reference), the same errors (the user's own exception and traceback) and
the same identities (x.data is the array given, read-only input views, the
gradient shared with the array the engine holds)."""
import glob
import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import chainerc
from chainerc import Function, Variable, _array, _capi

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(HERE), "chainerc")
BUILT = bool(glob.glob(os.path.join(PKG, "_speedups*.so")))
DISABLED = os.environ.get("CHAINERC_NO_SPEEDUPS", "") not in ("", "0")

needs_speedups = pytest.mark.skipif(not BUILT or DISABLED,
                                    reason="chainerc._speedups is not built or is disabled")


class MulAdd(Function):
    def forward(self, inputs):
        x, y, z = inputs
        return x * y + z,

    def backward(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        return y * gw, x * gw, gw


def _run_muladd():
    rng = np.random.RandomState(3)
    m = [rng.uniform(-1, 1, 10).astype(np.float32) for _ in range(3)]
    gw = rng.uniform(-1, 1, 10).astype(np.float32)
    xs = [Variable(a) for a in m]
    w = MulAdd()(*xs)
    w.grad = gw
    w.backward()
    return m, gw, xs, w


def test_speedups_used_when_built():
    if DISABLED:
        assert _capi.speedups is None and _array.speedups is None
        pytest.skip("CHAINERC_NO_SPEEDUPS is set: the ctypes paths run")
    if not BUILT:
        assert _capi.speedups is None
        pytest.skip("chainerc._speedups is not built here")
    from chainerc import _speedups, function, variable
    assert _capi.speedups is _speedups
    assert _array.cpu_view is _speedups.cpu_view
    assert function._sp_apply is _speedups.apply
    assert variable._sp_init is _speedups.init_variable
    # The views the engine's arrays give are made in C (their base is its owner type).
    x = Variable(np.ones(3, np.float32))
    y = x * 2
    assert type(y.data.base) is _speedups.Owner
    assert y.data.base.handle is not None


@needs_speedups
def test_user_function_callbacks_are_the_c_trampolines():
    from chainerc import function, _speedups
    f = MulAdd()
    _run_muladd()
    fh = function._FunctionHandle(f)
    try:
        addrs = _speedups.callbacks()
        assert function._SP_CALLBACKS["forward"] is not function._CALLBACKS["forward"]
        import ctypes
        assert ctypes.cast(function._SP_CALLBACKS["forward"], ctypes.c_void_p).value == addrs[0]
        assert ctypes.cast(function._SP_CALLBACKS["backward"], ctypes.c_void_p).value == addrs[1]
    finally:
        del fh


def test_muladd_values_identity_and_views():
    m, gw, xs, w = _run_muladd()
    np.testing.assert_allclose(w.data, m[0] * m[1] + m[2], rtol=1e-6)
    np.testing.assert_allclose(xs[0].grad, m[1] * gw, rtol=1e-6)
    np.testing.assert_allclose(xs[1].grad, m[0] * gw, rtol=1e-6)
    np.testing.assert_array_equal(xs[2].grad, gw)
    for x, a in zip(xs, m):
        assert x.data is a  # Chainer's identity
    # w.grad is the array given (shared, no copy); the input views read-only.
    assert np.shares_memory(w.grad, gw)
    assert w.creator is not None


def test_backward_reuses_forward_input_views():
    seen = {}

    class Keep(Function):
        def forward(self, inputs):
            seen["fwd"] = inputs
            assert all(not a.flags.writeable for a in inputs)
            return inputs[0] * 2,

        def backward(self, inputs, grad_outputs):
            seen["bwd"] = inputs
            assert all(not a.flags.writeable for a in inputs)
            return grad_outputs[0] * 2,
    a = np.arange(5, dtype=np.float32)
    x = Variable(a)
    y = Keep()(x)
    y.grad = np.ones(5, np.float32)
    y.backward()
    np.testing.assert_array_equal(x.grad, np.full(5, 2, np.float32))
    assert np.shares_memory(seen["bwd"][0], a)
    np.testing.assert_array_equal(seen["bwd"][0], a)
    if _capi.speedups is not None:
        assert seen["bwd"][0] is seen["fwd"][0]
    # x.data replaced by an array of the same shape: backward sees the new one.
    y = Keep()(x)
    b = np.full(5, 7, np.float32)
    x.data = b
    x.cleargrad()
    y.grad = np.ones(5, np.float32)
    y.backward()
    assert np.shares_memory(seen["bwd"][0], b)
    np.testing.assert_array_equal(seen["bwd"][0], b)


def test_callback_exception_keeps_type_and_traceback():
    class Boom(Function):
        def forward(self, inputs):
            return inputs[0] + 1,

        def backward(self, inputs, grad_outputs):
            raise KeyError("from backward")

    class BoomForward(Function):
        def forward(self, inputs):
            raise ZeroDivisionError("from forward")

    x = Variable(np.ones(2, np.float32))
    with pytest.raises(ZeroDivisionError, match="from forward") as e:
        BoomForward()(x)
    assert any('raise ZeroDivisionError("from forward")' in line
               for line in traceback.format_tb(e.value.__traceback__))
    y = Boom()(x)
    y.grad = np.ones(2, np.float32)
    with pytest.raises(KeyError, match="from backward") as e:
        y.backward()
    assert any("raise KeyError" in line for line in traceback.format_tb(e.value.__traceback__))


def test_gradient_conversions_and_needs_input_grad():
    seen = {}

    class Odd(Function):
        def forward(self, inputs):
            return inputs[0] + inputs[1],

        def backward(self, inputs, grad_outputs):
            seen["needs"] = self.needs_input_grad
            # a float64 gradient for a float32 input, a one-element one, a list
            return grad_outputs[0].astype(np.float64), np.float32(3)

    x = Variable(np.ones(3, np.float32))
    t = Variable(np.ones(3, np.float32))
    t.requires_grad = False
    f = Odd()
    y = f(x, t)
    y.grad = np.ones(3, np.float32)
    y.backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, np.ones(3, np.float32))
    assert t.grad is None
    assert seen["needs"] == (True, False)

    class Lists(Function):
        def forward(self, inputs):
            return [inputs[0] * 3]

        def backward(self, inputs, grad_outputs):
            return [list(grad_outputs[0] * 3)]
    x = Variable(np.ones(2, np.float64))
    y = Lists()(x)
    np.testing.assert_array_equal(y.data, [3, 3])
    y.grad = np.ones(2)
    y.backward()
    np.testing.assert_array_equal(x.grad, [3, 3])
    assert x.grad.dtype == np.float64


def test_variables_of_other_arrays_take_the_python_path():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = Variable(a.T)  # not C-contiguous: a contiguous copy
    np.testing.assert_array_equal(v.data, a.T)
    assert v.data is not a.T
    v = Variable(np.arange(3, dtype=">f4"))  # byte-swapped: converted
    np.testing.assert_array_equal(v.data, [0, 1, 2])
    with pytest.raises(chainerc.errors.DTypeError):
        Variable(np.arange(3, dtype=np.int64))
    v = Variable(np.ones(3, np.float32))
    with pytest.raises(Exception):
        v.grad = np.ones(4, np.float32)  # wrong shape: the engine's message
    v.release()
    with pytest.raises(chainerc.errors.ChainerError):
        v.grad = np.ones(3, np.float32)


_SCRIPT = r'''
import os, sys
sys.path.insert(0, %r)
import numpy as np, chainerc
from chainerc import Function, Variable, _capi
class M(Function):
    def forward(self, i):
        x, y, z = i
        return x * y + z,
    def backward(self, i, g):
        x, y, z = i
        return y * g[0], x * g[0], g[0]
m = [np.arange(4, dtype=np.float32) + k for k in range(3)]
xs = [Variable(a) for a in m]
w = M()(*xs)
w.grad = np.full(4, 2, np.float32)
w.backward()
print(_capi.speedups is not None, w.data.tolist(), [x.grad.tolist() for x in xs])
'''


@pytest.mark.parametrize("disabled", ["1", "0"])
def test_fallback_and_speedups_agree(disabled):
    env = dict(os.environ, CHAINERC_NO_SPEEDUPS=disabled)
    out = subprocess.run([sys.executable, "-c", _SCRIPT % os.path.dirname(HERE)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    used, rest = out.stdout.strip().split(" ", 1)
    assert used == ("False" if disabled == "1" or not BUILT else "True")
    m = [np.arange(4) + k for k in range(3)]
    expect = "%s %s" % ((m[0] * m[1] + m[2]).astype(float).tolist(),
                        [(m[1] * 2.0).tolist(), (m[0] * 2.0).tolist(), [2.0] * 4])
    assert rest == expect
