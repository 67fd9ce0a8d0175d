#!/usr/bin/env bash
# Benchmark chainerc against libtorch: per-call overhead (bench/overhead.cpp),
# training (bench/train.cpp), each function (bench/functions.cpp), the MNIST
# example against a standalone libtorch program of its loop (bench/examples/run.sh),
# and the CPU GEMM libraries on the models' shapes (bench/gemm.cpp).
#
# Installs what is missing (the build's packages, oneDNN among them, plus
# libtorch-dev and libopenblas-dev for the peer, time for bench/examples/run.sh),
# builds a release build with benchmarks in build-bench/ (BUILD_DIR overrides
# it), runs the benchmarks and prints markdown tables, also saved to
# build-bench/{overhead,train,functions,examples,gemm}.md.
#
#   scripts/bench.sh              # full run (about 15 minutes on 2 cores)
#   scripts/bench.sh --quick      # fewer, shorter repeats
#   BENCH_CPU=2 scripts/bench.sh  # pin the run to CPU 2 (needs taskset)
#
# With BENCH_ONLY=overhead|train|functions|examples|gemm the arguments go to that
# benchmark (each prints its options with --help); a full run takes only --quick.
# Without libtorch the chainerc half still runs; its columns say n/a.
set -euo pipefail

# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BUILD_DIR="${BUILD_DIR:-$CH_ROOT/build-bench}"

ch_ensure_deps
mapfile -t peer_missing < <(ch_apt_missing libtorch-dev libopenblas-dev time)
if [ "${#peer_missing[@]}" -gt 0 ]; then
  # The peer is optional: if it cannot be installed, benchmark chainerc alone.
  ( ch_apt_install "${peer_missing[@]}" ) ||
    ch_log "could not install ${peer_missing[*]}; the libtorch columns will read n/a"
fi

ch_configure "$BUILD_DIR" --buildtype=release -Dbenchmarks=enabled -Dtests=false -Dexamples=true
ch_build "$BUILD_DIR"

# What to run: overhead (per-call overhead, one thread), train (training
# epochs and peak memory, 1 and 2 threads), functions (each function's
# forward+backward, 1 and 2 threads), examples (the MNIST example against
# bench/train_mnist_libtorch, whole processes; needs Fashion-MNIST in
# /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist).
# bench/gemm (the GEMM libraries on the models' shapes, 1 and 2 threads).
# BENCH_ONLY=overhead|train|functions|examples|gemm runs one; arguments go to that program.
only="${BENCH_ONLY:-all}"
case "$only" in
  all | overhead | train | functions | examples | gemm) ;;
  *) ch_log "BENCH_ONLY must be overhead, train, functions, examples or gemm, not '$only'"; exit 2 ;;
esac
# The benchmarks take different options: a full run passes on only --quick,
# which each of them understands.
if [ "$only" = all ]; then
  for a in "$@"; do
    if [ "$a" != --quick ]; then
      ch_log "a full run takes only --quick; give BENCH_ONLY=NAME to pass '$a' to one benchmark"
      exit 2
    fi
  done
fi
pin=()
if [ -n "${BENCH_CPU:-}" ] && command -v taskset >/dev/null 2>&1; then
  pin=(taskset -c "$BENCH_CPU")
fi

if [ "$only" = all ] || [ "$only" = overhead ]; then
  # One thread everywhere: libtorch's intra-op pool (OpenMP), OpenBLAS, MKL.
  ch_log "overhead"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    "${pin[@]}" "$BUILD_DIR/bench/overhead" "$@" | tee "$BUILD_DIR/overhead.md"
fi
# The multi-threaded runs set their thread counts through the APIs
# (ch_config_set_num_threads, torch::set_num_threads, and openblas_set_num_threads
# of the OpenBLAS that libtorch's sgemm_ reaches). bench/train runs libtorch under
# several settings (its OpenMP threads, OpenBLAS's, OMP_WAIT_POLICY, OpenBLAS's
# kernels) and keeps the best per row; bench/functions, whose two sides share one
# process, runs with libtorch's OpenMP pool waiting passively so that its idle
# workers do not spin on the cores the other side needs.
if [ "$only" = all ] || [ "$only" = train ]; then
  ch_log "train"
  "$BUILD_DIR/bench/train" "$@" | tee "$BUILD_DIR/train.md"
fi
if [ "$only" = all ] || [ "$only" = functions ]; then
  ch_log "functions"
  OMP_WAIT_POLICY=passive "$BUILD_DIR/bench/functions" "$@" | tee "$BUILD_DIR/functions.md"
fi
if [ "$only" = all ] || [ "$only" = examples ]; then
  ch_log "examples"
  if [ -x "$BUILD_DIR/bench/train_mnist_libtorch" ]; then
    "$CH_ROOT/bench/examples/run.sh" --build "$BUILD_DIR" "$@" | tee "$BUILD_DIR/examples.md"
  else
    ch_log "no libtorch: bench/train_mnist_libtorch was not built, skipping the examples"
  fi
fi
if [ "$only" = all ] || [ "$only" = gemm ]; then
  ch_log "gemm"
  gemm_args=("$@")
  if [ "$only" = all ] && [ "$#" -gt 0 ]; then gemm_args=(--repeats 2); fi  # --quick
  "$BUILD_DIR/bench/gemm" "${gemm_args[@]+"${gemm_args[@]}"}" | tee "$BUILD_DIR/gemm.md"
fi
