#!/usr/bin/env python3
"""Generate inception_references.h: NumPy references for Inception.

    python3 tests/ops/connection/make_inception_references.py

The module is composed in float64 from the direct-loop convolution of
make_convolution_2d_references.py and the window-loop max pooling of
../pooling/make_pooling_2d_references.py, as Chainer 1.0.1 defines it:
y = relu(concat(conv1(x), conv3(relu(proj3(x))), conv5(relu(proj5(x))),
projp(max_pool(x, 3, stride 1, pad 1)))). Gradients go back through the same
pieces (relu' = [pre-activation > 0]). x is a permutation of distinct values
(no ties in pooling windows); the parameters and gy are normal samples; all
rounded to the case's dtype. Seeds are advanced until every pre-activation of
a relu is at least 0.02 away from 0, so central differences never cross a kink.
Parameters are listed in the module's order (conv1/W, conv1/b, conv3/W, ...).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pooling"))
from make_convolution_2d_references import conv, conv_grad  # noqa: E402
from make_pooling_2d_references import distinct, pool  # noqa: E402
from refgen_util import F32, F64, rand, write_header  # noqa: E402

NAMES = ["conv1", "conv3", "conv5", "proj3", "proj5", "projp"]


def inception(x, P, gy_fn, sizes):
    i, out1, proj3, out3, proj5, out5, projp = sizes
    one, pad0 = (1, 1), (0, 0)
    o1, _ = conv(x, *P["conv1"], one, pad0)
    a3, _ = conv(x, *P["proj3"], one, pad0)
    r3 = np.maximum(a3, 0)
    o3, _ = conv(r3, *P["conv3"], one, (1, 1))
    a5, _ = conv(x, *P["proj5"], one, pad0)
    r5 = np.maximum(a5, 0)
    o5, _ = conv(r5, *P["conv5"], one, (2, 2))
    mp, _, _ = pool(x, lambda s: np.zeros(s), (3, 3), one, (1, 1), True, "max")
    op, _ = conv(mp, *P["projp"], one, pad0)
    cat = np.concatenate([o1, o3, o5, op], axis=1)
    y = np.maximum(cat, 0)
    pre = np.concatenate([a3.ravel(), a5.ravel(), cat.ravel()])
    gy = gy_fn(y.shape)
    gcat = gy * (cat > 0)
    g1, g3, g5, gp = np.split(gcat, np.cumsum([out1, out3, out5])[:3], axis=1)
    grads = {}
    gx1, grads["conv1W"], grads["conv1b"] = conv_grad(x, P["conv1"][0], g1, one, pad0)
    gr3, grads["conv3W"], grads["conv3b"] = conv_grad(r3, P["conv3"][0], g3, one, (1, 1))
    gx3, grads["proj3W"], grads["proj3b"] = conv_grad(x, P["proj3"][0], gr3 * (a3 > 0), one, pad0)
    gr5, grads["conv5W"], grads["conv5b"] = conv_grad(r5, P["conv5"][0], g5, one, (2, 2))
    gx5, grads["proj5W"], grads["proj5b"] = conv_grad(x, P["proj5"][0], gr5 * (a5 > 0), one, pad0)
    gmp, grads["projpW"], grads["projpb"] = conv_grad(mp, P["projp"][0], gp, one, pad0)
    _, _, gxp = pool(x, lambda s: gmp, (3, 3), one, (1, 1), True, "max")
    gx = gx1 + gx3 + gx5 + gxp
    return y, gy, gx, grads, np.abs(pre).min()


def main():
    fields = [("x", "tensor"), ("y", "tensor"), ("gy", "tensor"), ("gx", "tensor")]
    for n in NAMES:
        fields += [(f"{n}_W", "tensor"), (f"{n}_b", "tensor"), (f"{n}_gW", "tensor"),
                   (f"{n}_gb", "tensor")]
    fields += [("in_channels", "int"), ("out1", "int"), ("proj3", "int"), ("out3", "int"),
               ("proj5", "int"), ("out5", "int"), ("proj_pool", "int")]
    specs = [
        # name, x shape, (in, out1, proj3, out3, proj5, out5, proj_pool)
        ("small", (2, 3, 5, 4), (3, 2, 2, 3, 2, 2, 2)),
        ("tiny_image", (1, 2, 3, 3), (2, 1, 3, 2, 2, 1, 3)),
    ]
    cases = []
    seed = 31
    for dtype in (F64, F32):
        for name, shape, sizes in specs:
            while True:
                rng = np.random.default_rng(seed)
                seed += 1
                x = distinct(rng, shape, dtype)
                i, out1, proj3, out3, proj5, out5, projp = sizes
                dims = {"conv1": (out1, i, 1), "conv3": (out3, proj3, 3), "conv5": (out5, proj5, 5),
                        "proj3": (proj3, i, 1), "proj5": (proj5, i, 1), "projp": (projp, i, 1)}
                P = {k: (rand(rng, (o, c, kk, kk), dtype, 0.5), rand(rng, (o,), dtype, 0.5))
                     for k, (o, c, kk) in dims.items()}
                y, gy, gx, grads, gap = inception(x, P, lambda s: rand(rng, s, dtype), sizes)
                if gap >= 0.02:
                    break
            case = dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype, x=x, y=y,
                        gy=gy, gx=gx, in_channels=sizes[0], out1=sizes[1], proj3=sizes[2],
                        out3=sizes[3], proj5=sizes[4], out5=sizes[5], proj_pool=sizes[6])
            for k in NAMES:
                case[f"{k}_W"], case[f"{k}_b"] = P[k]
                case[f"{k}_gW"], case[f"{k}_gb"] = grads[k + "W"], grads[k + "b"]
            cases.append(case)
    write_header(os.path.join(HERE, "inception_references.h"),
                 "tests/ops/connection/make_inception_references.py", "ref_inception", fields,
                 cases, "Composed from direct loops in float64; see the script.")


if __name__ == "__main__":
    main()
