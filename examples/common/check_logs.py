#!/usr/bin/env python3
"""Test of the examples' --log / --graph files and scripts/plot_log.py (meson
tests example_logs and example_plot).

    check_logs.py logs TRAIN_MNIST TRAIN_MNIST_CPP TRAIN_RNN
    check_logs.py plot TRAIN_MNIST PLOT_LOG_PY

`logs`: a tiny run of each example (--epochs 1, MNIST --limit 500) writes a
log that parses as JSON in Chainer's LogReport format with the expected keys
and sane values; the C and C++ MNIST programs (same seed, same flags) log the
same numbers; the RNN's perplexity is exp of its loss; the --graph DOT text has
the MLP's nodes and edges and, where Graphviz is installed, `dot -Tplain`
reads it. `plot`: plot_log.py turns a log into a PNG (exit 77, skipped,
without matplotlib). Exit 77 (skipped) too where the data set is missing.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

DATA = "/usr/share/datasets/fashion-mnist"
MNIST_KEYS = ["epoch", "iteration", "main/loss", "main/accuracy", "validation/main/loss",
              "validation/main/accuracy", "elapsed_time"]
RNN_KEYS = ["epoch", "iteration", "main/loss", "main/perplexity", "validation/main/loss",
            "validation/main/perplexity", "elapsed_time"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, cwd, env=None):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, env=env)
    print("$ " + " ".join(cmd) + "\n" + r.stdout)
    if r.returncode != 0:
        fail("%s exited with %d" % (cmd[0], r.returncode))


def load_log(path, keys, epochs):
    with open(path) as f:
        entries = json.load(f)
    if not isinstance(entries, list) or len(entries) != epochs:
        fail("%s: expected a list of %d entries, got %r" % (path, epochs, entries))
    for i, e in enumerate(entries):
        if list(e.keys()) != keys:
            fail("%s: entry %d has keys %s, expected %s" % (path, i, list(e.keys()), keys))
        if e["epoch"] != i + 1 or not isinstance(e["iteration"], int) or e["iteration"] < 1:
            fail("%s: entry %d: epoch %r iteration %r" % (path, i, e["epoch"], e["iteration"]))
        for k in keys[2:]:
            if not isinstance(e[k], float) or not math.isfinite(e[k]) or e[k] < 0:
                fail("%s: entry %d: %s is %r" % (path, i, k, e[k]))
    return entries


def logs(train_mnist, train_mnist_cpp, train_rnn):
    with tempfile.TemporaryDirectory() as d:
        if os.path.isdir(DATA):
            args = ["--epochs", "1", "--limit", "500", "--seed", "3"]
            # Two processes agree bit for bit when the CPU GEMM is fixed: each
            # process otherwise measures its own choice among the libraries.
            env = dict(os.environ, CH_GEMM="openblas")
            run([train_mnist] + args + ["--log", "c.json", "--graph", "g.dot"], d, env)
            run([train_mnist_cpp] + args + ["--log", "cpp.json"], d, env)
            c = load_log(os.path.join(d, "c.json"), MNIST_KEYS, 1)[0]
            cpp = load_log(os.path.join(d, "cpp.json"), MNIST_KEYS, 1)[0]
            if c["iteration"] != 5:  # 500 samples / batch 100
                fail("iteration %r, expected 5" % c["iteration"])
            for k in ("main/accuracy", "validation/main/accuracy"):
                if not 0 <= c[k] <= 1:
                    fail("%s is %r" % (k, c[k]))
            for k in MNIST_KEYS[1:-1]:  # the same program in C and C++: the same numbers
                if c[k] != cpp[k]:
                    fail("%s: C logged %r, C++ %r" % (k, c[k], cpp[k]))
            dot = open(os.path.join(d, "g.dot")).read()
            # 784-100-100-10 MLP: x, t, 3 Linear, 2 ReLU, softmax cross entropy, 6 parameters
            if (dot.count('shape="box"'), dot.count('shape="oval"'), dot.count("->")) != (6, 14, 19):
                fail("unexpected graph:\n" + dot)
            if '"loss\\n(), float32"' not in dot or '"W\\n(100, 784), float32"' not in dot:
                fail("labels missing:\n" + dot)
            if subprocess.run(["sh", "-c", "command -v dot"], stdout=subprocess.DEVNULL).returncode == 0:
                r = subprocess.run(["dot", "-Tplain", "g.dot"], cwd=d, stdout=subprocess.PIPE,
                                   universal_newlines=True)
                lines = r.stdout.splitlines()
                if r.returncode != 0 or sum(l.startswith("node ") for l in lines) != 20 or \
                        sum(l.startswith("edge ") for l in lines) != 19:
                    fail("dot -Tplain: rc %d\n%s" % (r.returncode, r.stdout))
        else:
            print("no %s: MNIST part skipped" % DATA)
        run([train_rnn, "--epochs", "1", "--log", "rnn.json"], d)
        r = load_log(os.path.join(d, "rnn.json"), RNN_KEYS, 1)[0]
        for p, l in (("main/perplexity", "main/loss"),
                     ("validation/main/perplexity", "validation/main/loss")):
            if abs(r[p] - math.exp(r[l])) > 1e-6 * r[p]:
                fail("%s %r is not exp(%s) = %r" % (p, r[p], l, math.exp(r[l])))
    print("PASS")


def plot(train_mnist, plot_log):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: skipped")
        sys.exit(77)
    if not os.path.isdir(DATA):
        print("no %s: skipped" % DATA)
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        run([train_mnist, "--epochs", "2", "--limit", "300", "--log", "log.json"], d)
        run([sys.executable, plot_log, "log.json", "-o", "curves.png"], d)
        with open(os.path.join(d, "curves.png"), "rb") as f:
            head = f.read(8)
        if head != b"\x89PNG\r\n\x1a\n":
            fail("curves.png is not a PNG (starts with %r)" % head)
        # A file that is not a LogReport list is refused with a message.
        with open(os.path.join(d, "bad.json"), "w") as f:
            f.write('{"epoch": 1}')
        r = subprocess.run([sys.executable, plot_log, "bad.json"], cwd=d, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode == 0 or "LogReport" not in r.stderr:
            fail("bad.json: rc %d, stderr %r" % (r.returncode, r.stderr))
    print("PASS")


if __name__ == "__main__":
    sys.argv[2:] = [os.path.abspath(a) for a in sys.argv[2:]]  # meson passes build-relative paths
    if len(sys.argv) == 5 and sys.argv[1] == "logs":
        logs(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "plot":
        plot(*sys.argv[2:])
    else:
        sys.exit(__doc__)
