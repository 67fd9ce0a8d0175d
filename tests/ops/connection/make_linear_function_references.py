#!/usr/bin/env python3
"""Generate linear_function_references.h: Chainer 7's F.linear(x, W, b,
n_batch_axes) and its gradients.

    PYTHONPATH=/work/venvs/CH7 /work/venvs/ch7/bin/python \\
        tests/ops/connection/make_linear_function_references.py

Inputs are samples (fixed seed) rounded to the case's dtype; Chainer runs each
case in its dtype. y is the output, gx / gW / gb the gradients for the
upstream gradient gy (b empty: b=None).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from refgen_util import F32, F64, NP, rand, write_header  # noqa: E402


def main():
    import chainer
    import chainer.functions as F

    rng = np.random.default_rng(7)
    specs = [
        # name, x shape, W shape, bias, n_batch_axes
        ("mat", (3, 4), (2, 4), True, 1),
        ("btc", (2, 3, 4), (5, 4), True, 2),
        ("flatten", (2, 3, 2), (3, 6), True, 1),
        ("nobias", (4, 3), (2, 3), False, 1),
        ("nobias_btc", (2, 2, 3), (4, 3), False, 2),
    ]
    cases = []
    for dtype in (F64, F32):
        dt = NP[dtype]
        for name, xs, ws, bias, nba in specs:
            x = rand(rng, xs, dtype)
            W = rand(rng, ws, dtype)
            b = rand(rng, (ws[0],), dtype) if bias else None
            xv, Wv = chainer.Variable(x.astype(dt)), chainer.Variable(W.astype(dt))
            bv = chainer.Variable(b.astype(dt)) if bias else None
            y = F.linear(xv, Wv, bv, n_batch_axes=nba)
            gy = rand(rng, y.shape, dtype)
            y.grad = gy.astype(dt)
            y.backward()
            cases.append(dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype,
                              x=x, W=W, b=b, gy=gy, y=y.array.astype(np.float64),
                              gx=xv.grad.astype(np.float64), gW=Wv.grad.astype(np.float64),
                              gb=bv.grad.astype(np.float64) if bias else None,
                              n_batch_axes=nba))
    fields = [("x", "tensor"), ("W", "tensor"), ("b", "tensor"), ("gy", "tensor"),
              ("y", "tensor"), ("gx", "tensor"), ("gW", "tensor"), ("gb", "tensor"),
              ("n_batch_axes", "int")]
    write_header(os.path.join(HERE, "linear_function_references.h"),
                 "tests/ops/connection/make_linear_function_references.py", "ref_linear_fn",
                 fields, cases, f"Chainer {chainer.__version__}'s F.linear; see the script.")


if __name__ == "__main__":
    main()
