#!/usr/bin/env bash
# The one-shot real-GPU check (issue 46): everything is built on the CPU build
# machine beforehand and packed into one folder; on the GPU machine this script
# installs nothing, needs no meson, no compiler and no network, and runs within
# a deadline (8 minutes by default) on one GPU.
#
# On the build machine (a build folder configured with the CUDA backend, or the
# emulated one for the rehearsal):
#   bench/gpu/device_check.sh --pack BUILD_DIR DEST [--fast]
#       DEST/ gets this script, torch_peer.py, MANIFEST and payload.tar.xz (the
#       gpu suite's test programs and gpu_bench, stripped, with the non-CUDA,
#       non-glibc shared libraries they load); refused when DEST is 64 MiB or more.
# On the GPU machine:
#   DEST/device_check.sh [--out DIR] [--deadline SECONDS]
#       (DIR defaults to $OUT, else ./device-check-out). Stages:
#       1. the gpu suite with CH_REQUIRE_GPU=1 (a skip for want of a GPU is a
#          failure; tests that need a second GPU skip on a one-GPU machine) and
#          CH_REQUIRE_CUDNN=1 (cuDNN must load);
#       2. the same with cuDNN hidden (CH_DISABLE_CUDNN=1: chainerc's own kernels);
#       3. compute-sanitizer memcheck, racecheck and synccheck on a bounded
#          subset, where the tool exists (not run otherwise: said so, no failure);
#          memcheck leaves out the tests that run out of memory on purpose;
#       4. gpu_bench, against PyTorch eager (torch_peer.py) when torch with CUDA
#          is importable by python3 there.
#       Writes at most 4 files under DIR: summary.md, junit.xml, bench.md and
#       logs.tar.gz. Exits non-zero when anything failed or did not run in time.
# The rehearsal (CI, on the emulated devices; meson test device_check_rehearsal):
#   bench/gpu/device_check.sh --rehearse BUILD_DIR    packs (xz -0) and runs:
#   DEST/device_check.sh --emulated [--quick] --out DIR
#       one emulated device (CH_EMULATED_DEVICES=1, so the two-device skips are
#       exercised), no cuDNN requirement, gpu_bench --smoke; --quick narrows the
#       agreement tests to a few groups.
set -euo pipefail

die() { echo "device_check.sh: $*" >&2; exit 2; }
log() { printf '==> [%4ds] %s\n' "$SECONDS" "$*" >&2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The test programs of the gpu suite (tests/gpu/meson.build) and the benchmark.
# The emulated build has a few more (user kernels, the emulator itself).
PROGRAMS="tests/gpu/test_gpu tests/gpu/test_gpu_internal tests/gpu/test_gpu_functions
tests/gpu/test_gpu_training tests/gpu/test_gpu_callbacks tests/gpu/test_gpu_graph
tests/gpu/test_gpu_user_kernels tests/gpu/test_gpu_user_kernels_shared tests/gpu/test_emulator
bench/gpu/gpu_bench"
MAX_PACKAGE_BYTES=$((64 * 1024 * 1024))

# ---------------------------------------------------------------- packing
pack() {
  local build="$1" dest="$2" level="${3:--6}"
  [ -f "$build/src/libchainerc.so" ] || die "--pack: $build/src/libchainerc.so is not built"
  command -v xz >/dev/null || die "--pack: xz not found"
  local stage
  stage="$(mktemp -d)"
  # shellcheck disable=SC2064
  trap "rm -rf '$stage'" EXIT
  mkdir -p "$stage/bin" "$stage/lib"
  local p name found=0
  for p in $PROGRAMS; do
    [ -x "$build/$p" ] || continue
    name="$(basename "$p")"
    cp "$build/$p" "$stage/bin/$name"
    strip --strip-unneeded "$stage/bin/$name"
    found=$((found + 1))
  done
  [ "$found" -gt 0 ] || die "--pack: no test program of the gpu suite in $build"
  [ -x "$stage/bin/gpu_bench" ] || die "--pack: $build/bench/gpu/gpu_bench is not built"
  cp -L "$build/src/libchainerc.so.0" "$stage/lib/libchainerc.so.0"
  strip --strip-unneeded "$stage/lib/libchainerc.so.0"
  # The shared libraries the programs load, except glibc's (they must be the
  # GPU machine's own, matching its loader) and CUDA's (the driver and the
  # toolkit there; cuBLAS, cuRAND, cuDNN and NVRTC are opened on first use).
  local f lib path
  for f in "$stage"/bin/* "$stage/lib/libchainerc.so.0"; do
    LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f" 2>/dev/null |
      awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r lib path; do
    case "$lib" in
      ld-linux*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*) continue ;;
      libresolv.so.*|libutil.so.*|libcuda.so.*|libcudart*|libcublas*|libcurand*) continue ;;
      libcudnn*|libnvrtc*|libnvJitLink*|libchainerc.so.*) continue ;;
    esac
    [ -e "$stage/lib/$lib" ] || cp -L "$path" "$stage/lib/$lib"
  done
  mkdir -p "$dest"
  rm -f "$dest/payload.tar.xz" "$dest/MANIFEST"
  tar -C "$stage" -cf - bin lib | xz -T2 "$level" >"$dest/payload.tar.xz"
  cp "$here/device_check.sh" "$dest/device_check.sh"
  cp "$here/torch_peer.py" "$dest/torch_peer.py"
  chmod +x "$dest/device_check.sh"
  {
    echo "packed $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) from $(cd "$build" && pwd)"
    echo "commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    grep -E "^ *(CUDA backend|CUDA emulation|cuDNN)" "$build/meson-logs/meson-log.txt" 2>/dev/null |
      sed 's/^ */build: /' | sort -u || true
    echo "glibc of the build machine: $(ldd --version 2>/dev/null | head -n1)"
    (cd "$stage" && find bin lib -type f -printf '%s %p\n' | sort -k2)
  } >"$dest/MANIFEST"
  local bytes
  bytes="$(du -sb "$dest" | cut -f1)"
  echo "device_check.sh: packed $found programs into $dest ($((bytes / 1024)) KiB)"
  [ "$bytes" -lt "$MAX_PACKAGE_BYTES" ] || die "--pack: $dest is $bytes bytes, 64 MiB or more"
}

