#!/usr/bin/env bash
# bench/distributed: samples/s of the MNIST MLP (784-100-100-10, SGD, global
# batch 100) trained by chainerc over processes (build/examples/distributed/
# train_mnist_mpi through mpirun) and by PyTorch DistributedDataParallel on
# gloo (ddp_mnist.py, Debian's python3-torch), side by side:
#   1 rank x 1 thread, 2 ranks x 1 thread, 1 rank x 2 threads.
# Each figure is the second of two epochs over the first --limit samples of
# Fashion-MNIST (training only, between barriers); the best of REPEATS runs.
#
#   bench/distributed/run.sh [BUILD_DIR]     (REPEATS=3 LIMIT=20000 HIDDEN=100)
#
# Timings on a shared machine are noisy: read them with the load average this
# prints.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build}"
exe="$build/examples/distributed/train_mnist_mpi"
repeats="${REPEATS:-3}"
limit="${LIMIT:-20000}"
hidden="${HIDDEN:-100}"
py="${PYTHON:-/usr/bin/python3}"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1

[ -x "$exe" ] || { echo "run.sh: build $exe first (ninja -C build examples/distributed/train_mnist_mpi)" >&2; exit 1; }

best() { sort -n | tail -1; }

chainerc_rate() { # ranks threads batch
  local i
  for ((i = 0; i < repeats; i++)); do
    "${mpirun[@]}" -np "$1" "$exe" --epochs 2 --threads "$2" --batch "$3" --limit "$limit" \
      --hidden "$hidden" 2>/dev/null | awk '/^epoch  2/ {print $(NF-1)}'
  done | best
}

ddp_rate() { # ranks threads batch
  local i
  if ! "$py" -c "import torch" 2>/dev/null; then
    echo "n/a"
    return
  fi
  for ((i = 0; i < repeats; i++)); do
    "$py" "$here/ddp_mnist.py" --ranks "$1" --threads "$2" --batch "$3" --limit "$limit" \
      --hidden "$hidden" 2>/dev/null | awk '/samples\/s/ {print $(NF-1)}'
  done | best
}

echo "MLP 784-$hidden-$hidden-10, global batch 100, $limit samples; $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %12s %12s\n' "ranks x threads" "chainerc" "DDP gloo"
for cfg in "1 1 100" "2 1 50" "1 2 100"; do
  set -- $cfg
  printf '%-22s %12s %12s\n' "$1 x $2" "$(chainerc_rate "$@")" "$(ddp_rate "$@")"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
