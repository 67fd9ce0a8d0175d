// User kernels on CUDA, through chainerc's internal interface: NVRTC
// compilation of the generated sources for sm_90 (no GPU needed), the
// compile-error path, the disk cache (hits across processes, corrupt files,
// CH_KERNEL_CACHE_DIR and its defaults), and launches on a real device,
// which skip when there is none.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "../gpu/require_gpu.h"
#include "core/error.h"
#include "disk_cache.h"
#include "nvrtc_compiler.h"
#include "prelude_contract.h"
#include "user_kernels/codegen.h"
#include "user_kernels/user_kernel.h"

using namespace chainerc;
using namespace chainerc::kernels;

namespace {

// A fresh cache directory, set as CH_KERNEL_CACHE_DIR for the test's life.
class CacheDir {
 public:
  CacheDir() {
    char tmpl[] = "/tmp/chainerc-kcache-XXXXXX";
    const char* d = mkdtemp(tmpl);
    path_ = d ? d : "";
    const char* old = std::getenv("CH_KERNEL_CACHE_DIR");
    had_old_ = old != nullptr;
    if (old) old_ = old;
    setenv("CH_KERNEL_CACHE_DIR", path_.c_str(), 1);
  }
  ~CacheDir() {
    if (had_old_)
      setenv("CH_KERNEL_CACHE_DIR", old_.c_str(), 1);
    else
      unsetenv("CH_KERNEL_CACHE_DIR");
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_, old_;
  bool had_old_ = false;
};

std::string muladd_source(DType dt) {
  ElementwiseKernel k("T x, T y, T z", "T w", "w = x * y + z", "muladd_fwd");
  return elementwise_source(k, TypeMap{{"T", dt}}, "CGSC", Target::Cuda);
}

bool is_elf(const std::string& bin) {
  return bin.size() > 4 && bin.compare(0, 4,
                                       "\x7f"
                                       "ELF") == 0;
}

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

TEST(Nvrtc, ElementwiseSourcesCompileForSm90) {
  CacheDir dir;
  for (DType dt : {DType::Float32, DType::Float64}) {
    nvrtc::Result r = nvrtc::compile(muladd_source(dt), "muladd_fwd", "sm_90");
    EXPECT_TRUE(is_elf(r.binary)) << "CUBIN expected";
    EXPECT_FALSE(r.from_cache);
  }
  // Every access mode, raw inputs, two outputs, math functions, int32.
  ElementwiseKernel k(
      "raw T x, T y, float32 s, int32 n", "T gx, float64 gy, int32 m",
      "gx = x[i] * y + (T)expf(s); gy = tanh((double)y) + max(1.0, sqrt(2.0)); m = n + (int)i; "
      "if (isnan(y)) gx = INFINITY;",
      "modes_kernel");
  std::string src = elementwise_source(k, TypeMap{{"T", DType::Float32}}, "RGSCCCC", Target::Cuda);
  EXPECT_TRUE(is_elf(nvrtc::compile(src, "modes_kernel", "sm_90").binary));
}

TEST(Nvrtc, ReductionSourcesCompileForSm90) {
  CacheDir dir;
  ReductionKernel with_id("T x, T w", "T y, float64 n", "x * w", "a + b",
                          "y = a; n = sqrt((double)a)", "0", "dot_r", "");
  ReductionKernel no_id("T x", "T y", "x", "max(a, b)", "y = a", "", "max_r", "");
  for (DType dt : {DType::Float32, DType::Float64}) {
    TypeMap t{{"T", dt}};
    EXPECT_TRUE(is_elf(
        nvrtc::compile(reduction_source(with_id, t, dt, "LGCC", Target::Cuda), "dot_r", "sm_90")
            .binary));
    EXPECT_TRUE(
        is_elf(nvrtc::compile(reduction_source(no_id, t, dt, "GC", Target::Cuda), "max_r", "sm_90")
                   .binary));
  }
}

TEST(Nvrtc, SyntaxErrorCarriesNvrtcLog) {
  CacheDir dir;
  ElementwiseKernel bad("T x", "T y", "y = x * ;", "broken_gpu_kernel");
  std::string src = elementwise_source(bad, TypeMap{{"T", DType::Float32}}, "CC", Target::Cuda);
  try {
    nvrtc::compile(src, "broken_gpu_kernel", "sm_90");
    FAIL() << "a syntax error must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    std::string msg = e.what();
    EXPECT_NE(msg.find("broken_gpu_kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error"), std::string::npos) << msg;  // NVRTC's log
    EXPECT_NE(msg.find("sm_90"), std::string::npos) << msg;
  }
  // Nothing cached for it, and NVRTC keeps working.
  EXPECT_TRUE(is_elf(nvrtc::compile(muladd_source(DType::Float32), "muladd_fwd", "sm_90").binary));
}

TEST(Nvrtc, DiskCacheHitInThisAndAnotherProcess) {
  CacheDir dir;
  const std::string src = muladd_source(DType::Float32);
  const long long before = nvrtc::compile_count();
  nvrtc::Result first = nvrtc::compile(src, "muladd_fwd", "sm_90");
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(nvrtc::compile_count(), before + 1);
  ASSERT_EQ(first.cache_file.rfind(dir.path() + "/", 0), 0u) << first.cache_file;
  EXPECT_TRUE(file_exists(first.cache_file));
  nvrtc::Result second = nvrtc::compile(src, "muladd_fwd", "sm_90");
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.binary, first.binary);
  EXPECT_EQ(nvrtc::compile_count(), before + 1);
  // Another architecture is another entry.
  EXPECT_FALSE(nvrtc::compile(src, "muladd_fwd", "sm_80").from_cache);

