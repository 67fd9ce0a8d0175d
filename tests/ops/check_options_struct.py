#!/usr/bin/env python3
"""A function with more than four options gets a versioned options struct.

    check_options_struct.py REPOSITORY_ROOT [C_COMPILER [CXX_COMPILER]]

Runs scripts/gen_functions.py's renderers on the real manifest plus one
synthetic function `probe_opts` of one variable and six options (no kernel, no
op: nothing is linked), then
  - compiles a C99 translation unit (-Wall -Wextra -Werror) against the
    generated include/ch/functions.h that declares a struct with
    CH_PROBE_OPTS_OPTIONS_INIT, checks its version and defaults at run time and
    calls nothing else;
  - compiles (-fsyntax-only, C++20, -Wall -Werror) the generated capi shims
    (src/capi/functions_gen.cpp, with the generated ops.h) and the generated
    C++ free functions, so the shim's version check and the C++ call compile;
  - checks the generated texts: the declaration takes the struct pointer, its
    comment says NULL means the defaults, the shim rejects an unknown version
    with CH_ERR_INVALID_ARGUMENT naming the struct.
Exit 77 (skipped) without clang-format or a compiler.
"""
import copy
import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

OPTIONS = [("alpha", "f64", 0.25, "a ratio"), ("steps", "i32", 3), ("count", "i64", 7),
           ("flag", "bool", True), ("mode", "mode", "default"), ("beta", "f64", -1.5)]


def main(argv):
    root = argv[0]
    cc = argv[1] if len(argv) > 1 else (shutil.which("cc") or "")
    cxx = argv[2] if len(argv) > 2 else (shutil.which("c++") or "")
    if not shutil.which("clang-format") or not cc or not cxx:
        print("clang-format or a compiler not found; skipped")
        return 77
    spec = importlib.util.spec_from_file_location(
        "gen_functions", os.path.join(root, "scripts", "gen_functions.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    env = {}
    path = os.path.join(root, "src", "ops", "manifest.py")
    exec(compile(open(path).read(), path, "exec"), env)
    fns = copy.deepcopy(env["FUNCTIONS"])
    fns.append(dict(name="probe_opts", chainer=None, group="activation",
                    args=[("x", "var")] + OPTIONS, out="var",
                    brief="A synthetic function with six options (test only).",
                    cpp=("ch", "probe_opts"), rust=("functions", "probe_opts"),
                    test=["0.5", "1", "2", "0", "CH_MODE_TEST", "4.0"]))
    failures = []

    def expect(cond, what):
        print(("ok: " if cond else "FAILED: ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        manifest = os.path.join(tmp, "manifest.py")
        with open(manifest, "w") as f:
            f.write("GROUPS = %r\nFUNCTIONS = %r\n" % (env["GROUPS"], fns))
        groups, loaded = gen.load_manifest(manifest)
        files = gen.targets(groups, loaded)
        # Quoted includes resolve next to the including file: the generated files
        # go into copies of the trees they belong to.
        for tree in ("include", "src"):
            shutil.copytree(os.path.join(root, tree), os.path.join(tmp, tree))
        for rel, text in files.items():
            out = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w") as fh:
                fh.write(text)
        h = files["include/ch/functions.h"]
        shim = files["src/capi/functions_gen.cpp"]
        expect("typedef struct ch_probe_opts_options {" in h, "functions.h has the typedef")
        expect("#define CH_PROBE_OPTS_OPTIONS_VERSION 1" in h, "functions.h has the _VERSION")
        expect("#define CH_PROBE_OPTS_OPTIONS_INIT" in h, "functions.h has the _INIT")
        decl = ("CH_API ch_status ch_functions_probe_opts(ch_variable** out, ch_variable* x, "
                "const ch_probe_opts_options* options);")
        expect(decl in " ".join(h.split()), "the declaration takes the options struct")
        expect("NULL means the defaults" in " ".join(h.split()),
               "its comment says NULL = defaults")
        expect("o.version > CH_PROBE_OPTS_OPTIONS_VERSION" in shim and
               "CH_ERR_INVALID_ARGUMENT" in shim and "ch_probe_opts_options version" in shim,
               "the shim checks options->version and names the struct")
        # The real manifest's output is unchanged by the struct support: every
        # declaration but the probe's is the same as the checked-in header.
        with open(os.path.join(root, "include", "ch", "functions.h")) as fh:
            real = fh.read()
        probe_free = gen.render_functions_h(groups, [f for f in loaded
                                                     if f["name"] != "probe_opts"])
        expect(probe_free == real, "without the probe, functions.h is the checked-in one")

        unit = os.path.join(tmp, "use_init.c")
        with open(unit, "w") as fh:
            fh.write("""#include <ch/functions.h>
#include <stdio.h>
int main(void) {
  ch_probe_opts_options o = CH_PROBE_OPTS_OPTIONS_INIT;
  ch_status (*fn)(ch_variable**, ch_variable*, const ch_probe_opts_options*) =
      ch_functions_probe_opts;
  (void)fn;
  if (o.version != 1 || o.alpha != 0.25 || o.steps != 3 || o.count != 7 || o.flag != 1 ||
      o.mode != CH_MODE_DEFAULT || o.beta != -1.5) {
    printf("CH_PROBE_OPTS_OPTIONS_INIT gave %u %g %d %lld %d %d %g\\n", (unsigned)o.version,
           o.alpha, (int)o.steps, (long long)o.count, (int)o.flag, (int)o.mode, o.beta);
    return 1;
  }
  o.steps = 5;
  return o.steps == 5 ? 0 : 1;
}
""")
        exe = os.path.join(tmp, "use_init")
        inc = ["-I", os.path.join(tmp, "include")]
        r = subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                            "-Wl,--unresolved-symbols=ignore-all", unit, "-o", exe] + inc,
                           capture_output=True, text=True)
        expect(r.returncode == 0, "a C99 unit using CH_PROBE_OPTS_OPTIONS_INIT compiles "
               "(-Wall -Wextra -Werror)" + ("\n" + r.stderr if r.returncode else ""))
        if r.returncode == 0:
            r = subprocess.run([exe], capture_output=True, text=True)
            expect(r.returncode == 0, "CH_PROBE_OPTS_OPTIONS_INIT gives the manifest's "
                   "defaults" + ("\n" + r.stdout if r.returncode else ""))
        cxxinc = ["-I", os.path.join(tmp, "include"), "-I", os.path.join(tmp, "src")]
        for rel in ("src/capi/functions_gen.cpp", "include/ch/functions.hpp"):
            src = os.path.join(tmp, rel)
            if rel.endswith(".hpp"):
                src = os.path.join(tmp, "use_hpp.cpp")
                with open(src, "w") as fh:
                    fh.write('#include <ch/ch.hpp>\n'
                             'ch::Variable twice(const ch::Variable& x) {\n'
                             '  ch_probe_opts_options o = CH_PROBE_OPTS_OPTIONS_INIT;\n'
                             '  o.alpha = 2;\n'
                             '  return ch::probe_opts(ch::probe_opts(x), o);\n}\n')
            r = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                                src] + cxxinc, capture_output=True, text=True)
            expect(r.returncode == 0, "the generated %s compiles" % rel +
                   ("\n" + r.stderr[-3000:] if r.returncode else ""))
        python_check(root, tmp, files, cc, expect)
        rust_check(root, tmp, files, expect)
        go_check(root, tmp, files, expect)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


