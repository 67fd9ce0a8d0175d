#!/usr/bin/env python3
"""Per-op overhead of chainerc from Python next to PyTorch from Python.

The op chain of bench/overhead.cpp: 1,000 ops cycling
x*2, +1, exp, log, +(-1), *0.5, exp, log (the identity every 8 ops, so values
stay near 1 and d(chain)/dx = 1, checked before timing) on 1-element float32
arrays. Rows: forward with history + backward (backward from the one-element
output: initial error 1), forward with history only, forward without history
(chainerc volatile variables, torch.no_grad()). Every timed iteration builds
the graph, runs backward and frees the graph; the figure is that time / 1,000.

A second table times a user-defined function MulAdd (w = x*y + z on
10-element float32 arrays, forward and backward written with NumPy / torch
ops) through chainerc.Function (engine callbacks) and torch.autograd.Function:
one call is apply + backward with an output gradient of ones.

Method (as overhead.cpp): each body is calibrated alone so that a repeat lasts
at least --min-time seconds, then the repeats of all rows are interleaved so
background load hits both sides alike; the figure is the median of --repeats,
with the spread (min - max) beside it, and the MulAdd ratio is also taken
repeat by repeat (its median and spread). --cpu-time times with the process's
CPU time instead of the wall clock (less noisy on a shared machine). PyTorch
runs with one thread. Without torch the chainerc column still prints.

Usage: python3 bench/python_overhead.py [--ops 1000] [--repeats 7] [--min-time 0.05]
                                        [--cpu-time] [--muladd-only]
       (CHAINERC_LIBRARY picks the library; default: build/src of this repo)
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "wrappers", "python"))
import chainerc  # noqa: E402
from chainerc import Variable  # noqa: E402
import chainerc.functions as F  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def chain_ch(x, n):
    exp, log = F.exp, F.log
    for i in range(n):
        k = i % 8
        if k == 0:
            x = x * 2
        elif k == 1:
            x = x + 1
        elif k == 2 or k == 6:
            x = exp(x)
        elif k == 3 or k == 7:
            x = log(x)
        elif k == 4:
            x = x + (-1)
        else:
            x = x * 0.5
    return x


def chain_torch(x, n):
    exp, log = torch.exp, torch.log
    for i in range(n):
        k = i % 8
        if k == 0:
            x = x * 2
        elif k == 1:
            x = x + 1
        elif k == 2 or k == 6:
            x = exp(x)
        elif k == 3 or k == 7:
            x = log(x)
        elif k == 4:
            x = x + (-1)
        else:
            x = x * 0.5
    return x


class ChMulAdd(chainerc.Function):
    def forward(self, inputs):
        x, y, z = inputs
        return x * y + z,

    def backward(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        return y * gw, x * gw, gw


if torch is not None:
    class TorchMulAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            return x * y + z

        @staticmethod
        def backward(ctx, gw):
            x, y = ctx.saved_tensors
            return y * gw, x * gw, gw


def calibrate(body, min_time):
    body()
    body()
    iters = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(iters):
            body()
        dt = time.perf_counter() - t0
        if dt >= min_time or iters >= 1 << 20:
            return iters
        iters = max(iters * 2, int(iters * (1.2 * min_time / dt if dt > 0 else 16)))


clock = time.perf_counter


def measure(rows, repeats, min_time, per):
    """Per-repeat samples (µs per `per`) of each row, the rows interleaved and
    their order reversed every other repeat."""
    iters = [calibrate(body, min_time) for _, body in rows]
    samples = [[] for _ in rows]
    order = list(range(len(rows)))
    for k in range(repeats):
        for j in (order if k % 2 == 0 else order[::-1]):
            body = rows[j][1]
            t0 = clock()
            for _ in range(iters[j]):
                body()
            samples[j].append((clock() - t0) / iters[j] * 1e6 / per)
    return samples


def spread(s):
    return "%.2f - %.2f" % (min(s), max(s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.05)
    ap.add_argument("--cpu-time", action="store_true", help="time with process CPU time")
    ap.add_argument("--muladd-only", action="store_true", help="only the MulAdd table")
    args = ap.parse_args()
    global clock
    if args.cpu_time:
        clock = time.process_time
    n = args.ops
    x0 = np.array([1.5], dtype=np.float32)

    # correctness first: the chain is the identity with derivative 1
    x = Variable(x0.copy())
    y = chain_ch(x, n)
    y.backward()
    assert abs(float(y.data[0]) - 1.5) < 1e-3 and abs(float(x.grad[0]) - 1.0) < 1e-3, \
        (y.data, x.grad)

    def ch_fwd_bwd():
        x = Variable(x0)
        chain_ch(x, n).backward()

    def ch_fwd():
        chain_ch(Variable(x0), n)

    def ch_volatile():
        chain_ch(Variable(x0, volatile=True), n)

    rows = [("chainerc fwd+bwd", ch_fwd_bwd), ("chainerc fwd", ch_fwd),
            ("chainerc no-history", ch_volatile)]
    if torch is not None:
        torch.set_num_threads(1)
        t0 = torch.tensor(x0)
        tx = t0.clone().requires_grad_(True)
        ty = chain_torch(tx, n)
        ty.backward()
        assert abs(float(ty.detach()) - 1.5) < 1e-3 and abs(float(tx.grad) - 1.0) < 1e-3

        def t_fwd_bwd():
            x = t0.clone().requires_grad_(True)
            chain_torch(x, n).backward()

        def t_fwd():
            chain_torch(t0.clone().requires_grad_(True), n)

        def t_nograd():
            with torch.no_grad():
                chain_torch(t0, n)

        rows += [("torch fwd+bwd", t_fwd_bwd), ("torch fwd", t_fwd), ("torch no-grad", t_nograd)]

    m = [np.random.uniform(-1, 1, 10).astype(np.float32) for _ in range(3)]
    gw = np.ones(10, np.float32)
    f = ChMulAdd()

    def ch_muladd():
        xs = [Variable(a) for a in m]
        w = f(*xs)
        w.grad = gw
        w.backward()
    custom = [("chainerc MulAdd", ch_muladd)]
    if torch is not None:
        tm = [torch.from_numpy(a) for a in m]
        tgw = torch.ones(10)

        def t_muladd():
            xs = [a.clone().requires_grad_(True) for a in tm]
            TorchMulAdd.apply(*xs).backward(tgw)
        custom.append(("torch MulAdd", t_muladd))

    if args.muladd_only:
        rows = []
    samples = measure(rows + custom, args.repeats, args.min_time, n)
    samples = samples[:len(rows)] + [[v * n for v in s] for s in samples[len(rows):]]
    names = [name for name, _ in rows + custom]
    r = {k: statistics.median(s) for k, s in zip(names, samples)}
    sp = dict(zip(names, samples))
    print("# Python per-op overhead, 1-element float32, chain of %d ops (median of %d repeats, %s)"
          % (n, args.repeats, "CPU time" if args.cpu_time else "wall clock"))
    print("python %s, numpy %s, chainerc %s (%s), torch %s, %s"
          % (platform.python_version(), np.__version__, chainerc.version(),
             chainerc.library_path, torch.__version__ if torch else "n/a",
             platform.processor() or platform.machine()))
    if rows:
        print()
        print("| row | chainerc µs/op (spread) | torch µs/op (spread) | chainerc / torch |")
        print("| --- | ---: | ---: | ---: |")
        for label, a, b in (("forward + backward", "chainerc fwd+bwd", "torch fwd+bwd"),
                            ("forward with history", "chainerc fwd", "torch fwd"),
                            ("forward without history", "chainerc no-history", "torch no-grad")):
            ca = r[a]
            tb = r.get(b)
            print("| %s | %.2f (%s) | %s | %s |"
                  % (label, ca, spread(sp[a]), "%.2f (%s)" % (tb, spread(sp[b])) if tb else "n/a",
                     "%.2f" % (ca / tb) if tb else "n/a"))
    print()
    print("| user-defined MulAdd, 10 elements, apply + backward | chainerc µs/call (spread) | "
          "torch µs/call (spread) | chainerc / torch | ratio per repeat: median (spread) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    ca, tb = r["chainerc MulAdd"], r.get("torch MulAdd")
    if tb:
        ratios = [a / b for a, b in zip(sp["chainerc MulAdd"], sp["torch MulAdd"])]
        per = "%.3f (%s)" % (statistics.median(ratios), spread(ratios))
    print("| Function with NumPy (chainerc) / autograd.Function (torch) | %.2f (%s) | %s | %s | %s |"
          % (ca, spread(sp["chainerc MulAdd"]),
             "%.2f (%s)" % (tb, spread(sp["torch MulAdd"])) if tb else "n/a",
             "%.2f" % (ca / tb) if tb else "n/a", per if tb else "n/a"))


if __name__ == "__main__":
    main()
