"""Neural-network API merged from the other branches: the seed's Linear,
FunctionSet and Optimizer tutorial values, the built-in NN functions,
optimizers against their update rules, .npz checkpoints, IDX reading."""
import os

import numpy as np
import pytest

import chainerc
from chainerc import Variable, FunctionSet, optimizers, gradient_check, serializers, datasets
import chainerc.functions as F

needs = pytest.mark.skipif(FunctionSet is None or not hasattr(F, "Linear"),
                           reason="the library has no neural-network API yet")


@needs
def test_seed_linear_example():
    f = F.Linear(3, 2)
    assert f.W.shape == (2, 3) and f.W.dtype == np.float32
    np.testing.assert_array_equal(f.b, np.zeros(2, np.float32))
    x = Variable(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32))
    y = f(x)
    np.testing.assert_allclose(y.data, x.data.dot(f.W.T) + f.b, rtol=1e-6, atol=1e-6)
    f.gW.fill(0)
    f.gb.fill(0)
    y.grad = np.ones((2, 2), dtype=np.float32)
    y.backward()
    np.testing.assert_array_equal(f.gW, np.array([[5., 7., 9.], [5., 7., 9.]], np.float32))
    np.testing.assert_array_equal(f.gb, np.array([2., 2.], np.float32))
    assert f.parameter_names == ("W", "b") and f.gradient_names == ("gW", "gb")


@needs
def test_linear_initial_values_and_check_backward():
    W = np.random.randn(4, 3)
    b = np.random.randn(4)
    f = F.Linear(3, 4, initialW=W, initial_bias=b, dtype=np.float64)
    np.testing.assert_array_equal(f.W, W)
    x = np.random.randn(5, 3)
    np.testing.assert_allclose(f(Variable(x)).data, x.dot(W.T) + b, rtol=1e-12, atol=1e-12)
    gradient_check.check_backward(f, x, np.random.randn(5, 4), atol=1e-5, rtol=1e-4)


@needs
def test_seed_function_set_example():
    model = FunctionSet(
        l1=F.Linear(4, 3),
        l2=F.Linear(3, 2),
    )
    model.l3 = F.Linear(2, 2)
    x = Variable(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32))
    h1 = model.l1(x)
    h2 = model.l2(h1)
    h3 = model.l3(h2)
    assert h3.data.shape == (2, 2)
    params, grads = model.collect_parameters()
    assert len(params) == 6 and len(grads) == 6
    assert model.parameter_paths == ("l1/W", "l1/b", "l2/W", "l2/b", "l3/W", "l3/b")
    assert np.shares_memory(params[0], model.l1.W)  # shared, not copied
    optimizer = optimizers.SGD()
    optimizer.setup(model.collect_parameters())
    optimizer.zero_grads()
    h3.grad = np.ones((2, 2), np.float32)
    h3.backward()
    W_before = model.l1.W.copy()
    gW = model.l1.gW.copy()
    optimizer.update()
    np.testing.assert_allclose(model.l1.W, W_before - 0.01 * gW, rtol=1e-6, atol=1e-7)
    assert optimizer.t == 1


@needs
def test_mlp_learns_a_toy_problem():
    chainerc.seed(1)
    rng = np.random.RandomState(0)
    x_data = rng.randn(200, 5).astype(np.float32)
    y_data = (x_data[:, 0] + x_data[:, 1] > 0).astype(np.int32)
    model = FunctionSet(l1=F.Linear(5, 16), l2=F.Linear(16, 2))
    optimizer = optimizers.Adam(alpha=0.01)
    optimizer.setup(model.collect_parameters())

    def forward(x_data, y_data):
        x, t = Variable(x_data), Variable(y_data)
        h = F.relu(model.l1(x))
        y = model.l2(h)
        return F.softmax_cross_entropy(y, t), F.accuracy(y, t)
    first = None
    for epoch in range(100):
        optimizer.zero_grads()
        loss, acc = forward(x_data, y_data)
        loss.backward()
        optimizer.update()
        first = first if first is not None else float(loss.data)
    assert float(loss.data) < first / 2
    assert float(acc.data) > 0.9


