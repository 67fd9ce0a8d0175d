#!/usr/bin/env python3
"""Compiles chainerc._speedups (chainerc/_speedups.c) next to the package for
the interpreter that runs this script: chainerc/_speedups<EXT_SUFFIX>.

Optional: without a C compiler, Python's headers or NumPy's, it prints why and
exits 0 (the wrapper then runs its pure-ctypes paths). --strict exits 1
instead. The module is not linked against libchainerc (it gets the library's
function addresses from ctypes at import), so it needs only the headers in
<repo>/include. wrappers/python/test.sh runs it before the tests.

Usage: python3 wrappers/python/build_speedups.py [--strict] [--out DIR]
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "chainerc", "_speedups.c")


def include_dir():
    for d in (os.path.join(HERE, "_chainerc_src", "include"),
              os.path.normpath(os.path.join(HERE, "..", "..", "include"))):
        if os.path.exists(os.path.join(d, "ch", "function.h")):
            return d
    return None


def command(out_dir):
    """The compiler command line, or (None, why)."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = shlex.split(cc)
    if not shutil.which(cc[0]):
        return None, "no C compiler (%s)" % cc[0]
    py_inc = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(py_inc, "Python.h")):
        return None, "no Python.h in %s (python3-dev)" % py_inc
    try:
        import numpy
    except ImportError:
        return None, "no NumPy"
    ch_inc = include_dir()
    if ch_inc is None:
        return None, "no chainerc headers (include/ch)"
    target = os.path.join(out_dir, "_speedups" + sysconfig.get_config_var("EXT_SUFFIX"))
    return cc + ["-O2", "-fPIC", "-shared", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                 "-Wno-missing-field-initializers", "-I", py_inc, "-I", numpy.get_include(),
                 "-I", ch_inc, SOURCE, "-o", target], target


def build(out_dir=None, strict=False, quiet=False):
    out_dir = out_dir or os.path.join(HERE, "chainerc")
    cmd, target = command(out_dir)
    if cmd is None:
        if not quiet or strict:
            print("build_speedups: not built: %s" % target, file=sys.stderr)
        return None if not strict else False
    tmp = "%s.%d.tmp" % (target, os.getpid())
    cmd[-1] = tmp
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print("build_speedups: the compiler failed:\n%s%s" % (r.stdout, r.stderr), file=sys.stderr)
        return None if not strict else False
    os.replace(tmp, target)
    if not quiet:
        print("build_speedups: built %s" % target)
    return target


if __name__ == "__main__":
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        out = args[args.index("--out") + 1]
    res = build(out, strict="--strict" in args)
    sys.exit(1 if res is False else 0)
