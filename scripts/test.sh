#!/usr/bin/env bash
# Installs what is missing, builds chainerc, and runs the tests in three passes:
#   1. build/           the default (release) configuration;
#   2. build-sanitize/  -O1 -g1 with AddressSanitizer (leak checks on) and
#                       UndefinedBehaviorSanitizer (halting on the first report);
#   3. build-emulated/  -Dcuda-emulation=true, lean: the library and the gpu test
#                       suite only, run on the emulated CUDA devices (cuda/emulation/).
# The last line printed is "N passed, N failed" (", N skipped" when some were),
# counting each GoogleTest case of every test program in both passes, and each
# other test as one. Exits non-zero when anything failed or did not build.
#
# Environment:
#   CH_SKIP_SANITIZE=1     skip the sanitizer pass (quick local runs)
#   CH_SKIP_WRAPPERS=1     skip the language wrappers' suites (wrappers/*/test.sh; after
#                          the emulated pass, their GPU tests also run against
#                          build-emulated's library)
#   CH_SKIP_FUZZ=1         skip the fuzz pass (build-fuzz: clang, libFuzzer, ASan+UBSan,
#                          each target of tests/fuzz fuzzed for 15 s, one test each)
#   CH_SKIP_TSAN=1         skip the ThreadSanitizer pass (build-tsan: the library and
#                          tests/reliability/test_thread_stress only)
#   CH_SKIP_PACKAGING=1    skip the packaging checks (scripts/packaging.sh: the Debian
#                          packages, the Python wheel, the Go module and the Rust crates,
#                          each installed and used outside the repository)
#   CH_BUILD_DIR           build folder of the first pass (default: build)
#   CH_SANITIZE_BUILD_DIR  build folder of the second pass (default: build-sanitize)
#   CH_SKIP_EMULATED=1     skip the emulated-GPU pass
#   CH_EMULATED_BUILD_DIR  build folder of the emulated-GPU pass (default: build-emulated)
#   CH_MESON_ARGS          extra `meson setup` options for both passes
#   CH_TEST_ARGS           extra `meson test` arguments for both passes
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$CH_ROOT"

summary_printed=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
on_exit() {
  local rc=$?
  # Whatever went wrong before the summary, still close with the count line.
  if [ "$summary_printed" -eq 0 ] && [ "$rc" -ne 0 ]; then
    echo "test.sh: stopped before running the tests (exit status $rc)" >&2
    echo "0 passed, 1 failed"
  fi
}
trap on_exit EXIT

t0=$SECONDS
ch_ensure_deps

build_dir="${CH_BUILD_DIR:-build}"
sanitize_dir="${CH_SANITIZE_BUILD_DIR:-build-sanitize}"
summary_args=()
# The measured GEMM choices (src/backend/cpu/gemm_cache.h) of the wrappers'
# suites go to the build folder, not ~/.cache (meson test sets its own).
export CH_GEMM_CACHE_DIR="${CH_GEMM_CACHE_DIR:-$CH_ROOT/$build_dir/gemm-cache}"

# run_pass NAME BUILD_DIR TIMEOUT_MULTIPLIER [meson setup options...]
run_pass() {
  local name="$1" dir="$2" mult="$3"
  shift 3
  local t=$SECONDS
  ch_log "pass '$name' in $dir"
  if ! ch_configure "$dir" "$@"; then
    summary_args+=(--stage-failed "$name: meson setup $dir")
    return 0
  fi
  if ! ch_build "$dir"; then
    summary_args+=(--stage-failed "$name: build ($dir)")
    return 0
  fi
  # A stale log must never be read as this run's result.
  rm -f "$dir/meson-logs/testlog.json" "$dir/meson-logs/testlog.junit.xml"
  local test_args=()
  if [ -n "${CH_TEST_ARGS:-}" ]; then
    # shellcheck disable=SC2206
    test_args=(${CH_TEST_ARGS})
  fi
  ch_log "meson test -C $dir"
  # meson test's own status is not used: summarize.py reads its logs.
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$(ch_jobs)" \
    --timeout-multiplier "$mult" "${test_args[@]+"${test_args[@]}"}" || true
  summary_args+=(--pass "$name=$dir")
  ch_log "pass '$name' took $((SECONDS - t)) s"
}

