// A training step makes no host synchronisation (issue 46), counted on the
// emulated devices (cuda::emu::host_synchronizations: every call that makes
// the host wait for a device on a GPU): between the first forward and the
// optimizer's update, none; the checks of labels and ids run on the device
// and their errors arrive at the next point that synchronises anyway, with
// the message the op gave at once before; the gradient norm is one copy.
#include <ch/ch.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cuda/runtime/launch_count.h"
#include "require_gpu.h"

namespace {

#define ASSERT_CH_OK(call)                                                                         \
  do {                                                                                             \
    ch_status st_ = (call);                                                                        \
    ASSERT_EQ(st_, CH_OK) << #call << " -> " << ch_status_name(st_) << ": " << ch_error_message(); \
  } while (0)

constexpr int64_t kIn = 32, kHidden = 16, kOut = 10, kBatch = 8;

uint64_t syncs() { return chainerc::cuda::emu::host_synchronizations(); }

class GpuStepSync : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ch_cuda_device_count() == 0)
      CH_GPU_SKIP() << "no CUDA device: " << ch_cuda_unavailable_reason();
    ASSERT_CH_OK(ch_function_set_new(&set_));
    const int64_t in[2] = {kIn, kHidden}, out[2] = {kHidden, kOut};
    const char* names[2] = {"l1", "l2"};
    for (int i = 0; i < 2; ++i) {
      ASSERT_CH_OK(ch_functions_linear_new(&l_[i], in[i], out[i], CH_FLOAT32, 1.0, 0.0, 0, nullptr,
                                           nullptr));
      ASSERT_CH_OK(ch_function_set_add_function(set_, names[i], l_[i]));
    }
    ASSERT_CH_OK(ch_function_set_to_gpu(set_, ch_device_cuda(0)));
    ASSERT_CH_OK(ch_optimizer_sgd_new(&opt_, 0.1));
    ASSERT_CH_OK(ch_optimizer_setup(opt_, set_));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> x(kBatch * kIn);
    for (float& v : x) v = u(rng);
    for (int64_t i = 0; i < kBatch; ++i) t_.push_back(static_cast<int32_t>(i % kOut));
    x_ = variable(CH_FLOAT32, {kBatch, kIn}, x.data());
    t_var_ = variable(CH_INT32, {kBatch}, t_.data());
  }
  void TearDown() override {
    ch_variable_release(x_);
    ch_variable_release(t_var_);
    ch_optimizer_release(opt_);
    for (ch_function* f : l_) ch_function_release(f);
    ch_function_set_release(set_);
  }
  ch_variable* variable(ch_dtype dt, std::vector<int64_t> shape, const void* data) {
    ch_array* a = nullptr;
    EXPECT_EQ(ch_array_new(&a, dt, shape.data(), static_cast<int32_t>(shape.size()), data,
                           ch_device_cuda(0)),
              CH_OK)
        << ch_error_message();
    ch_variable* v = nullptr;
    EXPECT_EQ(ch_variable_new(&v, a, 0), CH_OK) << ch_error_message();
    ch_array_release(a);
    return v;
  }
  // relu(l1(x)) -> l2 -> softmax_cross_entropy against the labels t (on the
  // device already: a batch copied from pageable memory is a synchronisation).
  ch_status forward(ch_variable* t, ch_variable** loss) {
    ch_variable *h = nullptr, *a = nullptr, *y = nullptr;
    ch_status st = ch_function_apply(l_[0], &x_, 1, &a, 1, nullptr);
    if (st == CH_OK) st = ch_functions_relu(&h, a);
    if (st == CH_OK) st = ch_function_apply(l_[1], &h, 1, &y, 1, nullptr);
    if (st == CH_OK) st = ch_functions_softmax_cross_entropy(loss, y, t);
    for (ch_variable* v : {h, a, y}) ch_variable_release(v);
    return st;
  }
  double value(ch_variable* v) {
    ch_array* a = nullptr;
    EXPECT_EQ(ch_variable_data(&a, v), CH_OK);
    double d = NAN;
    const ch_status st = ch_array_get(&d, a, 0);
    ch_array_release(a);
    last_ = st;
    return d;
  }
  ch_function_set* set_ = nullptr;
  ch_function* l_[2] = {};
  ch_optimizer* opt_ = nullptr;
  ch_variable* x_ = nullptr;
  ch_variable* t_var_ = nullptr;
  std::vector<int32_t> t_;
  ch_status last_ = CH_OK;
};

