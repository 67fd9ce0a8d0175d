#include "gemm_libxsmm.h"

#if CH_HAVE_LIBXSMM
#include <libxsmm_cpuid.h>
#include <libxsmm_generator.h>
#include <libxsmm_version.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#endif

namespace chainerc::cpu::libxsmm {

#if CH_HAVE_LIBXSMM
namespace {

// The instruction set the generator writes for (libxsmm's LIBXSMM_X86_*),
// read once from CPUID.
int target_arch() {
  static const int arch = libxsmm_cpuid_x86(nullptr);
  return arch;
}

// One kernel's shape, in libxsmm's column-major terms (see kernel()).
struct Key {
  bool f64, trans_b, beta0;
  int m, n, k, lda, ldb, ldc;
  bool operator==(const Key& o) const {
    return f64 == o.f64 && trans_b == o.trans_b && beta0 == o.beta0 && m == o.m && n == o.n &&
           k == o.k && lda == o.lda && ldb == o.ldb && ldc == o.ldc;
  }
};

struct KeyHash {
  size_t operator()(const Key& x) const {
    uint64_t h = uint64_t(x.f64) | uint64_t(x.trans_b) << 1 | uint64_t(x.beta0) << 2;
    for (int v : {x.m, x.n, x.k, x.lda, x.ldb, x.ldc}) h = (h ^ uint64_t(v)) * 0x100000001b3ull;
    return size_t(h);
  }
};

using Kernel = void (*)(const void* a, const void* b, void* c);

// Generated code goes here first; the kernels are a few KiB (4.7 KiB for a
// 100 x 1000 x 1000 product on AVX-512). Static, under the mutex: a heap
// buffer would count in the program's heap peak at every first call.
constexpr size_t kCodeBuffer = 128 * 1024;

class Kernels {
 public:
  static Kernels& instance() {
    static Kernels* k = new Kernels;  // never destroyed: kernels may run in static destructors
    return *k;
  }

  // The kernel for the shape, generated on first use; nullptr when it cannot
  // be had (remembered, so the generator is asked once).
  Kernel get(const Key& key) {
    thread_local std::unordered_map<Key, Kernel, KeyHash> seen;  // no lock on the hot path
    auto hit = seen.find(key);
    if (hit != seen.end()) return hit->second;
    Kernel kernel;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = kernels_.find(key);
      if (it != kernels_.end()) {
        kernel = it->second;
      } else {
        if (held_ >= kMaxKernels) return nullptr;  // not remembered: the map stays bounded
        kernel = generate(key);
        kernels_.emplace(key, kernel);
        if (kernel) ++held_;
      }
    }
    seen.emplace(key, kernel);
    return kernel;
  }

  int held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  // Lock held. The generator writes machine code into code_; it is copied
  // into pages of its own that are then made executable (never writable and
  // executable at once).
  Kernel generate(const Key& key) {
    libxsmm_descriptor_blob blob;
    const int flags =
        (key.trans_b ? LIBXSMM_GEMM_FLAG_TRANS_B : 0) | (key.beta0 ? LIBXSMM_GEMM_FLAG_BETA_0 : 0);
    const libxsmm_gemm_descriptor* desc =
        key.f64 ? libxsmm_dgemm_descriptor_init(&blob, key.m, key.n, key.k, key.lda, key.ldb,
                                                key.ldc, 1.0, key.beta0 ? 0.0 : 1.0, flags,
                                                LIBXSMM_GEMM_PREFETCH_NONE)
                : libxsmm_sgemm_descriptor_init(&blob, key.m, key.n, key.k, key.lda, key.ldb,
                                                key.ldc, 1.f, key.beta0 ? 0.f : 1.f, flags,
                                                LIBXSMM_GEMM_PREFETCH_NONE);
    if (!desc) return nullptr;
    libxsmm_generated_code code;
    std::memset(&code, 0, sizeof code);
    code.generated_code = code_;
    code.buffer_size = kCodeBuffer;
    code.code_type = 2;  // machine code, to be copied into executable memory
    code.arch = unsigned(target_arch());
    libxsmm_generator_gemm_kernel(&code, desc);
    if (code.last_error != 0 || code.code_size == 0) return nullptr;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t bytes = (code.code_size + page - 1) / page * page;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    std::memcpy(p, code_, code.code_size);
    if (mprotect(p, bytes, PROT_READ | PROT_EXEC) != 0) {  // e.g. a policy forbids it
      munmap(p, bytes);
      return nullptr;
    }
    return reinterpret_cast<Kernel>(p);
  }

  std::mutex mutex_;
  std::unordered_map<Key, Kernel, KeyHash> kernels_;
  int held_ = 0;
  static inline unsigned char code_[kCodeBuffer];
};

bool fits(int64_t v) { return v > 0 && v <= int64_t{1} << 30; }

// Row-major C (m x n) = op(A) B + beta C is column-major C^T (n x m) = B^T
// op(A)^T: libxsmm's A is our B as stored (ld ldb), its B our A, transposed
// in its terms when ours is not (ld lda).
template <typename T>
bool run(bool trans_a, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
         const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (!available() || !supports(false, double(alpha), double(beta))) return false;
  if (!fits(m) || !fits(n) || !fits(k) || !fits(lda) || !fits(ldb) || !fits(ldc)) return false;
  const Key key{std::is_same_v<T, double>,
                trans_a,
                beta == T(0),
                int(n),
                int(m),
                int(k),
                int(ldb),
                int(lda),
                int(ldc)};
  const Kernel kernel = Kernels::instance().get(key);
  if (!kernel) return false;
  kernel(b, a, c);
  return true;
}

}  // namespace

bool available() { return target_arch() >= LIBXSMM_X86_AVX2; }

std::string version() {
  if (!available()) return {};
  return std::string("libxsmm ") + LIBXSMM_CONFIG_VERSION + " JIT (" +
         libxsmm_cpuid_name(target_arch()) + " kernels)";
}

bool supports(bool trans_b, double alpha, double beta) {
  return !trans_b && alpha == 1.0 && (beta == 0.0 || beta == 1.0);
}

bool sgemm(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return run(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool dgemm(bool trans_a, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  return run(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int kernels_held() { return available() ? Kernels::instance().held() : 0; }

#else  // built without libxsmm

bool available() { return false; }
std::string version() { return {}; }
bool supports(bool, double, double) { return false; }
bool sgemm(bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
           float, float*, int64_t) {
  return false;
}
bool dgemm(bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*, int64_t,
           double, double*, int64_t) {
  return false;
}
int kernels_held() { return 0; }

#endif

}  // namespace chainerc::cpu::libxsmm
