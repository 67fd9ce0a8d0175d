#!/usr/bin/env python3
"""The MulAdd body of bench/python_overhead.py (apply + backward of a user
function w = x*y + z on 10 float32 elements) run 50 + N times, for counting
instructions per call with callgrind, which load does not move:

  for n in 0 500; do valgrind --tool=callgrind --callgrind-out-file=cg.$n \\
      python bench/python_muladd_instructions.py chainerc $n; done
  per call = (Collected of cg.500 - Collected of cg.0) / 500

Side: chainerc (chainerc.Function; CHAINERC_NO_SPEEDUPS=1 for the ctypes
paths) or torch (torch.autograd.Function, one thread).
"""
import os
import sys

import numpy as np

side, n = sys.argv[1], int(sys.argv[2])
m = [np.random.uniform(-1, 1, 10).astype(np.float32) for _ in range(3)]
if side == "chainerc":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "wrappers", "python"))
    import chainerc
    from chainerc import Variable

    class ChMulAdd(chainerc.Function):
        def forward(self, inputs):
            x, y, z = inputs
            return x * y + z,

        def backward(self, inputs, grad_outputs):
            x, y, z = inputs
            gw, = grad_outputs
            return y * gw, x * gw, gw
    gw = np.ones(10, np.float32)
    f = ChMulAdd()

    def body():
        xs = [Variable(a) for a in m]
        w = f(*xs)
        w.grad = gw
        w.backward()
else:
    import torch
    torch.set_num_threads(1)

    class TorchMulAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            return x * y + z

        @staticmethod
        def backward(ctx, gw):
            x, y = ctx.saved_tensors
            return y * gw, x * gw, gw
    tm = [torch.from_numpy(a) for a in m]
    tgw = torch.ones(10)

    def body():
        xs = [a.clone().requires_grad_(True) for a in tm]
        TorchMulAdd.apply(*xs).backward(tgw)
for _ in range(50 + n):
    body()
