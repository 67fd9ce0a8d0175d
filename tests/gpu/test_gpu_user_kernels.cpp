// User kernels (ch_elementwise_kernel, ch_reduction_kernel) on the emulated
// CUDA devices (-Dcuda-emulation=true): the emulated NVRTC
// (cuda/emulation/user_kernels.cpp) compiles the very CUDA source NVRTC would
// get with the host compiler and runs it on the emulator's fibers. Each
// result on cuda:0 is compared with the same kernel on the CPU (libtcc) and
// with the seed's formula computed here in double: seed 000's MulAdd
// ("w = x * y + z", typed float32 and with the placeholder T, and its
// backward kernel) and a reduction (sum of squares, max). Also: compile
// errors carry the compiler's message, a barrier reached by part of a block
// and a missing barrier are caught, objects are cached in memory and on disk,
// and a missing compiler is CH_ERR_UNSUPPORTED.
#include <ch/ch.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../capi/capi_test_util.h"
#include "cuda/emulation/user_kernels.h"
#include "require_gpu.h"

namespace {

namespace en = chainerc::kernels::emulated_nvrtc;

using capi_test::contains;

struct Arr {
  ch_array* p = nullptr;
  Arr() = default;
  explicit Arr(ch_array* a) : p(a) {}
  ~Arr() { ch_array_release(p); }
  Arr(const Arr&) = delete;
  Arr& operator=(const Arr&) = delete;
  Arr(Arr&& o) noexcept : p(o.p) { o.p = nullptr; }
};

struct Ew {
  ch_elementwise_kernel* p = nullptr;
  Ew(const char* in, const char* out, const char* op, const char* name) {
    EXPECT_EQ(ch_elementwise_kernel_new(&p, in, out, op, name), CH_OK) << ch_error_message();
  }
  ~Ew() { ch_elementwise_kernel_release(p); }
};

struct Red {
  ch_reduction_kernel* p = nullptr;
  Red(const char* in, const char* out, const char* map, const char* reduce, const char* post,
      const char* identity, const char* name) {
    EXPECT_EQ(ch_reduction_kernel_new(&p, in, out, map, reduce, post, identity, name, nullptr),
              CH_OK)
        << ch_error_message();
  }
  ~Red() { ch_reduction_kernel_release(p); }
};

// An array of `dtype` holding `v` (converted) on `device`.
Arr make(ch_dtype dtype, const std::vector<int64_t>& shape, const std::vector<double>& v,
         ch_device device) {
  std::vector<float> f(v.begin(), v.end());
  const void* data = dtype == CH_FLOAT32 ? static_cast<const void*>(f.data()) : v.data();
  ch_array* a = nullptr;
  EXPECT_EQ(ch_array_new(&a, dtype, shape.data(), static_cast<int32_t>(shape.size()), data, device),
            CH_OK)
      << ch_error_message();
  return Arr(a);
}

std::vector<double> values(const ch_array* a) {
  const int64_t n = ch_array_size(a);
  std::vector<double> out(static_cast<size_t>(n));
  if (ch_array_dtype(a) == CH_FLOAT32) {
    std::vector<float> f(static_cast<size_t>(n));
    EXPECT_EQ(ch_array_read(a, f.data(), f.size() * sizeof(float)), CH_OK) << ch_error_message();
    out.assign(f.begin(), f.end());
  } else {
    EXPECT_EQ(ch_array_read(a, out.data(), out.size() * sizeof(double)), CH_OK)
        << ch_error_message();
  }
  return out;
}

std::vector<double> uniform(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// Values as `dtype` holds them.
std::vector<double> rounded(ch_dtype dtype, std::vector<double> v) {
  if (dtype == CH_FLOAT32)
    for (double& x : v) x = static_cast<float>(x);
  return v;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])) continue;
    if (++bad <= 3) ADD_FAILURE() << what << ": [" << i << "] " << got[i] << " vs " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

class GpuUserKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ch_cuda_device_count() < 1) CH_GPU_SKIP() << "no (emulated) CUDA device";
    if (!ch_kernel_cpu_supported()) GTEST_SKIP() << "user kernels do not run on the CPU here";
    ASSERT_EQ(ch_kernel_cuda_supported(), 1);
  }
};

