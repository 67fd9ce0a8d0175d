// CPU kernel of accuracy: the first maximum of each row, one pass.
#include "backend/cpu/kernel_list.h"
#include "kernels/evaluation.h"

namespace chainerc::cpu {
namespace {

void accuracy_kernel(const Array& y, const Array& t, Array& out) {
  const int64_t n = y.shape()[0];
  const int64_t c = n ? y.size() / n : 0;
  dispatch_floating(y.dtype(), "accuracy", [&](auto tag) {
    using T = decltype(tag);
    const T* py = y.data<T>();
    const int32_t* pt = t.data<int32_t>();
    int64_t correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* row = py + i * c;
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j)
        if (row[j] > row[best]) best = j;
      correct += best == pt[i];
    }
    out.data<T>()[0] = static_cast<T>(static_cast<double>(correct) / static_cast<double>(n));
  });
}

}  // namespace

void register_accuracy_kernels() { kernels::accuracy.set(CH_DEVICE_CPU, accuracy_kernel); }

}  // namespace chainerc::cpu
