// 2-D pooling through cuDNN 9: cudnnPoolingForward for max pooling
// (CUDNN_POOLING_MAX, or CUDNN_POOLING_MAX_DETERMINISTIC under
// ch_config_deterministic, with CUDNN_PROPAGATE_NAN: a window holding a NaN
// gives NaN, as kernels/pooling.h's contract) and average pooling
// (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING: the window sum over kh * kw,
// padding counting as 0), and cudnnPoolingBackward for max pooling from
// forward's x and y (accumulating into gx, beta = 1). Max pooling's forward
// keeps no argmax (the own CUDA kernels neither: either backward pairs with
// either forward).
//
// The own kernels run where cuDNN's output size differs from the op's
// (cover_all when it grows the output: cuDNN's size is the floor one), for
// padding as large as the window (a window could lie wholly in the padding:
// the contract's -inf), and for empty or int-overflowing shapes.
//
// cudnnPoolingBackward for max pooling routes a tie to the position its
// implementation picks, which cuDNN's documentation does not specify (the
// contract says the first maximum in window order; the own kernel does
// that). After a relu, the usual tie is a window of zeros, whose gradient
// relu's backward then drops wherever it lands.
//
// Average pooling's backward keeps the own kernel: cudnnPoolingBackward takes
// x and y, which the average pooling node does not keep (its backward reads
// only gy), and cuDNN's documentation does not say it leaves them unread in
// average mode.
#include "kernels/pooling.h"

#include "core/config.h"
#include "cuda/runtime/cuda_util.h"
#include "cudnn_util.h"

namespace chainerc::cuda::cudnn {
namespace {

Own<void(const Array&, const kernels::Pool2D&, Array&)> g_own_average_forward;
Own<void(const Array&, const kernels::Pool2D&, Array&, Array&)> g_own_max_forward;
Own<void(const Array&, const Array&, const Array&, const Array&, const kernels::Pool2D&, Array&)>
    g_own_max_backward;

class PoolDesc {
 public:
  PoolDesc(cudnnPoolingMode_t mode, const kernels::Pool2D& p) {
    check(cudnnCreatePoolingDescriptor(&d_), "cudnnCreatePoolingDescriptor");
    const cudnnStatus_t st = cudnnSetPooling2dDescriptor(
        d_, mode, CUDNN_PROPAGATE_NAN, static_cast<int>(p.kh), static_cast<int>(p.kw),
        static_cast<int>(p.ph), static_cast<int>(p.pw), static_cast<int>(p.sy),
        static_cast<int>(p.sx));
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

cudnnPoolingMode_t max_mode() {
  return config::deterministic() ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_MAX;
}

// Whether cuDNN computes the op's pooling: its sizes fit cuDNN's ints, no
// window reaches wholly into the padding, and the output size is cuDNN's
// (floor) one, which cover_all gives too when the windows fit exactly.
bool covered(const kernels::Pool2D& p) {
  return fits_int({p.n, p.c, p.h, p.w}) && fits_int({p.n, p.c, p.oh, p.ow}) &&
         fits_int({p.kh, p.kw}) && fits_int({p.sy, p.sx}) && p.ph >= 0 && p.pw >= 0 &&
         p.ph < p.kh && p.pw < p.kw && p.h + 2 * p.ph >= p.kh && p.w + 2 * p.pw >= p.kw &&
         p.oh == (p.h + 2 * p.ph - p.kh) / p.sy + 1 && p.ow == (p.w + 2 * p.pw - p.kw) / p.sx + 1;
}

void forward(cudnnHandle_t h, cudnnPoolingMode_t mode, const Array& x, const kernels::Pool2D& p,
             Array& y) {
  DeviceGuard guard(x.device().index);
  const DType dt = x.dtype();
  const TensorDesc xd(dt, p.n, p.c, p.h, p.w), yd(dt, p.n, p.c, p.oh, p.ow);
  const PoolDesc pd(mode, p);
  const Scalars s(dt);
  check(cudnnPoolingForward(h, pd, s.one(), xd, x.raw(), s.zero(), yd, y.raw()),
        "cudnnPoolingForward");
}

void average_pool_2d_forward(const Array& x, const kernels::Pool2D& p, Array& y) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = covered(p) ? handle(dev.index, lock, "average_pooling_2d_forward") : nullptr;
  if (!h) return g_own_average_forward(dev, x, p, y);
  forward(h, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, x, p, y);
}

void max_pool_2d_forward(const Array& x, const kernels::Pool2D& p, Array& y, Array& argmax) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = covered(p) ? handle(dev.index, lock, "max_pooling_2d_forward") : nullptr;
  if (!h) return g_own_max_forward(dev, x, p, y, argmax);
  forward(h, max_mode(), x, p, y);
}

void max_pool_2d_backward(const Array& x, const Array& y, const Array& argmax, const Array& gy,
                          const kernels::Pool2D& p, Array& gx) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = covered(p) ? handle(dev.index, lock, "max_pooling_2d_backward") : nullptr;
  if (!h) return g_own_max_backward(dev, x, y, argmax, gy, p, gx);
  DeviceGuard guard(dev.index);
  const DType dt = x.dtype();
  const TensorDesc xd(dt, p.n, p.c, p.h, p.w), yd(dt, p.n, p.c, p.oh, p.ow);
  const PoolDesc pd(max_mode(), p);
  const Scalars s(dt);
  // gx (zero-filled by the op) += the routed gy: beta = 1.
  check(cudnnPoolingBackward(h, pd, s.one(), yd, y.raw(), yd, gy.raw(), xd, x.raw(), s.one(), xd,
                             gx.raw()),
        "cudnnPoolingBackward");
}

}  // namespace

void register_pooling_kernels() {
  g_own_average_forward.keep(kernels::average_pool_2d_forward);
  g_own_max_forward.keep(kernels::max_pool_2d_forward);
  g_own_max_backward.keep(kernels::max_pool_2d_backward);
  kernels::average_pool_2d_forward.set(CH_DEVICE_CUDA, average_pool_2d_forward);
  kernels::max_pool_2d_forward.set(CH_DEVICE_CUDA, max_pool_2d_forward);
  kernels::max_pool_2d_backward.set(CH_DEVICE_CUDA, max_pool_2d_backward);
}

}  // namespace chainerc::cuda::cudnn