# ---------------------------------------------------------------- running
out="${OUT:-}"
deadline=480
emulated=0
quick=0
case "${1:-}" in
  --rehearse)
    # CI (meson test device_check_rehearsal): pack BUILD_DIR (emulated) into a
    # scratch folder, run the packed copy as on a GPU machine, check its files.
    [ $# -eq 2 ] || die "usage: device_check.sh --rehearse BUILD_DIR"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    "$here/device_check.sh" --pack "$2" "$scratch/pkg" --fast
    rc=0
    (cd "$scratch" && bash pkg/device_check.sh --emulated --quick --out "$scratch/out") || rc=$?
    n="$(find "$scratch/out" -type f | wc -l)"
    for f in summary.md junit.xml bench.md logs.tar.gz; do
      [ -s "$scratch/out/$f" ] || die "--rehearse: $f was not written"
    done
    [ "$n" -le 8 ] || die "--rehearse: $n files under the output folder (at most 8)"
    grep -q '^| suite | passed ' "$scratch/out/summary.md" || die "--rehearse: the suite did not pass"
    grep -q 'skipped' "$scratch/out/summary.md" || die "--rehearse: no skip count in the summary"
    if command -v python3 >/dev/null; then
      python3 - "$scratch/out/junit.xml" <<'PY' || die "--rehearse: junit.xml is not valid JUnit XML"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
assert root.tag == "testsuites" and len(cases) > 10, len(cases)
# The two-device tests skip (one emulated device), they do not fail.
two = [c for c in cases if c.get("name") in ("ModelParallelOverTwoDevices", "DataParallelOverTwoDevices")]
assert two and all(c.find("skipped") is not None for c in two), "two-device tests not skipped"
PY
    fi
    echo "device_check.sh --rehearse: exit status $rc, $n files"
    exit "$rc"
    ;;
  --pack)
    # --fast (the rehearsal): xz -0, a larger payload packed in seconds.
    [ $# -eq 3 ] || { [ $# -eq 4 ] && [ "$4" = --fast ]; } ||
      die "usage: device_check.sh --pack BUILD_DIR DEST [--fast]"
    pack "$2" "$3" "$([ "${4:-}" = --fast ] && echo -0 || echo -6)"
    exit 0
    ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --deadline) deadline="$2"; shift ;;
    --emulated) emulated=1 ;;
    --quick) quick=1 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
