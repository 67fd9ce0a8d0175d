// cuBLAS, cuRAND, NVRTC and cuDNN loaded on first use (dlopen), not at load time:
// libchainerc.so does not link them, so it loads and works on the CPU on a
// machine without the CUDA libraries, and a CPU program does not pay their
// start-up (about 250 MiB and a quarter of a second on the build machine).
// Each function chainerc calls is defined here with the library's own name
// and signature (so a mismatch with the toolkit's header does not compile) and
// forwards to the library's symbol; when the library cannot be loaded it
// returns the library's failure status, and the *GetStatusString/ErrorString
// functions say why (load_error()). The CUDA runtime itself is linked
// statically (cudart_static), as before.
#include "lazy_libraries.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <curand.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#if CH_LAZY_NVRTC
#include <nvrtc.h>
#endif
#if defined(CH_HAVE_CUDNN)
#include <cudnn.h>
#endif

namespace chainerc::cuda {
namespace {

#define CH_STR2_(x) #x
#define CH_STR_(x) CH_STR2_(x)

struct Library {
  const char* soname;
  std::once_flag once;
  void* handle = nullptr;
  std::string error;
};

Library g_cublas{"libcublas.so." CH_STR_(CUBLAS_VER_MAJOR), {}, nullptr, {}};
Library g_curand{"libcurand.so." CH_STR_(CURAND_VER_MAJOR), {}, nullptr, {}};
#if CH_LAZY_NVRTC
Library g_nvrtc{"libnvrtc.so." CH_STR_(CH_CUDA_MAJOR), {}, nullptr, {}};
#endif
#if defined(CH_HAVE_CUDNN)
// cuDNN 9's front library (it opens libcudnn_ops/_cnn/... itself).
Library g_cudnn{"libcudnn.so." CH_STR_(CUDNN_MAJOR), {}, nullptr, {}};
#endif

void* open(Library& lib) {
  std::call_once(lib.once, [&lib] {
    lib.handle = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) {
      const char* e = dlerror();
      lib.error = std::string(lib.soname) + " could not be loaded (" + (e ? e : "unknown error") +
                  "); install the CUDA libraries or add their folder to the loader's path";
    }
  });
  return lib.handle;
}

void* resolve(Library& lib, const char* name) {
  void* h = open(lib);
  if (!h) return nullptr;
  void* f = dlsym(h, name);
  if (!f) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    if (lib.error.empty()) lib.error = std::string(lib.soname) + " has no symbol " + name;
  }
  return f;
}

}  // namespace

std::string load_error(const char* which) {
  Library* lib = std::string(which) == "cublas"   ? &g_cublas
                 : std::string(which) == "curand" ? &g_curand
                                                  : nullptr;
#if CH_LAZY_NVRTC
  if (std::string(which) == "nvrtc") lib = &g_nvrtc;
#endif
#if defined(CH_HAVE_CUDNN)
  if (std::string(which) == "cudnn") lib = &g_cudnn;
#endif
  if (!lib) return "";
  open(*lib);
  return lib->error;
}

}  // namespace chainerc::cuda

using chainerc::cuda::resolve;

// The stubs are weak: a program that links the real CUDA libraries beside a
// static libchainerc.a gets theirs, with no duplicate definition.
#define CH_LAZY_STUB __attribute__((weak))

// One forwarding function: `ret name params` calls the library's `name` with
// `args`, or returns `failure` when it cannot be had.
#define CH_LAZY(lib, ret, failure, name, params, args)                               \
  extern "C" CH_LAZY_STUB ret name params {                                          \
    static const auto fn = reinterpret_cast<decltype(&::name)>(resolve(lib, #name)); \
    if (!fn) return failure;                                                         \
    return fn args;                                                                  \
  }

namespace chainerc::cuda {
namespace {
Library& cublas_lib() { return g_cublas; }
Library& curand_lib() { return g_curand; }
#if CH_LAZY_NVRTC
Library& nvrtc_lib() { return g_nvrtc; }
#endif
#if defined(CH_HAVE_CUDNN)
Library& cudnn_lib() { return g_cudnn; }
#endif
}  // namespace
}  // namespace chainerc::cuda

#define CH_CUBLAS chainerc::cuda::cublas_lib()
#define CH_CURAND chainerc::cuda::curand_lib()
#define CH_NVRTC chainerc::cuda::nvrtc_lib()
#define CH_CUDNN chainerc::cuda::cudnn_lib()

CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasCreate_v2,
        (cublasHandle_t * handle), (handle))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasDestroy_v2,
        (cublasHandle_t handle), (handle))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSetStream_v2,
        (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSetWorkspace_v2,
        (cublasHandle_t handle, void* workspace, size_t bytes), (handle, workspace, bytes))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSetMathMode,
        (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasGetMathMode,
        (cublasHandle_t handle, cublasMath_t* mode), (handle, mode))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSgemm_v2,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
         const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
         float* C, int ldc),
        (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasDgemm_v2,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
         const double* alpha, const double* A, int lda, const double* B, int ldb,
         const double* beta, double* C, int ldc),
        (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSgemmStridedBatched,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
         int k, const float* alpha, const float* A, int lda, long long int strideA, const float* B,
         int ldb, long long int strideB, const float* beta, float* C, int ldc,
         long long int strideC, int batchCount),
        (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
         strideC, batchCount))
