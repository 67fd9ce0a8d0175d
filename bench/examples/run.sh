#!/usr/bin/env bash
# The MNIST example (examples/mnist/train_mnist) against the standalone libtorch program of
# the same loop (bench/examples/train_mnist_libtorch.cpp), both timed as whole processes:
# the same data, the same shuffled mini-batches, the same per-batch work (see the program's
# header). Prints a markdown table.
#
#   bench/examples/run.sh [--build DIR] [--epochs N] [--repeats N] [--threads "1 2"]
#                         [--hidden "100 1000"] [--data DIR] [--optimizer sgd|adam] [--quick]
#                         [--sgd-in-backward]
#
# For each (threads, hidden units) the runs are interleaved (the example, then libtorch
# under each of its settings, repeated --repeats times), so that a change in background load
# hits both sides alike. libtorch's settings are the ones a libtorch user would try (as
# bench/train's): torch::set_num_threads(n) with OpenBLAS at n threads, and with
# OPENBLAS_CORETYPE=SKYLAKEX (on a CPU with AVX-512); at n > 1 threads also the same with OMP_WAIT_POLICY=passive
# (with and without SKYLAKEX), OpenBLAS at 1 thread (passive), and torch at 1 thread with
# OpenBLAS at n; the table takes the best one (by median wall time) and names it. Figures:
#   wall s        the whole process (loading the libraries and the data, training, the test
#                 pass after every epoch), median of the repeats, from /usr/bin/time;
#   ratio         libtorch / chainerc of the pairs (run r of both), median;
#   samples/s     the last epoch's training rate as the programs print it (the training loop
#                 alone), median; the ratio is chainerc / libtorch; libtorch's is its best
#                 setting by this rate (named after "loop:" when it is not the wall time's);
#   peak MiB      maximum resident set size (/usr/bin/time's %M), median.
# Build both first: ninja -C build-bench examples/mnist/train_mnist bench/train_mnist_libtorch
# (scripts/bench.sh does; BENCH_ONLY=examples runs this script).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-bench"
epochs=1
repeats=5
threads_list="1 2"
hidden_list="100 1000"
data=/usr/share/datasets/fashion-mnist
optimizer=sgd
example_optimizer=""  # --sgd-in-backward: the example's SGD takes the weights' step in backward
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --threads) threads_list="$2"; shift 2 ;;
    --hidden) hidden_list="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --optimizer) optimizer="$2"; shift 2 ;;
    --sgd-in-backward) example_optimizer=sgd-in-backward; shift ;;
    --quick) repeats=1; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