run_pass default "$build_dir" 1

if [ "${CH_SKIP_SANITIZE:-0}" = "1" ]; then
  ch_log "CH_SKIP_SANITIZE=1: skipping the sanitizer pass"
else
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  # LeakSanitizer cannot run under ptrace or in some sandboxes; it then fails
  # every program. Check once with a tiny program and say so, rather than
  # report a failure per test.
  probe_dir="$(mktemp -d)"
  printf 'int main(void) { return 0; }\n' >"$probe_dir/probe.c"
  if cc -fsanitize=address "$probe_dir/probe.c" -o "$probe_dir/probe" 2>/dev/null &&
     ! "$probe_dir/probe" >/dev/null 2>"$probe_dir/err"; then
    if grep -q "LeakSanitizer" "$probe_dir/err"; then
      ch_log "WARNING: LeakSanitizer does not work here ($(head -n1 "$probe_dir/err")); leak checks off"
      ASAN_OPTIONS="${ASAN_OPTIONS//detect_leaks=1/detect_leaks=0}"
    fi
  fi
  rm -rf "$probe_dir"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
  # Without the CUDA backend: no GPU runs here, the .cu files are compiled by
  # the default pass and executed by the emulated one, and nvcc would double
  # the pass's build time. -O1 with line tables only (-g1; assertions kept):
  # the usual setting for sanitizer builds, and the pass's build from cold took
  # 8 min on the 2-core VM against about twice that at -O2 -g (whose debug
  # information for the instrumented code was most of the compile time), with
  # the same 31 test programs passing in 29 s.
  run_pass sanitize "$sanitize_dir" 3 \
    -Doptimization=1 -Ddebug=false -Db_ndebug=false -Dc_args=-g1 -Dcpp_args=-g1 \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled -Dcuda=disabled
fi

# The gpu suite on emulated CUDA devices: CUDA code run on the CPU (each CUDA
# thread a fiber). Lean: only the library and tests/gpu are built there, at
# -O0 with assertions on (87 CPU-seconds of compilation instead of 135 at -O3;
# the suite runs in about 2 CPU-seconds either way).
if [ "${CH_SKIP_EMULATED:-0}" = "1" ]; then
  ch_log "CH_SKIP_EMULATED=1: skipping the emulated-GPU pass"
else
  run_pass emulated "${CH_EMULATED_BUILD_DIR:-build-emulated}" 2 \
    -Dcuda-emulation=true -Dexamples=false -Dbenchmarks=disabled -Doptimization=0
fi

# Fuzz pass: a lean clang build (the library and the fuzz targets only, with
# libFuzzer's coverage, AddressSanitizer and UndefinedBehaviorSanitizer); its
# meson tests fuzz each target of tests/fuzz for a fixed time from its seed
# corpus (tests/fuzz/meson.build). scripts/fuzz.sh runs them longer.
if [ "${CH_SKIP_FUZZ:-0}" = "1" ]; then
  ch_log "CH_SKIP_FUZZ=1: skipping the fuzz pass"
else
  CC=clang CXX=clang++ run_pass fuzz build-fuzz 1 \
    --buildtype=debugoptimized -Doptimization=1 -Dwerror=false -Dfuzzing=true -Dtests=false \
    -Dexamples=false -Dbenchmarks=disabled -Dcuda=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false
fi

# ThreadSanitizer pass: the library and the thread stress test only
# (-Dstress_tests=true with -Dtests=false). OpenBLAS and oneDNN are not
# instrumented: BLAS runs on the calling thread and oneDNN is left out.
if [ "${CH_SKIP_TSAN:-0}" = "1" ]; then
  ch_log "CH_SKIP_TSAN=1: skipping the ThreadSanitizer pass"
