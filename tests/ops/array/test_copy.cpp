// copy: a CPU to CPU copy (new memory, same values, gradient passed back);
// CUDA and unknown devices refused.
#include "op_test_util.h"

namespace {

using namespace optest;

using CopyTest = OpTest;

TEST_F(CopyTest, CpuCopy) {
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var x = make_var(dt, {2, 2}, {1, -2, 3.5, 4});
    Var y;
    ASSERT_EQ(ch_functions_copy(y.out(), x.get(), ch_device_cpu()), CH_OK) << ch_error_message();
    EXPECT_EQ(creator_name(y), "Copy");
    EXPECT_TRUE(all_equal(data_of(y), dt, {2, 2}, {1, -2, 3.5, 4}));
    EXPECT_NE(ch_array_data(data_of(y).get()), ch_array_data(data_of(x).get()))
        << "copy shares memory";
    backward(y, make_array(dt, {2, 2}, {0.5, 1, 2, -1}));
    EXPECT_TRUE(all_equal(grad_of(x), dt, {2, 2}, {0.5, 1, 2, -1}));
  }
  Var i = make_var(CH_INT32, {3}, {1, 2, 3});
  Var yi;
  ASSERT_EQ(ch_functions_copy(yi.out(), i.get(), ch_device_cpu()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(yi), CH_INT32, {3}, {1, 2, 3}));
}

TEST_F(CopyTest, OtherDevices) {
  Var x = make_var(iota(CH_FLOAT32, {2}));
  Var y;
  const int32_t missing = ch_cuda_device_count();  // one past the last CUDA device
  EXPECT_TRUE(fails_with(ch_functions_copy(y.out(), x.get(), ch_device{CH_DEVICE_CUDA, missing}),
                         CH_ERR_DEVICE,
                         {"copy", "cuda:" + std::to_string(missing), "no CUDA"}));
  EXPECT_TRUE(fails_with(ch_functions_copy(y.out(), x.get(), ch_device{7, 0}), CH_ERR_DEVICE,
                         {"copy", "type 7"}));
  EXPECT_TRUE(fails_with(ch_functions_copy(y.out(), x.get(), ch_device{CH_DEVICE_CPU, 1}),
                         CH_ERR_DEVICE, {"copy", "index 1"}));
  EXPECT_FALSE(y);
}

}  // namespace
