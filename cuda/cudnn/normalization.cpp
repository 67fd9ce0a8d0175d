// BatchNormalization and local_response_normalization through cuDNN 9
// (legacy API).
//
// BatchNormalization on x viewed as (L, C, R) is the NCHW tensor (L, C, R, 1):
// CUDNN_BATCHNORM_SPATIAL (statistics per channel over L and R), or
// CUDNN_BATCHNORM_PER_ACTIVATION when R is 1 (a 2-D input: over L only; the
// same statistics). The parameter tensors are cuDNN's derived (1, C, 1, 1)
// descriptor, of x's dtype (float32 or float64, as gamma's).
// - With batch statistics: cudnnBatchNormalizationForwardTraining, with
//   exponentialAverageFactor = 1 - decay (cuDNN's runningMean = newMean *
//   factor + runningMean * (1 - factor) is the op's avg = decay * avg + (1 -
//   decay) * stat; finetune's decay 1 - 1/N is cuDNN's cumulative average
//   factor 1/N), cuDNN's running variance being the unbiased one as the op's
//   (m / (m - 1)). The saved mean and inverse variance (1 / sqrt(var + eps))
//   are the kernel contract's `mean` and `inv_std`. Backward:
//   cudnnBatchNormalizationBackward from x, gy, gamma and those two,
//   accumulating into ggamma and gbeta (beta = 1) and writing gx.
// - With the running averages (test mode): cudnnBatchNormalizationForwardInference.
//   Its backward keeps the own kernel (cuDNN's backward is the batch
//   statistics' gradient only).
// The own kernels run for a batch of one sample (m = L * R < 2: the unbiased
// variance's m - 1 is 0; the op's contract then adjusts by 1), a decay
// outside [0, 1], an eps below CUDNN_BN_MIN_EPSILON, and empty or
// int-overflowing shapes.
//
// local_response_normalization on x viewed as (N, C, R) is the tensor
// (N, C, R, 1) with cudnnLRNCrossChannelForward / Backward
// (CUDNN_LRN_CROSS_CHANNEL_DIM1). cuDNN's window is n channels
// [c - (n - 1) / 2, c + n - 1 - (n - 1) / 2] and its alpha is divided by n:
// for an odd n that is Chainer's window c - n/2 .. c + n/2, with alpha * n
// passed. The own kernels run for an even n (Chainer's window then has n + 1
// channels), n beyond CUDNN_LRN_MAX_N, k below CUDNN_LRN_MIN_K, beta below
// CUDNN_LRN_MIN_BETA, and empty or int-overflowing shapes.
#include "kernels/normalization.h"

#include "cuda/runtime/cuda_util.h"
#include "cudnn_util.h"