out="${out:-$PWD/device-check-out}"
[ -f "$here/payload.tar.xz" ] || die "no payload.tar.xz beside this script: run it from a folder made by --pack"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/chainerc-device-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
logs="$work/logs"
mkdir -p "$logs" "$work/xml"
if command -v xz >/dev/null; then
  xz -dc "$here/payload.tar.xz" | tar -C "$work" -xf -
else
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$here/payload.tar.xz" "$work"
fi
bin="$work/bin"
# The packed libraries first; then the CUDA toolkit's usual folders, for the
# libraries opened on first use, where the loader's path lacks them.
ld_path="$work/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && ld_path="$ld_path:$d"
done
export LD_LIBRARY_PATH="$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Every disk cache (GEMM choices, kernels) in the scratch folder, not in ~/.cache.
export XDG_CACHE_HOME="$work/cache"
unset CH_GEMM_CACHE_DIR
if [ "$emulated" = "1" ]; then
  # One emulated device, as on a one-GPU loan: the two-device tests must skip.
  export CH_EMULATED_DEVICES=1
else
  export CH_REQUIRE_CUDNN=1
fi
export CH_REQUIRE_GPU=1

failures=0
rows=()      # summary table rows
junit=()     # extra <testsuite> elements (sanitizer runs, crashes)
remaining() { echo $((deadline - SECONDS)); }
timed_out() { if [ "$1" = 124 ]; then echo ' (timed out)'; fi; }
xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
# synthetic_case SUITE NAME PASSED MESSAGE: one JUnit test case of its own suite.
synthetic_case() {
  local msg
  msg="$(printf '%s' "$4" | xml_escape | tr '\n' ' ')"
  if [ "$3" = "1" ]; then
    junit+=("<testsuite name=\"$1\" tests=\"1\" failures=\"0\"><testcase name=\"$2\" classname=\"$1\"/></testsuite>")
  else
    junit+=("<testsuite name=\"$1\" tests=\"1\" failures=\"1\"><testcase name=\"$2\" classname=\"$1\"><failure message=\"$msg\"/></testcase></testsuite>")
  fi
}
# count_xml FILE: "tests failures skipped" of a GoogleTest XML report.
count_xml() {
  local t f s
  t="$(grep -c '<testcase ' "$1" || true)"
  f="$(grep -c '<failure ' "$1" || true)"
  s="$(grep -c '<skipped' "$1" || true)"
  echo "$t $f $s"
}

# run_suite STAGE BUDGET [ENV=VALUE...]: each test program once (the CH_SEED
# test again in a process of its own), GoogleTest XML per run.
run_suite() {
  local stage="$1" budget="$2" t0=$SECONDS
  shift 2
  local runs=() prog
  for prog in test_gpu test_gpu_internal test_gpu_functions test_gpu_training test_gpu_callbacks \
      test_gpu_graph test_gpu_user_kernels test_gpu_user_kernels_shared test_emulator; do
    [ -x "$bin/$prog" ] && runs+=("$prog")
  done
  local total=0 failed=0 skipped=0 broken=()
  for prog in "${runs[@]}" ch_seed; do
    local exe="$bin/$prog" filter="" extra_env=()
    if [ "$prog" = ch_seed ]; then
      exe="$bin/test_gpu"; filter="GpuChSeed.*"; extra_env=(CH_SEED=77)
    elif [ "$prog" = test_gpu_functions ] && [ "$quick" = "1" ]; then
      filter="GpuFunctions.Cudnn*:CudnnSwitch.*:*Accuracy*"
    elif [ "$prog" = test_gpu_user_kernels ] && [ "$quick" = "1" ]; then
      filter="*MulAdd*"
    fi
    local left=$((budget - (SECONDS - t0)))
    [ "$(remaining)" -lt "$left" ] && left="$(remaining)"
    local xml="$work/xml/$stage.$prog.xml" rc=0
    if [ "$left" -le 0 ]; then
      broken+=("$prog: not run (out of time)")
      synthetic_case "$stage.$prog" "run" 0 "not run: the deadline was reached"
      continue
    fi
    env "$@" "${extra_env[@]+"${extra_env[@]}"}" timeout -k 5 "$left" "$exe" \
      ${filter:+--gtest_filter="$filter"} --gtest_output="xml:$xml" \
      >"$logs/$stage.$prog.log" 2>&1 || rc=$?
    if [ -s "$xml" ]; then
      sed -i "s/<testsuite name=\"/<testsuite name=\"$stage.$prog./" "$xml"
      local c
      read -r -a c <<<"$(count_xml "$xml")"
      total=$((total + c[0])); failed=$((failed + c[1])); skipped=$((skipped + c[2]))
      if [ "$rc" -ne 0 ] && [ "${c[1]}" -eq 0 ]; then
        broken+=("$prog: exit status $rc with no failed test")
        synthetic_case "$stage.$prog" "exit" 0 "exit status $rc; $(tail -n 3 "$logs/$stage.$prog.log")"
      fi
    else
      rm -f "$xml"
      broken+=("$prog: exit status $rc, no report$(timed_out "$rc")")
      synthetic_case "$stage.$prog" "run" 0 "exit status $rc, no report: $(tail -n 3 "$logs/$stage.$prog.log")"
    fi
  done
  local verdict="passed"
  if [ "$failed" -gt 0 ] || [ "${#broken[@]}" -gt 0 ]; then
    verdict="FAILED"
    failures=$((failures + 1))
  fi
  local details="$total tests, $failed failed, $skipped skipped"
  [ "${#broken[@]}" -gt 0 ] && details="$details$(printf '; %s' "${broken[@]}")"
  rows+=("| $stage | $verdict | $details | $((SECONDS - t0)) s |")
  log "$stage: $verdict ($total tests, $failed failed, $skipped skipped)"
}

