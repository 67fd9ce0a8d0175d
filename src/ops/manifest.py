"""The function manifest: one declaration per built-in function of chainerc.

This file is plain data (no imports, no code). scripts/gen_functions.py reads it
and writes, between its "generated" markers or as whole files:
  include/ch/functions.h                 the C declarations with ownership comments
  src/capi/functions_gen.cpp             the capi shims of the mechanical functions
  src/ops/ops.h                          the ops:: declarations
  include/ch/cpp/functions.hpp           the C++ layer's free functions
  wrappers/python/chainerc/functions/_generated.py, wrappers/rust/src/*_gen.rs,
  wrappers/go/functions_gen.go           the wrappers' plain bindings
  tests/ops/all_ops_table.inc            the table every-function test (test_all_ops.cpp)
  src/kernels/generated.h, src/backend/cpu/ops/generated_kernels.cpp,
  cuda/ops/generated_kernels.cu          kernel declarations and per-backend lists
  tests/ops/pointwise_table.inc          value / gradient / double-backward cases
and reruns wrappers/rust/chainerc-sys/gen_bindings.py and wrappers/go/gen_capi.py.
The meson test `manifest_current` fails (with a diff) when a generated file is
not what this manifest gives. docs/adding-a-function.md explains the fields.

GROUPS: the sections of functions.h and ops.h, in order: (name, summary).

FUNCTIONS: one dict per C entry point ch_functions_<name>, in header order.
  name     the C suffix; Chainer 7's function name where Chainer has one
  chainer  Chainer 7's qualified name (None: chainerc only)
  group    one of GROUPS (the folder src/ops/<group>/)
  args     the inputs after the outputs, each (name, kind) or (name, kind, default)
           or (name, kind, default, unit). Kinds:
             var        a variable (ch_variable*), borrowed
             vars       n variables (ch_variable* const* name, size_t n), borrowed
             f64        a double option          i32 / i64   an integer option
             bool       a flag (int32_t 0/1)     mode        CH_MODE_TRAIN/TEST/DEFAULT
             shape      extents (const int64_t* name, int32_t ndim)
             axes       axes (const int32_t* name, int32_t n<name>)
             dtype      a ch_dtype (float32/float64 where the function makes parameters)
             device     a ch_device
             array      a const ch_array*, borrowed    array_opt  the same, NULL allowed
             c:<type>   any other C parameter (hand-written layers only)
           The default is the Chainer (or the seed's) default, language-neutral:
           a number, True/False, "default" for a mode. Units go into the docs.
  out      what is returned: "var" (ch_variable** out), "function"
           (ch_function** out, a parameterised function object), or a C
           parameter list for anything else (hand-written layers)
  dtypes   "float" (float32, float64), "any", or a description
  keeps    what the backward keeps: "inputs" (every input, the default),
           names ("y", "x", "t"), "nothing" or a phrase
  brief    the one doc line (every binding's doc)
  details  more of the C header's comment (optional)
  hand     layers written by hand, not generated: any of "capi", "ops",
           "cpp", "py", "rust", "go" (absent = all generated)
  cpp      ("ch" or "F", name): the C++ free function's namespace and name
  py       the Python name (default: name)
  rust     ("functions" or "nn", name): the Rust module and name
  go       the Go name (default: name in CamelCase)
  ops      the ops:: name (default: name)
  legacy_positional  True for the entry points with more than four options that
           predate the rule that such functions take a versioned options struct
           (DESIGN.md). Any other entry with more than four options gets one,
           generated: ch_<name>_options, CH_<NAME>_OPTIONS_VERSION and _INIT (every
           option needs a default and a one-field kind), taken as a pointer, NULL
           meaning the defaults
  test     the arguments test_all_ops.cpp calls it with, one per option (C
           expressions; a shape as a tuple); absent = not in that table
  pointwise  for elementwise functions of one variable: dict(numpy=<NumPy
           expression of x>, grad=<NumPy expression of dy/dx>, low=, high=
           (the input range)). From it come the cases of
           tests/ops/pointwise_table.inc (values and gradients against NumPy,
           check_backward and check_double_backward, on the CPU and on the
           CUDA devices) and the wrappers' tests (Python, Rust, Go).
  kernels  kernels the generated lists declare and register: (kernel name,
           signature kind "unary" | "binary" | "unary_scalar" | "binary_scalar",
           functor in chainerc::pointwise, header under src/kernels/pointwise/)
"""

GROUPS = [
    ("math", "arithmetic, pow, exp, log, sum, matmul"),
    ("array", "reshape, identity, broadcast_to, transpose, concat, copy, get_item, stack, pad, ..."),
    ("activation", "relu, leaky_relu, sigmoid, tanh, softmax, PReLU, lstm"),
    ("connection", "Linear, Convolution2D, EmbedID, Parameter, Inception"),
    ("loss", "softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax"),
    ("evaluation", "accuracy"),
    ("noise", "dropout"),
    ("normalization", "BatchNormalization, local_response_normalization"),
    ("pooling", "max_pooling_2d, average_pooling_2d"),
]

