#!/usr/bin/env python3
"""Generate tests/ops/math/matmul_references.h: Chainer 7 / NumPy references
for matmul and batch_matmul.

    PYTHONPATH=/work/venvs/CH7 /work/venvs/ch7/bin/python \
        tests/ops/math/make_matmul_references.py

With numpy.random.default_rng(20261125): a, b ~ U(-2, 2) rounded to the
case's dtype, stored already transposed where transa (i0) / transb (i1) is
set. matmul follows Chainer 7's F.matmul (NumPy's matmul rules: a 1-D a is a
row, a 1-D b a column, the added axis dropped; N-d operands broadcast over
their leading axes; transa / transb ignored for 1-D operands): y is Chainer
7's forward in the case's dtype, ga and gb its backward in float64 for
gy ~ N(0, 1). batch_matmul (Chainer 1's; 2-D operands are batches of column
vectors (B, n, 1)): y = op(a) @ op(b) by NumPy, ga = gy @ op(b).T and
gb = op(a).T @ gy in float64, transposed back to the stored layout.
"""

import os
import sys

import chainer
import chainer.functions as F
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nn_refgen import F32, F64, NP, Writer  # noqa: E402


def tr(m):
    return np.swapaxes(m, -1, -2)


def main():
    w = Writer("matmul", "tests/ops/math/make_matmul_references.py")
    rng = np.random.default_rng(20261125)
    for dtype in (F64, F32):
        sfx = "f64" if dtype == F64 else "f32"
        T = NP[dtype]
        for op, batched, cases in [
            ("matmul", False, [("3x4_4x2", (3, 4), (4, 2), 0, 0), ("ta_4x3_4x2", (4, 3), (4, 2), 1, 0),
                               ("tb_3x4_2x4", (3, 4), (2, 4), 0, 1), ("tab_4x3_2x4", (4, 3), (2, 4), 1, 1),
                               ("vec_4_4x2", (4,), (4, 2), 0, 0), ("vec_ta_3_3", (3,), (3,), 1, 0),
                               ("mat_vec_3x4_4", (3, 4), (4,), 0, 0),
                               ("vec_tb_4_2x4", (4,), (2, 4), 0, 1),
                               ("1x1_1x5", (1, 1), (1, 5), 0, 0), ("5x7_7x6", (5, 7), (7, 6), 0, 0),
                               ("nd_2x3x4_4x5", (2, 3, 4), (4, 5), 0, 0),
                               ("nd_2x1x3x4_3x4x2", (2, 1, 3, 4), (3, 4, 2), 0, 0),
                               ("nd_tab_2x4x3_1x2x4", (2, 4, 3), (1, 2, 4), 1, 1),
                               ("nd_vec_2x3x4_4", (2, 3, 4), (4,), 0, 0),
                               ("nd_vec_3_2x3x4", (3,), (2, 3, 4), 0, 0)]),
            ("batch_matmul", True, [("2x3x4_2x4x5", (2, 3, 4), (2, 4, 5), 0, 0),
                                    ("ta_2x4x3_2x4x5", (2, 4, 3), (2, 4, 5), 1, 0),
                                    ("tb_2x3x4_2x5x4", (2, 3, 4), (2, 5, 4), 0, 1),
                                    ("tab_3x4x3_3x2x4", (3, 4, 3), (3, 2, 4), 1, 1),
                                    ("vec_2x3_2x1x4", (2, 3), (2, 1, 4), 0, 0),
                                    ("vec_ta_2x3_2x3", (2, 3), (2, 3), 1, 0)])]:
            for name, sa, sb, ta, tb in cases:
                a = rng.uniform(-2, 2, size=sa).astype(T)
                b = rng.uniform(-2, 2, size=sb).astype(T)
                if not batched:  # Chainer 7's F.matmul
                    va, vb = chainer.Variable(a), chainer.Variable(b)
                    y = F.matmul(va, vb, transa=bool(ta), transb=bool(tb)).array.astype(T)
                    gy = rng.standard_normal(y.shape).astype(T)
                    va64 = chainer.Variable(a.astype(np.float64))
                    vb64 = chainer.Variable(b.astype(np.float64))
                    y64 = F.matmul(va64, vb64, transa=bool(ta), transb=bool(tb))
                    ga, gb = chainer.grad([y64], [va64, vb64],
                                          [chainer.Variable(gy.astype(np.float64))])
                    w.add(op, f"{name}_{sfx}", dtype, [a, b], y, gy, [ga.array, gb.array],
                          i0=ta, i1=tb)
                    continue
                if batched:
                    am = a.reshape(a.shape + (1,)) if a.ndim == 2 else a
                    bm = b.reshape(b.shape + (1,)) if b.ndim == 2 else b
                else:
                    am = a.reshape(-1, 1) if a.ndim == 1 else a
                    bm = b.reshape(-1, 1) if b.ndim == 1 else b
                opa = tr(am) if ta else am
                opb = tr(bm) if tb else bm
                y = (opa @ opb).astype(T)
                gy = rng.standard_normal(y.shape).astype(T)
                g64 = gy.astype(np.float64)
                ga = g64 @ tr(opb.astype(np.float64))
                gb = tr(opa.astype(np.float64)) @ g64
                ga = (tr(ga) if ta else ga).reshape(sa)
                gb = (tr(gb) if tb else gb).reshape(sb)
                w.add(op, f"{name}_{sfx}", dtype, [a, b], y, gy, [ga, gb], i0=ta, i1=tb)
    w.write(os.path.join(HERE, "matmul_references.h"))


if __name__ == "__main__":
    main()