@needs
def test_activation_and_loss_functions_against_numpy():
    x = np.random.randn(4, 5)
    t = np.array([0, 3, 4, 1], np.int32)
    np.testing.assert_allclose(F.relu(x).data, np.maximum(x, 0))
    np.testing.assert_allclose(F.sigmoid(x).data, 1 / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(F.tanh(x).data, np.tanh(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(F.leaky_relu(x).data, np.where(x > 0, x, 0.2 * x))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(F.softmax(x).data, sm, rtol=1e-12)
    np.testing.assert_allclose(F.softmax_cross_entropy(x, t).data,
                               -np.log(sm[np.arange(4), t]).mean(), rtol=1e-12)
    np.testing.assert_allclose(F.accuracy(x, t).data, (x.argmax(axis=1) == t).mean())
    y = np.random.randn(4, 5)
    np.testing.assert_allclose(F.mean_squared_error(x, y).data, ((x - y) ** 2).mean(),
                               rtol=1e-12)
    np.testing.assert_allclose(F.matmul(x, y, transb=True).data, x.dot(y.T), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.transpose(x).data, x.T)
    np.testing.assert_allclose(F.concat((x, y)).data, np.concatenate((x, y), axis=1))
    for f in (F.relu, F.sigmoid, F.tanh, F.softmax, lambda v: F.softmax_cross_entropy(v, t)):
        gradient_check.check_backward(f, x + 0.01, None, atol=1e-4, rtol=1e-4)


@needs
def test_label_out_of_range_is_a_value_error():
    with pytest.raises(chainerc.InvalidArgumentError) as info:
        F.softmax_cross_entropy(np.zeros((2, 3), np.float32), np.array([0, 7], np.int32))
    assert isinstance(info.value, ValueError) and "7" in str(info.value)


@needs
def test_dropout_train_and_test():
    x = np.ones((100, 100), np.float32)
    y = F.dropout(x, 0.5, train=True).data
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    np.testing.assert_array_equal(F.dropout(x, 0.5, train=False).data, x)


@needs
def test_conv_pool_embed():
    conv = F.Convolution2D(2, 3, 3, pad=1)
    x = np.random.randn(2, 2, 5, 5).astype(np.float32)
    y = conv(x)
    assert y.data.shape == (2, 3, 5, 5)
    assert F.max_pooling_2d(y, 2).data.shape == (2, 3, 3, 3)
    assert F.average_pooling_2d(y, 2).data.shape == (2, 3, 2, 2)
    emb = F.EmbedID(10, 4)
    ids = np.array([1, 3, 3], np.int32)
    np.testing.assert_array_equal(emb(ids).data, emb.W[ids])
    c, h = F.lstm(np.zeros((1, 2), np.float32), np.random.randn(1, 8).astype(np.float32))
    assert c.data.shape == (1, 2) and h.data.shape == (1, 2)


@needs
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1)), ("MomentumSGD", dict(lr=0.1, momentum=0.9)),
    ("AdaGrad", dict(lr=0.1)), ("AdaDelta", {}), ("Adam", {}), ("RMSprop", dict(lr=0.1))])
def test_optimizers_follow_their_rules(name, kwargs):
    p = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.25, -1.0], np.float32)
    opt = getattr(optimizers, name)(**kwargs)
    opt.setup(((p,), (g,)))
    opt.update()
    opt.update()
    ref = np.array([1.0, -2.0, 3.0], np.float64)
    gd = g.astype(np.float64)
    st = {}
    for t in (1, 2):
        if name == "SGD":
            ref -= 0.1 * gd
        elif name == "MomentumSGD":
            st["v"] = 0.9 * st.get("v", 0) - 0.1 * gd
            ref += st["v"]
        elif name == "AdaGrad":
            st["h"] = st.get("h", 0) + gd * gd
            ref -= 0.1 * gd / (np.sqrt(st["h"]) + 1e-8)
        elif name == "AdaDelta":
            st["msg"] = 0.95 * st.get("msg", 0) + 0.05 * gd * gd
            dx = np.sqrt((st.get("msdx", 0) + 1e-6) / (st["msg"] + 1e-6)) * gd
            st["msdx"] = 0.95 * st.get("msdx", 0) + 0.05 * dx * dx
            ref -= dx
        elif name == "Adam":
            beta1_t = 0.9 * (1 - 1e-8) ** (t - 1)
            st["m"] = st.get("m", 0) + (1 - beta1_t) * (gd - st.get("m", 0))
            st["v"] = st.get("v", 0) + (1 - 0.999) * (gd * gd - st.get("v", 0))
            lr = 0.001 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            ref -= lr * st["m"] / (np.sqrt(st["v"]) + 1e-8)
        elif name == "RMSprop":
            st["ms"] = 0.99 * st.get("ms", 0) + 0.01 * gd * gd
            ref -= 0.1 * gd / (np.sqrt(st["ms"]) + 1e-8)
    np.testing.assert_allclose(p, ref, rtol=1e-5, atol=1e-6)
    assert opt.t == 2