namespace chainerc::cuda::cudnn {
namespace {

using BnForwardSig = void(const Array&, const Array&, const Array&, const kernels::BatchNorm&,
                          Array&, Array&, Array&, Array&, Array&);
using BnBackwardSig = void(const Array&, const Array&, const Array&, const Array&, const Array&,
                           const kernels::BatchNorm&, Array&, Array&, Array&);
using LrnForwardSig = void(const Array&, const kernels::Lrn&, Array&);
using LrnBackwardSig = void(const Array&, const Array&, const Array&, const kernels::Lrn&, Array&);
Own<BnForwardSig> g_own_bn_forward;
Own<BnBackwardSig> g_own_bn_backward;
Own<LrnForwardSig> g_own_lrn_forward;
Own<LrnBackwardSig> g_own_lrn_backward;

// ---- BatchNormalization ----

// Whether cuDNN computes this call (the statistics' kind aside).
bool bn_covered(const kernels::BatchNorm& bn) {
  if (!fits_int({bn.L, bn.C, bn.R}) || !(bn.eps >= CUDNN_BN_MIN_EPSILON)) return false;
  if (bn.use_batch && (bn.L * bn.R < 2 || !(bn.decay >= 0 && bn.decay <= 1))) return false;
  return true;
}

cudnnBatchNormMode_t bn_mode(const kernels::BatchNorm& bn) {
  return bn.R == 1 ? CUDNN_BATCHNORM_PER_ACTIVATION : CUDNN_BATCHNORM_SPATIAL;
}

// x's descriptor (L, C, R, 1) and the parameters' one derived from it.
struct BnDescs {
  TensorDesc x;
  cudnnTensorDescriptor_t param = nullptr;
  BnDescs(DType dtype, const kernels::BatchNorm& bn) : x(dtype, bn.L, bn.C, bn.R, 1) {
    check(cudnnCreateTensorDescriptor(&param), "cudnnCreateTensorDescriptor");
    const cudnnStatus_t st = cudnnDeriveBNTensorDescriptor(param, x, bn_mode(bn));
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyTensorDescriptor(param);
      check(st, "cudnnDeriveBNTensorDescriptor");
    }
  }
  ~BnDescs() { cudnnDestroyTensorDescriptor(param); }
  BnDescs(const BnDescs&) = delete;
  BnDescs& operator=(const BnDescs&) = delete;
};

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta,
                        const kernels::BatchNorm& bn, Array& avg_mean, Array& avg_var, Array& y,
                        Array& mean, Array& inv_std) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h =
      bn_covered(bn) ? handle(dev.index, lock, "batch_normalization_forward") : nullptr;
  if (!h) return g_own_bn_forward(dev, x, gamma, beta, bn, avg_mean, avg_var, y, mean, inv_std);
  DeviceGuard guard(dev.index);
  const BnDescs d(x.dtype(), bn);
  const Scalars s(x.dtype());
  if (bn.use_batch) {
    check(cudnnBatchNormalizationForwardTraining(h, bn_mode(bn), s.one(), s.zero(), d.x, x.raw(),
                                                 d.x, y.raw(), d.param, gamma.raw(), beta.raw(),
                                                 1.0 - bn.decay, avg_mean.raw(), avg_var.raw(),
                                                 bn.eps, mean.raw(), inv_std.raw()),
          "cudnnBatchNormalizationForwardTraining");
  } else {
    check(cudnnBatchNormalizationForwardInference(h, bn_mode(bn), s.one(), s.zero(), d.x, x.raw(),
                                                  d.x, y.raw(), d.param, gamma.raw(), beta.raw(),
                                                  avg_mean.raw(), avg_var.raw(), bn.eps),
          "cudnnBatchNormalizationForwardInference");
  }
}

void batch_norm_backward(const Array& x, const Array& gy, const Array& mean, const Array& stat,
                         const Array& gamma, const kernels::BatchNorm& bn, Array& ggamma,
                         Array& gbeta, Array& gx) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = bn.use_batch && bn_covered(bn)
                        ? handle(dev.index, lock, "batch_normalization_backward")
                        : nullptr;
  if (!h) return g_own_bn_backward(dev, x, gy, mean, stat, gamma, bn, ggamma, gbeta, gx);
  DeviceGuard guard(dev.index);
  const BnDescs d(x.dtype(), bn);
  const Scalars s(x.dtype());
  // gx written (beta 0), ggamma and gbeta accumulated (beta 1).
  check(cudnnBatchNormalizationBackward(h, bn_mode(bn), s.one(), s.zero(), s.one(), s.one(), d.x,
                                        x.raw(), d.x, gy.raw(), d.x, gx.raw(), d.param, gamma.raw(),
                                        ggamma.raw(), gbeta.raw(), bn.eps, mean.raw(), stat.raw()),
        "cudnnBatchNormalizationBackward");
}

// ---- local_response_normalization ----

