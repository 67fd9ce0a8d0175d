// bench/gpu: chainerc on a CUDA device against its peers (bench/gpu/README.md).
//
//   elementwise  add (z = x + y) and relu on 64M float32 through the C API (volatile
//                variables, so forward only) against a device-to-device cudaMemcpyAsync of
//                the same array: effective bandwidth = bytes read + written / time.
//   bandwidth    chainerc's own element-wise kernels, reductions (sum, sum_to) and
//                BatchNormalization on 64M float32 through the kernel interface, GB/s against
//                a device-to-device copy (bench/gpu/bandwidth.cpp).
//   gemm         float32 C = A B, row-major, on the models' shapes and 4096^3: cuBLAS
//                called directly (its own handle, cublasSgemm), chainerc's GEMM entry
//                (chainerc::cuda::gemm, what every op's GEMM goes through) and
//                ch_functions_matmul (the C API: a variable, the output's allocation).
//   train        one SGD step (lr 0.01, batch 100) of the 784-100-100-10 MLP, the
//                784-1000-1000-10 MLP and bench/train's convnet on the device, each model in
//                a fresh process of its own (this program again, --child): milliseconds per
//                step, the allocator's peak bytes in use (ch_memory_stats_get), and the
//                kernels one step launches (chainerc::cuda::launch_count, plus cuBLAS GEMM
//                calls; cuDNN's kernels are not counted). PyTorch eager's figures come from
//                bench/gpu/torch_peer.py through --peer FILE.
//   graph        the 784-100-100-10 MLP's step eager and captured as a CUDA graph
//                (ch_cuda_graph_*) and replayed: ms/step (median and spread of 5 runs),
//                launches and graph launches per step, host synchronisations per step on the
//                emulated devices; against PyTorch eager's MLP row of `train` (the goal:
//                replay at least 10x faster).
//
// --smoke: tiny sizes, one iteration of everything, checks of the results; for the emulated
// devices in CI (meson test gpu_bench_smoke), so that the benchmark does not rot.
//
// Usage: gpu_bench [--smoke] [--device N] [--only elementwise,bandwidth,gemm,train,graph]
//                  [--models mlp,mlp-large,convnet] [--steps N] [--batch N] [--peer FILE]
//
// Linked against the static library: the launch counter and chainerc::cuda::gemm are
// internals (cuda/runtime/launch_count.h, libraries.h); the rest is the public C API.

#include <ch/ch.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../bench_util.h"
#include "../chainerc_net.h"
#include "bench/gpu/bandwidth.h"
#include "core/dtype.h"
#include "cuda/runtime/launch_count.h"
#include "cuda/runtime/libraries.h"
#if defined(CH_CUDA_EMULATION)
#include <cuda_runtime_api.h>  // the emulator's synchronisation counter
#endif

namespace {

bool g_smoke = false;
int32_t g_device = 0;
int64_t g_batch = 0;  // training batch: 100, or 4 in smoke mode (--batch)

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) bench::die(std::string(what) + ": " + cudaGetErrorString(e));
}

void sync() { CH_BENCH_CHECK(ch_cuda_synchronize(g_device)); }

ch_device dev() { return ch_device_cuda(g_device); }

// CH_REQUIRE_GPU=1: no device is a failure, never a skip (tests/gpu/require_gpu.h).
bool require_gpu() {
  const char* v = std::getenv("CH_REQUIRE_GPU");
  return v && std::strcmp(v, "1") == 0;
}

ch_array* device_array(const std::vector<int64_t>& shape, ch_dtype dtype = CH_FLOAT32) {
  ch_array* a = nullptr;
  CH_BENCH_CHECK(
      ch_array_new_empty(&a, dtype, shape.data(), static_cast<int32_t>(shape.size()), dev()));
  return a;
}

ch_array* uniform_array(const std::vector<int64_t>& shape, double low, double high) {
  ch_array* a = device_array(shape);
  CH_BENCH_CHECK(ch_array_fill_uniform(a, low, high));
  return a;
}

ch_variable* volatile_variable(ch_array* a) {
  ch_variable* v = nullptr;
  CH_BENCH_CHECK(ch_variable_new(&v, a, 1));
  return v;
}

std::vector<float> read_back(const ch_array* a) {
  std::vector<float> h(static_cast<size_t>(ch_array_size(a)));
  CH_BENCH_CHECK(ch_array_read(a, h.data(), h.size() * sizeof(float)));
  return h;
}

