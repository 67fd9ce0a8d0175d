#include "codegen.h"

#include <sstream>

namespace chainerc::kernels {
namespace {

// Definitions both targets share, and the libm prototypes the C target needs
// (the CPU compiler sees no system header; cpu_jit.cpp binds these names).
//
// One contract for both devices (docs/custom-functions.md): the math
// functions of C99 (float versions with the f suffix, as in CUDA); abs() of
// the argument's own type (float stays float); min(a, b) and max(a, b) of two
// values of the same type (max(x, 0) with a float x is refused on both: write
// max(x, (T)0)); isnan() and isinf() of floating-point values only. The C
// target checks types with C11 _Generic, the CUDA target with templates, so a
// kernel that compiles on one device compiles on the other.
const char* kCommonPrelude = R"(#ifndef INFINITY
#define INFINITY (__builtin_inff())
#endif
#ifndef NAN
#define NAN (__builtin_nanf(""))
#endif
)";

const char* kCPrelude = R"(#define CH_RESTRICT restrict
#define CH_DEVICE_FN static
#define __builtin_inff() (1e300f * 1e300f)
#define __builtin_nanf(s) (INFINITY - INFINITY)
#define CH_SAME_TYPE_(a, b) _Generic((a), \
  float: _Generic((b), float: 1), double: _Generic((b), double: 1), \
  int: _Generic((b), int: 1), unsigned int: _Generic((b), unsigned int: 1), \
  long: _Generic((b), long: 1), long long: _Generic((b), long long: 1), \
  unsigned long long: _Generic((b), unsigned long long: 1))
#define max(a, b) ((void)sizeof(CH_SAME_TYPE_(a, b)), ((a) > (b) ? (a) : (b)))
#define min(a, b) ((void)sizeof(CH_SAME_TYPE_(a, b)), ((a) < (b) ? (a) : (b)))
double exp(double); double log(double); double log10(double); double log1p(double);
double expm1(double); double exp2(double); double log2(double);
double sqrt(double); double cbrt(double); double pow(double, double); double fabs(double);
double sin(double); double cos(double); double tan(double); double asin(double);
double acos(double); double atan(double); double atan2(double, double);
double sinh(double); double cosh(double); double tanh(double);
double floor(double); double ceil(double); double round(double); double trunc(double);
double fmod(double, double); double fmax(double, double); double fmin(double, double);
double erf(double); double erfc(double); double hypot(double, double); double copysign(double, double);
float expf(float); float logf(float); float log10f(float); float log1pf(float);
float expm1f(float); float exp2f(float); float log2f(float);
float sqrtf(float); float cbrtf(float); float powf(float, float); float fabsf(float);
float sinf(float); float cosf(float); float tanf(float); float asinf(float);
float acosf(float); float atanf(float); float atan2f(float, float);
float sinhf(float); float coshf(float); float tanhf(float);
float floorf(float); float ceilf(float); float roundf(float); float truncf(float);
float fmodf(float, float); float fmaxf(float, float); float fminf(float, float);
float erff(float); float erfcf(float); float hypotf(float, float); float copysignf(float, float);
int abs(int); long long llabs(long long);
#define abs(x) _Generic((x), float: fabsf, double: fabs, long: llabs, long long: llabs, \
  default: abs)(x)
int isnan_d(double); int isinf_d(double);
#define isnan(x) _Generic((x), float: isnan_d, double: isnan_d)((double)(x))
#define isinf(x) _Generic((x), float: isinf_d, double: isinf_d)((double)(x))
)";

const char* kCudaPrelude = R"(#define CH_RESTRICT __restrict__
#define CH_DEVICE_FN static __device__ __forceinline__
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define CH_GRID_CONSTANT __grid_constant__
#else
#define CH_GRID_CONSTANT
#endif
#define __builtin_inff() __int_as_float(0x7f800000)
#define __builtin_nanf(s) __int_as_float(0x7fffffff)
template <typename T> CH_DEVICE_FN T ch_max_(T a, T b) { return a > b ? a : b; }
template <typename T> CH_DEVICE_FN T ch_min_(T a, T b) { return a < b ? a : b; }
#define max(a, b) ch_max_((a), (b))
#define min(a, b) ch_min_((a), (b))
)";

const char* kOffsetFn =
    R"(CH_DEVICE_FN long long ch_offset_(long long i, int nd, const long long* shape, const long long* st) {
  long long off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    long long q = i / shape[d];
    off += (i - q * shape[d]) * st[d];
    i = q;
  }
  return off;
}
)";

std::string type_of(const Param& p, const TypeMap& types) {
  return c_type(p.placeholder ? types.at(p.type) : p.dtype);
}

void typedefs(std::ostringstream& s, const TypeMap& types) {
  for (const auto& [letter, dt] : types) s << "typedef " << c_type(dt) << " " << letter << ";\n";
}

