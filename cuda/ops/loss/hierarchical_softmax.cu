// CUDA kernels of BinaryHierarchicalSoftmax. The host tables of the tree's
// paths (kernels::HsmPaths) are copied to each device once, at the first
// call there, and kept with the paths (HsmPaths::device_tables). One block per sample (grid-stride
// over the samples) walks its word's path: each node's dot product is a
// block-wide sum. Forward writes each sample's loss, added by one block in
// double; backward accumulates gx per sample and scatters gW with atomicAdd
// (rows of W are shared by samples, so gW's sums are in no fixed order), or,
// under ch_config_set_deterministic, keeps each (sample, node) coefficient
// and adds gW in a second kernel, a thread per column in sample order.
#include "core/config.h"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "cuda/runtime/deferred_errors.h"
#include "kernels/loss.h"
#include "kernels/pointwise/loss.h"

namespace chainerc::cuda {
namespace {

// The path tables on the device.
struct DevicePaths {
  Array start, length, nodes, codes;
  int64_t n_words;
  DevicePaths(const kernels::HsmPaths& p, Device device)
      : start(upload(p.start, device)),
        length(upload(p.length, device)),
        nodes(upload(p.nodes, device)),
        codes(upload(p.codes, device)),
        n_words(static_cast<int64_t>(p.start.size())) {}
  const int64_t* start_ptr() const { return static_cast<const int64_t*>(start.raw()); }
  const int64_t* length_ptr() const { return static_cast<const int64_t*>(length.raw()); }
  const int32_t* nodes_ptr() const { return static_cast<const int32_t*>(nodes.raw()); }
  const int8_t* codes_ptr() const { return static_cast<const int8_t*>(codes.raw()); }
};

// Whether label w is a word (leaf) of the tree. A bad label is reported by
// the deferred check (hsm_defer_bad_label); the kernels skip its sample
// (NaN loss, no gradient) so that nothing is read outside the tables.
__device__ __forceinline__ bool is_word(int32_t w, int64_t n_words,
                                        const int64_t* __restrict__ start) {
  return w >= 0 && w < n_words && start[w] >= 0;
}

// The paths' tables on `device`, copied there at the first call.
const DevicePaths& device_paths(const kernels::HsmPaths& paths, Device device) {
  kernels::HsmPaths::DeviceTables& cache = *paths.device_tables;
  std::lock_guard<std::mutex> l(cache.mutex);
  std::shared_ptr<void>& slot = cache.by_device[device.index];
  if (!slot) slot = std::make_shared<DevicePaths>(paths, device);
  return *static_cast<const DevicePaths*>(slot.get());
}

__global__ void hsm_bad_label_kernel(const int32_t* __restrict__ t, int64_t n,
                                     const int64_t* __restrict__ start, int64_t n_words,
                                     unsigned long long* first) {
  for (int64_t s = grid_start(); s < n; s += grid_step())
    if (t[s] < 0 || t[s] >= n_words || start[t[s]] < 0) {
      record_first(first, s);
      return;
    }
}

kernels::BadLabel hsm_find_bad_label(const Array& t, const kernels::HsmPaths& paths) {
  if (t.size() == 0) return {};
  DeviceGuard guard(t.device().index);
  const Array& start = device_paths(paths, t.device()).start;
  FirstIndex first(t.device());
  launch_elementwise("hsm_find_bad_label", t.size(), hsm_bad_label_kernel, t.data<int32_t>(),
                     t.size(), static_cast<const int64_t*>(start.raw()),
                     static_cast<int64_t>(paths.start.size()), first.slot());
  const int64_t s = first.get();
  if (s < 0) return {};
  return {s, static_cast<int64_t>(t.get(s))};
}

// words[1] = t[words[0]] once the check recorded an index.
__global__ void hsm_fetch_bad_label_kernel(const int32_t* __restrict__ t,
                                           unsigned long long* __restrict__ words) {
  if (words[0] != ~0ull) words[1] = static_cast<unsigned long long>(t[words[0]]);
}

// The same check, reported at the next synchronisation.
void hsm_defer_bad_label(const Array& t, const kernels::HsmPaths& paths,
                         const kernels::DescribeBadIndex& describe) {
  if (t.size() == 0) return;
  DeviceGuard guard(t.device().index);
  const DevicePaths& p = device_paths(paths, t.device());
  unsigned long long* words = deferred_check_slot(t.device().index, describe);
  launch_elementwise("hsm_defer_bad_label", t.size(), hsm_bad_label_kernel, t.data<int32_t>(),
                     t.size(), p.start_ptr(), p.n_words, words);
  check_launch(launch(hsm_fetch_bad_label_kernel, 1, 1, 0, nullptr, t.data<int32_t>(), words),
               "hsm_defer_bad_label");
}

// per[s] = sum_k softplus(-b_k W[e_k] . x[s]) along the path of word t[s].
template <typename T>
__global__ void hsm_kernel(const T* __restrict__ x, const int32_t* __restrict__ t,
                           const T* __restrict__ W, const int64_t* __restrict__ start,
                           const int64_t* __restrict__ length, const int32_t* __restrict__ nodes,
                           const int8_t* __restrict__ codes, int64_t n, int64_t d, int64_t n_words,
                           double* __restrict__ per) {
  CH_EXTERN_SHARED(T, scratch);
  const pointwise::Softplus softplus{};
  for (int64_t s = blockIdx.x; s < n; s += gridDim.x) {
    if (!is_word(t[s], n_words, start)) {
      if (threadIdx.x == 0) per[s] = ::nan("");
      continue;
    }
    const int64_t off = start[t[s]], len = length[t[s]];
    const T* xs = x + s * d;
    T loss = 0;
    for (int64_t k = 0; k < len; ++k) {
      const T* row = W + static_cast<int64_t>(nodes[off + k]) * d;
      T dot = 0;
      for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dot += row[j] * xs[j];
      dot = block_sum(dot, scratch);
      loss += softplus(-dot * T(codes[off + k]));
    }
    if (threadIdx.x == 0) per[s] = static_cast<double>(loss);
  }
}

void hsm(const Array& x, const Array& t, const Array& W, const kernels::HsmPaths& paths, Array& y) {
  DeviceGuard guard(x.device().index);
  const int64_t n = x.shape()[0], d = x.shape()[1];
  const DevicePaths& p = device_paths(paths, x.device());
  Array per = Array::empty(DType::Float64, Shape{n}, x.device());
  dispatch_floating(x.dtype(), "BinaryHierarchicalSoftmax", [&](auto tag) {
    using T = decltype(tag);
    if (n > 0) {
      const int threads = row_threads(d);
      check_launch(
          launch(hsm_kernel<T>, blocks_for(n * threads, threads), threads, threads * sizeof(T),
                 nullptr, x.data<T>(), t.data<int32_t>(), W.data<T>(), p.start_ptr(),
                 p.length_ptr(), p.nodes_ptr(), p.codes_ptr(), n, d, p.n_words, per.data<double>()),
          "BinaryHierarchicalSoftmax");
    }
    finish_sum<T>(per, n, 1.0, y, "BinaryHierarchicalSoftmax");
  });
}

// Per sample s and path node k: g = -gloss b_k / (1 + exp(b_k W[e_k] . x[s]));
// gx[s] += g W[e_k] and gW[e_k] += g x[s].
template <typename T>
__global__ void hsm_grad_kernel(const T* __restrict__ x, const int32_t* __restrict__ t,
                                const T* __restrict__ W, const int64_t* __restrict__ start,
                                const int64_t* __restrict__ length,
                                const int32_t* __restrict__ nodes, const int8_t* __restrict__ codes,
                                const T* __restrict__ gloss, int64_t n, int64_t d,
                                T* __restrict__ gx, T* __restrict__ gW, T* __restrict__ coeffs,
                                int64_t max_length, int64_t n_words) {
  CH_EXTERN_SHARED(T, scratch);
  const pointwise::HsmGradCoeff coeff{};
  const T gl = gloss[0];
  for (int64_t s = blockIdx.x; s < n; s += gridDim.x) {
    if (!is_word(t[s], n_words, start)) continue;
    const int64_t off = start[t[s]], len = length[t[s]];
    const T* xs = x + s * d;
    T* gxs = gx + s * d;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t node = nodes[off + k];
      const T* row = W + node * d;
      T dot = 0;
      for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dot += row[j] * xs[j];
      dot = block_sum(dot, scratch);
      const T g = coeff(dot, T(codes[off + k]), gl);
      if (coeffs) {  // deterministic: gW in hsm_grad_w_kernel
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) gxs[j] += g * row[j];
        if (threadIdx.x == 0) coeffs[s * max_length + k] = g;
      } else {
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
          gxs[j] += g * row[j];
          atomicAdd(gW + node * d + j, g * xs[j]);
        }
      }
    }
  }
}

