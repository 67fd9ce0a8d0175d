// CPU kernels of the arithmetic functions: the pointwise functors of
// kernels/pointwise/arithmetic.h over the CPU loops, except exp and log,
// which go through glibc's vector math library (the functors stay their
// reference in the tests).
#include "kernels/pointwise/arithmetic.h"

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "backend/cpu/vector_math.h"
#include "kernels/math.h"

namespace chainerc::cpu {
namespace {

void exp_kernel(const Array& x, Array& y) {
  vector_map(x, y, [](const auto* px, auto* py, int64_t n) { vector_exp(px, py, n); });
}
void log_kernel(const Array& x, Array& y) {
  vector_map(x, y, [](const auto* px, auto* py, int64_t n) { vector_log(px, py, n); });
}

}  // namespace

void register_arithmetic_kernels() {
  using namespace pointwise;
  constexpr int32_t cpu = CH_DEVICE_CPU;
  kernels::add.set(cpu, broadcast_kernel<Add>);
  kernels::sub.set(cpu, broadcast_kernel<Sub>);
  kernels::mul.set(cpu, broadcast_kernel<Mul>);
  kernels::div.set(cpu, broadcast_kernel<Div>);
  kernels::div_grad_b.set(cpu, broadcast_kernel<DivGradB>);
  kernels::neg.set(cpu, unary_kernel<Neg>);
  kernels::exp.set(cpu, exp_kernel);
  kernels::log.set(cpu, log_kernel);
  kernels::exp_grad.set(cpu, binary_kernel<ExpGrad>);
  kernels::log_grad.set(cpu, binary_kernel<LogGrad>);
  kernels::add_scalar.set(cpu, unary_scalar_kernel<AddScalar>);
  kernels::sub_scalar.set(cpu, unary_scalar_kernel<SubScalar>);
  kernels::rsub_scalar.set(cpu, unary_scalar_kernel<RSubScalar>);
  kernels::mul_scalar.set(cpu, unary_scalar_kernel<MulScalar>);
  kernels::div_scalar.set(cpu, unary_scalar_kernel<DivScalar>);
  kernels::rdiv_scalar.set(cpu, unary_scalar_kernel<RDivScalar>);
  kernels::pow_scalar.set(cpu, unary_scalar_kernel<PowScalar>);
  kernels::rpow_scalar.set(cpu, unary_scalar_kernel<RPowScalar>);
  kernels::rdiv_scalar_grad.set(cpu, binary_scalar_kernel<RDivScalarGrad>);
  kernels::pow_scalar_grad.set(cpu, binary_scalar_kernel<PowScalarGrad>);
  kernels::rpow_scalar_grad.set(cpu, binary_scalar_kernel<RPowScalarGrad>);
}

}  // namespace chainerc::cpu
