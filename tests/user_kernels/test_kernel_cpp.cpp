// The C++ wrappers ch::ElementwiseKernel and ch::ReductionKernel (<ch/ch.hpp>):
// the seed's MulAdd and a sum of squares, errors as ch::Error. References are
// loops in the test.
#include <gtest/gtest.h>

#include <ch/ch.hpp>
#include <vector>

namespace {

TEST(KernelCpp, MulAddForwardBackwardAndReduction) {
  if (!ch_kernel_cpu_supported()) GTEST_SKIP() << "no CPU kernel compiler (libtcc)";
  const int64_t before = ch::debug::live_handles();
  {
    ch::ElementwiseKernel fwd("T x, T y, T z", "T w", "w = x * y + z", "muladd_fwd");
    ch::ElementwiseKernel bwd("T x, T y, T gw", "T gx, T gy", "gx = y * gw; gy = x * gw;",
                              "muladd_bwd");
    EXPECT_EQ(bwd.output_count(), 2u);
    std::vector<double> xv{1.5, -2, 3}, yv{0.5, 4, -1}, zv{1, 1, 1};
    ch::Array x(xv), y(yv), z(zv);
    auto w = fwd({x, y, z});
    ASSERT_EQ(w.size(), 1u);
    auto wv = w[0].to_vector<double>();
    for (size_t j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(wv[j], xv[j] * yv[j] + zv[j]);
    auto g = bwd({x, y, w[0]});
    ASSERT_EQ(g.size(), 2u);
    auto gx = g[0].to_vector<double>(), gy = g[1].to_vector<double>();
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_DOUBLE_EQ(gx[j], yv[j] * wv[j]);
      EXPECT_DOUBLE_EQ(gy[j], xv[j] * wv[j]);
    }
    // Into a given output.
    ch::Array out = ch::Array::zeros({3}, CH_FLOAT64);
    auto same = fwd.call({x, y, z}, {out});
    EXPECT_EQ(same[0].get(), out.get());
    EXPECT_EQ(out.to_vector<double>(), wv);

    ch::ReductionKernel ss("T x", "T y", "x * x", "a + b", "y = a", "0", "sum_sq");
    ch::Array m(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
    EXPECT_DOUBLE_EQ(ss({m})[0].to_vector<double>()[0], 91.0);  // 1+4+9+16+25+36
    auto rows = ss.call({m}, {1})[0].to_vector<double>();
    EXPECT_EQ(rows, (std::vector<double>{14, 77}));

    try {
      ch::ElementwiseKernel bad("float16 x", "float32 y", "y = x", "bad");
      FAIL() << "must throw";
    } catch (const ch::Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    }
  }
  EXPECT_EQ(ch::debug::live_handles(), before);
}

}  // namespace