CH_LAZY(CH_CUBLAS, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasDgemmStridedBatched,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
         int k, const double* alpha, const double* A, int lda, long long int strideA,
         const double* B, int ldb, long long int strideB, const double* beta, double* C, int ldc,
         long long int strideC, int batchCount),
        (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
         strideC, batchCount))

extern "C" CH_LAZY_STUB const char* cublasGetStatusString(cublasStatus_t status) {
  static const auto fn = reinterpret_cast<decltype(&::cublasGetStatusString)>(
      resolve(CH_CUBLAS, "cublasGetStatusString"));
  if (!fn) {
    static const std::string why = chainerc::cuda::load_error("cublas");
    return why.c_str();
  }
  return fn(status);
}

CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandCreateGenerator,
        (curandGenerator_t * g, curandRngType_t type), (g, type))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandDestroyGenerator,
        (curandGenerator_t g), (g))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED,
        curandSetPseudoRandomGeneratorSeed, (curandGenerator_t g, unsigned long long seed),
        (g, seed))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandSetGeneratorOffset,
        (curandGenerator_t g, unsigned long long offset), (g, offset))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandSetStream,
        (curandGenerator_t g, cudaStream_t stream), (g, stream))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandGenerateUniform,
        (curandGenerator_t g, float* out, size_t n), (g, out, n))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandGenerateUniformDouble,
        (curandGenerator_t g, double* out, size_t n), (g, out, n))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandGenerateNormal,
        (curandGenerator_t g, float* out, size_t n, float mean, float stddev),
        (g, out, n, mean, stddev))
CH_LAZY(CH_CURAND, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, curandGenerateNormalDouble,
        (curandGenerator_t g, double* out, size_t n, double mean, double stddev),
        (g, out, n, mean, stddev))

#if CH_LAZY_NVRTC
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcVersion, (int* major, int* minor),
        (major, minor))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcCreateProgram,
        (nvrtcProgram * prog, const char* src, const char* name, int num_headers,
         const char* const* headers, const char* const* include_names),
        (prog, src, name, num_headers, headers, include_names))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcDestroyProgram,
        (nvrtcProgram * prog), (prog))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcCompileProgram,
        (nvrtcProgram prog, int num_options, const char* const* options),
        (prog, num_options, options))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcGetCUBINSize,
        (nvrtcProgram prog, size_t* size), (prog, size))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcGetCUBIN,
        (nvrtcProgram prog, char* cubin), (prog, cubin))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcGetProgramLogSize,
        (nvrtcProgram prog, size_t* size), (prog, size))
CH_LAZY(CH_NVRTC, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, nvrtcGetProgramLog,
        (nvrtcProgram prog, char* log), (prog, log))

extern "C" CH_LAZY_STUB const char* nvrtcGetErrorString(nvrtcResult result) {
  static const auto fn =
      reinterpret_cast<decltype(&::nvrtcGetErrorString)>(resolve(CH_NVRTC, "nvrtcGetErrorString"));
  if (!fn) {
    static const std::string why = chainerc::cuda::load_error("nvrtc");
    return why.c_str();
  }
  return fn(result);
}
#endif

#if defined(CH_HAVE_CUDNN)
// cuDNN 9's legacy API as cuda/cudnn/ uses it. cudnnGetVersion returns 0
// when the library cannot be loaded (cuda/cudnn/ then keeps the own kernels).
extern "C" CH_LAZY_STUB size_t cudnnGetVersion(void) {
  static const auto fn =
      reinterpret_cast<decltype(&::cudnnGetVersion)>(resolve(CH_CUDNN, "cudnnGetVersion"));
  return fn ? fn() : 0;
}

extern "C" CH_LAZY_STUB const char* cudnnGetErrorString(cudnnStatus_t status) {
  static const auto fn =
      reinterpret_cast<decltype(&::cudnnGetErrorString)>(resolve(CH_CUDNN, "cudnnGetErrorString"));
  if (!fn) {
    static const std::string why = chainerc::cuda::load_error("cudnn");
    return why.c_str();
  }
  return fn(status);
}

CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreate,
        (cudnnHandle_t * handle), (handle))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroy, (cudnnHandle_t handle),
        (handle))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetStream,
        (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateTensorDescriptor,
        (cudnnTensorDescriptor_t * tensorDesc), (tensorDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyTensorDescriptor,
        (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetTensor4dDescriptor,
        (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType,
         int n, int c, int h, int w),
        (tensorDesc, format, dataType, n, c, h, w))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateFilterDescriptor,
        (cudnnFilterDescriptor_t * filterDesc), (filterDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyFilterDescriptor,
        (cudnnFilterDescriptor_t filterDesc), (filterDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetFilter4dDescriptor,
        (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format,
         int k, int c, int h, int w),
        (filterDesc, dataType, format, k, c, h, w))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateConvolutionDescriptor,
        (cudnnConvolutionDescriptor_t * convDesc), (convDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyConvolutionDescriptor,
        (cudnnConvolutionDescriptor_t convDesc), (convDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetConvolution2dDescriptor,
        (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h,
         int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType),
        (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetConvolutionMathType,
        (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnGetConvolutionForwardAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
        (handle, count))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnGetConvolutionBackwardDataAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
        (handle, count))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
        (handle, count))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnGetConvolutionForwardAlgorithm_v7,
        (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
         const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
         const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
         int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults),
        (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount,
         perfResults))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnGetConvolutionBackwardDataAlgorithm_v7,
        (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
         const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
         const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,
         int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults),
        (handle, filterDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount,
         perfResults))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnGetConvolutionBackwardFilterAlgorithm_v7,
        (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
         const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
         const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,
         int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults),
        (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount,
         perfResults))
// The measured choice (cuda/cudnn/convolution.cpp): each algorithm run once.
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnFindConvolutionForwardAlgorithm,
        (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
         const cudnnFilterDescriptor_t wDesc, const cudnnConvolutionDescriptor_t convDesc,
         const cudnnTensorDescriptor_t yDesc, const int requestedAlgoCount, int* returnedAlgoCount,
         cudnnConvolutionFwdAlgoPerf_t* perfResults),
        (handle, xDesc, wDesc, convDesc, yDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnFindConvolutionBackwardDataAlgorithm,
        (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
         const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,
         const cudnnTensorDescriptor_t dxDesc, const int requestedAlgoCount, int* returnedAlgoCount,
         cudnnConvolutionBwdDataAlgoPerf_t* perfResults),
        (handle, wDesc, dyDesc, convDesc, dxDesc, requestedAlgoCount, returnedAlgoCount,
         perfResults))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnFindConvolutionBackwardFilterAlgorithm,
        (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
         const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,
         const cudnnFilterDescriptor_t dwDesc, const int requestedAlgoCount, int* returnedAlgoCount,
         cudnnConvolutionBwdFilterAlgoPerf_t* perfResults),
        (handle, xDesc, dyDesc, convDesc, dwDesc, requestedAlgoCount, returnedAlgoCount,
         perfResults))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionForward,
        (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
         const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
         const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
         void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
         const cudnnTensorDescriptor_t yDesc, void* y),
        (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,
         yDesc, y))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionBackwardData,
        (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc,
         const void* w, const cudnnTensorDescriptor_t dyDesc, const void* dy,
         const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
         void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
         const cudnnTensorDescriptor_t dxDesc, void* dx),
        (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,
         dxDesc, dx))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionBackwardFilter,
        (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
         const void* x, const cudnnTensorDescriptor_t dyDesc, const void* dy,
         const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
         void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
         const cudnnFilterDescriptor_t dwDesc, void* dw),
        (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,
         dwDesc, dw))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionBackwardBias,
        (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t dyDesc,
         const void* dy, const void* beta, const cudnnTensorDescriptor_t dbDesc, void* db),
        (handle, alpha, dyDesc, dy, beta, dbDesc, db))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnAddTensor,
        (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc,
         const void* A, const void* beta, const cudnnTensorDescriptor_t cDesc, void* C),
        (handle, alpha, aDesc, A, beta, cDesc, C))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreatePoolingDescriptor,
        (cudnnPoolingDescriptor_t * poolingDesc), (poolingDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyPoolingDescriptor,
        (cudnnPoolingDescriptor_t poolingDesc), (poolingDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetPooling2dDescriptor,
        (cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode,
         cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight, int windowWidth,
         int verticalPadding, int horizontalPadding, int verticalStride, int horizontalStride),
        (poolingDesc, mode, maxpoolingNanOpt, windowHeight, windowWidth, verticalPadding,
         horizontalPadding, verticalStride, horizontalStride))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnPoolingForward,
        (cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
         const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
         const cudnnTensorDescriptor_t yDesc, void* y),
        (handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSoftmaxForward,
        (cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
         const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
         const cudnnTensorDescriptor_t yDesc, void* y),
        (handle, algo, mode, alpha, xDesc, x, beta, yDesc, y))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSoftmaxBackward,
        (cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
         const void* alpha, const cudnnTensorDescriptor_t yDesc, const void* y,
         const cudnnTensorDescriptor_t dyDesc, const void* dy, const void* beta,
         const cudnnTensorDescriptor_t dxDesc, void* dx),
        (handle, algo, mode, alpha, yDesc, y, dyDesc, dy, beta, dxDesc, dx))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateActivationDescriptor,
        (cudnnActivationDescriptor_t * activationDesc), (activationDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyActivationDescriptor,
        (cudnnActivationDescriptor_t activationDesc), (activationDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetActivationDescriptor,
        (cudnnActivationDescriptor_t activationDesc, cudnnActivationMode_t mode,
         cudnnNanPropagation_t reluNanOpt, double coef),
        (activationDesc, mode, reluNanOpt, coef))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnActivationForward,
        (cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc, const void* alpha,
         const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
         const cudnnTensorDescriptor_t yDesc, void* y),
        (handle, activationDesc, alpha, xDesc, x, beta, yDesc, y))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnActivationBackward,
        (cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc, const void* alpha,
         const cudnnTensorDescriptor_t yDesc, const void* y, const cudnnTensorDescriptor_t dyDesc,
         const void* dy, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
         const cudnnTensorDescriptor_t dxDesc, void* dx),
        (handle, activationDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnPoolingBackward,
        (cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
         const cudnnTensorDescriptor_t yDesc, const void* y, const cudnnTensorDescriptor_t dyDesc,
         const void* dy, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
         const cudnnTensorDescriptor_t dxDesc, void* dx),
        (handle, poolingDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDeriveBNTensorDescriptor,
        (cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc,
         cudnnBatchNormMode_t mode),
        (derivedBnDesc, xDesc, mode))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnBatchNormalizationForwardTraining,
        (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
         const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc,
         void* y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale,
         const void* bnBias, double exponentialAverageFactor, void* resultRunningMean,
         void* resultRunningVariance, double epsilon, void* resultSaveMean,
         void* resultSaveInvVariance),
        (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias,
         exponentialAverageFactor, resultRunningMean, resultRunningVariance, epsilon,
         resultSaveMean, resultSaveInvVariance))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED,
        cudnnBatchNormalizationForwardInference,
        (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
         const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc,
         void* y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale,
         const void* bnBias, const void* estimatedMean, const void* estimatedVariance,
         double epsilon),
        (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias,
         estimatedMean, estimatedVariance, epsilon))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnBatchNormalizationBackward,
        (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alphaDataDiff,
         const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff,
         const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t dyDesc,
         const void* dy, const cudnnTensorDescriptor_t dxDesc, void* dx,
         const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void* bnScale, void* dBnScaleResult,
         void* dBnBiasResult, double epsilon, const void* savedMean, const void* savedInvVariance),
        (handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, x, dyDesc,
         dy, dxDesc, dx, dBnScaleBiasDesc, bnScale, dBnScaleResult, dBnBiasResult, epsilon,
         savedMean, savedInvVariance))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateLRNDescriptor,
        (cudnnLRNDescriptor_t * normDesc), (normDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyLRNDescriptor,
        (cudnnLRNDescriptor_t lrnDesc), (lrnDesc))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetLRNDescriptor,
        (cudnnLRNDescriptor_t normDesc, unsigned lrnN, double lrnAlpha, double lrnBeta,
         double lrnK),
        (normDesc, lrnN, lrnAlpha, lrnBeta, lrnK))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnLRNCrossChannelForward,
        (cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, cudnnLRNMode_t lrnMode,
         const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
         const cudnnTensorDescriptor_t yDesc, void* y),
        (handle, normDesc, lrnMode, alpha, xDesc, x, beta, yDesc, y))
CH_LAZY(CH_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnLRNCrossChannelBackward,
        (cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, cudnnLRNMode_t lrnMode,
         const void* alpha, const cudnnTensorDescriptor_t yDesc, const void* y,
         const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnTensorDescriptor_t xDesc,
         const void* x, const void* beta, const cudnnTensorDescriptor_t dxDesc, void* dx),
        (handle, normDesc, lrnMode, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
#endif
