#!/usr/bin/env bash
# Per-op overhead of chainerc from C (bench/overhead --only chainerc), Rust
# (bench/rust_overhead) and Go (bench/go_overhead), run in interleaved rounds
# so that background load hits all three alike. Prints each side's median over
# the rounds (each round is itself a median of repeats) and the ratio to C.
# Needs the library and bench/overhead built in build/ (meson -Dbenchmarks=enabled),
# cargo and go. Usage: bench/wrappers_overhead.sh [ROUNDS] (default 5)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-5}"
lib="${CHAINERC_LIB_DIR:-$root/build/src}"
export PATH="$HOME/.cargo/bin:/root/.cargo/bin:$PATH"
export CHAINERC_LIB_DIR="$lib" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
(cd "$root/bench/rust_overhead" && cargo build --release --offline -q)
# The Go wrapper's cgo flags come from pkg-config (as wrappers/go/test.sh):
# the build tree's uninstalled chainerc.pc, else an installed one.
if [ -d "$lib/../meson-uninstalled" ]; then
  export PKG_CONFIG_PATH="$(cd "$lib/../meson-uninstalled" && pwd)${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
(cd "$root/bench/go_overhead" && CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib" GOFLAGS=-mod=mod GOPROXY=off go build -o "$root/build/go_overhead" .)
c_bin="$root/build/bench/overhead"
r_bin="$root/bench/rust_overhead/target/release/rust_overhead"
g_bin="$root/build/go_overhead"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$rounds"); do
  "$c_bin" --only chainerc >>"$tmp/c.txt"
  "$r_bin" >>"$tmp/rust.txt"
  "$g_bin" >>"$tmp/go.txt"
done
python3 - "$tmp" <<'PY'
import re, statistics, sys
d = sys.argv[1]
def rows(path, pat):
    vals = {}
    for line in open(path):
        for key, rx in pat.items():
            m = re.match(rx, line)
            if m:
                vals.setdefault(key, []).append(float(m.group(1)))
    return {k: statistics.median(v) for k, v in vals.items()}
c = rows(d + "/c.txt", {
    "fb": r"\| per op: forward \+ backward \(history\) \| 1 \| ([\d.]+)",
    "f": r"\| per op: forward only \(history\) \| 1 \| ([\d.]+)",
    "nh": r"\| per op: forward \(no history\) \| 1 \| ([\d.]+)",
    "custom": r"\| MulAdd custom function: forward \+ backward \| 10 \| ([\d.]+)",
})
pat = {
    "fb": r"\| per op: forward \+ backward \(history\), 1 element \| ([\d.]+)",
    "f": r"\| per op: forward only \(history\), 1 element \| ([\d.]+)",
    "nh": r"\| per op: forward \(no history\), 1 element \| ([\d.]+)",
    "custom": r"\| MulAdd custom function \(\w+\): forward \+ backward, 10 elements \| ([\d.]+)",
}
r = rows(d + "/rust.txt", pat)
g = rows(d + "/go.txt", pat)
g2 = rows(d + "/go.txt", {
    "fb": r"\| per op: forward \+ backward \(history\), 1 element, without finalizers \| ([\d.]+)",
    "nh": r"\| per op: forward \(no history\), 1 element, without finalizers \| ([\d.]+)",
})
names = {"fb": "per op, forward + backward (1 element)", "f": "per op, forward only (1 element)",
         "nh": "per op, no history (1 element)", "custom": "MulAdd custom function, fwd + bwd (10 elements)"}
print("| what | C µs | Rust µs | Rust/C | Go µs | Go/C |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for k in ["fb", "f", "nh", "custom"]:
    cv, rv, gv = c.get(k), r.get(k), g.get(k)
    fmt = lambda v: "n/a" if v is None else "%.3f" % v
    ratio = lambda v: "n/a" if v is None or not cv else "%.2fx" % (v / cv)
    print("| %s | %s | %s | %s | %s | %s |" % (names[k], fmt(cv), fmt(rv), ratio(rv), fmt(gv), ratio(gv)))
for k, what in [("fb", "per op, forward + backward (1 element), Go without finalizers"),
                ("nh", "per op, no history (1 element), Go without finalizers")]:
    cv, gv = c.get(k), g2.get(k)
    if gv is not None and cv:
        print("| %s | %.3f | | | %.3f | %.2fx |" % (what, cv, gv, gv / cv))
print("\nGoals: Rust within 1.2x of C, Go within 2x (per op, forward + backward).")
PY