class LrnDesc {
 public:
  explicit LrnDesc(const kernels::Lrn& p) {
    check(cudnnCreateLRNDescriptor(&d_), "cudnnCreateLRNDescriptor");
    const cudnnStatus_t st = cudnnSetLRNDescriptor(d_, static_cast<unsigned>(p.n),
                                                   p.alpha * static_cast<double>(p.n), p.beta, p.k);
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyLRNDescriptor(d_);
      check(st, "cudnnSetLRNDescriptor");
    }
  }
  ~LrnDesc() { cudnnDestroyLRNDescriptor(d_); }
  LrnDesc(const LrnDesc&) = delete;
  LrnDesc& operator=(const LrnDesc&) = delete;
  operator cudnnLRNDescriptor_t() const { return d_; }

 private:
  cudnnLRNDescriptor_t d_ = nullptr;
};

// (N, C, R) of x viewed along axis 1 (x has at least 2 dimensions).
struct LrnDims {
  int64_t N, C, R;
  explicit LrnDims(const Array& x)
      : N(x.shape()[0]),
        C(x.shape()[1]),
        R(x.shape()[0] > 0 && x.shape()[1] > 0 ? x.size() / (x.shape()[0] * x.shape()[1]) : 0) {}
};

bool lrn_covered(const LrnDims& g, const kernels::Lrn& p) {
  return p.n % 2 == 1 && p.n >= CUDNN_LRN_MIN_N && p.n <= CUDNN_LRN_MAX_N &&
         p.k >= CUDNN_LRN_MIN_K && p.beta >= CUDNN_LRN_MIN_BETA && fits_int({g.N, g.C, g.R});
}

void lrn_forward(const Array& x, const kernels::Lrn& p, Array& y) {
  const Device dev = x.device();
  const LrnDims g(x);
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h =
      lrn_covered(g, p) ? handle(dev.index, lock, "local_response_normalization_forward") : nullptr;
  if (!h) return g_own_lrn_forward(dev, x, p, y);
  DeviceGuard guard(dev.index);
  const TensorDesc d(x.dtype(), g.N, g.C, g.R, 1);
  const LrnDesc ld(p);
  const Scalars s(x.dtype());
  check(cudnnLRNCrossChannelForward(h, ld, CUDNN_LRN_CROSS_CHANNEL_DIM1, s.one(), d, x.raw(),
                                    s.zero(), d, y.raw()),
        "cudnnLRNCrossChannelForward");
}

void lrn_backward(const Array& x, const Array& y, const Array& gy, const kernels::Lrn& p,
                  Array& gx) {
  const Device dev = x.device();
  const LrnDims g(x);
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = lrn_covered(g, p)
                        ? handle(dev.index, lock, "local_response_normalization_backward")
                        : nullptr;
  if (!h) return g_own_lrn_backward(dev, x, y, gy, p, gx);
  DeviceGuard guard(dev.index);
  const TensorDesc d(x.dtype(), g.N, g.C, g.R, 1);
  const LrnDesc ld(p);
  const Scalars s(x.dtype());
  check(cudnnLRNCrossChannelBackward(h, ld, CUDNN_LRN_CROSS_CHANNEL_DIM1, s.one(), d, y.raw(), d,
                                     gy.raw(), d, x.raw(), s.zero(), d, gx.raw()),
        "cudnnLRNCrossChannelBackward");
}

}  // namespace

void register_normalization_kernels() {
  g_own_bn_forward.keep(kernels::batch_norm_forward);
  g_own_bn_backward.keep(kernels::batch_norm_backward);
  g_own_lrn_forward.keep(kernels::lrn_forward);
  g_own_lrn_backward.keep(kernels::lrn_backward);
  kernels::batch_norm_forward.set(CH_DEVICE_CUDA, batch_norm_forward);
  kernels::batch_norm_backward.set(CH_DEVICE_CUDA, batch_norm_backward);
  kernels::lrn_forward.set(CH_DEVICE_CUDA, lrn_forward);
  kernels::lrn_backward.set(CH_DEVICE_CUDA, lrn_backward);
}

}  // namespace chainerc::cuda::cudnn
