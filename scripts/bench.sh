#!/usr/bin/env bash
# Benchmark chainerc against libtorch: per-call overhead (bench/overhead.cpp),
# training (bench/train.cpp) and each function (bench/functions.cpp).
#
# Installs what is missing (the build's packages, oneDNN among them, plus
# libtorch-dev and libopenblas-dev for the peer), builds a release build with benchmarks in
# build-bench/ (BUILD_DIR overrides it), runs bench/overhead on one thread and
# prints a markdown table, also saved to build-bench/overhead.md.
#
#   scripts/bench.sh              # full run (about half a minute)
#   scripts/bench.sh --quick      # fewer, shorter repeats
#   BENCH_CPU=2 scripts/bench.sh  # pin the run to CPU 2 (needs taskset)
#
# Arguments are passed to bench/overhead (--ops N, --repeats N, --min-time S,
# --quick). Without libtorch the chainerc half still runs; its columns say n/a.
set -euo pipefail

# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BUILD_DIR="${BUILD_DIR:-$CH_ROOT/build-bench}"

ch_ensure_deps
mapfile -t peer_missing < <(ch_apt_missing libtorch-dev libopenblas-dev)
if [ "${#peer_missing[@]}" -gt 0 ]; then
  # The peer is optional: if it cannot be installed, benchmark chainerc alone.
  ( ch_apt_install "${peer_missing[@]}" ) ||
    ch_log "could not install ${peer_missing[*]}; the libtorch columns will read n/a"
fi

ch_configure "$BUILD_DIR" --buildtype=release -Dbenchmarks=enabled -Dtests=false -Dexamples=false
ch_build "$BUILD_DIR"

# What to run: overhead (per-call overhead, one thread), train (training
# epochs and peak memory, 1 and 2 threads), functions (each function's
# forward+backward, 1 and 2 threads). BENCH_ONLY=overhead|train|functions
# runs one; arguments go to that program.
only="${BENCH_ONLY:-all}"
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
# of the OpenBLAS behind libtorch's libblas.so.3); the OpenMP pool of
# libtorch waits passively so that its idle workers do not spin on the cores
# the other side needs (on 2 cores spinning makes both several times slower).
if [ "$only" = all ] || [ "$only" = train ]; then
  ch_log "train"
  OMP_WAIT_POLICY=passive "$BUILD_DIR/bench/train" "$@" | tee "$BUILD_DIR/train.md"
fi
if [ "$only" = all ] || [ "$only" = functions ]; then
  ch_log "functions"
  OMP_WAIT_POLICY=passive "$BUILD_DIR/bench/functions" "$@" | tee "$BUILD_DIR/functions.md"
fi
