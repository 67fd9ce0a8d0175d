// The CUDA op kernels' building blocks on the emulated devices and on the
// host (-Dcuda-emulation=true; suite 'gpu'):
// - FastDivider (cuda/ops/index.cuh) against the `/` and `%` of C++, in 32
//   and 64 bits, at the edges of its range (n up to 2^31 - 1 and 2^63 - 1,
//   divisors near powers of two) and on random values;
// - OffsetCalc against a plain walk of the axes, for broadcast and permuted
//   strides of rank 1 to 6, with extents whose product passes 2^31 and 2^32
//   (index arithmetic only: no allocation that large);
// - the element-wise kernels of cuda/ops/elementwise.cuh on aligned and
//   misaligned pointers and sizes around the vector width, against a host loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/array.h"
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/index.cuh"
#include "kernels/pointwise/activation.h"
#include "kernels/pointwise/arithmetic.h"
#include "tests/gpu/require_gpu.h"

namespace {

using chainerc::cuda::FastDivider;
using chainerc::cuda::make_offset_calc;
using chainerc::cuda::OffsetCalc;

template <typename U>
void expect_divides(U d, U n) {
  const FastDivider<U> f(d);
  ASSERT_EQ(f.div(n), n / d) << "n = " << n << ", d = " << d;
}

TEST(FastDivider, ThirtyTwoBitsAtTheEdges) {
  const uint32_t top = INT32_MAX;  // the largest n (and d) of the 32-bit form
  std::vector<uint32_t> ds = {1, 2, 3, 5, 6, 7, 641, 1000, 65535, 65536, 65537, top - 1, top};
  for (int s = 1; s < 31; ++s)
    for (int64_t e : {-1, 0, 1}) ds.push_back(static_cast<uint32_t>((int64_t{1} << s) + e));
  for (uint32_t d : ds) {
    for (uint32_t n = 0; n < 2000; ++n) expect_divides(d, n);
    for (uint32_t k = 0; k < 2000; ++k) expect_divides(d, top - k);
    // Around the multiples of d, where a rounding error would show first.
    for (uint64_t q : {uint64_t{1}, uint64_t{2}, uint64_t{top / d}, uint64_t{top / d / 2 + 1}})
      for (int64_t e : {-1, 0, 1}) {
        const int64_t n = static_cast<int64_t>(q * d) + e;
        if (n >= 0 && n <= top) expect_divides(d, static_cast<uint32_t>(n));
      }
  }
  std::mt19937_64 rng(46);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t d = static_cast<uint32_t>(rng() % top) + 1,
                   n = static_cast<uint32_t>(rng() % top);
    expect_divides(d, n);
    expect_divides(static_cast<uint32_t>(rng() % 4096 + 1), n);
  }
}

TEST(FastDivider, SixtyFourBitsAtTheEdges) {
  const uint64_t top = INT64_MAX;
  std::vector<uint64_t> ds = {1,
                              2,
                              3,
                              7,
                              1000,
                              65537,
                              uint64_t{1} << 32,
                              (uint64_t{1} << 32) + 1,
                              (uint64_t{1} << 31) - 1,
                              1000000007,
                              top / 3,
                              top - 1,
                              top};
  for (int s = 1; s < 63; s += 3)
    for (int64_t e : {-1, 0, 1}) ds.push_back((uint64_t{1} << s) + e);
  for (uint64_t d : ds) {
    for (uint64_t n = 0; n < 500; ++n) expect_divides(d, n);
    for (uint64_t k = 0; k < 500; ++k) expect_divides(d, top - k);
    for (uint64_t n : {uint64_t{INT32_MAX}, uint64_t{INT32_MAX} + 1, uint64_t{UINT32_MAX},
                       uint64_t{UINT32_MAX} + 1, uint64_t{1} << 40, (uint64_t{1} << 62) + 12345})
      expect_divides(d, n);
    for (uint64_t q : {uint64_t{1}, uint64_t{2}, top / d, top / d / 2 + 1})
      for (int e : {-1, 0, 1}) {
        const chainerc::cuda::uint128_host n = static_cast<chainerc::cuda::uint128_host>(q) * d + e;
        if (n <= top) expect_divides(d, static_cast<uint64_t>(n));
      }
  }
  std::mt19937_64 rng(4646);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t n = rng() % top;
    expect_divides(rng() % top + 1, n);
    expect_divides(rng() % (uint64_t{1} << 40) + 1, n);
    expect_divides(rng() % 100000 + 1, n);
  }
}

