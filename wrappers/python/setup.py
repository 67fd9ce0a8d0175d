"""Build of the chainerc Python package: setuptools driving Meson.

`pip install ./wrappers/python` (or `python -m build wrappers/python`) builds
libchainerc from the repository's C++ sources and puts it inside the package
(chainerc/_lib/libchainerc.so.0), so the installed package needs no
CHAINERC_LIBRARY (which still overrides it).

Where the sources are:
  - $CHAINERC_SOURCE_DIR, if set;
  - _chainerc_src/ next to this file (an sdist carries a copy there);
  - the repository this directory sits in (../..).
The library is configured with -Dtests=false -Dexamples=false
-Dbenchmarks=disabled plus $CHAINERC_MESON_ARGS (space separated, e.g.
"-Dcuda=disabled"). Inside a repository checkout its build folder is
<repo>/build-python, at the depth of build/, so ccache (base_dir set) reuses
the objects of a build/ configured the same way; elsewhere a temporary folder.
CHAINERC_BUILD_JOBS limits the compile jobs. CHAINERC_PREBUILT_LIBRARY=<path of
a libchainerc.so.0> puts that library into the package instead of building one
(scripts/packaging.sh: the wheel carries the Debian package's build, and
`auditwheel repair` then bundles its shared libraries). CHAINERC_SKIP_LIBRARY_BUILD=1
makes a package without the library (it then finds one as the development
checkout does: CHAINERC_LIBRARY, build/src, an installed libchainerc).
Needs: a C++17 compiler, meson >= 1.1, ninja, pkg-config and the library's
development packages (libopenblas-dev, zlib1g-dev, libzip-dev; libdnnl-dev and
libtcc-dev are optional), as for building the library by hand.

The package also carries chainerc._speedups (chainerc/_speedups.c), the
optional CPython extension of the wrapper's hot paths, built as an optional
extension: it needs a C compiler, Python.h, NumPy's headers (pyproject.toml's
build requirements) and libchainerc's include/ (the source tree above), not
the library itself (it gets the functions' addresses from ctypes at import).
Where one of them is missing the build warns and goes on, and the package
runs its pure-ctypes paths, as with CHAINERC_NO_SPEEDUPS=1 at run time.
With the extension the wheel is tagged for one CPython ABI
(cp311-cp311-<platform>); CHAINERC_NO_SPEEDUPS_BUILD=1 leaves it out.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
# What the library's build reads (meson.build's subdirs with the tests,
# examples and benchmarks off).
SOURCE_PARTS = ["meson.build", "meson.options", "include", "src", "cuda"]


def is_source_root(d):
    try:
        with open(os.path.join(d, "meson.build")) as f:
            return "project('chainerc'" in f.read(4096)
    except OSError:
        return False


def source_root():
    env = os.environ.get("CHAINERC_SOURCE_DIR")
    if env:
        if not is_source_root(env):
            sys.exit("CHAINERC_SOURCE_DIR=%s is not chainerc's source tree" % env)
        return os.path.abspath(env), False
    vendored = os.path.join(HERE, "_chainerc_src")
    if is_source_root(vendored):
        return vendored, False
    repo = os.path.normpath(os.path.join(HERE, "..", ".."))
    if is_source_root(repo):
        return repo, True
    sys.exit("chainerc: libchainerc's sources were not found (set CHAINERC_SOURCE_DIR to a "
             "checkout of the repository)")


def tool(name):
    path = shutil.which(name)
    if path:
        return [path]
    if name == "meson":
        try:
            import mesonbuild  # noqa: F401
            return [sys.executable, "-m", "mesonbuild.mesonmain"]
        except ImportError:
            pass
    sys.exit("chainerc: building libchainerc needs %s (pip install meson ninja, or "
             "apt-get install meson ninja-build)" % name)


def build_library(dest_dir):
    """Configure and build libchainerc; copy libchainerc.so.0 into dest_dir."""
    root, in_repo = source_root()
    meson = tool("meson")
    args = ["-Dtests=false", "-Dexamples=false", "-Dbenchmarks=disabled"]
    args += os.environ.get("CHAINERC_MESON_ARGS", "").split()
    if in_repo:
        build_dir = os.path.join(root, "build-python")
        tmp = None
    else:
        tmp = tempfile.mkdtemp(prefix="chainerc-build-")
        build_dir = tmp
    try:
        stamp = os.path.join(build_dir, ".setup-args")
        want = "\n".join(args)
        configured = os.path.exists(os.path.join(build_dir, "build.ninja"))
        if configured and (not os.path.exists(stamp) or open(stamp).read() != want):
            shutil.rmtree(build_dir)
            configured = False
        if not configured:
            subprocess.check_call(meson + ["setup", build_dir, root] + args)
            with open(stamp, "w") as f:
                f.write(want)
        jobs = os.environ.get("CHAINERC_BUILD_JOBS")
        cmd = meson + ["compile", "-C", build_dir]
        if jobs:
            cmd += ["-j", jobs]
        # Only the shared library (not the static archive).
        subprocess.check_call(cmd + ["src/chainerc:shared_library"])
        lib = os.path.join(build_dir, "src", "libchainerc.so.0")
        os.makedirs(dest_dir, exist_ok=True)
        shutil.copyfile(os.path.realpath(lib), os.path.join(dest_dir, "libchainerc.so.0"))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if os.environ.get("CHAINERC_SKIP_LIBRARY_BUILD") == "1":
            return  # a package that finds the library elsewhere (CHAINERC_LIBRARY)
        dest_dir = os.path.join(self.build_lib, "chainerc", "_lib")
        prebuilt = os.environ.get("CHAINERC_PREBUILT_LIBRARY")
        if prebuilt:
            if not os.path.isfile(prebuilt):
                sys.exit("chainerc: CHAINERC_PREBUILT_LIBRARY=%s is not a file" % prebuilt)
            os.makedirs(dest_dir, exist_ok=True)
            shutil.copyfile(os.path.realpath(prebuilt), os.path.join(dest_dir, "libchainerc.so.0"))
            return
        build_library(dest_dir)


def include_root():
    """libchainerc's include/ (ch/function.h, ...), or None: the sources'
    (CHAINERC_SOURCE_DIR, the sdist's _chainerc_src/, the repository)."""
    for d in (os.environ.get("CHAINERC_SOURCE_DIR"), os.path.join(HERE, "_chainerc_src"),
              os.path.normpath(os.path.join(HERE, "..", ".."))):
        if d and os.path.exists(os.path.join(d, "include", "ch", "function.h")):
            return os.path.join(d, "include")
    return None


class BuildSpeedups(build_ext):
    """chainerc._speedups is optional (Extension(optional=True)): a failed
    compile only warns. NumPy's and libchainerc's headers are looked up here,
    at build time; without them the extension is left out with a warning."""

    def run(self):
        missing = None
        try:
            import numpy
        except ImportError:
            missing = "NumPy (its headers)"
        inc = include_root()
        if inc is None and missing is None:
            missing = "libchainerc's include/ (ch/function.h)"
        if missing:
            print("chainerc: chainerc._speedups not built: no %s; the package runs its "
                  "ctypes paths" % missing, file=sys.stderr)
            self.extensions = []
        else:
            for ext in self.extensions:
                ext.include_dirs = [numpy.get_include(), inc] + list(ext.include_dirs)
        super().run()

    def build_extensions(self):
        # The interpreter's LDSHARED may carry its own lib folder as an rpath
        # (pyenv's: -Wl,-rpath,/root/.pyenv/...): the module needs no library
        # from there (no libpython, no libchainerc), so the wheel names no
        # path of the build machine.
        linker = getattr(self.compiler, "linker_so", None)
        if linker:
            self.compiler.linker_so = [a for a in linker if not a.startswith("-Wl,-rpath")]
        super().build_extensions()


class SdistWithSources(sdist):
    """An sdist that carries libchainerc's sources in _chainerc_src/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root, _ = source_root()
        dest = os.path.join(base_dir, "_chainerc_src")
        for part in SOURCE_PARTS:
            src = os.path.join(root, part)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(dest, part),
                                ignore=shutil.ignore_patterns("__pycache__", "*.o"))
            else:
                os.makedirs(dest, exist_ok=True)
                shutil.copyfile(src, os.path.join(dest, part))


class BinaryDistribution(Distribution):
    """The wheel carries a compiled library (and, mostly, the extension): tag
    it for this platform and CPython ABI."""

    def has_ext_modules(self):
        return True


ext_modules = []
if os.environ.get("CHAINERC_NO_SPEEDUPS_BUILD") != "1":
    ext_modules.append(Extension("chainerc._speedups", ["chainerc/_speedups.c"], optional=True))

setup(cmdclass={"build_py": BuildPyWithLibrary, "build_ext": BuildSpeedups,
                "sdist": SdistWithSources},
      distclass=BinaryDistribution, ext_modules=ext_modules)
