// Average pooling's forward through cuDNN 9 (cudnnPoolingForward with
// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING: the window sum over kh * kw,
// padding counting as 0, as kernels/pooling.h's contract). The own kernels
// run for cover_all (cuDNN's output size is the floor one), for padding as
// large as the window, and for empty or int-overflowing shapes.
//
// Not through cuDNN, by the kernel contracts: max pooling (its forward must
// also give the argmax that its backward routes gradients by, which cuDNN
// does not return) and average pooling's backward (cudnnPoolingBackward takes
// x and y, which average_pool_2d_backward is not given).
#include "kernels/pooling.h"

#include "cuda/runtime/cuda_util.h"
#include "cudnn_util.h"

namespace chainerc::cuda::cudnn {
namespace {

Own<void(const Array&, const kernels::Pool2D&, Array&)> g_own_average_forward;

class PoolDesc {
 public:
  explicit PoolDesc(const kernels::Pool2D& p) {
    check(cudnnCreatePoolingDescriptor(&d_), "cudnnCreatePoolingDescriptor");
    const cudnnStatus_t st = cudnnSetPooling2dDescriptor(
        d_, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_PROPAGATE_NAN,
        static_cast<int>(p.kh), static_cast<int>(p.kw), static_cast<int>(p.ph),
        static_cast<int>(p.pw), static_cast<int>(p.sy), static_cast<int>(p.sx));
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyPoolingDescriptor(d_);
      check(st, "cudnnSetPooling2dDescriptor");
    }
  }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d_); }
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
  operator cudnnPoolingDescriptor_t() const { return d_; }

 private:
  cudnnPoolingDescriptor_t d_ = nullptr;
};

bool covered(const kernels::Pool2D& p) {
  return !p.cover_all && fits_int({p.n, p.c, p.h, p.w}) && fits_int({p.n, p.c, p.oh, p.ow}) &&
         fits_int({p.kh, p.kw}) && fits_int({p.sy, p.sx}) && p.ph >= 0 && p.pw >= 0 &&
         p.ph < p.kh && p.pw < p.kw && p.h + 2 * p.ph >= p.kh && p.w + 2 * p.pw >= p.kw &&
         p.oh == (p.h + 2 * p.ph - p.kh) / p.sy + 1 && p.ow == (p.w + 2 * p.pw - p.kw) / p.sx + 1;
}

void average_pool_2d_forward(const Array& x, const kernels::Pool2D& p, Array& y) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = covered(p) ? handle(dev.index, lock) : nullptr;
  if (!h) return g_own_average_forward(dev, x, p, y);
  DeviceGuard guard(dev.index);
  const DType dt = x.dtype();
  const TensorDesc xd(dt, p.n, p.c, p.h, p.w), yd(dt, p.n, p.c, p.oh, p.ow);
  const PoolDesc pd(p);
  const Scalars s(dt);
  check(cudnnPoolingForward(h, pd, s.one(), xd, x.raw(), s.zero(), yd, y.raw()),
        "cudnnPoolingForward");
}

}  // namespace

void register_pooling_kernels() {
  g_own_average_forward.keep(kernels::average_pool_2d_forward);
  kernels::average_pool_2d_forward.set(CH_DEVICE_CUDA, average_pool_2d_forward);
}

}  // namespace chainerc::cuda::cudnn
