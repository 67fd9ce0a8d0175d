#!/usr/bin/env bash
# Fuzzes every target of tests/fuzz for longer than CI does.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 600); TARGETs among idx, npz, user_kernel,
# sequence (default: all), run one after another with libFuzzer's -jobs /
# -workers set to the core count. Uses scripts/test.sh's sanitizer+fuzz build
# (build-sanitize/, clang, libFuzzer, AddressSanitizer + UndefinedBehaviorSanitizer)
# when test.sh configured one, building only the targets there; else builds
# the lean build-fuzz/ with the same options (the library and the targets).
# New inputs accumulate in <build>/tests/fuzz/work-<target>/ (reused by the
# next run); a crash leaves <build>/tests/fuzz/work-<target>/crash-<sha1>:
# copy it into tests/fuzz/corpus/<target>/ as a regression input (replayed by
# test_fuzz_corpus) once fixed. Prints the executions per target; exits 1 when
# a target crashed.
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$CH_ROOT"

seconds="${1:-600}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(idx npz user_kernel sequence)

ch_ensure_deps
dir=build-fuzz
san_dir="${CH_SANITIZE_BUILD_DIR:-build-sanitize}"
if [ -f "$san_dir/build.ninja" ] && [ -f "$san_dir/.ch-setup-args" ] &&
   [ "$(cat "$san_dir/.ch-setup-args")" = "$(printf '%s\n' "${CH_SANITIZE_ARGS[@]}")" ]; then
  dir="$san_dir"
else
  CC=clang CXX=clang++ ch_configure "$dir" "${CH_FUZZ_ARGS[@]}" || ch_die "meson setup $dir failed"
fi
ch_log "ninja -C $dir (the fuzz targets)"
ninja -C "$dir" -j "$(ch_jobs)" "${targets[@]/#/tests/fuzz/fuzz_}" || ch_die "build of $dir failed"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
jobs="$(ch_jobs)"
status=0
for t in "${targets[@]}"; do
  exe="$dir/tests/fuzz/fuzz_$t"
  [ -x "$exe" ] || ch_die "no fuzz target '$t' ($exe)"
  work="$dir/tests/fuzz/work-$t"
  mkdir -p "$work"
  log="$dir/tests/fuzz/fuzz-$t.log"
  ch_log "fuzzing $t for $seconds s on $jobs jobs (log: $log)"
  # -jobs/-workers: independent processes sharing the work corpus; each writes
  # fuzz-<n>.log into the current folder, so run from the build's fuzz folder.
  if (cd "$dir/tests/fuzz" &&
      "./fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -jobs="$jobs" -workers="$jobs" -artifact_prefix="work-$t/" \
        "work-$t" "$CH_ROOT/tests/fuzz/corpus/$t") >"$log" 2>&1; then
    :
  else
    status=1
    ch_log "fuzz_$t FAILED: see $log and $work/crash-*"
  fi
  # libFuzzer writes each job's output to fuzz-<n>.log in the current folder.
  execs=0
  for f in "$dir"/tests/fuzz/fuzz-[0-9]*.log; do
    [ -f "$f" ] || continue
    n="$(sed -n 's/^stat::number_of_executed_units: //p' "$f" | tail -n 1)"
    execs=$((execs + ${n:-0}))
    cat "$f" >>"$log"
    rm -f "$f"
  done
  ch_log "fuzz_$t: $execs executions in $seconds s, corpus $(find "$work" -type f ! -name 'crash-*' | wc -l) files"
done
exit "$status"