// Runs `k` on the CPU and on `device` with the same inputs; returns both outputs.
std::vector<std::vector<double>> run_both(const Ew& k, ch_dtype dtype,
                                          const std::vector<std::vector<int64_t>>& shapes,
                                          const std::vector<std::vector<double>>& inputs,
                                          size_t n_out, ch_device device) {
  std::vector<std::vector<double>> results;
  for (ch_device d : {ch_device_cpu(), device}) {
    std::vector<Arr> in;
    std::vector<ch_array*> ptrs;
    for (size_t j = 0; j < inputs.size(); ++j) {
      in.push_back(make(dtype, shapes[j], inputs[j], d));
      ptrs.push_back(in.back().p);
    }
    std::vector<ch_array*> out(n_out, nullptr);
    EXPECT_EQ(ch_elementwise_kernel_call(k.p, ptrs.data(), ptrs.size(), out.data(), n_out), CH_OK)
        << ch_error_message();
    for (ch_array* o : out) {
      if (!o) return {};
      EXPECT_EQ(ch_array_device(o).type, d.type);
      results.push_back(values(o));
      ch_array_release(o);
    }
  }
  return results;
}

// Seed 000's MulAdd, forward and backward, on n elements: GPU == CPU, and both
// equal the formula.
void check_muladd(const char* fwd_in, const char* fwd_out, const char* bwd_in, const char* bwd_out,
                  ch_dtype dtype, int64_t n, ch_device device) {
  const double rtol = dtype == CH_FLOAT32 ? 1e-6 : 1e-14;
  const std::string what = std::string(fwd_in) + " n=" + std::to_string(n);
  const size_t un = static_cast<size_t>(n);
  const auto x = rounded(dtype, uniform(un, 1)), y = rounded(dtype, uniform(un, 2)),
             z = rounded(dtype, uniform(un, 3)), gw = rounded(dtype, uniform(un, 4));
  Ew fwd(fwd_in, fwd_out, "w = x * y + z", "muladd_fwd");
  auto r = run_both(fwd, dtype, {{n}, {n}, {n}}, {x, y, z}, 1, device);
  ASSERT_EQ(r.size(), 2u) << what;
  std::vector<double> w(un);
  for (size_t i = 0; i < un; ++i) w[i] = x[i] * y[i] + z[i];
  expect_close(r[1], r[0], rtol, 0, what + ": cuda vs cpu");
  expect_close(r[1], w, rtol, rtol, what + ": cuda vs x*y+z");

  Ew bwd(bwd_in, bwd_out, "gx = y * gw; gy = x * gw;", "muladd_bwd");
  r = run_both(bwd, dtype, {{n}, {n}, {n}}, {x, y, gw}, 2, device);
  ASSERT_EQ(r.size(), 4u) << what;
  std::vector<double> gx(un), gy(un);
  for (size_t i = 0; i < un; ++i) {
    gx[i] = y[i] * gw[i];
    gy[i] = x[i] * gw[i];
  }
  expect_close(r[2], r[0], rtol, 0, what + ": gx cuda vs cpu");
  expect_close(r[3], r[1], rtol, 0, what + ": gy cuda vs cpu");
  expect_close(r[2], gx, rtol, rtol, what + ": gx cuda vs y*gw");
  expect_close(r[3], gy, rtol, rtol, what + ": gy cuda vs x*gw");
}

// Sizes below, at and beyond a block of 256 threads; the large one launches
// 391 blocks (the grid a GPU gets: up to 32 blocks per multiprocessor, 132 on
// the emulated H100), each thread of them a fiber, so it runs once.
const int64_t kSizes[] = {1, 31, 1025};
const int64_t kLarge = 100003;

TEST_F(GpuUserKernels, SeedMulAddTypedFloat32AgreesWithCpu) {
  for (int64_t n : {kSizes[0], kSizes[1], kSizes[2], kLarge})
    check_muladd("float32 x, float32 y, float32 z", "float32 w", "float32 x, float32 y, float32 gw",
                 "float32 gx, float32 gy", CH_FLOAT32, n, ch_device_cuda(0));
}

TEST_F(GpuUserKernels, SeedMulAddWithPlaceholderTAgreesWithCpu) {
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64})
    for (int64_t n : kSizes)
      check_muladd("T x, T y, T z", "T w", "T x, T y, T gw", "T gx, T gy", dt, n,
                   ch_device_cuda(0));
}