@needs
@pytest.mark.parametrize("name,kwargs", [
    ("NesterovAG", dict(lr=0.1, momentum=0.5)),
    ("Adam", dict(alpha=0.01, eta=0.5, weight_decay_rate=0.1)),
    ("Adam", dict(alpha=0.01, beta2=0.5, amsgrad=True, weight_decay_rate=0.05)),
    ("AdamW", dict(alpha=0.01, weight_decay_rate=0.1))])
def test_chainer7_optimizers_follow_chainer7s_rules(name, kwargs):
    # Chainer 7's AdamRule / NesterovAG.update_core_cpu, in float64 (the C suite's
    # references are cross-checked with Chainer 7 itself: make_optimizer_references.py).
    p = np.array([1.0, -2.0, 3.0], np.float32)
    gs = [np.array([0.5, 0.25, -1.0], np.float32), np.array([0.1, 0.5, -0.2], np.float32)]
    opt = getattr(optimizers, name)(**kwargs)
    g = np.zeros(3, np.float32)
    opt.setup(((p,), (g,)))
    ref = p.astype(np.float64)
    m = v = vhat = 0
    mom = np.zeros(3)
    lam = 1.0 if name == "AdamW" else 1 - 1e-8
    for t, gt in enumerate(gs, 1):
        g[...] = gt
        opt.update()
        gd = gt.astype(np.float64)
        if name == "NesterovAG":
            mom = 0.5 * mom - 0.1 * gd
            ref += 0.25 * mom - 1.5 * 0.1 * gd
            continue
        b2 = kwargs.get("beta2", 0.999)
        m = m + (1 - 0.9 * lam ** (t - 1)) * (gd - m)
        v = v + (1 - b2) * (gd * gd - v)
        vhat = np.maximum(vhat, v) if kwargs.get("amsgrad") else v
        lr = 0.01 * np.sqrt(1 - b2 ** t) / (1 - 0.9 ** t)
        eta, wd = kwargs.get("eta", 1.0), kwargs["weight_decay_rate"]
        ref = (1 - eta * wd) * ref - eta * (lr / (np.sqrt(vhat) + 1e-8) * m)
    np.testing.assert_allclose(p, ref, rtol=1e-5, atol=1e-6)
    if name != "NesterovAG":
        assert opt.weight_decay_rate == pytest.approx(kwargs["weight_decay_rate"])
        assert opt.amsgrad == bool(kwargs.get("amsgrad"))
        with pytest.raises(chainerc.InvalidArgumentError, match="amsgrad"):
            opt.amsgrad = not opt.amsgrad
        want = ["0/m", "0/v"] + (["0/vhat"] if kwargs.get("amsgrad") else [])
        assert sorted(opt.states) == want
        if kwargs.get("amsgrad"):
            np.testing.assert_allclose(opt.states["0/vhat"], vhat, rtol=1e-5)


@needs
def test_optimizer_hyperparameters_and_utilities():
    opt = optimizers.MomentumSGD()
    assert opt.lr == pytest.approx(0.01) and opt.momentum == pytest.approx(0.9)
    opt.lr = 0.5
    assert opt.lr == 0.5
    with pytest.raises(chainerc.InvalidArgumentError):
        optimizers.SGD(lr=float("nan"))
    p = np.ones(4, np.float32)
    g = np.full(4, 3.0, np.float32)
    opt.setup(((p,), (g,)))
    assert opt.compute_grads_norm() == pytest.approx(6.0)
    opt.clip_grads(3.0)
    np.testing.assert_allclose(g, np.full(4, 1.5))
    opt.weight_decay(0.5)
    np.testing.assert_allclose(g, np.full(4, 2.0))
    opt.zero_grads()
    np.testing.assert_array_equal(g, np.zeros(4))