// The offset of flat index i through (extent, stride) by plain division.
int64_t naive_offset(const std::vector<int64_t>& extent, const std::vector<int64_t>& stride,
                     int64_t i) {
  int64_t off = 0;
  for (size_t d = extent.size(); d-- > 0;) {
    off += (i % extent[d]) * stride[d];
    i /= extent[d];
  }
  return off;
}

// Row-major strides of `extent`, with those of `broadcast` axes set to 0.
std::vector<int64_t> strides_of(const std::vector<int64_t>& extent,
                                const std::vector<bool>& bcast) {
  std::vector<int64_t> s(extent.size());
  int64_t k = 1;
  for (size_t d = extent.size(); d-- > 0;) {
    s[d] = bcast[d] ? 0 : k;
    if (!bcast[d]) k *= extent[d];
  }
  return s;
}

template <typename U>
void expect_offsets(const std::vector<int64_t>& extent, const std::vector<int64_t>& sa,
                    const std::vector<int64_t>& sb, const std::vector<int64_t>& indices) {
  const int64_t* const strides[2] = {sa.data(), sb.data()};
  const OffsetCalc<U, 2> oc =
      make_offset_calc<U, 2>(static_cast<int32_t>(extent.size()), extent.data(), strides);
  for (int64_t i : indices) {
    U off[2];
    oc.get(static_cast<U>(i), off);
    ASSERT_EQ(static_cast<int64_t>(off[0]), naive_offset(extent, sa, i)) << "index " << i;
    ASSERT_EQ(static_cast<int64_t>(off[1]), naive_offset(extent, sb, i)) << "index " << i;
  }
}

TEST(OffsetCalc, BroadcastAndPermutedStridesOfRankOneToSix) {
  std::mt19937_64 rng(7);
  for (int rank = 1; rank <= 6; ++rank)
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<int64_t> extent(rank);
      std::vector<bool> ba(rank), bb(rank);
      for (int d = 0; d < rank; ++d) {
        extent[d] = static_cast<int64_t>(rng() % 6) + 1;  // extents of 1 are dropped
        ba[d] = rng() % 3 == 0;
        bb[d] = rng() % 2 == 0;
      }
      int64_t n = 1;
      for (int64_t e : extent) n *= e;
      std::vector<int64_t> sa = strides_of(extent, ba), sb = strides_of(extent, bb);
      if (trial % 3 == 0) {
        // b read through a permutation of its axes (a transpose's walk)
        std::vector<bool> none(rank, false);
        std::vector<int64_t> contiguous = strides_of(extent, none);
        std::shuffle(contiguous.begin(), contiguous.end(), rng);
        sb = contiguous;
      }
      std::vector<int64_t> all(n);
      for (int64_t i = 0; i < n; ++i) all[i] = i;
      expect_offsets<uint32_t>(extent, sa, sb, all);
      expect_offsets<uint64_t>(extent, sa, sb, all);
    }
}

