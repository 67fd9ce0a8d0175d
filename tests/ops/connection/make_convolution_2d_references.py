#!/usr/bin/env python3
"""Generate convolution_2d_references.h: NumPy references for Convolution2D.

    python3 tests/ops/connection/make_convolution_2d_references.py

Inputs x, W, b and the upstream gradient gy are normal samples (fixed seeds),
rounded to the case's dtype. y, gx, gW and gb are computed in float64 by a
direct loop over the output positions of the zero-padded input (the
definition in the seed: correlation of W with the patch at
(oy * sy - ph, ox * sx - pw)), not by im2col.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from refgen_util import F32, F64, rand, write_header  # noqa: E402


def conv(x, W, b, s, p):
    n, c, h, w = x.shape
    o, _, kh, kw = W.shape
    sy, sx = s
    ph, pw = p
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + w] = x
    oh = (h + 2 * ph - kh) // sy + 1
    ow = (w + 2 * pw - kw) // sx + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw]
            y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, W)
    if b is not None:
        y += b[None, :, None, None]
    return y, xp


def conv_grad(x, W, gy, s, p):
    n, c, h, w = x.shape
    o, _, kh, kw = W.shape
    sy, sx = s
    ph, pw = p
    _, xp = conv(x, W, None, s, p)
    gxp = np.zeros_like(xp)
    gW = np.zeros_like(W)
    for i in range(gy.shape[2]):
        for j in range(gy.shape[3]):
            patch = xp[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw]
            gW += np.einsum("no,nckl->ockl", gy[:, :, i, j], patch)
            gxp[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw] += np.einsum(
                "no,ockl->nckl", gy[:, :, i, j], W)
    gx = gxp[:, :, ph:ph + h, pw:pw + w]
    gb = gy.sum(axis=(0, 2, 3))
    return gx, gW, gb


def main():
    rng = np.random.default_rng(20150609)
    specs = [
        # name, N, C, H, W, O, (kh, kw), (sy, sx), (ph, pw), nobias
        ("k3_s1_p0", 2, 3, 5, 6, 4, (3, 3), (1, 1), (0, 0), False),
        ("k3_s1_p1", 2, 2, 5, 5, 3, (3, 3), (1, 1), (1, 1), False),
        ("k2x3_s2x1_p1x2", 3, 2, 6, 5, 2, (2, 3), (2, 1), (1, 2), False),
        ("k3_s2_p1_nobias", 1, 3, 7, 6, 2, (3, 3), (2, 2), (1, 1), True),
        ("k1", 2, 4, 3, 3, 3, (1, 1), (1, 1), (0, 0), False),
        ("k5_mnist_like", 2, 1, 9, 8, 3, (5, 5), (1, 1), (0, 0), False),
        ("k3_s3_p2", 2, 2, 7, 8, 2, (3, 3), (3, 3), (2, 2), False),
    ]
    cases = []
    for dtype in (F64, F32):
        for name, n, c, h, w, o, k, s, p, nobias in specs:
            x = rand(rng, (n, c, h, w), dtype)
            W = rand(rng, (o, c) + k, dtype, 0.5)
            b = None if nobias else rand(rng, (o,), dtype)
            y, _ = conv(x, W, b, s, p)
            gy = rand(rng, y.shape, dtype)
            gx, gW, gb = conv_grad(x, W, gy, s, p)
            cases.append(dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype,
                              x=x, W=W, b=b, y=y, gy=gy, gx=gx, gW=gW,
                              gb=None if nobias else gb, kh=k[0], kw=k[1], sy=s[0], sx=s[1],
                              ph=p[0], pw=p[1], nobias=int(nobias)))
    fields = [("x", "tensor"), ("W", "tensor"), ("b", "tensor"), ("y", "tensor"),
              ("gy", "tensor"), ("gx", "tensor"), ("gW", "tensor"), ("gb", "tensor"),
              ("kh", "int"), ("kw", "int"), ("sy", "int"), ("sx", "int"), ("ph", "int"),
              ("pw", "int"), ("nobias", "int")]
    write_header(os.path.join(HERE, "convolution_2d_references.h"),
                 "tests/ops/connection/make_convolution_2d_references.py", "ref_conv2d",
                 fields, cases, "Direct-loop convolution in float64; see the script.")


if __name__ == "__main__":
    main()
