#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds chainerc with the CUDA backend, runs
# the `gpu` test suite with CH_REQUIRE_GPU=1 (a skip is a failure), then its
# test programs under compute-sanitizer (memcheck, racecheck, synccheck), then
# the GPU benchmarks (gpu_bench, and PyTorch eager through torch_peer.py when
# torch with CUDA is importable), and writes one markdown report.
#
#   bench/gpu/run.sh                     everything; report in build-gpu/gpu-report.md
#   bench/gpu/run.sh --skip-sanitizer    the suite and the benchmarks only
#   bench/gpu/run.sh --no-build          as the first, on an existing build
#   bench/gpu/run.sh --bench-only        the benchmarks only (an existing build)
#   bench/gpu/run.sh --smoke --build-dir build-emulated
#                                        no build, no suite: gpu_bench --smoke (tiny sizes,
#                                        results checked) and torch_peer.py --smoke on the
#                                        CPU where torch is importable; CI's emulated pass
#                                        runs this (meson test gpu_bench_smoke)
#
# Options: --build-dir DIR (default build-gpu), --report FILE, --device N,
# --steps N (timed training steps, default 200), --only LIST (gpu_bench's
# sections: elementwise,gemm,train), --sanitizer-filter GTEST_FILTER
# (limit the sanitizer runs, e.g. on a slow racecheck). Environment:
# CH_SANITIZER_TIMEOUT (seconds per sanitizer run, default 3600), PYTHON
# (default python3) for torch_peer.py, COMPUTE_SANITIZER (default: on PATH or in
# /usr/local/cuda/bin). Exit status: non-zero when a test, a sanitizer run or a
# benchmark failed; the report says which.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="$root/build-gpu"
report=""
smoke=0
skip_sanitizer=0
bench_only=0
no_build=0
device=0
steps=""
only=""
sanitizer_filter="*"
sanitizer_timeout="${CH_SANITIZER_TIMEOUT:-3600}"
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --skip-sanitizer) skip_sanitizer=1 ;;
    --bench-only) bench_only=1 ;;
    --no-build) no_build=1 ;;
    --build-dir) build_dir="$(cd "$2" 2>/dev/null && pwd || echo "$2")"; shift ;;
    --report) report="$2"; shift ;;
    --device) device="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --only) only="$2"; shift ;;
    --sanitizer-filter) sanitizer_filter="$2"; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
python="${PYTHON:-python3}"
log() { printf '==> %s\n' "$*" >&2; }

if [ "$smoke" = "1" ]; then
  # CI: the benchmark on the emulated devices, nothing built, nothing timed.
  bench="$build_dir/bench/gpu/gpu_bench"
  [ -x "$bench" ] || { echo "run.sh --smoke: $bench is not built" >&2; exit 1; }
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  peer_args=()
  if "$python" -c "import torch" >/dev/null 2>&1; then
    log "torch_peer.py --smoke on the CPU"
    "$python" "$root/bench/gpu/torch_peer.py" --smoke --device cpu >"$tmp/peer.txt"
    grep -q '^train mlp ' "$tmp/peer.txt" || { echo "torch_peer.py wrote no result" >&2; exit 1; }
    peer_args=(--peer "$tmp/peer.txt")
  else
    log "no torch for $python: torch_peer.py not run"
  fi
  "$bench" --smoke --device "$device" ${only:+--only "$only"} "${peer_args[@]+"${peer_args[@]}"}"
  exit 0
fi

report="${report:-$build_dir/gpu-report.md}"
status=0
sections=()

if [ "$bench_only" = "0" ] && [ "$no_build" = "0" ]; then
  # shellcheck source=scripts/common.sh disable=SC1091
  source "$root/scripts/common.sh"
  ch_ensure_deps
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L >&2 || true; else log "nvidia-smi not found"; fi
  log "configuring $build_dir (release, CUDA backend required)"
  ch_configure "$build_dir" -Dcuda=enabled -Dexamples=false -Dbenchmarks=auto
  ch_build "$build_dir"
fi
bench="$build_dir/bench/gpu/gpu_bench"
[ -x "$bench" ] || { echo "run.sh: $bench is not built" >&2; exit 1; }
mkdir -p "$(dirname "$report")"
logs="$build_dir/gpu-logs"
mkdir -p "$logs"

if [ "$bench_only" = "0" ]; then
  log "the gpu suite with CH_REQUIRE_GPU=1"
  if CH_REQUIRE_GPU=1 meson test -C "$build_dir" --no-rebuild --suite gpu --print-errorlogs \
      >"$logs/suite.log" 2>&1; then
    suite_result="passed"
  else
    suite_result="FAILED (see $logs/suite.log)"
    status=1
  fi
  sections+=("### The gpu suite (CH_REQUIRE_GPU=1)" "" "$suite_result:" ""
             "$( (grep -E '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):' "$logs/suite.log" \
                 || tail -n 3 "$logs/suite.log") | sed 's/^/    /')" "")

  if [ "$skip_sanitizer" = "0" ]; then
    sanitizer="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer ||
                                      echo /usr/local/cuda/bin/compute-sanitizer)}"
    [ -x "$sanitizer" ] || {
      echo "run.sh: compute-sanitizer not found ($sanitizer)" >&2
      exit 1
    }
    rows=("| tool | program | result | log |" "| --- | --- | --- | --- |")
    for tool in memcheck racecheck synccheck; do
      for prog in test_gpu test_gpu_internal test_gpu_functions; do
        exe="$build_dir/tests/gpu/$prog"
        out="$logs/$tool-$prog.log"
        if [ ! -x "$exe" ]; then
          rows+=("| $tool | $prog | FAILED: not built | |")
          status=1
          continue
        fi
        log "compute-sanitizer --tool $tool $prog"
        if CH_REQUIRE_GPU=1 timeout "$sanitizer_timeout" "$sanitizer" --tool "$tool" \
            --error-exitcode 99 "$exe" --gtest_filter="$sanitizer_filter" >"$out" 2>&1; then
          result="clean"
        else
          rc=$?
          first="$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|FAILED' "$out" || true)"
          result="FAILED (exit $rc$([ "$rc" = 124 ] && echo ': timed out')): $first"
          status=1
        fi
        rows+=("| $tool | $prog | $result | $out |")
      done
    done
    sections+=("### compute-sanitizer" "" "${rows[@]}" "")
  fi
fi

peer_args=()
if "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  log "PyTorch eager (torch_peer.py)"
  if "$python" "$root/bench/gpu/torch_peer.py" --device "cuda:$device" ${steps:+--steps "$steps"} \
      >"$logs/peer.txt" 2>"$logs/peer.err"; then
    peer_args=(--peer "$logs/peer.txt")
  else
    log "torch_peer.py failed (see $logs/peer.err)"
    status=1
  fi
else
  log "no torch with CUDA for $python: the PyTorch columns read n/a"
fi

log "gpu_bench"
if "$bench" --device "$device" ${steps:+--steps "$steps"} ${only:+--only "$only"} "${peer_args[@]+"${peer_args[@]}"}" \
    >"$logs/bench.md" 2>"$logs/bench.err"; then
  :
else
  log "gpu_bench failed (see $logs/bench.err)"
  status=1
fi

{
  echo "# chainerc on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i "$device" 2>/dev/null || echo 'an unknown GPU')"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  printf '%s\n' "${sections[@]+"${sections[@]}"}"
  cat "$logs/bench.md"
  [ -s "$logs/bench.err" ] && { echo; echo '```'; cat "$logs/bench.err"; echo '```'; }
} >"$report"
cat "$report"
log "report: $report"
exit "$status"