// gW[e_k, j] += coeffs[s, k] x[s, j] for every sample and path node, a thread
// per column j adding in sample and path order (deterministic).
template <typename T>
__global__ void hsm_grad_w_kernel(const T* __restrict__ x, const int32_t* __restrict__ t,
                                  const int64_t* __restrict__ start,
                                  const int64_t* __restrict__ length,
                                  const int32_t* __restrict__ nodes, const T* __restrict__ coeffs,
                                  int64_t n, int64_t d, int64_t max_length, int64_t n_words,
                                  T* __restrict__ gW) {
  for (int64_t j = grid_start(); j < d; j += grid_step())
    for (int64_t s = 0; s < n; ++s) {
      if (!is_word(t[s], n_words, start)) continue;
      const int64_t off = start[t[s]], len = length[t[s]];
      for (int64_t k = 0; k < len; ++k)
        gW[static_cast<int64_t>(nodes[off + k]) * d + j] +=
            coeffs[s * max_length + k] * x[s * d + j];
    }
}

void hsm_grad(const Array& x, const Array& t, const Array& W, const kernels::HsmPaths& paths,
              const Array& gloss, Array& gx, Array& gW) {
  const int64_t n = x.shape()[0], d = x.shape()[1];
  if (n == 0) return;
  DeviceGuard guard(x.device().index);
  const DevicePaths& p = device_paths(paths, x.device());
  dispatch_floating(x.dtype(), "BinaryHierarchicalSoftmax", [&](auto tag) {
    using T = decltype(tag);
    const int threads = row_threads(d);
    const int64_t max_length = paths.max_length > 0 ? paths.max_length : 1;
    Array coeffs;
    if (config::deterministic()) coeffs = Array::empty(x.dtype(), Shape{n, max_length}, x.device());
    T* pc = coeffs.defined() ? coeffs.data<T>() : nullptr;
    check_launch(
        launch(hsm_grad_kernel<T>, blocks_for(n * threads, threads), threads, threads * sizeof(T),
               nullptr, x.data<T>(), t.data<int32_t>(), W.data<T>(), p.start_ptr(), p.length_ptr(),
               p.nodes_ptr(), p.codes_ptr(), gloss.data<T>(), n, d, gx.data<T>(), gW.data<T>(), pc,
               max_length, p.n_words),
        "BinaryHierarchicalSoftmax");
    if (pc)
      launch_elementwise("BinaryHierarchicalSoftmax", d, hsm_grad_w_kernel<T>, x.data<T>(),
                         t.data<int32_t>(), p.start_ptr(), p.length_ptr(), p.nodes_ptr(),
                         static_cast<const T*>(pc), n, d, max_length, p.n_words, gW.data<T>());
  });
}

}  // namespace

void register_hierarchical_softmax_kernels() {
  kernels::hsm_find_bad_label.set(CH_DEVICE_CUDA, hsm_find_bad_label);
  kernels::hsm_defer_bad_label.set(CH_DEVICE_CUDA, hsm_defer_bad_label);
  kernels::hsm.set(CH_DEVICE_CUDA, hsm);
  kernels::hsm_grad.set(CH_DEVICE_CUDA, hsm_grad);
}

}  // namespace chainerc::cuda
