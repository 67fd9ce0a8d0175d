#!/usr/bin/env python3
"""Generate tests/ops/activation/activation_references.h: NumPy references for
relu, leaky_relu, sigmoid, tanh, softmax and PReLU.

    python3 tests/ops/activation/make_activation_references.py

Inputs are drawn with numpy.random.default_rng(20261122) and rounded to the
case's dtype; relu / leaky_relu / PReLU inputs are kept at least 0.05 away
from 0 so that finite differences (eps <= 1e-3) do not cross the kink. y is
computed by NumPy in the case's dtype with Chainer 1.0.1's formulas:
relu max(0, x); leaky_relu x if x >= 0 else slope x; sigmoid 1 / (1 +
exp(-x)); tanh; softmax exp(x - max) / sum over axis 1; PReLU x if x >= 0
else W x with W reshaped to (1, *W.shape, 1, ...). gy is standard normal;
gx (and PReLU's gW, summed over the batch and trailing axes) are computed in
float64 from the analytic derivatives. The large_* softmax cases (values
near 1000) are not checked numerically (flag SKIP_NUMERICAL).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nn_refgen import F32, F64, NP, SKIP_NUMERICAL, Writer, away_from  # noqa: E402


def softmax(x):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def main():
    w = Writer("activation", "tests/ops/activation/make_activation_references.py")
    rng = np.random.default_rng(20261122)

    def draw(shape, dtype, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, size=shape).astype(NP[dtype])

    def gy_like(y, dtype):
        return rng.standard_normal(np.shape(y)).astype(NP[dtype])

    for dtype in (F64, F32):
        sfx = "f64" if dtype == F64 else "f32"
        T = NP[dtype]
        for shape in [(3, 4), (2, 3, 2), (5,)]:
            tag = "x".join(map(str, shape))
            x = away_from(draw(shape, dtype), [0.0], 0.05).astype(T)
            x64 = x.astype(np.float64)
            y = np.maximum(x, T(0))
            gy = gy_like(y, dtype)
            w.add("relu", f"{tag}_{sfx}", dtype, [x], y, gy, [gy.astype(np.float64) * (x64 > 0)])
            for slope in (0.2, 0.5):
                y = np.where(x >= 0, x, x * T(slope)).astype(T)
                gx = gy.astype(np.float64) * np.where(x64 >= 0, 1.0, float(T(slope)))
                w.add("leaky_relu", f"{tag}_slope{int(slope * 10)}_{sfx}", dtype, [x], y, gy, [gx], s0=slope)
            xs = draw(shape, dtype, -4.0, 4.0)
            y = (T(1) / (T(1) + np.exp(-xs))).astype(T)
            y64 = 1.0 / (1.0 + np.exp(-xs.astype(np.float64)))
            gy = gy_like(y, dtype)
            w.add("sigmoid", f"{tag}_{sfx}", dtype, [xs], y, gy, [gy * y64 * (1 - y64)])
            y = np.tanh(xs).astype(T)
            y64 = np.tanh(xs.astype(np.float64))
            w.add("tanh", f"{tag}_{sfx}", dtype, [xs], y, gy, [gy * (1 - y64 * y64)])

        for name, shape, lo, hi, flags in [("3x5", (3, 5), -2, 2, 0), ("1x1", (1, 1), -2, 2, 0),
                                           ("2x4x3", (2, 4, 3), -2, 2, 0), ("4x10", (4, 10), -5, 5, 0),
                                           ("large_2x3", (2, 3), 995, 1005, SKIP_NUMERICAL),
                                           ("large_neg_2x3", (2, 3), -1005, -995, SKIP_NUMERICAL)]:
            x = draw(shape, dtype, lo, hi)
            y = softmax(x).astype(T)
            y64 = softmax(x.astype(np.float64))
            gy = gy_like(y, dtype).astype(np.float64)
            gx = y64 * (gy - (gy * y64).sum(axis=1, keepdims=True))
            w.add("softmax", f"{name}_{sfx}", dtype, [x], y, gy.astype(T), [gx], flags=flags)

        for name, wshape, xshape in [("scalar_3x4", (), (3, 4)), ("c3_2x3x4", (3,), (2, 3, 4)),
                                     ("c3_4x3", (3,), (4, 3)), ("c2x3_2x2x3", (2, 3), (2, 2, 3)),
                                     ("c2_3x2x2x2", (2,), (3, 2, 2, 2))]:
            x = away_from(draw(xshape, dtype), [0.0], 0.05).astype(T)
            W = rng.uniform(0.05, 0.5, size=wshape).astype(T)
            bshape = (1,) + wshape + (1,) * (len(xshape) - len(wshape) - 1)
            Wb = W.reshape(bshape)
            y = np.where(x >= 0, x, Wb * x).astype(T)
            gy = gy_like(y, dtype)
            x64, g64, W64 = x.astype(np.float64), gy.astype(np.float64), Wb.astype(np.float64)
            gx = np.where(x64 >= 0, g64, W64 * g64)
            axes = (0,) + tuple(range(1 + len(wshape), len(xshape)))
            gW = np.where(x64 < 0, x64 * g64, 0.0).sum(axis=axes).reshape(wshape)
            w.add("prelu", f"{name}_{sfx}", dtype, [x], y, gy, [gx], params=[W], gparams=[gW])

    w.write(os.path.join(HERE, "activation_references.h"))


if __name__ == "__main__":
    main()
