#!/usr/bin/env python3
"""Generate batch_normalization_references.h.

    python3 tests/ops/normalization/make_batch_normalization_references.py

x, x2 (a second batch), gamma, beta, the starting running statistics and gy
are samples (fixed seed) rounded to the case's dtype. x is (N, size...,
rest...); statistics per feature over the batch axis and the trailing axes
(m values each). In float64, per Chainer 1.x:
  train:    mean, var (biased) of the batch; x_hat = (x - mean) / sqrt(var + eps);
            y = gamma x_hat + beta; avg_mean = decay avg_mean + (1 - decay) mean,
            avg_var = decay avg_var + (1 - decay) var m / (m - 1);
            gx = gamma / sqrt(var + eps) (gy - mean(gy) - x_hat mean(gy x_hat))
  test:     y = gamma (x - avg_mean) / sqrt(avg_var + eps) + beta (statistics
            unchanged); gx = gamma gy / sqrt(avg_var + eps)
  finetune: batch statistics as train; after the N-th batch since the start
            avg = (1 - 1/N) avg + (1/N) stat: x then x2 give the plain means of
            the two batches' means and unbiased variances.
ggamma = sum(gy x_hat), gbeta = sum(gy) over the batch and trailing axes
(x_hat from the statistics used). gx, ggamma, gbeta are for the first batch x.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from refgen_util import F32, F64, NP, rand, write_header  # noqa: E402


def stats(x, k):
    axes = (0,) + tuple(range(1 + k, x.ndim))
    m = x.size // int(np.prod(x.shape[1:1 + k]))
    return x.mean(axis=axes), x.var(axis=axes), axes, m


def expand(v, x, k):
    return v.reshape((1,) + v.shape + (1,) * (x.ndim - 1 - k))


def main():
    rng = np.random.default_rng(99)
    specs = [
        # name, x shape, size ndim, mode, decay, eps
        ("train_nd", (5, 4), 1, "train", 0.9, 1e-5),
        ("train_nchw", (3, 2, 3, 4), 1, "train", 0.9, 1e-5),
        ("train_size2", (4, 2, 3, 2), 2, "train", 0.7, 1e-3),
        ("test_nchw", (3, 3, 2, 2), 1, "test", 0.9, 1e-5),
        ("test_nd", (4, 5), 1, "test", 0.9, 2e-2),
        ("finetune_nchw", (2, 3, 2, 3), 1, "finetune", 0.9, 1e-5),
    ]
    cases = []
    for dtype in (F64, F32):
        for name, shape, k, mode, decay, eps in specs:
            fs = shape[1:1 + k]
            def r(a):  # round to the case's dtype
                return np.asarray(a).astype(NP[dtype]).astype(np.float64)
            x = r(rand(rng, shape, dtype, 2.0) + 0.5)
            x2 = r(rand(rng, shape, dtype) - 1.0)
            gamma = r(rand(rng, fs, dtype) + 1.0)
            beta = rand(rng, fs, dtype)
            am0 = rand(rng, fs, dtype)
            av0 = r(np.abs(rand(rng, fs, dtype)) + 0.5)
            gy = rand(rng, shape, dtype)
            mean, var, axes, m = stats(x, k)
            if mode == "test":
                mu, sd = am0, np.sqrt(av0 + eps)
            else:
                mu, sd = mean, np.sqrt(var + eps)
            xh = (x - expand(mu, x, k)) / expand(sd, x, k)
            y = expand(gamma, x, k) * xh + expand(beta, x, k)
            ggamma = (gy * xh).sum(axis=axes)
            gbeta = gy.sum(axis=axes)
            if mode == "test":
                gx = expand(gamma / sd, x, k) * gy
                am1, av1 = am0, av0
            else:
                gx = expand(gamma / sd, x, k) * (
                    gy - expand(gbeta / m, x, k) - xh * expand(ggamma / m, x, k))
                if mode == "train":
                    am1 = decay * am0 + (1 - decay) * mean
                    av1 = decay * av0 + (1 - decay) * var * m / (m - 1)
                else:
                    mean2, var2, _, _ = stats(x2, k)
                    am1 = (mean + mean2) / 2
                    av1 = (var + var2) / 2 * m / (m - 1)
            cases.append(dict(name=f"{name}_{'f64' if dtype == F64 else 'f32'}", dtype=dtype,
                              x=x, x2=x2 if mode == "finetune" else None, gamma=gamma, beta=beta,
                              avg_mean0=am0, avg_var0=av0, y=y, gy=gy, gx=gx, ggamma=ggamma,
                              gbeta=gbeta, avg_mean1=am1, avg_var1=av1, size_ndim=k,
                              mode={"train": 0, "test": 1, "finetune": 2}[mode], decay=decay,
                              eps=eps))
    fields = [("x", "tensor"), ("x2", "tensor"), ("gamma", "tensor"), ("beta", "tensor"),
              ("avg_mean0", "tensor"), ("avg_var0", "tensor"), ("y", "tensor"), ("gy", "tensor"),
              ("gx", "tensor"), ("ggamma", "tensor"), ("gbeta", "tensor"),
              ("avg_mean1", "tensor"), ("avg_var1", "tensor"), ("size_ndim", "int"),
              ("mode", "int"), ("decay", "double"), ("eps", "double")]
    write_header(os.path.join(HERE, "batch_normalization_references.h"),
                 "tests/ops/normalization/make_batch_normalization_references.py",
                 "ref_bn", fields, cases, "Batch statistics in float64; see the script.")


if __name__ == "__main__":
    main()
