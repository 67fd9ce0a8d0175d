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


def test_mnist_example_log_and_graph(tmp_path):
    """mnist_mlp.py --log writes Chainer's LogReport JSON, --graph the DOT of
    one mini-batch (784-100-100-10 MLP: 6 functions, 8 variables, 6 parameters)."""
    import json
    import pytest
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "mnist_mlp.py"), "--epochs", "2",
                          "--limit", "300", "--log", "log.json", "--graph", "g.dot"],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    log = json.loads((tmp_path / "log.json").read_text())
    assert [e["epoch"] for e in log] == [1, 2] and [e["iteration"] for e in log] == [3, 6]
    for e in log:
        assert list(e) == ["epoch", "iteration", "main/loss", "main/accuracy",
                           "validation/main/loss", "validation/main/accuracy", "elapsed_time"]
        assert 0 <= e["main/accuracy"] <= 1 and 0 <= e["validation/main/accuracy"] <= 1
        assert e["main/loss"] > 0 and e["validation/main/loss"] > 0
    dot = (tmp_path / "g.dot").read_text()
    assert (dot.count('shape="box"'), dot.count('shape="oval"'), dot.count("->")) == (6, 14, 19)


def test_double_backprop_example():
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "double_backprop.py")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "double backprop example passed" in out.stdout
