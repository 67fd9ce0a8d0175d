// CUDA kernels of the arithmetic functions: the pointwise functors of
// kernels/pointwise/arithmetic.h (the CPU backend's very math) over the
// element-wise CUDA kernels of cuda/ops/elementwise.cuh.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/math.h"
#include "kernels/pointwise/arithmetic.h"

namespace chainerc::cuda {

void register_arithmetic_kernels() {
  using namespace pointwise;
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::add.set(gpu, broadcast_kernel<Add>);
  kernels::sub.set(gpu, broadcast_kernel<Sub>);
  kernels::mul.set(gpu, broadcast_kernel<Mul>);
  kernels::div.set(gpu, broadcast_kernel<Div>);
  kernels::div_grad_b.set(gpu, broadcast_kernel<DivGradB>);
  kernels::neg.set(gpu, unary_kernel<Neg>);
  kernels::exp.set(gpu, unary_kernel<Exp>);
  kernels::log.set(gpu, unary_kernel<Log>);
  kernels::exp_grad.set(gpu, binary_kernel<ExpGrad>);
  kernels::log_grad.set(gpu, binary_kernel<LogGrad>);
  kernels::add_scalar.set(gpu, unary_scalar_kernel<AddScalar>);
  kernels::sub_scalar.set(gpu, unary_scalar_kernel<SubScalar>);
  kernels::rsub_scalar.set(gpu, unary_scalar_kernel<RSubScalar>);
  kernels::mul_scalar.set(gpu, unary_scalar_kernel<MulScalar>);
  kernels::div_scalar.set(gpu, unary_scalar_kernel<DivScalar>);
  kernels::rdiv_scalar.set(gpu, unary_scalar_kernel<RDivScalar>);
  kernels::pow_scalar.set(gpu, unary_scalar_kernel<PowScalar>);
  kernels::rpow_scalar.set(gpu, unary_scalar_kernel<RPowScalar>);
  kernels::rdiv_scalar_grad.set(gpu, binary_scalar_kernel<RDivScalarGrad>);
  kernels::pow_scalar_grad.set(gpu, binary_scalar_kernel<PowScalarGrad>);
  kernels::rpow_scalar_grad.set(gpu, binary_scalar_kernel<RPowScalarGrad>);
}

}  // namespace chainerc::cuda
