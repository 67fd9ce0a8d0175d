#include "libraries.h"

#include <memory>
#include <vector>

#include "core/config.h"
#include "core/random.h"
#include "cuda_util.h"
#include "launch_count.h"
#if !defined(CH_CUDA_EMULATED_RUNTIME)
#include "lazy_libraries.h"
#endif
#include "memory.h"
#include "streams.h"

namespace chainerc::cuda {
namespace {

// cuBLAS's recommended workspace on Hopper.
constexpr size_t kCublasWorkspace = size_t{32} << 20;

struct DeviceLibraries {
  std::mutex mutex;
  cublasHandle_t cublas = nullptr;
  // Held while the handle's math mode is set and the GEMM that relies on it
  // is issued (the handle is shared by the threads using the device).
  std::mutex gemm_mutex;
  std::mutex rng_mutex;
  curandGenerator_t curand = nullptr;
};

std::vector<std::unique_ptr<DeviceLibraries>>& libraries() {
  static auto* v = [] {  // never destroyed: handles live as long as the process
    auto* r = new std::vector<std::unique_ptr<DeviceLibraries>>;
    for (int32_t i = 0, n = device_count(); i < n; ++i)
      r->push_back(std::make_unique<DeviceLibraries>());
    return r;
  }();
  return *v;
}

DeviceLibraries& libraries_of(int32_t device, const char* who) {
  require_device(device, who);
  return *libraries()[static_cast<size_t>(device)];
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void check_blas(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(st == CUBLAS_STATUS_ALLOC_FAILED ? CH_ERR_OUT_OF_MEMORY : CH_ERR_DEVICE, "cuBLAS: ", call,
         " failed: ", cublasGetStatusString(st));
}

namespace {

void check_rand(curandStatus_t st, const char* call) {
  if (st == CURAND_STATUS_SUCCESS) return;
  std::string why;
#if !defined(CH_CUDA_EMULATED_RUNTIME)
  why = load_error("curand");  // the library could not be opened
#endif
  fail(st == CURAND_STATUS_ALLOCATION_FAILED ? CH_ERR_OUT_OF_MEMORY : CH_ERR_DEVICE,
       "cuRAND: ", call, " failed with curandStatus ", static_cast<int>(st),
       why.empty() ? "" : ": ", why);
}

void reseed(curandGenerator_t g, uint64_t s) {
  check_rand(curandSetPseudoRandomGeneratorSeed(g, s), "curandSetPseudoRandomGeneratorSeed");
  check_rand(curandSetGeneratorOffset(g, 0), "curandSetGeneratorOffset");
}

}  // namespace

uint64_t device_seed(uint64_t base, int32_t device) {
  return splitmix64(base ^ splitmix64(static_cast<uint64_t>(device) + 1));
}

cublasHandle_t cublas_handle(int32_t device) {
  DeviceLibraries& lib = libraries_of(device, "cuBLAS");
  std::lock_guard<std::mutex> lock(lib.mutex);
  if (!lib.cublas) {
    DeviceGuard guard(device);
    cublasHandle_t h = nullptr;
    check_blas(cublasCreate(&h), "cublasCreate");
    // The workspace comes from the caching allocator, not from cuBLAS's own
    // cudaMalloc; it is held for the life of the handle.
    try {
      // cublasSetStream resets the workspace to cuBLAS's own: stream first.
      check_blas(cublasSetStream(h, engine_stream(device)), "cublasSetStream");
      void* ws = device_allocator(device, "cuBLAS").allocate(kCublasWorkspace);
      check_blas(cublasSetWorkspace(h, ws, kCublasWorkspace), "cublasSetWorkspace");
    } catch (...) {
      cublasDestroy(h);
      throw;
    }
    lib.cublas = h;
  }
  return lib.cublas;
}

curandGenerator_t curand_generator(int32_t device, std::unique_lock<std::mutex>& lock) {
  DeviceLibraries& lib = libraries_of(device, "cuRAND");
  lock = std::unique_lock<std::mutex>(lib.rng_mutex);
  if (!lib.curand) {
    DeviceGuard guard(device);
    curandGenerator_t g = nullptr;
    // Philox: counter based, reproducible for a seed whatever the launch shape.
    check_rand(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10), "curandCreateGenerator");
    try {
      reseed(g, device_seed(random::initial_seed(), device));
      check_rand(curandSetStream(g, engine_stream(device)), "curandSetStream");
    } catch (...) {
      curandDestroyGenerator(g);
      throw;
    }
    lib.curand = g;
  }
  return lib.curand;
}

void seed_generator(int32_t device, uint64_t seed) {
  std::unique_lock<std::mutex> lock;
  curandGenerator_t g = curand_generator(device, lock);
  DeviceGuard guard(device);
  reseed(g, device_seed(seed, device));
}

}  // namespace chainerc::cuda

namespace chainerc::cuda {

namespace {

// What gemm and gemm_strided_batched share: the dtype check, the handle, the
// lock under which the math mode is set and the call is issued, the count,
// and the refusal message.
template <typename Call32, typename Call64>
void issue_gemm(int32_t device, DType dtype, const char* what, Call32 call32, Call64 call64,
                const std::string& arguments, const char* name32, const char* name64) {
  if (dtype != DType::Float32 && dtype != DType::Float64)
    fail(CH_ERR_DTYPE, what, " on cuda:", device, ": dtype ", dtype_name(dtype),
         " is not supported (float32 or float64 expected)");
  cublasHandle_t h = cublas_handle(device);
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(libraries_of(device, "cuBLAS").gemm_mutex);
  gemm_call_counter.fetch_add(1, std::memory_order_relaxed);
  cublasStatus_t st;
  if (dtype == DType::Float32) {
    // ch_config_set_allow_tf32: TF32 tensor cores for float32, or not.
    check_blas(cublasSetMathMode(
                   h, config::allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
               "cublasSetMathMode");
    st = call32(h);
  } else {
    st = call64(h);
  }
  if (st == CUBLAS_STATUS_INVALID_VALUE)
    fail(CH_ERR_INVALID_ARGUMENT, what, " on cuda:", device, ": cuBLAS refused ", arguments, ": ",
         cublasGetStatusString(st));
  check_blas(st, dtype == DType::Float32 ? name32 : name64);
}

std::string describe(int m, int n, int k, int lda, int ldb, int ldc, bool trans_a, bool trans_b,
                     const char* more) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
         " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) +
         " ldc=" + std::to_string(ldc) + more + " (trans_a=" + std::to_string(trans_a) +
         ", trans_b=" + std::to_string(trans_b) + ")";
}

}  // namespace

void gemm(int32_t device, DType dtype, bool trans_a, bool trans_b, int m, int n, int k,
          double alpha, const void* a, int lda, const void* b, int ldb, double beta, void* c,
          int ldc) {
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  issue_gemm(
      device, dtype, "GEMM",
      [&](cublasHandle_t h) {
        const float al = static_cast<float>(alpha), be = static_cast<float>(beta);
        return cublasSgemm(h, ta, tb, m, n, k, &al, static_cast<const float*>(a), lda,
                           static_cast<const float*>(b), ldb, &be, static_cast<float*>(c), ldc);
      },
      [&](cublasHandle_t h) {
        return cublasDgemm(h, ta, tb, m, n, k, &alpha, static_cast<const double*>(a), lda,
                           static_cast<const double*>(b), ldb, &beta, static_cast<double*>(c), ldc);
      },
      describe(m, n, k, lda, ldb, ldc, trans_a, trans_b, ""), "cublasSgemm", "cublasDgemm");
}

void gemm_strided_batched(int32_t device, DType dtype, bool trans_a, bool trans_b, int m, int n,
                          int k, double alpha, const void* a, int lda, int64_t stride_a,
                          const void* b, int ldb, int64_t stride_b, double beta, void* c, int ldc,
                          int64_t stride_c, int batch) {
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::string more = " batch=" + std::to_string(batch);
  issue_gemm(
      device, dtype, "batched GEMM",
      [&](cublasHandle_t h) {
        const float al = static_cast<float>(alpha), be = static_cast<float>(beta);
        return cublasSgemmStridedBatched(h, ta, tb, m, n, k, &al, static_cast<const float*>(a), lda,
                                         stride_a, static_cast<const float*>(b), ldb, stride_b, &be,
                                         static_cast<float*>(c), ldc, stride_c, batch);
      },
      [&](cublasHandle_t h) {
        return cublasDgemmStridedBatched(h, ta, tb, m, n, k, &alpha, static_cast<const double*>(a),
                                         lda, stride_a, static_cast<const double*>(b), ldb,
                                         stride_b, &beta, static_cast<double*>(c), ldc, stride_c,
                                         batch);
      },
      describe(m, n, k, lda, ldb, ldc, trans_a, trans_b, more.c_str()), "cublasSgemmStridedBatched",
      "cublasDgemmStridedBatched");
}

}  // namespace chainerc::cuda
