"""The seed's `cuda` module (section 2.2.1) and GPU user functions (section
1.4.2: MulAdd with forward_gpu/backward_gpu written with cuda.elementwise).

These run where libchainerc has a CUDA device: a real GPU, or the emulated
devices of a -Dcuda-emulation=true build (scripts/test.sh runs this file
against build-emulated/src/libchainerc.so). References: NumPy on the same data;
check_backward's numerical gradients."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, Function, cuda, gradient_check
import chainerc.functions as F

pytestmark = pytest.mark.skipif(not cuda.available, reason="no CUDA device: %s" % cuda._why)


@pytest.fixture(autouse=True)
def _drop_cached_kernels():
    """The kernels cached by cuda.elementwise/reduce are handles too: drop them
    before conftest's leak check."""
    yield
    cuda.clear_memo()


def _uniform(*shape, dtype=np.float32):
    return np.random.RandomState(sum(shape) + 7).uniform(-1, 1, shape).astype(dtype)


class MulAdd(Function):
    """The seed's MulAdd of section 1.4.2 (with its backward kernel's typo
    fixed: gx = y * gw, gy = x * gw)."""

    gpu_calls = []

    def forward_cpu(self, inputs):
        x, y, z = inputs
        return x * y + z,

    def backward_cpu(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        return y * gw, x * gw, gw

    def forward_gpu(self, inputs):
        MulAdd.gpu_calls.append(("forward", cuda.get_device().id))
        x, y, z = inputs
        w = cuda.empty_like(x)
        cuda.elementwise(
            'float* w, const float* x, const float* y, const float* z',
            'w[i] = x[i] * y[i] + z[i]',
            'muladd_fwd')(w, x, y, z)
        return w,

    def backward_gpu(self, inputs, grad_outputs):
        MulAdd.gpu_calls.append(("backward", cuda.get_device().id))
        x, y, z = inputs
        gw = grad_outputs[0]
        gx = cuda.empty_like(x)
        gy = cuda.empty_like(y)
        cuda.elementwise(
            '''
            float* gx, float* gy,
            const float* x, const float* y, const float* gw
            ''', '''
            gx[i] = y[i] * gw[i];
            gy[i] = x[i] * gw[i];
            ''', 'muladd_bwd')(gx, gy, x, y, gw)
        gz = gw  # no copy
        return gx, gy, gz


class MulAdd64(MulAdd):
    def forward_gpu(self, inputs):
        x, y, z = inputs
        w = cuda.empty_like(x)
        cuda.elementwise('double* w, const double* x, const double* y, const double* z',
                         'w[i] = x[i] * y[i] + z[i]', 'muladd_fwd64')(w, x, y, z)
        return w,

    def backward_gpu(self, inputs, grad_outputs):
        x, y, z = inputs
        gw = grad_outputs[0]
        gx, gy = cuda.empty_like(x), cuda.empty_like(y)
        cuda.elementwise('double* gx, double* gy, const double* x, const double* y, '
                         'const double* gw', 'gx[i] = y[i] * gw[i]; gy[i] = x[i] * gw[i];',
                         'muladd_bwd64')(gx, gy, x, y, gw)
        return gx, gy, gw


@pytest.mark.parametrize("shape", [(1,), (3, 31), (1025,)])
def test_muladd_forward_gpu_backward_gpu_agree_with_cpu(shape):
    xs = [_uniform(*shape) + i for i in range(3)]
    gw = _uniform(*shape) * 2
    MulAdd.gpu_calls = []
    vs = [Variable(cuda.to_gpu(a)) for a in xs]
    w = MulAdd()(*vs)
    assert isinstance(w.data, cuda.GPUArray) and w.data.device == ("cuda", 0)
    w.grad = cuda.to_gpu(gw)
    w.backward()
    assert MulAdd.gpu_calls == [("forward", 0), ("backward", 0)]
    x, y, z = xs
    np.testing.assert_allclose(cuda.to_cpu(w.data), x * y + z, rtol=1e-6)
    np.testing.assert_allclose(cuda.to_cpu(vs[0].grad), y * gw, rtol=1e-6)
    np.testing.assert_allclose(cuda.to_cpu(vs[1].grad), x * gw, rtol=1e-6)
    np.testing.assert_array_equal(cuda.to_cpu(vs[2].grad), gw)
    # the same function object on CPU inputs takes the CPU path
    MulAdd.gpu_calls = []
    wc = MulAdd()(*[Variable(a) for a in xs])
    assert MulAdd.gpu_calls == [] and isinstance(wc.data, np.ndarray)
    np.testing.assert_array_equal(wc.data, cuda.to_cpu(w.data))


def test_muladd_gpu_check_backward_float32_and_float64():
    xs = tuple(cuda.to_gpu(_uniform(4, 5) + i) for i in range(3))
    gradient_check.check_backward(MulAdd(), xs, cuda.to_gpu(_uniform(4, 5)), eps=1e-2,
                                  atol=1e-3, rtol=1e-3)
    xs64 = tuple(cuda.to_gpu(_uniform(3, 7, dtype=np.float64) + i) for i in range(3))
    gradient_check.check_backward(MulAdd64(), xs64, None, eps=1e-6, atol=1e-7, rtol=1e-6)


def test_numerical_grad_of_gpu_arrays():
    x0 = np.array([0.5, 1.0, -2.0, 0.25])
    x = cuda.to_gpu(x0)
    gy = cuda.to_gpu(np.array([1.0, 2.0, -1.0, 0.5]))
    gx, = gradient_check.numerical_grad(lambda: (F.exp(Variable(x)).data,), (x,), (gy,),
                                        eps=1e-6)
    assert isinstance(gx, cuda.GPUArray) and gx.device == ("cuda", 0)
    np.testing.assert_allclose(gx.get(), np.exp(x0) * gy.get(), rtol=1e-8)
    np.testing.assert_array_equal(x.get(), x0)  # restored after the perturbations


class WrongBackward(MulAdd):
    def backward_gpu(self, inputs, grad_outputs):
        x, y, z = inputs
        gw = grad_outputs[0]
        gx, gy = cuda.empty_like(x), cuda.empty_like(y)
        cuda.elementwise('float* gx, float* gy, const float* x, const float* y, const float* gw',
                         'gx[i] = x[i] * gw[i]; gy[i] = y[i] * gw[i];',  # swapped: wrong
                         'muladd_bwd_wrong')(gx, gy, x, y, gw)
        return gx, gy, gw


def test_check_backward_on_gpu_catches_a_wrong_backward_kernel():
    xs = tuple(cuda.to_gpu(_uniform(4, 5) + i) for i in range(3))
    with pytest.raises(chainerc.NotCloseError):
        gradient_check.check_backward(WrongBackward(), xs, None, eps=1e-2, atol=1e-3,
                                      rtol=1e-3)


class CpuOnly(Function):
    def forward_cpu(self, inputs):
        return inputs[0] * 2,


def test_function_without_forward_gpu_refuses_gpu_inputs():
    with pytest.raises(chainerc.UnsupportedError, match="no forward callback for GPU"):
        CpuOnly()(Variable(cuda.to_gpu(_uniform(3))))


class Twice(Function):
    """forward/backward only: used for inputs on either device."""

    def forward(self, inputs):
        x, = inputs
        if isinstance(x, np.ndarray):
            return x * 2,
        y = cuda.empty_like(x)
        cuda.elementwise('float* y, const float* x', 'y[i] = 2 * x[i]', 'twice')(y, x)
        return y,

    def backward(self, inputs, grad_outputs):
        gy, = grad_outputs
        if isinstance(gy, np.ndarray):
            return gy * 2,
        gx = cuda.empty_like(gy)
        cuda.elementwise('float* gx, const float* gy', 'gx[i] = 2 * gy[i]', 'twice_b')(gx, gy)
        return gx,


def test_gpu_function_mixed_with_builtins_on_device_1():
    if cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    x = _uniform(2, 3)
    with cuda.using_device(1):
        v = Variable(cuda.to_gpu(x))
    assert v.data.device == ("cuda", 1)
    y = F.sum(Twice()(F.exp(v)))
    y.backward()
    np.testing.assert_allclose(cuda.to_cpu(y.data), 2 * np.exp(x).sum(), rtol=1e-5)
    np.testing.assert_allclose(cuda.to_cpu(v.grad), 2 * np.exp(x), rtol=1e-5)
    assert v.grad.device == ("cuda", 1)


# --- the module ---------------------------------------------------------------------

def test_to_gpu_to_cpu_round_trip_and_devices():
    for dtype in (np.float32, np.float64, np.int32):
        a = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
        g = cuda.to_gpu(a)
        assert g.device == ("cuda", 0) and g.shape == (3, 4) and g.dtype == dtype
        assert cuda.to_gpu(g) is g  # already on a GPU: no copy
        b = cuda.to_cpu(g)
        assert isinstance(b, np.ndarray)
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(g.get(), a)
    assert cuda.to_cpu(a) is a
    if cuda.device_count() >= 2:
        g1 = cuda.to_gpu(a, 1)
        assert g1.device == ("cuda", 1)
        assert cuda.get_device(g1) == cuda.Device(1)
        np.testing.assert_array_equal(cuda.to_cpu(g1), a)
    assert cuda.get_device(a) is None
    assert cuda.get_device(0) == cuda.Device(0)
    with pytest.raises(chainerc.DeviceError, match="no CUDA device 99"):
        cuda.get_device(99)


def test_using_device_nests_and_restores():
    assert cuda.get_device().id == 0
    with cuda.using_device(np.zeros(1)) as u:  # a CPU array: inactive
        assert not u.is_active and cuda.get_device().id == 0
    if cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    with cuda.using_device(1):
        assert cuda.get_device().id == 1
        x1 = cuda.empty((4, 3))
        assert x1.device == ("cuda", 1)
        with cuda.using_device(cuda.zeros(2)):  # an array made on device 1
            assert cuda.get_device().id == 1
        with cuda.using_device(cuda.to_gpu(np.ones(2, np.float32), 0)):
            assert cuda.get_device().id == 0
        assert cuda.get_device().id == 1
    assert cuda.get_device().id == 0


def test_creation_routines():
    z = cuda.zeros((2, 3))
    o = cuda.ones((2, 3), np.float64)
    f = cuda.full(5, 2.5)
    assert z.dtype == np.float32 and o.dtype == np.float64 and f.shape == (5,)
    np.testing.assert_array_equal(cuda.to_cpu(z), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(cuda.to_cpu(o), np.ones((2, 3)))
    np.testing.assert_array_equal(cuda.to_cpu(f), np.full(5, 2.5, np.float32))
    e = cuda.empty((4, 1), np.int32)
    assert e.shape == (4, 1) and e.dtype == np.int32 and e.device == ("cuda", 0)
    for like, value in ((cuda.zeros_like, 0), (cuda.ones_like, 1)):
        r = like(o)
        assert r.dtype == np.float64 and r.device == ("cuda", 0)
        np.testing.assert_array_equal(cuda.to_cpu(r), np.full((2, 3), value, np.float64))
    r = cuda.full_like(np.zeros((3,), np.float64), -1)  # a CPU template: current device
    assert r.device == ("cuda", 0)
    np.testing.assert_array_equal(cuda.to_cpu(r), [-1, -1, -1])
    assert cuda.empty_like(o).shape == (2, 3)
    with pytest.raises(chainerc.DTypeError):
        cuda.zeros(3, np.int64)


def test_copy_into_and_across_devices():
    a = _uniform(5, 2)
    g = cuda.to_gpu(a)
    c = cuda.copy(g)
    assert c is not g and c.device == ("cuda", 0)
    np.testing.assert_array_equal(cuda.to_cpu(c), a)
    out = cuda.zeros((5, 2))
    assert cuda.copy(g, out=out) is out
    np.testing.assert_array_equal(cuda.to_cpu(out), a)
    with pytest.raises(chainerc.ChainerError):
        cuda.copy(g, out=cuda.zeros((3,)))
    if cuda.device_count() >= 2:
        c1 = cuda.copy(g, out_device=1)
        assert c1.device == ("cuda", 1)
        np.testing.assert_array_equal(cuda.to_cpu(c1), a)


def test_async_copies_on_a_stream():
    a = _uniform(33, 5)
    with cuda.Stream() as s:
        assert s.device == cuda.Device(0)
        g = cuda.to_gpu_async(a, s)
        c = cuda.copy_async(g, stream=s)
        out = cuda.zeros((33, 5))
        assert cuda.copy_async(g, out=out, stream=s) is out
        h = cuda.to_cpu_async(c, s)
        s.synchronize()
        np.testing.assert_array_equal(h, a)
        np.testing.assert_array_equal(cuda.to_cpu(out), a)
    # without a stream: the synchronous copies
    np.testing.assert_array_equal(cuda.to_cpu_async(cuda.to_gpu_async(a)), a)


def test_elementwise_pycuda_and_cupy_forms():
    x = _uniform(1025)
    y = _uniform(1025) + 2
    gx, gy = cuda.to_gpu(x), cuda.to_gpu(y)
    w = cuda.empty_like(gx)
    k = cuda.elementwise('float* w, const float* x, const float* y, float a',
                         'w[i] = a * x[i] + y[i]', 'axpy')
    assert cuda.elementwise('float* w, const float* x, const float* y, float a',
                            'w[i] = a * x[i] + y[i]', 'axpy') is k  # cached
    k(w, gx, gy, 0.5)
    np.testing.assert_allclose(cuda.to_cpu(w), np.float32(0.5) * x + y, rtol=1e-6)
    # a raw input indexed by hand: a reversal
    r = cuda.empty_like(gx)
    cuda.elementwise('float* r, const float* x, int n', 'r[i] = x[n - 1 - i]',
                     'reverse')(r, gx, 1025)
    np.testing.assert_array_equal(cuda.to_cpu(r), x[::-1])
    # CuPy form, with a type placeholder, float64
    k2 = cuda.elementwise('T x, T y', 'T z', 'z = x * y', 'mul')
    z = k2(cuda.to_gpu(x.astype(np.float64)), cuda.to_gpu(y.astype(np.float64)))
    assert z.dtype == np.float64
    np.testing.assert_allclose(cuda.to_cpu(z), x.astype(np.float64) * y, rtol=1e-12)
    # the same kernel on CPU arrays runs on the CPU
    if chainerc._capi.lib.ch_kernel_cpu_supported():
        zc = k2(x, y)
        assert zc.device == ("cpu", 0)
        np.testing.assert_allclose(zc.numpy(), x * y, rtol=1e-6)


def test_elementwise_errors_are_clear():
    with pytest.raises(ValueError, match="cannot read the argument"):
        cuda.elementwise('float** w', 'w[i] = 0', 'bad')
    with pytest.raises(ValueError, match="no output argument"):
        cuda.elementwise('const float* x', 'x[i]', 'noout')
    with pytest.raises(chainerc.UnsupportedError, match="used other than as w\\[i\\]"):
        cuda.elementwise('float* w', 'w[0] = 1', 'first')
    k = cuda.elementwise('float* w, const float* x', 'w[i] = x[i] +* 1', 'syntax')
    with pytest.raises(chainerc.ChainerError):
        k(cuda.zeros(3), cuda.zeros(3))
    k = cuda.elementwise('float* w, const float* x', 'w[i] = x[i]', 'ident')
    with pytest.raises(chainerc.DTypeError):
        k(cuda.zeros(3), cuda.zeros(3, np.float64))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        k(cuda.zeros(3))


def test_reduce_pycuda_and_cupy_forms():
    x = _uniform(1000)
    y = _uniform(1000)
    gx, gy = cuda.to_gpu(x), cuda.to_gpu(y)
    dot = cuda.reduce('const float* x, const float* y', 'x[i] * y[i]', 'a + b', '0', 'dot')
    r = dot(gx, gy)
    assert r.shape == () and r.device == ("cuda", 0)
    np.testing.assert_allclose(r.get(), np.dot(x.astype(np.float64), y), rtol=1e-4)
    mx = cuda.reduce('const double* x', 'x[i]', 'max(a, b)', '-INFINITY', 'amax',
                     dtype_out=np.float64)
    np.testing.assert_array_equal(mx(cuda.to_gpu(x.astype(np.float64))).get(),
                                  x.astype(np.float64).max())
    ss = cuda.reduce('T x', 'T y', 'x * x', 'a + b', 'y = a', '0', 'sumsq')
    m = _uniform(3, 31).astype(np.float64)
    out = ss(cuda.to_gpu(m), axis=1)
    assert out.shape == (3,)
    np.testing.assert_allclose(cuda.to_cpu(out), (m * m).sum(axis=1), rtol=1e-12)


def test_parameterized_functions_move_with_their_set():
    m = chainerc.FunctionSet(l1=F.Linear(4, 3))
    W0, b0 = np.array(m.l1.W), np.array(m.l1.b)
    assert m.to_gpu() is m
    assert isinstance(m.l1.W, cuda.GPUArray) and m.l1.W.device == ("cuda", 0)
    assert m.l1.gW.device == ("cuda", 0)
    assert all(p.device == ("cuda", 0) for p in m.parameters)
    np.testing.assert_array_equal(m.l1.W.get(), W0)
    x = _uniform(2, 4)
    y = m.l1(Variable(cuda.to_gpu(x)))
    assert y.data.device == ("cuda", 0)
    np.testing.assert_allclose(cuda.to_cpu(y.data), x @ W0.T + b0, rtol=1e-5, atol=1e-6)
    m.l1.W = np.ones((3, 4), np.float32)  # assignment copies into the device array
    np.testing.assert_array_equal(m.l1.W.get(), np.ones((3, 4)))
    m.to_cpu()
    assert isinstance(m.l1.W, np.ndarray)
    np.testing.assert_array_equal(m.l1.W, np.ones((3, 4)))
    f = F.Linear(2, 2)
    assert f.to_gpu() is f and f.W.device == ("cuda", 0)
    f.to_cpu()
    assert isinstance(f.W, np.ndarray)


class WithParam(Function):
    parameter_names = ("W",)
    gradient_names = ("gW",)

    def __init__(self):
        self.W = np.ones(2, np.float32)
        self.gW = np.zeros(2, np.float32)

    def forward_cpu(self, inputs):
        return inputs[0] * self.W,


def test_user_function_to_gpu():
    class NoParam(Function):
        def forward_cpu(self, inputs):
            return inputs[0],
    f = NoParam()
    assert f.to_gpu() is f
    with pytest.raises(chainerc.UnsupportedError, match="stay on the CPU"):
        WithParam().to_gpu()


def _skip_if_kernel_missing(e):
    msg = str(e)
    if "CPU parameters only" in msg or "no kernel for cuda" in msg:
        pytest.skip("this library lacks a CUDA piece the step needs (other branches): %s" % msg)


def test_training_step_on_gpu_matches_cpu():
    """A Linear layer trained three SGD steps from the same start on cuda:0 and on
    the CPU (the issue's 'a loop written for the CPU runs on cuda:0 by moving
    its model and data')."""
    results = []
    for gpu in (False, True):
        chainerc.seed(3)  # the same initial W on both runs
        model = chainerc.FunctionSet(l1=F.Linear(4, 3))
        if gpu:
            model.to_gpu()
        opt = chainerc.optimizers.SGD(lr=0.1)
        x = _uniform(5, 4)
        t = np.array([0, 1, 2, 1, 0], np.int32)
        if gpu:
            x, t = cuda.to_gpu(x), cuda.to_gpu(t)
        losses = []
        try:
            opt.setup(model)
            for _ in range(3):
                opt.zero_grads()
                loss = F.softmax_cross_entropy(model.l1(Variable(x)), Variable(t))
                loss.backward()
                opt.update()
                losses.append(float(cuda.to_cpu(loss.data)))
        except chainerc.DeviceError as e:
            _skip_if_kernel_missing(e)
            raise
        if gpu:
            assert model.l1.W.device == ("cuda", 0)
            model.to_cpu()
        results.append((losses, np.array(model.l1.W), np.array(model.l1.b)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    assert results[0][0][2] < results[0][0][0]  # it learns
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-5, atol=1e-6)


def test_prelu_training_steps_on_gpu_match_cpu():
    """Three MomentumSGD steps of a PReLU model (a parameterized function whose
    CUDA kernels and optimizer update run on the device) from the same start
    on cuda:0 and on the CPU."""
    results = []
    x0 = _uniform(6, 5).astype(np.float64)
    for gpu in (False, True):
        model = chainerc.FunctionSet(p=F.PReLU(shape=(5,), init=0.25, dtype=np.float64))
        if gpu:
            model.to_gpu()
        opt = chainerc.optimizers.MomentumSGD(lr=0.1, momentum=0.9)
        x = cuda.to_gpu(x0) if gpu else x0
        try:
            opt.setup(model)
            losses = []
            for _ in range(3):
                opt.zero_grads()
                loss = F.sum(F.tanh(model.p(Variable(x))) * 2)
                loss.backward()
                opt.update()
                losses.append(float(cuda.to_cpu(loss.data)))
        except chainerc.DeviceError as e:
            _skip_if_kernel_missing(e)
            raise
        if gpu:
            assert model.p.W.device == ("cuda", 0)
            model.to_cpu()
        results.append((losses, np.array(model.p.W)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)
    assert not np.allclose(results[0][1], 0.25)  # the steps moved W
