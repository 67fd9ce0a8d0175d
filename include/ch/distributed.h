/*
 * chainerc — ch_communicator: data-parallel training over processes and
 * machines (what ChainerMN is to Chainer), on MPI, and on NCCL for CUDA arrays.
 *
 * These functions live in their own library, libchainerc_mpi (pkg-config
 * module `chainerc_mpi`), built when Open MPI's development files are found
 * (Meson option -Dmpi=auto); libchainerc itself never needs MPI. This header
 * does not include <mpi.h> and is not included by <ch/ch.h>: include it
 * yourself and link `pkg-config --libs chainerc_mpi`.
 *
 * Data parallelism: every process (rank) holds a full copy of the model,
 * computes the gradients of its own share of the batch, and before each
 * update the gradients are averaged over the ranks (allreduce), so every
 * rank applies the same update and the copies stay identical. A typical
 * step:
 *
 *   ch_communicator_new_mpi(&comm);
 *   ...build the model, ch_optimizer_setup(opt, model)...
 *   ch_optimizer_new_multi_node(&mn, opt, comm);
 *   ch_communicator_bcast_data(comm, model);      // rank 0's initial values
 *   ch_communicator_scatter_indices(...);         // this rank's samples
 *   loop: zero_grads, forward, backward, ch_optimizer_update(mn)
 *
 * Launch with mpirun (`mpirun -np 4 ./train`), one process per core or per
 * GPU; see docs/distributed.md.
 *
 * Model check: before its reductions, every call that takes a function set
 * or a multi-node optimizer compares the parameter signature of all ranks
 * (count, order, paths, shapes and dtypes, hashed and allreduced: one small
 * collective). When the models differ, every rank gets
 * CH_ERR_INVALID_ARGUMENT naming the first difference (rank, parameter
 * index, path, shape and dtype on both sides), and nothing is reduced, so a
 * mismatch never hangs or corrupts memory.
 *
 * Faults: the communicator sets MPI_ERRORS_RETURN, so an MPI failure becomes
 * a status (CH_ERR_IO, with MPI's error string) instead of aborting the
 * process. When a rank dies (crash, kill), Open MPI's mpirun aborts the whole
 * job and returns a non-zero status; ranks blocked in a collective are
 * killed, they do not hang. When chainerc initialised MPI, a rank that
 * exits with a non-zero status calls MPI_Abort on its way out (MPI_Finalize
 * would wait for the others, which may be waiting for it), so the job ends
 * too; a rank that exits with status 0 while others still expect it in a
 * collective is a program error, as in any MPI program.
 *
 * Timeout: a collective operation of this library (barrier, bcast_data,
 * allreduce_grads, allreduce_array, scatter_indices, a multi-node update,
 * creating the communicator) that has not completed CH_MPI_TIMEOUT seconds
 * after it began (default 1800; 0 or more than 10^9: no limit; read by
 * ch_communicator_new_mpi, which refuses anything but a number >= 0 with
 * CH_ERR_INVALID_ARGUMENT) ends its process with status 124 after a line on
 * stderr naming the rank and the call: a peer that stalled, exited or runs
 * other code cannot hold a rank past it, and mpirun then ends the whole job.
 * MPI collectives cannot be cancelled, so this is an exit, not a status; the
 * timeout must exceed the longest time a rank may legitimately wait for the
 * others (rank 0 evaluating, saving).
 *
 * Collectives: every rank must make the same calls with the same arguments
 * in the same order (MPI's rule). All functions below that take a
 * communicator are collective except the getters and
 * ch_communicator_release.
 *
 * Threading: a communicator is used by one thread at a time (MPI is
 * initialised with MPI_THREAD_SERIALIZED when chainerc initialises it).
 * Handles may be released from any thread.
 */
#ifndef CH_DISTRIBUTED_H
#define CH_DISTRIBUTED_H

#include "array.h"
#include "common.h"
#include "function_set.h"
#include "optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ch_communicator ch_communicator;

/* How ch_communicator_allreduce_array combines the ranks' values. */
typedef enum ch_reduce_op { CH_REDUCE_SUM = 0, CH_REDUCE_MEAN = 1 } ch_reduce_op;

/* New communicator over every process of the job (a duplicate of
 * MPI_COMM_WORLD with MPI_ERRORS_RETURN). If MPI is not initialised yet, this
 * initialises it (MPI_THREAD_SERIALIZED) and finalizes it at process exit;
 * a host that initialised MPI itself keeps that ownership (and must finalize
 * after releasing every communicator). Collective.
 * *out: new reference; release with ch_communicator_release. */
CH_API ch_status ch_communicator_new_mpi(ch_communicator** out);

/* Drop a reference. NULL is a no-op; a released handle is
 * CH_ERR_RELEASED_HANDLE. The MPI communicator (and the gradients'
 * shared-memory segment, unmapped) is freed with the last reference (not
 * collective: MPI_Comm_free is local in practice, but all ranks should
 * release theirs). */
CH_API ch_status ch_communicator_release(ch_communicator* comm);

/* New reference to the same communicator. Returns `comm`, or NULL if it is
 * not a live ch_communicator. */
CH_API ch_communicator* ch_communicator_retain(ch_communicator* comm);

/* This process's rank in [0, size). -1 for an invalid handle. */
CH_API int32_t ch_communicator_rank(const ch_communicator* comm);
/* Number of processes. -1 for an invalid handle. */
CH_API int32_t ch_communicator_size(const ch_communicator* comm);
/* Rank among the processes on the same machine (MPI_COMM_TYPE_SHARED), e.g.
 * to choose a GPU: ch_device_cuda(intra_rank). -1 for an invalid handle. */
