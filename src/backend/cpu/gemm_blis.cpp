#include "gemm_blis.h"

#if CH_HAVE_BLIS
#include <dlfcn.h>

#include <mutex>

#include CH_BLIS_HEADER
#endif

namespace chainerc::cpu::blis {

#if CH_HAVE_BLIS
namespace {

// The functions taken from the library, typed from its header.
struct Library {
  void* handle = nullptr;
  decltype(&bli_thread_set_num_threads) set_threads = nullptr;
  decltype(&bli_sgemm) sgemm = nullptr;
  decltype(&bli_dgemm) dgemm = nullptr;
  std::string version;
  bool reference_kernels = false;
};

// Under AddressSanitizer BLIS is not opened: LeakSanitizer's exit-time scan
// crashes on the dynamic TLS of a dlopen'ed libblis ("Tracer caught signal
// 11" at a DTLS range it misreads), so the sanitizer builds measure OpenBLAS
// and oneDNN only. The default build tests the BLIS path.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kOpenBlis = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kOpenBlis = false;
#else
constexpr bool kOpenBlis = true;
#endif
#else
constexpr bool kOpenBlis = true;
#endif

const Library& library() {
  static const Library lib = [] {
    Library l;
    if (!kOpenBlis) return l;
    const char* opened = nullptr;
    for (const char* so : {"libblis.so.4", "libblis.so.3", "libblis.so"}) {
      l.handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
      if (l.handle) {
        opened = so;
        break;
      }
    }
    if (!l.handle) return l;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(l.handle, name));
      return fn != nullptr;
    };
    decltype(&bli_info_get_version_str) version_str = nullptr;
    decltype(&bli_arch_query_id) arch_id = nullptr;
    decltype(&bli_arch_string) arch_string = nullptr;
    if (!sym(l.sgemm, "bli_sgemm") || !sym(l.dgemm, "bli_dgemm") ||
        !sym(l.set_threads, "bli_thread_set_num_threads") ||
        !sym(version_str, "bli_info_get_version_str")) {
      dlclose(l.handle);
      return Library{};
    }
    // One thread per call: chainerc's pool splits the work (gemm.cpp).
    l.set_threads(1);
    l.version = std::string("BLIS ") + version_str();
    if (sym(arch_id, "bli_arch_query_id") && sym(arch_string, "bli_arch_string")) {
      const std::string arch = arch_string(arch_id());
      l.version += " (" + arch + " kernels, " + opened + ")";
      l.reference_kernels = arch == "generic";
    }
    return l;
  }();
  return lib;
}

trans_t trans(bool t) { return t ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE; }

}  // namespace

bool available() { return library().handle != nullptr; }
std::string version() { return library().version; }
bool reference_kernels() { return library().reference_kernels; }
void set_threads(int n) {
  if (available()) library().set_threads(n);
}

// Row-major: the row stride is ld, the column stride 1, of each matrix as
// stored; BLIS applies the transposes.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  library().sgemm(trans(trans_a), trans(trans_b), m, n, k, &alpha, const_cast<float*>(a), lda, 1,
                  const_cast<float*>(b), ldb, 1, &beta, c, ldc, 1);
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc) {
  library().dgemm(trans(trans_a), trans(trans_b), m, n, k, &alpha, const_cast<double*>(a), lda, 1,
                  const_cast<double*>(b), ldb, 1, &beta, c, ldc, 1);
}

#else  // built without BLIS's header

bool available() { return false; }
std::string version() { return {}; }
bool reference_kernels() { return false; }
void set_threads(int) {}
void sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
           int64_t, float, float*, int64_t) {}
void dgemm(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
           int64_t, double, double*, int64_t) {}

#endif

}  // namespace chainerc::cpu::blis
