// The host side of the CUDA emulator: the CUDA runtime API subset chainerc
// uses (include/cuda_runtime_api.h), cuBLAS's GEMM over OpenBLAS
// (include/cublas_v2.h) and a host cuRAND (include/curand.h).
#include <cblas.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_emulation.h"
#include "include/cublas_v2.h"
#include "include/cuda_runtime_api.h"
#include "include/curand.h"

struct CUstream_st {
  int device;
};
struct CUevent_st {
  int device;
};
struct cublasContext {
  int device;
  cudaStream_t stream;
  void* workspace;
  size_t workspace_bytes;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};
struct curandGenerator_st {
  int device;
  unsigned long long seed;
  unsigned long long offset;
};

namespace chainerc::cuda::emu {
namespace {

constexpr int kDevices = 2;
constexpr size_t kDeviceMemory = size_t{80} << 30;  // an H100's 80 GB

struct Allocation {
  size_t bytes;
  int device;  // -1: page-locked host memory
};

struct Runtime {
  std::mutex mutex;
  std::map<const char*, Allocation> allocations;  // by start address
  size_t allocated[kDevices] = {};
  std::atomic<bool> context[kDevices] = {};
};

Runtime& rt() {
  static Runtime* r = new Runtime;  // never destroyed: used during static teardown
  return *r;
}

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;

cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

void touch(int device) { rt().context[device].store(true); }

// The allocation that holds [p, p + n), or null.
const Allocation* find(const void* p, size_t n, const char** base) {
  Runtime& r = rt();
  const char* c = static_cast<const char*>(p);
  auto it = r.allocations.upper_bound(c);
  if (it == r.allocations.begin()) return nullptr;
  --it;
  if (c < it->first || c + n > it->first + it->second.bytes) return nullptr;
  if (base) *base = it->first;
  return &it->second;
}

// A copy's pointers: device or pinned memory must hold the whole range.
cudaError_t check_range(const void* p, size_t n) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  Runtime& r = rt();
  const char* c = static_cast<const char*>(p);
  auto it = r.allocations.upper_bound(c);
  if (it == r.allocations.begin()) return cudaSuccess;  // host memory
  --it;
  if (c >= it->first + it->second.bytes) return cudaSuccess;  // host memory
  return c + n <= it->first + it->second.bytes ? cudaSuccess : cudaErrorInvalidValue;
}

bool valid_stream(cudaStream_t s) { return !s || (s->device >= 0 && s->device < kDevices); }

}  // namespace

bool context_created(int device) {
  return device >= 0 && device < kDevices && rt().context[device].load();
}

int device_of(const void* ptr, size_t* bytes_left) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  const char* base = nullptr;
  const Allocation* a = find(ptr, 1, &base);
  if (!a || a->device < 0) return -1;
  if (bytes_left)
    *bytes_left = a->bytes - static_cast<size_t>(static_cast<const char*>(ptr) - base);
  return a->device;
}

size_t bytes_allocated(int device) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  return device >= 0 && device < kDevices ? rt().allocated[device] : 0;
}

void set_last_error(cudaError_t e) { t_last_error = e; }

}  // namespace chainerc::cuda::emu

using namespace chainerc::cuda::emu;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
      return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources:
      return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    default:
      return cudaGetErrorName(e);
  }
}

cudaError_t cudaGetLastError() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return t_last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return fail(cudaErrorInvalidValue);
  const char* env = std::getenv("CH_EMULATED_DEVICES");  // 0 to see the no-device paths
  *count = env && *env ? std::atoi(env) : kDevices;
  if (*count < 0 || *count > kDevices) *count = kDevices;
  if (*count == 0) return fail(cudaErrorNoDevice);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return fail(cudaErrorInvalidValue);
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices) return fail(cudaErrorInvalidDevice);
  t_device = device;
  touch(device);  // CUDA 12: cudaSetDevice initializes the device's primary context
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= kDevices) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = 48 * 1024;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = 227 * 1024;
      break;
    default:
      return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