TEST_F(GpuUserKernels, MulAddOnTheSecondDeviceAndWithBroadcasting) {
  if (!ch_gpu_test::two_cuda_devices()) CH_GPU_SKIP_NEEDS_TWO() << "one (emulated) CUDA device";
  check_muladd("T x, T y, T z", "T w", "T x, T y, T gw", "T gx, T gy", CH_FLOAT64, 1025,
               ch_device_cuda(1));
  // z broadcast along rows (the general-offset path) and y a scalar.
  Ew k("T x, T y, T z", "T w", "w = x * y + z", "muladd_fwd");
  const auto x = uniform(3 * 517, 5), y = uniform(1, 6), z = uniform(517, 7);
  auto r = run_both(k, CH_FLOAT64, {{3, 517}, {}, {517}}, {x, y, z}, 1, ch_device_cuda(0));
  ASSERT_EQ(r.size(), 2u);
  std::vector<double> w(x.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = x[i] * y[0] + z[i % 517];
  expect_close(r[1], r[0], 1e-14, 0, "broadcast cuda vs cpu");
  expect_close(r[1], w, 1e-14, 1e-14, "broadcast cuda vs formula");
}

// Reductions: rows, columns and everything; sum of squares (identity 0) and
// max (no identity).
TEST_F(GpuUserKernels, ReductionAgreesWithCpu) {
  Red sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq");
  Red maxk("T x", "T y", "x", "a > b ? a : b", "y = a", "", "maxk");
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int32_t> axes;  // empty: all
  };
  // Each output is one block of 256 fibers (a few outputs keep it quick); the
  // last case has every thread of its one block loop ~390 times.
  const Case cases[] = {{{13, 1000}, {1}}, {{300, 13}, {0}}, {{5, 3}, {}}, {{100003}, {}}};
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    for (const Case& c : cases) {
      int64_t n = 1;
      for (int64_t e : c.shape) n *= e;
      const auto x = rounded(dt, uniform(static_cast<size_t>(n), 9));
      for (const Red* k : {&sumsq, &maxk}) {
        std::vector<std::vector<double>> r;
        for (ch_device d : {ch_device_cpu(), ch_device_cuda(0)}) {
          Arr a = make(dt, c.shape, x, d);
          ch_array* out = nullptr;
          const int32_t n_axes =
              c.axes.empty() ? CH_REDUCE_ALL_AXES : static_cast<int32_t>(c.axes.size());
          ASSERT_CH_OK(ch_reduction_kernel_call(k->p, &a.p, 1, &out, 1, c.axes.data(), n_axes, 0));
          EXPECT_EQ(ch_array_device(out).type, d.type);
          r.push_back(values(out));
          ch_array_release(out);
        }
        // The formula, in double: rows of the row-major shape.
        const bool all = c.axes.empty();
        const int64_t rows = all ? 1 : c.shape[c.axes[0] == 1 ? 0 : 1];
        const int64_t len = n / rows;
        std::vector<double> want(static_cast<size_t>(rows));
        for (int64_t o = 0; o < rows; ++o) {
          double acc = k == &sumsq ? 0.0 : -INFINITY;
          for (int64_t j = 0; j < len; ++j) {
            const int64_t idx = all ? j : (c.axes[0] == 1 ? o * len + j : j * rows + o);
            const double v = x[static_cast<size_t>(idx)];
            acc = k == &sumsq ? acc + v * v : std::max(acc, v);
          }
          want[static_cast<size_t>(o)] = acc;
        }
        const std::string what = std::string(k == &sumsq ? "sumsq" : "max") + " " +
                                 ch_dtype_name(dt) + " n=" + std::to_string(n) +
                                 (all ? " all" : " axis " + std::to_string(c.axes[0]));
        // Sums are combined in another order on the GPU (a tree per block);
        // max is exact.
        const double rtol = k == &maxk ? 0 : (dt == CH_FLOAT32 ? 2e-5 : 1e-12);
        expect_close(r[1], r[0], rtol, 0, what + ": cuda vs cpu");
        expect_close(r[1], want, rtol, 0, what + ": cuda vs formula");
      }
    }
  }
}