def python_check(root, tmp, files, cc, expect):
    """The Python binding: the generated define() passes the options as a struct of
    the current version, with the manifest's defaults as keyword defaults, and
    chainerc._options's ctypes mirror of the struct has the C compiler's layout
    (sizeof and every offsetof)."""
    calls = []
    env = {}
    exec(compile(files["wrappers/python/chainerc/functions/_generated.py"], "_generated.py",
                 "exec"), env)
    env["define_all"](lambda sig, cname, doc="", options=0: calls.append((sig, cname, options)))
    probe = [c for c in calls if c[1] == "ch_functions_probe_opts"]
    want = ("probe_opts(x, alpha:d=0.25, steps:i=3, count:q=7, flag:b=True, mode:m=None, "
            "beta:d=-1.5)")
    expect(probe == [(want, "ch_functions_probe_opts", 1)],
           "the Python binding passes the options as a version-1 struct with the manifest's "
           "defaults (got %r)" % (probe,))
    if not probe:
        return
    spec = importlib.util.spec_from_file_location(
        "chainerc_options", os.path.join(root, "wrappers", "python", "chainerc", "_options.py"))
    opts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(opts)
    fields = opts.struct_fields(probe[0][0])
    mirror = opts.options_struct("ch_probe_opts_options", fields)
    names = ["version"] + [n for n, _ in fields]
    unit = os.path.join(tmp, "offsets.c")
    with open(unit, "w") as fh:
        fh.write("#include <ch/functions.h>\n#include <stddef.h>\n#include <stdio.h>\n"
                 "int main(void) {\n  printf(\"%zu\", sizeof(ch_probe_opts_options));\n" +
                 "".join('  printf(" %%zu", offsetof(ch_probe_opts_options, %s));\n' % n
                         for n in names) + "  return 0;\n}\n")
    exe = os.path.join(tmp, "offsets")
    r = subprocess.run([cc, "-std=c99", "-I", os.path.join(tmp, "include"), unit, "-o", exe],
                       capture_output=True, text=True)
    expect(r.returncode == 0, "the offsets program compiles" +
           ("\n" + r.stderr if r.returncode else ""))
    if r.returncode:
        return
    c_layout = [int(v) for v in subprocess.run([exe], capture_output=True, text=True,
                                                check=True).stdout.split()]
    py_layout = [ctypes.sizeof(mirror)] + [getattr(mirror, n).offset for n in names]
    expect(c_layout == py_layout, "the ctypes mirror of ch_probe_opts_options has C's layout "
           "(C %r, ctypes %r)" % (c_layout, py_layout))