namespace {
// Calls that make the host wait for a device on a GPU (counted for the tests
// of issue 46: a training step must make none).
std::atomic<uint64_t> g_host_syncs{0};
void count_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (!func || attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > 227 * 1024)
    return fail(cudaErrorInvalidValue);
  chainerc::cuda::emu::set_max_dynamic_shared(func, static_cast<size_t>(value));
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  touch(t_device);
  count_sync();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  touch(t_device);
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (size > kDeviceMemory - r.allocated[t_device]) return fail(cudaErrorMemoryAllocation);
  void* p = std::aligned_alloc(256, (size + 255) / 256 * 256);  // cudaMalloc aligns to 256
  if (!p) return fail(cudaErrorMemoryAllocation);
  r.allocations[static_cast<const char*>(p)] = Allocation{size, t_device};
  r.allocated[t_device] += size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  touch(t_device);
  if (!ptr) return cudaSuccess;
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.allocations.find(static_cast<const char*>(ptr));
  if (it == r.allocations.end() || it->second.device < 0) return fail(cudaErrorInvalidValue);
  r.allocated[it->second.device] -= it->second.bytes;
  r.allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  touch(t_device);
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (!p) return fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(rt().mutex);
  rt().allocations[static_cast<const char*>(p)] = Allocation{size, -1};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.allocations.find(static_cast<const char*>(ptr));
  if (it == r.allocations.end() || it->second.device >= 0) return fail(cudaErrorInvalidValue);
  r.allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

namespace {
cudaError_t copy_bytes(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t copy_peer(void* dst, int dst_device, const void* src, int src_device, size_t count);
}  // namespace

// cudaMemcpy waits for the device (the legacy default stream's work before
// it, and the copy itself); the Async forms do not.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  count_sync();
  return copy_bytes(dst, src, count, kind);
}

namespace {
cudaError_t copy_bytes(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  touch(t_device);
  if (count == 0) return cudaSuccess;
  if (!dst || !src || static_cast<int>(kind) < 0 || kind > cudaMemcpyDefault)
    return fail(cudaErrorInvalidValue);
  if (check_range(dst, count) != cudaSuccess || check_range(src, count) != cudaSuccess)
    return fail(cudaErrorInvalidValue);
  std::memmove(dst, src, count);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  return copy_bytes(dst, src, count, kind);
}

cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                           size_t count) {
  count_sync();
  return copy_peer(dst, dst_device, src, src_device, count);
}

namespace {
cudaError_t copy_peer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  if (dst_device < 0 || dst_device >= kDevices || src_device < 0 || src_device >= kDevices)
    return fail(cudaErrorInvalidDevice);
  size_t left = 0;
  if (count && (device_of(dst, &left) != dst_device || left < count ||
                device_of(src, &left) != src_device || left < count))
    return fail(cudaErrorInvalidValue);
  return copy_bytes(dst, src, count, cudaMemcpyDefault);
}
}  // namespace

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  return copy_peer(dst, dst_device, src, src_device, count);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (count && check_range(ptr, count) != cudaSuccess) return fail(cudaErrorInvalidValue);
  if (count) std::memset(ptr, value, count);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  if (!stream) return fail(cudaErrorInvalidValue);
  touch(t_device);
  *stream = new CUstream_st{t_device};
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  count_sync();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream || !valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  stream->device = -1;  // a second destroy is an error, not a crash (memory kept)
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  if (!event) return fail(cudaErrorInvalidValue);
  touch(t_device);
  *event = new CUevent_st{t_device};
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event || event->device < 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle);
  // The real runtime requires the stream and the event on the same device.
  int on = stream ? stream->device : t_device;
  if (on != event->device) return fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (!event || event->device < 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event || event->device < 0) return fail(cudaErrorInvalidResourceHandle);
  count_sync();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event || event->device < 0) return fail(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

// ---- cuBLAS ----

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  touch(t_device);
  *handle = new cublasContext{t_device, nullptr, nullptr, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  // As documented for cuBLAS: setting the stream resets the workspace set by
  // cublasSetWorkspace to cuBLAS's own default pool.
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && (reinterpret_cast<uintptr_t>(workspace) % 256) != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TENSOR_OP_MATH &&
      mode != CUBLAS_PEDANTIC_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    default:
      return "cuBLAS error";
  }
}

