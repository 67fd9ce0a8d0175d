// CUDA kernels of softmax_cross_entropy: one block per row (grid-stride over
// the rows) takes the row's maximum, the sum of exponentials, writes the
// probabilities and the row's loss in one kernel; one block then adds the
// row losses in double in a fixed order. The gradient is element-wise.
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "kernels/loss.h"
#include "kernels/pointwise/arithmetic.h"

namespace chainerc::cuda {
namespace {

// prob[i, :] = softmax(x[i, :]); row_loss[i] = log(sum) + max - x[i, t[i]]
// (as the CPU kernel: the exponentials scaled by the reciprocal of their sum).
template <typename T>
__global__ void sce_rows_kernel(const T* __restrict__ x, const int32_t* __restrict__ t,
                                T* __restrict__ prob, double* __restrict__ row_loss, int64_t n,
                                int64_t c) {
  CH_EXTERN_SHARED(T, scratch);
  const pointwise::Exp exp_f{};
  const pointwise::Log log_f{};
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const T* xr = x + i * c;
    T* pr = prob + i * c;
    T m = xr[0];
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = xr[j] > m ? xr[j] : m;
    m = block_max(m, scratch);
    T s = 0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += exp_f(xr[j] - m);
    s = block_sum(s, scratch);
    const T r = T(1) / s;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) pr[j] = exp_f(xr[j] - m) * r;
    // A label outside [0, c) is reported by the deferred check
    // (ops/label_check.h); the loss is then NaN, and nothing is read outside x.
    if (threadIdx.x == 0)
      row_loss[i] =
          t[i] >= 0 && t[i] < c ? static_cast<double>(log_f(s) + m - xr[t[i]]) : ::nan("");
  }
}

void sce_kernel(const Array& x, const Array& t, Array& prob, Array& loss) {
  DeviceGuard guard(x.device().index);
  const int64_t n = x.shape()[0], c = x.shape()[1];
  Array row_loss = Array::empty(DType::Float64, Shape{n}, x.device());
  dispatch_floating(x.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    if (n > 0) {
      const int threads = row_threads(c);
      check_launch(launch(sce_rows_kernel<T>, blocks_for(n * threads, threads), threads,
                          threads * sizeof(T), nullptr, x.data<T>(), t.data<int32_t>(),
                          prob.data<T>(), row_loss.data<double>(), n, c),
                   "softmax_cross_entropy");
    }
    finish_sum<T>(row_loss, n, static_cast<double>(n), loss, "softmax_cross_entropy");
  });
}

// gx = prob * (gloss / N), less gloss / N at each row's label.
template <typename T, typename U>
__global__ void sce_grad_kernel(const T* __restrict__ prob, const int32_t* __restrict__ t,
                                const T* __restrict__ gloss, T* __restrict__ gx, U n,
                                FastDivider<U> c) {
  const T coeff = gloss[0] / static_cast<T>(n);
  const U size = n * c.d;
  for (U i = grid_start_as<U>(); i < size; i += grid_step_as<U>()) {
    const U row = c.div(i);
    T v = prob[i] * coeff;
    if (static_cast<int64_t>(i - row * c.d) == t[row]) v -= coeff;
    gx[i] = v;
  }
}

void sce_grad(const Array& prob, const Array& t, const Array& gloss, Array& gx) {
  DeviceGuard guard(prob.device().index);
  const int64_t n = prob.shape()[0], c = prob.shape()[1];
  dispatch_floating(prob.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    if (n * c == 0) return;
    dispatch_index(n * c, [&](auto u) {
      using U = decltype(u);
      launch_elementwise("softmax_cross_entropy_grad", n * c, sce_grad_kernel<T, U>, prob.data<T>(),
                         t.data<int32_t>(), gloss.data<T>(), gx.data<T>(), static_cast<U>(n),
                         FastDivider<U>(static_cast<U>(c)));
    });
  });
}

}  // namespace

void register_softmax_cross_entropy_kernels() {
  kernels::softmax_cross_entropy.set(CH_DEVICE_CUDA, sce_kernel);
  kernels::softmax_cross_entropy_grad.set(CH_DEVICE_CUDA, sce_grad);
}

}  // namespace chainerc::cuda