TEST(OffsetCalc, MergedAxesCostNoDivision) {
  // A contiguous (4, 5, 6) with an operand broadcast over the two leading
  // axes: a's axes all merge, b's trailing axis stands alone.
  const std::vector<int64_t> extent = {4, 5, 6}, sa = {30, 6, 1}, sb = {0, 0, 1};
  const int64_t* const strides[2] = {sa.data(), sb.data()};
  const auto oc = make_offset_calc<uint32_t, 2>(3, extent.data(), strides);
  EXPECT_EQ(oc.ndim, 2);
  EXPECT_EQ(oc.div[0].d, 6u);
  EXPECT_EQ(oc.div[1].d, 20u);
  const int64_t* const one[1] = {sa.data()};
  EXPECT_EQ((make_offset_calc<uint32_t, 1>(3, extent.data(), one).ndim), 1);
}

TEST(OffsetCalc, SixtyFourBitIndicesBeyondTwoToTheThirtyTwo) {
  // (3, 50000, 40000): 6e9 elements; (1, 50000, 1) and (3, 1, 40000) operands.
  const std::vector<int64_t> extent = {3, 50000, 40000};
  const std::vector<int64_t> sa = {0, 1, 0}, sb = {40000, 0, 1};
  const int64_t n = 3LL * 50000 * 40000;
  std::vector<int64_t> idx = {0,
                              1,
                              39999,
                              40000,
                              INT32_MAX - 1,
                              INT32_MAX,
                              INT32_MAX + 1LL,
                              UINT32_MAX,
                              UINT32_MAX + 1LL,
                              n / 3,
                              n / 3 + 1,
                              2 * n / 3,
                              n - 40001,
                              n - 1};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100000; ++i) idx.push_back(static_cast<int64_t>(rng() % n));
  expect_offsets<uint64_t>(extent, sa, sb, idx);
  // And a rank-6 result of 2^33 elements with every other axis broadcast.
  const std::vector<int64_t> e6 = {16, 16, 16, 16, 32, 4096};
  const std::vector<int64_t> s6 = strides_of(e6, {true, false, true, false, true, false});
  const std::vector<int64_t> t6 = strides_of(e6, {false, true, false, true, false, false});
  const int64_t n6 = int64_t{1} << 33;
  std::vector<int64_t> idx6 = {0, INT32_MAX, UINT32_MAX, UINT32_MAX + 1LL, n6 - 1};
  for (int i = 0; i < 100000; ++i) idx6.push_back(static_cast<int64_t>(rng() % n6));
  expect_offsets<uint64_t>(e6, s6, t6, idx6);
}

TEST(OffsetCalc, TheThirtyTwoBitFormIsChosenOnlyBelowTwoToTheThirtyOne) {
  EXPECT_TRUE(chainerc::cuda::index_fits_32(INT32_MAX));
  EXPECT_FALSE(chainerc::cuda::index_fits_32(int64_t{INT32_MAX} + 1));
  // The largest 32-bit result: its last index and offsets are exact.
  const std::vector<int64_t> extent = {32767, 65537}, sa = {65537, 1}, sb = {1, 0};
  ASSERT_LE(32767LL * 65537, INT32_MAX);
  expect_offsets<uint32_t>(extent, sa, sb, {0, 65536, 65537, 32767LL * 65537 - 1});
}

// ---- Element-wise kernels on aligned and misaligned pointers

using chainerc::Array;
using chainerc::Device;
using chainerc::DType;
using chainerc::Shape;
namespace pointwise = chainerc::pointwise;

class GpuKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ch_cuda_device_count() < 1) CH_GPU_SKIP() << "no CUDA device";
  }
};

