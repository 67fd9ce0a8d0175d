// CPU kernels of the optimizers' gradient utilities (zero_grads, clip_grads,
// weight_decay, compute_grads_norm): the functors of
// kernels/pointwise/optimizers.h over chunks of the thread pool.
#include <cstring>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

// All-zero bytes are 0 in every dtype: memset in chunks on the pool
// (a large model's gradients are several MiB per step).
void zero_fill_kernel(Array& x) {
  char* bytes = static_cast<char*>(x.raw());
  parallel_for(static_cast<int64_t>(x.nbytes()), int64_t{1} << 18, [bytes](int64_t b, int64_t e) {
    std::memset(bytes + b, 0, static_cast<size_t>(e - b));
  });
}

void scale_in_place_kernel(Array& x, double s) {
  dispatch_floating(x.dtype(), "scale_in_place", [&](auto tag) {
    using T = decltype(tag);
    T* px = x.data<T>();
    const T st = static_cast<T>(s);
    parallel_for(x.size(), kElementwiseGrain, [=](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) pointwise::ScaleInPlace{}(px[k], st);
    });
  });
}

void add_scaled_in_place_kernel(Array& y, double s, const Array& x) {
  dispatch_floating(y.dtype(), "add_scaled_in_place", [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    const T* px = x.data<T>();
    const T st = static_cast<T>(s);
    parallel_for(y.size(), kElementwiseGrain, [=](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) pointwise::AddScaledInPlace{}(py[k], px[k], st);
    });
  });
}

double sum_of_squares_kernel(const Array& x) {
  return dispatch_floating(x.dtype(), "sum_of_squares", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    return sum_blocks(x.size(), [px](int64_t b, int64_t e) {
      double acc = 0;
      for (int64_t k = b; k < e; ++k) acc += pointwise::SquareAsDouble{}(px[k]);
      return acc;
    });
  });
}

void sum_of_squares_all_kernel(const std::vector<Array>& xs, std::vector<double>& sums) {
  sums.assign(xs.size(), 0.0);
  for (size_t i = 0; i < xs.size(); ++i) sums[i] = sum_of_squares_kernel(xs[i]);
}

}  // namespace

void register_grad_utils_kernels() {
  constexpr int32_t cpu = CH_DEVICE_CPU;
  kernels::zero_fill.set(cpu, zero_fill_kernel);
  kernels::scale_in_place.set(cpu, scale_in_place_kernel);
  kernels::add_scaled_in_place.set(cpu, add_scaled_in_place_kernel);
  kernels::sum_of_squares.set(cpu, sum_of_squares_kernel);
  kernels::sum_of_squares_all.set(cpu, sum_of_squares_all_kernel);
}

}  // namespace chainerc::cpu