TEST_F(GpuStepSync, ATrainingStepMakesNoHostSynchronisation) {
  // A first step makes the lazily created state (cuBLAS handle, pools).
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(forward(t_var_, &loss));
  ASSERT_CH_OK(ch_variable_backward(loss, 0));
  ASSERT_CH_OK(ch_optimizer_update(opt_));
  const double first = value(loss);
  ASSERT_EQ(last_, CH_OK) << ch_error_message();
  ch_variable_release(loss);

  const uint64_t s0 = syncs(), k0 = chainerc::cuda::launch_count(),
                 g0 = chainerc::cuda::gemm_call_count();
  ASSERT_CH_OK(ch_optimizer_zero_grads(opt_));
  ASSERT_CH_OK(forward(t_var_, &loss));
  ASSERT_CH_OK(ch_variable_backward(loss, 0));
  ASSERT_CH_OK(ch_optimizer_update(opt_));
  const uint64_t s1 = syncs();
  EXPECT_EQ(s1 - s0, 0u) << "host synchronisations in a training step";
  std::printf("[   NOTE   ] one step: %llu kernels, %llu cuBLAS GEMM calls, %llu host syncs\n",
              static_cast<unsigned long long>(chainerc::cuda::launch_count() - k0),
              static_cast<unsigned long long>(chainerc::cuda::gemm_call_count() - g0),
              static_cast<unsigned long long>(s1 - s0));
  // Reading the loss is the step's one synchronisation.
  const double second = value(loss);
  ASSERT_EQ(last_, CH_OK) << ch_error_message();
  EXPECT_GE(syncs() - s1, 1u);
  EXPECT_TRUE(std::isfinite(first) && std::isfinite(second));
  EXPECT_LT(second, first) << "one SGD step on the same batch lowers its loss";
  ch_variable_release(loss);
}

TEST_F(GpuStepSync, ABadLabelIsReportedAtTheNextSynchronisation) {
  std::vector<int32_t> bad = t_;
  bad[3] = 12;
  ch_variable* loss = nullptr;
  ch_variable* bad_t = variable(CH_INT32, {kBatch}, bad.data());
  const uint64_t s0 = syncs();
  ASSERT_CH_OK(forward(bad_t, &loss));  // queued: the check runs on the device
  EXPECT_EQ(syncs() - s0, 0u);
  ch_variable_release(bad_t);
  value(loss);
  EXPECT_EQ(last_, CH_ERR_INVALID_ARGUMENT);
  const std::string msg = ch_error_message();
  EXPECT_NE(msg.find("softmax_cross_entropy: label t[3] = 12 is out of range [0, 10)"),
            std::string::npos)
      << msg;
  ch_variable_release(loss);
  // Reported once: the next step is clean.
  ASSERT_CH_OK(forward(t_var_, &loss));
  EXPECT_TRUE(std::isfinite(value(loss)));
  EXPECT_EQ(last_, CH_OK) << ch_error_message();
  ch_variable_release(loss);

  // accuracy: the first bad label of two; reported by ch_cuda_synchronize.
  std::vector<float> scores(kBatch * kOut, 0.5f);
  ch_variable* y = variable(CH_FLOAT32, {kBatch, kOut}, scores.data());
  bad[6] = -1;
  ch_variable* t = variable(CH_INT32, {kBatch}, bad.data());
  ch_variable* acc = nullptr;
  ASSERT_CH_OK(ch_functions_accuracy(&acc, y, t));
  EXPECT_EQ(ch_cuda_synchronize(0), CH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ch_error_message()).find("accuracy: label t[3] = 12"), std::string::npos)
      << ch_error_message();
  EXPECT_EQ(ch_cuda_synchronize(0), CH_OK) << "the check is reported once";
  for (ch_variable* v : {y, t, acc}) ch_variable_release(v);
}