// Device buffers of `n` elements (plus room to start up to 3 elements late),
// filled from the host.
template <typename T>
struct DeviceBuffer {
  Array array;
  explicit DeviceBuffer(const std::vector<T>& host)
      : array(Array::empty(sizeof(T) == 4 ? DType::Float32 : DType::Float64,
                           Shape{static_cast<int64_t>(host.size()) + 4},
                           Device{CH_DEVICE_CUDA, 0})) {
    write(host);
  }
  T* at(int64_t offset) { return array.data<T>() + offset; }
  void write(const std::vector<T>& host) {
    ASSERT_EQ(
        cudaMemcpy(array.data<T>(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
        cudaSuccess);
  }
  std::vector<T> read(int64_t offset, int64_t n) {
    std::vector<T> h(static_cast<size_t>(n));
    EXPECT_EQ(cudaMemcpy(h.data(), at(offset), h.size() * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return h;
  }
};

template <typename T>
std::vector<T> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

TEST_F(GpuKernels, PackWidthFollowsTheAlignmentOfEveryPointer) {
  DeviceBuffer<float> f(std::vector<float>(8, 0.f));
  DeviceBuffer<double> d(std::vector<double>(8, 0.));
  EXPECT_EQ(chainerc::cuda::pack_width<float>({f.at(0), f.at(4)}), 4);
  EXPECT_EQ(chainerc::cuda::pack_width<float>({f.at(0), f.at(1)}), 1);
  EXPECT_EQ(chainerc::cuda::pack_width<float>({f.at(2)}), 1);
  EXPECT_EQ(chainerc::cuda::pack_width<double>({d.at(0), d.at(2)}), 2);
  EXPECT_EQ(chainerc::cuda::pack_width<double>({d.at(0), d.at(1)}), 1);
}

// Every map form at sizes around the pack width and beyond the emulator's
// grid, with each pointer aligned or one element off, against a host loop of
// the same functors (exact: the same operations in the same precision).
template <typename T>
void check_maps() {
  const pointwise::Add add{};
  const pointwise::Relu relu{};
  const pointwise::MulScalar mul_s{};
  for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 33, 1025, 4099, 100003}) {
    const std::vector<T> ha = random_values<T>(n, 1), hb = random_values<T>(n, 2);
    for (int oa = 0; oa < 2; ++oa)
      for (int ob = 0; ob < 2; ++ob)
        for (int oy = 0; oy < 2; ++oy) {
          SCOPED_TRACE(testing::Message() << "n " << n << " offsets " << oa << ob << oy << " "
                                          << sizeof(T) * 8 << "-bit");
          DeviceBuffer<T> a(ha), b(hb), y(std::vector<T>(static_cast<size_t>(n), T(7)));
          // a at oa, b at ob: copy the data there first.
          std::vector<T> pa(static_cast<size_t>(n) + oa), pb(static_cast<size_t>(n) + ob);
          std::copy(ha.begin(), ha.end(), pa.begin() + oa);
          std::copy(hb.begin(), hb.end(), pb.begin() + ob);
          a.write(pa);
          b.write(pb);
          chainerc::cuda::map2<pointwise::Add, T>("test", a.at(oa), b.at(ob), y.at(oy), n);
          std::vector<T> got = y.read(oy, n);
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], add(ha[i], hb[i])) << "add at " << i;
          chainerc::cuda::map<pointwise::Relu, T>("test", a.at(oa), y.at(oy), n);
          got = y.read(oy, n);
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], relu(ha[i])) << "relu at " << i;
          chainerc::cuda::map_scalar<pointwise::MulScalar, T>("test", b.at(ob), T(3), y.at(oy), n);
          got = y.read(oy, n);
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], mul_s(hb[i], T(3))) << "mul at " << i;
          // In place: a = a + b, then the element before and after untouched.
          chainerc::cuda::map2<pointwise::Add, T>("test", a.at(oa), b.at(ob), a.at(oa), n);
          const std::vector<T> around = a.read(0, n + 2);
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(around[oa + i], add(ha[i], hb[i])) << "in place at " << i;
          if (oa == 1) {
            EXPECT_EQ(around[0], T(0));
          }
        }
  }
}

TEST_F(GpuKernels, MapsOnAlignedAndMisalignedFloat32) { check_maps<float>(); }
TEST_F(GpuKernels, MapsOnAlignedAndMisalignedFloat64) { check_maps<double>(); }

}  // namespace
