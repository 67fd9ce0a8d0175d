// Argument checks shared by every built-in function: NULL and released
// handles, a NULL output pointer, mixing volatile and non-volatile inputs.
// Each gives an error status and a message, sets *out to NULL, leaks nothing,
// and the next valid call works.
#include "op_test_util.h"

namespace {

using namespace optest;

struct Op {
  const char* name;  // the C function, which the message names
  int arity;
  ch_status (*call)(ch_variable** out, ch_variable* a, ch_variable* b);
};

const int64_t kShape23[] = {2, 3};

const Op kOps[] = {
    {"ch_functions_add", 2,
     [](ch_variable** o, ch_variable* a, ch_variable* b) { return ch_functions_add(o, a, b); }},
    {"ch_functions_sub", 2,
     [](ch_variable** o, ch_variable* a, ch_variable* b) { return ch_functions_sub(o, a, b); }},
    {"ch_functions_mul", 2,
     [](ch_variable** o, ch_variable* a, ch_variable* b) { return ch_functions_mul(o, a, b); }},
    {"ch_functions_div", 2,
     [](ch_variable** o, ch_variable* a, ch_variable* b) { return ch_functions_div(o, a, b); }},
    {"ch_functions_add_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_add_scalar(o, a, 1);
     }},
    {"ch_functions_sub_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_sub_scalar(o, a, 1);
     }},
    {"ch_functions_rsub_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_rsub_scalar(o, a, 1);
     }},
    {"ch_functions_mul_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_mul_scalar(o, a, 2);
     }},
    {"ch_functions_div_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_div_scalar(o, a, 2);
     }},
    {"ch_functions_rdiv_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_rdiv_scalar(o, a, 2);
     }},
    {"ch_functions_neg", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_neg(o, a); }},
    {"ch_functions_pow_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_pow_scalar(o, a, 2);
     }},
    {"ch_functions_rpow_scalar", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_rpow_scalar(o, a, 2);
     }},
    {"ch_functions_exp", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_exp(o, a); }},
    {"ch_functions_log", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_log(o, a); }},
    {"ch_functions_sum", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_sum(o, a); }},
    {"ch_functions_sum_axis", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_sum_axis(o, a, 1, 0);
     }},
    {"ch_functions_reshape", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       const int64_t s[] = {3, 2};
       return ch_functions_reshape(o, a, s, 2);
     }},
    {"ch_functions_identity", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_identity(o, a); }},
    {"ch_functions_broadcast_to", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_broadcast_to(o, a, kShape23, 2);
     }},
    // nn-basic: activations, array, matmul, dropout
    {"ch_functions_relu", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_relu(o, a); }},
    {"ch_functions_leaky_relu", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_leaky_relu(o, a, 0.2);
     }},
    {"ch_functions_sigmoid", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_sigmoid(o, a); }},
    {"ch_functions_tanh", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_tanh(o, a); }},
    {"ch_functions_softmax", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) { return ch_functions_softmax(o, a); }},
    {"ch_functions_transpose", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_transpose(o, a, nullptr, 0);
     }},
    {"ch_functions_concat", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_concat(o, &a, 1, 1);
     }},
    {"ch_functions_copy", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_copy(o, a, ch_device_cpu());
     }},
    {"ch_functions_matmul", 2,
     [](ch_variable** o, ch_variable* a, ch_variable* b) {
       return ch_functions_matmul(o, a, b, 0, 1);
     }},
    {"ch_functions_batch_matmul", 2,
     [](ch_variable** o, ch_variable* a, ch_variable* b) {
       return ch_functions_batch_matmul(o, a, b, 1, 0);
     }},
    {"ch_functions_dropout", 1,
     [](ch_variable** o, ch_variable* a, ch_variable*) {
       return ch_functions_dropout(o, a, 0.5, CH_MODE_TRAIN);
     }},
};

void PrintTo(const Op& op, std::ostream* os) { *os << op.name; }

class AllOps : public LeakChecked<::testing::TestWithParam<Op>> {};

struct OpName {
  std::string operator()(const ::testing::TestParamInfo<Op>& info) const {
    return std::string(info.param.name).substr(std::strlen("ch_functions_"));
  }
};

