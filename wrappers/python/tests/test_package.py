"""The binary wheel (scripts/packaging.sh builds it from the Debian package's
libchainerc and bundles its shared libraries with `auditwheel repair`) needs
nothing of the machine but the platform's base libraries: `auditwheel show`
finds it consistent with a manylinux tag, and ldd resolves every library the
packaged ELF files need either inside the wheel (chainerc.libs/) or to one of
the base libraries. `pip install` of it into a fresh virtual environment runs
the seed tutorial with the bundled OpenBLAS, oneDNN and libzip (not the
machine's), with no CHAINERC_LIBRARY and no PYTHONPATH, and, where a private
mount namespace can be had (root), with the machine's OpenBLAS, oneDNN, libzip
and compilers hidden; CHAINERC_LIBRARY still overrides.

The wheel carries the optional extension chainerc._speedups, so it is tagged
for the CPython that built it (cpXY-cpXY-manylinux_...): the extension links
no libchainerc and no libpython (ldd: base libraries only), and in the venv it
is the module the package uses (its C trampolines are a user Function's
callbacks) with MulAdd's values and gradients right (NumPy as the reference);
with CHAINERC_NO_SPEEDUPS=1 the ctypes paths run and give the same values.

CHAINERC_TEST_WHEEL names the wheel; without it these tests skip.
CHAINERC_AUDITWHEEL names the auditwheel program (default: auditwheel on PATH)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WHEEL = os.environ.get("CHAINERC_TEST_WHEEL", "")

pytestmark = pytest.mark.skipif(
    not WHEEL, reason="set CHAINERC_TEST_WHEEL to a wheel built by scripts/packaging.sh")

# The libraries a manylinux wheel may take from the system (the manylinux
# policies' list, less the X11/GL ones a ctypes library never needs): glibc's,
# the GCC runtime's and zlib.
BASE_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libmvec.so.1", "libdl.so.2", "librt.so.1", "libpthread.so.0",
    "libutil.so.1", "libnsl.so.1", "libresolv.so.2", "libcrypt.so.1", "libstdc++.so.6",
    "libgcc_s.so.1", "libz.so.1", "ld-linux-x86-64.so.2", "linux-vdso.so.1",
}

TUTORIAL = r'''
import os, sys
import chainerc
import test_tutorial as t
for name in sorted(n for n in dir(t) if n.startswith("test_")):
    getattr(t, name)()
# The seed's function test (section 1.4.4), verbatim but for the seed: with
# unseeded data an element within eps of relu's kink makes it fail now and
# then (seen once in CI: 0.7 eps from 0); randn(3, 2) from seed 0 is far from it.
import numpy as np
from chainerc import Variable, gradient_check
import chainerc.functions as F
np.random.seed(0)
x = Variable(np.random.randn(3, 2).astype(np.float32))
y = F.relu(x)
y.grad = np.random.randn(3, 2).astype(np.float32)
y.backward()
func = y.creator
f = lambda: func.forward((x.data,))
gx, = gradient_check.numerical_grad(f, (x.data,), (y.grad,))
gradient_check.assert_allclose(gx, x.grad)
# A linear layer's forward goes through the GEMM candidates (OpenBLAS, oneDNN).
l = F.Linear(64, 32)
l(Variable(np.ones((16, 64), dtype=np.float32)))
print("LIBRARY", chainerc.library_path)
print("MODULE", chainerc.__file__)
with open("/proc/self/maps") as f:
    for line in f:
        if re.search(r"lib(openblas|dnnl|zip|gfortran)", line):
            print("MAPPED", line.split()[-1])
'''.replace("import os, sys", "import os, re, sys")


# What the wheel must not need from the machine: its own copies replace these
# libraries, and it needs no compiler. The tutorial runs with them hidden
# where a private mount namespace can be had (root: unshare -m).
HIDDEN_LIBRARIES = ("libopenblas", "libdnnl", "libzip", "libgfortran")
HIDDEN_PROGRAMS = ("cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc")


def hidden_paths():
    paths = set()
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        for root, _, files in os.walk(d):
            if root.count(os.sep) - d.count(os.sep) > 1:
                continue  # the folder and its direct subfolders (openblas-pthread/)
            for f in files:
                if f.startswith(HIDDEN_LIBRARIES) and ".so" in f:
                    paths.add(os.path.realpath(os.path.join(root, f)))
    for prog in HIDDEN_PROGRAMS:
        found = shutil.which(prog)
        if found:
            paths.add(os.path.realpath(found))
    return sorted(p for p in paths if os.path.isfile(p))


def without_machine_libraries(cmd):
    """cmd run where the machine's OpenBLAS, oneDNN, libzip and compilers are
    /dev/null (a private mount namespace), after checking that they are; None
    where no namespace can be had."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    if subprocess.call(["unshare", "-m", "true"], stderr=subprocess.DEVNULL) != 0:
        return None
    script = "".join("mount --bind /dev/null %s && " % shlex.quote(p) for p in hidden_paths())
    probe = ("import ctypes, sys\nfor n in ('libopenblas.so.0', 'libdnnl.so.2', 'libzip.so.4'):\n"
             "    try:\n        ctypes.CDLL(n)\n    except OSError:\n        continue\n"
             "    sys.exit('still loadable: ' + n)\n")
    script += "%s -c %s && ! cc --version >/dev/null 2>&1 && exec \"$@\"" % (
        shlex.quote(cmd[0]), shlex.quote(probe))
    return ["unshare", "-m", "sh", "-c", script, "sh"] + cmd


