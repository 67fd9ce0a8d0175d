#!/usr/bin/env python3
"""The seed's "Multi-layer Perceptron on MNIST" (Chainer 1.0.1 tutorial 1.1.6)
with chainerc, on Fashion-MNIST: 784-100-100-10 ReLU network, minibatches of
100, softmax cross entropy; trains for --epochs (default 1) and prints the
test loss and accuracy. Only the import lines and the data loading differ
from the tutorial.

Data: /usr/share/datasets/fashion-mnist/*.gz (Debian's dataset-fashion-mnist),
read with the library's IDX reader (chainerc.datasets.read_idx).

Usage: python3 mnist_mlp.py [--epochs N] [--optimizer sgd|momentum|adam]
                            [--lr LR] [--data DIR] [--seed S] [--limit N]
                            [--log log.json] [--graph graph.dot]

--log writes the per-epoch numbers in the format of Chainer's LogReport (a JSON
list; scripts/plot_log.py draws it), --graph the first mini-batch's
computational graph as Graphviz DOT (chainerc.computational_graph).
"""
import json
import argparse
import os
import sys
import time

import numpy as np

try:
    import chainerc  # an installed package (pip install ./wrappers/python)
except ImportError:  # else the package this example sits next to
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import chainerc  # noqa: E402
from chainerc import Variable, FunctionSet, optimizers, datasets  # noqa: E402
import chainerc.computational_graph as c  # noqa: E402
import chainerc.functions as F  # noqa: E402


def load(data_dir):
    def path(name):
        return os.path.join(data_dir, name)
    x_train = datasets.read_idx(path("train-images-idx3-ubyte.gz"), np.float32, 1.0 / 255)
    y_train = datasets.read_idx(path("train-labels-idx1-ubyte.gz"), np.int32)
    x_test = datasets.read_idx(path("t10k-images-idx3-ubyte.gz"), np.float32, 1.0 / 255)
    y_test = datasets.read_idx(path("t10k-labels-idx1-ubyte.gz"), np.int32)
    return (x_train.reshape(len(x_train), -1), y_train,
            x_test.reshape(len(x_test), -1), y_test)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"])
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--batchsize", type=int, default=100)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="use the first N training samples")
    ap.add_argument("--log", default=None, help="LogReport JSON file to write")
    ap.add_argument("--graph", default=None, help="Graphviz DOT file of one mini-batch's graph")
    args = ap.parse_args()

    np.random.seed(args.seed)
    chainerc.seed(args.seed)
    x_train, y_train, x_test, y_test = load(args.data)
    if args.limit > 0:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    n_train, n_test = len(x_train), len(x_test)

    model = FunctionSet(
        l1=F.Linear(784, 100),
        l2=F.Linear(100, 100),
        l3=F.Linear(100, 10),
    )
    if args.optimizer == "sgd":
        optimizer = optimizers.SGD(lr=args.lr or 0.01)
    elif args.optimizer == "momentum":
        optimizer = optimizers.MomentumSGD(lr=args.lr or 0.01)
    else:
        optimizer = optimizers.Adam(alpha=args.lr or 0.001)
    optimizer.setup(model.collect_parameters())

    def forward(x_data, y_data, train=True):
        x = Variable(x_data, volatile=not train)
        t = Variable(y_data, volatile=not train)
        x.requires_grad = False  # not in the seed: l1 then skips the input gradient
        h1 = F.relu(model.l1(x))
        h2 = F.relu(model.l2(h1))
        y = model.l3(h2)
        return F.softmax_cross_entropy(y, t), F.accuracy(y, t)

    batchsize = args.batchsize
    log, iteration, start = [], 0, time.time()
    for epoch in range(args.epochs):
        t0 = time.time()
        indexes = np.random.permutation(n_train)
        sum_loss, sum_train_accuracy = 0.0, 0.0
        for i in range(0, n_train, batchsize):
            x_batch = x_train[indexes[i: i + batchsize]]
            y_batch = y_train[indexes[i: i + batchsize]]
            optimizer.zero_grads()
            loss, accuracy = forward(x_batch, y_batch)
            if args.graph and epoch == 0 and i == 0:
                with open(args.graph, "w") as o:
                    o.write(c.build_computational_graph((loss,), names=("loss",)).dump())
                print("wrote the graph of one mini-batch to %s (dot -Tpng %s -o graph.png)"
                      % (args.graph, args.graph))
            loss.backward()
            optimizer.update()
            iteration += 1
            sum_loss += float(loss.data) * len(x_batch)
            sum_train_accuracy += float(accuracy.data) * len(x_batch)
        train_time = time.time() - t0
        train_loss, train_accuracy = sum_loss / n_train, sum_train_accuracy / n_train

        sum_loss, sum_accuracy = 0.0, 0.0
        for i in range(0, n_test, batchsize):
            x_batch = x_test[i: i + batchsize]
            y_batch = y_test[i: i + batchsize]
            loss, accuracy = forward(x_batch, y_batch, train=False)
            sum_loss += float(loss.data) * len(x_batch)
            sum_accuracy += float(accuracy.data) * len(x_batch)
        print("epoch %d: train %.1f s, test loss %.4f, test accuracy %.4f"
              % (epoch + 1, train_time, sum_loss / n_test, sum_accuracy / n_test))
        if args.log:  # Chainer's LogReport format, written whole after each epoch
            log.append({"epoch": epoch + 1, "iteration": iteration, "main/loss": train_loss,
                        "main/accuracy": train_accuracy,
                        "validation/main/loss": sum_loss / n_test,
                        "validation/main/accuracy": sum_accuracy / n_test,
                        "elapsed_time": time.time() - start})
            with open(args.log + ".tmp", "w") as o:
                json.dump(log, o, indent=1)
            os.replace(args.log + ".tmp", args.log)
    if args.log:
        print("wrote the training log to %s (plot it: scripts/plot_log.py %s)"
              % (args.log, args.log))


if __name__ == "__main__":
    main()
