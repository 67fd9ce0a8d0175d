"""Run by tests/test_distributed.py under `mpirun -np 2`: chainerc.distributed
checked on every rank against NumPy. Exits non-zero when a check fails."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import chainerc  # noqa: E402
import chainerc.distributed as dist  # noqa: E402
import chainerc.functions as F  # noqa: E402
from chainerc import FunctionSet, Variable, optimizers  # noqa: E402


def model(seed):
    chainerc.seed(seed)
    return FunctionSet(l1=F.Linear(4, 5, dtype=np.float64), l2=F.Linear(5, 3, dtype=np.float64))


def loss(m, x, t):
    return F.softmax_cross_entropy(m.l2(F.tanh(m.l1(Variable(x)))), Variable(t))


def main():
    comm = dist.create_communicator()
    rank, size = comm.rank, comm.size
    assert size == 2 and rank in (0, 1), (rank, size)
    assert comm.intra_rank == rank and comm.intra_size == size

    # allreduce of arrays and numbers
    np.testing.assert_array_equal(comm.allreduce(np.arange(3.0) + rank), 2 * np.arange(3.0) + 1)
    assert comm.allreduce(rank + 1.0, op="mean") == 1.5
    np.testing.assert_array_equal(comm.allreduce(np.array([rank, 2], np.int32)), [1, 4])

    # scatter_dataset: equal shares covering the data set, rank 0's seed
    data = np.arange(11) * 10
    mine = dist.scatter_dataset(data, comm, shuffle=True, seed=5 + rank)
    assert len(mine) == 6
    counts = np.zeros(11)
    counts[mine // 10] += 1
    counts = comm.allreduce(counts)
    assert counts.min() >= 1 and counts.sum() == 12, counts
    xs, ts = dist.scatter_dataset((np.arange(8.0), np.arange(8) * 2), comm)
    np.testing.assert_array_equal(ts, 2 * xs)
    np.testing.assert_array_equal(xs, np.arange(4.0) + 4 * rank)

    # training: bit-identical ranks equal to one process on the combined batch
    m = model(10 + rank)
    opt = dist.create_multi_node_optimizer(optimizers.Adam(alpha=0.01), comm)
    opt.setup(m)
    comm.bcast_data(m)
    ref = model(99)
    ref.copy_parameters_from(m.parameters)
    ref_opt = optimizers.Adam(alpha=0.01)
    ref_opt.setup(ref)
    rng = np.random.RandomState(0)
    for step in range(4):
        x = rng.randn(6, 4)
        t = rng.randint(0, 3, 6).astype(np.int32)
        opt.zero_grads()
        loss(m, x[3 * rank:3 * rank + 3], t[3 * rank:3 * rank + 3]).backward()
        opt.update()
        ref_opt.zero_grads()
        loss(ref, x, t).backward()
        ref_opt.update()
    for p, q in zip(m.parameters, ref.parameters):
        np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-12)
        np.testing.assert_array_equal(comm.allreduce(p, op="mean"), p)  # same on both ranks

    # mismatched models: an error on every rank naming the difference
    bad = FunctionSet(l1=F.Linear(4, 5 + rank, dtype=np.float64))
    try:
        comm.allreduce_grad(bad)
        raise AssertionError("no error for mismatched models")
    except chainerc.InvalidArgumentError as e:
        assert "on rank 0 but" in str(e) and "l1/W" in str(e), str(e)

    comm.barrier()
    comm.release()
    try:
        comm.barrier()
        raise AssertionError("no error for a released communicator")
    except chainerc.ReleasedHandleError:
        pass
    print("rank %d: ok" % rank)


if __name__ == "__main__":
    main()
