#include "cpu_jit.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/error.h"

#ifdef CH_HAVE_LIBTCC
// The API as renamed by relocate_libtcc.sh.
#define tcc_new ch_tcc_new
#define tcc_delete ch_tcc_delete
#define tcc_set_error_func ch_tcc_set_error_func
#define tcc_set_options ch_tcc_set_options
#define tcc_set_output_type ch_tcc_set_output_type
#define tcc_compile_string ch_tcc_compile_string
#define tcc_add_symbol ch_tcc_add_symbol
#define tcc_relocate ch_tcc_relocate
#define tcc_get_symbol ch_tcc_get_symbol
#include <libtcc.h>

// Debian ships libtcc only as a non-PIC static archive; the build turns it into
// one relocatable object (src/user_kernels/meson.build) whose references to libc's
// data symbols stdout, stderr and environ are renamed to these, which live in
// this library and are set before libtcc first runs.
extern "C" {
FILE* ch_tcc_stdout = nullptr;
FILE* ch_tcc_stderr = nullptr;
char** ch_tcc_environ = nullptr;
}
extern char** environ;

namespace {
// libtcc1's helpers the generated code may call (unsigned 64-bit conversions).
unsigned long long ch_fixunssfdi(float a) { return static_cast<unsigned long long>(a); }
unsigned long long ch_fixunsdfdi(double a) { return static_cast<unsigned long long>(a); }
unsigned long long ch_fixunsxfdi(long double a) { return static_cast<unsigned long long>(a); }
float ch_floatundisf(unsigned long long a) { return static_cast<float>(a); }
double ch_floatundidf(unsigned long long a) { return static_cast<double>(a); }
long double ch_floatundixf(unsigned long long a) { return static_cast<long double>(a); }
int ch_isnan_d(double x) { return std::isnan(x) ? 1 : 0; }
int ch_isinf_d(double x) { return std::isinf(x) ? 1 : 0; }
int ch_abs(int x) { return x < 0 ? -x : x; }
long long ch_llabs(long long x) { return x < 0 ? -x : x; }
}  // namespace
#endif