# The GPU and its software, for the summary.
{
  echo "host: $(uname -n), $(uname -r), $(ldd --version 2>/dev/null | head -n1)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1
  else
    echo "nvidia-smi: not found"
  fi
  sed -n '1,3p' "$here/MANIFEST" 2>/dev/null
} >"$logs/environment.txt" 2>&1 || true
log "$(head -n 2 "$logs/environment.txt" | tr '\n' ' ')"

# Budgets: the suite is seconds on a GPU, the sanitizers tens of times slower.
if [ "$emulated" = "1" ]; then
  run_suite suite $((deadline / 2))
  run_suite suite-no-cudnn $((deadline / 4)) CH_DISABLE_CUDNN=1
else
  run_suite suite 150
  run_suite suite-no-cudnn 100 CH_DISABLE_CUDNN=1 CH_REQUIRE_CUDNN=0
fi

# compute-sanitizer on a bounded subset: the C API suite, the training tests,
# and the agreement tests of the kernels with shared memory and barriers.
sanitizer="${COMPUTE_SANITIZER:-}"
if [ -z "$sanitizer" ]; then
  for c in "$(command -v compute-sanitizer || true)" /usr/local/cuda/bin/compute-sanitizer \
      /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [ -n "$c" ] && [ -x "$c" ] && { sanitizer="$c"; break; }
  done
fi
if [ "$emulated" = "1" ] || [ -z "$sanitizer" ]; then
  why="$([ "$emulated" = "1" ] && echo "emulated devices" || echo "compute-sanitizer not found")"
  rows+=("| compute-sanitizer | not run | $why | 0 s |")
  log "compute-sanitizer: not run ($why)"
else
  t0=$SECONDS
  sane_fail=0 sane_rows=()
  oom="GpuMemory.LimitGivesOutOfMemoryAndTheEngineRecovers:GpuMemory.OomHookRunsOnceAndTheRetrySucceeds:GpuTraining.OutOfMemoryDuringAStepIsRecovered"
  for tool in memcheck racecheck synccheck; do
    for spec in "test_gpu:GpuArrays.*:GpuMemory.*" "test_gpu_training:*" \
        "test_gpu_functions:*Softmax*:*Sum*:*BatchNorm*:*Linear*"; do
      prog="${spec%%:*}"; filter="${spec#*:}"
      [ "$tool" = memcheck ] && filter="$filter-$oom"
      [ "$tool" != memcheck ] && [ "$prog" = test_gpu ] && filter="GpuArrays.*"
      left=$((240 - (SECONDS - t0)))
      [ "$(remaining)" -lt "$left" ] && left="$(remaining)"
      logf="$logs/sanitizer.$tool.$prog.log"
      if [ "$left" -le 0 ]; then
        sane_rows+=("$tool $prog: not run (out of time)"); sane_fail=1
        synthetic_case "sanitizer.$tool" "$prog" 0 "not run: the deadline was reached"
        continue
      fi
      rc=0
      timeout -k 5 "$left" "$sanitizer" --tool "$tool" --error-exitcode 99 "$bin/$prog" \
        --gtest_filter="$filter" >"$logf" 2>&1 || rc=$?
      if [ "$rc" = 0 ]; then
        synthetic_case "sanitizer.$tool" "$prog" 1 ""
      else
        first="$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|FAILED|Error' "$logf" || true)"
        sane_rows+=("$tool $prog: exit $rc$(timed_out "$rc"): $first")
        sane_fail=1
        synthetic_case "sanitizer.$tool" "$prog" 0 "exit status $rc: $first"
      fi
    done
  done
  if [ "$sane_fail" = 1 ]; then failures=$((failures + 1)); fi
  details="memcheck, racecheck, synccheck x 3 programs"
  [ "${#sane_rows[@]}" -gt 0 ] && details="$details$(printf '; %s' "${sane_rows[@]}")"
  rows+=("| compute-sanitizer | $([ "$sane_fail" = 1 ] && echo FAILED || echo clean) | $details | $((SECONDS - t0)) s |")
  log "compute-sanitizer: $([ "$sane_fail" = 1 ] && echo FAILED || echo clean)"
