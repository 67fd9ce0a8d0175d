"""chainerc.distributed (libchainerc_mpi): tests/distributed_worker.py run on 2
ranks with mpirun (skipped where mpirun or libchainerc_mpi is missing)."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _skip_reason():
    if shutil.which("mpirun") is None:
        return "mpirun not found (Open MPI's openmpi-bin)"
    try:
        import chainerc.distributed  # noqa: F401
    except ImportError as e:
        return str(e)
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_two_ranks():
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
    env.pop("LD_PRELOAD", None)  # a sanitized library's runtimes: not under mpirun
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                        sys.executable, os.path.join(HERE, "distributed_worker.py")],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    assert r.returncode == 0, out
    assert "rank 0: ok" in out and "rank 1: ok" in out, out