// Seconds per call of `body`: one warm-up call, then enough calls for about
// `target` seconds (measured from one timed call), the device synchronised
// around the timed loop. One call each in smoke mode.
template <typename F>
double time_per_call(F&& body, double target = 0.25) {
  body();
  sync();
  if (g_smoke) return 0;
  double t0 = bench::now_s();
  body();
  sync();
  const double once = std::max(bench::now_s() - t0, 1e-7);
  const int reps = static_cast<int>(std::clamp(target / once, 3.0, 2000.0));
  t0 = bench::now_s();
  for (int i = 0; i < reps; ++i) body();
  sync();
  return (bench::now_s() - t0) / reps;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Kernels (launch()) and cuBLAS calls made by `body`.
template <typename F>
std::pair<uint64_t, uint64_t> count_launches(F&& body) {
  const uint64_t l0 = chainerc::cuda::launch_count(), g0 = chainerc::cuda::gemm_call_count();
  body();
  return {chainerc::cuda::launch_count() - l0, chainerc::cuda::gemm_call_count() - g0};
}

// ---- elementwise --------------------------------------------------------------------------

void bench_elementwise() {
  const int64_t n = g_smoke ? 4099 : int64_t{64} << 20;
  ch_array* xa = uniform_array({n}, -1, 1);
  ch_array* ya = uniform_array({n}, -1, 1);
  ch_array* copy = device_array({n});
  ch_variable* x = volatile_variable(xa);
  ch_variable* y = volatile_variable(ya);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);

  auto add = [&] {
    ch_variable* z = nullptr;
    CH_BENCH_CHECK(ch_functions_add(&z, x, y));
    ch_variable_release(z);
  };
  auto relu = [&] {
    ch_variable* z = nullptr;
    CH_BENCH_CHECK(ch_functions_relu(&z, x));
    ch_variable_release(z);
  };
  auto memcpy_d2d = [&] {
    cuda_check(cudaMemcpyAsync(ch_array_data(copy), ch_array_data(xa), bytes,
                               cudaMemcpyDeviceToDevice, nullptr),
               "cudaMemcpyAsync");
  };

  // The results, checked once (every element): a benchmark of wrong kernels is no benchmark.
  {
    ch_variable *z = nullptr, *r = nullptr;
    CH_BENCH_CHECK(ch_functions_add(&z, x, y));
    CH_BENCH_CHECK(ch_functions_relu(&r, x));
    memcpy_d2d();
    ch_array *za = nullptr, *ra = nullptr;
    CH_BENCH_CHECK(ch_variable_data(&za, z));
    CH_BENCH_CHECK(ch_variable_data(&ra, r));
    const std::vector<float> hx = read_back(xa), hy = read_back(ya), hz = read_back(za),
                             hr = read_back(ra), hc = read_back(copy);
    for (size_t i = 0; i < hx.size(); ++i)
      if (hz[i] != hx[i] + hy[i] || hr[i] != std::max(hx[i], 0.f) || hc[i] != hx[i])
        bench::die("elementwise: wrong result at element " + std::to_string(i));
    ch_array_release(za);
    ch_array_release(ra);
    ch_variable_release(z);
    ch_variable_release(r);
  }

  const auto add_launches = count_launches(add);
  const auto relu_launches = count_launches(relu);
  const double t_copy = time_per_call(memcpy_d2d);
  const double t_add = time_per_call(add);
  const double t_relu = time_per_call(relu);
  // relu goes to cuDNN where it is loaded (use_cudnn, on by default): the own kernel too.
  const int32_t use_cudnn = ch_config_use_cudnn();
  ch_config_set_use_cudnn(0);
  const auto relu_own_launches = count_launches(relu);
  const double t_relu_own = time_per_call(relu);
  ch_config_set_use_cudnn(use_cudnn);
  // The launch counter itself: each of these ops is at least one kernel and no GEMM.
  if (add_launches.first < 1 || relu_own_launches.first < 1 || add_launches.second != 0)
    bench::die("elementwise: the launch counter saw no kernel for add or relu");

  std::printf("### Elementwise bandwidth (float32, %lld elements, cuda:%d)\n\n",
              static_cast<long long>(n), g_device);
  std::printf("| operation | bytes moved | kernels | µs | GB/s | of copy bandwidth |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  const double copy_gbs = t_copy > 0 ? 2.0 * bytes / t_copy / 1e9 : 0;
  auto row = [&](const char* name, double moved, uint64_t kernels, double t) {
    const double gbs = t > 0 ? moved / t / 1e9 : 0;
    std::printf("| %s | %.0f | %llu | %s | %s | %s |\n", name, moved,
                static_cast<unsigned long long>(kernels),
                g_smoke ? "-" : fmt("%.1f", t * 1e6).c_str(),
                g_smoke ? "-" : fmt("%.0f", gbs).c_str(),
                g_smoke ? "-" : fmt("%.1f %%", 100.0 * gbs / copy_gbs).c_str());
  };
  row("device-to-device copy (cudaMemcpyAsync)", 2.0 * bytes, 0, t_copy);
  row("add (ch_functions_add)", 3.0 * bytes, add_launches.first, t_add);
  row("relu (ch_functions_relu; cuDNN's where loaded)", 2.0 * bytes, relu_launches.first, t_relu);
  row("relu, use_cudnn off (chainerc's kernel)", 2.0 * bytes, relu_own_launches.first, t_relu_own);
  std::printf("\nGoal: elementwise at least 85 %% of copy bandwidth.\n\n");

  ch_variable_release(x);
  ch_variable_release(y);
  ch_array_release(xa);
  ch_array_release(ya);
  ch_array_release(copy);
}

// ---- GEMM ---------------------------------------------------------------------------------

struct GemmShape {
  const char* what;
  int m, n, k;  // C (m x n) = A (m x k) B (k x n), row-major
};

void bench_gemm() {
  static const GemmShape kSmoke[] = {{"odd sizes", 5, 7, 3}, {"MLP layer, batch 10", 10, 100, 784}};
  // Each linear layer's forward of the three models at batch 100, one image's second
  // convolution as an im2col GEMM (50 filters, 8x8 outputs, 20x5x5 taps), and 4096^3.
  static const GemmShape kFull[] = {{"MLP 784-100", 100, 100, 784},
                                    {"MLP 100-100", 100, 100, 100},
                                    {"MLP 100-10", 100, 10, 100},
                                    {"MLP 784-1000", 100, 1000, 784},
                                    {"MLP 1000-1000", 100, 1000, 1000},
                                    {"MLP 1000-10", 100, 10, 1000},
                                    {"convnet conv2, one image (im2col)", 50, 64, 500},
                                    {"convnet linear 800-500", 100, 500, 800},
                                    {"square 4096", 4096, 4096, 4096}};
  const std::vector<GemmShape> shapes =
      g_smoke ? std::vector<GemmShape>(std::begin(kSmoke), std::end(kSmoke))
              : std::vector<GemmShape>(std::begin(kFull), std::end(kFull));
  // cuBLAS's own handle on the device's default stream, as chainerc's.
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) bench::die("cublasCreate failed");
  if (cublasSetStream(handle, nullptr) != CUBLAS_STATUS_SUCCESS)
    bench::die("cublasSetStream failed");
  std::printf("### GEMM (float32, row-major C = A B, TF32 off, cuda:%d)\n\n", g_device);
  std::printf(
      "| shape | m x n x k | cuBLAS µs | chainerc gemm µs | gemm / cuBLAS | "
      "ch_functions_matmul µs | matmul / cuBLAS | cuBLAS TFLOP/s |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const GemmShape& s : shapes) {
    ch_array* a = uniform_array({s.m, s.k}, -1, 1);
    ch_array* b = uniform_array({s.k, s.n}, -1, 1);
    ch_array* c_blas = device_array({s.m, s.n});
    ch_array* c_ch = device_array({s.m, s.n});
    ch_variable* va = volatile_variable(a);
    ch_variable* vb = volatile_variable(b);
    const float one = 1.f, zero = 0.f;
    const float* pa = static_cast<const float*>(ch_array_data(a));
    const float* pb = static_cast<const float*>(ch_array_data(b));
    float* pc_blas = static_cast<float*>(ch_array_data(c_blas));
    float* pc_ch = static_cast<float*>(ch_array_data(c_ch));
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS sees (n x k)(k x m).
    auto direct = [&] {
      const cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one,
                                            pb, s.n, pa, s.k, &zero, pc_blas, s.n);
      if (st != CUBLAS_STATUS_SUCCESS) bench::die("cublasSgemm failed");
    };
    auto entry = [&] {
      chainerc::cuda::gemm(g_device, chainerc::DType::Float32, false, false, s.n, s.m, s.k, 1.0, pb,
                           s.n, pa, s.k, 0.0, pc_ch, s.n);
    };
    ch_array* c_mm = nullptr;
    auto matmul = [&] {
      ch_variable* c = nullptr;
      CH_BENCH_CHECK(ch_functions_matmul(&c, va, vb, 0, 0));
      if (g_smoke && !c_mm) CH_BENCH_CHECK(ch_variable_data(&c_mm, c));
      ch_variable_release(c);
    };
    const double t_direct = time_per_call(direct);
    const double t_entry = time_per_call(entry);
    const double t_matmul = time_per_call(matmul);
    // One cuBLAS call per GEMM (the counter of cuda::gemm).
    if (count_launches(entry).second != 1 || count_launches(matmul).second != 1)
      bench::die(std::string("gemm: not one cuBLAS call per GEMM on ") + s.what);
    // The three agree (the same cuBLAS call underneath; checked in smoke mode).
    if (g_smoke) {
      const std::vector<float> x = read_back(c_blas), y = read_back(c_ch), z = read_back(c_mm);
      for (size_t i = 0; i < x.size(); ++i)
        if (std::fabs(x[i] - y[i]) > 1e-4f * (1 + std::fabs(x[i])) ||
            std::fabs(x[i] - z[i]) > 1e-4f * (1 + std::fabs(x[i])))
          bench::die(std::string("gemm: chainerc and cuBLAS disagree on ") + s.what);
      ch_array_release(c_mm);
    }
    const double flops = 2.0 * s.m * s.n * s.k;
    auto us = [](double t) { return g_smoke ? std::string("-") : fmt("%.2f", t * 1e6); };
    auto ratio = [](double t, double ref) {
      return g_smoke ? std::string("-") : fmt("%.3f", t / ref);
    };
    std::printf("| %s | %d x %d x %d | %s | %s | %s | %s | %s | %s |\n", s.what, s.m, s.n, s.k,
                us(t_direct).c_str(), us(t_entry).c_str(), ratio(t_entry, t_direct).c_str(),
                us(t_matmul).c_str(), ratio(t_matmul, t_direct).c_str(),
                g_smoke ? "-" : fmt("%.1f", flops / t_direct / 1e12).c_str());
    ch_variable_release(va);
    ch_variable_release(vb);
    for (ch_array* x : {a, b, c_blas, c_ch}) ch_array_release(x);
  }
  cublasDestroy(handle);
  std::printf("\nGoal: chainerc's GEMM within 5 %% of cuBLAS (ratio at most 1.05).\n\n");
}