TEST_F(GpuStepSync, ABadIdIsReportedAtTheNextSynchronisation) {
  ch_function* embed = nullptr;
  ASSERT_CH_OK(ch_functions_embed_id_new(&embed, 5, 3, CH_FLOAT32, nullptr));
  ch_function_set* es = nullptr;
  ASSERT_CH_OK(ch_function_set_new(&es));
  ASSERT_CH_OK(ch_function_set_add_function(es, "embed", embed));
  ASSERT_CH_OK(ch_function_set_to_gpu(es, ch_device_cuda(0)));
  const int32_t ids[6] = {0, 1, 4, 2, 7, 9};
  ch_variable* x = variable(CH_INT32, {2, 3}, ids);
  ch_variable* y = nullptr;
  ASSERT_CH_OK(ch_function_apply(embed, &x, 1, &y, 1, nullptr));
  ch_array* a = nullptr;
  ASSERT_CH_OK(ch_variable_data(&a, y));
  std::vector<float> out(18);
  EXPECT_EQ(ch_array_read(a, out.data(), out.size() * sizeof(float)), CH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ch_error_message())
                .find("EmbedID: id 7 at position (1, 1) is out of range [0, 5)"),
            std::string::npos)
      << ch_error_message();
  ch_array_release(a);
  for (ch_variable* v : {x, y}) ch_variable_release(v);
  ch_function_release(embed);
  ch_function_set_release(es);
}

TEST_F(GpuStepSync, TheGradientNormIsOneCopy) {
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(forward(t_var_, &loss));
  ASSERT_CH_OK(ch_variable_backward(loss, 0));
  ASSERT_CH_OK(ch_cuda_synchronize(0));
  const uint64_t s0 = syncs();
  double norm = 0;
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, opt_));
  EXPECT_EQ(syncs() - s0, 1u) << "one copy for the four gradients";
  // Against the norm of the gradients read to the host.
  double sq = 0;
  for (size_t i = 0, n = ch_function_set_parameter_count(set_); i < n; ++i) {
    ch_array *p = nullptr, *g = nullptr;
    ASSERT_CH_OK(ch_function_set_parameter(&p, &g, nullptr, set_, i));
    std::vector<float> v(ch_array_size(g));
    ASSERT_CH_OK(ch_array_read(g, v.data(), v.size() * sizeof(float)));
    for (float e : v) sq += static_cast<double>(e) * e;
    ch_array_release(p);
    ch_array_release(g);
  }
  EXPECT_NEAR(norm, std::sqrt(sq), 1e-12 * std::sqrt(sq));
  EXPECT_GT(norm, 0);
  ch_variable_release(loss);
}

}  // namespace

namespace {

// A batched product is one cuBLAS call (cublas<t>gemmStridedBatched), not one
// per matrix; its result against the products computed on the host.
TEST_F(GpuStepSync, ABatchedProductIsOneCublasCall) {
  constexpr int64_t kB = 4, kM = 3, kK = 5, kN = 2;
  std::vector<float> a(kB * kM * kK), b(kB * kK * kN);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.5f;
  ch_variable* va = variable(CH_FLOAT32, {kB, kM, kK}, a.data());
  ch_variable* vb = variable(CH_FLOAT32, {kB, kK, kN}, b.data());
  const uint64_t g0 = chainerc::cuda::gemm_call_count();
  ch_variable* y = nullptr;
  ASSERT_CH_OK(ch_functions_batch_matmul(&y, va, vb, 0, 0));
  EXPECT_EQ(chainerc::cuda::gemm_call_count() - g0, 1u);
  ch_array* ya = nullptr;
  ASSERT_CH_OK(ch_variable_data(&ya, y));
  std::vector<float> got(kB * kM * kN);
  ASSERT_CH_OK(ch_array_read(ya, got.data(), got.size() * sizeof(float)));
  for (int64_t s = 0; s < kB; ++s)
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        float want = 0;
        for (int64_t k = 0; k < kK; ++k)
          want += a[(s * kM + i) * kK + k] * b[(s * kK + k) * kN + j];
        EXPECT_FLOAT_EQ(got[(s * kM + i) * kN + j], want) << s << " " << i << " " << j;
      }
  ch_array_release(ya);
  for (ch_variable* v : {va, vb, y}) ch_variable_release(v);
}

}  // namespace