namespace chainerc::cuda::emu {
void* cublas_workspace(cublasHandle_t handle, size_t* bytes) {
  if (bytes) *bytes = handle ? handle->workspace_bytes : 0;
  return handle ? handle->workspace : nullptr;
}
}  // namespace chainerc::cuda::emu

namespace {

// cuBLAS's checks of a GEMM's arguments (cublas<t>gemm in the cuBLAS guide),
// then whether the matrices lie in device memory (an illegal address on a GPU).
template <typename T>
cublasStatus_t gemm_checks(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const T* alpha, const T* A, int lda, const T* B, int ldb,
                           const T* beta, T* C, int ldc) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto op_ok = [](cublasOperation_t t) {
    return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C;
  };
  auto mx = [](int v) { return v > 1 ? v : 1; };
  if (!op_ok(ta) || !op_ok(tb) || m < 0 || n < 0 || k < 0 || !alpha || !beta ||
      lda < mx(ta == CUBLAS_OP_N ? m : k) || ldb < mx(tb == CUBLAS_OP_N ? k : n) || ldc < mx(m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  auto in_device = [](const void* p, long long elems) {
    size_t left = 0;
    return device_of(p, &left) >= 0 && left >= static_cast<size_t>(elems) * sizeof(T);
  };
  // Elements each matrix spans as stored: (columns - 1) * ld + rows.
  long long a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  long long b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  if ((k > 0 && (!in_device(A, (a_cols - 1) * lda + a_rows) ||
                 !in_device(B, (b_cols - 1) * ldb + b_rows))) ||
      !in_device(C, (static_cast<long long>(n) - 1) * ldc + m))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

CBLAS_TRANSPOSE cblas_op(cublasOperation_t t) {
  return t == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

// x rounded to TF32 (the tensor cores' input format: float32's exponent, a
// 10-bit mantissa), to nearest, ties to even; infinities and NaN unchanged.
float to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;
  u += 0x0FFFu + ((u >> 13) & 1u);
  u &= 0xFFFFE000u;
  std::memcpy(&x, &u, sizeof u);
  return x;
}

// A stored matrix (rows x cols, leading dimension ld) rounded to TF32.
std::vector<float> tf32_copy(const float* p, long long rows, long long cols, int ld) {
  std::vector<float> r(cols > 0 ? static_cast<size_t>((cols - 1) * ld + rows) : 0);
  for (long long j = 0; j < cols; ++j)
    for (long long i = 0; i < rows; ++i) r[j * ld + i] = to_tf32(p[j * ld + i]);
  return r;
}

}  // namespace

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float* alpha, const float* A, int lda,
                           const float* B, int ldb, const float* beta, float* C, int ldc) {
  cublasStatus_t s = gemm_checks(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (s != CUBLAS_STATUS_SUCCESS || m == 0 || n == 0) return s;
  if (h->math == CUBLAS_TF32_TENSOR_OP_MATH && k > 0) {
    const auto a = tf32_copy(A, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda);
    const auto b = tf32_copy(B, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb);
    cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, *alpha, a.data(), lda, b.data(),
                ldb, *beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
  }
  cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, *alpha, A, lda, B, ldb, *beta, C,
              ldc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const double* alpha, const double* A, int lda,
                           const double* B, int ldb, const double* beta, double* C, int ldc) {
  cublasStatus_t s = gemm_checks(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (s != CUBLAS_STATUS_SUCCESS || m == 0 || n == 0) return s;
  cblas_dgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, *alpha, A, lda, B, ldb, *beta, C,
              ldc);
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T, typename Gemm>
cublasStatus_t strided_batched(Gemm gemm, cublasHandle_t h, cublasOperation_t ta,
                               cublasOperation_t tb, int m, int n, int k, const T* alpha,
                               const T* A, int lda, long long sa, const T* B, int ldb, long long sb,
                               const T* beta, T* C, int ldc, long long sc, int batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < batch; ++i) {
    const cublasStatus_t s =
        gemm(h, ta, tb, m, n, k, alpha, A + i * sa, lda, B + i * sb, ldb, beta, C + i * sc, ldc);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long int sa, const float* B, int ldb,
                                         long long int sb, const float* beta, float* C, int ldc,
                                         long long int sc, int batch) {
  return strided_batched(cublasSgemm, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C,
                         ldc, sc, batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double* alpha, const double* A, int lda,
                                         long long int sa, const double* B, int ldb,
                                         long long int sb, const double* beta, double* C, int ldc,
                                         long long int sc, int batch) {
  return strided_batched(cublasDgemm, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C,
                         ldc, sc, batch);
}

// ---- cuRAND ----

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Sample `i` of generator g: 64 random bits.
uint64_t bits(const curandGenerator_st* g, uint64_t i) {
  return mix(mix(g->seed) ^ (g->offset + i));
}

template <typename T>
curandStatus_t uniform(curandGenerator_t g, T* out, size_t n) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  size_t left = 0;
  if (n && (device_of(out, &left) < 0 || left < n * sizeof(T))) return CURAND_STATUS_LAUNCH_FAILURE;
  for (size_t i = 0; i < n; ++i) {
    uint64_t b = bits(g, i);
    // (0, 1]: (k + 1) / 2^p for k uniform in [0, 2^p).
    out[i] = sizeof(T) == 4 ? static_cast<T>(static_cast<float>((b >> 40) + 1) * 0x1p-24f)
                            : static_cast<T>(static_cast<double>((b >> 11) + 1) * 0x1p-53);
  }
  g->offset += n;
  return CURAND_STATUS_SUCCESS;
}

template <typename T>
curandStatus_t normal(curandGenerator_t g, T* out, size_t n, T mean, T stddev) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  if (n % 2) return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
  size_t left = 0;
  if (n && (device_of(out, &left) < 0 || left < n * sizeof(T))) return CURAND_STATUS_LAUNCH_FAILURE;
  for (size_t i = 0; i < n; i += 2) {
    double u1 = static_cast<double>((bits(g, i) >> 11) + 1) * 0x1p-53;
    double u2 = static_cast<double>(bits(g, i + 1) >> 11) * 0x1p-53;
    double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
    out[i] = static_cast<T>(mean + stddev * r * std::cos(t));
    out[i + 1] = static_cast<T>(mean + stddev * r * std::sin(t));
  }
  g->offset += n;
  return CURAND_STATUS_SUCCESS;
}

}  // namespace

curandStatus_t curandCreateGenerator(curandGenerator_t* g, curandRngType_t) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  touch(t_device);
  *g = new curandGenerator_st{t_device, 0, 0};
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandDestroyGenerator(curandGenerator_t g) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  delete g;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t g, unsigned long long seed) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  g->seed = seed;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandSetGeneratorOffset(curandGenerator_t g, unsigned long long offset) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  g->offset = offset;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandSetStream(curandGenerator_t g, cudaStream_t s) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  return valid_stream(s) ? CURAND_STATUS_SUCCESS : CURAND_STATUS_LAUNCH_FAILURE;
}
curandStatus_t curandGenerateUniform(curandGenerator_t g, float* out, size_t n) {
  return uniform(g, out, n);
}
curandStatus_t curandGenerateUniformDouble(curandGenerator_t g, double* out, size_t n) {
  return uniform(g, out, n);
}
curandStatus_t curandGenerateNormal(curandGenerator_t g, float* out, size_t n, float mean,
                                    float stddev) {
  return normal(g, out, n, mean, stddev);
}
curandStatus_t curandGenerateNormalDouble(curandGenerator_t g, double* out, size_t n, double mean,
                                          double stddev) {
  return normal(g, out, n, mean, stddev);
}

namespace chainerc::cuda::emu {
uint64_t host_synchronizations() { return g_host_syncs.load(std::memory_order_relaxed); }
}  // namespace chainerc::cuda::emu
