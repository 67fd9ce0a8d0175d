#!/usr/bin/env python3
"""The installed chainerc links a plain C program through pkg-config alone.

    pkgconfig_link.py --meson MESON --builddir BUILD --cc 'CC ARGS' --source PROG.c
                      [--pkg-config PKG_CONFIG] [--headers INCLUDE_CH_DIR]

1. `meson install --destdir TMP` puts the project into a temporary folder (no
   root, nothing outside TMP is touched); chainerc.pc is read from there with
   its prefix redirected to TMP (pkg-config --define-variable=prefix=...).
2. Every public header of the source tree must have been installed.
3. Shared: cc PROG.c $(pkg-config --cflags --libs chainerc); the program must
   need libchainerc.so and run.
4. Static: the same install without libchainerc.so* (a static-only
   install, so that -lchainerc can only mean libchainerc.a), then
   cc PROG.c $(pkg-config --cflags --static --libs chainerc); the program must
   not need libchainerc.so and must run.

When the build is instrumented (b_sanitize, b_coverage) the same instrumentation
flags are added, as any program linking an instrumented library needs them.
Exit status 77 (skipped) when there is no C compiler or no pkg-config; never a
silent pass.
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def log(msg):
    print(msg, flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, **kw)
    if res.stdout.strip():
        log(res.stdout.rstrip())
    if res.returncode != 0:
        raise RuntimeError(f"command failed with exit status {res.returncode}: {cmd[0]}")
    return res.stdout


def find_cc(spec):
    candidates = []
    if spec:
        candidates.append(shlex.split(spec))
    if os.environ.get("CC"):
        candidates.append(shlex.split(os.environ["CC"]))
    candidates += [["cc"], ["gcc"], ["clang"]]
    for cmd in candidates:
        if cmd and shutil.which(cmd[0]):
            return cmd
    return None


def meson_command(spec):
    if spec and shutil.which(spec):
        if os.path.basename(spec).startswith("python"):
            return [spec, "-m", "mesonbuild.mesonmain"]  # meson run as a module
        return [spec]
    try:
        import mesonbuild  # noqa: F401
        return [sys.executable, "-m", "mesonbuild.mesonmain"]
    except ImportError:
        return [shutil.which("meson")] if shutil.which("meson") else None


def build_option(builddir, name):
    with open(os.path.join(builddir, "meson-info", "intro-buildoptions.json")) as f:
        for opt in json.load(f):
            if opt.get("name") == name:
                return opt.get("value")
    return None


def is_clang(cc):
    try:
        out = subprocess.run(cc + ["--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
    except OSError:
        return False
    return "clang" in out


def instrumentation_flags(builddir, cc):
    flags = []
    sanitize = build_option(builddir, "b_sanitize")
    if isinstance(sanitize, list):
        sanitize = ",".join(sanitize)
    if sanitize and sanitize != "none":
        flags.append("-fsanitize=" + sanitize)
        if "undefined" in sanitize and is_clang(cc):
            # clang's UBSan checks of C++ code (vptr, function) live in its C++
            # runtime, which a C link leaves out; it needs libstdc++ itself.
            flags += ["-fsanitize-link-c++-runtime", "-lstdc++"]
    if build_option(builddir, "b_coverage") is True:
        flags.append("--coverage")
    return flags


def needed_libs(path):
    """DT_NEEDED entries of an ELF file, or None when readelf is missing."""
    readelf = shutil.which("readelf")
    if not readelf:
        return None
    out = subprocess.run([readelf, "-d", path], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        if "(NEEDED)" in line and "[" in line:
            libs.append(line.split("[", 1)[1].split("]", 1)[0])
    return libs


class PkgConfig:
    def __init__(self, exe, pc_dir, real_prefix, new_prefix):
        self.exe = exe
        self.env = dict(os.environ)
        old = self.env.get("PKG_CONFIG_PATH")
        self.env["PKG_CONFIG_PATH"] = pc_dir + (os.pathsep + old if old else "")
        self.env.pop("PKG_CONFIG_SYSROOT_DIR", None)
        self.define = ["--define-variable=prefix=" + new_prefix] if new_prefix else []
        self.real_prefix = real_prefix

    def __call__(self, *args):
        return shlex.split(run([self.exe] + self.define + list(args) + ["chainerc"],
                               env=self.env))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meson", default="")
    ap.add_argument("--builddir", required=True)
    ap.add_argument("--cc", default="")
    ap.add_argument("--source", required=True)
    ap.add_argument("--pkg-config", dest="pkg_config", default="")
    ap.add_argument("--headers", default="", help="source include/ch, to check the install")
    args = ap.parse_args(argv)

    cc = find_cc(args.cc)
    if cc is None:
        log("SKIP: no C compiler found")
        return SKIP
    pkg_config = (args.pkg_config if args.pkg_config and shutil.which(args.pkg_config)
                  else shutil.which("pkg-config") or shutil.which("pkgconf"))
    if not pkg_config:
        log("SKIP: no pkg-config found")
        return SKIP
    meson = meson_command(args.meson)
    if meson is None:
        log("FAIL: meson not found")
        return 1
    builddir = os.path.abspath(args.builddir)
    source = os.path.abspath(args.source)
    extra = instrumentation_flags(builddir, cc)
    cflags_strict = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]

    tmp = tempfile.mkdtemp(prefix="chainerc-pkgconfig-")
    try:
        dest = os.path.join(tmp, "shared-root")
        run(meson + ["install", "-C", builddir, "--no-rebuild", "--quiet", "--destdir", dest])
        pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "chainerc.pc"), recursive=True)
        if len(pcs) != 1:
            log(f"FAIL: expected one installed chainerc.pc under {dest}, found {pcs}")
            return 1
        pc_rel = os.path.relpath(pcs[0], dest)
        log(f"installed {pc_rel}:")
        with open(pcs[0]) as f:
            log(f.read().rstrip())

        plain = PkgConfig(pkg_config, os.path.dirname(pcs[0]), None, None)
        prefix = run([pkg_config, "--variable=prefix", "chainerc"], env=plain.env).strip()
        libdir_rel = os.path.relpath(
            run([pkg_config, "--variable=libdir", "chainerc"], env=plain.env).strip(), prefix)
        incdir_rel = os.path.relpath(
            run([pkg_config, "--variable=includedir", "chainerc"], env=plain.env).strip(), prefix)

        def rooted(root):
            return root + prefix  # DESTDIR semantics: prefix re-rooted under root

        # 2. every public header was installed
        if args.headers:
            want = sorted(f for f in os.listdir(args.headers) if f.endswith((".h", ".hpp")))
            inst = os.path.join(rooted(dest), incdir_rel, "ch")
            missing = [h for h in want if not os.path.isfile(os.path.join(inst, h))]
            if missing:
                log(f"FAIL: public headers not installed (include/ch/meson.build): {missing}")
                return 1
            log(f"all {len(want)} public headers installed")

        # 3. shared
        pc = PkgConfig(pkg_config, os.path.dirname(pcs[0]), prefix, rooted(dest))
        flags = pc("--cflags") + pc("--libs")
        exe_shared = os.path.join(tmp, "prog_shared")
        run(cc + cflags_strict + extra + [source, "-o", exe_shared] + flags + extra)
        libdir_shared = os.path.join(rooted(dest), libdir_rel)
        needed = needed_libs(exe_shared)
        if needed is not None and not any(n.startswith("libchainerc.so") for n in needed):
            log(f"FAIL: the shared build does not need libchainerc.so (NEEDED: {needed})")
            return 1
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = libdir_shared + (
            os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        run([exe_shared], env=env)

        # 4. static: a static-only copy of the install
        static_root = os.path.join(tmp, "static-root")
        shutil.copytree(dest, static_root, symlinks=True)
        libdir_static = os.path.join(rooted(static_root), libdir_rel)
        removed = glob.glob(os.path.join(libdir_static, "libchainerc.so*"))
        if not removed or not os.path.isfile(os.path.join(libdir_static, "libchainerc.a")):
            log(f"FAIL: expected libchainerc.so* and libchainerc.a in {libdir_static}, found "
                f"{sorted(os.listdir(libdir_static))}")
            return 1
        for path in removed:
            os.remove(path)
        pc = PkgConfig(pkg_config, os.path.join(static_root, os.path.dirname(pc_rel)), prefix,
                       rooted(static_root))
        flags = pc("--cflags") + pc("--static", "--libs")
        exe_static = os.path.join(tmp, "prog_static")
        run(cc + cflags_strict + extra + [source, "-o", exe_static] + flags + extra)
        needed = needed_libs(exe_static)
        if needed is not None and any(n.startswith("libchainerc") for n in needed):
            log(f"FAIL: the static build still needs {needed}")
            return 1
        env = dict(os.environ)
        env.pop("LD_LIBRARY_PATH", None)
        run([exe_static], env=env)
        log("pkg-config links chainerc statically and dynamically: ok")
        return 0
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        log(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
