#!/usr/bin/env python3
"""Generate max_pooling_2d_references.h and average_pooling_2d_references.h.

    python3 tests/ops/pooling/make_pooling_2d_references.py

Inputs: max pooling gets a random permutation of distinct values 0.05 apart
(so no window has ties and central differences with eps 1e-3 never cross a
maximum), average pooling normal samples; upstream gradients are normal
samples; all rounded to the case's dtype (fixed seeds). References are
computed in float64 by direct loops over the windows, as Chainer 1.0.1
defines them: max pooling pads with -inf (cover_all adds stride - 1 more
rows/columns at the end), takes the first maximum of each window and routes
gy there; average pooling pads with zeros and divides each window's sum by
kh * kw (no cover_all).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from refgen_util import F32, F64, NP, rand, write_header  # noqa: E402


def outsize(size, k, s, p, cover_all):
    if cover_all:
        return (size + 2 * p - k + s - 1) // s + 1
    return (size + 2 * p - k) // s + 1


def pool(x, gy_fn, k, s, p, cover_all, mode):
    n, c, h, w = x.shape
    kh, kw = k
    sy, sx = s
    ph, pw = p
    oh, ow = outsize(h, kh, sy, ph, cover_all), outsize(w, kw, sx, pw, cover_all)
    H = max(h + 2 * ph, (oh - 1) * sy + kh)
    W = max(w + 2 * pw, (ow - 1) * sx + kw)
    fill = -np.inf if mode == "max" else 0.0
    xp = np.full((n, c, H, W), fill)
    xp[:, :, ph:ph + h, pw:pw + w] = x
    y = np.zeros((n, c, oh, ow))
    arg = np.zeros((n, c, oh, ow, 2), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw]
            if mode == "max":
                flat = win.reshape(n, c, -1)
                a = flat.argmax(axis=2)
                y[:, :, i, j] = flat.max(axis=2)
                arg[:, :, i, j, 0] = i * sy + a // kw
                arg[:, :, i, j, 1] = j * sx + a % kw
            else:
                y[:, :, i, j] = win.sum(axis=(2, 3)) / (kh * kw)
    gy = gy_fn(y.shape)
    gxp = np.zeros_like(xp)
    for i in range(oh):
        for j in range(ow):
            if mode == "max":
                for a in range(n):
                    for b in range(c):
                        r, q = arg[a, b, i, j]
                        gxp[a, b, r, q] += gy[a, b, i, j]
            else:
                gxp[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw] += (
                    gy[:, :, i, j][:, :, None, None] / (kh * kw))
    gx = gxp[:, :, ph:ph + h, pw:pw + w]
    return y, gy, gx


def distinct(rng, shape, dtype):
    n = int(np.prod(shape))
    v = (rng.permutation(n) - n / 2) * 0.05
    return v.reshape(shape).astype(NP[dtype]).astype(np.float64)


def main():
    fields = [("x", "tensor"), ("y", "tensor"), ("gy", "tensor"), ("gx", "tensor"),
              ("kh", "int"), ("kw", "int"), ("sy", "int"), ("sx", "int"), ("ph", "int"),
              ("pw", "int"), ("cover_all", "int")]
    for mode in ("max", "average"):
        rng = np.random.default_rng(1234 if mode == "max" else 4321)
        specs = [
            # name, shape, k, s (0: = k), p, cover_all
            ("k2_s2", (2, 3, 6, 6), (2, 2), (0, 0), (0, 0), True),
            ("k2_s2_odd", (2, 2, 5, 7), (2, 2), (2, 2), (0, 0), True),
            ("k3_s1_p1", (2, 2, 5, 4), (3, 3), (1, 1), (1, 1), True),
            ("k3_s2_p1", (1, 3, 7, 6), (3, 3), (2, 2), (1, 1), True),
            ("k2x3_s1x2", (2, 2, 5, 7), (2, 3), (1, 2), (0, 1), True),
            ("k3_s2_nocover", (2, 2, 8, 7), (3, 3), (2, 2), (0, 0), False),
        ]
        cases = []
        for dtype in (F64, F32):
            for name, shape, k, s, p, cover in specs:
                if mode == "average":
                    cover = False  # average pooling has no cover_all mode
                s_eff = tuple(si if si > 0 else ki for si, ki in zip(s, k))
                x = distinct(rng, shape, dtype) if mode == "max" else rand(rng, shape, dtype)
                y, gy, gx = pool(x, lambda sh: rand(rng, sh, dtype), k, s_eff, p,
                                 cover, mode)
                cases.append(dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype,
                                  x=x, y=y, gy=gy, gx=gx, kh=k[0], kw=k[1], sy=s[0], sx=s[1],
                                  ph=p[0], pw=p[1], cover_all=int(cover)))
        op = f"{mode}_pooling_2d"
        write_header(os.path.join(HERE, f"{op}_references.h"),
                     "tests/ops/pooling/make_pooling_2d_references.py",
                     "ref_maxpool" if mode == "max" else "ref_avgpool", fields, cases,
                     "Direct window loops in float64; see the script.")


if __name__ == "__main__":
    main()
