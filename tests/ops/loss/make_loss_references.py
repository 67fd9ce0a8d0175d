#!/usr/bin/env python3
"""Generate tests/ops/loss/loss_references.h: NumPy references for
softmax_cross_entropy and mean_squared_error, and tests/ops/evaluation/
accuracy_references.h for accuracy.

    python3 tests/ops/loss/make_loss_references.py

With numpy.random.default_rng(20261126), values rounded to the case's dtype:
softmax_cross_entropy: x ~ U(lo, hi) (N, C), t ~ integers [0, C) (int32);
y = mean(log(sum(exp(x - max))) + max - x[i, t[i]]) computed by NumPy in the
case's dtype; gy ~ N(0, 1) (0-d); gx = (softmax(x) - onehot(t)) * gy / N in
float64 (Chainer 1.0.1's backward). The large_* cases (|x| ~ 1000) check
stability and are not checked numerically.
mean_squared_error: x0, x1 ~ U(-2, 2); y = sum((x0 - x1)**2) / size in the
case's dtype; gx0 = 2 (x0 - x1) gy / size, gx1 = -gx0 in float64.
accuracy: y ~ U(-1, 1) (N, C) or with ties, t int32; y = mean(argmax(y, 1) ==
t) (NumPy's argmax: the first maximum), as a value of the case's dtype.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nn_refgen import F32, F64, NP, SKIP_NUMERICAL, Writer  # noqa: E402


def main():
    loss = Writer("loss", "tests/ops/loss/make_loss_references.py")
    acc = Writer("evaluation", "tests/ops/loss/make_loss_references.py")
    rng = np.random.default_rng(20261126)
    for dtype in (F64, F32):
        sfx = "f64" if dtype == F64 else "f32"
        T = NP[dtype]
        for name, n, c, lo, hi, flags in [("4x3", 4, 3, -2, 2, 0), ("1x1", 1, 1, -2, 2, 0), ("5x10", 5, 10, -3, 3, 0),
                                          ("large_3x4", 3, 4, 990, 1010, SKIP_NUMERICAL),
                                          ("large_spread_3x4", 3, 4, -1000, 1000, SKIP_NUMERICAL)]:
            x = rng.uniform(lo, hi, size=(n, c)).astype(T)
            t = rng.integers(0, c, size=n).astype(np.int32)
            m = x.max(axis=1)
            lse = np.log(np.exp(x - m[:, None]).sum(axis=1)) + m
            y = np.asarray((lse - x[np.arange(n), t]).mean(), dtype=T)
            gy = np.asarray(rng.standard_normal(), dtype=T)
            x64 = x.astype(np.float64)
            p = np.exp(x64 - x64.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(n), t] -= 1
            gx = p * float(gy) / n
            loss.add("softmax_cross_entropy", f"{name}_{sfx}", dtype, [x, t], y, gy, [gx, None], int_inputs=2,
                     flags=flags)
        for name, shape in [("3x4", (3, 4)), ("5", (5,)), ("2x2x3", (2, 2, 3))]:
            a = rng.uniform(-2, 2, size=shape).astype(T)
            b = rng.uniform(-2, 2, size=shape).astype(T)
            d = a - b
            y = np.asarray((d * d).sum() / T(d.size), dtype=T)
            gy = np.asarray(rng.standard_normal(), dtype=T)
            g0 = 2 * (a.astype(np.float64) - b.astype(np.float64)) * float(gy) / d.size
            loss.add("mean_squared_error", f"{name}_{sfx}", dtype, [a, b], y, gy, [g0, -g0])
        for name, n, c, ties in [("6x4", 6, 4, False), ("10x3", 10, 3, False), ("ties_5x3", 5, 3, True),
                                 ("1x1", 1, 1, False), ("2x3x2", 2, 6, False)]:
            y = rng.uniform(-1, 1, size=(n, c)).astype(T)
            if ties:
                y = rng.integers(0, 2, size=(n, c)).astype(T)
            t = rng.integers(0, c, size=n).astype(np.int32)
            if not ties:  # make about half of the predictions right
                right = rng.random(n) < 0.5
                t[right] = y.argmax(axis=1)[right]
            a = np.asarray((y.argmax(axis=1) == t).mean(), dtype=T)
            yy = y.reshape(2, 3, 2) if name == "2x3x2" else y
            acc.add("accuracy", f"{name}_{sfx}", dtype, [yy, t], a, int_inputs=2)
    loss.write(os.path.join(HERE, "loss_references.h"))
    acc.write(os.path.join(os.path.dirname(HERE), "evaluation", "accuracy_references.h"))


if __name__ == "__main__":
    main()
