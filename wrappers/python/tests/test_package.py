"""`pip install ./wrappers/python` into a fresh virtual environment builds
libchainerc into the package, and the seed tutorial's code runs from there
with no CHAINERC_LIBRARY and no PYTHONPATH; CHAINERC_LIBRARY still overrides.

It builds the library again (Meson, in <repo>/build-python: with ccache and
build/ configured the same way, seconds; cold, minutes), so it runs only with
CHAINERC_TEST_PACKAGE=1 (scripts/test.sh sets it)."""
import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)

pytestmark = pytest.mark.skipif(
    os.environ.get("CHAINERC_TEST_PACKAGE") != "1",
    reason="set CHAINERC_TEST_PACKAGE=1 to build and install the package into a fresh venv")

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
print("LIBRARY", chainerc.library_path)
print("MODULE", chainerc.__file__)
'''


def test_pip_install_into_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CHAINERC_LIBRARY", "PYTHONPATH", "LD_PRELOAD", "PYTHONHOME")}
    pip = [py, "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    # Build requirements without isolation (fast; meson and ninja come from PATH):
    # the venv's setuptools, and wheel where setuptools < 70 needs it.
    if subprocess.call([py, "-c", "import setuptools, wheel"], stderr=subprocess.DEVNULL) != 0:
        subprocess.check_call(pip + ["setuptools>=61", "wheel"], env=env)
    t0 = time.time()
    subprocess.check_call(pip + ["--no-build-isolation", PKG], env=env)
    print("pip install took %.1f s" % (time.time() - t0))

    run = tmp_path / "run"  # nothing of the repository on the path
    run.mkdir()
    shutil.copy(os.path.join(HERE, "test_tutorial.py"), str(run))
    (run / "tutorial.py").write_text(TUTORIAL)
    out = subprocess.run([py, "tutorial.py"], cwd=str(run), env=env, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    lib = out.split("LIBRARY ")[1].split("\n")[0]
    module = out.split("MODULE ")[1].split("\n")[0]
    assert module.startswith(str(venv)), out
    assert lib.startswith(str(venv)) and lib.endswith(os.path.join("_lib", "libchainerc.so.0")), out

    # CHAINERC_LIBRARY still overrides the packaged library.
    other = tmp_path / "copy" / "libchainerc.so.0"
    other.parent.mkdir()
    shutil.copy(lib, str(other))
    out = subprocess.run([py, "-c", "import chainerc; print(chainerc.library_path)"],
                         cwd=str(run), env=dict(env, CHAINERC_LIBRARY=str(other)), check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert out.strip() == str(other)