// ---- training step ------------------------------------------------------------------------

struct Model {
  std::string name;
  bool conv;
  int64_t hidden;
};

Model model_named(const std::string& name) {
  if (name == "mlp") return {name, false, 100};
  if (name == "mlp-large") return {name, false, 1000};
  if (name == "convnet") return {name, true, 0};
  bench::die("unknown model " + name);
}

struct TrainResult {
  double step_ms = 0, peak_mib = 0, loss = 0;
  uint64_t kernels = 0, gemms = 0;
  uint64_t own_kernels = 0, own_gemms = 0;  // one step with use_cudnn off
};

// The model of bench/train.cpp (bench/chainerc_net.h, SGD lr 0.01) on the device.
struct Net {
  bench::ChainercNet net;
  explicit Net(const Model& m) : net(m.conv, m.hidden, 0.01, dev()) {}

  // One SGD step on device arrays xa (batch x 784 or batch x 1 x 28 x 28) and ta (int32
  // labels). Returns the loss array (new reference), not read: reading it would wait for the
  // device every step, which a training loop need not do.
  ch_array* step(ch_array* xa, ch_array* ta) {
    ch_variable *x, *t;
    CH_BENCH_CHECK(ch_variable_new(&x, xa, 0));
    CH_BENCH_CHECK(ch_variable_new(&t, ta, 0));
    CH_BENCH_CHECK(ch_variable_set_requires_grad(x, 0));
    CH_BENCH_CHECK(ch_variable_set_requires_grad(t, 0));
    ch_variable* loss = net.train_step(x, t);
    ch_array* la;
    CH_BENCH_CHECK(ch_variable_data(&la, loss));
    for (ch_variable* v : {loss, x, t}) ch_variable_release(v);
    return la;
  }
};