void prelude(std::ostringstream& s, Target t, const TypeMap& types, int n_params) {
  s << (t == Target::C ? kCPrelude : kCudaPrelude) << kCommonPrelude;
  typedefs(s, types);
  s << kOffsetFn;
  if (t == Target::Cuda)
    s << "struct ch_args { void* p[" << (n_params > 0 ? n_params : 1) << "]; long long info["
      << kMaxInfo(n_params) << "]; };\n";
}

// Entry of the function: `_ptrs` and `_info` in scope.
void entry(std::ostringstream& s, Target t, const std::string& name, const char* range) {
  if (t == Target::C) {
    s << "void ch_kernel(long long _begin, long long _end, void* const* _ptrs, const long long* "
         "_info) {\n";
  } else {
    s << "extern \"C\" __global__ void " << name << "(const long long " << range
      << ", const CH_GRID_CONSTANT ch_args _a) {\n  void* const* _ptrs = _a.p;\n  const long long* "
         "_info = "
         "_a.info;\n";
  }
}

}  // namespace

std::string elementwise_source(const ElementwiseKernel& k, const TypeMap& types,
                               const std::string& modes, Target t) {
  const auto& in = k.in();
  const auto& out = k.out();
  const int n = static_cast<int>(in.size() + out.size());
  std::ostringstream s;
  s << "// chainerc elementwise kernel '" << k.name() << "' modes " << modes << "\n";
  prelude(s, t, types, n);
  entry(s, t, k.name(), "_n");
  s << "  const int _nd = (int)_info[0];\n  const long long* _shape = _info + 1;\n";
  s << "  (void)_nd; (void)_shape;\n";
  int g = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    const std::string ty = type_of(in[j], types);
    s << "  const " << ty << "* CH_RESTRICT _p_" << in[j].name << " = (const " << ty << "*)_ptrs["
      << j << "];\n";
    if (modes[j] == 'G')
      s << "  const long long* _st_" << in[j].name << " = _info + 1 + _nd * " << (1 + g++) << ";\n";
  }
  for (size_t j = 0; j < out.size(); ++j) {
    const std::string ty = type_of(out[j], types);
    s << "  " << ty << "* CH_RESTRICT _p_" << out[j].name << " = (" << ty << "*)_ptrs["
      << in.size() + j << "];\n";
  }
  if (t == Target::C)
    s << "  for (long long i = _begin; i < _end; ++i) {\n";
  else
    s << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < _n;\n"
         "       i += (long long)blockDim.x * gridDim.x) {\n";
  for (size_t j = 0; j < in.size(); ++j) {
    const Param& p = in[j];
    const std::string ty = type_of(p, types);
    switch (modes[j]) {
      case 'C':
        s << "    const " << ty << " " << p.name << " = _p_" << p.name << "[i];\n";
        break;
      case 'S':
        s << "    const " << ty << " " << p.name << " = _p_" << p.name << "[0];\n";
        break;
      case 'G':
        s << "    const " << ty << " " << p.name << " = _p_" << p.name
          << "[ch_offset_(i, _nd, _shape, _st_" << p.name << ")];\n";
        break;
      default:  // 'R'
        s << "    const " << ty << "* const " << p.name << " = _p_" << p.name << ";\n";
        break;
    }
    s << "    (void)" << p.name << ";\n";
  }
  for (const Param& p : out) s << "#define " << p.name << " (_p_" << p.name << "[i])\n";
  s << "    {\n#line 1 \"" << k.name() << "\"\n" << k.operation() << "\n;}\n";
  for (const Param& p : out) s << "#undef " << p.name << "\n";
  s << "  }\n}\n";
  return s.str();
}