TEST_F(GpuUserKernels, SourceThatDoesNotCompileGivesTheCompilersMessage) {
  Ew k("T x", "T y", "y = x * no_such_name", "broken_kernel");
  Arr x = make(CH_FLOAT32, {4}, {1, 2, 3, 4}, ch_device_cuda(0));
  ch_array* out = nullptr;
  EXPECT_EQ(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  const std::string m = ch_error_message();
  EXPECT_TRUE(contains(m, "broken_kernel")) << m;
  EXPECT_TRUE(contains(m, "no_such_name")) << m;  // the compiler's diagnostic
  EXPECT_TRUE(contains(m, "emulated NVRTC")) << m;
  // The next good kernel still runs.
  Ew ok("T x", "T y", "y = x + x", "doubler");
  ASSERT_CH_OK(ch_elementwise_kernel_call(ok.p, &x.p, 1, &out, 1));
  EXPECT_EQ(values(out), (std::vector<double>{2, 4, 6, 8}));
  ch_array_release(out);
}

// The prelude's one contract (tests/user_kernels/prelude_contract.h) holds on
// the emulated devices as on the CPU and under NVRTC.
TEST_F(GpuUserKernels, PreludeContractOnTheEmulatedDevice) {
  struct Case {
    const char* in;
    const char* out;
    const char* body;
    bool accepted;
  };
  const Case cases[] = {
      {"float32 x", "float32 y", "y = abs(x)", true},
      {"float32 x", "float32 y", "y = max(x, (float)0)", true},
      {"float32 x", "float32 y", "y = isnan(x) ? 0.0f : x", true},
      {"float32 x", "float32 y", "y = max(x, 0)", false},
      {"float32 x", "float32 y", "y = x + (float)min(i, 3)", false},
      {"int32 a", "int32 b", "b = isnan(a)", false},
  };
  for (const Case& c : cases) {
    Ew k(c.in, c.out, c.body, "contract");
    const ch_dtype dt = c.in[0] == 'i' ? CH_INT32 : CH_FLOAT32;
    std::vector<int32_t> iv = {-3, 2};
    std::vector<float> fv = {-1.5f, 2.0f};
    const int64_t shape[] = {2};
    ch_array* a = nullptr;
    ASSERT_CH_OK(ch_array_new(&a, dt, shape, 1,
                              dt == CH_INT32 ? static_cast<const void*>(iv.data()) : fv.data(),
                              ch_device_cuda(0)));
    ch_array* out = nullptr;
    const ch_status st = ch_elementwise_kernel_call(k.p, &a, 1, &out, 1);
    EXPECT_EQ(st, c.accepted ? CH_OK : CH_ERR_INVALID_ARGUMENT)
        << c.body << ": " << ch_error_message();
    if (st == CH_OK && dt == CH_FLOAT32) {
      const std::vector<double> got = values(out);
      const std::string b = c.body;
      // abs of a float stays a float (1.5, not 1); max(x, 0) and isnan pass 2.
      EXPECT_EQ(got[0], b == "y = abs(x)" ? 1.5 : (contains(b, "max") ? 0.0 : -1.5)) << b;
      EXPECT_EQ(got[1], 2.0) << b;
    }
    ch_array_release(out);
    ch_array_release(a);
  }
}

// A user kernel's __syncthreads is the emulator's: a barrier reached by only
// part of a block is a launch error naming it, and a kernel that misses its
// barrier reads shared memory other threads have not written yet.
TEST_F(GpuUserKernels, BarriersAreCheckedAsForBuiltInKernels) {
  Arr x = make(CH_FLOAT32, {256}, uniform(256, 11), ch_device_cuda(0));
  ch_array* out = nullptr;
  Ew divergent("T x", "T y", "if (i % 2) __syncthreads(); y = x", "divergent_barrier");
  EXPECT_EQ(ch_elementwise_kernel_call(divergent.p, &x.p, 1, &out, 1), CH_ERR_DEVICE);
  std::string m = ch_error_message();
  EXPECT_TRUE(contains(m, "divergent __syncthreads")) << m;
  EXPECT_TRUE(contains(m, "divergent_barrier")) << m;
  EXPECT_TRUE(contains(m, "128 of 256")) << m;
  ch_array_release(out);
  out = nullptr;

  // Reverse the block through shared memory: with the barrier every thread
  // reads what another wrote; without it, stale zeros.
  const auto xs = values(x.p);
  for (bool barrier : {true, false}) {
    const std::string op = std::string("__shared__ float buf[256]; buf[threadIdx.x] = x; ") +
                           (barrier ? "__syncthreads(); " : "") + "y = buf[255 - threadIdx.x]";
    Ew k("float32 x", "float32 y", op.c_str(), barrier ? "reverse" : "reverse_no_barrier");
    ASSERT_CH_OK(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1));
    const auto ys = values(out);
    ch_array_release(out);
    out = nullptr;
    size_t right = 0;
    for (size_t i = 0; i < 256; ++i) right += ys[i] == xs[255 - i];
    if (barrier)
      EXPECT_EQ(right, 256u);
    else
      EXPECT_LT(right, 256u) << "the emulator's shuffled order should expose the missing barrier";
  }
}

// Host threads launching at once, on both devices: each thread has its own
// fibers and the object reads the launching thread's state.
TEST_F(GpuUserKernels, ConcurrentLaunchesFromHostThreads) {
  const int devices = ch_gpu_test::two_cuda_devices() ? 2 : 1;
  Red sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq");
  const int64_t rows = 7, len = 300;
  const auto xs = uniform(static_cast<size_t>(rows * len), 14);
  std::vector<double> want(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < len; ++j) want[r] += xs[r * len + j] * xs[r * len + j];
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Arr a = make(CH_FLOAT64, {rows, len}, xs, ch_device_cuda(t % devices));
      const int32_t axis = 1;
      for (int rep = 0; rep < 3; ++rep) {
        ch_array* out = nullptr;
        if (ch_reduction_kernel_call(sumsq.p, &a.p, 1, &out, 1, &axis, 1, 0) != CH_OK) return;
        got[t] = values(out);
        ch_array_release(out);
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) expect_close(got[t], want, 1e-12, 0, "thread " + std::to_string(t));
}