// One model's run, in this (child) process: `steps` timed steps after warm-up, over a
// few batches kept on the device (the same synthetic data as bench/train: pixels uniform
// in [0, 1), labels uniform in 0..9, fixed seed).
TrainResult run_train(const Model& m, int64_t steps) {
  ch_config_seed(1);
  CH_BENCH_CHECK(ch_cuda_seed(g_device, 1));
  const int64_t batch = g_batch;
  const int n_batches = g_smoke ? 2 : 10;
  std::mt19937 gen(1234);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<ch_array*> xs, ts;
  for (int i = 0; i < n_batches; ++i) {
    std::vector<float> hx(static_cast<size_t>(batch) * 784);
    std::vector<int32_t> ht(static_cast<size_t>(batch));
    for (float& v : hx) v = u(gen);
    for (int32_t& v : ht) v = static_cast<int32_t>(gen() % 10);
    const int64_t conv_shape[4] = {batch, 1, 28, 28}, flat_shape[2] = {batch, 784};
    ch_array *xa, *ta;
    CH_BENCH_CHECK(ch_array_new(&xa, CH_FLOAT32, m.conv ? conv_shape : flat_shape, m.conv ? 4 : 2,
                                hx.data(), dev()));
    CH_BENCH_CHECK(ch_array_new(&ta, CH_INT32, &batch, 1, ht.data(), dev()));
    xs.push_back(xa);
    ts.push_back(ta);
  }
  TrainResult r;
  {
    Net net(m);
    int next = 0;
    ch_array* last = nullptr;
    auto one_step = [&] {
      ch_array_release(last);
      last = net.step(xs[next], ts[next]);
      next = (next + 1) % n_batches;
    };
    for (int i = 0; i < (g_smoke ? 1 : 5); ++i) one_step();  // warm-up: caches, cuBLAS, pools
    sync();
    const auto launches = count_launches(one_step);
    r.kernels = launches.first;
    r.gemms = launches.second;
    sync();
    const double t0 = bench::now_s();
    for (int64_t i = 0; i < steps; ++i) one_step();
    sync();
    r.step_ms = (bench::now_s() - t0) * 1e3 / static_cast<double>(steps);
    CH_BENCH_CHECK(ch_array_get(&r.loss, last, 0));
    // The high-water mark of the run (data, parameters, gradients, activations, workspaces).
    ch_memory_stats st{};
    CH_BENCH_CHECK(ch_memory_stats_get(&st, dev()));
    r.peak_mib = static_cast<double>(st.peak_bytes_in_use) / (1024.0 * 1024.0);
    // cuDNN's kernels are not counted: one more step with it off counts chainerc's own
    // kernels (after the peak was read: chainerc's convolution needs other workspaces).
    const int32_t use_cudnn = ch_config_use_cudnn();
    ch_config_set_use_cudnn(0);
    const auto own = count_launches(one_step);
    ch_config_set_use_cudnn(use_cudnn);
    r.own_kernels = own.first;
    r.own_gemms = own.second;
    ch_array_release(last);
  }
  for (ch_array* a : xs) ch_array_release(a);
  for (ch_array* a : ts) ch_array_release(a);
  if (!std::isfinite(r.loss) || r.loss <= 0) bench::die("train: the loss is not finite/positive");
  return r;
}

