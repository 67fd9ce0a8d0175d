#!/usr/bin/env python3
"""Generate tests/ops/connection/connection_references.h: NumPy references
for Linear.

    python3 tests/ops/connection/make_connection_references.py

For each case, with numpy.random.default_rng(20261123): x ~ U(-2, 2) of shape
(N, ...), W ~ U(-1, 1) of shape (out, in), b ~ U(-1, 1) (absent with nobias,
i0 = 1), all rounded to the case's dtype; y = x.reshape(N, -1) @ W.T + b
computed by NumPy in the case's dtype (Chainer 1.0.1's Linear.forward);
gy ~ N(0, 1); in float64: gx = (gy @ W).reshape(x.shape), gW = gy.T @ x2,
gb = gy.sum(0) (Chainer's backward, accumulated from zero).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nn_refgen import F32, F64, NP, Writer  # noqa: E402


def main():
    w = Writer("connection", "tests/ops/connection/make_connection_references.py")
    rng = np.random.default_rng(20261123)
    for dtype in (F64, F32):
        sfx = "f64" if dtype == F64 else "f32"
        T = NP[dtype]
        for name, xshape, out, nobias in [("4x3_to_2", (4, 3), 2, False), ("1x5_to_3", (1, 5), 3, False),
                                          ("3x4_to_5_nobias", (3, 4), 5, True),
                                          ("2x3x2x2_to_4", (2, 3, 2, 2), 4, False),
                                          ("6x7_to_1", (6, 7), 1, False)]:
            n = xshape[0]
            insize = int(np.prod(xshape[1:]))
            x = rng.uniform(-2, 2, size=xshape).astype(T)
            W = rng.uniform(-1, 1, size=(out, insize)).astype(T)
            b = None if nobias else rng.uniform(-1, 1, size=(out,)).astype(T)
            x2 = x.reshape(n, -1)
            y = x2 @ W.T
            if b is not None:
                y = y + b
            y = y.astype(T)
            gy = rng.standard_normal((n, out)).astype(T)
            g64, W64, x64 = gy.astype(np.float64), W.astype(np.float64), x2.astype(np.float64)
            gx = (g64 @ W64).reshape(xshape)
            params = [W] if b is None else [W, b]
            gparams = [g64.T @ x64] + ([] if b is None else [g64.sum(axis=0)])
            w.add("linear", f"{name}_{sfx}", dtype, [x], y, gy, [gx], params=params, gparams=gparams,
                  i0=int(nobias))
    w.write(os.path.join(HERE, "connection_references.h"))


if __name__ == "__main__":
    main()
