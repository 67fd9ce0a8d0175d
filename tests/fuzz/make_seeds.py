#!/usr/bin/env python3
"""Writes the hand-made seeds of corpus/sequence/ and corpus/reentry/ (the byte
code of fuzz_sequence.cpp and fuzz_reentry.cpp: an operation byte, a destination slot, then operands) and
corpus/npz/compressed_model.npz (NumPy's savez_compressed, deflated entries).
Run from anywhere; the other seeds are plain files in corpus/."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ONE = 144  # value byte: (144 - 128) / 16 = 1.0
HALF = 136

SEQUENCES = {
    # x (3, 4) -> Linear(4, 2) in a set with Adam -> MSE against t -> backward,
    # update, save/load model and optimizer, release in a scrambled order.
    "train_linear_adam": [
        0, 0, 0, 2, 3, 4, ONE,        # arrays[0] = full f32 (3, 4)
        1, 0, 0, 0,                   # vars[0] = variable(arrays[0])
        13, 0, 4, 2, 0, 0,            # fns[0] = Linear(4, 2)
        17, 0, 1,                     # sets[0] = new set
        17, 0, 0, 0, 0, 0,            # sets[0].add("l1", fns[0])
        18, 0, 2, 0,                  # opts[0] = Adam, setup(sets[0])
        15, 1, 0, 0, 1, 1, 1, 1,      # vars[1] = fns[0](vars[0])
        0, 1, 0, 2, 3, 2, HALF,       # arrays[1] = full f32 (3, 2)
        1, 2, 1, 0,                   # vars[2] = variable(arrays[1])
        3, 3, 1, 2, 4,                # vars[3] = mse(vars[1], vars[2])
        4, 0, 3, 0,                   # vars[3].backward()
        19, 0, 0, 3,                  # opts[0].update()
        20, 0, 0, 1, 1,               # save sets[0] (compressed)
        20, 0, 0, 0,                  # load sets[0]
        21, 0, 0, 1, 0,               # save opts[0] (stored)
        21, 0, 0, 0,                  # load opts[0]
        5, 0,                         # release vars[0]
        4, 0, 3, 1,                   # backward again, retain_grad
        22, 0, 1,                     # release sets[0]
        19, 0, 0, 3,                  # opts[0].update() after its set is gone
        7, 0,                         # release fns[0]
    ],
    # A user function (forward copies, backward passes gy) whose backward is
    # made to fail, then succeed.
    "user_function_errors": [
        0, 0, 1, 1, 4, ONE,           # arrays[0] = full f64 (4,)
        1, 0, 0, 0,                   # vars[0]
        14, 0, 1,                     # fns[0] = user function with backward
        15, 1, 0, 0, 0, 1, 1, 1,      # vars[1] = fns[0](vars[0])
        2, 2, 1, 6,                   # vars[2] = sum(vars[1])
        16, 0, 0,                     # backward callbacks fail
        4, 0, 2, 0,                   # backward -> error
        16, 0, 1,                     # backward callbacks succeed
        4, 0, 2, 0,                   # backward -> ok
        15, 3, 0, 0, 0, 0, 1, 1,      # forward fails on request
        10, 4, 0, 0, 0,               # arrays[4] = vars[0].grad; fns[0] = creator
        5, 1, 6, 0, 5, 2,             # release arrays[0], vars[1], vars[2]
    ],
    # Labels and scores, matmul, reshape, wrong-dtype set_grad, unchain.
    "softmax_matmul_reshape": [
        0, 0, 0, 2, 2, 3, ONE,        # arrays[0] = f32 (2, 3)
        0, 1, 2, 1, 2, 129,           # arrays[1] = int32 (2,) filled with 0
        1, 0, 0, 0, 1, 1, 1, 0,       # vars[0], vars[1]
        3, 2, 0, 1, 5,                # vars[2] = softmax_cross_entropy(vars[0], vars[1])
        4, 0, 2, 0,                   # backward
        3, 3, 0, 0, 6, 0, 1,          # vars[3] = matmul(vars[0], vars[0]^T)
        12, 4, 3, 1, 5,               # vars[4] = reshape(vars[3], (4,))
        0, 2, 1, 1, 4, ONE,           # arrays[2] = f64 (4,)
        8, 0, 4, 1, 2,                # vars[4].set_grad(arrays[2]) -> dtype error
        11, 0, 3,                     # vars[3].unchain_backward()
        4, 0, 4, 0,                   # backward from vars[4] (no grad: error)
        9, 0, 0, 2,                   # vars[0].set_data(arrays[2])
        4, 0, 2, 0,                   # backward through the replaced data
    ],
}

# fuzz_reentry.cpp's byte code. Extent bytes index {0, 1, 2, 3, 4, 2**20,
# 2**31, 2**40, 2**62, INT64_MAX}; an action is (kind, a, b): 1 unchain the
# node, 2 unchain backward from its output, 3 release vars[a], 4 release
# arrays[a], 5 relu/softmax, 6 nested backward, 7 set_data, 8 apply fns[b].
REENTRY = {
    # x (1,) -> user function whose backward unchains its own node -> relu
    # -> backward (issue 48 item 1).
    "unchain_in_backward": [
        0, 0, 1, 1, 0, ONE,           # arrays[0] = f32 (1,)
        2, 0, 0,                      # vars[0]
        3, 0, 0, 0, 0, 1, 0, 0,       # fns[0]: backward unchains itself
        4, 1, 0, 0, 0, 0,             # vars[1] = fns[0](vars[0])
        5, 2, 1, 4,                   # vars[2] = relu(vars[1])
        8, 0, 2, 0,                   # backward
    ],
    # The same, the callback unchaining backward from its output.
    "unchain_backward_in_backward": [
        0, 0, 1, 1, 0, ONE,
        2, 0, 0,
        3, 0, 0, 0, 0, 2, 0, 0,       # fns[0]: backward unchains from its output
        4, 1, 0, 0, 0, 0,
        5, 2, 1, 4,
        8, 0, 2, 1,
    ],
    # A wrapped buffer whose release callback releases vars[3], freed when
    # set_data replaces it (issue 48 item 2).
    "release_callback_releases": [
        1, 1, 2, 2, 3, 3, 0,          # arrays[1] = wrapped (2, 2): release vars[3]
        2, 0, 1,                      # vars[0] = variable(arrays[1])
        14, 1,                        # release arrays[1]
        0, 0, 2, 2, 2, 0, ONE,        # arrays[0] = f32 (2, 2)
        2, 3, 0,                      # vars[3] = variable(arrays[0])
        5, 4, 0, 4,                   # vars[4] = relu(vars[0])
        5, 5, 4, 4,                   # vars[5] = relu(vars[4])
        9, 0, 0, 0,                   # vars[0].set_data(arrays[0])
        13, 4,                        # release vars[4]
    ],
    # (2**40, 3, 0) through softmax, LRN, sum over an axis and concat; pooling
    # and convolution with extreme strides and pads (issue 48 items 3, 6).
    "empty_huge_extreme_geometry": [
        0, 0, 3, 7, 3, 0, 0, ONE,     # arrays[0] = f32 (2**40, 3, 0)
        2, 0, 0,                      # vars[0]
        5, 1, 0, 0,                   # softmax
        5, 2, 0, 1, 2,                # local_response_normalization n = 5
        5, 3, 0, 2, 5, 0,             # sum over axis 1
        5, 4, 0, 3, 0, 2, 5,          # concat (x, x, x) on axis 1
        0, 1, 4, 1, 1, 2, 2, 0, ONE,  # arrays[1] = f32 (1, 1, 2, 2)
        2, 6, 1,                      # vars[6]
        6, 7, 6, 1, 2, 1, 2, 0, 9, 0, 8, 0, 7, 1, 0, 1, 1,  # max pooling, extreme s, p
        7, 1, 0, 1, 1, 0, 9, 0, 8, 0, 1,  # conv with stride INT64_MAX, pad 2**62
        4, 8, 6, 6, 1, 0,             # apply it to vars[6]
    ],
}


def main():
    for target, seeds in (("sequence", SEQUENCES), ("reentry", REENTRY)):
        out = os.path.join(HERE, "corpus", target)
        os.makedirs(out, exist_ok=True)
        for name, code in seeds.items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(bytes(code))
    try:
        import numpy as np
    except ImportError:
        return
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
    np.savez_compressed(os.path.join(HERE, "corpus", "npz", "compressed_model.npz"),
                        **{"l1/W": w, "l1/b": np.zeros(3, np.float32),
                           "l2/W": np.ones((2, 3), np.float32), "l2/b": np.zeros(2, np.float32),
                           "t": np.array(3, np.int64)})


if __name__ == "__main__":
    main()