// A sentinel that a failing call must overwrite with NULL.
ch_variable* sentinel() { return reinterpret_cast<ch_variable*>(uintptr_t{0x10}); }

TEST_P(AllOps, NullInput) {
  const Op& op = GetParam();
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  ch_variable* out = sentinel();
  EXPECT_TRUE(fails_with(op.call(&out, nullptr, x.get()), CH_ERR_NULL_HANDLE, {op.name}));
  EXPECT_EQ(out, nullptr);
  if (op.arity == 2) {
    out = sentinel();
    EXPECT_TRUE(fails_with(op.call(&out, x.get(), nullptr), CH_ERR_NULL_HANDLE, {op.name, "'b'"}));
    EXPECT_EQ(out, nullptr);
  }
  Var y;
  EXPECT_EQ(op.call(y.out(), x.get(), x.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(y);
}

TEST_P(AllOps, NullOut) {
  const Op& op = GetParam();
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  EXPECT_TRUE(
      fails_with(op.call(nullptr, x.get(), x.get()), CH_ERR_INVALID_ARGUMENT, {op.name, "out"}));
  Var y;
  EXPECT_EQ(op.call(y.out(), x.get(), x.get()), CH_OK) << ch_error_message();
}

TEST_P(AllOps, ReleasedInput) {
  const Op& op = GetParam();
  Var live = make_var(iota(CH_FLOAT64, {2, 3}));
  Var dead = make_var(iota(CH_FLOAT64, {2, 3}));
  ch_variable* stale = dead.release();
  ASSERT_EQ(ch_variable_release(stale), CH_OK);
  ch_variable* out = sentinel();
  EXPECT_TRUE(fails_with(op.call(&out, stale, live.get()), CH_ERR_RELEASED_HANDLE, {op.name}));
  EXPECT_EQ(out, nullptr);
  // An array handle where a variable is expected is refused the same way.
  Array arr = iota(CH_FLOAT64, {2, 3});
  out = sentinel();
  EXPECT_TRUE(fails_with(op.call(&out, reinterpret_cast<ch_variable*>(arr.get()), live.get()),
                         CH_ERR_RELEASED_HANDLE, {op.name}));
  EXPECT_EQ(out, nullptr);
  Var y;
  EXPECT_EQ(op.call(y.out(), live.get(), live.get()), CH_OK) << ch_error_message();
}

// Binary functions: all inputs volatile or none (CH_ERR_GRAPH otherwise).
TEST_P(AllOps, VolatileMix) {
  const Op& op = GetParam();
  Var v = make_var(iota(CH_FLOAT64, {2, 3}), true);
  Var n = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  if (op.arity == 2) {
    EXPECT_TRUE(fails_with(op.call(y.out(), v.get(), n.get()), CH_ERR_GRAPH, {"volatile"}));
    EXPECT_TRUE(fails_with(op.call(y.out(), n.get(), v.get()), CH_ERR_GRAPH, {"volatile"}));
    EXPECT_FALSE(y);
  }
  // All volatile: a volatile result with no history.
  ASSERT_EQ(op.call(y.out(), v.get(), v.get()), CH_OK) << ch_error_message();
  EXPECT_EQ(ch_variable_is_volatile(y.get()), 1);
  EXPECT_EQ(creator_name(y), "");
}

// Every function's output is a new variable with a creator, and the input
// variables are left as they were (data and shape).
TEST_P(AllOps, InputsUntouched) {
  const Op& op = GetParam();
  Array a = iota(CH_FLOAT32, {2, 3});
  Var x = make_var(a);
  Var y;
  ASSERT_EQ(op.call(y.out(), x.get(), x.get()), CH_OK) << ch_error_message();
  EXPECT_NE(creator_name(y), "");
  EXPECT_EQ(creator_name(x), "");
  backward(y, ones_like(y));
  EXPECT_TRUE(all_equal(data_of(x), CH_FLOAT32, {2, 3}, {0.5, 1.5, 2.5, 3.5, 4.5, 5.5}));
}

INSTANTIATE_TEST_SUITE_P(CApi, AllOps, ::testing::ValuesIn(kOps), OpName());

}  // namespace
