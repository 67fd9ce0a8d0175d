#!/usr/bin/env python3
"""Generate tests/ops/array/nn_array_references.h: NumPy references for
transpose and concat.

    python3 tests/ops/array/make_nn_array_references.py

With numpy.random.default_rng(20261124): inputs ~ U(-2, 2) rounded to the
case's dtype; transpose: y = numpy.transpose(x, axes) (axes absent: reversed),
gx = numpy.transpose(gy, numpy.argsort(axes)); concat: y =
numpy.concatenate(xs, axis), gx = the pieces of gy from numpy.split at the
inputs' offsets. gy ~ N(0, 1). The values move without arithmetic, so
they are exact in both dtypes.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nn_refgen import F32, F64, NP, Writer  # noqa: E402


def main():
    w = Writer("nn_array", "tests/ops/array/make_nn_array_references.py")
    rng = np.random.default_rng(20261124)
    for dtype in (F64, F32):
        sfx = "f64" if dtype == F64 else "f32"
        T = NP[dtype]
        for name, shape, axes in [("2x3_reverse", (2, 3), None), ("2x3x4_reverse", (2, 3, 4), None),
                                  ("2x3x4_102", (2, 3, 4), [1, 0, 2]), ("2x3x4_201", (2, 3, 4), [2, 0, 1]),
                                  ("2x3x4_neg", (2, 3, 4), [-1, 0, -2]), ("5_reverse", (5,), None),
                                  ("2x1x3x2_3120", (2, 1, 3, 2), [3, 1, 2, 0]), ("0d", (), None)]:
            x = rng.uniform(-2, 2, size=shape).astype(T)
            y = np.transpose(x, axes)
            gy = rng.standard_normal(y.shape).astype(T)
            norm = list(range(x.ndim))[::-1] if axes is None else [a % x.ndim for a in axes]
            gx = np.transpose(gy, np.argsort(norm))
            w.add("transpose", f"{name}_{sfx}", dtype, [x], y, gy, [gx], i0=int(axes is not None),
                  ints=axes if axes is not None else None)
        for name, shapes, axis in [("2x3_2x2_axis1", [(2, 3), (2, 2)], 1), ("three_axis0", [(1, 3), (2, 3), (3, 3)], 0),
                                   ("2x2x3_2x1x3_axis1", [(2, 2, 3), (2, 1, 3)], 1),
                                   ("axis_neg1", [(2, 2, 1), (2, 2, 3), (2, 2, 2)], -1),
                                   ("one_input", [(3, 4)], 1), ("empty_piece", [(2, 0), (2, 3)], 1)]:
            xs = [rng.uniform(-2, 2, size=s).astype(T) for s in shapes]
            y = np.concatenate(xs, axis=axis)
            gy = rng.standard_normal(y.shape).astype(T)
            offsets = np.cumsum([x.shape[axis] for x in xs])[:-1]
            gxs = np.split(gy, offsets, axis=axis)
            w.add("concat", f"{name}_{sfx}", dtype, xs, y, gy, gxs, i0=axis)
    w.write(os.path.join(HERE, "nn_array_references.h"))


if __name__ == "__main__":
    main()
