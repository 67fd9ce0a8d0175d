"""The seed's way of testing a function (003, section 1.4.4): `func = y.creator`
then `numerical_grad(lambda: func.forward((x.data,)), ...)`, for built-in and
user functions; and computational_graph.build_computational_graph's DOT text
(checked by Graphviz's `dot` where it is installed)."""
import re
import shutil
import subprocess
from unittest import TestCase

import numpy as np
import pytest

from chainerc import Variable, Function, gradient_check
import chainerc.functions as F
import chainerc.computational_graph as c


class TestReLU(TestCase):
    # The seed's code, verbatim.
    def test_backward_cpu(self):
        x = Variable(np.random.randn(3, 2).astype(np.float32))
        y = F.relu(x)
        y.grad = np.random.randn(3, 2).astype(np.float32)
        y.backward()

        func = y.creator
        f = lambda: func.forward((x.data,))  # noqa: E731
        gx, = gradient_check.numerical_grad(f, (x.data,), (y.grad,))

        gradient_check.assert_allclose(gx, x.grad)


def _seed_check(x, y, inputs, atol=1e-4, rtol=1e-4):
    """The seed's idiom on y = func(x, ...): backward, then numerical_grad of
    func.forward; the graph's backward is unchanged afterwards."""
    y.grad = np.asarray(np.random.randn(*y.data.shape)).astype(y.data.dtype)
    y.backward()
    gx_graph = x.grad.copy()
    func = y.creator
    outs = func.forward(inputs)
    assert isinstance(outs, tuple) and len(outs) == 1
    np.testing.assert_array_equal(outs[0], y.data)
    gx, = gradient_check.numerical_grad(lambda: func.forward(inputs), (x.data,), (y.grad,))
    gradient_check.assert_allclose(gx, gx_graph, atol=atol, rtol=rtol)
    y.backward()
    np.testing.assert_allclose(x.grad, gx_graph, rtol=1e-12, atol=0)


def test_linear():
    lin = F.Linear(3, 2, bias=0.5)
    x = Variable(np.random.randn(4, 3).astype(np.float32))
    y = lin(x)
    _seed_check(x, y, (x.data,), atol=1e-3, rtol=1e-2)


def test_softmax_cross_entropy():
    x = Variable(np.random.randn(5, 4))
    t = Variable(np.array([0, 3, 1, 2, 3], dtype=np.int32))
    loss = F.softmax_cross_entropy(x, t)
    _seed_check(x, loss, (x.data, t.data), atol=1e-6, rtol=1e-5)


def test_convolution_and_pooling():
    conv = F.Convolution2D(2, 3, 3, pad=1)
    x = Variable(np.random.randn(2, 2, 5, 5).astype(np.float32))
    y = conv(x)
    _seed_check(x, y, (x.data,), atol=1e-2, rtol=1e-2)
    p = F.max_pooling_2d(y, 2)
    np.testing.assert_array_equal(p.creator.forward((y.data,))[0], p.data)


def test_mean_squared_error_and_tanh():
    x = Variable(np.random.randn(3, 4))
    h = F.tanh(x)
    _seed_check(x, h, (x.data,), atol=1e-6, rtol=1e-5)
    x2 = Variable(np.random.randn(3, 4))
    e = F.mean_squared_error(x2, Variable(np.zeros((3, 4))))
    _seed_check(x2, e, (x2.data, np.zeros((3, 4))), atol=1e-6, rtol=1e-5)


class Square(Function):
    def forward_cpu(self, inputs):
        self.x = inputs[0]
        return inputs[0] * inputs[0],

    def backward_cpu(self, inputs, grad_outputs):
        return 2 * self.x * grad_outputs[0],


def test_user_function():
    # The Function object must stay alive: forward runs it on a fresh application.
    sq = Square()
    x = Variable(np.random.randn(3, 3))
    y = sq(x)
    _seed_check(x, y, (x.data,), atol=1e-6, rtol=1e-5)
    # forward on other arrays runs on a fresh application: the node's own
    # saved x is untouched.
    other = np.full((3, 3), 7.0)
    np.testing.assert_array_equal(y.creator.forward((other,))[0], other * other)
    y.grad = np.ones((3, 3))
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * x.data)


def test_forward_errors_name_the_problem():
    x = Variable(np.random.randn(2, 2).astype(np.float32))
    y = F.relu(x)
    with pytest.raises(Exception, match="takes 1 input, got 2"):
        y.creator.forward((x.data, x.data))
    with pytest.raises(TypeError):
        y.creator.forward(x.data)
    d = F.dropout(x, 0.5, True)
    with pytest.raises(Exception, match="Dropout"):
        d.creator.forward((x.data,))


def _mlp():
    l1, l2 = F.Linear(3, 4), F.Linear(4, 2)
    x = Variable(np.random.randn(5, 3).astype(np.float32))
    t = Variable(np.array([0, 1, 1, 0, 1], dtype=np.int32))
    return F.softmax_cross_entropy(l2(F.relu(l1(x))), t), (l1, l2, x, t)


def test_build_computational_graph():
    loss, keep = _mlp()
    g = c.build_computational_graph((loss,), names=("loss",))
    dot = g.dump()
    assert dot.startswith("digraph graphname {")
    labels = re.findall(r'\[label="([^"]*)"', dot)
    assert sorted(l for l in labels if "\\n" not in l and "(" not in l) == \
        ["Linear", "Linear", "ReLU", "SoftmaxCrossEntropy"]
    assert "loss\\n(), float32" in labels
    assert "(5, 3), float32" in labels and "(5,), int32" in labels
    assert labels.count("(5, 4), float32") == 2
    assert "W\\n(4, 3), float32" in labels and "b\\n(2,), float32" in labels
    assert dot.count("shape=\"box\"") == 4 and dot.count("shape=\"oval\"") == 10
    assert dot.count("->") == 13
    assert loss.graph_dot(show_parameters=False).count("->") == 9
    with pytest.raises(Exception, match="sideways"):
        c.build_computational_graph(loss, rankdir="sideways")


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz not installed")
def test_graphviz_renders_it(tmp_path):
    loss, keep = _mlp()
    src = tmp_path / "g.dot"
    src.write_text(c.build_computational_graph(loss).dump())
    r = subprocess.run(["dot", "-Tplain", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sum(l.startswith("node ") for l in lines) == 14
    assert sum(l.startswith("edge ") for l in lines) == 13
    r = subprocess.run(["dot", "-Tsvg", str(src), "-o", str(tmp_path / "g.svg")])
    assert r.returncode == 0 and (tmp_path / "g.svg").read_text().lstrip().startswith("<")
