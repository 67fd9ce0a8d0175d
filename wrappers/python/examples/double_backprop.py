"""Gradients of gradients in Python: a Hessian-vector product of a small MLP
checked against finite differences of gradients, and a WGAN-GP-style
gradient penalty for a critic trained a few steps (the penalty falls).
Run: python3 examples/double_backprop.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import chainerc  # noqa: E402
from chainerc import Variable  # noqa: E402
import chainerc.functions as F  # noqa: E402

X = np.array([[0.5, -0.2], [-0.7, 0.4], [0.1, 0.9]])
W2 = np.array([[0.8], [-0.6], [0.4], [1.1]])


def critic(x, W):
    return F.sum(F.matmul(F.tanh(F.matmul(x, W)), Variable(W2)))


def hessian_vector_product(w, v):
    W = Variable(w)
    g, = chainerc.grad([critic(Variable(X), W)], [W], enable_double_backprop=True)
    hv, = chainerc.grad([F.sum(g * Variable(v))], [W])
    return hv.data


def gradient(w):
    W = Variable(w)
    g, = chainerc.grad([critic(Variable(X), W)], [W])
    return g.data


def penalty(W):
    x = Variable(X)
    g, = chainerc.grad([critic(x, W)], [x], enable_double_backprop=True)
    norm = F.sum(g * g, axis=1) ** 0.5
    return F.sum((norm - 1.0) * (norm - 1.0)) / float(X.shape[0])


def main():
    w = np.linspace(-0.9, 0.85, 8).reshape(2, 4)
    v = np.linspace(0.3, -0.19, 8).reshape(2, 4)
    e = 1e-5
    fd = (gradient(w + e * v) - gradient(w - e * v)) / (2 * e)
    worst = np.abs(hessian_vector_product(w, v) - fd).max()
    print("Hessian-vector product: largest difference from finite differences %.2e" % worst)
    assert worst < 1e-6
    first = None
    for step in range(31):
        W = Variable(w)
        p = penalty(W)
        p.backward()
        w = w - 0.2 * W.grad
        first = float(p.data) if first is None else first
        if step % 10 == 0:
            print("step %2d: gradient penalty %.6f" % (step, float(p.data)))
    assert float(p.data) < 0.5 * first
    print("double backprop example passed")


if __name__ == "__main__":
    main()