example="$build/examples/mnist/train_mnist"
peer="$build/bench/train_mnist_libtorch"
for p in "$example" "$peer"; do
  [ -x "$p" ] || { echo "run.sh: $p is not built (see --help)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "run.sh: needs /usr/bin/time (Debian's time package)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# run NAME ENV... -- COMMAND...: one timed run; appends "wall peak_kib samples_per_s" to
# $work/NAME.
run() {
  local name="$1"; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  # OpenBLAS detects the CPU and its caches itself on both sides unless a setting names a core
  # type (an environment forcing one, as the Zen 5 VM's OPENBLAS_CORETYPE=Haswell does, is
  # neither side's best).
  env -u OMP_WAIT_POLICY -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u OPENBLAS_CORETYPE \
    -u OPENBLAS_L2_SIZE "${envs[@]}" \
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>/dev/null ||
    { echo "run.sh: $* failed:" >&2; cat "$work/out" >&2; exit 1; }
  local rate
  rate="$(awk '/^epoch/ { for (i = 1; i < NF; ++i) if ($(i + 1) == "samples/s") r = $i } END { print r }' "$work/out")"
  echo "$(cat "$work/time") $rate" >>"$work/$name"
  [ -s "$work/$name.first" ] || head -1 "$work/out" >"$work/$name.first"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$2" '{ print $c }' "$work/$1"; }

echo "## The MNIST example against a standalone libtorch program of the same loop"
echo
[ -z "$example_optimizer" ] || [ "$optimizer" = sgd ] ||
  { echo "run.sh: --sgd-in-backward needs --optimizer sgd" >&2; exit 2; }
note=""
[ -z "$example_optimizer" ] ||
  note="; the example steps the weights in backward (--optimizer sgd-in-backward)"
echo "$epochs epoch(s) of $(basename "$data") ($optimizer$note, batch 100) and the test pass, each" \
  "process timed whole; median of $repeats interleaved repeats; ratios above 1: chainerc faster."
echo
echo "| hidden | threads | chainerc wall s | libtorch wall s | libtorch / chainerc (wall) | chainerc samples/s | libtorch samples/s | chainerc / libtorch (training loop) | libtorch setting | peak MiB (chainerc / libtorch) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"
# OpenBLAS's SkylakeX kernels are AVX-512: without it they stop at the first illegal
# instruction, and no libtorch user there would try them.
avx512=0
grep -qw avx512f /proc/cpuinfo 2>/dev/null && avx512=1
for th in $threads_list; do
  for hid in $hidden_list; do
    common=(--epochs "$epochs" --hidden "$hid" --data "$data" --optimizer "$optimizer")
    # libtorch settings: name|environment|arguments
    settings=("n/n||--threads $th")
    if [ "$th" -gt 1 ]; then
      settings+=("n/n passive|OMP_WAIT_POLICY=passive|--threads $th"
        "n/1 passive|OMP_WAIT_POLICY=passive|--threads $th --blas-threads 1"
        "1/n||--threads 1 --blas-threads $th")
      [ "$avx512" = 0 ] ||
        settings+=("n/n passive SKYLAKEX|OMP_WAIT_POLICY=passive OPENBLAS_CORETYPE=SKYLAKEX|--threads $th")
    elif [ "$avx512" = 1 ]; then
      settings+=("n/n SKYLAKEX|OPENBLAS_CORETYPE=SKYLAKEX|--threads $th")
    fi
    rm -f "$work"/ch "$work"/lt*
    for ((r = 0; r < repeats; ++r)); do
      run ch -- "$example" "${common[@]}" ${example_optimizer:+--optimizer "$example_optimizer"} \
        --threads "$th"
      for k in "${!settings[@]}"; do
        IFS='|' read -r _ envv args <<<"${settings[$k]}"
        # shellcheck disable=SC2086
        run "lt$k" $envv -- "$peer" "${common[@]}" $args
      done
    done
    # The best setting by whole-process time, and (separately) by training-loop rate.
    best=0 best_wall='' fast=0 fast_rate=''
    for k in "${!settings[@]}"; do
      w="$(col "lt$k" 1 | median)"
      if [ -z "$best_wall" ] || awk -v a="$w" -v b="$best_wall" 'BEGIN { exit !(a < b) }'; then
        best=$k best_wall=$w
      fi
      v="$(col "lt$k" 3 | median)"
      if [ -z "$fast_rate" ] || awk -v a="$v" -v b="$fast_rate" 'BEGIN { exit !(a > b) }'; then
        fast=$k fast_rate=$v
      fi
    done
    ch_wall="$(col ch 1 | median)"
    ratio="$(paste -d' ' <(col ch 1) <(col "lt$best" 1) | awk '{ print $2 / $1 }' | median)"
    ch_rate="$(col ch 3 | median)"
    lt_rate="$fast_rate"
    ch_peak="$(col ch 2 | median)"
    lt_peak="$(col "lt$best" 2 | median)"
    printf '| %s | %s | %.3f | %.3f | %.2fx | %.0f | %.0f | %.2fx | %s | %.0f / %.0f |\n' \
      "$hid" "$th" "$ch_wall" "$best_wall" "$ratio" "$ch_rate" "$lt_rate" \
      "$(awk -v a="$ch_rate" -v b="$lt_rate" 'BEGIN { print a / b }')" \
      "${settings[$best]%%|*}$([ "$fast" = "$best" ] || echo "; loop: ${settings[$fast]%%|*}")" "$(awk -v k="$ch_peak" 'BEGIN { print k / 1024 }')" \
      "$(awk -v k="$lt_peak" 'BEGIN { print k / 1024 }')"
    if [ "${#settings[@]}" -gt 1 ]; then
      for k in "${!settings[@]}"; do
        echo "  - hidden $hid, $th threads, libtorch ${settings[$k]%%|*}: wall $(col "lt$k" 1 | median) s, $(col "lt$k" 3 | median) samples/s" >>"$work/notes"
      done
    fi
  done
done
echo
echo "- chainerc BLAS: $(cut -d';' -f6- "$work/ch.first" | sed 's/^ //')"
echo "- libtorch: $(sed 's/.*libtorch /libtorch /' "$work/lt0.first")"
if [ -s "$work/notes" ]; then
  echo "- every libtorch setting tried (torch threads / OpenBLAS threads, n: the row's threads):"
  cat "$work/notes"
fi
