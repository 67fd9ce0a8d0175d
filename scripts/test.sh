#!/usr/bin/env bash
# Installs what is missing, builds chainerc, and runs the tests in these passes:
#   1. build/           the default (release) configuration, CUDA backend included
#                       where nvcc is found;
#   2. build-sanitize/  clang, -O1 -g1 with AddressSanitizer (leak checks on),
#                       UndefinedBehaviorSanitizer (halting on the first report)
#                       and libFuzzer's coverage: every test program, and the
#                       fuzz targets of tests/fuzz (suite 'fuzz': each target
#                       fuzzed for a fixed number of runs, one test each);
#   3. build-emulated/  -Dcuda-emulation=true, lean: the library and the gpu test
#                       suite only, run on the emulated CUDA devices (cuda/emulation/);
#   4. build-tsan/      ThreadSanitizer, lean: the library and the thread stress test;
# then the language wrappers' suites and the packaging checks.
# The last line printed is "N passed, N failed" (", N skipped" when some were),
# counting each GoogleTest case of every test program in every pass, and each
# other test as one. Exits non-zero when anything failed or did not build.
#
# Environment:
#   CH_SKIP_SANITIZE=1     skip the sanitizer tests (quick local runs); the fuzz
#                          targets are then built in the lean build-fuzz/ (library
#                          and targets only, as scripts/fuzz.sh)
#   CH_SKIP_WRAPPERS=1     skip the language wrappers' suites (wrappers/*/test.sh; after
#                          the emulated pass, their GPU tests also run against
#                          build-emulated's library)
#   CH_SKIP_FUZZ=1         skip the fuzz suite (suite 'fuzz' of build-sanitize/)
#   CH_SKIP_TSAN=1         skip the ThreadSanitizer pass (build-tsan: the library and
#                          tests/reliability/test_thread_stress only)
#   CH_SKIP_PACKAGING=1    skip the packaging checks (scripts/packaging.sh: the Debian
#                          packages, the Python wheel, the Go module and the Rust crates,
#                          each installed and used outside the repository)
#   CH_BUILD_DIR           build folder of the first pass (default: build)
#   CH_SANITIZE_BUILD_DIR  build folder of the second pass (default: build-sanitize)
#   CH_SKIP_EMULATED=1     skip the emulated-GPU pass
#   CH_EMULATED_BUILD_DIR  build folder of the emulated-GPU pass (default: build-emulated)
#   CH_MESON_ARGS          extra `meson setup` options for every pass
#   CH_TEST_ARGS           extra `meson test` arguments for every pass
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
# One apt-get call for everything this run needs: the packaging checks'
# tools too when they will run (scripts/packaging.sh then finds them there).
if [ "${CH_SKIP_PACKAGING:-0}" != "1" ]; then
  CH_APT_PACKAGES+=("${CH_PACKAGING_APT_PACKAGES[@]}")
fi
ch_ensure_deps

build_dir="${CH_BUILD_DIR:-build}"
sanitize_dir="${CH_SANITIZE_BUILD_DIR:-build-sanitize}"
summary_args=()
pass_test_args=()  # extra `meson test` arguments of the next run_pass
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
  local test_args=("${pass_test_args[@]+"${pass_test_args[@]}"}")
  if [ -n "${CH_TEST_ARGS:-}" ]; then
    # shellcheck disable=SC2206
    test_args+=(${CH_TEST_ARGS})
  fi
  ch_log "meson test -C $dir"
  # meson test's own status is not used: summarize.py reads its logs.
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$(ch_jobs)" \
    --timeout-multiplier "$mult" "${test_args[@]+"${test_args[@]}"}" || true
  summary_args+=(--pass "$name=$dir")
  ch_log "pass '$name' took $((SECONDS - t)) s"
}

run_pass default "$build_dir" 1

# The sanitizer pass and the fuzz pass share one clang build (build-sanitize/,
# CH_SANITIZE_ARGS in scripts/common.sh): the library with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation, linked
# by the test programs (ASan+UBSan halting on the first report) and by the
# fuzz targets of tests/fuzz (suite 'fuzz', a fixed number of runs each from
# its seed corpus). Two builds of the same sanitized library (gcc for the
# tests, clang for the fuzzers) were the two largest compiles of a cold run.
# Without the CUDA backend: no GPU runs here, the .cu files are compiled by
# the default pass and executed by the emulated one.
san_tests=1 fuzz_tests=1
[ "${CH_SKIP_SANITIZE:-0}" = "1" ] && san_tests=0
[ "${CH_SKIP_FUZZ:-0}" = "1" ] && fuzz_tests=0
if [ "$san_tests" = 0 ] && [ "$fuzz_tests" = 0 ]; then
  ch_log "CH_SKIP_SANITIZE=1 CH_SKIP_FUZZ=1: skipping the sanitizer and fuzz passes"
else
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  # LeakSanitizer cannot run under ptrace or in some sandboxes; it then fails
  # every program. Check once with a tiny program and say so, rather than
  # report a failure per test.
  probe_dir="$(mktemp -d)"
  printf 'int main(void) { return 0; }\n' >"$probe_dir/probe.c"
  if clang -fsanitize=address "$probe_dir/probe.c" -o "$probe_dir/probe" 2>/dev/null &&
     ! "$probe_dir/probe" >/dev/null 2>"$probe_dir/err"; then
    if grep -q "LeakSanitizer" "$probe_dir/err"; then
      ch_log "WARNING: LeakSanitizer does not work here ($(head -n1 "$probe_dir/err")); leak checks off"
      ASAN_OPTIONS="${ASAN_OPTIONS//detect_leaks=1/detect_leaks=0}"
    fi
  fi
  rm -rf "$probe_dir"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
  if [ "$san_tests" = 1 ]; then
    name=sanitize
    [ "$fuzz_tests" = 1 ] && name=sanitize+fuzz
    [ "$fuzz_tests" = 0 ] && pass_test_args=(--no-suite fuzz)
    CC=clang CXX=clang++ run_pass "$name" "$sanitize_dir" 3 "${CH_SANITIZE_ARGS[@]}"
    pass_test_args=()
  else
    # Fuzzing alone: the lean build of scripts/fuzz.sh (library and targets).
    CC=clang CXX=clang++ run_pass fuzz build-fuzz 1 "${CH_FUZZ_ARGS[@]}"
  fi
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

# ThreadSanitizer pass: the library and the thread stress test only
# (-Dstress_tests=true with -Dtests=false). OpenBLAS and oneDNN are not
# instrumented: BLAS runs on the calling thread and oneDNN is left out.
# -O1 with line tables (-g1; assertions kept), as the sanitizer pass: full
# debug information of the instrumented code made up much of its compile
# time, and TSan's reports need only file and line.
if [ "${CH_SKIP_TSAN:-0}" = "1" ]; then
  ch_log "CH_SKIP_TSAN=1: skipping the ThreadSanitizer pass"
else
  OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}" \
    run_pass tsan build-tsan 1 \
    -Doptimization=1 -Ddebug=false -Db_ndebug=false -Dc_args=-g1 -Dcpp_args=-g1 -Dtests=false -Dstress_tests=true -Dexamples=false \
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
