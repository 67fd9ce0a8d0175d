#!/usr/bin/env python3
"""The peer of bench/distributed/train_mpi.cpp: the same models, data and
per-step work with PyTorch's DistributedDataParallel on the gloo backend,
N processes on this machine.

    ddp_train.py --ranks 2 --threads 1 [--model mlp|convnet] [--hidden 100]
                 [--batch 100] [--samples 20000] [--repeats 3] [--bind]

The MLP 784-H-H-10 or the convnet conv(20, 5x5)-maxpool(2)-conv(50, 5x5)-
maxpool(2)-linear(500)-ReLU-linear(10); float32, SGD lr 0.01, softmax cross
entropy. Synthetic data (pixels uniform in [0, 1), labels uniform in 0..9);
rank r trains on the contiguous share [r S / N, (r + 1) S / N) of the S
samples, in batches of B / N (--batch is the global batch). Every step:
zero_grad, forward, backward (DDP's bucketed allreduce of the gradients,
averaged), SGD step; nothing read back. One warm-up epoch, then --repeats
epochs timed between barriers; rank 0 prints

    ddp model mlp ranks 2 threads 1 batch 100: 123456 samples/s (best of 3)

--bind pins rank r to core r (what `mpirun --bind-to core` does to
chainerc's ranks).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def make_model(a):
    if a.model == "convnet":
        return nn.Sequential(nn.Conv2d(1, 20, 5), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 500), nn.ReLU(),
                             nn.Linear(500, 10))
    return nn.Sequential(nn.Linear(784, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden),
                         nn.ReLU(), nn.Linear(a.hidden, 10))


def worker(rank, a):
    if a.bind:
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    local = a.batch // a.ranks
    steps = a.samples // a.batch
    n = steps * a.batch
    g = torch.Generator().manual_seed(1234)
    shape = (n, 1, 28, 28) if a.model == "convnet" else (n, 784)
    x = torch.rand(shape, generator=g)
    t = torch.randint(0, 10, (n,), generator=g)
    begin = rank * steps * local
    x, t = x[begin:begin + steps * local], t[begin:begin + steps * local]
    torch.manual_seed(1)
    ddp = nn.parallel.DistributedDataParallel(make_model(a))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    rates = []
    for epoch in range(a.repeats + 1):
        dist.barrier()
        t0 = time.perf_counter()
        for s in range(steps):
            xb, tb = x[s * local:(s + 1) * local], t[s * local:(s + 1) * local]
            opt.zero_grad()
            F.cross_entropy(ddp(xb), tb).backward()
            opt.step()
        dist.barrier()
        dt = time.perf_counter() - t0
        if epoch == 0:
            continue
        rates.append(n / dt)
        if rank == 0:
            print("  epoch %d: %.0f samples/s (%.1f us per step)" % (epoch, rates[-1],
                                                                    dt / steps * 1e6))
    if rank == 0:
        print("ddp model %s ranks %d threads %d batch %d: %.0f samples/s (best of %d)" %
              (a.model, a.ranks, torch.get_num_threads(), a.batch, max(rates), a.repeats),
              flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "convnet"], default="mlp")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--hidden", type=int, default=100)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--bind", action="store_true")
    p.add_argument("--port", type=int, default=29533)
    a = p.parse_args()
    if a.batch % a.ranks:
        p.error("--batch must be a multiple of --ranks")
    mp.spawn(worker, args=(a,), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
