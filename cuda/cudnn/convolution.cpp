// Convolution2D through cuDNN 9 (legacy API): cudnnConvolutionForward plus
// cudnnAddTensor for the bias; cudnnConvolutionBackwardFilter/Bias/Data
// accumulating into gW, gb and gx (beta = 1), as kernels/connection.h's
// conv2d_backward does. Algorithms measured once per shape and cached, as the
// GEMM choices are (cudnnFindConvolution*Algorithm, which runs each candidate
// once and ranks them by time; cuDNN's heuristics, cudnnGetConvolution*
// Algorithm_v7, where Find fails, e.g. for want of memory for its own
// buffers): the fastest that is supported, needs at most kMaxWorkspace bytes
// of workspace and keeps float32 off TF32 unless ch_config_allow_tf32() is on
// (CUDNN_FMA_MATH). With ch_config_deterministic() on, only algorithms cuDNN
// reports deterministic, and none of the FFT and Winograd ones (their results
// differ from a direct convolution by more than float32 rounding).
// Otherwise, and for empty or int-overflowing shapes, the own kernels run.
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <vector>

#include "core/config.h"
#include "cuda/runtime/cuda_util.h"
#include "cudnn_util.h"
#include "kernels/connection.h"

namespace chainerc::cuda::cudnn {
namespace {

using ForwardSig = void(const Array&, const Array&, const Array&, const kernels::Conv2D&, Array&);
using BackwardSig = void(const Array&, const Array&, const Array&, const kernels::Conv2D&, Array&,
                         Array&, Array&);
Own<ForwardSig> g_own_forward;
Own<BackwardSig> g_own_backward;

// The most workspace a convolution takes from the device's pool.
constexpr size_t kMaxWorkspace = size_t{256} << 20;

// The math the heuristics are asked about and the algorithms run with for
// float32 without TF32: CUDNN_FMA_MATH (CUDNN_DEFAULT_MATH permits TF32 on
// A100 and later).
bool fma_only(DType dtype, bool tf32) { return dtype == DType::Float32 && !tf32; }

class ConvDesc {
 public:
  ConvDesc(const kernels::Conv2D& g, DType dtype, bool tf32) {
    check(cudnnCreateConvolutionDescriptor(&d_), "cudnnCreateConvolutionDescriptor");
    const cudnnStatus_t st = cudnnSetConvolution2dDescriptor(
        d_, static_cast<int>(g.ph), static_cast<int>(g.pw), static_cast<int>(g.sy),
        static_cast<int>(g.sx), 1, 1, CUDNN_CROSS_CORRELATION, data_type(dtype));
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyConvolutionDescriptor(d_);
      check(st, "cudnnSetConvolution2dDescriptor");
    }
    set_math(fma_only(dtype, tf32) ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH);
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  operator cudnnConvolutionDescriptor_t() const { return d_; }
  void set_math(cudnnMathType_t m) {
    check(cudnnSetConvolutionMathType(d_, m), "cudnnSetConvolutionMathType");
  }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

// An algorithm chosen for one convolution shape, or none usable.
struct Choice {
  bool usable = false;
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t memory = 0;
};

// FFT and Winograd algorithms: transforms whose rounding exceeds a direct
// convolution's.
bool low_precision(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool low_precision(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool low_precision(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// The first usable algorithm of cuDNN's ranking: supported, at most
// kMaxWorkspace bytes of workspace, and no tensor-op math for float32
// without TF32 (run with CUDNN_FMA_MATH then).
template <typename Perf>
Choice choose(const std::vector<Perf>& perf, int returned, DType dtype, bool tf32,
              bool deterministic) {
  for (int i = 0; i < returned && i < static_cast<int>(perf.size()); ++i) {
    const Perf& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspace) continue;
    if (deterministic && (p.determinism != CUDNN_DETERMINISTIC || low_precision(p.algo))) continue;
    if (fma_only(dtype, tf32) &&
        (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    return Choice{true, static_cast<int>(p.algo),
                  fma_only(dtype, tf32) ? CUDNN_FMA_MATH : p.mathType, p.memory};
  }
  return Choice{};
}

// Choices by direction, device, dtype, TF32 and shape: cuDNN's heuristics
// are asked once per shape (a training loop repeats its shapes).
enum Direction { kForward, kBackwardFilter, kBackwardData };
using Key = std::array<int64_t, 18>;
Key key_of(Direction d, int32_t device, DType dt, bool tf32, bool det, int64_t n, int64_t o,
           const kernels::Conv2D& g) {
  return Key{d,    device, static_cast<int64_t>(dt),
             tf32, det,    n,
             o,    g.c,    g.h,
             g.w,  g.kh,   g.kw,
             g.sy, g.sx,   g.ph,
             g.pw, g.oh,   g.ow};
}
std::mutex g_cache_mutex;
std::map<Key, Choice>& cache() {
  static auto* m = new std::map<Key, Choice>;  // never destroyed
  return *m;
}

// The cached choice for `key`, or `ask`'s (then cached).
template <typename Ask>
Choice cached(const Key& key, Ask ask) {
  {
    std::lock_guard<std::mutex> l(g_cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  const Choice c = ask();
  std::lock_guard<std::mutex> l(g_cache_mutex);
  cache()[key] = c;
  return c;
}

// Shapes cuDNN's 4-d descriptors take (and no empty array).
bool covered(const Array& x, const Array& W, const kernels::Conv2D& g) {
  const int64_t n = x.shape()[0], o = W.shape()[0];
  return fits_int({n, g.c, g.h, g.w}) && fits_int({o, g.c, g.kh, g.kw}) &&
         fits_int({n, o, g.oh, g.ow}) && fits_int({g.sy, g.sx}) && fits_int({g.ph + 1, g.pw + 1}) &&
         g.ph >= 0 && g.pw >= 0;
}

// What both directions of one convolution set up: the settings of this call
// (dtype, TF32, determinism), the sizes and the cuDNN descriptors.
struct Problem {
  DType dtype;
  bool tf32, det;
  int64_t n, o;
  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  Problem(const Array& x, const Array& W, const kernels::Conv2D& g)
      : dtype(x.dtype()),
        tf32(config::allow_tf32()),
        det(config::deterministic()),
        n(x.shape()[0]),
        o(W.shape()[0]),
        xd(dtype, n, g.c, g.h, g.w),
        yd(dtype, n, o, g.oh, g.ow),
        wd(dtype, o, g.c, g.kh, g.kw),
        cd(g, dtype, tf32) {}
  Key key(Direction d, int32_t device, const kernels::Conv2D& g) const {
    return key_of(d, device, dtype, tf32, det, n, o, g);
  }
  template <typename Perf>
  Choice choose(const std::vector<Perf>& perf, int returned) const {
    return cudnn::choose(perf, returned, dtype, tf32, det);
  }
};

void conv2d_forward(const Array& x, const Array& W, const Array& b, const kernels::Conv2D& g,
                    Array& y) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = covered(x, W, g) ? handle(dev.index, lock, nullptr) : nullptr;
  if (!h) return g_own_forward(dev, x, W, b, g, y);
  DeviceGuard guard(dev.index);
  Problem pb(x, W, g);
  const Choice c = cached(pb.key(kForward, dev.index, g), [&] {
    int max = 0, returned = 0;
    check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    if (cudnnFindConvolutionForwardAlgorithm(h, pb.xd, pb.wd, pb.cd, pb.yd,
                                             static_cast<int>(perf.size()), &returned,
                                             perf.data()) != CUDNN_STATUS_SUCCESS) {
      cudaGetLastError();
      check(
          cudnnGetConvolutionForwardAlgorithm_v7(
              h, pb.xd, pb.wd, pb.cd, pb.yd, static_cast<int>(perf.size()), &returned, perf.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    }
    return pb.choose(perf, returned);
  });
  if (!c.usable) {
    lock.unlock();
    return g_own_forward(dev, x, W, b, g, y);
  }
  pb.cd.set_math(c.math);
  // The workspace is taken with the handle's lock released (see Workspace).
  lock.unlock();
  const Workspace ws(dev.index, c.memory);
  h = handle(dev.index, lock, "conv2d_forward");
  if (!h) return g_own_forward(dev, x, W, b, g, y);
  const Scalars s(pb.dtype);
  check(cudnnConvolutionForward(h, s.one(), pb.xd, x.raw(), pb.wd, W.raw(), pb.cd,
                                static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws.get(), ws.size(),
                                s.zero(), pb.yd, y.raw()),
        "cudnnConvolutionForward");
  if (b.defined()) {
    const TensorDesc bd(pb.dtype, 1, pb.o, 1, 1);
    check(cudnnAddTensor(h, s.one(), bd, b.raw(), s.one(), pb.yd, y.raw()), "cudnnAddTensor");
  }
}

void conv2d_backward(const Array& x, const Array& W, const Array& gy, const kernels::Conv2D& g,
                     Array& gW, Array& gb, Array& gx) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = covered(x, W, g) ? handle(dev.index, lock, nullptr) : nullptr;
  if (!h) return g_own_backward(dev, x, W, gy, g, gW, gb, gx);
  DeviceGuard guard(dev.index);
  Problem pb(x, W, g);
  // Both algorithms first: nothing is accumulated unless both are usable.
  const Choice cf = cached(pb.key(kBackwardFilter, dev.index, g), [&] {
    int max = 0, returned = 0;
    check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    if (cudnnFindConvolutionBackwardFilterAlgorithm(h, pb.xd, pb.yd, pb.cd, pb.wd,
                                                    static_cast<int>(perf.size()), &returned,
                                                    perf.data()) != CUDNN_STATUS_SUCCESS) {
      cudaGetLastError();
      check(
          cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              h, pb.xd, pb.yd, pb.cd, pb.wd, static_cast<int>(perf.size()), &returned, perf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    }
    return pb.choose(perf, returned);
  });
  Choice cdata;
  if (gx.defined())
    cdata = cached(pb.key(kBackwardData, dev.index, g), [&] {
      int max = 0, returned = 0;
      check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max),
            "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
      if (cudnnFindConvolutionBackwardDataAlgorithm(h, pb.wd, pb.yd, pb.cd, pb.xd,
                                                    static_cast<int>(perf.size()), &returned,
                                                    perf.data()) != CUDNN_STATUS_SUCCESS) {
        cudaGetLastError();
        check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pb.wd, pb.yd, pb.cd, pb.xd,
                                                          static_cast<int>(perf.size()), &returned,
                                                          perf.data()),
              "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      }
      return pb.choose(perf, returned);
    });
  if (!cf.usable || (gx.defined() && !cdata.usable)) {
    lock.unlock();
    return g_own_backward(dev, x, W, gy, g, gW, gb, gx);
  }
  // The workspace is taken with the handle's lock released (see Workspace).
  lock.unlock();
  const Workspace ws(dev.index, std::max(cf.memory, cdata.memory));
  h = handle(dev.index, lock, "conv2d_backward");
  if (!h) return g_own_backward(dev, x, W, gy, g, gW, gb, gx);
  const Scalars s(pb.dtype);
  pb.cd.set_math(cf.math);
  check(cudnnConvolutionBackwardFilter(h, s.one(), pb.xd, x.raw(), pb.yd, gy.raw(), pb.cd,
                                       static_cast<cudnnConvolutionBwdFilterAlgo_t>(cf.algo),
                                       ws.get(), ws.size(), s.one(), pb.wd, gW.raw()),
        "cudnnConvolutionBackwardFilter");
  if (gb.defined()) {
    const TensorDesc bd(pb.dtype, 1, pb.o, 1, 1);
    check(cudnnConvolutionBackwardBias(h, s.one(), pb.yd, gy.raw(), s.one(), bd, gb.raw()),
          "cudnnConvolutionBackwardBias");
  }
  if (gx.defined()) {
    pb.cd.set_math(cdata.math);
    check(cudnnConvolutionBackwardData(h, s.one(), pb.wd, W.raw(), pb.yd, gy.raw(), pb.cd,
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(cdata.algo),
                                       ws.get(), ws.size(), s.one(), pb.xd, gx.raw()),
          "cudnnConvolutionBackwardData");
  }
}

}  // namespace

void register_convolution_kernels() {
  g_own_forward.keep(kernels::conv2d_forward);
  g_own_backward.keep(kernels::conv2d_backward);
  kernels::conv2d_forward.set(CH_DEVICE_CUDA, conv2d_forward);
  kernels::conv2d_backward.set(CH_DEVICE_CUDA, conv2d_backward);
}

}  // namespace chainerc::cuda::cudnn
