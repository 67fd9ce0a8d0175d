#!/usr/bin/env python3
"""Checks, with NumPy alone, an .npz that tests/train/test_serializers.cpp wrote.

    check_npz_numpy.py MODEL.npz... [--optimizer OPT.npz...]

MODEL files hold a function set's parameters, OPT files a MomentumSGD state
of the same model after one update (test ReadableByNumPy).

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


def check_optimizer(path, want):
    with np.load(path) as f:
        files = {k: f[k] for k in f.files}
    keys = {"t", "epoch"} | {k + "/t" for k in want} | {k + "/v" for k in want}
    if set(files) != keys:
        fail(f"{path}: keys {sorted(files)} != {sorted(keys)}")
    if files["t"].dtype != np.int64 or files["t"].shape != () or int(files["t"]) != 1:
        fail(f"{path}: t is {files['t']!r}")
    for k, w in want.items():
        v = files[k + "/v"]
        if v.dtype != w.dtype or v.shape != w.shape:
            fail(f"{path}: {k}/v is {v.dtype} {v.shape}, expected {w.dtype} {w.shape}")


def check_model(path, want):
    with np.load(path) as f:
        files = {k: f[k] for k in f.files}
    if set(files) != set(want):
        fail(f"{path}: keys {sorted(files)} != {sorted(want)}")
    for k, w in want.items():
        a = files[k]
        if a.dtype != w.dtype or a.shape != w.shape or not np.array_equal(a, w):
            fail(f"{path}: {k}: got {a.dtype} {a.shape} {a.ravel()[:4]}, "
                 f"expected {w.dtype} {w.shape} {w.ravel()[:4]}")
        if not a.flags.c_contiguous:
            fail(f"{path}: {k} is not C-ordered")


def main(argv):
    want = expected_model()
    optimizer = False
    checked = 0
    for arg in argv:
        if arg == "--optimizer":
            optimizer = True
            continue
        (check_optimizer if optimizer else check_model)(arg, want)
        checked += 1
    if not checked:
        fail("no file given")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