  // A second process (fork) finds the entry without compiling.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 3;
    try {
      const long long c0 = nvrtc::compile_count();
      nvrtc::Result r = nvrtc::compile(src, "muladd_fwd", "sm_90");
      code = (r.from_cache && r.binary == first.binary && nvrtc::compile_count() == c0) ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child process missed the disk cache";
  // No temporary files are left behind.
  std::string cmd = "ls -a '" + dir.path() + "' | grep -q tmp";
  EXPECT_NE(std::system(cmd.c_str()), 0);
}

TEST(Nvrtc, CorruptOrTruncatedCacheFileIsRebuilt) {
  CacheDir dir;
  const std::string src = muladd_source(DType::Float64);
  nvrtc::Result first = nvrtc::compile(src, "muladd_fwd", "sm_90");
  ASSERT_TRUE(file_exists(first.cache_file));
  struct stat st;
  ASSERT_EQ(stat(first.cache_file.c_str(), &st), 0);
  // Truncated to half.
  ASSERT_EQ(truncate(first.cache_file.c_str(), st.st_size / 2), 0);
  nvrtc::Result r = nvrtc::compile(src, "muladd_fwd", "sm_90");
  EXPECT_FALSE(r.from_cache);
  EXPECT_EQ(r.binary, first.binary);
  EXPECT_TRUE(nvrtc::compile(src, "muladd_fwd", "sm_90").from_cache);  // rewritten
  // Same size, one payload byte flipped (the checksum catches it).
  {
    std::fstream f(first.cache_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(st.st_size - 10);
    char c = 0;
    f.read(&c, 1);
    f.seekp(st.st_size - 10);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  r = nvrtc::compile(src, "muladd_fwd", "sm_90");
  EXPECT_FALSE(r.from_cache);
  EXPECT_EQ(r.binary, first.binary);
  // Garbage and an empty file.
  {
    std::ofstream f(first.cache_file, std::ios::binary | std::ios::trunc);
    f << "not a cache file";
  }
  EXPECT_FALSE(nvrtc::compile(src, "muladd_fwd", "sm_90").from_cache);
  { std::ofstream f(first.cache_file, std::ios::binary | std::ios::trunc); }
  EXPECT_FALSE(nvrtc::compile(src, "muladd_fwd", "sm_90").from_cache);
  EXPECT_TRUE(nvrtc::compile(src, "muladd_fwd", "sm_90").from_cache);
}

TEST(Nvrtc, CacheDirectoryFromEnvironment) {
  CacheDir dir;
  EXPECT_EQ(disk_cache::directory(), dir.path());
  // A directory that does not exist yet is created.
  const std::string nested = dir.path() + "/a/b";
  setenv("CH_KERNEL_CACHE_DIR", nested.c_str(), 1);
  nvrtc::Result r = nvrtc::compile(muladd_source(DType::Float32), "muladd_fwd", "sm_90");
  EXPECT_EQ(r.cache_file.rfind(nested + "/", 0), 0u) << r.cache_file;
  EXPECT_TRUE(file_exists(r.cache_file));
  // Defaults: $XDG_CACHE_HOME/chainerc/kernels, else ~/.cache/chainerc/kernels.
  unsetenv("CH_KERNEL_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string old_xdg = xdg ? xdg : "";
  setenv("XDG_CACHE_HOME", dir.path().c_str(), 1);
  EXPECT_EQ(disk_cache::directory(), dir.path() + "/chainerc/kernels");
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home) {
    EXPECT_EQ(disk_cache::directory(), std::string(home) + "/.cache/chainerc/kernels");
  }
  if (xdg) setenv("XDG_CACHE_HOME", old_xdg.c_str(), 1);
}

TEST(Nvrtc, DiskCacheRejectsAnotherKeyWithTheSameFile) {
  CacheDir dir;
  ASSERT_TRUE(disk_cache::store(dir.path(), "key-a", "payload-a"));
  std::string p;
  EXPECT_TRUE(disk_cache::load(dir.path(), "key-a", &p));
  EXPECT_EQ(p, "payload-a");
  // Copy a's file over b's name: the stored key does not match, so a miss.
  std::string cmd = "cp '" + disk_cache::path_for(dir.path(), "key-a") + "' '" +
                    disk_cache::path_for(dir.path(), "key-b") + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_FALSE(disk_cache::load(dir.path(), "key-b", &p));
  EXPECT_FALSE(disk_cache::load("", "key-a", &p));
  EXPECT_FALSE(disk_cache::store("", "key-a", "x"));
}

// ---- launches on a device (skipped without one) --------------------------------

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// A float array on cuda:0 holding `v`, owning cudaMalloc'd memory.
Array device_array(DType dt, const Shape& shape, const std::vector<double>& v) {
  const size_t n = static_cast<size_t>(shape.size()), es = dtype_size(dt);
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(1, n * es)) != cudaSuccess)
    throw std::runtime_error("cudaMalloc");
  std::vector<unsigned char> host(n * es);
  for (size_t j = 0; j < n; ++j) {
    if (dt == DType::Float32)
      reinterpret_cast<float*>(host.data())[j] = static_cast<float>(v[j]);
    else if (dt == DType::Float64)
      reinterpret_cast<double*>(host.data())[j] = v[j];
    else
      reinterpret_cast<int*>(host.data())[j] = static_cast<int>(v[j]);
  }
  if (n) cudaMemcpy(p, host.data(), n * es, cudaMemcpyHostToDevice);
  auto release = [](void* d, void*) { cudaFree(d); };
  return Array(Buffer::wrap(p, n * es, Device{CH_DEVICE_CUDA, 0}, release, nullptr), dt, shape);
}

std::vector<double> to_host(const Array& a) {
  const size_t n = static_cast<size_t>(a.size()), es = dtype_size(a.dtype());
  std::vector<unsigned char> host(n * es);
  if (n) {
    EXPECT_EQ(cudaMemcpy(host.data(), a.raw(), n * es, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  std::vector<double> v(n);
  for (size_t j = 0; j < n; ++j) {
    if (a.dtype() == DType::Float32)
      v[j] = reinterpret_cast<float*>(host.data())[j];
    else if (a.dtype() == DType::Float64)
      v[j] = reinterpret_cast<double*>(host.data())[j];
    else
      v[j] = reinterpret_cast<int*>(host.data())[j];
  }
  return v;
}

std::vector<double> wave(size_t n, double phase) {
  std::vector<double> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = std::sin(static_cast<double>(k) + phase);
  return v;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j)
    EXPECT_NEAR(a[j], b[j], tol * (1 + std::fabs(b[j]))) << "at " << j;
}

TEST(CudaLaunch, SeedMulAddTypedAndPlaceholderAgreesWithCpu) {
  if (!have_gpu()) CH_GPU_SKIP() << "no CUDA device";
  CacheDir dir;
  ElementwiseKernel typed("float32 x, float32 y, float32 z", "float32 w", "w = x * y + z",
                          "muladd_fwd");
  ElementwiseKernel generic("T x, T y, T z", "T w", "w = x * y + z", "muladd_fwd_t");
  const size_t n = 100003;
  auto xv = wave(n, 0.1), yv = wave(n, 0.7), zv = wave(n, 1.3);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Shape s{static_cast<int64_t>(n)};
    Array x = device_array(dt, s, xv), y = device_array(dt, s, yv), z = device_array(dt, s, zv);
    Array w = device_array(dt, s, std::vector<double>(n, 0.0));
    (dt == DType::Float32 ? typed : generic).call({x, y, z}, {w});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<double> ref(n);  // reference: host loop in double
    for (size_t j = 0; j < n; ++j) ref[j] = xv[j] * yv[j] + zv[j];
    expect_close(to_host(w), ref, dt == DType::Float32 ? 1e-6 : 1e-15);
  }
}

TEST(CudaLaunch, BroadcastBackwardKernelAndReduction) {
  if (!have_gpu()) CH_GPU_SKIP() << "no CUDA device";
  CacheDir dir;
  // Broadcast: x (3, 4) * y (4,) + z () and the seed's backward kernel.
  ElementwiseKernel fwd("T x, T y, T z", "T w", "w = x * y + z", "bmuladd");
  ElementwiseKernel bwd("T x, T y, T gw", "T gx, T gy", "gx = y * gw; gy = x * gw;", "muladd_bwd");
  auto xv = wave(12, 0.2), yv = wave(4, 1.0);
  Array x = device_array(DType::Float64, Shape{3, 4}, xv),
        y = device_array(DType::Float64, Shape{4}, yv);
  Array z = device_array(DType::Float64, Shape{}, {0.5});
  Array w = device_array(DType::Float64, Shape{3, 4}, std::vector<double>(12, 0.0));
  fwd.call({x, y, z}, {w});
  std::vector<double> ref(12);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) ref[r * 4 + c] = xv[r * 4 + c] * yv[c] + 0.5;
  expect_close(to_host(w), ref, 1e-15);
  Array yf = device_array(DType::Float64, Shape{3, 4}, wave(12, 1.0));
  Array gx = device_array(DType::Float64, Shape{3, 4}, std::vector<double>(12, 0.0));
  Array gy = device_array(DType::Float64, Shape{3, 4}, std::vector<double>(12, 0.0));
  bwd.call({x, yf, w}, {gx, gy});
  auto W = to_host(w), Y = wave(12, 1.0);
  std::vector<double> rgx(12), rgy(12);
  for (int j = 0; j < 12; ++j) {
    rgx[j] = Y[j] * W[j];
    rgy[j] = xv[j] * W[j];
  }
  expect_close(to_host(gx), rgx, 1e-15);
  expect_close(to_host(gy), rgy, 1e-15);
  // Reductions: sum of squares over axis 1 and max without identity over axis 0.
  ReductionKernel ss("T x", "T y", "x * x", "a + b", "y = a", "0", "sum_sq", "");
  ReductionKernel mx("T x", "T y", "x", "max(a, b)", "y = a", "", "max_r", "");
  const int rows = 37, cols = 1001;
  auto bv = wave(static_cast<size_t>(rows) * cols, 0.3);
  Array big = device_array(DType::Float64, Shape{rows, cols}, bv);
  Array s1 = device_array(DType::Float64, Shape{rows}, std::vector<double>(rows, 0.0));
  Array m0 = device_array(DType::Float64, Shape{cols}, std::vector<double>(cols, 0.0));
  ss.call({big}, {s1}, {1}, false, false);
  mx.call({big}, {m0}, {0}, false, false);
  std::vector<double> rs(rows, 0.0), rm(cols, -INFINITY);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      double v = bv[static_cast<size_t>(r) * cols + c];
      rs[r] += v * v;
      rm[c] = std::max(rm[c], v);
    }
  expect_close(to_host(s1), rs, 1e-12);
  expect_close(to_host(m0), rm, 0);
}

TEST(CudaLaunch, CompileErrorOnDeviceAndModuleCache) {
  if (!have_gpu()) CH_GPU_SKIP() << "no CUDA device";
  CacheDir dir;
  ElementwiseKernel bad("T x", "T y", "y = x * ;", "broken_on_device");
  Array x = device_array(DType::Float32, Shape{4}, {1, 2, 3, 4});
  Array y = device_array(DType::Float32, Shape{4}, {0, 0, 0, 0});
  try {
    bad.call({x}, {y});
    FAIL() << "must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("error"), std::string::npos) << e.what();
  }
  ElementwiseKernel good("T x", "T y", "y = x * 2", "twice");
  const long long c0 = nvrtc::compile_count();
  good.call({x}, {y});
  good.call({x}, {y});  // loaded module reused: no second compile
  EXPECT_EQ(nvrtc::compile_count(), c0 + 1);
  expect_close(to_host(y), {2, 4, 6, 8}, 0);
}

// The prelude's one contract (prelude_contract.h), on NVRTC: the table the
// CPU test (test_elementwise.cpp) runs through libtcc. No GPU needed.
TEST(Nvrtc, PreludeContractMatchesTheCpu) {
  CacheDir dir;
  for (const prelude_contract::Case& c : prelude_contract::kCases) {
    ElementwiseKernel k(c.in_params, c.out_params, c.body, c.name);
    const std::string src = elementwise_source(k, TypeMap{}, "CC", Target::Cuda);
    bool compiled = false;
    std::string log;
    try {
      compiled = is_elf(nvrtc::compile(src, c.name, "sm_90").binary);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT) << e.what();
      log = e.what();
    }
    EXPECT_EQ(compiled, c.accepted) << c.name << "\n" << log;
  }
}

