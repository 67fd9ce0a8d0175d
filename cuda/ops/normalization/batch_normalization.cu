// CUDA kernels of BatchNormalization on x viewed as (L, C, R), parallel over
// the batch as well as the channels, in three launches each way:
//
// 1. statistics: the m = L * R elements of each channel are cut into
//    `chunks` ranges, and a block takes one range of one channel (or, when
//    R = 1, one range of rows of 32 neighbouring channels, so that a warp
//    reads consecutive elements); each range's statistics go to a partial
//    buffer. Forward: count, mean and sum of squared deviations (M2), each
//    thread summing its elements shifted by the first of them in double,
//    merged by Chan et al.'s formula (pairwise update of mean and M2) across
//    the block and the ranges: no cancellation of sum(x^2) - sum(x)^2 / m in
//    float32 or float64. Backward: sum(gy) and sum(gy * x_hat) in double.
// 2. a thread per channel merges its ranges in order, moves the running
//    averages (forward) or accumulates ggamma and gbeta (backward), and
//    writes the per-channel values the element-wise pass needs;
// 3. an element-wise pass over x (16-byte packs where R allows), the channel
//    of an element found by fast division (cuda/ops/index.cuh), through the
//    shared per-element math of pointwise/normalization.h.
//
// The order of every addition depends on the shape only (no atomics), so
// results are reproducible. Test mode's forward skips stage 1.
#include <cmath>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/normalization.h"
#include "kernels/pointwise/normalization.h"