@needs
def test_npz_round_trip(tmp_path):
    model = FunctionSet(l1=F.Linear(3, 2), l2=F.Linear(2, 2))
    opt = optimizers.Adam()
    opt.setup(model)
    model.l1.gW.fill(1)
    opt.update()
    path = str(tmp_path / "model.npz")
    serializers.save_npz(path, model)
    with np.load(path) as z:
        assert sorted(z.files) == ["l1/W", "l1/b", "l2/W", "l2/b"]
        np.testing.assert_array_equal(z["l1/W"], model.l1.W)
    saved = model.l1.W.copy()
    model.l1.W = np.zeros((2, 3), np.float32)  # copies into the engine's array
    serializers.load_npz(path, model)
    np.testing.assert_array_equal(model.l1.W, saved)
    opath = str(tmp_path / "opt.npz")
    serializers.save_npz(opath, opt)
    with np.load(opath) as z:
        assert int(z["t"]) == 1 and "l1/W/m" in z.files
    with pytest.raises(chainerc.ChainerIOError):
        serializers.load_npz(str(tmp_path / "missing.npz"), model)


@needs
def test_user_function_in_function_set():
    from test_user_functions import EltwiseParamProduct
    f = EltwiseParamProduct((3,))
    model = FunctionSet(scale=f)
    params, grads = model.collect_parameters()
    assert len(params) == 1 and np.shares_memory(params[0], f.W)
    opt = optimizers.SGD(lr=1.0)
    opt.setup(model)
    y = f(Variable(np.ones((2, 3), np.float32)))
    opt.zero_grads()
    F.sum(y).backward()
    W0 = f.W.copy()
    opt.update()
    np.testing.assert_allclose(f.W, W0 - 2.0, rtol=1e-6, atol=1e-6)  # the user's own array


IDX = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"


@pytest.mark.skipif(datasets is None or not os.path.exists(IDX), reason="no IDX reader or data")
def test_read_idx():
    labels = datasets.read_idx(IDX, np.int32)
    assert labels.shape == (10000,) and labels.dtype == np.int32
    assert labels.min() == 0 and labels.max() == 9
    images = datasets.read_idx(IDX.replace("labels-idx1", "images-idx3"), np.float32, 1 / 255.)
    assert images.shape == (10000, 28, 28) and 0 <= images.min() and images.max() <= 1
    with pytest.raises(chainerc.ChainerIOError):
        datasets.read_idx("/nonexistent.gz")


@needs
def test_user_optimizer_in_python():
    class MySGD(optimizers.UserOptimizer):
        state_names = ("n",)

        def __init__(self, lr):
            super().__init__()
            self.my_lr = lr

        def update_one(self, param, grad, state, t):
            param -= self.my_lr * grad
            state += 1  # counts updates

    model = FunctionSet(l=F.Linear(3, 2))
    opt = MySGD(0.5)
    opt.setup(model)
    model.l.gW.fill(2)
    W0 = model.l.W.copy()
    opt.update()
    opt.update()
    np.testing.assert_allclose(model.l.W, W0 - 2.0, rtol=1e-6, atol=1e-6)
    assert opt.t == 2

    class Broken(optimizers.UserOptimizer):
        def update_one(self, param, grad, state, t):
            raise ArithmeticError("no update")
    b = Broken()
    b.setup(model)
    with pytest.raises(ArithmeticError, match="no update"):
        b.update()


