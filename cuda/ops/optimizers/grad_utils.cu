// CUDA kernels of the optimizers' gradient utilities: zero_fill (zero_grads),
// scale_in_place (clip_grads), add_scaled_in_place (weight_decay) through the
// functors of kernels/pointwise/optimizers.h, and sum_of_squares
// (compute_grads_norm): each block sums its grid-stride share in double
// (block_sum, a fixed tree), the blocks' sums are copied to the host and
// added in block order, so the result is reproducible on a device;
// sum_of_squares_all does every gradient of an optimizer with one copy.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/optimizers.h"

namespace chainerc::cuda {
namespace {

void zero_fill(Array& x) {
  if (x.nbytes() == 0) return;
  DeviceGuard guard(x.device().index);
  check(cudaMemsetAsync(x.raw(), 0, x.nbytes(), nullptr), "zero_fill", "cudaMemsetAsync");
}

// Both in 16-byte packs where the arrays are 16-byte aligned (Pack in
// cuda/ops/elementwise.cuh), the n % V trailing elements one at a time.
template <typename T, int V>
__global__ void scale_in_place_kernel(T* __restrict__ x, T s, int64_t n) {
  const pointwise::ScaleInPlace f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> px = load_pack<V>(x, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) f(px.v[j], s);
    store_pack<V>(x, k, px);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) f(x[i], s);
}

void scale_in_place(Array& x, double s) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "scale_in_place", [&](auto tag) {
    using T = decltype(tag);
    dispatch_vector_width<T>({x.raw()}, [&](auto v) {
      constexpr int V = decltype(v)::value;
      launch_packed<V>("scale_in_place", x.size(), scale_in_place_kernel<T, V>, x.data<T>(),
                       static_cast<T>(s), x.size());
    });
  });
}

template <typename T, int V>
__global__ void add_scaled_in_place_kernel(T* __restrict__ y, T s, const T* __restrict__ x,
                                           int64_t n) {
  const pointwise::AddScaledInPlace f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> py = load_pack<V>(y, k);
    const Pack<T, V> px = load_pack<V>(x, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) f(py.v[j], px.v[j], s);
    store_pack<V>(y, k, py);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) f(y[i], x[i], s);
}

void add_scaled_in_place(Array& y, double s, const Array& x) {
  DeviceGuard guard(y.device().index);
  dispatch_floating(y.dtype(), "add_scaled_in_place", [&](auto tag) {
    using T = decltype(tag);
    dispatch_vector_width<T>({y.raw(), x.raw()}, [&](auto v) {
      constexpr int V = decltype(v)::value;
      launch_packed<V>("add_scaled_in_place", y.size(), add_scaled_in_place_kernel<T, V>,
                       y.data<T>(), static_cast<T>(s), x.data<T>(), y.size());
    });
  });
}

template <typename T>
__global__ void sum_of_squares_kernel(const T* __restrict__ x, int64_t n,
                                      double* __restrict__ block_sums) {
  __shared__ double scratch[kBlockThreads];
  const pointwise::SquareAsDouble square{};
  double acc = 0;
  for (int64_t i = grid_start(); i < n; i += grid_step()) acc += square(x[i]);
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = acc;
}

// At most 1024 blocks per array: enough to fill a GPU, and a small copy back.
unsigned square_blocks(int64_t n) {
  const unsigned blocks = blocks_for(n);
  return blocks > 1024 ? 1024 : blocks;
}

void launch_sum_of_squares(const Array& x, unsigned blocks, double* block_sums) {
  dispatch_floating(x.dtype(), "sum_of_squares", [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(sum_of_squares_kernel<T>, blocks, kBlockThreads, 0, nullptr, x.data<T>(),
                        x.size(), block_sums),
                 "sum_of_squares");
  });
}

double sum_of_squares(const Array& x) {
  if (x.size() == 0) return 0;
  DeviceGuard guard(x.device().index);
  const unsigned blocks = square_blocks(x.size());
  Array sums = Array::empty(DType::Float64, Shape{static_cast<int64_t>(blocks)}, x.device());
  launch_sum_of_squares(x, blocks, sums.data<double>());
  const Array host = sums.to_device(Device{});
  double total = 0;
  for (unsigned b = 0; b < blocks; ++b) total += host.data<double>()[b];
  return total;
}

// Every array's block sums into one buffer, one copy back, each array's
// blocks added in order as sum_of_squares does.
void sum_of_squares_all(const std::vector<Array>& xs, std::vector<double>& out) {
  out.assign(xs.size(), 0.0);
  std::vector<int64_t> offset(xs.size() + 1, 0);
  for (size_t i = 0; i < xs.size(); ++i)
    offset[i + 1] = offset[i] + (xs[i].size() ? square_blocks(xs[i].size()) : 0);
  if (offset.back() == 0) return;
  const Device dev = xs[0].device();
  DeviceGuard guard(dev.index);
  Array sums = Array::empty(DType::Float64, Shape{offset.back()}, dev);
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i].size())
      launch_sum_of_squares(xs[i], static_cast<unsigned>(offset[i + 1] - offset[i]),
                            sums.data<double>() + offset[i]);
  const Array host = sums.to_device(Device{});
  for (size_t i = 0; i < xs.size(); ++i)
    for (int64_t b = offset[i]; b < offset[i + 1]; ++b) out[i] += host.data<double>()[b];
}

}  // namespace

void register_grad_utils_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::zero_fill.set(gpu, zero_fill);
  kernels::scale_in_place.set(gpu, scale_in_place);
  kernels::add_scaled_in_place.set(gpu, add_scaled_in_place);
  kernels::sum_of_squares.set(gpu, sum_of_squares);
  kernels::sum_of_squares_all.set(gpu, sum_of_squares_all);
}

}  // namespace chainerc::cuda