namespace chainerc::cuda {
namespace {

using kernels::BatchNorm;

// ---- Accumulators of stage 1 (device-side, in double)

// Count, mean and sum of squared deviations of a set of elements.
struct Moments {
  double n, mean, m2;
};
// The moments of two disjoint sets (Chan, Golub and LeVeque, 1979).
__host__ __device__ __forceinline__ Moments merge(const Moments& a, const Moments& b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  const double n = a.n + b.n, d = b.mean - a.mean, wb = b.n / n;
  return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

// One thread's elements: sums of x - k and (x - k)^2 with k its first
// element, so that the sums stay of the size of the spread, not the mean.
struct ShiftedSums {
  double k = 0, s1 = 0, s2 = 0;
  int64_t n = 0;
  __device__ __forceinline__ void add(double x) {
    if (n == 0) k = x;
    const double d = x - k;
    s1 += d;
    s2 += d * d;
    ++n;
  }
  __device__ __forceinline__ Moments moments() const {
    if (n == 0) return {0, 0, 0};
    const double dn = static_cast<double>(n), mean = s1 / dn;
    const double m2 = s2 - s1 * mean;
    return {dn, k + mean, m2 > 0 ? m2 : 0};
  }
};

// Backward's per-channel sums: sum(gy) and sum(gy * x_hat).
struct GradSums {
  double gb, gg;
};
__host__ __device__ __forceinline__ GradSums merge(const GradSums& a, const GradSums& b) {
  return {a.gb + b.gb, a.gg + b.gg};
}

// What stage 1 reads per element: the forward's x, or backward's gy and
// x_hat recomputed from x and the channel's statistics.
template <typename T>
struct ForwardStats {
  const T* x;
  using Thread = ShiftedSums;
  using Result = Moments;
  __device__ __forceinline__ void start(Thread&, int64_t) const {}
  __device__ __forceinline__ void add(Thread& t, int64_t i) const { t.add(x[i]); }
  __device__ __forceinline__ Result result(const Thread& t) const { return t.moments(); }
};
template <typename T>
struct BackwardSums {
  const T *x, *gy, *mean, *stat;
  bool use_batch;
  double eps;
  struct Thread {
    double gb = 0, gg = 0;
    T mu, inv;
  };
  using Result = GradSums;
  __device__ __forceinline__ T inv_std(int64_t c) const {
    return use_batch ? stat[c] : static_cast<T>(1.0 / sqrt(static_cast<double>(stat[c]) + eps));
  }
  __device__ __forceinline__ void start(Thread& t, int64_t c) const {
    t.mu = mean[c];
    t.inv = inv_std(c);
  }
  __device__ __forceinline__ void add(Thread& t, int64_t i) const {
    const T g = gy[i];
    t.gb += g;
    t.gg += g * pointwise::BatchNormHat{}(x[i], t.mu, t.inv);
  }
  __device__ __forceinline__ Result result(const Thread& t) const { return {t.gb, t.gg}; }
};

// Results of the block's threads merged in a fixed tree (blockDim.x a power
// of two); thread 0 gets the block's.
template <typename R>
__device__ R block_merge(R v, R* scratch) {
  const unsigned t = threadIdx.x;
  scratch[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) scratch[t] = merge(scratch[t], scratch[t + s]);
    __syncthreads();
  }
  return scratch[0];
}

// Stage 1, R > 1: block (channel blockIdx.x, range blockIdx.y); the range's
// elements j (in (l, r) order) taken by the threads in turn, (l, r) advanced
// without a division per element. partial[c * chunks + range].
template <typename S>
__global__ void channel_stats_kernel(S s, BatchNorm bn, int64_t per_chunk,
                                     typename S::Result* __restrict__ partial) {
  __shared__ typename S::Result scratch[kBlockThreads];
  const int64_t c = blockIdx.x, m = bn.L * bn.R;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * per_chunk;
  const int64_t end = per_chunk < m - begin ? begin + per_chunk : m;
  typename S::Thread t;
  s.start(t, c);
  const int64_t step = blockDim.x, step_l = step / bn.R, step_r = step % bn.R, row = bn.C * bn.R;
  int64_t j = begin + threadIdx.x, l = j / bn.R, r = j % bn.R;
  for (; j < end; j += step) {
    s.add(t, l * row + c * bn.R + r);
    l += step_l;
    r += step_r;
    if (r >= bn.R) {
      r -= bn.R;
      ++l;
    }
  }
  const typename S::Result b = block_merge(s.result(t), scratch);
  if (threadIdx.x == 0) partial[c * gridDim.y + blockIdx.y] = b;
}

// Stage 1, R = 1 (x is (L, C)): block (kCols channels x kRowThreads) over
// channels blockIdx.x * kCols.. and rows of range blockIdx.y; each thread
// takes every kRowThreads-th row, thread row 0 merges the column in order.
constexpr int kCols = 32, kRowThreads = 8;

template <typename S>
__global__ void row_stats_kernel(S s, BatchNorm bn, int64_t per_chunk,
                                 typename S::Result* __restrict__ partial) {
  __shared__ typename S::Result scratch[kRowThreads][kCols];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kCols + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * per_chunk;
  const int64_t end = per_chunk < bn.L - begin ? begin + per_chunk : bn.L;
  typename S::Thread t;
  if (c < bn.C) {
    s.start(t, c);
    for (int64_t l = begin + threadIdx.y; l < end; l += kRowThreads) s.add(t, l * bn.C + c);
  }
  scratch[threadIdx.y][threadIdx.x] = s.result(t);
  __syncthreads();
  if (threadIdx.y == 0 && c < bn.C) {
    typename S::Result b = scratch[0][threadIdx.x];
    for (int k = 1; k < kRowThreads; ++k) b = merge(b, scratch[k][threadIdx.x]);
    partial[c * gridDim.y + blockIdx.y] = b;
  }
}

// Blocks stage 1 aims at: a few per SM of a large GPU; under the emulator,
// where each block is 256 fibers, fewer (ranges still merge in the tests).
#if defined(CH_CUDA_EMULATED_RUNTIME)
constexpr int64_t kTargetBlocks = 16;
#else
constexpr int64_t kTargetBlocks = 1024;
#endif

// Stage 1's geometry: the layout, the ranges per channel and their length.
struct StatsPlan {
  bool rows;  // R = 1: row_stats_kernel
  int64_t chunks, per_chunk;
};

StatsPlan plan_stats(const BatchNorm& bn) {
  StatsPlan p;
  p.rows = bn.R == 1;
  // Elements (rows when R = 1) a range takes at least: 4 per thread.
  const int64_t extent = p.rows ? bn.L : bn.L * bn.R;
  const int64_t least = p.rows ? 4 * kRowThreads : 4 * kBlockThreads;
  const int64_t groups = p.rows ? (bn.C + kCols - 1) / kCols : bn.C;
  int64_t chunks = kTargetBlocks / groups;
  if (chunks > extent / least) chunks = extent / least;
  if (chunks < 1) chunks = 1;
  // No more than a grid's y extent of ranges (channels go along x).
  if (chunks > 65535) chunks = 65535;
  p.per_chunk = extent > 0 ? (extent + chunks - 1) / chunks : 1;
  p.chunks = extent > 0 ? (extent + p.per_chunk - 1) / p.per_chunk : 1;
  return p;
}

// Runs stage 1 of `s` into partial (C * chunks results).
template <typename S>
void launch_stats(const S& s, const BatchNorm& bn, const StatsPlan& p, typename S::Result* partial,
                  const char* who) {
  if (p.rows)
    check_launch(launch(row_stats_kernel<S>,
                        dim3(static_cast<unsigned>((bn.C + kCols - 1) / kCols),
                             static_cast<unsigned>(p.chunks)),
                        dim3(kCols, kRowThreads), 0, nullptr, s, bn, p.per_chunk, partial),
                 who);
  else
    check_launch(launch(channel_stats_kernel<S>,
                        dim3(static_cast<unsigned>(bn.C), static_cast<unsigned>(p.chunks)),
                        kBlockThreads, 0, nullptr, s, bn, p.per_chunk, partial),
                 who);
}

// A device buffer of `count` results of type R (doubles underneath).
template <typename R>
Array result_buffer(int64_t count, Device device) {
  static_assert(sizeof(R) % sizeof(double) == 0, "results are made of doubles");
  return Array::empty(DType::Float64, Shape{count * static_cast<int64_t>(sizeof(R) / 8)}, device);
}

// ---- Stage 2

// Forward: the channel's mean and 1 / sqrt(var + eps) into mu[c] and inv[c];
// with batch statistics (partial non-null) merged from the ranges, moving the
// running averages; else from the running averages.
template <typename T>
__global__ void forward_finish_kernel(const Moments* __restrict__ partial, int64_t chunks,
                                      BatchNorm bn, T* __restrict__ avg_mean,
                                      T* __restrict__ avg_var, T* __restrict__ mu,
                                      T* __restrict__ inv) {
  const double m = static_cast<double>(bn.L * bn.R);
  for (int64_t c = grid_start(); c < bn.C; c += grid_step()) {
    double mean, var;
    if (partial) {
      Moments t = partial[c * chunks];
      for (int64_t k = 1; k < chunks; ++k) t = merge(t, partial[c * chunks + k]);
      mean = t.n > 0 ? t.mean : ::nan("");  // no elements: 0 / 0, as the CPU
      var = t.m2 / m;
      avg_mean[c] = static_cast<T>(bn.decay * avg_mean[c] + (1 - bn.decay) * mean);
      avg_var[c] = static_cast<T>(bn.decay * avg_var[c] + (1 - bn.decay) * bn.adjust * var);
    } else {
      mean = avg_mean[c];
      var = avg_var[c];
    }
    mu[c] = static_cast<T>(mean);
    inv[c] = static_cast<T>(1.0 / sqrt(var + bn.eps));
  }
}

// Backward: ggamma and gbeta accumulate the channel's sums; per[c * 5 ..]
// gets mu, inv_std, coeff = gamma * inv_std, and the sums / m in T.
template <typename T>
__global__ void backward_finish_kernel(const GradSums* __restrict__ partial, int64_t chunks,
                                       BackwardSums<T> s, BatchNorm bn, const T* __restrict__ gamma,
                                       T* __restrict__ ggamma, T* __restrict__ gbeta,
                                       T* __restrict__ per) {
  const double m = static_cast<double>(bn.L * bn.R);
  for (int64_t c = grid_start(); c < bn.C; c += grid_step()) {
    GradSums t = partial[c * chunks];
    for (int64_t k = 1; k < chunks; ++k) t = merge(t, partial[c * chunks + k]);
    gbeta[c] += static_cast<T>(t.gb);
    ggamma[c] += static_cast<T>(t.gg);
    const T inv = s.inv_std(c);
    per[c * 5] = s.mean[c];
    per[c * 5 + 1] = inv;
    per[c * 5 + 2] = gamma[c] * inv;
    per[c * 5 + 3] = static_cast<T>(t.gg / m);
    per[c * 5 + 4] = static_cast<T>(t.gb / m);
  }
}

// ---- Stage 3: element-wise, V elements (one channel: R % V == 0) per step

// The channel of flat element i of (L, C, R): (i / R) % C.
template <typename U>
struct ChannelOf {
  FastDivider<U> r, c;
  __device__ __forceinline__ U operator()(U i) const {
    const U q = r.div(i);
    return q - c.div(q) * c.d;
  }
};

template <typename U>
ChannelOf<U> channel_of(const BatchNorm& bn) {
  return {FastDivider<U>(static_cast<U>(bn.R)), FastDivider<U>(static_cast<U>(bn.C))};
}

template <typename T, typename U, int V>
__global__ void apply_kernel(const T* __restrict__ x, const T* __restrict__ mu,
                             const T* __restrict__ inv, const T* __restrict__ gamma,
                             const T* __restrict__ beta, T* __restrict__ y, ChannelOf<U> ch,
                             U packs) {
  const pointwise::BatchNormApply apply{};
  for (U k = grid_start_as<U>(); k < packs; k += grid_step_as<U>()) {
    const U c = ch(k * V);
    const T m = mu[c], s = inv[c], g = gamma[c], b = beta[c];
    const Pack<T, V> a = load_pack<V>(x, k);
    Pack<T, V> r;
    CH_UNROLL
    for (int j = 0; j < V; ++j) r.v[j] = apply(a.v[j], m, s, g, b);
    store_pack<V>(y, k, r);
  }
}

template <typename T, typename U, int V>
__global__ void grad_kernel(const T* __restrict__ x, const T* __restrict__ gy,
                            const T* __restrict__ per, bool use_batch, T* __restrict__ gx,
                            ChannelOf<U> ch, U packs) {
  const pointwise::BatchNormHat hat{};
  const pointwise::BatchNormGrad grad{};
  for (U k = grid_start_as<U>(); k < packs; k += grid_step_as<U>()) {
    const T* p = per + static_cast<int64_t>(ch(k * V)) * 5;
    const Pack<T, V> g = load_pack<V>(gy, k);
    Pack<T, V> r;
    if (use_batch) {
      const Pack<T, V> a = load_pack<V>(x, k);
      CH_UNROLL
      for (int j = 0; j < V; ++j) r.v[j] = grad(g.v[j], hat(a.v[j], p[0], p[1]), p[2], p[3], p[4]);
    } else {
      CH_UNROLL
      for (int j = 0; j < V; ++j) r.v[j] = p[2] * g.v[j];
    }
    store_pack<V>(gx, k, r);
  }
}

// Launches an element-wise pass of stage 3 over all of x: packs of 16 bytes
// when R is a multiple of a pack and the pointers are aligned.
template <typename T, typename F>
void dispatch_pass(const BatchNorm& bn, std::initializer_list<const void*> pointers, F&& f) {
  const int64_t n = bn.L * bn.C * bn.R;
  dispatch_index(n, [&](auto u) {
    using U = decltype(u);
    dispatch_vector_width<T>(pointers, [&](auto v) {
      constexpr int V = decltype(v)::value;
      if (V > 1 && bn.R % V == 0)
        f(U{}, std::integral_constant<int, V>{}, channel_of<U>(bn), static_cast<U>(n / V));
      else
        f(U{}, std::integral_constant<int, 1>{}, channel_of<U>(bn), static_cast<U>(n));
    });
  });
}

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta, const BatchNorm& bn,
                        Array& avg_mean, Array& avg_var, Array& y, Array& mean, Array& inv_std) {
  if (bn.C <= 0) return;
  DeviceGuard guard(x.device().index);
  const char* who = "batch_normalization";
  dispatch_floating(x.dtype(), who, [&](auto t) {
    using T = decltype(t);
    // Without batch statistics, mu and inv go to a scratch buffer.
    Array scratch;
    T *mu = nullptr, *inv = nullptr;
    if (bn.use_batch) {
      mu = mean.data<T>();
      inv = inv_std.data<T>();
    } else {
      scratch = Array::empty(x.dtype(), Shape{2 * bn.C}, x.device());
      mu = scratch.data<T>();
      inv = mu + bn.C;
    }
    Array partial;
    const StatsPlan plan = plan_stats(bn);
    if (bn.use_batch) {
      partial = result_buffer<Moments>(bn.C * plan.chunks, x.device());
      // The op refuses batch statistics of no elements; were there none
      // (R = 0), empty moments: mean and var 0 / 0, as on the CPU.
      if (bn.L * bn.R > 0)
        launch_stats(ForwardStats<T>{x.data<T>()}, bn, plan,
                     reinterpret_cast<Moments*>(partial.raw()), who);
      else
        check(cudaMemsetAsync(partial.raw(), 0, partial.nbytes(), nullptr), who, "cudaMemsetAsync");
    }
    launch_elementwise(who, bn.C, forward_finish_kernel<T>,
                       bn.use_batch ? reinterpret_cast<const Moments*>(partial.raw()) : nullptr,
                       plan.chunks, bn, avg_mean.data<T>(), avg_var.data<T>(), mu, inv);
    if (bn.L * bn.R == 0) return;
    dispatch_pass<T>(bn, {x.data<T>(), y.data<T>()}, [&](auto u, auto v, auto ch, auto packs) {
      using U = decltype(u);
      constexpr int V = decltype(v)::value;
      launch_elementwise(who, static_cast<int64_t>(packs), apply_kernel<T, U, V>, x.data<T>(), mu,
                         inv, gamma.data<T>(), beta.data<T>(), y.data<T>(), ch, packs);
    });
  });
}

void batch_norm_backward(const Array& x, const Array& gy, const Array& mean, const Array& stat,
                         const Array& gamma, const BatchNorm& bn, Array& ggamma, Array& gbeta,
                         Array& gx) {
  if (bn.C <= 0) return;
  DeviceGuard guard(gy.device().index);
  const char* who = "batch_normalization";
  dispatch_floating(gy.dtype(), who, [&](auto t) {
    using T = decltype(t);
    const BackwardSums<T> sums{x.data<T>(),    gy.data<T>(), mean.data<T>(),
                               stat.data<T>(), bn.use_batch, bn.eps};
    const StatsPlan plan = plan_stats(bn);
    Array partial = result_buffer<GradSums>(bn.C * plan.chunks, x.device());
    if (bn.L * bn.R > 0) {
      launch_stats(sums, bn, plan, reinterpret_cast<GradSums*>(partial.raw()), who);
    } else {
      check(cudaMemsetAsync(partial.raw(), 0, partial.nbytes(), nullptr), who, "cudaMemsetAsync");
    }
    Array per = Array::empty(gy.dtype(), Shape{5 * bn.C}, gy.device());
    launch_elementwise(who, bn.C, backward_finish_kernel<T>,
                       reinterpret_cast<const GradSums*>(partial.raw()), plan.chunks, sums, bn,
                       gamma.data<T>(), ggamma.data<T>(), gbeta.data<T>(), per.data<T>());
    if (bn.L * bn.R == 0) return;
    dispatch_pass<T>(
        bn, {x.data<T>(), gy.data<T>(), gx.data<T>()}, [&](auto u, auto v, auto ch, auto packs) {
          using U = decltype(u);
          constexpr int V = decltype(v)::value;
          launch_elementwise(who, static_cast<int64_t>(packs), grad_kernel<T, U, V>, x.data<T>(),
                             gy.data<T>(), per.data<T>(), bn.use_batch, gx.data<T>(), ch, packs);
        });
  });
}

}  // namespace

void register_batch_normalization_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::batch_norm_forward.set(gpu, batch_norm_forward);
  kernels::batch_norm_backward.set(gpu, batch_norm_backward);
}

}  // namespace chainerc::cuda
