#!/usr/bin/env python3
"""Checks, with NumPy alone, an .npz that tests/train/test_serializers.cpp wrote.

    check_npz_numpy.py PATH              # a function set (ReadableByNumPy)
    check_npz_numpy.py --optimizer PATH  # a MomentumSGD state of the same model

The model is make_mlp(float32) with a nested make_mlp(float64) as "enc"; the
values are recomputed here exactly as tests/train/train_test_util.h's
make_linear makes them (W = (start + arange) * scale, b = -1, -2, ...).
Exits non-zero with a message on any difference.
"""
import sys

import numpy as np


def linear(dtype, n_in, n_out, start, scale):
    w = ((start + np.arange(n_in * n_out, dtype=np.float64)) * scale).astype(dtype).reshape(n_out, n_in)
    b = (-1.0 - np.arange(n_out, dtype=np.float64)).astype(dtype)
    return w, b


def expected_model():
    out = {}
    for prefix, dtype in (("", np.float32), ("enc/", np.float64)):
        w1, b1 = linear(dtype, 4, 3, 0, 0.5)
        w2, b2 = linear(dtype, 3, 2, 10, 0.25)
        out.update({prefix + "l1/W": w1, prefix + "l1/b": b1, prefix + "l2/W": w2, prefix + "l2/b": b2})
    return out


def fail(msg):
    print("check_npz_numpy.py: " + msg, file=sys.stderr)
    sys.exit(1)


def main(argv):
    optimizer = argv[:1] == ["--optimizer"]
    path = argv[-1]
    with np.load(path) as f:
        files = {k: f[k] for k in f.files}
    want = expected_model()
    if optimizer:
        keys = {"t", "epoch"} | {k + "/t" for k in want} | {k + "/v" for k in want}
        if set(files) != keys:
            fail(f"keys {sorted(files)} != {sorted(keys)}")
        if files["t"].dtype != np.int64 or files["t"].shape != () or int(files["t"]) != 1:
            fail(f"t is {files['t']!r}")
        for k, w in want.items():
            v = files[k + "/v"]
            if v.dtype != w.dtype or v.shape != w.shape:
                fail(f"{k}/v is {v.dtype} {v.shape}, expected {w.dtype} {w.shape}")
        return 0
    if set(files) != set(want):
        fail(f"keys {sorted(files)} != {sorted(want)}")
    for k, w in want.items():
        a = files[k]
        if a.dtype != w.dtype or a.shape != w.shape or not np.array_equal(a, w):
            fail(f"{k}: got {a.dtype} {a.shape} {a.ravel()[:4]}, expected {w.dtype} {w.shape} {w.ravel()[:4]}")
        if not a.flags.c_contiguous:
            fail(f"{k} is not C-ordered")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