def rust_check(root, tmp, files, expect):
    """Type-check the Rust wrapper with the generated bindings (cargo check; the
    sys crate links nothing under DOCS_RS). Skipped without cargo."""
    cargo = shutil.which("cargo")
    if not cargo:
        print("skipped: the Rust binding (no cargo)")
        return
    crate = os.path.join(tmp, "rust")
    shutil.copytree(os.path.join(root, "wrappers", "rust"), crate,
                    ignore=shutil.ignore_patterns("target"))
    for rel, text in files.items():
        if rel.startswith("wrappers/rust/"):
            with open(os.path.join(crate, rel[len("wrappers/rust/"):]), "w") as fh:
                fh.write(text)
    with open(os.path.join(crate, "examples", "probe_opts_check.rs"), "w") as fh:
        fh.write("use chainerc::functions;\n"
                 "fn main() {\n"
                 "    let o = functions::ProbeOptsOptions { steps: 5, ..Default::default() };\n"
                 "    assert_eq!(functions::ProbeOptsOptions::default().alpha, 0.25);\n"
                 "    let _f: fn(&chainerc::Variable, &functions::ProbeOptsOptions)\n"
                 "        -> chainerc::Result<chainerc::Variable> = functions::probe_opts;\n"
                 "    let _ = o;\n}\n")
    env = dict(os.environ, DOCS_RS="1",
               CARGO_TARGET_DIR=os.environ.get("CH_OPTIONS_STRUCT_CARGO_TARGET",
                                               os.path.join(tmp, "target")))
    r = subprocess.run([cargo, "check", "--offline", "--quiet", "--example", "probe_opts_check"],
                       cwd=crate, env=env, capture_output=True, text=True)
    expect(r.returncode == 0, "the generated Rust options struct and function type-check" +
           ("\n" + r.stderr[-3000:] if r.returncode else ""))


def go_check(root, tmp, files, expect):
    """go vet the Go wrapper with the generated bindings (cgo type-checks against
    the generated header; nothing is linked). Skipped without go."""
    go = shutil.which("go")
    if not go:
        print("skipped: the Go binding (no go)")
        return
    pkg = os.path.join(tmp, "go")
    shutil.copytree(os.path.join(root, "wrappers", "go"), pkg)
    for rel, text in files.items():
        if rel.startswith("wrappers/go/"):
            with open(os.path.join(pkg, rel[len("wrappers/go/"):]), "w") as fh:
                fh.write(text)
    with open(os.path.join(pkg, "probe_opts_check_test.go"), "w") as fh:
        fh.write(GO_PROBE)
    pc = os.path.join(tmp, "pkgconfig")
    os.makedirs(pc)
    for name in ("chainerc", "chainerc_mpi"):
        with open(os.path.join(pc, name + ".pc"), "w") as fh:
            fh.write("Name: %s\nDescription: headers only\nVersion: 0\nCflags: -I%s\nLibs:\n"
                     % (name, os.path.join(tmp, "include")))
    env = dict(os.environ, PKG_CONFIG_PATH=pc, GOFLAGS="-mod=mod", GOPROXY="off",
               GOCACHE=os.environ.get("GOCACHE", os.path.join(tmp, "gocache")))
    r = subprocess.run([go, "vet", "."], cwd=pkg, env=env, capture_output=True, text=True)
    expect(r.returncode == 0, "the generated Go options struct and function vet" +
           ("\n" + r.stderr[-3000:] if r.returncode else ""))


GO_PROBE = """package chainerc

import "testing"

func TestProbeOptsDefaults(t *testing.T) {
	o := DefaultProbeOptsOptions()
	if o.Alpha != 0.25 || o.Steps != 3 || !o.Flag || o.Mode != ModeDefault {
		t.Fatalf("defaults %+v", o)
	}
	var f func(*Variable, *ProbeOptsOptions) (*Variable, error) = ProbeOpts
	_ = f
}
"""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