CH_API int32_t ch_communicator_intra_rank(const ch_communicator* comm);
/* Number of processes on this machine. -1 for an invalid handle. */
CH_API int32_t ch_communicator_intra_size(const ch_communicator* comm);

/* Wait until every rank has called it. Collective. */
CH_API ch_status ch_communicator_barrier(ch_communicator* comm);

/* Copy every parameter of `set` from rank 0 to the other ranks (ChainerMN's
 * bcast_data), after the model check; use it once after building the model
 * so that differently initialised ranks start equal. Parameters are packed
 * into one buffer per dtype (one broadcast each). Collective. */
CH_API ch_status ch_communicator_bcast_data(ch_communicator* comm, ch_function_set* set);

/* Average the gradients of `set` over the ranks, in place (ChainerMN's flat
 * communicator): after the model check, host gradients of ranks that all
 * share one machine go through a shared-memory segment (each rank sums its
 * slice of the gradients over the ranks, no packing copy); otherwise, or with
 * the environment variable CH_MPI_SHM=0, they are packed into one contiguous
 * buffer per dtype, summed in one MPI_Allreduce each and divided by the
 * number of ranks. CH_MPI_SHM=1 requires the segment (CH_ERR_UNSUPPORTED on
 * every rank when the ranks span machines); the ranks agree on the choice at
 * the first reduction, and the results are bit-identical on every rank
 * either way. CUDA gradients go through NCCL on the device's default stream
 * where NCCL is available (ch_communicator_has_nccl, CH_NCCL), else through
 * host memory. Collective. */
CH_API ch_status ch_communicator_allreduce_grads(ch_communicator* comm, ch_function_set* set);

/* Sum or mean of `array` over the ranks, in place (e.g. a metric: summed
 * correct counts, mean loss). Shapes and dtypes must agree on every rank
 * (checked: CH_ERR_SHAPE / CH_ERR_DTYPE on every rank naming both). Integer
 * means are truncated toward zero. Collective. */
CH_API ch_status ch_communicator_allreduce_array(ch_communicator* comm, ch_array* array,
                                                 ch_reduce_op op);

/* A multi-node optimizer (ChainerMN's create_multi_node_optimizer): installs
 * on `optimizer` an update hook (ch_optimizer_set_update_hook) that, at the
 * start of every ch_optimizer_update, checks the model and averages the
 * gradients of the optimizer's parameters over the ranks (as
 * ch_communicator_allreduce_grads), after which the optimizer's own rule
 * runs. `optimizer` itself is changed (every handle to it now reduces);
 * hyperparameters, state and checkpoints stay those of `optimizer`. The hook
 * keeps a reference to `comm`. Broadcast the parameters once yourself
 * (ch_communicator_bcast_data) before the first step. An update on one rank
 * only is a collective called on one rank only: it blocks.
 * *out: new reference to `optimizer`; release with ch_optimizer_release. */
CH_API ch_status ch_optimizer_new_multi_node(ch_optimizer** out, ch_optimizer* optimizer,
                                             ch_communicator* comm);

/* This rank's share of the sample indices 0..n-1 (ChainerMN's
 * scatter_dataset): rank 0's seed decides one permutation (broadcast, so
 * the other ranks' seeds do not matter), or the identity when shuffle is 0.
 * With N ranks, every rank gets count = ceil(n / N) indices: positions
 * floor(n * rank / N) .. + count of the permutation. Shares are equal in
 * size; when N does not divide n, neighbouring shares overlap, so
 * count * N - n samples are seen twice per epoch and none is left out
 * (ChainerMN's choice, no padding with invented samples). Writes
 * min(count, capacity) indices to out (may be NULL when capacity is 0) and
 * the count to *count (may be NULL). n must be >= 0. Collective (one
 * broadcast of the seed). */
CH_API ch_status ch_communicator_scatter_indices(int64_t* out, int64_t capacity, int64_t* count,
                                                 ch_communicator* comm, int64_t n, int32_t shuffle,
                                                 uint64_t seed);

/* Finalize MPI now if ch_communicator_new_mpi initialised it (else a no-op:
 * the host that initialised MPI finalizes it). For hosts whose exit skips
 * C exit handlers (Go's os.Exit): call it last, after every collective. Live
 * communicators can then only be released; a later ch_communicator_new_mpi
 * is CH_ERR_INVALID_ARGUMENT (MPI cannot be initialised twice). Collective. */
CH_API ch_status ch_communicator_finalize(void);

/* 1 when CUDA gradients can be reduced with NCCL on this rank: the library
 * was built with NCCL support (the CUDA backend and nccl.h) and
 * libnccl.so.2 can be loaded (it is opened by this call, or on the first
 * reduction of CUDA gradients; it is never linked). Else 0. Which path runs
 * is chosen by all ranks together at the first reduction of CUDA gradients,
 * from the environment variable CH_NCCL: unset or "auto", NCCL when every
 * rank has it, else MPI through host memory; "0", MPI through host memory;
 * "1", NCCL required: CH_ERR_UNSUPPORTED on every rank, naming a rank
 * without it, when one lacks it (an invalid value is
 * CH_ERR_INVALID_ARGUMENT). Cannot fail. */
CH_API int32_t ch_communicator_has_nccl(void);

#ifdef __cplusplus
}
#endif
#endif /* CH_DISTRIBUTED_H */
