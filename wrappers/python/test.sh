#!/usr/bin/env bash
# Runs the Python wrapper's tests (pytest) against an already-built libchainerc:
# $CHAINERC_LIBRARY if set, else <repo>/build/src/libchainerc.so.0.
# CHAINERC_TEST_PATHS (space-separated, relative to wrappers/python) runs only
# those test files (scripts/test.sh: the GPU tests on the emulated devices).
# Builds chainerc._speedups in place (build_speedups.py; optional), installs
# pytest if missing. Prints one last line "N passed, N failed"
# (", N skipped" when some were) and exits non-zero on any failure.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
PY="${PYTHON:-python3}"

if [ -z "${CHAINERC_LIBRARY:-}" ] && [ ! -e "$repo/build/src/libchainerc.so.0" ]; then
  echo "wrappers/python/test.sh: no library: build it (ninja -C build) or set CHAINERC_LIBRARY" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
if ! "$PY" -c "import numpy" >/dev/null 2>&1; then
  "$PY" -m pip install --quiet numpy >/dev/null 2>&1 ||
    "$PY" -m pip install --quiet --break-system-packages numpy >/dev/null 2>&1
fi
if ! "$PY" -c "import pytest" >/dev/null 2>&1; then
  "$PY" -m pip install --quiet pytest >/dev/null 2>&1 ||
    "$PY" -m pip install --quiet --break-system-packages pytest >/dev/null 2>&1
fi
if ! "$PY" -c "import pytest" >/dev/null 2>&1; then
  echo "wrappers/python/test.sh: pytest is missing and could not be installed" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

# A sanitized library (meson -Db_sanitize=address,undefined) needs its runtimes
# preloaded into python; PyTorch is left out then (it does not run under ASan).
lib="${CHAINERC_LIBRARY:-$repo/build/src/libchainerc.so.0}"
san="$(ldd "$lib" 2>/dev/null | grep -oE '/[^ ]*lib(asan|ubsan)\.so[^ ]*' | tr '\n' ' ')"
if [ -n "$san" ]; then
  echo "wrappers/python/test.sh: sanitized library; preloading $san" >&2
  export LD_PRELOAD="$san${LD_PRELOAD:+ $LD_PRELOAD}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  export CHAINERC_TESTS_NO_TORCH=1
fi

# chainerc._speedups (the optional C paths) is compiled next to the package
# where a C compiler and Python's and NumPy's headers are there (else the
# ctypes paths run); CHAINERC_NO_SPEEDUPS=1 tests those with it built.
"$PY" "$here/build_speedups.py" || true

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cd "$here"
# shellcheck disable=SC2086  # a list of paths
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m pytest -q -rfEs -p no:cacheprovider \
  ${CHAINERC_TEST_PATHS:-tests} \
  2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

summary="$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error)' "$log" | tail -1)"
count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '[0-9]+' | head -1; }
passed=$(count passed); failed=$(count failed); errors=$(count error); skipped=$(count skipped)
passed=${passed:-0}; failed=$(( ${failed:-0} + ${errors:-0} )); skipped=${skipped:-0}
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # collection error, crash
line="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ "$failed" -eq 0 ] && [ "$rc" -eq 0 ]
