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

// One entry per function of one or two variables, generated from
// src/ops/manifest.py (its `test` field) by scripts/gen_functions.py.
const Op kOps[] = {
#include "all_ops_table.inc"
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