namespace chainerc::kernels::cpu_jit {

#ifdef CH_HAVE_LIBTCC
namespace {

struct Compiled {
  TCCState* state = nullptr;  // owns the code; never deleted while the process runs
  KernelFn fn = nullptr;
  std::string error;  // compiler log when compilation failed
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<Compiled>> entries;
  long long compiles = 0;
  ~Cache() {
    for (auto& [src, c] : entries)
      if (c->state) tcc_delete(c->state);
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked: kernels may run during static destruction
  return *c;
}

void collect_error(void* opaque, const char* msg) {
  auto* log = static_cast<std::string*>(opaque);
  if (!log->empty()) *log += "\n";
  *log += msg;
}

template <typename F>
void add(TCCState* s, const char* name, F* fn) {
  tcc_add_symbol(s, name, reinterpret_cast<const void*>(fn));
}

void add_runtime_symbols(TCCState* s) {
  using D1 = double(double);
  using D2 = double(double, double);
  using F1 = float(float);
  using F2 = float(float, float);
#define CH_D1(n) add<D1>(s, #n, static_cast<D1*>(&::n))
#define CH_D2(n) add<D2>(s, #n, static_cast<D2*>(&::n))
#define CH_F1(n) add<F1>(s, #n, static_cast<F1*>(&::n))
#define CH_F2(n) add<F2>(s, #n, static_cast<F2*>(&::n))
  CH_D1(exp);
  CH_D1(log);
  CH_D1(log10);
  CH_D1(log1p);
  CH_D1(expm1);
  CH_D1(exp2);
  CH_D1(log2);
  CH_D1(sqrt);
  CH_D1(cbrt);
  CH_D2(pow);
  CH_D1(fabs);
  CH_D1(sin);
  CH_D1(cos);
  CH_D1(tan);
  CH_D1(asin);
  CH_D1(acos);
  CH_D1(atan);
  CH_D2(atan2);
  CH_D1(sinh);
  CH_D1(cosh);
  CH_D1(tanh);
  CH_D1(floor);
  CH_D1(ceil);
  CH_D1(round);
  CH_D1(trunc);
  CH_D2(fmod);
  CH_D2(fmax);
  CH_D2(fmin);
  CH_D1(erf);
  CH_D1(erfc);
  CH_D2(hypot);
  CH_D2(copysign);
  CH_F1(expf);
  CH_F1(logf);
  CH_F1(log10f);
  CH_F1(log1pf);
  CH_F1(expm1f);
  CH_F1(exp2f);
  CH_F1(log2f);
  CH_F1(sqrtf);
  CH_F1(cbrtf);
  CH_F2(powf);
  CH_F1(fabsf);
  CH_F1(sinf);
  CH_F1(cosf);
  CH_F1(tanf);
  CH_F1(asinf);
  CH_F1(acosf);
  CH_F1(atanf);
  CH_F2(atan2f);
  CH_F1(sinhf);
  CH_F1(coshf);
  CH_F1(tanhf);
  CH_F1(floorf);
  CH_F1(ceilf);
  CH_F1(roundf);
  CH_F1(truncf);
  CH_F2(fmodf);
  CH_F2(fmaxf);
  CH_F2(fminf);
  CH_F1(erff);
  CH_F1(erfcf);
  CH_F2(hypotf);
  CH_F2(copysignf);
#undef CH_D1
#undef CH_D2
#undef CH_F1
#undef CH_F2
  add(s, "abs", &ch_abs);
  add(s, "llabs", &ch_llabs);
  add(s, "isnan_d", &ch_isnan_d);
  add(s, "isinf_d", &ch_isinf_d);
  add(s, "__fixunssfdi", &ch_fixunssfdi);
  add(s, "__fixunsdfdi", &ch_fixunsdfdi);
  add(s, "__fixunsxfdi", &ch_fixunsxfdi);
  add(s, "__floatundisf", &ch_floatundisf);
  add(s, "__floatundidf", &ch_floatundidf);
  add(s, "__floatundixf", &ch_floatundixf);
  add(s, "memcpy", &std::memcpy);
  add(s, "memmove", &std::memmove);
  add(s, "memset", &std::memset);
}

// Compile one source; the cache mutex is held.
std::unique_ptr<Compiled> build(const std::string& source) {
  if (!ch_tcc_stdout) {
    ch_tcc_stdout = stdout;
    ch_tcc_stderr = stderr;
    ch_tcc_environ = environ;
  }
  auto c = std::make_unique<Compiled>();
  TCCState* s = tcc_new();
  if (!s) {
    c->error = "tcc_new failed (out of memory)";
    return c;
  }
  tcc_set_error_func(s, &c->error, collect_error);
  tcc_set_options(s, "-nostdlib -nostdinc");
  tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
  bool ok = tcc_compile_string(s, source.c_str()) == 0;
  if (ok) {
    add_runtime_symbols(s);
    ok = tcc_relocate(s, TCC_RELOCATE_AUTO) >= 0;
  }
  if (ok) {
    c->fn = reinterpret_cast<KernelFn>(tcc_get_symbol(s, "ch_kernel"));
    ok = c->fn != nullptr;
    if (!ok && c->error.empty()) c->error = "the generated code has no ch_kernel function";
  }
  if (!ok) {
    tcc_delete(s);
    if (c->error.empty()) c->error = "compilation failed without a message";
    c->fn = nullptr;
    return c;
  }
  c->state = s;
  return c;
}

}  // namespace

bool available() { return true; }

KernelFn compile(const std::string& source, const std::string& kernel_name) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(source);
  if (it == c.entries.end()) {
    ++c.compiles;
    it = c.entries.emplace(source, build(source)).first;
  }
  const Compiled& e = *it->second;
  if (!e.fn)
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", kernel_name,
         "': the CPU compiler (libtcc) rejected the kernel code:\n", e.error);
  return e.fn;
}

long long compile_count() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.compiles;
}

#else  // no libtcc in this build

bool available() { return false; }
KernelFn compile(const std::string&, const std::string& kernel_name) {
  fail(CH_ERR_UNSUPPORTED, "kernel '", kernel_name,
       "': this build of chainerc has no CPU kernel compiler (libtcc was not found at build "
       "time; install libtcc-dev and rebuild)");
}
long long compile_count() { return 0; }

#endif

}  // namespace chainerc::kernels::cpu_jit
