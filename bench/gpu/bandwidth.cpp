// gpu_bench's bandwidth table (--only bandwidth; bench/gpu/README.md): chainerc's own CUDA
// kernels on 64M float32 elements, called through the kernel interface (src/kernels/*.h, no
// autograd, outputs allocated once), against a device-to-device cudaMemcpyAsync of the same
// bytes. Effective bandwidth = the bytes a kernel must read and write at least / its time;
// the issue-46 goal is 85 % of the copy's. Each figure is the median of 7 timed batches
// (the spread is their minimum and maximum), the device synchronised around each batch.
// Every result is checked once against the CPU backend's kernel on the same data (a wrong
// kernel's speed is no figure). --smoke: small shapes, one call each, results checked.
#include "bench/gpu/bandwidth.h"

#include <ch/ch.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/array.h"
#include "kernels/activation.h"
#include "kernels/math.h"
#include "kernels/normalization.h"

namespace gpu_bench {
namespace {

using chainerc::Array;
using chainerc::Device;
using chainerc::DType;
using chainerc::Shape;
namespace kernels = chainerc::kernels;

Array random_on(const Shape& s, Device d, uint32_t seed, double lo = -1, double hi = 1) {
  Array h = Array::empty(DType::Float32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(static_cast<float>(lo), static_cast<float>(hi));
  float* p = h.data<float>();
  for (int64_t i = 0; i < h.size(); ++i) p[i] = u(rng);
  return d.is_cpu() ? h : h.to_device(d);
}

struct Timing {
  double median = 0, low = 0, high = 0;  // seconds per call
};

// Seven batches of calls (a batch takes about 20 ms), the device synchronised around each.
Timing time_calls(int32_t device, bool smoke, const std::function<void()>& body) {
  body();
  CH_BENCH_CHECK(ch_cuda_synchronize(device));
  if (smoke) return {};
  double t0 = bench::now_s();
  body();
  CH_BENCH_CHECK(ch_cuda_synchronize(device));
  const double once = std::max(bench::now_s() - t0, 1e-7);
  const int reps = static_cast<int>(std::clamp(0.02 / once, 1.0, 1000.0));
  std::vector<double> per;
  for (int b = 0; b < 7; ++b) {
    t0 = bench::now_s();
    for (int i = 0; i < reps; ++i) body();
    CH_BENCH_CHECK(ch_cuda_synchronize(device));
    per.push_back((bench::now_s() - t0) / reps);
  }
  std::sort(per.begin(), per.end());
  return {per[3], per.front(), per.back()};
}

// The largest |a - b| / (atol + rtol |b|) over the elements (a on the device).
void expect_close(const char* what, const Array& dev, const Array& cpu, double rtol, double atol) {
  const Array a = dev.to_device(Device{});
  const float* pa = a.data<float>();
  const float* pb = cpu.data<float>();
  for (int64_t i = 0; i < cpu.size(); ++i)
    if (!(std::fabs(pa[i] - pb[i]) <= atol + rtol * std::fabs(pb[i])))
      bench::die(std::string("bandwidth: ") + what + ": element " + std::to_string(i) + " is " +
                 std::to_string(pa[i]) + " on the device, " + std::to_string(pb[i]) +
                 " on the CPU");
}

struct Row {
  std::string what, shape;
  double bytes;
  Timing t;
};

}  // namespace

void bench_bandwidth(int32_t device, bool smoke) {
  const Device gpu{CH_DEVICE_CUDA, device}, cpu{};
  // 64M elements as (8192, 8192), (65536, 1024) and (64, 64, 128, 128); smoke: a few thousand.
  const int64_t side = smoke ? 67 : 8192;
  const Shape square{side, side}, rows{smoke ? 523 : 65536, smoke ? 9 : 1024},
      nchw{smoke ? 3 : 64, smoke ? 5 : 64, smoke ? 17 : 128, smoke ? 19 : 128};
  const int64_t n = square.size();
  const double fb = sizeof(float);
  std::vector<Row> table;
  auto row = [&](const std::string& what, const Shape& s, double bytes, const Timing& t) {
    table.push_back({what, s.to_string(), bytes, t});
  };

  Array xc = random_on(square, cpu, 1), yc = random_on(square, cpu, 2);
  Array x = xc.to_device(gpu), y = yc.to_device(gpu);
  Array out = Array::empty(DType::Float32, square, gpu);
  const double nb = static_cast<double>(n) * fb;

  row("device-to-device copy (cudaMemcpyAsync)", square, 2 * nb, time_calls(device, smoke, [&] {
        if (cudaMemcpyAsync(out.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, nullptr) !=
            cudaSuccess)
          bench::die("cudaMemcpyAsync failed");
      }));

  // Element-wise.
  {
    Array ref = Array::empty(DType::Float32, square);
    kernels::add(xc, yc, ref);
    kernels::add(x, y, out);
    expect_close("add", out, ref, 0, 0);
    row("add (x + y)", square, 3 * nb, time_calls(device, smoke, [&] { kernels::add(x, y, out); }));
    kernels::mul_scalar(xc, 3.0, ref);
    kernels::mul_scalar(x, 3.0, out);
    expect_close("mul_scalar", out, ref, 0, 0);
    row("mul_scalar (3 x)", square, 2 * nb,
        time_calls(device, smoke, [&] { kernels::mul_scalar(x, 3.0, out); }));
    const int32_t use_cudnn = ch_config_use_cudnn();
    ch_config_set_use_cudnn(0);  // chainerc's relu kernel, not cuDNN's
    kernels::relu(xc, ref);
    kernels::relu(x, out);
    expect_close("relu", out, ref, 0, 0);
    row("relu (chainerc's kernel)", square, 2 * nb,
        time_calls(device, smoke, [&] { kernels::relu(x, out); }));
    ch_config_set_use_cudnn(use_cudnn);
    // A row vector broadcast over the rows: (side, side) + (side).
    Array bc = random_on(Shape{side}, cpu, 3), b = bc.to_device(gpu);
    kernels::add(xc, bc, ref);
    kernels::add(x, b, out);
    expect_close("broadcast add", out, ref, 0, 0);
    row("add, broadcast (side, side) + (side)", square, 2 * nb,
        time_calls(device, smoke, [&] { kernels::add(x, b, out); }));
    // Gradient accumulation, acc += x (reads two arrays, writes one).
    row("add_into (acc += x)", square, 3 * nb,
        time_calls(device, smoke, [&] { kernels::add_into(out, x); }));
  }

  // Reductions.
  {
    Array full = Array::empty(DType::Float32, Shape{}, gpu),
          full_ref = Array::empty(DType::Float32, Shape{});
    kernels::sum_to(xc, full_ref);
    kernels::sum_to(x, full);
    // float32 sums of n elements in two orders: 1e-6 n is far above their rounding, far
    // below a missing or doubled element's (about 0.5).
    expect_close("sum", full, full_ref, 1e-4, 1e-6 * static_cast<double>(n));
    row("sum (everything)", square, nb,
        time_calls(device, smoke, [&] { kernels::sum_to(x, full); }));
    Array cols = Array::empty(DType::Float32, Shape{side}, gpu),
          cols_ref = Array::empty(DType::Float32, Shape{side});
    kernels::sum_to(xc, cols_ref);
    kernels::sum_to(x, cols);
    expect_close("sum_to columns", cols, cols_ref, 1e-4, 1e-2);
    row("sum_to (side, side) -> (side) (a bias gradient)", square, nb,
        time_calls(device, smoke, [&] { kernels::sum_to(x, cols); }));
    Array per_row = Array::empty(DType::Float32, Shape{side, 1}, gpu),
          per_row_ref = Array::empty(DType::Float32, Shape{side, 1});
    kernels::sum_to(xc, per_row_ref);
    kernels::sum_to(x, per_row);
    expect_close("sum_to rows", per_row, per_row_ref, 1e-4, 1e-2);
    row("sum_to (side, side) -> (side, 1)", square, nb,
        time_calls(device, smoke, [&] { kernels::sum_to(x, per_row); }));
  }

  // BatchNormalization: statistics over the batch (and the trailing axes).
  for (const Shape& s : {rows, nchw}) {
    const int64_t C = s[1], L = s[0], R = s.size() / (L * C);
    const double bytes = static_cast<double>(s.size()) * fb;
    Array bx_c = random_on(s, cpu, 4, 0, 2), bx = bx_c.to_device(gpu);
    Array by = Array::empty(DType::Float32, s, gpu), by_c = Array::empty(DType::Float32, s);
    Array gamma_c = random_on(Shape{C}, cpu, 5, 0.5, 1.5), beta_c = random_on(Shape{C}, cpu, 6);
    Array gamma = gamma_c.to_device(gpu), beta = beta_c.to_device(gpu);
    Array am_c = Array::zeros(DType::Float32, Shape{C}),
          av_c = Array::full(DType::Float32, Shape{C}, 1);
    Array am = am_c.to_device(gpu), av = av_c.to_device(gpu);
    Array mean = Array::empty(DType::Float32, Shape{C}, gpu),
          inv = Array::empty(DType::Float32, Shape{C}, gpu);
    Array mean_c = Array::empty(DType::Float32, Shape{C}),
          inv_c = Array::empty(DType::Float32, Shape{C});
    const double m = static_cast<double>(L * R);
    kernels::BatchNorm train{L, C, R, true, 0.9, m / (m - 1), 2e-5};
    kernels::BatchNorm test = train;
    test.use_batch = false;
    kernels::batch_norm_forward(bx_c, gamma_c, beta_c, train, am_c, av_c, by_c, mean_c, inv_c);
    kernels::batch_norm_forward(bx, gamma, beta, train, am, av, by, mean, inv);
    expect_close("batch_norm mean", mean, mean_c, 1e-4, 1e-4);
    expect_close("batch_norm inv_std", inv, inv_c, 1e-4, 1e-5);
    expect_close("batch_norm y", by, by_c, 1e-3, 1e-4);
    const Timing t_train = time_calls(device, smoke, [&] {
      kernels::batch_norm_forward(bx, gamma, beta, train, am, av, by, mean, inv);
    });
    const Timing t_test = time_calls(device, smoke, [&] {
      kernels::batch_norm_forward(bx, gamma, beta, test, am, av, by, mean, inv);
    });
    const std::string layout = R == 1 ? " (N, C)" : " (N, C, H, W)";
    row("batch_norm forward, batch statistics" + layout, s, 3 * bytes, t_train);
    row("batch_norm forward, running averages" + layout, s, 2 * bytes, t_test);
    // The statistics pass alone: the difference of the two (it reads x once).
    Timing t_stats{t_train.median - t_test.median, t_train.low - t_test.high,
                   t_train.high - t_test.low};
    row("batch_norm statistics alone (the difference)" + layout, s, bytes, t_stats);
    Array gy_c = random_on(s, cpu, 7), gy = gy_c.to_device(gpu);
    Array gx = Array::empty(DType::Float32, s, gpu), gx_c = Array::empty(DType::Float32, s);
    Array gg = Array::zeros(DType::Float32, Shape{C}, gpu),
          gb = Array::zeros(DType::Float32, Shape{C}, gpu);
    Array gg_c = Array::zeros(DType::Float32, Shape{C}),
          gb_c = Array::zeros(DType::Float32, Shape{C});
    kernels::batch_norm_backward(bx_c, gy_c, mean_c, inv_c, gamma_c, train, gg_c, gb_c, gx_c);
    kernels::batch_norm_backward(bx, gy, mean, inv, gamma, train, gg, gb, gx);
    expect_close("batch_norm gx", gx, gx_c, 1e-3, 1e-4);
    expect_close("batch_norm gbeta", gb, gb_c, 1e-3, 1e-2);
    row("batch_norm backward, batch statistics" + layout, s, 4 * bytes,
        time_calls(device, smoke, [&] {
          kernels::batch_norm_backward(bx, gy, mean, inv, gamma, train, gg, gb, gx);
        }));
  }

  std::printf("### Bandwidth of chainerc's own kernels (float32, %lld elements, cuda:%d)\n\n",
              static_cast<long long>(n), device);
  std::printf(
      "| kernel | shape | bytes moved | µs (median) | spread (min - max) | GB/s | of copy |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  const double copy_gbs = table[0].t.median > 0 ? table[0].bytes / table[0].t.median / 1e9 : 0;
  for (const Row& r : table) {
    if (smoke) {
      std::printf("| %s | %s | %.0f | - | - | - | - |\n", r.what.c_str(), r.shape.c_str(), r.bytes);
      continue;
    }
    const double gbs = r.t.median > 0 ? r.bytes / r.t.median / 1e9 : 0;
    std::printf("| %s | %s | %.0f | %.1f | %.1f - %.1f | %.0f | %.1f %% |\n", r.what.c_str(),
                r.shape.c_str(), r.bytes, r.t.median * 1e6, r.t.low * 1e6, r.t.high * 1e6, gbs,
                copy_gbs > 0 ? 100.0 * gbs / copy_gbs : 0.0);
  }
  std::printf(
      "\nGoal (issue 46): element-wise kernels and reductions at 85 %% or more of the copy's "
      "bandwidth. Bytes moved: what each kernel must read and write at least (a copy: read + "
      "write; the BN forward with batch statistics reads x twice).\n\n");
}

}  // namespace gpu_bench