// Warp shuffles and __trap in a user kernel reach the emulator through the
// object's function table like barriers do.
TEST_F(GpuUserKernels, WarpShufflesAndTrapReachTheEmulator) {
  const auto xs = uniform(64, 13);
  Arr x = make(CH_FLOAT64, {64}, xs, ch_device_cuda(0));
  ch_array* out = nullptr;
  Ew swap("T x", "T y", "y = __shfl_xor_sync(0xffffffffu, x, 1)", "swap_pairs");
  ASSERT_CH_OK(ch_elementwise_kernel_call(swap.p, &x.p, 1, &out, 1));
  const auto ys = values(out);
  ch_array_release(out);
  out = nullptr;
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(ys[i], xs[i ^ 1]) << i;

  Ew trap("T x", "T y", "if (i == 37) __trap(); y = x", "traps_at_37");
  EXPECT_EQ(ch_elementwise_kernel_call(trap.p, &x.p, 1, &out, 1), CH_ERR_DEVICE);
  const std::string m = ch_error_message();
  EXPECT_TRUE(contains(m, "__trap()")) << m;
  EXPECT_TRUE(contains(m, "traps_at_37")) << m;
  ch_array_release(out);
}

// Objects are compiled once per source: again in the process from memory,
// after forget_loaded from the disk cache, on another device from memory.
TEST_F(GpuUserKernels, CompiledObjectsAreCached) {
  char dir_template[] = "/tmp/chainerc-emu-cache-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const char* old = std::getenv("CH_KERNEL_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("CH_KERNEL_CACHE_DIR", dir_template, 1);

  Ew k("T x", "T y", "y = x * (T)3 + (T)0.25", "cache_probe");
  Arr x = make(CH_FLOAT64, {40}, uniform(40, 12), ch_device_cuda(0));
  const long long c0 = en::compile_count(), l0 = en::load_count();
  ch_array* out = nullptr;
  ASSERT_CH_OK(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1));
  ch_array_release(out);
  out = nullptr;
  EXPECT_EQ(en::compile_count(), c0 + 1);
  EXPECT_EQ(en::load_count(), l0 + 1);
  ASSERT_CH_OK(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1));
  ch_array_release(out);
  out = nullptr;
  EXPECT_EQ(en::compile_count(), c0 + 1);  // memory
  EXPECT_EQ(en::load_count(), l0 + 1);
  en::forget_loaded();
  ASSERT_CH_OK(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1));
  EXPECT_EQ(en::compile_count(), c0 + 1);  // disk
  EXPECT_EQ(en::load_count(), l0 + 2);
  const auto xs = values(x.p), ys = values(out);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(ys[i], xs[i] * 3 + 0.25);
  ch_array_release(out);

  if (saved.empty())
    unsetenv("CH_KERNEL_CACHE_DIR");
  else
    setenv("CH_KERNEL_CACHE_DIR", saved.c_str(), 1);
  const std::string rm = std::string("rm -rf ") + dir_template;
  EXPECT_EQ(std::system(rm.c_str()), 0);
}

TEST_F(GpuUserKernels, NoCompilerIsUnsupported) {
  std::string why;
  EXPECT_FALSE(en::compiler(&why).empty()) << why;
  setenv("CH_EMU_CXX", "/nonexistent/c++", 1);
  EXPECT_TRUE(en::compiler(&why).empty());
  Ew k("T x", "T y", "y = x - (T)1", "needs_a_compiler");
  Arr x = make(CH_FLOAT32, {3}, {1, 2, 3}, ch_device_cuda(0));
  ch_array* out = nullptr;
  EXPECT_EQ(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1), CH_ERR_UNSUPPORTED);
  const std::string m = ch_error_message();
  unsetenv("CH_EMU_CXX");
  EXPECT_TRUE(contains(m, "/nonexistent/c++")) << m;
  EXPECT_TRUE(contains(m, "needs_a_compiler")) << m;
  ASSERT_CH_OK(ch_elementwise_kernel_call(k.p, &x.p, 1, &out, 1));  // with the compiler again
  EXPECT_EQ(values(out), (std::vector<double>{0, 1, 2}));
  ch_array_release(out);
}

}  // namespace
