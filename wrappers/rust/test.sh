#!/usr/bin/env bash
# Builds and runs the Rust wrapper's tests against an already-built chainerc
# (build/src of the repository; CHAINERC_LIB_DIR overrides) and ends with one
# line "N passed, N failed" (", N skipped" when some were). Exits non-zero on
# any failure. CHAINERC_TEST_TARGETS (e.g. "devices gpu_callback") runs only
# those integration tests (scripts/test.sh: the GPU tests on the emulated
# devices).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CHAINERC_LIB_DIR="${CHAINERC_LIB_DIR:-$root/build/src}"
# rustup's proxies find their toolchain through HOME (unset in some CI containers).
[ -n "${HOME:-}" ] || export HOME="$(getent passwd "$(id -u)" | cut -d: -f6)"
export PATH="$HOME/.cargo/bin:/root/.cargo/bin:$PATH"
cd "$here"
if ! command -v cargo >/dev/null 2>&1; then
  echo "rust/test.sh: cargo not found" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
if [ ! -e "$CHAINERC_LIB_DIR/libchainerc.so" ]; then
  echo "rust/test.sh: no libchainerc.so in $CHAINERC_LIB_DIR (build the library first)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
export LD_LIBRARY_PATH="$CHAINERC_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# chainerc::distributed where libchainerc_mpi was built (tests/distributed.rs).
features=()
if [ -e "${CHAINERC_MPI_LIB_DIR:-$CHAINERC_LIB_DIR/distributed}/libchainerc_mpi.so" ]; then
  features=(--features chainerc/distributed)
fi
if [ -n "${CHAINERC_TEST_TARGETS:-}" ]; then
  targets=()
  for t in $CHAINERC_TEST_TARGETS; do targets+=(--test "$t"); done
  cargo test "${targets[@]}" --no-fail-fast --offline -j "${CARGO_BUILD_JOBS:-2}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
else
  cargo test --workspace --all-targets "${features[@]}" --no-fail-fast --offline -j "${CARGO_BUILD_JOBS:-2}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
fi
# Examples must build too (they are part of --all-targets); count the test
# runners' "test result:" lines.
read -r passed failed ignored < <(awk '/^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i) ~ /^passed;?$/) p += $(i-1);
      if ($(i) ~ /^failed;?$/) f += $(i-1);
      if ($(i) ~ /^ignored;?$/) s += $(i-1);
    }
  } END { print p + 0, f + 0, s + 0 }' "$log")
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1 # a build error or a crashed test binary
fi
if [ "$ignored" -gt 0 ]; then
  echo "$passed passed, $failed failed, $ignored skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