// gpu_bench --child MODEL STEPS DEVICE SMOKE BATCH: one model's run, its result on stdout.
int run_child(char** argv) {
  g_device = std::atoi(argv[4]);
  g_smoke = std::atoi(argv[5]) != 0;
  g_batch = std::atoll(argv[6]);
  CH_BENCH_CHECK(ch_cuda_device_push(g_device));  // the current device, for the whole run
  const TrainResult r = run_train(model_named(argv[2]), std::atoll(argv[3]));
  std::printf("result %.17g %.17g %.17g %llu %llu %llu %llu\n", r.step_ms, r.peak_mib, r.loss,
              static_cast<unsigned long long>(r.kernels), static_cast<unsigned long long>(r.gemms),
              static_cast<unsigned long long>(r.own_kernels),
              static_cast<unsigned long long>(r.own_gemms));
  return 0;
}

// Runs one model in a fresh process (this program again), so that the allocator's peak is
// that model's alone, as torch_peer.py's torch.cuda.max_memory_allocated is.
bool in_child(const char* self, const std::string& model, int64_t steps, TrainResult& out,
              std::string& error) {
  int fd[2];
  if (pipe(fd) != 0) bench::die("pipe failed");
  std::fflush(nullptr);
  const std::string st = std::to_string(steps), d = std::to_string(g_device),
                    smoke = g_smoke ? "1" : "0", batch = std::to_string(g_batch);
  const pid_t pid = fork();
  if (pid < 0) bench::die("fork failed");
  if (pid == 0) {
    close(fd[0]);
    if (dup2(fd[1], STDOUT_FILENO) < 0) _exit(4);
    close(fd[1]);
    execl(self, self, "--child", model.c_str(), st.c_str(), d.c_str(), smoke.c_str(), batch.c_str(),
          static_cast<char*>(nullptr));
    _exit(5);
  }
  close(fd[1]);
  std::string text;
  char buf[256];
  for (ssize_t got; (got = read(fd[0], buf, sizeof buf)) > 0;) text.append(buf, got);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  unsigned long long kernels = 0, gemms = 0, own_kernels = 0, own_gemms = 0;
  const bool ok =
      WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
      std::sscanf(text.c_str(), "result %lf %lf %lf %llu %llu %llu %llu", &out.step_ms,
                  &out.peak_mib, &out.loss, &kernels, &gemms, &own_kernels, &own_gemms) == 7;
  out.kernels = kernels;
  out.gemms = gemms;
  out.own_kernels = own_kernels;
  out.own_gemms = own_gemms;
  if (!ok) error = "the run of " + model + " failed (its error is above)";
  return ok;
}

