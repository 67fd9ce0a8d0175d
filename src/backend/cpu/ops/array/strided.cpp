// CPU kernels of the strided gather and its adjoint, the scatter-add
// (kernels::gather / kernels::scatter_add): get_item, flip, tile, repeat,
// pad, select_item and their backwards. y's elements are walked in order,
// row by row of its last axis, the position in x kept incrementally.
#include <algorithm>
#include <cstdint>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/array.h"

namespace chainerc::cpu {
namespace {

// Calls f(flat index of y, position in x) for the elements [r0, r1) of the
// rows of y (rows of its last axis), in order.
template <typename F>
void walk_rows(const Shape& ys, const kernels::StridedView& v, const int32_t* index, int64_t r0,
               int64_t r1, F&& f) {
  const int32_t nd = ys.ndim();
  const int64_t inner = nd ? ys[nd - 1] : 1;
  const int64_t st = nd ? v.stride[nd - 1] : 0, ist = nd ? v.index_stride[nd - 1] : 0;
  int64_t idx[CH_MAX_NDIM] = {};
  int64_t rem = r0, off = v.offset, ioff = 0;
  for (int32_t d = nd - 2; d >= 0; --d) {
    idx[d] = rem % ys[d];
    rem /= ys[d];
    off += idx[d] * v.stride[d];
    ioff += idx[d] * v.index_stride[d];
  }
  for (int64_t r = r0; r < r1; ++r) {
    int64_t p = off, ip = ioff;
    for (int64_t k = 0; k < inner; ++k, p += st, ip += ist) {
      int64_t pos = p;
      if (index) {
        int64_t j = index[ip];
        if (j < 0) j += v.index_extent;
        pos += j * v.index_scale;
      }
      f(r * inner + k, pos);
    }
    for (int32_t d = nd - 2; d >= 0; --d) {
      off += v.stride[d];
      ioff += v.index_stride[d];
      if (++idx[d] < ys[d]) break;
      off -= v.stride[d] * ys[d];
      ioff -= v.index_stride[d] * ys[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
void gather_as(const Array& x, const kernels::StridedView& v, const Array& index, Array& y) {
  const Shape& ys = y.shape();
  const int64_t n = ys.size();
  if (n == 0) return;
  const int64_t inner = ys.ndim() ? ys[ys.ndim() - 1] : 1;
  const int64_t rows = inner ? n / inner : 0;
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int32_t* pi = index.defined() ? index.data<int32_t>() : nullptr;
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner)),
               [&](int64_t r0, int64_t r1) {
                 walk_rows(ys, v, pi, r0, r1, [&](int64_t i, int64_t pos) { py[i] = px[pos]; });
               });
}

// Sequential: positions may repeat (repeat, tile, an index array).
template <typename T>
void scatter_add_as(const Array& y, const kernels::StridedView& v, const Array& index, Array& x) {
  const Shape& ys = y.shape();
  const int64_t n = ys.size();
  if (n == 0) return;
  const int64_t inner = ys.ndim() ? ys[ys.ndim() - 1] : 1;
  const T* py = y.data<T>();
  T* px = x.data<T>();
  const int32_t* pi = index.defined() ? index.data<int32_t>() : nullptr;
  walk_rows(ys, v, pi, 0, inner ? n / inner : 0, [&](int64_t i, int64_t pos) { px[pos] += py[i]; });
}

void gather_kernel(const Array& x, const kernels::StridedView& v, const Array& index, Array& y) {
  if (dtype_size(x.dtype()) == 8)
    gather_as<uint64_t>(x, v, index, y);
  else
    gather_as<uint32_t>(x, v, index, y);
}

void scatter_add_kernel(const Array& y, const kernels::StridedView& v, const Array& index,
                        Array& x) {
  switch (x.dtype()) {
    case DType::Float32:
      scatter_add_as<float>(y, v, index, x);
      break;
    case DType::Float64:
      scatter_add_as<double>(y, v, index, x);
      break;
    case DType::Int32:
      scatter_add_as<int32_t>(y, v, index, x);
      break;
  }
}

}  // namespace

void register_strided_kernels() {
  kernels::gather.set(CH_DEVICE_CPU, gather_kernel);
  kernels::scatter_add.set(CH_DEVICE_CPU, scatter_add_kernel);
}

}  // namespace chainerc::cpu
