// dropout: mask statistics, scaling, backward = mask * gy, test mode is the
// identity (x itself), the process default through CH_MODE_DEFAULT, and
// reproducibility under ch_config_seed.
#include <cmath>

#include "op_test_util.h"

namespace {

using namespace optest;

using DropoutTest = OpTest;

// 200,000 ones: the kept fraction is binomial (sd sqrt(r (1-r) / n) ~ 1e-3),
// kept elements are exactly 1 / (1 - ratio), backward gives gy at the same
// places scaled the same way.
TEST_F(DropoutTest, MaskStatisticsAndBackward) {
  const int64_t n = 200000;
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    for (double ratio : {0.5, 0.2, 0.0}) {
      SCOPED_TRACE(std::string(ch_dtype_name(dt)) + " ratio " + std::to_string(ratio));
      Var x = make_var(dt, {n}, std::vector<double>(static_cast<size_t>(n), 1.0));
      Var y;
      ASSERT_EQ(ch_functions_dropout(y.out(), x.get(), ratio, CH_MODE_TRAIN), CH_OK)
          << ch_error_message();
      EXPECT_EQ(creator_name(y), "Dropout");
      const double scale = dt == CH_FLOAT32
                               ? static_cast<double>(static_cast<float>(1.0 / (1.0 - ratio)))
                               : 1.0 / (1.0 - ratio);
      const std::vector<double> v = values_of(y);
      int64_t kept = 0;
      bool only_two_values = true;
      for (double e : v) {
        if (e == scale)
          ++kept;
        else if (e != 0.0)
          only_two_values = false;
      }
      EXPECT_TRUE(only_two_values) << "elements other than 0 and " << scale;
      const double frac = static_cast<double>(kept) / n;
      EXPECT_NEAR(frac, 1.0 - ratio, 6e-3);
      std::vector<double> gy(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) gy[static_cast<size_t>(i)] = static_cast<double>(i % 7) - 3;
      backward(y, make_array(dt, {n}, gy));
      const std::vector<double> g = values_of(grad_of(x).get());
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i);
        const double expected = v[k] == 0.0 ? 0.0 : static_cast<double>(gy[k] * scale);
        const double rounded =
            dt == CH_FLOAT32 ? static_cast<double>(static_cast<float>(expected)) : expected;
        mismatches += g[k] != rounded;
      }
      EXPECT_EQ(mismatches, 0) << "gx != mask * gy";
    }
  }
}

// Test mode returns x itself; CH_MODE_DEFAULT follows ch_config_set_train.
TEST_F(DropoutTest, TestModeIsIdentity) {
  Var x = make_var(CH_FLOAT32, {4}, {1, 2, 3, 4});
  Var y;
  ASSERT_EQ(ch_functions_dropout(y.out(), x.get(), 0.5, CH_MODE_TEST), CH_OK) << ch_error_message();
  EXPECT_EQ(ch_array_data(data_of(y).get()), ch_array_data(data_of(x).get()));
  EXPECT_EQ(creator_name(y), "");
  ch_config_set_train(0);
  Var z;
  ASSERT_EQ(ch_functions_dropout(z.out(), x.get(), 0.5, CH_MODE_DEFAULT), CH_OK)
      << ch_error_message();
  EXPECT_EQ(creator_name(z), "");
  ch_config_set_train(1);
  Var w;
  ASSERT_EQ(ch_functions_dropout(w.out(), x.get(), 0.5, CH_MODE_DEFAULT), CH_OK)
      << ch_error_message();
  EXPECT_EQ(creator_name(w), "Dropout");
}

TEST_F(DropoutTest, SeedReproducible) {
  Var x = make_var(iota(CH_FLOAT64, {1000}));
  Var a, b;
  ch_config_seed(99);
  ASSERT_EQ(ch_functions_dropout(a.out(), x.get(), 0.5, CH_MODE_TRAIN), CH_OK);
  ch_config_seed(99);
  ASSERT_EQ(ch_functions_dropout(b.out(), x.get(), 0.5, CH_MODE_TRAIN), CH_OK);
  EXPECT_EQ(values_of(a), values_of(b));
}

// Successive calls draw new masks; halves of one mask are not copies.
TEST_F(DropoutTest, MasksDiffer) {
  const int64_t n = 2000;
  Var x = make_var(CH_FLOAT64, {n}, std::vector<double>(static_cast<size_t>(n), 1.0));
  Var a, b;
  ASSERT_EQ(ch_functions_dropout(a.out(), x.get(), 0.5, CH_MODE_TRAIN), CH_OK);
  ASSERT_EQ(ch_functions_dropout(b.out(), x.get(), 0.5, CH_MODE_TRAIN), CH_OK);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  EXPECT_NE(va, vb);
  EXPECT_NE(std::vector<double>(va.begin(), va.begin() + n / 2),
            std::vector<double>(va.begin() + n / 2, va.end()));
}

TEST_F(DropoutTest, BadInputs) {
  Var x = make_var(iota(CH_FLOAT32, {4}));
  Var i = make_var(iota(CH_INT32, {4}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_dropout(y.out(), x.get(), 1.0, CH_MODE_TRAIN),
                         CH_ERR_INVALID_ARGUMENT, {"dropout", "ratio 1", "[0, 1)"}));
  EXPECT_TRUE(fails_with(ch_functions_dropout(y.out(), x.get(), -0.1, CH_MODE_TRAIN),
                         CH_ERR_INVALID_ARGUMENT, {"ratio -0.1"}));
  EXPECT_TRUE(fails_with(ch_functions_dropout(y.out(), x.get(), NAN, CH_MODE_TRAIN),
                         CH_ERR_INVALID_ARGUMENT, {"ratio"}));
  EXPECT_TRUE(fails_with(ch_functions_dropout(y.out(), i.get(), 0.5, CH_MODE_TRAIN), CH_ERR_DTYPE,
                         {"int32"}));
  EXPECT_FALSE(y);
}

}  // namespace