def clean_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("CHAINERC_LIBRARY", "PYTHONPATH", "LD_PRELOAD", "PYTHONHOME",
                         "LD_LIBRARY_PATH")}


CP_TAG = "cp%d%d" % sys.version_info[:2]
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so

# Run from the installed wheel: MulAdd (a user Function) against NumPy, and
# which paths ran.
SPEEDUPS = r'''
import ctypes, json
import numpy as np
from chainerc import Function, Variable, _array, _capi, function, variable

class MulAdd(Function):
    def forward(self, inputs):
        x, y, z = inputs
        return x * y + z,

    def backward(self, inputs, grad_outputs):
        x, y, z = inputs
        gw, = grad_outputs
        return y * gw, x * gw, gw

rng = np.random.RandomState(3)
m = [rng.uniform(-1, 1, 10).astype(np.float32) for _ in range(3)]
gw = rng.uniform(-1, 1, 10).astype(np.float32)
xs = [Variable(a) for a in m]
w = MulAdd()(*xs)
w.grad = gw
w.backward()
np.testing.assert_allclose(w.data, m[0] * m[1] + m[2], rtol=1e-6)
np.testing.assert_allclose(xs[0].grad, m[1] * gw, rtol=1e-6)
np.testing.assert_allclose(xs[1].grad, m[0] * gw, rtol=1e-6)
np.testing.assert_array_equal(xs[2].grad, gw)
assert all(x.data is a for x, a in zip(xs, m))
r = {"used": _capi.speedups is not None, "values": w.data.tolist(),
     "grads": [x.grad.tolist() for x in xs]}
if r["used"]:
    from chainerc import _speedups
    r["file"] = _speedups.__file__
    r["module_is_used"] = (_capi.speedups is _speedups and _array.speedups is _speedups
                           and _array.cpu_view is _speedups.cpu_view
                           and function._sp_apply is _speedups.apply
                           and variable._sp_init is _speedups.init_variable)
    addrs = _speedups.callbacks()
    cb = function._SP_CALLBACKS
    r["trampolines"] = (cb["forward"] is not function._CALLBACKS["forward"]
                        and ctypes.cast(cb["forward"], ctypes.c_void_p).value == addrs[0]
                        and ctypes.cast(cb["backward"], ctypes.c_void_p).value == addrs[1])
    r["owner_views"] = type((xs[0] * 2).data.base) is _speedups.Owner
print("RESULT " + json.dumps(r))
'''


