// The device allocator's steady state over many forward/backward passes: after
// warm-up, a training-like step (matmuls, broadcasting adds, activations,
// sums, backward with gradient accumulation) is served wholly from the cache.
#include <ch/ch.h>

#include "agreement.h"
#include "core/device_backend.h"

namespace gputest {
namespace {

using namespace chainerc;

ch_memory_stats stats() { return cuda_backend()->memory_stats(0); }

// One step of a two-layer perceptron written with the math functions.
void step(const Array& x, const Array& w1, const Array& b1, const Array& w2) {
  auto var = [](const Array& a) { return std::make_shared<VariableImpl>(a); };
  VarPtr vx = var(x), v1 = var(w1), vb = var(b1), v2 = var(w2);
  VarPtr h = ops::tanh(ops::add(ops::matmul(vx, v1, false, false), vb));
  VarPtr y = ops::sigmoid(ops::matmul(h, v2, false, false));
  VarPtr loss = ops::sum(ops::mul(y, y));
  backward(loss, false);
}

TEST_F(GpuFunctions, AllocatorSteadyStateOverTrainingSteps) {
  const Array x = uniform(DType::Float32, {37, 50}, -1, 1, 1).to_device(gpu());
  const Array w1 = uniform(DType::Float32, {50, 31}, -1, 1, 2).to_device(gpu());
  const Array b1 = uniform(DType::Float32, {31}, -1, 1, 3).to_device(gpu());
  const Array w2 = uniform(DType::Float32, {31, 10}, -1, 1, 4).to_device(gpu());
  cuda_backend()->empty_cache(0);
  for (int i = 0; i < 3; ++i) step(x, w1, b1, w2);
  const ch_memory_stats warm = stats();
  for (int i = 0; i < 50; ++i) step(x, w1, b1, w2);
  const ch_memory_stats after = stats();
  EXPECT_EQ(after.cache_misses, warm.cache_misses) << "cudaMalloc after warm-up";
  EXPECT_GT(after.allocations - warm.allocations, 50 * 10) << "the steps allocated on the device";
  // (The first GEMM gave cuBLAS its workspace from the pool: in use since.)
  EXPECT_EQ(after.bytes_in_use, warm.bytes_in_use) << "a step leaked device memory";
}

}  // namespace
}  // namespace gputest
