#!/usr/bin/env bash
# Installs what is missing, builds chainerc (release, in build/), and runs the
# main job: the seed's MNIST multi-layer perceptron (784-100-100-10, ReLU,
# softmax cross entropy, SGD lr 0.01, batch 100) trained for 20 epochs on
# Fashion-MNIST (Debian's dataset-fashion-mnist), written in C against the C
# API (examples/mnist/train_mnist.c). Arguments go to the program, e.g.
#   scripts/demo.sh --epochs 5 --optimizer adam --lr 0.001 --save model.npz
# (--help lists them). The seed tutorial's computations are
# build/examples/tutorial/tutorial.
#
# Environment:
#   CH_BUILD_DIR   build folder (default: build, shared with scripts/test.sh)
#   CH_MESON_ARGS  extra `meson setup` options
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$CH_ROOT"

build_dir="${CH_BUILD_DIR:-build}"
ch_ensure_deps
ch_configure "$build_dir"
ch_build "$build_dir"

demo="$build_dir/examples/mnist/train_mnist"
if [ ! -x "$demo" ]; then
  ch_die "the MNIST program $demo was not built (is -Dexamples=true?)"
fi
ch_log "running $demo"
exec "$demo" "$@"