def test_wheel_is_manylinux_and_needs_only_base_libraries(tmp_path):
    assert re.search(r"-manylinux_\d+_\d+_x86_64\.whl$|-manylinux_\d+_\d+_aarch64\.whl$", WHEEL), WHEEL
    # The extension ties the wheel to the CPython ABI that built it.
    assert re.search(r"-%s-%s-manylinux_" % (CP_TAG, CP_TAG), os.path.basename(WHEEL)), WHEEL
    auditwheel = os.environ.get("CHAINERC_AUDITWHEEL") or shutil.which("auditwheel")
    if auditwheel:
        show = subprocess.run([auditwheel, "show", WHEEL], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True).stdout
        print(show)
        # auditwheel wraps its lines (the longer cpXY-cpXY name moves the break).
        assert re.search(r'is\s+consistent\s+with\s+the\s+following\s+platform\s+tag:\s+'
                         r'"manylinux_', show), show

    with zipfile.ZipFile(WHEEL) as z:
        z.extractall(str(tmp_path))
    libs_dir = tmp_path / "chainerc.libs"
    bundled = sorted(os.listdir(str(libs_dir)))
    for name in ("openblas", "dnnl", "libzip"):
        assert any(name in b for b in bundled), (name, bundled)
    elf_files = [str(p) for p in tmp_path.rglob("*.so*") if p.is_file()]
    assert any(p.endswith(os.path.join("_lib", "libchainerc.so.0")) for p in elf_files), elf_files
    speedups = str(tmp_path / "chainerc" / ("_speedups" + EXT_SUFFIX))
    assert speedups in elf_files, elf_files
    # Not linked against libchainerc (it gets the functions' addresses from
    # ctypes) nor libpython (the interpreter provides its symbols).
    needed = subprocess.run(["ldd", speedups], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, env=clean_env()).stdout
    assert "libchainerc" not in needed and "libpython" not in needed, needed
    dynamic = subprocess.run(["readelf", "-d", speedups], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic, dynamic  # no build machine path
    for path in elf_files:
        out = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, env=clean_env()).stdout
        for line in out.splitlines():
            line = line.strip()
            assert "not found" not in line, (path, out)
            m = re.match(r"(\S+)\s+=>\s+(\S+)", line)
            if not m:
                continue  # the loader itself, the vDSO
            soname, where = m.groups()
            inside = os.path.realpath(where).startswith(str(libs_dir) + os.sep)
            assert inside or soname in BASE_LIBRARIES, (path, line)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, its python): the wheel pip-installed into a fresh venv."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    t0 = time.time()
    subprocess.check_call([py, "-m", "pip", "--disable-pip-version-check", "install", "-q", WHEEL],
                          env=clean_env())
    print("pip install took %.1f s" % (time.time() - t0))
    return venv, py


def test_pip_install_wheel_into_fresh_venv_runs_tutorial(installed, tmp_path):
    venv, py = installed
    env = clean_env()
    run = tmp_path / "run"  # nothing of the repository on the path
    run.mkdir()
    shutil.copy(os.path.join(HERE, "test_tutorial.py"), str(run))
    (run / "tutorial.py").write_text(TUTORIAL)
    cmd = without_machine_libraries([py, "tutorial.py"])
    if cmd is None:
        print("no private mount namespace here: the machine's libraries stay visible")
        cmd = [py, "tutorial.py"]
    out = subprocess.run(cmd, cwd=str(run), env=env, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    lib = out.split("LIBRARY ")[1].split("\n")[0]
    module = out.split("MODULE ")[1].split("\n")[0]
    assert module.startswith(str(venv)), out
    assert lib.startswith(str(venv)) and lib.endswith(os.path.join("_lib", "libchainerc.so.0")), out
    # OpenBLAS, oneDNN and libzip are the wheel's own copies, never the machine's.
    mapped = set(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("MAPPED "))
    for name in ("openblas", "dnnl", "libzip"):
        hits = [m for m in mapped if name in os.path.basename(m)]
        assert hits, (name, mapped)
        assert all(m.startswith(str(venv)) for m in hits), (name, hits)

    # CHAINERC_LIBRARY still overrides the packaged library (a copy at the
    # same depth, where its rpath still reaches chainerc.libs/).
    other = os.path.join(os.path.dirname(os.path.dirname(lib)), "_lib_copy", "libchainerc.so.0")
    os.makedirs(os.path.dirname(other))
    shutil.copy(lib, str(other))
    out = subprocess.run([py, "-c", "import chainerc; print(chainerc.library_path)"],
                         cwd=str(run), env=dict(env, CHAINERC_LIBRARY=str(other)), check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert out.strip() == other


def _speedups_result(cmd, cwd, env):
    out = subprocess.run(cmd, cwd=str(cwd), env=env, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    print(out)
    return json.loads(out.split("RESULT ", 1)[1])


def test_installed_wheel_uses_its_speedups(installed, tmp_path):
    venv, py = installed
    env = {k: v for k, v in clean_env().items() if k != "CHAINERC_NO_SPEEDUPS"}
    # With the machine's compilers hidden where a namespace can be had: the
    # wheel's module is prebuilt, nothing compiles at install or import.
    cmd = without_machine_libraries([py, "-c", SPEEDUPS]) or [py, "-c", SPEEDUPS]
    on = _speedups_result(cmd, tmp_path, env)
    assert on["used"], on
    assert on["file"].startswith(str(venv)) and on["file"].endswith("_speedups" + EXT_SUFFIX), on
    assert on["module_is_used"] and on["trampolines"] and on["owner_views"], on
    # CHAINERC_NO_SPEEDUPS=1: the ctypes paths, the same values.
    off = _speedups_result([py, "-c", SPEEDUPS], tmp_path, dict(env, CHAINERC_NO_SPEEDUPS="1"))
    assert not off["used"], off
    assert off["values"] == on["values"] and off["grads"] == on["grads"], (on, off)