@needs
def test_prelu_parameter_batchnorm_lrn_batch_matmul_copy():
    x = np.random.randn(3, 4)
    p = F.PReLU(init=0.1, dtype=np.float64)
    np.testing.assert_allclose(p(x).data, np.where(x >= 0, x, 0.1 * x))
    assert p.W.shape == () and p.parameter_names == ("W",)
    gradient_check.check_backward(p, x + 0.01, None, atol=1e-5, rtol=1e-4)
    p4 = F.PReLU(shape=(4,), init=0.3)
    assert p4.W.shape == (4,)

    bn = F.BatchNormalization(4, dtype=np.float64)
    y = bn(x)
    np.testing.assert_allclose(y.data, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(bn.avg_mean, 0.1 * x.mean(0), rtol=1e-9)
    yt = bn(x, test=True)
    np.testing.assert_allclose(yt.data, (x - bn.avg_mean) / np.sqrt(bn.avg_var + 1e-5),
                               rtol=1e-9)
    bn.start_finetuning()
    assert bn.parameter_names == ("gamma", "beta")

    img = np.random.rand(2, 6, 3, 3)
    lrn = F.local_response_normalization(img).data
    sq = np.pad(img ** 2, ((0, 0), (2, 2), (0, 0), (0, 0)))
    s = sum(sq[:, i:i + 6] for i in range(5))
    np.testing.assert_allclose(lrn, img / (2 + 1e-4 * s) ** 0.75, rtol=1e-10)

    a = np.random.randn(5, 2, 3)
    b = np.random.randn(5, 3, 4)
    np.testing.assert_allclose(F.batch_matmul(a, b).data, a @ b, rtol=1e-12, atol=1e-12)
    c = F.copy(Variable(a), -1)
    np.testing.assert_array_equal(c.data, a)
    if chainerc.cuda.available:  # e.g. the emulated devices: a copy to cuda:0
        g = F.copy(Variable(a), 0)
        assert g.data.device == ("cuda", 0)
        np.testing.assert_array_equal(chainerc.cuda.to_cpu(g.data), a)
    else:
        with pytest.raises(chainerc.ChainerError):
            F.copy(Variable(a), 0)  # no GPU in this build


@needs
def test_binary_hierarchical_softmax():
    tree = F.BinaryHierarchicalSoftmax.create_huffman_tree({0: 8, 1: 5, 2: 2, 3: 1})
    words = set()

    def leaves(n):
        if isinstance(n, tuple):
            leaves(n[0])
            leaves(n[1])
        else:
            words.add(n)
    leaves(tree)
    assert words == {0, 1, 2, 3}
    f = F.BinaryHierarchicalSoftmax(3, tree, dtype=np.float64)
    assert f.W.shape == (3, 3)
    x = np.random.randn(4, 3)
    t = np.array([0, 1, 2, 3], np.int32)
    loss = f(x, t)
    assert loss.data.shape == () and float(loss.data) > 0
    # probabilities of all words sum to one
    total = sum(np.exp(-float(f(x[:1], np.array([w], np.int32)).data)) for w in range(4))
    assert total == pytest.approx(1.0)
    gradient_check.check_backward(lambda v: f(v, t), x, None, atol=1e-5, rtol=1e-4)


@needs
def test_optimizer_checkpoint_resumes(tmp_path):
    def make():
        chainerc.seed(3)
        model = FunctionSet(l=F.Linear(3, 2))
        opt = optimizers.MomentumSGD(lr=0.1)
        opt.setup(model)
        return model, opt

    def step(model, opt):
        opt.zero_grads()
        loss = F.sum(model.l(np.ones((1, 3), np.float32)) ** 2)
        loss.backward()
        opt.update()

    m1, o1 = make()
    step(m1, o1)
    serializers.save_npz(str(tmp_path / "m.npz"), m1)
    serializers.save_npz(str(tmp_path / "o.npz"), o1)
    step(m1, o1)
    m2, o2 = make()
    serializers.load_npz(str(tmp_path / "m.npz"), m2)
    serializers.load_npz(str(tmp_path / "o.npz"), o2)
    assert o2.t == 1
    step(m2, o2)
    np.testing.assert_allclose(m2.l.W, m1.l.W, rtol=1e-6)  # momentum restored too
    assert o2.t == 2


@needs
def test_optimizer_states_and_npz_arrays(tmp_path):
    model = FunctionSet(l=F.Linear(2, 2))
    opt = optimizers.Adam()
    opt.setup(model)
    assert opt.parameter_paths == ("l/W", "l/b")
    assert sorted(opt.states) == ["l/W/m", "l/W/v", "l/b/m", "l/b/v"]
    path = str(tmp_path / "a.npz")
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    serializers.save_npz_arrays(path, {"a": a, "b/c": np.arange(3, dtype=np.int32)})
    with np.load(path) as z:
        np.testing.assert_array_equal(z["a"], a)
    np.testing.assert_array_equal(serializers.load_npz_array(path, "b/c"), [0, 1, 2])
    with pytest.raises(chainerc.ChainerError):
        serializers.load_npz_array(path, "missing")


@needs
def test_optimizer_epoch():
    from chainerc import _capi
    if not _capi.has("ch_optimizer_epoch"):
        pytest.skip("this library has no optimizer epoch")
    opt = optimizers.SGD()
    opt.setup(FunctionSet(l=F.Linear(2, 2)))
    assert opt.epoch == 0
    opt.new_epoch()
    opt.new_epoch()
    assert opt.epoch == 2


def test_sgd_step_in_backward_matches_the_usual_loop():
    # The weights' SGD step taken in backward gives the usual loop's parameters.
    rng = np.random.RandomState(3)
    x_data = rng.randn(8, 6).astype(np.float32)
    t_data = rng.randint(0, 3, size=8).astype(np.int32)
    w1 = rng.randn(5, 6).astype(np.float32) * 0.3
    w2 = rng.randn(3, 5).astype(np.float32) * 0.3

    def run(in_backward):
        model = FunctionSet(l1=F.Linear(6, 5, initialW=w1.copy()),
                            l2=F.Linear(5, 3, initialW=w2.copy()))
        opt = optimizers.SGD(lr=0.2)
        opt.setup(model)
        opt.step_in_backward = in_backward
        assert opt.step_in_backward == in_backward
        for _ in range(4):
            opt.zero_grads()
            x, t = Variable(x_data), Variable(t_data)
            loss = F.softmax_cross_entropy(model.l2(F.relu(model.l1(x))), t)
            loss.backward()
            if in_backward:
                with pytest.raises(chainerc.InvalidArgumentError):
                    opt.clip_grads(1.0)
            opt.update()
        return model.l1.W.copy(), model.l2.W.copy(), model.l1.b.copy()

    usual, stepped = run(False), run(True)
    for a, b in zip(usual, stepped):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert not np.allclose(usual[0], w1)
    adam = optimizers.Adam()
    with pytest.raises(chainerc.InvalidArgumentError):
        adam.step_in_backward = True


@needs
def test_parameter_function_accumulates_its_gradient():
    # Parameter has no inputs: its output must still take part in backward.
    par = F.Parameter(np.arange(3, dtype=np.float32))
    w = par()
    np.testing.assert_array_equal(w.data, [0., 1., 2.])
    F.sum(w * 2).backward()
    np.testing.assert_array_equal(par.gW, [2., 2., 2.])


@needs
def test_parameter_gradients_with_inputs_not_requiring_grad():
    # Training data marked requires_grad=False (as the C header advises) must
    # not stop the parameters' gradients.
    f = F.Linear(3, 2)
    x = Variable(np.ones((1, 3), np.float32))
    if hasattr(x, "requires_grad"):
        x.requires_grad = False
    F.sum(f(x)).backward()
    np.testing.assert_array_equal(f.gW, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(f.gb, np.ones(2, np.float32))
    assert x.grad is None


@needs
def test_inception():
    if not hasattr(F, "Inception"):
        pytest.skip("this library has no Inception")
    f = F.Inception(3, 2, 2, 3, 1, 2, 2)
    assert len(f.parameter_names) == 12 and f.parameter_names[0] == "conv1/W"
    y = f(np.random.randn(2, 3, 5, 5).astype(np.float32))
    assert y.data.shape == (2, 2 + 3 + 2 + 2, 5, 5) and (y.data >= 0).all()
    model = FunctionSet(inc=f)
    assert model.parameter_paths[0] == "inc/conv1/W"
    F.sum(y).backward()
    assert np.abs(f.gradients[0]).sum() > 0
