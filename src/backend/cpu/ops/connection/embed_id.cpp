// CPU kernels of EmbedID: the id check, the row gather and its scatter-add.
#include <algorithm>
#include <cstring>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

int64_t embed_id_find_invalid(const Array& x, int64_t in_size) {
  const int32_t* ids = x.data<int32_t>();
  for (int64_t k = 0, n = x.size(); k < n; ++k)
    if (ids[k] < 0 || ids[k] >= in_size) return k;
  return -1;
}

void embed_id_forward(const Array& x, const Array& W, Array& y) {
  const int32_t* ids = x.data<int32_t>();
  const int64_t n = x.size(), out_size = W.shape()[1];
  const size_t row = static_cast<size_t>(out_size) * dtype_size(W.dtype());
  const char* w = static_cast<const char*>(W.raw());
  char* py = static_cast<char*>(y.raw());
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, out_size));
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k)
      std::memcpy(py + static_cast<size_t>(k) * row, w + static_cast<size_t>(ids[k]) * row, row);
  });
}

void embed_id_backward(const Array& x, const Array& gy, Array& gW) {
  const int32_t* ids = x.data<int32_t>();
  const int64_t n = x.size(), m = gW.shape()[1];
  dispatch_floating(gW.dtype(), "EmbedID", [&](auto t) {
    using T = decltype(t);
    T* gw = gW.data<T>();
    const T* g = gy.data<T>();
    // Scatter-add (ids may repeat): threads split the columns, so no two
    // write the same element.
    const int64_t col_grain = std::max<int64_t>(8, kElementwiseGrain / std::max<int64_t>(1, n));
    parallel_for(m, col_grain, [&](int64_t jb, int64_t je) {
      for (int64_t k = 0; k < n; ++k) {
        T* dst = gw + ids[k] * m;
        const T* src = g + k * m;
        for (int64_t j = jb; j < je; ++j) dst[j] += src[j];
      }
    });
  });
}

}  // namespace

void register_embed_id_kernels() {
  kernels::embed_id_find_invalid.set(CH_DEVICE_CPU, embed_id_find_invalid);
  kernels::embed_id_forward.set(CH_DEVICE_CPU, embed_id_forward);
  kernels::embed_id_backward.set(CH_DEVICE_CPU, embed_id_backward);
}

}  // namespace chainerc::cpu