// PyTorch's figures (torch_peer.py): lines "train MODEL STEP_MS PEAK_MIB KERNELS LOSS".
struct Peer {
  double step_ms = 0, peak_mib = 0, loss = 0;
  long long kernels = -1;
};

std::map<std::string, Peer> read_peer(const std::string& path, std::string& about) {
  std::map<std::string, Peer> out;
  if (path.empty()) return out;
  std::ifstream f(path);
  if (!f) bench::die("cannot read " + path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string tag, model;
    in >> tag;
    if (tag == "about") {
      std::getline(in, about);
      continue;
    }
    if (tag != "train") continue;
    Peer p;
    in >> model >> p.step_ms >> p.peak_mib >> p.kernels >> p.loss;
    if (in) out[model] = p;
  }
  return out;
}

void bench_train(const char* self, const std::vector<std::string>& models, int64_t steps,
                 const std::string& peer_path) {
  std::string about;
  const std::map<std::string, Peer> peer = read_peer(peer_path, about);
  std::printf("### Training step (float32, SGD lr 0.01, batch %lld, cuda:%d)\n\n",
              static_cast<long long>(g_batch), g_device);
  if (!about.empty()) std::printf("PyTorch:%s\n\n", about.c_str());
  std::printf(
      "| model | chainerc ms/step | PyTorch ms/step | PyTorch / chainerc | chainerc peak MiB | "
      "PyTorch peak MiB | chainerc kernels + cuBLAS calls / step (use_cudnn off) | PyTorch kernels "
      "/ step | "
      "loss after the run (chainerc / PyTorch) |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  std::vector<std::string> errors;
  for (const std::string& name : models) {
    model_named(name);
    TrainResult r;
    std::string error;
    const bool ok = in_child(self, name, steps, r, error);
    if (!ok) errors.push_back(error);
    const auto it = peer.find(name);
    const bool has_peer = it != peer.end();
    const Peer p = has_peer ? it->second : Peer{};
    auto num = [](bool have, double v, const char* f) {
      return have ? fmt(f, v) : std::string("n/a");
    };
    const bool timed = ok && !g_smoke;
    const std::string counts = ok ? std::to_string(r.kernels) + " + " + std::to_string(r.gemms) +
                                        " (" + std::to_string(r.own_kernels) + " + " +
                                        std::to_string(r.own_gemms) + ")"
                                  : "n/a";
    std::printf(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", name.c_str(),
        num(timed, r.step_ms, "%.3f").c_str(), num(has_peer && !g_smoke, p.step_ms, "%.3f").c_str(),
        num(timed && has_peer, p.step_ms / r.step_ms, "%.2fx").c_str(),
        num(ok, r.peak_mib, "%.1f").c_str(), num(has_peer && !g_smoke, p.peak_mib, "%.1f").c_str(),
        counts.c_str(), has_peer && p.kernels >= 0 ? std::to_string(p.kernels).c_str() : "n/a",
        num(ok, r.loss, "%.4f").c_str(), num(has_peer, p.loss, "%.4f").c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\nGoals: the small MLP's step at least 1.5x PyTorch eager, the others no slower; peak "
      "memory no higher.\n\n");
  for (const std::string& e : errors) std::printf("- %s\n", e.c_str());
  if (!errors.empty()) bench::die("a training run failed");
}

// ---- a training step replayed as a CUDA graph ------------------------------------------

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

uint64_t host_syncs() {
#if defined(CH_CUDA_EMULATION)
  return chainerc::cuda::emu::host_synchronizations();
#else
  return 0;  // counted by the emulator only
#endif
}

// The small MLP's SGD step on one batch kept on the device: eager, and
// captured once (ch_cuda_graph_*) and replayed. Each path timed in `reps`
// runs of `steps` steps (a synchronisation before and after each run);
// medians and the spread of the runs. On the emulated devices nothing is
// timed: the launches and host synchronisations per step are the figures.
void bench_graph(int64_t steps) {
  const Model m = model_named("mlp");
  ch_config_seed(1);
  CH_BENCH_CHECK(ch_cuda_seed(g_device, 1));
  const int64_t batch = g_batch;
  std::mt19937 gen(4321);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> hx(static_cast<size_t>(batch) * 784);
  std::vector<int32_t> ht(static_cast<size_t>(batch));
  for (float& v : hx) v = u(gen);
  for (int32_t& v : ht) v = static_cast<int32_t>(gen() % 10);
  const int64_t shape[2] = {batch, 784};
  ch_array *xa, *ta;
  CH_BENCH_CHECK(ch_array_new(&xa, CH_FLOAT32, shape, 2, hx.data(), dev()));
  CH_BENCH_CHECK(ch_array_new(&ta, CH_INT32, &batch, 1, ht.data(), dev()));
  Net net(m);
  ch_array* last = nullptr;
  auto eager = [&] {
    ch_array_release(last);
    last = net.step(xa, ta);
  };
  for (int i = 0; i < 3; ++i) eager();  // warm-up: pools, cuBLAS, optimizer state
  sync();
  const uint64_t s0 = host_syncs();
  const auto eager_launches = count_launches(eager);
  const uint64_t eager_syncs = host_syncs() - s0;
  sync();
  CH_BENCH_CHECK(ch_cuda_graph_begin_capture(dev()));
  ch_array* captured = net.step(xa, ta);
  ch_cuda_graph* graph = nullptr;
  CH_BENCH_CHECK(ch_cuda_graph_end_capture(&graph, dev()));
  auto replay = [&] { CH_BENCH_CHECK(ch_cuda_graph_replay(graph)); };
  replay();
  sync();
  const uint64_t s1 = host_syncs();
  const auto replay_launches = count_launches(replay);
  const uint64_t replay_syncs = host_syncs() - s1;
  sync();
  double loss = 0;
  CH_BENCH_CHECK(ch_array_get(&loss, captured, 0));
  if (!std::isfinite(loss) || loss <= 0) bench::die("graph: the replayed loss is not finite");
  const int reps = g_smoke ? 1 : 5;
  std::vector<double> eager_ms, replay_ms;
  for (int r = 0; r < reps && !g_smoke; ++r) {
    for (auto* v : {&eager_ms, &replay_ms}) {
      sync();
      const double t0 = bench::now_s();
      for (int64_t i = 0; i < steps; ++i) v == &eager_ms ? eager() : replay();
      sync();
      v->push_back((bench::now_s() - t0) * 1e3 / static_cast<double>(steps));
    }
  }
  std::printf("### Small MLP step replayed as a CUDA graph (batch %lld, cuda:%d)\n\n",
              static_cast<long long>(batch), g_device);
  std::printf(
      "| path | ms/step (median of %d runs of %lld steps) | min - max | kernels + cuBLAS calls "
      "launched / step | graph launches / step | host syncs / step (emulator) |\n",
      reps, static_cast<long long>(steps));
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  auto row = [&](const char* name, const std::vector<double>& ms,
                 std::pair<uint64_t, uint64_t> launched, int graphs, uint64_t syncs) {
    const bool timed = !ms.empty();
    const std::string med = timed ? fmt("%.4f", median_of(ms)) : "n/a";
    const std::string spread = timed
                                   ? fmt("%.4f", *std::min_element(ms.begin(), ms.end())) + " - " +
                                         fmt("%.4f", *std::max_element(ms.begin(), ms.end()))
                                   : "n/a";
#if defined(CH_CUDA_EMULATION)
    const std::string sync_text = std::to_string(syncs);
#else
    const std::string sync_text = syncs ? std::to_string(syncs) : "n/a";
#endif
    std::printf("| %s | %s | %s | %llu + %llu | %d | %s |\n", name, med.c_str(), spread.c_str(),
                static_cast<unsigned long long>(launched.first),
                static_cast<unsigned long long>(launched.second), graphs, sync_text.c_str());
  };
  row("eager", eager_ms, eager_launches, 0, eager_syncs);
  row("graph replay", replay_ms, replay_launches, 1, replay_syncs);
  if (!eager_ms.empty())
    std::printf("\nReplay speed-up over chainerc eager: %.2fx (medians). ",
                median_of(eager_ms) / median_of(replay_ms));
  std::printf(
      "\nThe graph records %lld kernels and cuBLAS calls. Goal: the replayed step at least 10x "
      "PyTorch eager's (the training table's PyTorch column, same model and batch).\n\n",
      static_cast<long long>(ch_cuda_graph_size(graph)));
  std::fflush(stdout);
  ch_array_release(captured);
  ch_array_release(last);
  CH_BENCH_CHECK(ch_cuda_graph_release(graph));
  ch_array_release(xa);
  ch_array_release(ta);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "--child") == 0) return run_child(argv);
  std::vector<std::string> only = {"elementwise", "bandwidth", "gemm", "train", "graph"};
  std::vector<std::string> models = {"mlp", "mlp-large", "convnet"};
  int64_t steps = 0;
  std::string peer;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) bench::die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--smoke") {
      g_smoke = true;
    } else if (a == "--device") {
      g_device = std::atoi(next().c_str());
    } else if (a == "--only") {
      only = bench::split(next(), ',');
    } else if (a == "--models") {
      models = bench::split(next(), ',');
    } else if (a == "--batch") {
      g_batch = std::atoll(next().c_str());
    } else if (a == "--steps") {
      steps = std::atoll(next().c_str());
    } else if (a == "--peer") {
      peer = next();
    } else {
      std::printf(
          "usage: gpu_bench [--smoke] [--device N] [--only elementwise,bandwidth,gemm,train,graph] "
          "[--models mlp,mlp-large,convnet] [--steps N] [--batch N] [--peer FILE]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (steps <= 0) steps = g_smoke ? 1 : 200;
  if (g_batch <= 0) g_batch = g_smoke ? 4 : 100;
  if (ch_cuda_device_count() <= g_device && g_smoke && !require_gpu()) {
    // As the gpu suite's tests: a skip (meson's exit status 77) without a device.
    std::printf("no CUDA device %d (%s): skipped\n", g_device, ch_cuda_unavailable_reason());
    return 77;
  }
  if (ch_cuda_device_count() <= g_device)
    bench::die("no CUDA device " + std::to_string(g_device) + ": " +
               (ch_cuda_device_count() == 0 ? ch_cuda_unavailable_reason() : "index too high"));
  // The current device for the whole run: the copies and cuBLAS's handle below use it.
  CH_BENCH_CHECK(ch_cuda_device_push(g_device));
  auto wants = [&](const char* what) {
    return std::find(only.begin(), only.end(), what) != only.end();
  };
  std::printf("## chainerc on a GPU%s\n\n",
              g_smoke ? " (smoke run: tiny sizes, nothing timed)" : "");
  if (wants("elementwise")) bench_elementwise();
  if (wants("bandwidth")) gpu_bench::bench_bandwidth(g_device, g_smoke);
  if (wants("gemm")) bench_gemm();
  if (wants("train")) bench_train(argv[0], models, steps, peer);
  if (wants("graph")) bench_graph(steps);
  std::fflush(stdout);
  return 0;
}