std::string reduction_source(const ReductionKernel& k, const TypeMap& types, DType reduce_type,
                             const std::string& modes, Target t) {
  const auto& in = k.in();
  const auto& out = k.out();
  const int n = static_cast<int>(in.size() + out.size());
  std::ostringstream s;
  s << "// chainerc reduction kernel '" << k.name() << "' modes " << modes << "\n";
  prelude(s, t, types, n);
  s << "typedef " << c_type(reduce_type) << " _type_reduce;\n";
  s << "#define CH_COMBINE_(acc, has, val) do { _type_reduce _v = (val); if (!(has)) { (acc) = _v; "
       "(has) = 1; } else { const _type_reduce a = (acc), b = _v; (acc) = (_type_reduce)("
    << k.reduce_expr() << "); } } while (0)\n";
  entry(s, t, k.name(), "_out_n");
  s << "  const int _nk = (int)_info[0];\n  const long long* _kshape = _info + 1;\n"
       "  const int _nr = (int)_info[1 + _nk];\n  const long long* _rshape = _info + 2 + _nk;\n"
       "  const long long _reduce_size = _info[2 + _nk + _nr];\n"
       "  const long long* _strides = _info + 3 + _nk + _nr;\n"
       "  (void)_kshape; (void)_rshape;\n";
  int g = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    const Param& p = in[j];
    const std::string ty = type_of(p, types);
    s << "  const " << ty << "* CH_RESTRICT _p_" << p.name << " = (const " << ty << "*)_ptrs[" << j
      << "];\n";
    if (modes[j] != 'R') {
      s << "  const long long* _kst_" << p.name << " = _strides + (_nk + _nr) * " << g << ";\n"
        << "  const long long* _rst_" << p.name << " = _kst_" << p.name << " + _nk;\n"
        << "  const long long _rs_" << p.name << " = _nr > 0 ? _rst_" << p.name
        << "[_nr - 1] : 0;\n"
        << "  (void)_rs_" << p.name << "; (void)_rst_" << p.name << ";\n";
      ++g;
    }
  }
  for (size_t j = 0; j < out.size(); ++j) {
    const std::string ty = type_of(out[j], types);
    s << "  " << ty << "* CH_RESTRICT _p_" << out[j].name << " = (" << ty << "*)_ptrs["
      << in.size() + j << "];\n";
  }
  const bool has_identity = !k.identity().empty();
  if (t == Target::C) {
    s << "  for (long long _j = _begin; _j < _end; ++_j) {\n";
  } else {
    s << "  __shared__ _type_reduce _sh[" << kReduceBlock << "];\n  __shared__ int _shh["
      << kReduceBlock << "];\n  const int _tid = threadIdx.x;\n"
      << "  for (long long _j = blockIdx.x; _j < _out_n; _j += gridDim.x) {\n";
  }
  for (size_t j = 0; j < in.size(); ++j)
    if (modes[j] != 'R')
      s << "    const long long _b_" << in[j].name << " = ch_offset_(_j, _nk, _kshape, _kst_"
        << in[j].name << ");\n";
  s << "    _type_reduce _acc;\n    int _has = 0;\n";
  if (has_identity)
    s << "    _acc = (_type_reduce)(" << k.identity() << ");\n    _has = 1;\n";
  else
    s << "    _acc = (_type_reduce)0;\n";
  if (t == Target::C)
    s << "    for (long long _k = 0; _k < _reduce_size; ++_k) {\n";
  else
    s << "    for (long long _k = _tid; _k < _reduce_size; _k += blockDim.x) {\n";
  for (size_t j = 0; j < in.size(); ++j) {
    const Param& p = in[j];
    const std::string ty = type_of(p, types);
    if (modes[j] == 'R')
      s << "      const " << ty << "* const " << p.name << " = _p_" << p.name << ";\n";
    else if (modes[j] == 'L')
      s << "      const " << ty << " " << p.name << " = _p_" << p.name << "[_b_" << p.name
        << " + _k * _rs_" << p.name << "];\n";
    else
      s << "      const " << ty << " " << p.name << " = _p_" << p.name << "[_b_" << p.name
        << " + ch_offset_(_k, _nr, _rshape, _rst_" << p.name << ")];\n";
    s << "      (void)" << p.name << ";\n";
  }
  s << "      CH_COMBINE_(_acc, _has, (\n#line 1 \"" << k.name() << ":map_expr\"\n"
    << k.map_expr() << "\n));\n    }\n";
  if (t == Target::Cuda) {
    s << "    _sh[_tid] = _acc;\n    _shh[_tid] = _has;\n    __syncthreads();\n"
         "    for (int _s = blockDim.x / 2; _s > 0; _s >>= 1) {\n"
         "      if (_tid < _s && _shh[_tid + _s]) {\n"
         "        _type_reduce _x = _sh[_tid];\n        int _xh = _shh[_tid];\n"
         "        CH_COMBINE_(_x, _xh, _sh[_tid + _s]);\n"
         "        _sh[_tid] = _x;\n        _shh[_tid] = _xh;\n      }\n      __syncthreads();\n    "
         "}\n"
         "    if (_tid == 0) {\n      _acc = _sh[0];\n";
  } else {
    s << "    {\n";
  }
  s << "      const _type_reduce a = _acc;\n      (void)a;\n";
  for (const Param& p : out) s << "#define " << p.name << " (_p_" << p.name << "[_j])\n";
  s << "      {\n#line 1 \"" << k.name() << ":post_map_expr\"\n" << k.post_map_expr() << "\n;}\n";
  for (const Param& p : out) s << "#undef " << p.name << "\n";
  s << "    }\n";
  if (t == Target::Cuda) s << "    __syncthreads();\n";
  s << "  }\n}\n";
  return s.str();
}

}  // namespace chainerc::kernels
