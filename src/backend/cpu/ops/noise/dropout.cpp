// CPU kernel of dropout: the mask of kernels/pointwise/noise.h and the
// product, in one pass over the pool.
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/noise.h"
#include "kernels/pointwise/noise.h"

namespace chainerc::cpu {
namespace {

void dropout_kernel(const Array& x, uint64_t seed, double ratio, Array& mask, Array& y) {
  const pointwise::DropoutMask draw{seed, pointwise::dropout_threshold(ratio)};
  dispatch_floating(x.dtype(), "dropout", [&](auto t) {
    using T = decltype(t);
    const T scale = static_cast<T>(1.0 / (1.0 - ratio));
    const T* px = x.data<T>();
    T *pm = mask.data<T>(), *py = y.data<T>();
    parallel_for(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T m = draw(i, scale);
        pm[i] = m;
        py[i] = px[i] * m;
      }
    });
  });
}

}  // namespace

void register_dropout_kernels() { kernels::dropout.set(CH_DEVICE_CPU, dropout_kernel); }

}  // namespace chainerc::cpu
