"""The examples run and print what they promise."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")


def test_muladd_example():
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "muladd.py")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "gradient checks passed" in out.stdout
