#!/usr/bin/env python3
"""Generate tests/ops/array/array_fn_references.h: NumPy references for the
array functions of issue 42 (expand_dims, squeeze, flatten, swapaxes, flip,
get_item, scatter_add, stack, split_axis, repeat, tile, pad, select_item).

    python3 tests/ops/array/make_array_fn_references.py

With numpy.random.default_rng(20261207): inputs ~ U(-2, 2) rounded to the
case's dtype, gy ~ N(0, 1). y is NumPy's result (np.expand_dims, np.squeeze,
x.ravel(), np.swapaxes, np.flip, x[key], np.add.at on a copy, np.stack, the
pieces of np.split, np.repeat, np.tile, np.pad(mode='constant'),
x[arange(B), t]); the gradients are the adjoints written with NumPy alone:
gx = gy reshaped / swapped back / flipped, np.add.at(zeros, key, gy) for
get_item, repeat, tile and select_item, the interior of gy for pad, the
pieces of gy for stack, gy placed into zeros for one piece of split_axis.
The values move without arithmetic (np.add.at sums in float64 and rounds),
so forward values are exact in both dtypes.

Case encoding (tests/ops/array/test_array_fns.cpp reads it): i0, i1 the
integer arguments, s0 a scalar, ints a list; get_item and scatter_add keys
are 5 ints per item: kind (0 int, 1 slice, 2 None, 3 Ellipsis, 4 the index
array, which is the case's last int32 input), flags (1 start given, 2 stop
given), start, stop, step.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nn_refgen import F32, F64, NP, Writer  # noqa: E402


def key_of(items, arr=None):
    """A Python key and its 5-int encoding from items: ints, slices, None,
    Ellipsis, 'A' (the index array)."""
    key, code = [], []
    for it in items:
        if isinstance(it, str):
            key.append(arr)
            code += [4, 0, 0, 0, 0]
        elif it is None:
            key.append(None)
            code += [2, 0, 0, 0, 0]
        elif it is Ellipsis:
            key.append(Ellipsis)
            code += [3, 0, 0, 0, 0]
        elif isinstance(it, slice):
            flags = (1 if it.start is not None else 0) | (2 if it.stop is not None else 0)
            key.append(it)
            code += [1, flags, it.start or 0, it.stop or 0, it.step or 1]
        else:
            key.append(it)
            code += [0, 0, it, 0, 0]
    return tuple(key), code


def main():
    w = Writer("array_fn", "tests/ops/array/make_array_fn_references.py")
    rng = np.random.default_rng(20261207)
    for dtype in (F64, F32):
        sfx = "f64" if dtype == F64 else "f32"
        T = NP[dtype]

        def u(shape):
            return rng.uniform(-2, 2, size=shape).astype(T)

        def g(shape):
            return rng.standard_normal(shape).astype(T)

        for name, shape, axis in [("2x3_axis0", (2, 3), 0), ("2x3_axis2", (2, 3), 2),
                                  ("2x3_axis_neg1", (2, 3), -1), ("0d", (), 0)]:
            x = u(shape)
            y = np.expand_dims(x, axis)
            gy = g(y.shape)
            w.add("expand_dims", f"{name}_{sfx}", dtype, [x], y, gy, [gy.reshape(shape)], i0=axis)

        for name, shape, axes in [("all", (1, 3, 1, 2), None), ("axis2", (1, 3, 1, 2), [2]),
                                  ("axes_0_neg2", (1, 3, 1, 2), [0, -2]), ("none_to_drop", (2, 3), None)]:
            x = u(shape)
            y = np.squeeze(x, tuple(axes) if axes else None)
            gy = g(y.shape)
            w.add("squeeze", f"{name}_{sfx}", dtype, [x], y, gy, [gy.reshape(shape)], ints=axes)

        for name, shape in [("2x3x4", (2, 3, 4)), ("0d", ())]:
            x = u(shape)
            y = x.ravel()
            gy = g(y.shape)
            w.add("flatten", f"{name}_{sfx}", dtype, [x], y, gy, [gy.reshape(shape)])

        for name, shape, a, b in [("2x3x4_0_2", (2, 3, 4), 0, 2), ("2x3x4_neg1_1", (2, 3, 4), -1, 1),
                                  ("2x3_same", (2, 3), 1, 1)]:
            x = u(shape)
            y = np.swapaxes(x, a, b)
            gy = g(y.shape)
            w.add("swapaxes", f"{name}_{sfx}", dtype, [x], y, gy, [np.swapaxes(gy, a, b)], i0=a, i1=b)

        for name, shape, axis in [("2x3x4_axis0", (2, 3, 4), 0), ("2x3x4_axis1", (2, 3, 4), 1),
                                  ("2x3x4_axis_neg1", (2, 3, 4), -1), ("5", (5,), 0)]:
            x = u(shape)
            y = np.flip(x, axis)
            gy = g(y.shape)
            w.add("flip", f"{name}_{sfx}", dtype, [x], y, gy, [np.flip(gy, axis)], i0=axis)

        arr = np.array([2, 0, -1, 2], dtype=np.int32)
        arr2 = np.array([[1, 0], [1, -3]], dtype=np.int32)
        for name, shape, items, a in [
                ("int", (3, 4), [1], None), ("int_neg", (3, 4), [-1, 2], None),
                ("slice", (5, 4), [slice(1, 4)], None), ("slice_step", (6, 5), [slice(None, None, 2), slice(1, None, 3)], None),
                ("slice_neg_step", (6, 5), [slice(None, None, -1), slice(3, 0, -2)], None),
                ("slice_neg_bounds", (6,), [slice(-4, -1)], None), ("slice_clipped", (4,), [slice(-10, 10)], None),
                ("slice_empty", (4, 3), [slice(3, 1)], None), ("newaxis", (2, 3), [None, slice(None), None], None),
                ("ellipsis", (2, 3, 4), [Ellipsis, 1], None), ("ellipsis_mid", (2, 3, 4), [0, Ellipsis, slice(None, None, -2)], None),
                ("array_axis0", (3, 4), ["A"], arr), ("array_axis1", (2, 3, 4), [slice(None), "A"], arr),
                ("array_2d", (3, 4), [Ellipsis, "A"], arr2), ("mixed", (3, 4, 5), [1, None, "A", slice(4, None, -2)], arr),
                ("int_array_adjacent", (3, 4, 5), [slice(None), 1, "A"], arr),
                ("all", (2, 3), [], None)]:
            x = u(shape)
            key, code = key_of(items, a)
            y = x[key]
            gy = g(y.shape)
            gx = np.zeros(shape, np.float64)
            np.add.at(gx, key, gy.astype(np.float64))
            xs = [x] if a is None else [x, a]
            w.add("get_item", f"{name}_{sfx}", dtype, xs, y, gy, [gx.astype(T)],
                  int_inputs=0 if a is None else 2, ints=code)

        for name, shape, items, bshape, a in [
                ("slice", (4, 3), [slice(1, 3)], (2, 3), None), ("broadcast_b", (4, 3), [slice(None, None, 2)], (3,), None),
                ("int", (4, 3), [Ellipsis, -1], (4,), None),
                ("repeated_index", (3, 2), ["A"], (4, 2), arr), ("neg_step", (5,), [slice(None, None, -2)], (3,), None)]:
            x = u(shape)
            b = u(bshape)
            key, code = key_of(items, a)
            y = x.astype(np.float64).copy()
            np.add.at(y, key, np.broadcast_to(b, x[key].shape).astype(np.float64))
            gy = g(y.shape)
            gb = gy[key].astype(np.float64)
            gb = gb.reshape((-1,) + bshape).sum(0) if gb.shape != bshape else gb
            xs = [x, b] if a is None else [x, b, a]
            w.add("scatter_add", f"{name}_{sfx}", dtype, xs, y.astype(T), gy, [gy, gb.astype(T)],
                  int_inputs=0 if a is None else 4, ints=code)

        for name, shapes, axis in [("two_axis0", [(2, 3)] * 2, 0), ("three_axis1", [(2, 3)] * 3, 1),
                                   ("axis_last", [(2, 3)] * 2, 2), ("axis_neg1", [(4,)] * 3, -1)]:
            xs = [u(s) for s in shapes]
            y = np.stack(xs, axis)
            gy = g(y.shape)
            gxs = [np.take(gy, i, axis=axis % y.ndim) for i in range(len(xs))]
            w.add("stack", f"{name}_{sfx}", dtype, xs, y, gy, gxs, i0=axis)

        for name, shape, ios, axis, piece in [
                ("sections_axis1", (2, 6), 3, 1, 1), ("sections_axis0", (4, 3), 2, 0, 0),
                ("indices", (7, 2), [2, 5], 0, 1), ("indices_neg", (2, 7), [1, -2], -1, 2),
                ("indices_clipped_empty", (5,), [3, 9], 0, 2)]:
            x = u(shape)
            pieces = np.split(x, ios, axis)
            y = pieces[piece]
            gy = g(y.shape)
            gx = [np.zeros_like(p) for p in pieces]
            gx[piece] = gy
            gx = np.concatenate(gx, axis)
            if isinstance(ios, int):
                w.add("split_axis", f"{name}_{sfx}", dtype, [x], y, gy, [gx], s0=float(ios), i0=axis,
                      i1=piece)
            else:
                w.add("split_axis", f"{name}_{sfx}", dtype, [x], y, gy, [gx], i0=axis, i1=piece,
                      ints=ios)

        for name, shape, reps, axis in [("2x3_r2_axis1", (2, 3), [2], 1), ("2x3_r3_axis0", (2, 3), [3], 0),
                                        ("2x3_list_axis1", (2, 3), [1, 0, 2], 1), ("2x3_flat", (2, 3), [2], None),
                                        ("2x3_r0", (2, 3), [0], -1)]:
            x = u(shape)
            y = np.repeat(x, reps if len(reps) > 1 else reps[0], axis)
            gy = g(y.shape)
            idx = np.repeat(np.arange(x.size if axis is None else shape[axis]),
                            reps if len(reps) > 1 else reps[0])
            gx = np.zeros(shape, np.float64)
            if axis is None:
                np.add.at(gx.reshape(-1), idx, gy.astype(np.float64))
            else:
                gxm = np.moveaxis(gx, axis, 0)
                np.add.at(gxm, idx, np.moveaxis(gy, axis, 0).astype(np.float64))
            w.add("repeat", f"{name}_{sfx}", dtype, [x], y, gy, [gx.astype(T)],
                  i0=axis or 0, i1=int(axis is not None), ints=reps)

        for name, shape, reps in [("2x3_2x2", (2, 3), [2, 2]), ("2x3_3", (2, 3), [3]),
                                  ("3_2x1x2", (3,), [2, 1, 2]), ("2x3_0x1", (2, 3), [0, 1])]:
            x = u(shape)
            y = np.tile(x, reps)
            gy = g(y.shape)
            nd = max(len(shape), len(reps))
            xs_ = (1,) * (nd - len(shape)) + shape
            rs = (1,) * (nd - len(reps)) + tuple(reps)
            split = [v for pair in zip(rs, xs_) for v in pair]
            gx = gy.astype(np.float64).reshape(split).sum(axis=tuple(range(0, 2 * nd, 2))).reshape(shape)
            w.add("tile", f"{name}_{sfx}", dtype, [x], y, gy, [gx.astype(T)], ints=reps)

        for name, shape, pw, value in [("2x3_each", (2, 3), [1, 0, 2, 1], 0.0), ("2x3_same", (2, 3), [1, 2], 1.5),
                                       ("2x3_one", (2, 3), [1], -2.0), ("3_zero", (3,), [0, 0], 0.0)]:
            x = u(shape)
            if len(pw) == 2 * len(shape):
                width = [(pw[2 * d], pw[2 * d + 1]) for d in range(len(shape))]
            elif len(pw) == 2:
                width = [tuple(pw)] * len(shape)
            else:
                width = [(pw[0], pw[0])] * len(shape)
            y = np.pad(x, width, mode="constant", constant_values=value)
            gy = g(y.shape)
            inner = tuple(slice(b, b + n) for (b, _), n in zip(width, shape))
            w.add("pad", f"{name}_{sfx}", dtype, [x], y, gy, [gy[inner]], s0=value, ints=pw)

        for name, b, n, t in [("3x4", 3, 4, [0, 3, 1]), ("1x2", 1, 2, [1]), ("4x3_same", 4, 3, [2, 2, 0, 2])]:
            x = u((b, n))
            t = np.array(t, np.int32)
            y = x[np.arange(b), t]
            gy = g(y.shape)
            gx = np.zeros((b, n), T)
            gx[np.arange(b), t] = gy
            w.add("select_item", f"{name}_{sfx}", dtype, [x, t], y, gy, [gx], int_inputs=2)
    w.write(os.path.join(HERE, "array_fn_references.h"))


if __name__ == "__main__":
    main()