FUNCTIONS = [
    # ---------------------------------------------------------------- math
    dict(
        name="add", chainer="chainer.functions.add", group="math",
        args=[("a", "var"), ("b", "var")], out="var",
        brief="a + b with NumPy broadcasting.",
        hand=("cpp",), rust=("functions", "add"), test=[],
    ),
    dict(
        name="sub", chainer="chainer.Variable.__sub__", group="math",
        args=[("a", "var"), ("b", "var")], out="var",
        brief="a - b with NumPy broadcasting.",
        hand=("cpp",), rust=("functions", "sub"), test=[],
    ),
    dict(
        name="mul", chainer="chainer.Variable.__mul__", group="math",
        args=[("a", "var"), ("b", "var")], out="var",
        brief="a * b with NumPy broadcasting.",
        hand=("cpp",), rust=("functions", "mul"), test=[],
    ),
    dict(
        name="div", chainer="chainer.Variable.__truediv__", group="math",
        args=[("a", "var"), ("b", "var")], out="var",
        brief="a / b with NumPy broadcasting.",
        keeps="b, y", hand=("cpp",), rust=("functions", "div"), test=[],
    ),
    dict(
        name="add_scalar", chainer="chainer.Variable.__add__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="x + s (= s + x).", keeps="nothing",
        hand=("cpp",), rust=("functions", "add_scalar"), test=["1"],
    ),
    dict(
        name="sub_scalar", chainer="chainer.Variable.__sub__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="x - s.", keeps="nothing",
        hand=("cpp",), rust=("functions", "sub_scalar"), test=["1"],
    ),
    dict(
        name="rsub_scalar", chainer="chainer.Variable.__rsub__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="s - x.", keeps="nothing",
        hand=("cpp",), rust=("functions", "rsub_scalar"), go="RSubScalar", test=["1"],
    ),
    dict(
        name="mul_scalar", chainer="chainer.Variable.__mul__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="x * s (= s * x).", keeps="nothing",
        hand=("cpp",), rust=("functions", "mul_scalar"), test=["2"],
    ),
    dict(
        name="div_scalar", chainer="chainer.Variable.__truediv__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="x / s.", keeps="nothing",
        hand=("cpp",), rust=("functions", "div_scalar"), test=["2"],
    ),
    dict(
        name="rdiv_scalar", chainer="chainer.Variable.__rtruediv__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="s / x.", hand=("cpp",), rust=("functions", "rdiv_scalar"), go="RDivScalar",
        test=["2"],
    ),
    dict(
        name="neg", chainer="chainer.Variable.__neg__", group="math",
        args=[("x", "var")], out="var",
        brief="-x.", keeps="nothing",
        hand=("cpp",), rust=("functions", "neg"), test=[],
        pointwise=dict(numpy="-x", grad="-np.ones_like(x)", low=-2.0, high=2.0),
    ),
    dict(
        name="pow_scalar", chainer="chainer.Variable.__pow__", group="math",
        args=[("x", "var"), ("p", "f64")], out="var",
        brief="x ** p for a scalar p.",
        hand=("cpp",), rust=("functions", "pow_scalar"), test=["2"],
    ),
    dict(
        name="rpow_scalar", chainer="chainer.Variable.__rpow__", group="math",
        args=[("x", "var"), ("s", "f64")], out="var",
        brief="s ** x for a scalar base s > 0.", keeps="y",
        hand=("cpp",), rust=("functions", "rpow_scalar"), go="RPowScalar", test=["2"],
    ),
    dict(
        name="exp", chainer="chainer.functions.exp", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise e ** x.", keeps="y",
        cpp=("ch", "exp"), rust=("functions", "exp"), test=[],
        pointwise=dict(numpy="np.exp(x)", grad="np.exp(x)", low=-2.0, high=2.0),
    ),
    dict(
        name="log", chainer="chainer.functions.log", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise natural logarithm.", keeps="x",
        cpp=("ch", "log"), rust=("functions", "log"), test=[],
        pointwise=dict(numpy="np.log(x)", grad="1 / x", low=0.5, high=3.0),
    ),
    dict(
        name="square", chainer="chainer.functions.square", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise square x * x (gradient 2 x gy).", keeps="x",
        cpp=("ch", "square"), rust=("functions", "square"), test=[],
        pointwise=dict(numpy="np.square(x)", grad="2 * x", low=-2.0, high=2.0),
        kernels=[("square", "unary", "Square", "arithmetic.h"),
                 ("square_grad", "binary", "SquareGrad", "arithmetic.h")],
    ),
    # -- issue 42, elementwise math (fn42-pointwise): sqrt ... where
    dict(
        name="sqrt", chainer="chainer.functions.sqrt", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise square root (NaN below 0; gradient gy / (2 y)).", keeps="y",
        cpp=("ch", "sqrt"), rust=("functions", "sqrt"), test=[],
        pointwise=dict(numpy="np.sqrt(x)", grad="0.5 / np.sqrt(x)", low=0.5, high=3.0),
        kernels=[("sqrt", "unary", "Sqrt", "math_ext.h"),
                 ("sqrt_grad", "binary", "SqrtGrad", "math_ext.h")],
    ),
    dict(
        name="rsqrt", chainer="chainer.functions.rsqrt", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise reciprocal square root 1 / sqrt(x) (gradient -gy y^3 / 2).",
        keeps="y", cpp=("ch", "rsqrt"), rust=("functions", "rsqrt"), test=[],
        pointwise=dict(numpy="1 / np.sqrt(x)", grad="-0.5 * x ** -1.5", low=0.5, high=3.0),
        kernels=[("rsqrt", "unary", "Rsqrt", "math_ext.h"),
                 ("rsqrt_grad", "binary", "RsqrtGrad", "math_ext.h")],
    ),
    dict(
        name="absolute", chainer="chainer.functions.absolute", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise absolute value |x| (gradient sign(x) gy, 0 at x = 0).", keeps="x",
        cpp=("ch", "absolute"), rust=("functions", "absolute"), test=[],
        pointwise=dict(numpy="np.abs(x)", grad="np.sign(x)", low=-2.0, high=2.0),
        kernels=[("absolute", "unary", "Absolute", "math_ext.h"),
                 ("absolute_grad", "binary", "AbsoluteGrad", "math_ext.h")],
    ),
    dict(
        name="erf", chainer="chainer.functions.erf", group="math",
        args=[("x", "var")], out="var",
        brief="Elementwise error function erf(x) (gradient 2 / sqrt(pi) exp(-x^2) gy).",
        keeps="x", cpp=("ch", "erf"), rust=("functions", "erf"), test=[],
        pointwise=dict(numpy="np.vectorize(math.erf)(x)",
                       grad="2 / np.sqrt(np.pi) * np.exp(-x ** 2)", low=-2.0, high=2.0),
        kernels=[("erf", "unary", "Erf", "math_ext.h"),
                 ("erf_grad", "binary", "ErfGrad", "math_ext.h")],
    ),
    dict(
        name="clip", chainer="chainer.functions.clip", group="math",
        args=[("x", "var"), ("x_min", "f64"), ("x_max", "f64")], out="var",
        brief="x limited to [x_min, x_max] (gradient gy where x_min <= x <= x_max).",
        details="""\
Elementwise min(max(x, x_min), x_max) (Chainer's clip; a NaN stays NaN).
The gradient is gy where x_min <= x <= x_max, 1 at the bounds as Chainer's,
else 0. -infinity or +infinity stands for Chainer's None (no bound).
CH_ERR_INVALID_ARGUMENT unless x_min < x_max (a NaN bound included).""",
        keeps="x", cpp=("ch", "clip"), rust=("functions", "clip"), test=["-1", "1"],
        pointwise=dict(numpy="np.clip(x, x_min, x_max)",
                       grad="((x >= x_min) & (x <= x_max)) * 1.0", low=-2.0, high=2.0,
                       opts=[-1.0, 1.5]),
        kernels=[("clip_lower", "unary_scalar", "ClipLower", "math_ext.h"),
                 ("clip_upper", "unary_scalar", "ClipUpper", "math_ext.h"),
                 ("clip_grad_lower", "binary_scalar", "ClipGradLower", "math_ext.h"),
                 ("clip_grad_upper", "binary_scalar", "ClipGradUpper", "math_ext.h")],
    ),
    dict(
        name="maximum", chainer="chainer.functions.maximum", group="math",
        args=[("a", "var"), ("b", "var")], out="var",
        brief="Elementwise maximum of a and b with NumPy broadcasting.",
        details="""\
Elementwise maximum (Chainer's maximum, NumPy's: a NaN operand gives NaN),
a and b of one float dtype, broadcast as NumPy does. The gradient goes to a
where a >= b (a tie goes to a, as Chainer's), to b elsewhere, each summed
back to its input's shape.""",
        rust=("functions", "maximum"), cpp=("ch", "maximum"), test=[],
        kernels=[("maximum", "broadcast", "Maximum", "math_ext.h"),
                 ("greater_equal_mask", "broadcast", "GreaterEqualMask", "math_ext.h"),
                 ("mask_select", "binary", "MaskSelect", "math_ext.h"),
                 ("mask_select_not", "binary", "MaskSelectNot", "math_ext.h"),
                 ("nonzero_mask", "unary", "NonzeroMask", "math_ext.h")],
    ),
    dict(
        name="minimum", chainer="chainer.functions.minimum", group="math",
        args=[("a", "var"), ("b", "var")], out="var",
        brief="Elementwise minimum of a and b with NumPy broadcasting.",
        details="""\
Elementwise minimum (Chainer's minimum, NumPy's: a NaN operand gives NaN),
a and b of one float dtype, broadcast as NumPy does. The gradient goes to a
where a <= b (a tie goes to a, as Chainer's), to b elsewhere, each summed
back to its input's shape.""",
        rust=("functions", "minimum"), cpp=("ch", "minimum"), test=[],
        kernels=[("minimum", "broadcast", "Minimum", "math_ext.h"),
                 ("less_equal_mask", "broadcast", "LessEqualMask", "math_ext.h")],
    ),
    dict(
        name="where", chainer="chainer.functions.where", group="math",
        args=[("condition", "array"), ("x", "var"), ("y", "var")], out="var",
        brief="x where condition is nonzero, else y, with NumPy broadcasting.",
        details="""\
Elementwise choice (Chainer's where): x where `condition` is nonzero, y
elsewhere, condition, x and y broadcast together as NumPy does. condition is
an array (not differentiated; Chainer's boolean array: CH_INT32 or a float
dtype, nonzero meaning true) on x's device or the host; x and y are of one
float dtype. The gradient of x is gy where the condition holds, of y gy
elsewhere, each summed back to its input's shape.""",
        keeps="condition", hand=("py", "rust", "go", "cpp"), rust=("functions", "where_"),
        go="Where",
        cpp=("ch", "where"),     ),
    # -- end of issue 42's elementwise math
    dict(
        name="sum", chainer="chainer.functions.sum", group="math",
        args=[("x", "var")], out="var",
        brief="Sum of all elements: a 0-d variable.", keeps="x's shape",
        cpp=("ch", "sum"), py="_sum_all", rust=("functions", "sum"), test=[],
    ),
    dict(
        name="sum_axis", chainer="chainer.functions.sum", group="math",
        args=[("x", "var"), ("axis", "i32"), ("keepdims", "bool", False)], out="var",
        brief="Sum along `axis` (negative counts from the end); keepdims keeps it as 1.",
        keeps="x's shape", cpp=("ch", "sum"), py="_sum_axis", rust=("functions", "sum_axis"),
        test=["1", "0"],
    ),
    # ---- issue 42 reductions (fn42-reduce): one generic reduce-over-axes
    # kernel (reduce_extreme) plus sum_to; the rest are compositions.
    dict(
        name="sum_axes", chainer="chainer.functions.sum", group="math",
        args=[("x", "var"), ("axes", "axes"), ("keepdims", "bool", False)], out="var",
        brief="Sum over a set of axes (naxes 0: all); keepdims keeps them with extent 1.",
        details="""\
Sum over the axes `axes` (Chainer's sum(x, axis=tuple, keepdims)); keepdims
keeps them with extent 1. axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="x's shape", hand=("py",), cpp=("ch", "sum_axes"), py="_sum_axes",
        rust=("functions", "sum_axes"), test=["nullptr, 0", "0"],
    ),
    dict(
        name="mean", chainer="chainer.functions.mean", group="math",
        args=[("x", "var"), ("axes", "axes"), ("keepdims", "bool", False)], out="var",
        brief="Mean over a set of axes (naxes 0: all); keepdims keeps them with extent 1.",
        details="""\
Arithmetic mean over the axes `axes` (Chainer's mean / average without
weights): the sum divided by the number of elements summed (NaN for none).
axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="x's shape", hand=("py",), py="_mean", rust=("functions", "mean"),
        cpp=("ch", "mean"), test=["nullptr, 0", "0"],
    ),
    dict(
        name="average", chainer="chainer.functions.average", group="math",
        args=[("x", "var"), ("axes", "axes"), ("weights", "var"), ("keepdims", "bool", False)],
        out="var",
        brief="Weighted average sum(x w) / sum(w) over all axes or one axis.",
        details="""\
Weighted average (Chainer's average(x, axis, weights, keepdims)):
sum(x * w, axes) / sum(w). With naxes 0 (all axes) weights has x's shape;
with one axis a it is 1-D of extent x.shape[a]. More than one axis with
weights is CH_ERR_INVALID_ARGUMENT (as Chainer); another weights shape is
CH_ERR_SHAPE. Differentiable in x and weights. axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        hand=("py",), py="_average", rust=("functions", "average"), cpp=("ch", "average"),
    ),
    dict(
        name="max", chainer="chainer.functions.max", group="math",
        args=[("x", "var"), ("axes", "axes"), ("keepdims", "bool", False)], out="var",
        brief="Maximum over a set of axes (naxes 0: all); the gradient goes to every maximum.",
        details="""\
Maximum over the axes `axes` (Chainer's max(x, axis, keepdims); NaN
propagates as in NumPy). Backward gives gy to every element equal to the
maximum (ties all get it, as Chainer 7: gy * (x == y)). An empty reduction
is CH_ERR_SHAPE. axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="x and y", hand=("py",), py="_max", cpp=("F", "max"), rust=("functions", "max"),
        test=["nullptr, 0", "0"],
        kernels=[("equal_mask", "binary", "EqualMask", "arithmetic.h")],
    ),
    dict(
        name="min", chainer="chainer.functions.min", group="math",
        args=[("x", "var"), ("axes", "axes"), ("keepdims", "bool", False)], out="var",
        brief="Minimum over a set of axes (naxes 0: all); the gradient goes to every minimum.",
        details="""\
Minimum over the axes `axes` (Chainer's min(x, axis, keepdims)), as
ch_functions_max with the minimum. axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="x and y", hand=("py",), py="_min", cpp=("F", "min"), rust=("functions", "min"),
        test=["nullptr, 0", "0"],
    ),
    dict(
        name="argmax", chainer="chainer.functions.argmax", group="math",
        args=[("x", "var"), ("axes", "axes")], out="var",
        brief="int32 index of the first maximum over all elements or one axis.",
        details="""\
Index of the first maximum (Chainer's argmax(x, axis=None)): naxes 0 gives
the flat index over all elements (a 0-d int32 variable), naxes 1 the index
along that axis (x's shape without it); more axes are
CH_ERR_INVALID_ARGUMENT. Not differentiable: the output is a new variable
with no creator. An empty reduction is CH_ERR_SHAPE. axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="nothing (not differentiable)", hand=("py",), py="_argmax", cpp=("F", "argmax"),
        rust=("functions", "argmax"),
    ),
    dict(
        name="argmin", chainer="chainer.functions.argmin", group="math",
        args=[("x", "var"), ("axes", "axes")], out="var",
        brief="int32 index of the first minimum over all elements or one axis.",
        details="""\
Index of the first minimum (Chainer's argmin(x, axis=None)), as
ch_functions_argmax with the minimum. axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="nothing (not differentiable)", hand=("py",), py="_argmin", cpp=("F", "argmin"),
        rust=("functions", "argmin"),
    ),
    dict(
        name="logsumexp", chainer="chainer.functions.logsumexp", group="math",
        args=[("x", "var"), ("axes", "axes")], out="var",
        brief="log(sum(exp(x))) over a set of axes (naxes 0: all), computed stably.",
        details="""\
log(sum(exp(x), axes)) (Chainer's logsumexp(x, axis=None)), computed as
m + log(sum(exp(x - m))) with m the maximum over the axes. Twice
differentiable (a composition of differentiable functions). axes: naxes entries (negative ones count from the end, distinct); naxes 0
means every axis (Chainer's axis=None). An axis out of range or repeated is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="its parts' arrays", hand=("py",), py="_logsumexp", cpp=("F", "logsumexp"),
        rust=("functions", "logsumexp"), test=["nullptr, 0"],
    ),
    dict(
        name="cumsum", chainer="chainer.functions.cumsum", group="math",
        args=[("x", "var"), ("axes", "axes")], out="var",
        brief="Cumulative sum along one axis, or of the flattened x (naxes 0).",
        details="""\
Cumulative sum (Chainer 7's cumsum(x, axis=None)): naxes 1 sums along that
axis (negative counts from the end), x's shape; naxes 0 sums the flattened
x, a 1-D result of x's size; more axes are CH_ERR_INVALID_ARGUMENT, an axis
out of range too (naxes 0 meaning every axis as in the reductions above).
Computed as the product with an upper triangular matrix of ones through the
GEMM kernels (O(n^2) per line of n elements), so twice differentiable.""",
        keeps="nothing", hand=("py",), py="_cumsum", cpp=("F", "cumsum"),
        rust=("functions", "cumsum"), test=["nullptr, 0"],
    ),
    dict(
        name="matmul", chainer="chainer.functions.matmul", group="math",
        args=[("a", "var"), ("b", "var"), ("transa", "bool", False), ("transb", "bool", False)],
        out="var",
        brief="Matrix product op(a) op(b) by NumPy's matmul rules (Chainer 7's matmul).",
        details="""\
Matrix product op(a) op(b) (Chainer 7's matmul, NumPy's matmul rules), op
swapping the last two axes when transa / transb is non-zero (ignored for a
1-D operand). A 1-D a of length k is a row (1, k) and a 1-D b a column
(k, 1), the added axis dropped from the result (two 1-D operands give a 0-d
dot product). Operands of more than 2 dimensions are stacks of matrices over
their leading axes, which broadcast against each other by NumPy's rules
(the gradients sum over broadcast axes): (2, 1, 3, 4) times (5, 4, 2) is
(2, 5, 3, 2). Mismatched inner extents or batch axes are CH_ERR_SHAPE, a 0-d
operand too. (Before issue 42 a 1-D operand was a column vector (n, 1).)""",
        cpp=("F", "matmul"), rust=("nn", "matmul"), go="MatMul", test=["0", "1"],
    ),
    dict(
        name="batch_matmul", chainer="chainer.functions.batch_matmul", group="math",
        args=[("a", "var"), ("b", "var"), ("transa", "bool", False), ("transb", "bool", False)],
        out="var",
        brief="Batched matrix product.",
        details="""\
Batched matrix product (Chainer's batch_matmul): for (B, m, k) and (B, k, n)
operands (before op), out[i] = op(a[i]) op(b[i]), of shape (B, m, n). A 2-D
operand (B, n) is a batch of column vectors (B, n, 1).""",
        cpp=("F", "batch_matmul"), rust=("nn", "batch_matmul"), go="BatchMatMul",
        test=["1", "0"],
    ),
    # ---------------------------------------------------------------- array
    dict(
        name="reshape", chainer="chainer.functions.reshape", group="array",
        args=[("x", "var"), ("shape", "shape")], out="var", dtypes="any",
        brief="Same data, another shape of the same size (one extent may be -1).",
        details="""\
Same data, another shape of the same size; one extent may be -1 (inferred).
Any dtype.""",
        keeps="x's shape", hand=("capi",), cpp=("ch", "reshape"), rust=("functions", "reshape"),
        test=[(3, 2)],
    ),
    dict(
        name="identity", chainer="chainer.functions.identity", group="array",
        args=[("x", "var")], out="var", dtypes="any",
        brief="Returns its input; gradient passes through.",
        details="""\
Returns its input's data as a new variable; gradient passes through. Any dtype.""",
        keeps="nothing", cpp=("ch", "identity"), rust=("functions", "identity"), test=[],
    ),
    dict(
        name="broadcast_to", chainer="chainer.functions.broadcast_to", group="array",
        args=[("x", "var"), ("shape", "shape")], out="var",
        brief="Broadcast to `shape` by NumPy's rules.",
        details="""\
Broadcast to `shape` by NumPy's rules; backward sums over broadcast axes.""",
        keeps="x's shape", cpp=("ch", "broadcast_to"), rust=("functions", "broadcast_to"),
        test=[(2, 3)],
    ),
    dict(
        name="transpose", chainer="chainer.functions.transpose", group="array",
        args=[("x", "var"), ("axes", "axes")], out="var", dtypes="any",
        brief="Permute the axes (NumPy's transpose); none reverses them.",
        details="""\
Permute the axes: output axis i is input axis axes[i] (NumPy's transpose;
negative axes count from the end). axes NULL (naxes 0) reverses the axes.
naxes must equal x's ndim and the axes must be distinct. Any dtype.""",
        keeps="the axes", hand=("cpp", "py", "go"), rust=("nn", "transpose"),
        test=["nullptr, 0"],
    ),
    dict(
        name="concat", chainer="chainer.functions.concat", group="array",
        args=[("xs", "vars"), ("axis", "i32", 1)], out="var", dtypes="any",
        brief="Concatenate variables along `axis` (Chainer's default axis 1).",
        details="""\
Concatenate the n variables xs along `axis` (Chainer's concat; the seed's
default axis is 1). They must share dtype and ndim and agree on all other
extents. Any dtype. xs: n borrowed handles.""",
        keeps="the inputs' extents along axis",
        hand=("capi", "ops", "cpp", "py", "rust", "go"), test=["1"],
    ),
    dict(
        name="copy", chainer="chainer.functions.copy", group="array",
        args=[("x", "var"), ("dst", "device")], out="var",
        brief="Copy to the device `dst`; the gradient is copied back.",
        details="""\
Copy x to the device `dst` (Chainer's copy): CPU to CUDA, CUDA to CPU or
between CUDA devices. A CUDA device that does not exist (no GPU, driver or
CUDA backend), an unknown device type or index is CH_ERR_DEVICE. The
gradient is copied back to x's device.""",
        keeps="x's device", hand=("py",), cpp=("F", "copy"), rust=("nn", "copy"),
        test=["ch_device_cpu()"],
    ),
    # ---- array (issue 42): strided views and copies (array/strided.cpp's
    # gather and scatter-add, each the other's backward)
    dict(
        name="expand_dims", chainer="chainer.functions.expand_dims", group="array",
        args=[("x", "var"), ("axis", "i32")], out="var", dtypes="any",
        brief="x with a new axis of extent 1 at `axis` (negative counts from the end).",
        details="""\
x with a new axis of extent 1 inserted at `axis` (Chainer 7's expand_dims):
axis in [-(ndim + 1), ndim]. Shares x's data (a reshape). Any dtype.""",
        keeps="x's shape", cpp=("F", "expand_dims"), rust=("functions", "expand_dims"),
        test=["0"],
    ),
    dict(
        name="squeeze", chainer="chainer.functions.squeeze", group="array",
        args=[("x", "var"), ("axis", "axes")], out="var", dtypes="any",
        brief="x without the axes of extent 1 (all of them, or those in `axis`).",
        details="""\
x without axes of extent 1 (Chainer 7's squeeze): all of them when axis is
NULL (naxis 0), else the listed ones, each of which must have extent 1
(CH_ERR_SHAPE naming it otherwise). A reshape. Any dtype.""",
        keeps="x's shape", hand=("py", "go", "cpp"), cpp=("F", "squeeze"), rust=("functions", "squeeze"),
        test=["nullptr, 0"],
    ),
    dict(
        name="flatten", chainer="chainer.functions.flatten", group="array",
        args=[("x", "var")], out="var", dtypes="any",
        brief="x as a 1-d array of its size.",
        keeps="x's shape", cpp=("F", "flatten"), rust=("functions", "flatten"), test=[],
    ),
    dict(
        name="swapaxes", chainer="chainer.functions.swapaxes", group="array",
        args=[("x", "var"), ("axis1", "i32"), ("axis2", "i32")], out="var", dtypes="any",
        brief="x with axes axis1 and axis2 interchanged (a transpose).",
        keeps="the axes", cpp=("F", "swapaxes"), rust=("functions", "swapaxes"),
        test=["0", "1"],
    ),
    dict(
        name="flip", chainer="chainer.functions.flip", group="array",
        args=[("x", "var"), ("axis", "i32")], out="var", dtypes="any",
        brief="x reversed along `axis`; the gradient is gy reversed.",
        keeps="x's shape", cpp=("F", "flip"), rust=("functions", "flip"), test=["0"],
    ),
    dict(
        name="get_item", chainer="chainer.functions.get_item", group="array",
        args=[("x", "var"), ("index", "c:const ch_index*"), ("nindex", "c:int32_t")],
        out="var", dtypes="any",
        brief="x[key] (NumPy's basic indexing and one integer array); see ch/index.h.",
        details="""\
x[key] (Chainer 7's get_item, Variable.__getitem__): key is `nindex` ch_index
items (include/ch/index.h): integers, slices with any step, new axes, one
Ellipsis and at most one int32 index array along one axis, as NumPy reads
them. The gradient is gy added into zeros at the selected positions
(repeated positions add up). An integer out of bounds, an index array
entry out of bounds, too many items or two Ellipses is
CH_ERR_INVALID_ARGUMENT naming the value and the axis; a non-int32 index
array CH_ERR_DTYPE. Any dtype.""",
        keeps="the view (offset, strides, the index array)",
        hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="scatter_add", chainer="chainer.functions.scatter_add", group="array",
        args=[("a", "var"), ("index", "c:const ch_index*"), ("nindex", "c:int32_t"),
              ("b", "var")],
        out="var", dtypes="any",
        brief="a with b added at a[key] (numpy.add.at: repeated positions add up).",
        details="""\
A copy of a with b added at the positions a[key] selects (Chainer 7's
scatter_add(a, slices, b); key as in ch_functions_get_item), repeated
positions adding up as numpy.add.at does. b broadcasts to a[key]'s shape.
Gradients: gy for a, gy[key] summed to b's shape for b. Any dtype.""",
        keeps="the view and b's shape", hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="stack", chainer="chainer.functions.stack", group="array",
        args=[("xs", "vars"), ("axis", "i32", 0)], out="var", dtypes="any",
        brief="Join variables of one shape along a new axis `axis`.",
        details="""\
The n variables xs (one shape, dtype and device) joined along a new axis
`axis` in [-(ndim + 1), ndim] (Chainer 7's stack): expand_dims then
concat. xs: n borrowed handles.""",
        keeps="the inputs' shapes", hand=("capi", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="split_axis", chainer="chainer.functions.split_axis", group="array",
        args=[("x", "var"), ("indices", "c:const int64_t*"), ("nindices", "c:int32_t"),
              ("sections", "c:int32_t"), ("axis", "c:int32_t")],
        out="ch_variable** pieces, size_t n_pieces",
        brief="x cut along `axis` at indices or into equal sections: n_out variables.",
        details="""\
x cut along `axis` (Chainer 7's split_axis): at the sorted positions
indices[0..nindices) (NumPy's split: negative ones count from the end,
clipped to the extent; nindices + 1 pieces), or, with indices NULL, into
`sections` equal pieces (an extent `sections` does not divide is
CH_ERR_INVALID_ARGUMENT naming both). n_pieces must be the number of pieces.
Each output is differentiable; the gradient is the pieces' gradients
concatenated (zeros for pieces none reached).""",
        owns="pieces[0..n_pieces): new references; release each with ch_variable_release\n"
             "(all NULL on failure).",
        keeps="the pieces' shapes", hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="repeat", chainer="chainer.functions.repeat", group="array",
        args=[("x", "var"), ("repeats", "axes"), ("axis", "axes")], out="var", dtypes="any",
        brief="Repeat x's elements along an axis (NumPy's repeat).",
        details="""\
Each element of x repeated along `axis` (Chainer 7's repeat, NumPy's):
repeats one count for all (nrepeats 1) or one per element of the axis;
axis NULL (naxis 0) repeats the flattened x, else axis[0]. Negative counts
and a repeats list of the wrong length are CH_ERR_INVALID_ARGUMENT. The
gradient sums the copies. Any dtype.""",
        keeps="the view", hand=("py", "go", "cpp"), cpp=("F", "repeat"), rust=("functions", "repeat"),
    ),
    dict(
        name="tile", chainer="chainer.functions.tile", group="array",
        args=[("x", "var"), ("reps", "axes")], out="var", dtypes="any",
        brief="x tiled `reps` times along each axis (NumPy's tile).",
        details="""\
x repeated reps[i] times along each axis (Chainer 7's tile, NumPy's: x or
reps promoted with leading ones to the longer); at most 4 axes. Negative
reps are CH_ERR_INVALID_ARGUMENT. The gradient sums the tiles. Any dtype.""",
        keeps="the view", hand=("py", "go", "cpp"), cpp=("F", "tile"), rust=("functions", "tile"),
    ),
    dict(
        name="pad", chainer="chainer.functions.pad", group="array",
        args=[("x", "var"), ("pad_width", "axes"), ("constant_values", "f64", 0.0)], out="var",
        dtypes="any",
        brief="x padded with a constant (mode 'constant'): (before, after) per axis.",
        details="""\
x padded with constant_values (Chainer 7's pad in mode 'constant'):
pad_width holds 2 ndim widths (before and after, per axis), or 2 (the same
for every axis), or 1. A negative width, or another count, is
CH_ERR_INVALID_ARGUMENT naming it. The gradient is gy's interior. Any
dtype (int32 with constant 0 only).""",
        keeps="the view", hand=("py", "go", "cpp"), cpp=("F", "pad"), rust=("functions", "pad"),
    ),
    dict(
        name="cast", chainer="chainer.functions.cast", group="array",
        args=[("x", "var"), ("dtype", "dtype")], out="var", dtypes="any",
        brief="x converted to `dtype` (Chainer's `type`); the gradient is cast back.",
        details="""\
x converted to `dtype` (float32, float64 or int32; Chainer 7's cast(x, type); C++'s
conversion per element); the same dtype is identity. The gradient is gy
cast back to x's dtype.""",
        keeps="x's dtype", hand=("capi", "py"), cpp=("F", "cast"), rust=("functions", "cast"),
        test=["CH_FLOAT64"],
    ),
    dict(
        name="select_item", chainer="chainer.functions.select_item", group="array",
        args=[("x", "var"), ("t", "var")], out="var", dtypes="any x; int32 t",
        brief="y[i] = x[i, t[i]] for x (B, N) and int32 labels t (B,).",
        details="""\
y[i] = x[i, t[i]] (Chainer 7's select_item) for x (B, N) and int32 t (B,);
a label outside [0, N) is CH_ERR_INVALID_ARGUMENT naming it. The gradient
is gy at (i, t[i]), zeros elsewhere; t gets none.""",
        keeps="t", cpp=("F", "select_item"), rust=("functions", "select_item"),
    ),
    # ---------------------------------------------------------------- activation
    dict(
        name="relu", chainer="chainer.functions.relu", group="activation",
        args=[("x", "var")], out="var",
        brief="Rectified linear unit max(0, x).",
        details="""\
Rectified linear unit y = max(0, x) (Chainer's relu; use_cudnn has no
counterpart). Gradient: gy where x > 0, else 0.""",
        keeps="y", cpp=("F", "relu"), rust=("nn", "relu"), test=[],
    ),
    dict(
        name="leaky_relu", chainer="chainer.functions.leaky_relu", group="activation",
        args=[("x", "var"), ("slope", "f64", 0.2)], out="var",
        brief="Leaky ReLU: x for x >= 0, slope * x for x < 0.",
        details="""\
Leaky ReLU y = x for x >= 0, slope * x for x < 0 (Chainer's leaky_relu;
the seed's default slope is 0.2).""",
        keeps="x", cpp=("F", "leaky_relu"), rust=("nn", "leaky_relu"), test=["0.2"],
    ),
    dict(
        name="sigmoid", chainer="chainer.functions.sigmoid", group="activation",
        args=[("x", "var")], out="var",
        brief="Logistic sigmoid 1 / (1 + exp(-x)).",
        keeps="y", cpp=("F", "sigmoid"), rust=("nn", "sigmoid"), test=[],
        pointwise=dict(numpy="1 / (1 + np.exp(-x))",
                       grad="np.exp(-x) / (1 + np.exp(-x)) ** 2", low=-3.0, high=3.0),
    ),
    dict(
        name="tanh", chainer="chainer.functions.tanh", group="activation",
        args=[("x", "var")], out="var",
        brief="Hyperbolic tangent.",
        keeps="y", cpp=("F", "tanh"), rust=("nn", "tanh"), test=[],
        pointwise=dict(numpy="np.tanh(x)", grad="1 - np.tanh(x) ** 2", low=-2.0, high=2.0),
    ),
    # -- issue 42, activations (fn42-pointwise): gelu ... clipped_relu
    dict(
        name="gelu", chainer=None, group="activation",
        args=[("x", "var")], out="var",
        brief="GELU x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 (PyTorch's exact form).",
        details="""\
The Gaussian error linear unit, PyTorch's gelu with approximate='none'
(Chainer 7 has none): y = x Phi(x), Phi the standard normal CDF. Python's
F.gelu(x, approximate='none' | 'tanh') calls this or gelu_tanh.""",
        keeps="x", py="_gelu", cpp=("F", "gelu"), rust=("nn", "gelu"), test=[],
        pointwise=dict(numpy="0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))",
                       grad="0.5 * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) + "
                            "x * np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi)",
                       low=-3.0, high=3.0),
        kernels=[("gelu", "unary", "Gelu", "activation_ext.h"),
                 ("gelu_grad", "binary", "GeluGrad", "activation_ext.h")],
    ),
    dict(
        name="gelu_tanh", chainer=None, group="activation",
        args=[("x", "var")], out="var",
        brief="GELU's tanh approximation (PyTorch's gelu with approximate='tanh').",
        details="""\
y = x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2, PyTorch's gelu with
approximate='tanh' (GPT-2's). Python: F.gelu(x, approximate='tanh').""",
        keeps="x", py="_gelu_tanh", cpp=("F", "gelu_tanh"), rust=("nn", "gelu_tanh"), test=[],
        pointwise=dict(numpy="0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))",
                       grad="0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))) + "
                            "0.5 * x * (1 - np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)) "
                            "** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x ** 2)",
                       low=-3.0, high=3.0),
        kernels=[("gelu_tanh", "unary", "GeluTanh", "activation_ext.h"),
                 ("gelu_tanh_grad", "binary", "GeluTanhGrad", "activation_ext.h")],
    ),
    dict(
        name="silu", chainer=None, group="activation",
        args=[("x", "var")], out="var",
        brief="SiLU x sigmoid(x) (PyTorch's silu; Chainer's swish with beta = 1).",
        keeps="x", cpp=("F", "silu"), rust=("nn", "silu"), test=[],
        pointwise=dict(numpy="x / (1 + np.exp(-x))",
                       grad="1 / (1 + np.exp(-x)) * (1 + x * (1 - 1 / (1 + np.exp(-x))))",
                       low=-3.0, high=3.0),
        kernels=[("silu", "unary", "Silu", "activation_ext.h"),
                 ("silu_grad", "binary", "SiluGrad", "activation_ext.h")],
    ),
    dict(
        name="softplus", chainer="chainer.functions.softplus", group="activation",
        args=[("x", "var"), ("beta", "f64", 1.0)], out="var",
        brief="Softplus log(1 + exp(beta x)) / beta (gradient gy sigmoid(beta x)).",
        details="""\
Chainer's softplus, computed without overflow as
(max(beta x, 0) + log1p(exp(-|beta x|))) / beta. CH_ERR_INVALID_ARGUMENT
for beta 0 or not finite.""",
        keeps="x", cpp=("F", "softplus"), rust=("nn", "softplus"), test=["1"],
        pointwise=dict(numpy="np.logaddexp(0, beta * x) / beta",
                       grad="1 / (1 + np.exp(-beta * x))", low=-2.0, high=2.0, opts=[2.0]),
        kernels=[("softplus", "unary_scalar", "Softplus", "activation_ext.h"),
                 ("softplus_grad", "binary_scalar", "SoftplusGrad", "activation_ext.h")],
    ),
    dict(
        name="elu", chainer="chainer.functions.elu", group="activation",
        args=[("x", "var"), ("alpha", "f64", 1.0)], out="var",
        brief="ELU: x for x > 0, alpha (exp(x) - 1) for x <= 0.",
        details="""\
Chainer's elu. The gradient is gy for x > 0 and gy alpha exp(x) for x <= 0
(alpha at x = 0, as Chainer's). CH_ERR_INVALID_ARGUMENT for an alpha not
finite.""",
        keeps="x, y", cpp=("F", "elu"), rust=("nn", "elu"), test=["1"],
        pointwise=dict(numpy="np.where(x > 0, x, alpha * np.expm1(x))",
                       grad="np.where(x > 0, 1.0, alpha * np.exp(x))", low=-2.0, high=2.0,
                       opts=[0.7]),
        kernels=[("elu", "unary_scalar", "Elu", "activation_ext.h"),
                 ("elu_grad", "binary_scalar", "EluGrad", "activation_ext.h")],
    ),
    dict(
        name="clipped_relu", chainer="chainer.functions.clipped_relu", group="activation",
        args=[("x", "var"), ("z", "f64", 20.0)], out="var",
        brief="Clipped ReLU min(max(0, x), z).",
        details="""\
Chainer's clipped_relu (relu6 is z = 6). The gradient is gy where
0 < x < z, else 0 (0 at both kinks, as Chainer's). CH_ERR_INVALID_ARGUMENT
unless z > 0.""",
        keeps="x", cpp=("F", "clipped_relu"), rust=("nn", "clipped_relu"), test=["20"],
        pointwise=dict(numpy="np.minimum(np.maximum(0, x), z)",
                       grad="((x > 0) & (x < z)) * 1.0", low=-1.0, high=2.0, opts=[1.5]),
        kernels=[("clipped_relu", "unary_scalar", "ClippedRelu", "activation_ext.h"),
                 ("clipped_relu_grad", "binary_scalar", "ClippedReluGrad", "activation_ext.h")],
    ),
    dict(
        name="swish", chainer="chainer.functions.swish", group="activation",
        args=[("x", "var"), ("beta", "var")], out="var",
        brief="Swish x sigmoid(beta x), beta broadcast along axis 1 (Chainer's swish).",
        details="""\
Chainer's swish: y = x sigmoid(beta x) with beta of shape
x.shape[1:1 + beta.ndim], reshaped to (1, *beta.shape, 1, ...) (Chainer's
Swish link holds it); x and beta of one float dtype. Differentiable in x and
beta (a composition of reshape, mul and sigmoid). CH_ERR_SHAPE when beta's
shape does not match. silu is beta = 1, fused.""",
        keeps="x, beta and the intermediates of the composition",
        cpp=("F", "swish"), rust=("nn", "swish"),
    ),
    # -- end of issue 42's activations
    dict(
        name="softmax", chainer="chainer.functions.softmax", group="activation",
        args=[("x", "var")], out="var",
        brief="Softmax along axis 1.",
        details="""\
Softmax along axis 1 of an (N, C) input (an (N, C, ...) input is
normalised over C at every trailing position); numerically stable
(the row maximum is subtracted). CH_ERR_SHAPE below 2 dimensions.""",
        keeps="y", cpp=("F", "softmax"), rust=("nn", "softmax"), test=[],
    ),
    # ---- issue 42 (fn42-reduce): softmax over any axis
    dict(
        name="softmax_axis", chainer="chainer.functions.softmax", group="activation",
        args=[("x", "var"), ("axis", "i32", 1)], out="var",
        brief="Softmax along any axis (Chainer 7's softmax(x, axis=1)).",
        details="""\
Softmax along `axis` (Chainer 7's softmax(x, axis=1); negative axes count
from the end): every position of the other axes is normalised on its own,
numerically stable (the maximum is subtracted). Backward as
ch_functions_softmax. An axis out of range (a 0-d x included) is
CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="y", py="_softmax_axis", cpp=("F", "softmax_axis"), rust=("nn", "softmax_axis"),
        test=["1"],
    ),
    dict(
        name="log_softmax", chainer="chainer.functions.log_softmax", group="activation",
        args=[("x", "var"), ("axis", "i32", 1)], out="var",
        brief="log(softmax(x)) along any axis, computed stably (x - logsumexp).",
        details="""\
log(softmax(x)) along `axis` (Chainer 7's log_softmax(x, axis=1)):
x - m - log(sum(exp(x - m))) with m the maximum along the axis, so that
large and very negative scores stay finite. Twice differentiable. An axis
out of range is CH_ERR_INVALID_ARGUMENT naming the function and the axis.""",
        keeps="its parts' arrays", cpp=("F", "log_softmax"), rust=("nn", "log_softmax"),
        test=["1"],
    ),
    dict(
        name="prelu_new", chainer="chainer.links.PReLU", group="activation",
        args=[("shape", "shape"), ("dtype", "dtype"), ("init", "f64", 0.25)], out="function",
        brief="New PReLU function object with slopes W of `shape`.",
        details="""\
New PReLU function object (Chainer's PReLU(shape=(), init=0.25)):
y = x for x >= 0, W x for x < 0, with one parameter "W" of shape
`shape` (ndim extents; ndim 0 = a single slope) and `dtype`, filled with
`init`. Applied with ch_function_apply to one input of shape
(N, *shape, ...): W is broadcast over the batch axis and the axes after its
own. Backward accumulates into W's gradient (see ch_function_parameter).""",
        keeps="x and W", hand=("cpp", "py", "rust", "go"),
    ),
    dict(
        name="lstm", chainer="chainer.functions.lstm", group="activation",
        args=[("c_prev", "var"), ("x", "var")],
        out="ch_variable** c, ch_variable** h",
        brief="LSTM units (Chainer 1.0.1's lstm; gates interleaved): returns (c, h).",
        details="""\
Long Short-Term Memory units as an activation function (the seed's
chainer.functions.lstm): c_prev (N, U, ...) is the previous cell state (zeros
or the c of the previous call), x (N, 4U, ...) the incoming signal. The gates
a, i, f, o are taken from x INTERLEAVED along axis 1, as Chainer 1.0.1 does
(x.reshape(N, U, 4, ...)): a = x[:, 0::4], i = x[:, 1::4], f = x[:, 2::4],
o = x[:, 3::4]. Then c = tanh(a) sigmoid(i) + c_prev sigmoid(f) and
h = tanh(c) sigmoid(o), both of c_prev's shape. Differentiable in c_prev and
x through either or both outputs.""",
        owns="*c, *h: new references; release each with ch_variable_release (both NULL\n"
             "on failure).",
        keeps="inputs", hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    # ---------------------------------------------------------------- connection
    dict(
        name="linear_new", chainer="chainer.links.Linear", group="connection",
        args=[("in_size", "i64"), ("out_size", "i64"), ("dtype", "dtype"),
              ("wscale", "f64", 1.0), ("bias", "f64", 0.0), ("nobias", "bool", False),
              ("initial_W", "array_opt"), ("initial_b", "array_opt")],
        out="function", legacy_positional=True,
        brief="New Linear function object y = x W^T + b.",
        details="""\
New Linear function object (Chainer's Linear(in_size, out_size, wscale=1,
bias=0, nobias=False, initialW=None, initial_bias=None)): y = x W^T + b.
Parameters, in order: "W" of shape (out_size, in_size) and, unless nobias,
"b" of shape (out_size,), both of `dtype` (CH_FLOAT32 or CH_FLOAT64).
W is drawn from N(0, wscale^2 / in_size) with the engine's generator
(ch_config_seed) unless initial_W is given; b is filled with `bias`
unless initial_b is given. initial_W / initial_b (NULL = default) are
copied, converted to `dtype`, and must have the parameter's shape;
initial_b with nobias is CH_ERR_INVALID_ARGUMENT. Gradients start at zero.
Apply with ch_function_apply to one input x of shape (N, in_size) or
(N, ...) whose trailing extents multiply to in_size (flattened); the output
is (N, out_size). Backward accumulates gW += gy^T x and gb += sum(gy, 0)
and gives x the gradient gy W in x's shape.""",
        keeps="x and W", hand=("cpp", "py", "rust", "go"),
    ),
    dict(
        name="parameter_new", chainer="chainer.links.Parameter", group="connection",
        args=[("initial", "array")], out="function",
        brief="New Parameter function object that outputs its parameter W.",
        details="""\
New Parameter function object (Chainer's Parameter(array)): applied with
ch_function_apply to no inputs, it outputs its parameter "W" (a copy of
`initial`, float32 or float64); the output shares the parameter's memory.
Backward accumulates the output's gradient into W's gradient.""",
        keeps="nothing", hand=("cpp", "py", "rust", "go"),
    ),
    dict(
        name="convolution_2d_new", chainer="chainer.links.Convolution2D", group="connection",
        args=[("in_channels", "i64"), ("out_channels", "i64"), ("kh", "i64"), ("kw", "i64"),
              ("sy", "i64", 1), ("sx", "i64", 1), ("ph", "i64", 0), ("pw", "i64", 0),
              ("dtype", "dtype"), ("wscale", "f64", 1.0), ("bias", "f64", 0.0),
              ("nobias", "bool", False), ("initial_W", "array_opt"), ("initial_b", "array_opt")],
        out="function", legacy_positional=True,
        brief="New Convolution2D function object (NCHW).",
        details="""\
Convolution2D (Chainer 1.0.1): a parameterized function object for 2-D
convolution (correlation) of NCHW input x (batch, in_channels, h, w) with
filters W (out_channels, in_channels, kh, kw) plus bias b (out_channels),
windows shifted by the stride (sy, sx) from -pad (ph, pw), zero padding.
Output (batch, out_channels, (h + 2 ph - kh) / sy + 1, (w + 2 pw - kw) / sx + 1).
Seed defaults: stride 1, pad 0, wscale 1, bias 0, nobias false; ksize=k,
stride=s, pad=p of the seed are kh = kw = k, sy = sx = s, ph = pw = p.
Parameters (ch_function_parameter, in this order): "W", then "b" unless
nobias. W ~ N(0, wscale^2 / (in_channels kh kw)) and b = bias, unless
initial_W / initial_b (NULL = random / `bias`; borrowed, copied and
converted to `dtype`; shapes (out, in, kh, kw) and (out_channels,)) are given.
Apply it to one float variable of `dtype` with ch_function_apply; each
application is a new graph node sharing the parameters; backward adds to
the parameters' gradients (gW +=, gb +=) and gives x its gradient.
Errors: CH_ERR_INVALID_ARGUMENT for non-positive channels/ksize/stride or a
negative pad; CH_ERR_DTYPE for a non-float dtype; CH_ERR_SHAPE for a
wrongly shaped initial array; at apply: CH_ERR_SHAPE for x not 4-d, with
another channel count, or smaller than the kernel; CH_ERR_DTYPE for x of
another dtype.""",
        keeps="x and W", hand=("capi", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="embed_id_new", chainer="chainer.links.EmbedID", group="connection",
        args=[("in_size", "i64"), ("out_size", "i64"), ("dtype", "dtype"),
              ("initial_W", "array_opt")], out="function",
        brief="New EmbedID function object: rows of W by int32 ids.",
        details="""\
EmbedID(in_size, out_size) (the seed's chainer.functions.EmbedID): a
function object holding the parameter "W" (in_size, out_size) of `dtype`
(CH_FLOAT32 or CH_FLOAT64), initialised with N(0, 1) samples as Chainer 1.0.1
(initial_W NULL) or copied from initial_W (same dtype and shape); its
gradient starts at zeros. Apply it with ch_function_apply to one int32
variable of ids of any shape S: the output has shape S + (out_size,) and
output[s, :] = W[ids[s], :]. An id outside [0, in_size) is
CH_ERR_INVALID_ARGUMENT naming the id and its position. Backward adds gy
rows into W's gradient (gW[ids[s]] += gy[s]); the ids get no gradient.
Parameters: ch_function_parameter_count / ch_function_parameter.""",
        keeps="the ids", hand=("cpp", "py", "rust", "go"),
    ),
    dict(
        name="inception_new", chainer=None, group="connection",
        args=[("in_channels", "i64"), ("out1", "i64"), ("proj3", "i64"), ("out3", "i64"),
              ("proj5", "i64"), ("out5", "i64"), ("proj_pool", "i64"), ("dtype", "dtype")],
        out="function", legacy_positional=True,
        brief="New Inception (GoogLeNet) module function object.",
        details="""\
Inception (Chainer 1.0.1): GoogLeNet's module as a parameterized function
object. For NCHW x (batch, in_channels, h, w):
  y = relu(concat(conv1(x), conv3(relu(proj3(x))), conv5(relu(proj5(x))),
                  projp(max_pooling_2d(x, 3, stride 1, pad 1)))) on channels,
conv1 1x1 in -> out1; proj3 1x1 in -> proj3, conv3 3x3 pad 1 -> out3;
proj5 1x1 in -> proj5, conv5 5x5 pad 2 -> out5; projp 1x1 in -> proj_pool.
y is (batch, out1 + out3 + out5 + proj_pool, h, w). Parameters (12, in
this order, Chainer's FunctionSet order): "conv1/W", "conv1/b", "conv3/W",
"conv3/b", "conv5/W", "conv5/b", "proj3/W", "proj3/b", "proj5/W",
"proj5/b", "projp/W", "projp/b", each initialised as Convolution2D's
defaults (wscale 1, bias 0). Applied with ch_function_apply, the module is
one graph node (Chainer inserts its sub-graph; gradients are the same);
backward adds to all twelve parameter gradients. Errors:
CH_ERR_INVALID_ARGUMENT for a non-positive channel count, CH_ERR_DTYPE for a
non-float dtype; at apply: CH_ERR_SHAPE for x not 4-d or with another
channel count, CH_ERR_DTYPE for x of another dtype.""",
        keeps="its sub-functions' state", hand=("cpp", "py", "rust", "go"),
    ),
    # linear as a function of x, W, b (fn42-norm)
    dict(
        name="linear", chainer="chainer.functions.linear", group="connection",
        args=[("x", "var"), ("W", "var"), ("b", "var"), ("n_batch_axes", "i32", 1)], out="var",
        brief="Linear function y = x W^T + b of variables x, W (out, in) and b (out,).",
        details="""\
Linear function (Chainer 7's F.linear(x, W, b, n_batch_axes=1)): W is
(out_size, in_size), b (out_size,). The first n_batch_axes axes of x are
batch axes; the rest are flattened to in_size features: x of shape
(B1, ..., Bk, F...) with prod(F...) = in_size gives y of shape
(B1, ..., Bk, out_size) (a transformer's (B, T, C) input with n_batch_axes 2).
Differentiable (twice) in x, W and b: gx = gy W, gW = gy^T x, gb = sum of gy
over the batch axes (ch_grad can take gradients with respect to W). Errors:
CH_ERR_SHAPE for W not 2-D, b not (out_size,), or x's features not in_size;
CH_ERR_INVALID_ARGUMENT for n_batch_axes < 1 or not below x's ndim;
CH_ERR_DTYPE for operands of different dtypes.""",
        keeps="x and W", cpp=("F", "linear"), py="_linear", rust=("functions", "linear"),
    ),
    dict(
        name="linear_nobias", chainer="chainer.functions.linear", group="connection",
        args=[("x", "var"), ("W", "var"), ("n_batch_axes", "i32", 1)], out="var",
        brief="Linear function y = x W^T without bias (Chainer's b=None).",
        details="""\
ch_functions_linear with b = None: y = x W^T, W (out_size, in_size); the
same shapes, n_batch_axes and errors.""",
        keeps="x and W", cpp=("F", "linear"), py="_linear_nobias",
        rust=("functions", "linear_nobias"), go="LinearNobias",
    ),
    # ---------------------------------------------------------------- loss
    dict(
        name="softmax_cross_entropy", chainer="chainer.functions.softmax_cross_entropy",
        group="loss", args=[("x", "var"), ("t", "var")], out="var",
        brief="Mean cross entropy of softmax(x) against int32 labels t.",
        details="""\
Cross entropy of softmax(x) against labels (Chainer's
softmax_cross_entropy): mean over the batch of -log softmax(x)[i, t[i]] for
scores x (N, C) and int32 labels t (N,), computed stably (log-sum-exp).
Output: 0-d, x's dtype. A label outside [0, C) is CH_ERR_INVALID_ARGUMENT
naming its index and value; t must be int32 (CH_ERR_DTYPE). Differentiable
with respect to x only.""",
        keeps="t and the probabilities", cpp=("F", "softmax_cross_entropy"),
        rust=("nn", "softmax_cross_entropy"),
    ),
    dict(
        name="mean_squared_error", chainer="chainer.functions.mean_squared_error", group="loss",
        args=[("x0", "var"), ("x1", "var")], out="var",
        brief="Mean squared error over all elements.",
        details="""\
Mean squared error sum((x0 - x1)^2) / size over all elements, not scaled by
1/2 (Chainer's mean_squared_error). Equal shapes and dtypes; output 0-d.""",
        cpp=("F", "mean_squared_error"), rust=("nn", "mean_squared_error"),
    ),
    dict(
        name="binary_hierarchical_softmax_new", chainer="chainer.links.BinaryHierarchicalSoftmax",
        group="loss",
        args=[("in_size", "i64"), ("tree", "c:const int32_t*"), ("n_internal", "i64"),
              ("dtype", "dtype"), ("initial_W", "array_opt")],
        out="function", legacy_positional=True,
        brief="New BinaryHierarchicalSoftmax function object over a flat binary tree.",
        details="""\
BinaryHierarchicalSoftmax(in_size, tree) (the seed's
chainer.functions.BinaryHierarchicalSoftmax): hierarchical softmax over the
words at the leaves of a binary tree.

The tree is given flat: n_internal internal nodes, `tree` holds 2 *
n_internal child codes (read during the call, not kept): tree[2k] and
tree[2k + 1] are the left and right child of internal node k, where a code
c >= 0 is internal node c and c < 0 is the leaf of word id -c - 1 (word w
is encoded -(w + 1)). Node 0 is the root; every other node must have exactly
one parent; each word may appear once. The op keeps a table entry per word
id up to the largest, so ids must be below max(2^20, 64 * (n_internal + 1))
(CH_ERR_INVALID_ARGUMENT naming the id otherwise). Row k of the parameter "W"
(n_internal, in_size) belongs to internal node k. Chainer numbers internal
nodes in pre-order (node, left subtree, right subtree): a wrapper that maps
a nested pair like ((0, 1), 2) in that order gets Chainer's numbering, e.g.
((0, 1), 2) -> {1, -3, -1, -2} (node 0 = (node 1, word 2), node 1 = (word 0,
word 1)).

W is initialised with U(-1, 1) samples as Chainer 1.0.1 (initial_W NULL) or
copied from initial_W (dtype and shape (n_internal, in_size)); its gradient
starts at zeros. Apply with ch_function_apply to x (N, in_size) of `dtype`
and int32 labels t (N,): the output is the 0-d sum over the batch of
-log P(t_n | x_n), P(w | x) = prod over w's path of sigmoid(b x . W[e]),
b = +1 where the path goes left and -1 where it goes right (Chainer's
TreeParser). A label that is not a word of the tree is
CH_ERR_INVALID_ARGUMENT naming it and its position. Backward gives the
gradient of x and adds into W's gradient; t gets none.""",
        keeps="x and t", hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="binary_hierarchical_softmax_create_huffman_tree",
        chainer="chainer.links.BinaryHierarchicalSoftmax.create_huffman_tree", group="loss",
        args=[("capacity", "i64"), ("counts", "c:const double*"), ("n_words", "i64")],
        out="int32_t* tree",
        brief="Chainer's create_huffman_tree, written in the flat tree encoding.",
        details="""\
Chainer's BinaryHierarchicalSoftmax.create_huffman_tree for the words
0 .. n_words-1 with counts[w] (n_words >= 2; no NaN): repeatedly merges the
two entries of least (count, id), the first as the left child, the merged
entry taking the smaller id, as Chainer does with a dict in word-id order.
Writes the tree in the encoding above, with internal nodes numbered in
pre-order (as Chainer), to tree[0 .. 2 * (n_words - 1)); n_internal is
n_words - 1. capacity: entries available at `tree` (caller-owned).""",
        owns="", keeps="nothing (not differentiable)",
        hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    # ---------------------------------------------------------------- evaluation
    dict(
        name="accuracy", chainer="chainer.functions.accuracy", group="evaluation",
        args=[("y", "var"), ("t", "var")], out="var",
        brief="Classification accuracy (not differentiable).",
        details="""\
Classification accuracy (Chainer's accuracy): the fraction of rows of y
(N, C) (or (N, ...), viewed as (N, C)) whose first maximum is at the int32
label t[i]. Output: 0-d array of y's dtype. Not differentiable (backward
gives y and t no gradient). A label outside [0, C) is
CH_ERR_INVALID_ARGUMENT.""",
        keeps="nothing (not differentiable)", cpp=("F", "accuracy"), rust=("nn", "accuracy"),
    ),
    # ---------------------------------------------------------------- noise
    dict(
        name="dropout", chainer="chainer.functions.dropout", group="noise",
        args=[("x", "var"), ("ratio", "f64", 0.5), ("train", "mode", "default")], out="var",
        brief="Dropout: zero elements with probability ratio, scale the rest by 1/(1-ratio).",
        details="""\
Dropout (Chainer's dropout(x, ratio=0.5, train=True)): with train
(CH_MODE_TRAIN, or CH_MODE_DEFAULT while the process default is train),
each element is zeroed with probability `ratio` and the others are scaled
by 1 / (1 - ratio); the mask is drawn from the engine's generator and the
gradient is gy times the same mask. In test mode *out is a new reference to
x itself (no copy, no graph node). ratio must be in [0, 1).""",
        keeps="the mask", cpp=("F", "dropout"), rust=("nn", "dropout"),
        test=["0.5", "CH_MODE_TRAIN"],
    ),
    # ---------------------------------------------------------------- normalization
    dict(
        name="local_response_normalization",
        chainer="chainer.functions.local_response_normalization", group="normalization",
        args=[("x", "var"), ("n", "i32", 5), ("k", "f64", 2.0), ("alpha", "f64", 1e-4),
              ("beta", "f64", 0.75)], out="var",
        brief="Local response normalization across channels.",
        details="""\
local_response_normalization (Chainer 1.0.1): across channels (axis 1) of
x (batch, channels, ...): y = x / (k + alpha * sum_j x_j^2)^beta, j over the
channels i - n/2 .. i + n/2 (clipped at the edges). Seed defaults: n = 5,
k = 2, alpha = 1e-4, beta = 0.75. Errors: CH_ERR_SHAPE for rank < 2,
CH_ERR_DTYPE for a non-float x, CH_ERR_INVALID_ARGUMENT for n <= 0.""",
        ops_types={"n": "int64_t"}, cpp=("F", "local_response_normalization"),
        rust=("nn", "local_response_normalization"),
    ),
    dict(
        name="batch_normalization_new", chainer="chainer.links.BatchNormalization",
        group="normalization",
        args=[("size", "shape"), ("decay", "f64", 0.9), ("eps", "f64", 1e-5), ("dtype", "dtype")],
        out="function",
        brief="New BatchNormalization function object over features of shape `size`.",
        details="""\
BatchNormalization (Chainer 1.x): a parameterized function object that
normalizes x (batch, size..., rest...) per feature of shape `size` (size =
{C} for per-channel normalization of NCHW input, {D} for (N, D) input),
with statistics over the batch axis and the trailing axes:
y = gamma (x - mean) / sqrt(var + eps) + beta.
Seed defaults: decay 0.9, eps 1e-5. Parameters: "gamma" (ones), "beta"
(zeros), shape `size`, `dtype`. Running statistics "avg_mean" and "avg_var"
(zeros at start; see ch_functions_batch_normalization_state) are state, not
parameters. Errors: CH_ERR_DTYPE for a non-float dtype;
CH_ERR_INVALID_ARGUMENT for an empty size, a non-positive extent or eps <= 0.
Applied with ch_function_apply it runs in the process default mode
(ch_config_set_train: train -> training mode, test -> test mode).""",
        keeps="x, gamma and the batch statistics", hand=("cpp", "py", "rust", "go"),
    ),
    dict(
        name="batch_normalization_apply", chainer="chainer.links.BatchNormalization.__call__",
        group="normalization",
        args=[("bn", "c:ch_function*"), ("x", "var"), ("train", "mode"), ("finetune", "bool")],
        out="var",
        brief="Applies BatchNormalization `bn` to x in a given mode.",
        details="""\
Applies BatchNormalization `bn` to x in a given mode: train is CH_MODE_TRAIN,
CH_MODE_TEST or CH_MODE_DEFAULT (the process default); finetune != 0 is the
seed's finetune=True. Modes as Chainer 1.x:
 - training (train, not finetune): batch mean and (biased) variance;
   avg_mean = decay avg_mean + (1 - decay) mean, avg_var = decay avg_var +
   (1 - decay) m/(m-1) var (m values per feature);
 - test (test, not finetune): normalizes with avg_mean and avg_var + eps;
   backward: gx = gamma gy / sqrt(avg_var + eps);
 - finetune (either train flag): batch statistics; the running averages
   become population statistics: decay = 1 - 1/N for the N-th batch since
   ch_functions_batch_normalization_start_finetuning (or creation).
Backward adds to the gradients of gamma and beta. Errors: CH_ERR_SHAPE if x's
axes after the batch axis do not start with `size`; CH_ERR_DTYPE for x of
another dtype; CH_ERR_INVALID_ARGUMENT if bn is not a BatchNormalization.""",
        keeps="x, gamma and the batch statistics",
        hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="batch_normalization_state", chainer=None, group="normalization",
        args=[("bn", "c:const ch_function*")], out="ch_array** avg_mean, ch_array** avg_var",
        brief="The running statistics avg_mean and avg_var of a BatchNormalization.",
        details="""\
The running statistics of `bn` (shape `size`, its dtype): the arrays
themselves, not copies, so writing them (e.g. when loading a checkpoint)
changes the statistics. They live on the device of bn's parameters: after
ch_function_set_to_gpu / to_cpu moved those, the next application moves
them there (new arrays; earlier handles keep the old ones). Either output
may be NULL (not wanted).""",
        owns="*avg_mean, *avg_var: new references; release with ch_array_release.",
        keeps="nothing (not differentiable)", hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    dict(
        name="batch_normalization_start_finetuning",
        chainer="chainer.links.BatchNormalization.start_finetuning", group="normalization",
        args=[("bn", "c:ch_function*")], out="",
        brief="The seed's start_finetuning(): restarts the count N of finetune batches.",
        owns="", keeps="nothing (not differentiable)",
        hand=("capi", "ops", "cpp", "py", "rust", "go"),
    ),
    # layer, rms and group normalization (fn42-norm)
    dict(
        name="layer_normalization", chainer="chainer.functions.layer_normalization",
        group="normalization",
        args=[("x", "var"), ("gamma", "var"), ("beta", "var"), ("eps", "f64", 1e-5)], out="var",
        brief="Layer normalization of each row over the last axis, scaled by gamma, shifted by beta.",
        details="""\
Layer normalization (Chainer 7's F.layer_normalization(x, gamma, beta,
eps=1e-5)): x is (N, C) as in Chainer 7, or (..., C) (normalized over the last
axis, as PyTorch's layer_norm(x, (C,)): a transformer's (B, T, C) needs no
reshape); gamma and beta are (C,). Each row of C values:
y = gamma (x - mean) / sqrt(var + eps) + beta, var the biased variance.
Differentiable (twice) in x, gamma and beta. Errors: CH_ERR_SHAPE for x below
2 dimensions or gamma / beta not (C,); CH_ERR_DTYPE for a non-float x or
gamma / beta of another dtype; CH_ERR_INVALID_ARGUMENT for eps < 0.""",
        keeps="x, gamma and the rows' mean and 1/std", cpp=("F", "layer_normalization"),
        rust=("nn", "layer_normalization"),
    ),
    dict(
        name="rms_normalization", chainer=None, group="normalization",
        args=[("x", "var"), ("gamma", "var"), ("eps", "f64")], out="var",
        brief="RMS normalization over the last axis: x / sqrt(mean(x^2) + eps) * gamma.",
        details="""\
RMS normalization (PyTorch's F.rms_norm(x, (C,), weight=gamma, eps); Chainer 7
has none): x (..., C) with at least one axis, gamma (C,); each row of C values:
y = x / sqrt(mean(x^2) + eps) * gamma. eps has no default here: PyTorch's
eps=None is the dtype's machine epsilon (float32 1.1920928955078125e-07,
float64 2.220446049250313e-16). Differentiable (twice) in x and gamma.
Errors: CH_ERR_SHAPE for a 0-d x or gamma not (C,); CH_ERR_DTYPE for a
non-float x or gamma of another dtype; CH_ERR_INVALID_ARGUMENT for eps < 0.""",
        keeps="x, gamma and the rows' 1/rms", cpp=("F", "rms_normalization"),
        rust=("nn", "rms_normalization"),
    ),
    dict(
        name="group_normalization", chainer="chainer.functions.group_normalization",
        group="normalization",
        args=[("x", "var"), ("groups", "i32"), ("gamma", "var"), ("beta", "var"),
              ("eps", "f64", 1e-5)], out="var",
        brief="Group normalization: statistics per sample and group of channels.",
        details="""\
Group normalization (Chainer 7's F.group_normalization(x, groups, gamma, beta,
eps=1e-5)): x (N, C, ...) with C divisible by groups; per sample, the
C / groups channels of a group and all their trailing positions are
normalized together, then channel c is scaled by gamma[c] and shifted by
beta[c] (both (C,)). Differentiable (twice) in x, gamma and beta. Errors:
CH_ERR_SHAPE for x below 2 dimensions or gamma / beta not (C,);
CH_ERR_INVALID_ARGUMENT for groups < 1 or not dividing C, or eps < 0;
CH_ERR_DTYPE for a non-float x or gamma / beta of another dtype.""",
        keeps="x, gamma and the groups' mean and 1/std", cpp=("F", "group_normalization"),
        rust=("nn", "group_normalization"),
    ),
    # ---------------------------------------------------------------- pooling
    dict(
        name="max_pooling_2d", chainer="chainer.functions.max_pooling_2d", group="pooling",
        args=[("x", "var"), ("kh", "i64"), ("kw", "i64"), ("sy", "i64"), ("sx", "i64"),
              ("ph", "i64"), ("pw", "i64"), ("cover_all", "bool", True)],
        out="var", legacy_positional=True,
        brief="Spatial max pooling of NCHW x.",
        details="""\
max_pooling_2d (Chainer 1.0.1): the maximum of each (kh, kw) window of
every channel of NCHW x, windows shifted by (sy, sx) from -(ph, pw); padding
never wins. sy or sx <= 0 means the window size (the seed's stride=None).
cover_all != 0 (the seed's default) makes the output cover every input
position: extent (h + 2 ph - kh + sy - 1) / sy + 1; else (h + 2 ph - kh) / sy + 1.
Backward sends gy to the position of each maximum (the first in the window
on ties). Errors: CH_ERR_SHAPE for x not 4-d or smaller than the window,
CH_ERR_DTYPE for a non-float x, CH_ERR_INVALID_ARGUMENT for ksize <= 0 or
pad < 0.""",
        keeps="the argmax (x while it is not computed)", py="_max_pooling_2d",
        hand=("cpp", "rust", "go"),
    ),
    dict(
        name="average_pooling_2d", chainer="chainer.functions.average_pooling_2d",
        group="pooling",
        args=[("x", "var"), ("kh", "i64"), ("kw", "i64"), ("sy", "i64"), ("sx", "i64"),
              ("ph", "i64"), ("pw", "i64")],
        out="var", legacy_positional=True,
        brief="Spatial average pooling of NCHW x; padding counts as zeros.",
        details="""\
average_pooling_2d (Chainer 1.0.1): the sum of each (kh, kw) window divided
by kh * kw (padding counts as zeros); no cover_all mode: output extent
(h + 2 ph - kh) / sy + 1. sy or sx <= 0 means the window size (the seed's
stride=None); pad defaults to 0. Errors as ch_functions_max_pooling_2d.""",
        keeps="x's shape", py="_average_pooling_2d", hand=("cpp", "rust", "go"),
    ),
]
