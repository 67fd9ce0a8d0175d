#!/usr/bin/env python3
"""The seed's "Define your own function" tutorial with chainerc: MulAdd and
ExpAdd written in Python (NumPy), run by the C engine through callbacks, and
checked with gradient_check. Only the import lines differ from Chainer's."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from chainerc import Variable, Function, cuda, gradient_check  # noqa: E402
import chainerc.functions as F  # noqa: E402


class MulAdd(Function):
    def forward_cpu(self, inputs):
        x, y, z = inputs
        w = x * y + z
        return w,

    def backward_cpu(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        gx = y * gw
        gy = x * gw
        gz = gw
        return gx, gy, gz


def muladd(x, y, z):
    return MulAdd()(x, y, z)


class ExpAdd(Function):
    def forward(self, inputs):
        xp = cuda.get_array_module(*inputs)
        x, y = inputs
        z = xp.exp(x) + xp.exp(y)
        return z,

    def backward(self, inputs, grad_outputs):
        xp = cuda.get_array_module(*inputs)
        x, y = inputs
        gz, = grad_outputs
        gx = gz * xp.exp(x)
        gy = gz * xp.exp(y)
        return gx, gy


def expadd(x, y):
    return ExpAdd()(x, y)


def main():
    np.random.seed(0)
    x = Variable(np.random.uniform(-1, 1, (3, 2)).astype(np.float32))
    y = Variable(np.random.uniform(-1, 1, (3, 2)).astype(np.float32))
    z = Variable(np.random.uniform(-1, 1, (3, 2)).astype(np.float32))
    w = muladd(x, y, z)
    print("w = x * y + z =\n", w.data)

    # Mix user and built-in functions in one graph; backward runs through both.
    loss = F.sum(expadd(w, x) * 0.5)
    loss.backward()
    print("loss =", float(loss.data))
    print("dloss/dx =\n", x.grad)

    # Gradient checks against numerical gradients (raise on mismatch).
    gy = np.random.uniform(-1, 1, (3, 2)).astype(np.float32)
    gradient_check.check_backward(MulAdd(), (x.data, y.data, z.data), gy, atol=1e-3, rtol=1e-3)
    gradient_check.check_backward(ExpAdd(), (x.data, y.data), gy, atol=1e-3, rtol=1e-3)

    # The seed's numerical_grad example.
    a = np.random.randn(4, 3).astype(np.float32)
    f = lambda: (a * a,)  # noqa: E731
    ga, = gradient_check.numerical_grad(f, (a,), (np.ones((4, 3), np.float32),))
    gradient_check.assert_allclose(ga, 2 * a, atol=1e-2, rtol=1e-2)
    print("gradient checks passed")


if __name__ == "__main__":
    main()