// ptxas's report of generated specializations (issue 12, part 4): every one
// within the budget the .cu kernels have (tests/gpu/ptxas_check.py): no
// spills, no stack frame, at most 64 registers per thread.
void expect_within_budget(const std::string& source, const std::string& name) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::string log = nvrtc::ptxas_report(source, name, arch);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, std::regex("Used (\\d+) registers"))) << log;
    EXPECT_LE(std::stoi(m[1]), 64) << name << " on " << arch << ":\n" << log;
    ASSERT_TRUE(std::regex_search(
        log, m,
        std::regex(
            "(\\d+) bytes stack frame, (\\d+) bytes spill stores, (\\d+) bytes spill loads")))
        << log;
    EXPECT_EQ(m[1], "0") << name << " on " << arch << " has a stack frame:\n" << log;
    EXPECT_EQ(m[2], "0") << name << " on " << arch << " spills:\n" << log;
    EXPECT_EQ(m[3], "0") << name << " on " << arch << " spills:\n" << log;
  }
}

TEST(Nvrtc, GeneratedSpecializationsWithinThePtxasBudget) {
  ElementwiseKernel modes(
      "raw T x, T y, float32 s, int32 n", "T gx, float64 gy, int32 m",
      "gx = x[i] * y + (T)expf(s); gy = tanh((double)y) + max(1.0, sqrt(2.0)); m = n + (int)i; "
      "if (isnan(y)) gx = INFINITY;",
      "modes_kernel");
  ReductionKernel with_id("T x, T w", "T y, float64 n", "x * w", "a + b",
                          "y = a; n = sqrt((double)a)", "0", "dot_r", "");
  ReductionKernel no_id("T x", "T y", "x", "max(a, b)", "y = a", "", "max_r", "");
  for (DType dt : {DType::Float32, DType::Float64}) {
    TypeMap t{{"T", dt}};
    expect_within_budget(muladd_source(dt), "muladd_fwd");
    expect_within_budget(elementwise_source(modes, t, "RGSCCCC", Target::Cuda), "modes_kernel");
    expect_within_budget(reduction_source(with_id, t, dt, "LGCC", Target::Cuda), "dot_r");
    expect_within_budget(reduction_source(no_id, t, dt, "GC", Target::Cuda), "max_r");
  }
}

}  // namespace