else
  OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}" \
    run_pass tsan build-tsan 1 \
    --buildtype=debugoptimized -Dtests=false -Dstress_tests=true -Dexamples=false \
    -Dbenchmarks=disabled -Dcuda=disabled -Ddnnl=disabled -Db_sanitize=thread -Db_lundef=false
fi

# Language wrappers (wrappers/<language>/test.sh) against the release build's
# library; each prints its own "N passed, N failed" line, which summarize.py
# adds to the total. CH_SKIP_WRAPPERS=1 skips them.
if [ "${CH_SKIP_WRAPPERS:-0}" != "1" ]; then
  for suite in "$CH_ROOT"/wrappers/*/test.sh; do
    [ -f "$suite" ] || continue
    lang="$(basename "$(dirname "$suite")")"
    log="$build_dir/wrapper-$lang.log"
    ch_log "wrapper tests: $lang"
    t=$SECONDS
    lib_dir="$(cd "$build_dir/src" && pwd)"
    CHAINERC_LIB_DIR="$lib_dir" CHAINERC_LIBRARY="$lib_dir/libchainerc.so" \
      bash "$suite" >"$log" 2>&1 || true
    tail -n 5 "$log" >&2
    summary_args+=(--external "$lang=$log")
    ch_log "wrapper '$lang' took $((SECONDS - t)) s"
  done
  # The wrappers' GPU tests again, against the emulated pass's library (the
  # release build has no GPU here, so they skip above): the Python cuda module
  # and GPU user functions, the Go and Rust device, user-kernel and GPU
  # callback tests. A few seconds each.
  emu_dir="${CH_EMULATED_BUILD_DIR:-build-emulated}"
  if [ "${CH_SKIP_EMULATED:-0}" != "1" ] && [ -e "$emu_dir/src/libchainerc.so" ]; then
    emu_lib_dir="$(cd "$emu_dir/src" && pwd)"
    for lang in python go rust; do
      suite="$CH_ROOT/wrappers/$lang/test.sh"
      [ -f "$suite" ] || continue
      log="$emu_dir/wrapper-$lang-gpu.log"
      ch_log "wrapper GPU tests on the emulated devices: $lang"
      t=$SECONDS
      CHAINERC_LIB_DIR="$emu_lib_dir" CHAINERC_LIBRARY="$emu_lib_dir/libchainerc.so" \
        CHAINERC_TEST_PATHS="tests/test_cuda.py tests/test_cuda_graph.py" \
        CHAINERC_TEST_RUN='^(TestDevicesAndCopies|TestUserKernels|TestGPUCallback.*|TestGPUTraining.*)$' \
        CHAINERC_TEST_TARGETS="devices gpu_callback gpu_training" \
        bash "$suite" >"$log" 2>&1 || true
      tail -n 3 "$log" >&2
      summary_args+=(--external "$lang-gpu-emulated=$log")
      ch_log "wrapper '$lang' GPU tests (emulated) took $((SECONDS - t)) s"
    done
  fi
fi

# Packaging: one build of the packages (the default pass's objects, from
# ccache), each installed and used outside the repository; the wheel's
# install test replaces the Python suite's own build of the library.
if [ "${CH_SKIP_PACKAGING:-0}" != "1" ]; then
  log="$build_dir/packaging.log"
  ch_log "packaging checks (scripts/packaging.sh)"
  t=$SECONDS
  bash "$CH_ROOT/scripts/packaging.sh" >"$log" 2>&1 || true
  tail -n 3 "$log" >&2
  summary_args+=(--external "packaging=$log")
  ch_log "packaging checks took $((SECONDS - t)) s"
fi

ch_log "total time $((SECONDS - t0)) s"
set +e
python3 "$CH_ROOT/tests/summarize.py" "${summary_args[@]}"
rc=$?
summary_printed=1
if [ "$rc" -gt 1 ]; then
  echo "test.sh: tests/summarize.py failed (exit status $rc)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
exit "$rc"
