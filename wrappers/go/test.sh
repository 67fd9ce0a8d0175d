#!/usr/bin/env bash
# Runs the Go wrapper's tests (go test -v) against an already-built chainerc
# (build/src of the repository; CHAINERC_LIB_DIR overrides) and ends with one
# line "N passed, N failed" (", N skipped" when some were), counting the
# "--- PASS" / "--- FAIL" / "--- SKIP" lines of top-level tests. Exits
# non-zero on any failure. Needs Go >= 1.19 (Debian 12: apt-get install golang-go).
# CHAINERC_TEST_RUN (a `go test -run` pattern) runs only those tests, without
# vetting and building the examples (scripts/test.sh: the GPU tests on the
# emulated devices).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
lib="${CHAINERC_LIB_DIR:-$root/build/src}"
cd "$here"
if ! command -v go >/dev/null 2>&1; then
  echo "go/test.sh: go not found (apt-get install golang-go)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
if [ ! -e "$lib/libchainerc.so" ]; then
  echo "go/test.sh: no libchainerc.so in $lib (build the library first)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
export CGO_ENABLED=1
# cgo.go takes its flags from pkg-config: a meson build tree's uninstalled
# chainerc.pc (next to $lib, the tree's src/), else an installed one.
if [ -d "$lib/../meson-uninstalled" ]; then
  export PKG_CONFIG_PATH="$(cd "$lib/../meson-uninstalled" && pwd)${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
export CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib ${CGO_LDFLAGS:-}"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOCACHE="${GOCACHE:-$here/.gocache}"
# No module is downloaded (standard library only); a GOPATH is still needed
# where HOME is unset (CI containers).
[ -n "${HOME:-}" ] || export GOPATH="${GOPATH:-$here/.gopath}"
export GOPROXY=off
# The distributed part (distributed.go) where libchainerc_mpi was built.
if [ -e "$lib/distributed/libchainerc_mpi.so" ]; then
  export GOFLAGS="$GOFLAGS -tags=chainerc_mpi"
  export LD_LIBRARY_PATH="$lib/distributed:$LD_LIBRARY_PATH"
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# The examples and the benchmark must build too.
build_failed=0
if [ -n "${CHAINERC_TEST_RUN:-}" ]; then
  go test -count=1 -v -run "$CHAINERC_TEST_RUN" . 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
else
  go vet ./... 2>&1 | tee -a "$log" || build_failed=1
  go build ./... 2>&1 | tee -a "$log" || build_failed=1
  go test -count=1 -v ./... 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
fi
passed=$(grep -c '^--- PASS' "$log")
failed=$(grep -c '^--- FAIL' "$log")
skipped=$(grep -c '^--- SKIP' "$log")
if { [ "$rc" -ne 0 ] || [ "$build_failed" -ne 0 ]; } && [ "$failed" -eq 0 ]; then
  failed=1 # a build error or a crashed test binary
fi
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$build_failed" -eq 0 ]
