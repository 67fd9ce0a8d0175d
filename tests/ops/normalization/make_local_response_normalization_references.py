#!/usr/bin/env python3
"""Generate local_response_normalization_references.h.

    python3 tests/ops/normalization/make_local_response_normalization_references.py

x and gy are normal samples (fixed seed) rounded to the case's dtype. In
float64: y_i = x_i / (k + alpha * sum_{j in N(i)} x_j^2)^beta over the
channels N(i) = [i - n//2, i + n//2] clipped (Chainer 1.0.1), by a loop over
channels; gx from the Jacobian written out element by element:
gx_m = gy_m u_m^-beta - 2 alpha beta x_m sum_{i : m in N(i)} gy_i x_i u_i^(-beta-1).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from refgen_util import F32, F64, rand, write_header  # noqa: E402


def lrn(x, gy, n, k, alpha, beta):
    C = x.shape[1]
    half = n // 2
    u = np.zeros_like(x)
    for i in range(C):
        lo, hi = max(0, i - half), min(C - 1, i + half)
        u[:, i] = k + alpha * (x[:, lo:hi + 1] ** 2).sum(axis=1)
    y = x * u ** -beta
    gx = gy * u ** -beta
    for m in range(C):
        acc = np.zeros_like(x[:, m])
        for i in range(C):
            if abs(i - m) <= half:
                acc += gy[:, i] * x[:, i] * u[:, i] ** (-beta - 1)
        gx[:, m] -= 2 * alpha * beta * x[:, m] * acc
    return y, gx


def main():
    rng = np.random.default_rng(777)
    specs = [
        # name, shape, n, k, alpha, beta
        ("defaults", (2, 7, 3, 2), 5, 2.0, 1e-4, 0.75),
        ("strong", (2, 6, 2, 3), 3, 1.0, 0.5, 0.75),
        ("even_n", (3, 5, 2, 2), 4, 1.5, 0.3, 0.6),
        ("rank2", (4, 6), 5, 2.0, 0.2, 1.0),
        ("wide_window", (1, 3, 2, 2), 9, 1.0, 0.4, 0.5),
    ]
    cases = []
    for dtype in (F64, F32):
        for name, shape, n, k, alpha, beta in specs:
            x = rand(rng, shape, dtype)
            gy = rand(rng, shape, dtype)
            y, gx = lrn(x, gy, n, k, alpha, beta)
            cases.append(dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype,
                              x=x, y=y, gy=gy, gx=gx, n=n, k=k, alpha=alpha, beta=beta))
    fields = [("x", "tensor"), ("y", "tensor"), ("gy", "tensor"), ("gx", "tensor"),
              ("n", "int"), ("k", "double"), ("alpha", "double"), ("beta", "double")]
    write_header(os.path.join(HERE, "local_response_normalization_references.h"),
                 "tests/ops/normalization/make_local_response_normalization_references.py",
                 "ref_lrn", fields, cases, "Channel loops in float64; see the script.")


if __name__ == "__main__":
    main()
