#!/usr/bin/env python3
"""The peer of bench/distributed/run.sh: the MNIST MLP (784-H-H-10, ReLU,
softmax cross entropy, SGD lr 0.01) trained with PyTorch's
DistributedDataParallel on the gloo backend, N processes on this machine.

    ddp_mnist.py --ranks 2 --threads 1 --batch 50 --limit 20000 [--hidden 100]

--batch is per rank (global batch N x batch), as in train_mnist_mpi. Prints
one line "ddp ranks R threads T: S samples/s" for one epoch over rank 0's
share, timed between barriers, after one warm-up epoch.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def worker(rank, a):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    x = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))[:a.limit]
    t = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))[:a.limit]
    x = torch.from_numpy(x.reshape(len(x), 784).astype(np.float32) / 255.0)
    t = torch.from_numpy(t.astype(np.int64))
    share = (len(x) + a.ranks - 1) // a.ranks
    begin = len(x) * rank // a.ranks
    x, t = x[begin:begin + share], t[begin:begin + share]
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(784, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden),
                          nn.ReLU(), nn.Linear(a.hidden, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    rates = []
    for epoch in range(2):
        perm = torch.randperm(len(x))
        dist.barrier()
        t0 = time.perf_counter()
        for i in range(0, len(x), a.batch):
            idx = perm[i:i + a.batch]
            opt.zero_grad()
            F.cross_entropy(ddp(x[idx]), t[idx]).backward()
            opt.step()
        dist.barrier()
        rates.append(len(x) * a.ranks / (time.perf_counter() - t0))
    if rank == 0:
        print("ddp ranks %d threads %d batch %d: %.0f samples/s" % (a.ranks, a.threads, a.batch,
                                                                    rates[-1]), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--hidden", type=int, default=100)
    p.add_argument("--limit", type=int, default=20000)
    p.add_argument("--port", type=int, default=29533)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    mp.spawn(worker, args=(a,), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
