#!/usr/bin/env bash
# bench/distributed: samples/s of data-parallel training, chainerc
# (build/bench/distributed/train_mpi under mpirun, libchainerc_mpi) against
# PyTorch DistributedDataParallel on gloo (ddp_train.py), side by side, for
#   1 rank x 1 thread, 2 ranks x 1 thread, 1 rank x 2 threads
# and the models of bench/train: the MNIST MLP 784-100-100-10 and the convnet
# conv(20, 5x5)-pool-conv(50, 5x5)-pool-linear(500)-linear(10). The same per-step
# work on both sides: float32, global batch 100 split evenly over the ranks,
# synthetic data, forward, backward, the gradients averaged over the ranks
# (chainerc: one flat MPI_Allreduce per step; DDP: its bucketed allreduce),
# SGD; nothing read back per step. Each run: one warm-up epoch and EPOCHS
# timed epochs between barriers, the best epoch; the figure is the best of
# REPEATS runs, interleaved: each round runs every configuration, chainerc
# then DDP.
#
#   bench/distributed/run.sh [BUILD_DIR]
#     MODELS="mlp convnet"  CONFIGS="1x1 2x1 1x2"  REPEATS=5  EPOCHS=3
#     MLP_SAMPLES=60000  CONVNET_SAMPLES=2000  DDP_BIND=  PER_RANK_BATCH=
#
# PER_RANK_BATCH=100: every rank trains on batches of 100 (the global batch
# grows with the ranks: ChainerMN's and DDP's usual setting) instead of one
# global batch of 100 split over the ranks. chainerc's ranks average host
# gradients through a shared-memory segment on one machine; CH_MPI_SHM=0 in
# the environment makes them use MPI_Allreduce instead (what chainerc did
# before the segment).
#
# Binding: chainerc's ranks are pinned one per core (mpirun --bind-to core)
# when they run 1 thread, not pinned for 1 rank x 2 threads. DDP's processes
# are not pinned (PyTorch's default; pinning them like chainerc's, DDP_BIND=1
# or ddp_train.py --bind, measured the same or slower). Every process runs the thread count of its
# configuration (chainerc's pool, OpenBLAS and oneDNN's OpenMP; torch's intra-
# and inter-op pools). Open MPI spins in blocking calls, which is right with
# one rank per core. On a shared machine, take the timings when it is quiet.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build}"
exe="$build/bench/distributed/train_mpi"
repeats="${REPEATS:-5}"
epochs="${EPOCHS:-3}"
models="${MODELS:-mlp convnet}"
configs="${CONFIGS:-1x1 2x1 1x2}"
py="${PYTHON:-/usr/bin/python3}"
cores="$(nproc)" # before OMP_NUM_THREADS is set: nproc honours it
# Loopback only; shared memory between the ranks of this machine unless
# OMPI_MCA_btl says otherwise: OMPI_MCA_btl=tcp,self with CH_MPI_SHM=0 is the
# path across machines (MPI_Allreduce over TCP), run on this one.
export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader,tcp}" OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
# One thread per BLAS/OpenMP in every process unless the configuration says more.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

[ -x "$exe" ] || { echo "run.sh: build $exe first (ninja -C build bench/distributed/train_mpi)" >&2; exit 1; }
have_torch=1
"$py" -c "import torch.distributed" 2>/dev/null || have_torch=0

batch_of() { # ranks
  if [ -n "${PER_RANK_BATCH:-}" ]; then echo $(($1 * PER_RANK_BATCH)); else echo 100; fi
}

samples_of() { if [ "$1" = convnet ]; then echo "${CONVNET_SAMPLES:-2000}"; else echo "${MLP_SAMPLES:-60000}"; fi; }

chainerc_once() { # model ranks threads
  local bind=core
  [ "$3" -gt 1 ] && bind=none
  OMP_NUM_THREADS="$3" OPENBLAS_NUM_THREADS="$3" \
    mpirun --allow-run-as-root --bind-to "$bind" -np "$2" "$exe" --model "$1" --threads "$3" \
    --batch "$(batch_of "$2")" --samples "$(samples_of "$1")" --repeats "$epochs" 2>/dev/null |
    awk '/^chainerc/ {print $(NF-4)}'
}

ddp_once() { # model ranks threads (unpinned, PyTorch's default: as fast as or faster than --bind here)
  local bind=()
  [ -n "${DDP_BIND:-}" ] && [ "$3" = 1 ] && bind=(--bind)
  OMP_NUM_THREADS="$3" OPENBLAS_NUM_THREADS="$3" \
    "$py" "$here/ddp_train.py" --model "$1" --ranks "$2" --threads "$3" --batch "$(batch_of "$2")" \
    --samples "$(samples_of "$1")" --repeats "$epochs" "${bind[@]}" 2>/dev/null |
    awk '/^ddp/ {print $(NF-4)}'
}

best() { sort -g | tail -1; }

what="global batch 100"
[ -n "${PER_RANK_BATCH:-}" ] && what="batch $PER_RANK_BATCH per rank"
[ -n "${CH_MPI_SHM:-}" ] && what="$what, CH_MPI_SHM=$CH_MPI_SHM"
what="$what, btl $OMPI_MCA_btl"
echo "# bench/distributed: samples/s, $what (best epoch of $epochs, best of $repeats runs)"
echo "# $cores cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$have_torch" = 1 ] && echo "# PyTorch $("$py" -c 'import torch; print(torch.__version__, torch.__file__)')"
printf '| %-8s | %-15s | %10s | %10s | %18s |\n' model "ranks x threads" chainerc "DDP gloo" "chainerc / DDP"
printf '| --- | --- | ---: | ---: | ---: |\n'
for model in $models; do
  # Repeats outermost: every configuration and both sides once per round, so
  # that a change in background load hits every row alike.
  declare -A ch=() dd=()
  for ((i = 0; i < repeats; i++)); do
    for cfg in $configs; do
      ch[$cfg]+="$(chainerc_once "$model" "${cfg%x*}" "${cfg#*x}") "
      [ "$have_torch" = 1 ] && dd[$cfg]+="$(ddp_once "$model" "${cfg%x*}" "${cfg#*x}") "
    done
  done
  for cfg in $configs; do
    ranks="${cfg%x*}" threads="${cfg#*x}"
    c="$(printf '%s\n' ${ch[$cfg]:-} | grep . | best)"
    d="n/a"
    [ "$have_torch" = 1 ] && d="$(printf '%s\n' ${dd[$cfg]:-} | grep . | best)"
    ratio="n/a"
    [ -n "$c" ] && [ "$d" != n/a ] && [ -n "$d" ] && ratio="$(awk -v a="$c" -v b="$d" 'BEGIN {printf "%.2fx", a / b}')"
    printf '| %-8s | %-15s | %10s | %10s | %18s |\n' "$model" "$ranks x $threads" "${c:-failed}" "${d:-failed}" "$ratio"
  done
  c1="$(printf '%s\n' ${ch[1x1]:-} | grep . | best)" c2="$(printf '%s\n' ${ch[2x1]:-} | grep . | best)"
  [ -n "$c1" ] && [ -n "$c2" ] &&
    echo "# $model: chainerc 2 x 1 / 1 x 1 = $(awk -v a="$c2" -v b="$c1" 'BEGIN {printf "%.2fx", a / b}')"
  unset ch dd
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
