// Which BLAS libtorch's GEMM really calls, and its threads (bench/train, bench/functions,
// bench/overhead and the standalone libtorch program of bench/examples/). Needs neither
// chainerc nor libtorch: bench/examples/ includes it without loading libchainerc.

#ifndef CH_BENCH_PEER_BLAS_H
#define CH_BENCH_PEER_BLAS_H

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <string>

namespace bench {

// ---- the BLAS behind libtorch's GEMM ------------------------------------------------------
//
// libtorch (Debian's, BLAS_INFO=generic) calls the Fortran `sgemm_`/`dgemm_`, bound at load
// time to the first object in the process's global scope that defines them; which one that is
// follows the link order, not libblas.so.3's symlink. On Debian the libblas.so.3 of the
// openblas-pthread alternative is only OpenBLAS's BLAS interface: its sgemm_ calls into
// libopenblas.so.0, the one OpenBLAS in the process (kernels, thread pool), which libchainerc
// links too. So the benchmarks ask the dynamic linker for the `sgemm_` the process resolves
// (dlsym(RTLD_DEFAULT)), the object that defines it (dladdr), and the OpenBLAS that object
// reaches (openblas_get_config / openblas_get_corename / openblas_get_num_threads).

struct GemmLibrary {
  std::string path;      // realpath of the object defining the symbol, "" when unresolved
  std::string openblas;  // realpath of the OpenBLAS it reaches (itself or a dependency), or ""
  std::string config;    // openblas_get_config(), "" when not OpenBLAS
  std::string corename;  // openblas_get_corename(): the kernels it chose for this CPU
  int threads = 0;       // openblas_get_num_threads(), 0 when not OpenBLAS
};

inline std::string real_path(const char* path) {
  char* real = realpath(path, nullptr);
  if (!real) return path;
  std::string r = real;
  std::free(real);
  return r;
}

// `name` as the loaded object `path` sees it: the object itself or its dependencies (dlsym on a
// handle searches both); `where` (if given) gets the path of the object that defines it.
inline void* symbol_seen_by(const char* path, const char* name, std::string* where) {
  void* lib = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return nullptr;
  void* sym = dlsym(lib, name);
  dlclose(lib);  // only drops the reference RTLD_NOLOAD took
  Dl_info info;
  if (sym && where && dladdr(sym, &info) && info.dli_fname) *where = real_path(info.dli_fname);
  return sym;
}

inline GemmLibrary resolved_gemm_library(const char* name = "sgemm_") {
  GemmLibrary g;
  void* sym = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (!sym || !dladdr(sym, &info) || !info.dli_fname) return g;
  g.path = real_path(info.dli_fname);
  using CharFn = char* (*)();
  auto config =
      reinterpret_cast<CharFn>(symbol_seen_by(info.dli_fname, "openblas_get_config", &g.openblas));
  auto core =
      reinterpret_cast<CharFn>(symbol_seen_by(info.dli_fname, "openblas_get_corename", nullptr));
  auto threads = reinterpret_cast<int (*)()>(
      symbol_seen_by(info.dli_fname, "openblas_get_num_threads", nullptr));
  if (config) g.config = config();
  if (core) g.corename = core();
  if (threads) g.threads = threads();
  return g;
}

// Sets the thread count of every OpenBLAS in the process (each has its own pool, which by
// default uses every core: a "one thread" libtorch would otherwise multiply on all of them);
// returns how many it reached. torch::set_num_threads reaches none of them.
inline int set_openblas_threads(int n) {
  struct Walk {
    int n, reached;
  } w{n, 0};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        Walk* ww = static_cast<Walk*>(data);
        if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
        void* lib = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        if (!lib) return 0;
        void* sym = dlsym(lib, "openblas_set_num_threads");
        dlclose(lib);
        Dl_info di;
        if (sym && dladdr(sym, &di) && di.dli_fbase == reinterpret_cast<void*>(info->dlpi_addr)) {
          reinterpret_cast<void (*)(int)>(sym)(ww->n);
          ++ww->reached;
        }
        return 0;
      },
      &w);
  return w.reached;
}
// The former name.
inline void set_peer_blas_threads(int n) { set_openblas_threads(n); }

// The BLAS_INFO entry of libtorch's build configuration (pass
// at::show_config()), or "unknown".
inline std::string torch_blas_info(const std::string& show_config) {
  const size_t p = show_config.find("BLAS_INFO=");
  if (p == std::string::npos) return "unknown";
  return show_config.substr(p + 10, show_config.find_first_of(", \n", p) - p - 10);
}

// One line on a GEMM library: "OpenBLAS 0.3.21 ... (kernels Cooperlake, 1 thread) in PATH,
// through the interface of PATH".
inline std::string describe(const GemmLibrary& g) {
  if (g.path.empty()) return "unresolved";
  if (g.config.empty()) return "not OpenBLAS: " + g.path;
  std::string c = g.config;
  while (!c.empty() && (c.back() == ' ' || c.back() == '\n')) c.pop_back();
  return c + " (kernels " + g.corename + ", " + std::to_string(g.threads) + " thread" +
         (g.threads == 1 ? "" : "s") + ") in " + g.openblas +
         (g.openblas == g.path ? std::string() : ", through the interface of " + g.path);
}

// libtorch's BLAS for the benchmarks' environment lines: BLAS_INFO and the library its
// sgemm_ really calls, with that library's configuration, kernels and threads.
inline std::string torch_blas_description(const std::string& show_config) {
  return "BLAS_INFO=" + torch_blas_info(show_config) + "; its sgemm_ calls " +
         describe(resolved_gemm_library("sgemm_"));
}

}  // namespace bench

#endif  // CH_BENCH_PEER_BLAS_H
