// CUDA kernels of the pointwise activations (relu, leaky_relu, sigmoid, tanh):
// the functors of kernels/pointwise/activation.h over the element-wise CUDA
// kernels.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/activation.h"
#include "kernels/pointwise/activation.h"

namespace chainerc::cuda {

void register_activation_kernels() {
  using namespace pointwise;
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::relu.set(gpu, unary_kernel<Relu>);
  kernels::relu_grad.set(gpu, binary_kernel<ReluGrad>);
  kernels::leaky_relu.set(gpu, unary_scalar_kernel<LeakyRelu>);
  kernels::leaky_relu_grad.set(gpu, binary_scalar_kernel<LeakyReluGrad>);
  kernels::sigmoid.set(gpu, unary_kernel<Sigmoid>);
  kernels::sigmoid_grad.set(gpu, binary_kernel<SigmoidGrad>);
  kernels::tanh.set(gpu, unary_kernel<Tanh>);
  kernels::tanh_grad.set(gpu, binary_kernel<TanhGrad>);
}

}  // namespace chainerc::cuda