fi

# The benchmarks.
t0=$SECONDS
bench_note=""
peer_args=()
: >"$logs/bench.md"
if [ "$emulated" = "1" ]; then
  bench_args=(--smoke)
else
  bench_args=(--steps 100)
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
    left=$((120 < $(remaining) ? 120 : $(remaining)))
    if [ "$left" -gt 0 ] && timeout -k 5 "$left" python3 "$here/torch_peer.py" --device cuda:0 \
        --steps 100 >"$logs/peer.txt" 2>"$logs/peer.err"; then
      peer_args=(--peer "$logs/peer.txt")
      bench_note="against PyTorch eager ($(grep -m1 '^about' "$logs/peer.txt" | cut -c7-))"
    else
      bench_note="torch_peer.py FAILED (logs/peer.err)"
      failures=$((failures + 1))
    fi
  else
    bench_note="no torch with CUDA for python3: PyTorch columns n/a"
  fi
fi
left="$(remaining)"
rc=0
if [ "$left" -gt 0 ]; then
  timeout -k 5 "$left" "$bin/gpu_bench" "${bench_args[@]}" "${peer_args[@]+"${peer_args[@]}"}" \
    >"$logs/bench.md" 2>"$logs/bench.err" || rc=$?
else
  rc=124
fi
if [ "$rc" = 0 ]; then
  rows+=("| gpu_bench | passed | ${bench_args[*]} ${bench_note} | $((SECONDS - t0)) s |")
else
  rows+=("| gpu_bench | FAILED | exit status $rc$(timed_out "$rc"); ${bench_note} | $((SECONDS - t0)) s |")
  failures=$((failures + 1))
fi
synthetic_case "bench" "gpu_bench" "$([ "$rc" = 0 ] && echo 1 || echo 0)" "exit status $rc: $(tail -n 3 "$logs/bench.err" 2>/dev/null)"
log "gpu_bench: exit status $rc"

# ---------------------------------------------------------------- results
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<testsuites name="device_check">'
  for x in "$work"/xml/*.xml; do
    [ -e "$x" ] || continue
    grep -v -E '^<\?xml|^<testsuites|^</testsuites>' "$x"
  done
  printf '%s\n' "${junit[@]+"${junit[@]}"}"
  echo '</testsuites>'
} >"$out/junit.xml"
cp "$logs/bench.md" "$out/bench.md"
{
  echo "# chainerc device check$([ "$emulated" = "1" ] && echo " (rehearsal on the emulated devices)" || true)"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $SECONDS s of a $deadline s deadline"
  echo
  echo '```'
  cat "$logs/environment.txt"
  echo '```'
  echo
  echo "| stage | result | details | time |"
  echo "| --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  if [ "$failures" -eq 0 ]; then echo "All stages passed."; else echo "$failures stage(s) FAILED."; fi
  # The first failure messages, so that the summary alone says what broke.
  grep -h -A3 -E '^\[  FAILED  \]|Failure$' "$logs"/suite*.log 2>/dev/null | head -n 40 |
    sed '1s/^/\n```\n/;$s/$/\n```/' || true
} >"$out/summary.md"
tar -C "$work" -czf "$out/logs.tar.gz" logs
cat "$out/summary.md"
[ "$failures" -eq 0 ]
