#!/usr/bin/env python3
"""Generate row_normalization_references.h: layer_normalization and
group_normalization by Chainer 7, rms_normalization by PyTorch.

    PYTHONPATH=/work/venvs/CH7 /work/venvs/ch7/bin/python \\
        tests/ops/normalization/make_row_normalization_references.py \\
        --torch /work/venvs/torch/bin/python

Chainer 7 (chainer.functions.layer_normalization, group_normalization) runs in
this interpreter; PyTorch's torch.nn.functional.rms_norm runs in the
interpreter given by --torch (a subprocess reading and writing JSON). Inputs
are samples (fixed seed) rounded to the case's dtype; each case's forward and
backward run in that dtype (float32 cases: Chainer's / PyTorch's float32
values). y is the output, gx / ggamma / gbeta the gradients of x, gamma and
beta for the upstream gradient gy. Chainer 7's layer_normalization takes
(N, C) only: an N-d case (..., C) is computed on x reshaped to (-1, C).
fn: 0 layer_normalization, 1 rms_normalization, 2 group_normalization.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from refgen_util import F32, F64, NP, rand, write_header  # noqa: E402

TORCH_RMS = r"""
import json, sys, torch
out = []
for c in json.load(sys.stdin):
    dt = {"f32": torch.float32, "f64": torch.float64}[c["dt"]]
    x = torch.tensor(c["x"], dtype=dt).reshape(c["xs"]).requires_grad_()
    g = torch.tensor(c["gamma"], dtype=dt).requires_grad_()
    y = torch.nn.functional.rms_norm(x, (g.shape[0],), weight=g, eps=c["eps"])
    y.backward(torch.tensor(c["gy"], dtype=dt).reshape(c["xs"]))
    out.append(dict(y=y.detach().double().flatten().tolist(),
                    gx=x.grad.double().flatten().tolist(),
                    ggamma=g.grad.double().flatten().tolist()))
json.dump(dict(version=torch.__version__, cases=out), sys.stdout)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch", required=True, help="a Python interpreter with PyTorch")
    args = ap.parse_args()
    import chainer
    import chainer.functions as F

    rng = np.random.default_rng(42)
    specs = [
        # name, fn, x shape, groups, eps
        ("layer_2d", 0, (4, 5), 0, 1e-5),
        ("layer_3d", 0, (2, 3, 8), 0, 1e-5),
        ("layer_eps", 0, (3, 6), 0, 1e-2),
        ("rms_2d", 1, (4, 6), 0, 1e-6),
        ("rms_3d", 1, (2, 3, 5), 0, 1e-5),
        ("rms_1d", 1, (7,), 0, 1e-3),
        ("group_3d", 2, (2, 6, 3), 3, 1e-5),
        ("group_4d", 2, (3, 4, 2, 2), 2, 1e-5),
        ("group_one", 2, (2, 4, 3), 1, 1e-3),
        ("group_2d", 2, (3, 6), 2, 1e-5),
    ]
    cases, torch_in = [], []
    for dtype in (F64, F32):
        dt = NP[dtype]
        for name, fn, shape, groups, eps in specs:
            C = shape[-1] if fn in (0, 1) else shape[1]
            x = rand(rng, shape, dtype, 1.5) + 0.3
            gamma = rand(rng, (C,), dtype) + 1.0
            beta = rand(rng, (C,), dtype) if fn != 1 else None
            gy = rand(rng, shape, dtype)
            c = dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype, fn=fn,
                     x=x, gamma=gamma, beta=beta, gy=gy, groups=groups, eps=eps)
            if fn == 1:
                torch_in.append(dict(dt="f64" if dtype == F64 else "f32", xs=list(shape),
                                     x=x.ravel().tolist(), gamma=gamma.tolist(),
                                     gy=gy.ravel().tolist(), eps=eps))
                c["torch"] = len(torch_in) - 1
            else:
                xv = chainer.Variable(x.astype(dt))
                gv = chainer.Variable(gamma.astype(dt))
                bv = chainer.Variable(beta.astype(dt))
                if fn == 0:
                    y = F.reshape(F.layer_normalization(F.reshape(xv, (-1, C)), gv, bv, eps),
                                  shape)
                else:
                    y = F.group_normalization(xv, groups, gv, bv, eps)
                y.grad = gy.astype(dt)
                y.backward()
                c.update(y=y.array.astype(np.float64), gx=xv.grad.astype(np.float64),
                         ggamma=gv.grad.astype(np.float64), gbeta=bv.grad.astype(np.float64))
            cases.append(c)
    res = subprocess.run([args.torch, "-c", TORCH_RMS], input=json.dumps(torch_in),
                         capture_output=True, text=True, check=True)
    torch_out = json.loads(res.stdout)
    for c in cases:
        if "torch" in c:
            r = torch_out["cases"][c.pop("torch")]
            shape = c["x"].shape
            c.update(y=np.array(r["y"]).reshape(shape), gx=np.array(r["gx"]).reshape(shape),
                     ggamma=np.array(r["ggamma"]), gbeta=None)
    fields = [("x", "tensor"), ("gamma", "tensor"), ("beta", "tensor"), ("gy", "tensor"),
              ("y", "tensor"), ("gx", "tensor"), ("ggamma", "tensor"), ("gbeta", "tensor"),
              ("fn", "int"), ("groups", "int"), ("eps", "double")]
    write_header(os.path.join(HERE, "row_normalization_references.h"),
                 "tests/ops/normalization/make_row_normalization_references.py", "ref_rownorm",
                 fields, cases,
                 f"Chainer {chainer.__version__} (layer, group), PyTorch {torch_out['version']} "
                 "(rms_norm); see the script.")


if __name__ == "__main__":
    main()
