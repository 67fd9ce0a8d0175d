// CH_GPU_SKIP(): GTEST_SKIP() for a test that cannot run for want of a GPU
// (no device, a driver too old, one device where two are needed), except
// under CH_REQUIRE_GPU=1, where the same line is a failure: on a machine that
// must test the GPU, no GPU test may quietly skip. Stream the reason after it:
//   if (count == 0) CH_GPU_SKIP() << "no CUDA device: " << reason;
// CH_GPU_SKIP_NEEDS_TWO(): the same for a test that needs cuda:1, except that
// CH_REQUIRE_GPU=1 lets it skip on a machine with one GPU (bench/gpu/
// device_check.sh's one-chip loan); CH_REQUIRE_GPU=2 makes it a failure too.
#pragma once

#include <ch/ch.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace ch_gpu_test {
inline bool require_gpu() {
  const char* v = std::getenv("CH_REQUIRE_GPU");
  return v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "2") == 0);
}
inline bool require_two_gpus() {
  const char* v = std::getenv("CH_REQUIRE_GPU");
  return v && std::strcmp(v, "2") == 0;
}
// A one-device machine under CH_REQUIRE_GPU=1: the test skips (the GPU is
// there; the second one is not what is being required).
inline bool require_second_gpu() {
  return require_two_gpus() || (require_gpu() && ch_cuda_device_count() == 0);
}
// Whether cuda:1 exists (the emulated pass always has two devices).
inline bool two_cuda_devices() { return ch_cuda_device_count() >= 2; }
}  // namespace ch_gpu_test

#define CH_GPU_SKIP()                                                                      \
  return GTEST_MESSAGE_("", ::ch_gpu_test::require_gpu()                                   \
                                ? ::testing::TestPartResult::kFatalFailure                 \
                                : ::testing::TestPartResult::kSkip)                        \
         << (::ch_gpu_test::require_gpu() ? "CH_REQUIRE_GPU=1 turns this GPU test's skip " \
                                            "into a failure: "                             \
                                          : "")

#define CH_GPU_SKIP_NEEDS_TWO()                                                            \
  return GTEST_MESSAGE_("", ::ch_gpu_test::require_second_gpu()                            \
                                ? ::testing::TestPartResult::kFatalFailure                 \
                                : ::testing::TestPartResult::kSkip)                        \
         << (::ch_gpu_test::require_second_gpu() ? "CH_REQUIRE_GPU turns this two-device " \
                                                   "test's skip into a failure: "          \
                                                 : "")
