"""The seed's recurrent-net tutorial (section 1.2): full backprop, truncated
backprop with unchain_backward, volatile evaluation, and switching a
variable's volatility to train a predictor on a fixed feature extractor."""
import numpy as np
import pytest

from chainerc import Variable, FunctionSet, optimizers
import chainerc
import chainerc.functions as F

pytestmark = pytest.mark.skipif(FunctionSet is None or not hasattr(F, "EmbedID"),
                                reason="the library has no neural-network API yet")


def _model():
    chainerc.seed(0)
    model = FunctionSet(
        embed=F.EmbedID(20, 10),
        x_to_h=F.Linear(10, 8),
        h_to_h=F.Linear(8, 8),
        h_to_y=F.Linear(8, 20),
    )
    optimizer = optimizers.SGD()
    optimizer.setup(model.collect_parameters())
    return model, optimizer


def _forward_one_step(model, h, cur_word, next_word, volatile=False):
    word = Variable(cur_word, volatile=volatile)
    t = Variable(next_word, volatile=volatile)
    x = F.tanh(model.embed(word))
    h = F.tanh(model.x_to_h(x) + model.h_to_h(h))
    y = model.h_to_y(h)
    loss = F.softmax_cross_entropy(y, t)
    return h, loss


def _forward(model, x_list, volatile=False):
    h = Variable(np.zeros((1, 8), dtype=np.float32), volatile=volatile)
    loss = 0
    for cur_word, next_word in zip(x_list, x_list[1:]):
        h, new_loss = _forward_one_step(model, h, cur_word, next_word, volatile=volatile)
        loss += new_loss
    return loss


def _sequence(n):
    rng = np.random.RandomState(0)
    return [np.array([w], np.int32) for w in rng.randint(0, 20, n)]


def test_full_backprop_and_volatile_evaluation():
    model, optimizer = _model()
    x_list = _sequence(12)
    before = float(_forward(model, x_list, volatile=True).data)
    for _ in range(20):
        optimizer.zero_grads()
        loss = _forward(model, x_list)
        loss.backward()
        optimizer.update()
    after = _forward(model, x_list, volatile=True)
    assert after.volatile and after.creator is None
    assert float(after.data) < before


def test_truncated_backprop():
    model, optimizer = _model()
    x_list = _sequence(70)
    h = Variable(np.zeros((1, 8), dtype=np.float32))
    loss = 0
    count = 0
    seqlen = len(x_list[1:])
    updates = 0
    for cur_word, next_word in zip(x_list, x_list[1:]):
        h, new_loss = _forward_one_step(model, h, cur_word, next_word)
        loss += new_loss
        count += 1
        if count % 30 == 0 or count == seqlen:
            optimizer.zero_grads()
            loss.backward()
            loss.unchain_backward()
            optimizer.update()
            updates += 1
            assert loss.creator is None
    assert updates == 3 and optimizer.t == 3
    # as in Chainer, the state's history went with the loss's; its value stays
    assert h.creator is None and h.data.shape == (1, 8)


def test_switch_volatility_to_train_only_the_predictor():
    chainerc.seed(0)
    fixed_func = F.Linear(4, 3)
    predictor_func = F.Linear(3, 1)
    x = Variable(np.random.randn(5, 4).astype(np.float32), volatile=True)
    feat = fixed_func(x)
    assert feat.volatile and feat.creator is None
    feat.volatile = False
    y = F.sum(predictor_func(feat))
    fixed_func.gW.fill(0)
    predictor_func.gW.fill(0)
    y.backward()
    assert not fixed_func.gW.any()  # history stopped at feat
    np.testing.assert_allclose(predictor_func.gW, feat.data.sum(axis=0, keepdims=True),
                               rtol=1e-5)
    assert feat.grad is not None
