"""Ownership: training steps leave handle counts, the engine's bytes in use,
the wrapper's registry and Python's own allocations flat (10,000 steps of a
Linear model; 3,000 of a graph with a Python-defined parameterized function)."""
import gc
import tracemalloc

import numpy as np
import pytest

import chainerc
from chainerc import Variable, Function, _capi
import chainerc.functions as F


class Scale(Function):
    parameter_names = ('W',)
    gradient_names = ('gW',)

    def __init__(self, n):
        self.W = np.full((n,), 0.5, np.float32)
        self.gW = np.zeros((n,), np.float32)

    def forward(self, inputs):
        x, = inputs
        self.x = x  # kept for backward: a view that holds the engine's array
        return x * self.W,

    def backward(self, inputs, grad_outputs):
        gy, = grad_outputs
        self.gW += (gy * self.x).sum(axis=0)
        return gy * self.W,


def _train(steps, model, x_data, t_data):
    for _ in range(steps):
        model.gW.fill(0)
        x = Variable(x_data)
        t = Variable(t_data)
        y = F.exp(model(x) * 0.1) - 1
        d = y - t
        loss = F.sum(d * d) / len(d)
        loss.backward()
        model.W -= 0.01 * model.gW
    return float(loss.data)


def test_training_memory_stays_flat():
    model = Scale(8)
    x_data = np.random.randn(4, 8).astype(np.float32)
    t_data = np.random.randn(4, 8).astype(np.float32) * 0.1
    first = _train(500, model, x_data, t_data)
    gc.collect()
    handles = chainerc.live_handles()
    registry = len(_capi._objects)
    in_use = chainerc.memory_stats()["bytes_in_use"]
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        last = _train(2500, model, x_data, t_data)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert last < first  # it trained
    assert chainerc.live_handles() == handles
    assert len(_capi._objects) == registry
    assert chainerc.memory_stats()["bytes_in_use"] <= in_use
    assert grown < 64 * 1024, "Python allocations grew by %d bytes over 2,500 steps" % grown


def test_dropping_everything_frees_every_handle():
    gc.collect()
    before = chainerc.live_handles()
    model = Scale(3)
    x = Variable(np.ones((2, 3), np.float32))
    y = F.sum(model(x) * 2)
    y.backward()
    views = (x.grad, y.data, model.gW)
    del model, x, y
    gc.collect()
    # views keep their arrays alive, nothing else
    assert chainerc.live_handles()["variables"] == before["variables"]
    del views
    gc.collect()
    assert chainerc.live_handles() == before


def _has_nn():
    return chainerc.FunctionSet is not None and hasattr(F, "Linear")


def test_linear_model_training_memory_stays_flat():
    import pytest
    if not _has_nn():
        pytest.skip("the library has no Linear/FunctionSet yet")
    from chainerc import FunctionSet, optimizers
    chainerc.seed(0)
    model = FunctionSet(l1=F.Linear(6, 8), l2=F.Linear(8, 3))
    opt = optimizers.MomentumSGD(lr=0.05)
    opt.setup(model.collect_parameters())
    rng = np.random.RandomState(0)
    x_data = rng.randn(16, 6).astype(np.float32)
    t_data = (x_data[:, 0] > 0).astype(np.int32) + (x_data[:, 1] > 0).astype(np.int32)

    def steps(n):
        for _ in range(n):
            opt.zero_grads()
            x, t = Variable(x_data), Variable(t_data)
            y = model.l2(F.relu(model.l1(x)))
            loss = F.softmax_cross_entropy(y, t)
            loss.backward()
            opt.update()
        return float(loss.data)

    first = steps(1000)
    gc.collect()
    handles = chainerc.live_handles()
    registry = len(_capi._objects)
    in_use = chainerc.memory_stats()["bytes_in_use"]
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        last = steps(9000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert last < first
    assert chainerc.live_handles() == handles
    assert len(_capi._objects) == registry
    assert chainerc.memory_stats()["bytes_in_use"] <= in_use
    assert grown < 64 * 1024, "Python allocations grew by %d bytes over 9,000 steps" % grown


def test_context_managers_release_now():
    gc.disable()  # prove it is the with-blocks, not the collector
    try:
        before = chainerc.live_handles()
        data = np.ones(3, np.float32)
        with Variable(data) as x, Scale(3) as f:
            with F.sum(f(x) * 2) as y:
                y.backward()
                g = x.grad
            assert chainerc.live_handles()["all"] > before["all"]
        del g  # a view taken inside keeps only its own array
        assert chainerc.live_handles() == before
        with pytest.raises(chainerc.NullHandleError):
            x.backward()
        with chainerc.asarray(data) as a:
            assert np.shares_memory(np.asarray(a), data)
        assert chainerc.live_handles() == before
    finally:
        gc.enable()


@pytest.mark.skipif(not _has_nn() or chainerc.optimizers is None, reason="no FunctionSet")
def test_function_set_and_optimizer_release_their_handles():
    # Both own one engine handle (HandleOwner): `with`, release() (twice is
    # fine) and garbage collection all drop it; "all" counts every kind.
    gc.collect()
    before = chainerc.live_handles()
    with chainerc.FunctionSet(l1=F.Linear(3, 2)) as fs:
        with chainerc.optimizers.SGD(lr=0.1) as opt:
            opt.setup(fs)
            assert chainerc.live_handles()["all"] > before["all"]
    fs.release()
    opt.release()
    dropped = chainerc.FunctionSet(l1=F.Linear(2, 2))
    opt2 = chainerc.optimizers.MomentumSGD()
    opt2.setup(dropped)
    del dropped, opt2, fs, opt
    gc.collect()
    assert chainerc.live_handles() == before
