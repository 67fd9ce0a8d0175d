// Fuzz target: the user-kernel parameter parser and code generators.
// The input is split at '\n' into up to 8 fields: in_params, out_params,
// operation/map_expr, reduce_expr, post_map_expr, identity, name,
// reduce_type. It builds an elementwise and a reduction kernel through the C
// API (ch_elementwise_kernel_new, ch_reduction_kernel_new) and, when they
// parse, generates their C and CUDA sources for every access mode with every
// placeholder resolved to float32. The generated code is not compiled:
// libtcc compiling arbitrary bodies would fuzz libtcc, not chainerc, and
// costs ~1 ms per input.
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "user_kernels/codegen.h"

namespace {

using chainerc::kernels::ElementwiseKernel;
using chainerc::kernels::Param;
using chainerc::kernels::ReductionKernel;
using chainerc::kernels::Target;
using chainerc::kernels::TypeMap;

TypeMap all_float32(const std::vector<Param>& in, const std::vector<Param>& out) {
  TypeMap types;
  for (const auto* ps : {&in, &out})
    for (const Param& p : *ps)
      if (p.placeholder) types[p.type] = chainerc::DType::Float32;
  return types;
}

// One access mode per parameter: inputs take `mode` (raw ones 'R'), outputs 'C'.
std::string modes_for(const std::vector<Param>& in, const std::vector<Param>& out, char mode) {
  std::string m;
  for (const Param& p : in) m += p.raw ? 'R' : mode;
  for (const Param& p : out) m += p.raw ? 'R' : 'C';
  return m;
}

}  // namespace

int ch_fuzz_user_kernel(const uint8_t* data, size_t size) {
  std::vector<std::string> f(8);
  size_t k = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n' && k + 1 < f.size())
      ++k;
    else if (data[i] != '\0')  // C strings: NUL would end them early
      f[k] += static_cast<char>(data[i]);
  }
  ch_elementwise_kernel* ek = nullptr;
  ch_status st =
      ch_elementwise_kernel_new(&ek, f[0].c_str(), f[1].c_str(), f[2].c_str(), f[6].c_str());
  CH_FUZZ_CHECK(st);
  if (st == CH_OK) {
    if (ch_elementwise_kernel_input_count(ek) + ch_elementwise_kernel_output_count(ek) == 0)
      std::abort();
    ch_elementwise_kernel_release(ek);
  }
  ch_reduction_kernel* rk = nullptr;
  st = ch_reduction_kernel_new(&rk, f[0].c_str(), f[1].c_str(), f[2].c_str(), f[3].c_str(),
                               f[4].c_str(), f[5].c_str(), f[6].c_str(), f[7].c_str());
  CH_FUZZ_CHECK(st);
  if (st == CH_OK) ch_reduction_kernel_release(rk);

  // The same strings through the internal classes, then the code generators.
  try {
    ElementwiseKernel e(f[0], f[1], f[2], f[6]);
    TypeMap types = all_float32(e.in(), e.out());
    for (char mode : {'C', 'S', 'G'})
      for (Target t : {Target::C, Target::Cuda})
        (void)chainerc::kernels::elementwise_source(e, types, modes_for(e.in(), e.out(), mode), t);
  } catch (const chainerc::Error&) {
  }
  try {
    ReductionKernel r(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
    TypeMap types = all_float32(r.in(), r.out());
    for (char mode : {'L', 'G'})
      for (Target t : {Target::C, Target::Cuda})
        (void)chainerc::kernels::reduction_source(r, types, chainerc::DType::Float32,
                                                  modes_for(r.in(), r.out(), mode), t);
  } catch (const chainerc::Error&) {
  }
  return 0;
}

CH_FUZZ_ENTRY(ch_fuzz_user_kernel)
