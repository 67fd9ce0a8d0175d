// CPU kernels that join Inception's branch outputs along the channel axis
// and split the gradient back (one sample per task of the pool).
#include <cstring>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

// The elements per sample of each part and of the whole.
int64_t per_sample(const Array& a) { return a.shape()[0] ? a.size() / a.shape()[0] : 0; }

void concat_channels(const std::vector<Array>& parts, Array& y) {
  const int64_t N = y.shape()[0], total = per_sample(y);
  const size_t esize = dtype_size(y.dtype());
  char* py = static_cast<char*>(y.raw());
  parallel_for(N, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      char* d = py + static_cast<size_t>(n * total) * esize;
      for (const Array& a : parts) {
        const size_t bytes = static_cast<size_t>(per_sample(a)) * esize;
        std::memcpy(d, static_cast<const char*>(a.raw()) + static_cast<size_t>(n) * bytes, bytes);
        d += bytes;
      }
    }
  });
}

void split_channels(const Array& g, std::vector<Array>& parts) {
  const int64_t N = g.shape()[0], total = per_sample(g);
  const size_t esize = dtype_size(g.dtype());
  const char* pg = static_cast<const char*>(g.raw());
  parallel_for(N, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const char* s = pg + static_cast<size_t>(n * total) * esize;
      for (Array& a : parts) {
        const size_t bytes = static_cast<size_t>(per_sample(a)) * esize;
        std::memcpy(static_cast<char*>(a.raw()) + static_cast<size_t>(n) * bytes, s, bytes);
        s += bytes;
      }
    }
  });
}

}  // namespace

void register_inception_kernels() {
  kernels::concat_channels.set(CH_DEVICE_CPU, concat_channels);
  kernels::split_channels.set(CH_DEVICE_CPU, split_channels);
}

}  // namespace chainerc::cpu
