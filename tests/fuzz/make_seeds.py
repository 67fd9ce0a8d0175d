#!/usr/bin/env python3
"""Writes the hand-made seeds of corpus/sequence/ (the byte code of
fuzz_sequence.cpp: an operation byte, a destination slot, then operands) and
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


def main():
    out = os.path.join(HERE, "corpus", "sequence")
    os.makedirs(out, exist_ok=True)
    for name, code in SEQUENCES.items():
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
