#!/usr/bin/env bash
# Benchmark chainerc's per-call overhead against libtorch (bench/overhead.cpp).
#
# Installs what is missing (the build's packages, plus libtorch-dev and
# libopenblas-dev for the peer), builds a release build with benchmarks in
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

# One thread everywhere: libtorch's intra-op pool (OpenMP), OpenBLAS, MKL.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
run=("$BUILD_DIR/bench/overhead" "$@")
if [ -n "${BENCH_CPU:-}" ] && command -v taskset >/dev/null 2>&1; then
  run=(taskset -c "$BENCH_CPU" "${run[@]}")
fi
ch_log "${run[*]}"
"${run[@]}" | tee "$BUILD_DIR/overhead.md"
