// Parameter: a function object with no inputs whose output is its parameter.
#include "nn_case.h"
#include "op_test_util.h"

namespace {

using namespace optest;

using ParameterTest = OpTest;

TEST_F(ParameterTest, OutputsParameterAndAccumulatesGradient) {
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Array init = make_array(dt, {2, 2}, {1, -2, 3, 4});
    Func f;
    ASSERT_EQ(ch_functions_parameter_new(f.out(), init.get()), CH_OK) << ch_error_message();
    OPTEST_OK(ch_array_fill(init.get(), 0.0));  // the parameter is a copy
    ASSERT_EQ(ch_function_parameter_count(f.get()), 1u);
    const char* name = nullptr;
    Array p, g;
    ASSERT_EQ(ch_function_parameter(p.out(), g.out(), &name, f.get(), 0), CH_OK);
    EXPECT_STREQ(name, "W");
    EXPECT_TRUE(all_equal(p, dt, {2, 2}, {1, -2, 3, 4}));
    EXPECT_TRUE(all_equal(g, dt, {2, 2}, {0, 0, 0, 0}));
    Var y;
    ASSERT_EQ(apply_function(f, nullptr, 0, y.out()), CH_OK) << ch_error_message();
    EXPECT_EQ(creator_name(y), "Parameter");
    EXPECT_TRUE(all_equal(data_of(y), dt, {2, 2}, {1, -2, 3, 4}));
    // y * y: gradient 2 W gy, accumulated across two passes.
    Var z;
    ASSERT_EQ(ch_functions_mul(z.out(), y.get(), y.get()), CH_OK);
    Array gz = make_array(dt, {2, 2}, {1, 1, 0.5, 2});
    backward(z, gz);
    EXPECT_TRUE(all_equal(g, dt, {2, 2}, {2, -4, 3, 16}));
    backward(z, gz);
    EXPECT_TRUE(all_equal(g, dt, {2, 2}, {4, -8, 6, 32}));
    // The output shares the parameter's memory (the seed's shallow copy).
    OPTEST_OK(ch_array_fill(p.get(), 5.0));
    EXPECT_TRUE(all_equal(data_of(y), dt, {2, 2}, {5, 5, 5, 5}));
  }
}

TEST_F(ParameterTest, BadArguments) {
  Func f;
  Array labels = iota(CH_INT32, {3});
  EXPECT_TRUE(fails_with(ch_functions_parameter_new(f.out(), labels.get()), CH_ERR_DTYPE,
                         {"Parameter", "int32"}));
  EXPECT_TRUE(
      fails_with(ch_functions_parameter_new(f.out(), nullptr), CH_ERR_NULL_HANDLE, {"initial"}));
  Array a = iota(CH_FLOAT32, {3});
  ASSERT_EQ(ch_functions_parameter_new(f.out(), a.get()), CH_OK);
  Var x = make_var(a);
  ch_variable* in[1] = {x.get()};
  Var y;
  EXPECT_TRUE(fails_with(apply_function(f, in, 1, y.out()), CH_ERR_INVALID_ARGUMENT,
                         {"Parameter", "no inputs"}));
}

}  // namespace
