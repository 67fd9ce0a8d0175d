#!/usr/bin/env python3
"""Draw the loss and accuracy curves of a training log to a PNG.

    scripts/plot_log.py log.json [-o curves.png] [--title TEXT]

The log is a JSON list of per-epoch dicts in the format of Chainer's LogReport
(what the examples write with --log: "epoch", "main/loss", "main/accuracy",
"validation/main/loss", "validation/main/accuracy", ...; the RNN example's
"main/perplexity" too). Every key ending in "loss" goes to the left panel,
every key ending in "accuracy" or "perplexity" to the right one, against the
epoch. Needs matplotlib (pip install matplotlib, or Debian's
python3-matplotlib); draws without a display (Agg backend).
"""
import argparse
import json
import math
import sys


def series(entries, key):
    xs, ys = [], []
    for i, e in enumerate(entries):
        v = e.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            xs.append(e.get("epoch", i + 1))
            ys.append(v)
    return xs, ys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="LogReport JSON file (a list of per-epoch dicts)")
    ap.add_argument("-o", "--output", default=None, help="PNG to write (default: LOG with .png)")
    ap.add_argument("--title", default=None, help="figure title (default: the log's name)")
    ap.add_argument("--dpi", type=int, default=80)
    args = ap.parse_args(argv)

    try:
        with open(args.log) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("plot_log.py: cannot read %s: %s" % (args.log, e))
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        sys.exit("plot_log.py: %s is not a JSON list of objects (Chainer's LogReport format)"
                 % args.log)
    keys = []
    for e in entries:
        for k in e:
            if k not in keys:
                keys.append(k)
    left = [k for k in keys if k.endswith("loss")]
    right = [k for k in keys if k.endswith("accuracy") or k.endswith("perplexity")]
    if not left and not right:
        sys.exit("plot_log.py: %s has no key ending in loss, accuracy or perplexity (keys: %s)"
                 % (args.log, ", ".join(keys) or "none"))

    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_log.py: needs matplotlib (pip install matplotlib, or apt-get install "
                 "python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in (left, right) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2), squeeze=False)
    for ax, ks in zip(axes[0], panels):
        for k in ks:
            xs, ys = series(entries, k)
            style = "--" if k.startswith("validation/") else "-"
            ax.plot(xs, ys, style, marker="o", markersize=3, label=k)
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss" if ks is left else ks[0].rsplit("/", 1)[-1])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(args.title if args.title is not None else args.log, fontsize=10)
    fig.tight_layout()
    out = args.output or (args.log.rsplit(".", 1)[0] if args.log.endswith(".json")
                          else args.log) + ".png"
    fig.savefig(out, dpi=args.dpi)
    print("plot_log.py: wrote %s (%d epochs; %s)" % (out, len(entries), ", ".join(left + right)))


if __name__ == "__main__":
    main()
