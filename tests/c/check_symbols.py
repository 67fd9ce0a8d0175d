#!/usr/bin/env python3
"""libchainerc exports nothing but the C API.

    check_symbols.py --nm NM --shared LIBCHAINERC.so [--static LIBCHAINERC.a]

Shared library: every symbol in its dynamic symbol table that it defines
(`nm -D --defined-only`) must be named ch_*; only the symbols the linker itself
defines (_init, _fini, _edata, _end, __bss_start) are let through. C++ symbols
(the engine's namespaces, or template instantiations from the standard library,
whose headers force default visibility) must not leak: they would clash with
another copy of the same code in the host process.

Static library: every external C (unmangled) symbol it defines must be named
ch_*, so that embedding it cannot clash with the host's own C symbols; C++
symbols are mangled with their namespace and are not checked.

Exit status 77 (skipped) when no nm is available.
"""
import argparse
import os
import shutil
import subprocess
import sys

LINKER_DEFINED = {"_init", "_fini", "_edata", "_end", "__bss_start"}
# Symbols that sanitizer or coverage instrumentation adds to instrumented code.
INSTRUMENTATION_PREFIXES = ("__odr_asan", "__asan", "__ubsan", "__sanitizer", "__gcov", "__llvm")
# Compiler-generated helpers in object files (hidden, weak): exception-table
# references, x86 PIC thunks, and clang's terminate call for noexcept code.
OBJECT_HELPER_PREFIXES = ("DW.ref.", "__x86.get_pc_thunk", "__clang_call_terminate")


def nm_symbols(nm, args, path):
    """(type, name) of each symbol that nm lists."""
    out = subprocess.run([nm] + args + [path], check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True).stdout
    symbols = []
    for line in out.splitlines():
        fields = line.split()
        # "ADDRESS TYPE NAME"; archive member headers ("foo.o:") and blank lines skipped.
        if len(fields) < 3 or len(fields[1]) != 1:
            continue
        kind, name = fields[1], fields[2]
        name = name.split("@", 1)[0]  # strip symbol versions (name@@VERS)
        symbols.append((kind, name))
    return symbols


def is_global(kind):
    # Upper case: global; u: unique global; i: indirect function; v/w: weak.
    return kind.isupper() or kind in "uivw"


def check_shared(nm, path):
    symbols = [(k, n) for k, n in nm_symbols(nm, ["-D", "--defined-only"], path)
               if is_global(k) and k != "U"]
    api = sorted({n for _, n in symbols if n.startswith("ch_")})
    bad = sorted({(n, k) for k, n in symbols
                  if not n.startswith("ch_") and n not in LINKER_DEFINED
                  and not n.startswith(INSTRUMENTATION_PREFIXES)})
    ok = True
    if "ch_version" not in api:
        print(f"{path}: ch_version is not exported (is this libchainerc?)", file=sys.stderr)
        ok = False
    if bad:
        print(f"{path}: {len(bad)} exported symbol(s) outside the ch_ namespace:",
              file=sys.stderr)
        for name, kind in bad[:200]:
            print(f"  {kind} {name}", file=sys.stderr)
        if len(bad) > 200:
            print(f"  ... and {len(bad) - 200} more", file=sys.stderr)
        print("Export only the C API: -fvisibility=hidden and a linker version script "
              "({ global: ch_*; local: *; }) on libchainerc.so.", file=sys.stderr)
        ok = False
    print(f"{os.path.basename(path)}: {len(api)} ch_ symbols exported, {len(bad)} others")
    return ok


# The CUDA backend's forwarding stubs (cuda/runtime/lazy_libraries.cpp) carry
# cuBLAS's, cuRAND's, cuDNN's and NVRTC's own names so that the backend's calls reach the
# libraries opened on first use; they are weak, so a program that links the
# real libraries beside libchainerc.a gets the real ones without a clash.
LAZY_STUB_PREFIXES = ("cublas", "curand", "nvrtc", "cudnn")


def check_static(nm, path):
    symbols = nm_symbols(nm, ["-g", "--defined-only"], path)
    bad = sorted({(n, k) for k, n in symbols
                  if is_global(k) and not n.startswith("_Z") and not n.startswith("ch_")
                  and not (k in "Ww" and n.startswith(LAZY_STUB_PREFIXES))
                  and not n.startswith(INSTRUMENTATION_PREFIXES)
                  and not n.startswith(OBJECT_HELPER_PREFIXES)})
    if bad:
        print(f"{path}: {len(bad)} external C symbol(s) outside the ch_ namespace:",
              file=sys.stderr)
        for name, kind in bad[:200]:
            print(f"  {kind} {name}", file=sys.stderr)
        print("Give them internal linkage (static / an anonymous namespace) or a C++ "
              "namespace, or name them ch_*.", file=sys.stderr)
        return False
    print(f"{os.path.basename(path)}: external C symbols all named ch_*")
    return True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nm", default="")
    ap.add_argument("--shared", required=True)
    ap.add_argument("--static")
    args = ap.parse_args(argv)
    nm = args.nm or shutil.which("nm")
    if not nm:
        print("SKIP: no nm found", file=sys.stderr)
        return 77
    ok = check_shared(nm, args.shared)
    if args.static:
        ok = check_static(nm, args.static) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
