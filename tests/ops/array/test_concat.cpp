// concat against NumPy (nn_array_references.h), int32 data, bad inputs.
#include "nn_array_references.h"

namespace {

using namespace optest;

ch_status apply_concat(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  return ch_functions_concat(out, in, static_cast<size_t>(c.n_inputs), c.i0);
}

NNTEST_REFERENCE_SUITE(Concat, nnref::nn_array::concat_cases, apply_concat);

using ConcatTest = OpTest;

TEST_F(ConcatTest, Int32AndName) {
  Var a = make_var(CH_INT32, {2, 1}, {1, 2});
  Var b = make_var(CH_INT32, {2, 2}, {3, 4, 5, 6});
  ch_variable* xs[2] = {a.get(), b.get()};
  Var y;
  ASSERT_EQ(ch_functions_concat(y.out(), xs, 2, 1), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "Concat");
  EXPECT_TRUE(all_equal(data_of(y), CH_INT32, {2, 3}, {1, 3, 4, 2, 5, 6}));
}

TEST_F(ConcatTest, BadInputs) {
  Var a = make_var(iota(CH_FLOAT32, {2, 3}));
  Var b = make_var(iota(CH_FLOAT32, {3, 3}));
  Var c = make_var(iota(CH_FLOAT64, {2, 3}));
  Var d = make_var(iota(CH_FLOAT32, {2, 3, 1}));
  Var s = make_var(iota(CH_FLOAT32, {}));
  Var v = make_var(iota(CH_FLOAT32, {2, 3}), true);
  Var y;
  ch_variable* ab[2] = {a.get(), b.get()};
  ch_variable* ac[2] = {a.get(), c.get()};
  ch_variable* ad[2] = {a.get(), d.get()};
  ch_variable* ss[2] = {s.get(), s.get()};
  ch_variable* an[2] = {a.get(), nullptr};
  ch_variable* av[2] = {a.get(), v.get()};
  EXPECT_TRUE(fails_with(ch_functions_concat(y.out(), ab, 2, 1), CH_ERR_SHAPE,
                         {"concat", "(3, 3)", "(2, 3)", "axis 1"}));
  EXPECT_TRUE(fails_with(ch_functions_concat(y.out(), ac, 2, 1), CH_ERR_DTYPE,
                         {"concat", "float64", "float32"}));
  EXPECT_TRUE(
      fails_with(ch_functions_concat(y.out(), ad, 2, 0), CH_ERR_SHAPE, {"concat", "(2, 3, 1)"}));
  EXPECT_TRUE(fails_with(ch_functions_concat(y.out(), ss, 2, 0), CH_ERR_SHAPE, {"concat", "0-d"}));
  EXPECT_TRUE(
      fails_with(ch_functions_concat(y.out(), ab, 2, 2), CH_ERR_INVALID_ARGUMENT, {"axis 2"}));
  EXPECT_TRUE(
      fails_with(ch_functions_concat(y.out(), ab, 0, 1), CH_ERR_INVALID_ARGUMENT, {"no inputs"}));
  EXPECT_TRUE(fails_with(ch_functions_concat(y.out(), nullptr, 2, 1), CH_ERR_INVALID_ARGUMENT,
                         {"xs is NULL"}));
  EXPECT_TRUE(fails_with(ch_functions_concat(y.out(), an, 2, 1), CH_ERR_NULL_HANDLE, {"xs[1]"}));
  EXPECT_TRUE(fails_with(ch_functions_concat(y.out(), av, 2, 1), CH_ERR_GRAPH, {"volatile"}));
  EXPECT_FALSE(y);
}

}  // namespace
