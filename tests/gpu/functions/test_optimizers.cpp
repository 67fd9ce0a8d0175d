// CPU / emulated-GPU agreement of the optimizers: every built-in update rule
// (SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop) over a few steps on
// parameters of sizes that are not multiples of a block, float32 and
// float64, with the gradient utilities on the device (zero_grads,
// accumulate_grads, weight_decay, clip_grads, the gradients' norm); and
// sum_of_squares against its closed form.
#include <cmath>
#include <functional>

#include "agreement.h"
#include "core/gradient_check.h"
#include "kernels/optimizers.h"
#include "train/optimizers/optimizers.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

struct NamedFactory {
  const char* name;
  std::function<OptimizerPtr()> make;
};
const NamedFactory kOptimizers[] = {
    {"SGD", [] { return make_sgd(0.1, "test"); }},
    {"MomentumSGD", [] { return make_momentum_sgd(0.05, 0.9, "test"); }},
    {"AdaGrad", [] { return make_adagrad(0.01, 1e-8, "test"); }},
    {"AdaDelta", [] { return make_adadelta(0.95, 1e-6, "test"); }},
    {"Adam", [] { return make_adam(0.001, 0.9, 0.999, 1 - 1e-8, 1e-8, "test"); }},
    {"RMSprop", [] { return make_rmsprop(0.01, 0.99, 1e-8, "test"); }},
};

std::vector<NamedParameter> parameters_on(const Arrays& values, Device device) {
  std::vector<NamedParameter> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back(NamedParameter{"p" + std::to_string(i), values[i].to_device(device),
                                 Array::zeros_like(values[i].to_device(device))});
  return out;
}

void expect_close(const Array& on_gpu, const Array& on_cpu, double tol, const std::string& what) {
  ASSERT_EQ(on_gpu.device(), gpu()) << what;
  std::string message;
  EXPECT_TRUE(allclose(on_gpu.to_device(cpu()), on_cpu, tol, tol, nullptr, &message))
      << what << " on cuda:0 differs from the CPU's: " << message;
}

TEST_F(GpuFunctions, EveryOptimizerUpdatesOnTheDeviceAsOnTheCpu) {
  for (const NamedFactory& f : kOptimizers)
    for (DType dt : kDtypes) {
      SCOPED_TRACE(std::string(f.name) + " " + dtype_name(dt));
      // The large parameter in float32 only (the emulator's time).
      std::vector<Shape> shapes = {{1}, {31}, {5, 205}};
      if (dt == DType::Float32) shapes.push_back({100003});
      Arrays values;
      for (size_t i = 0; i < shapes.size(); ++i)
        values.push_back(uniform(dt, shapes[i], -1, 1, static_cast<uint32_t>(i)));
      OptimizerPtr oc = f.make(), og = f.make();
      oc->setup(parameters_on(values, cpu()), "test");
      og->setup(parameters_on(values, gpu()), "test");
      for (const OptSlot& s : og->slots)
        for (const Array& st : s.state) ASSERT_EQ(st.device(), gpu()) << s.path;
      const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
      for (int step = 0; step < 3; ++step) {
        Arrays grads, grads_on_gpu;
        for (size_t i = 0; i < shapes.size(); ++i) {
          grads.push_back(uniform(dt, shapes[i], -1, 1, static_cast<uint32_t>(100 * step + i)));
          grads_on_gpu.push_back(grads.back().to_device(gpu()));
        }
        for (Optimizer* o : {oc.get(), og.get()}) {
          o->zero_grads();
          o->accumulate_grads(o == oc.get() ? grads : grads_on_gpu, "test");
          if (step >= 1) o->weight_decay(1e-2, "test");
          // Step 2 clips (the norm is about 10 without the large parameter,
          // 180 with it), steps 0 and 1 do not.
          o->clip_grads(step >= 2 ? 5.0 : 1e6, "test");
        }
        const double nc = oc->grads_norm(), ng = og->grads_norm();
        EXPECT_NEAR(ng, nc, 1e-12 * nc) << "step " << step;
        if (step >= 2) {
          EXPECT_NEAR(ng, 5.0, 1e-5);
        }
        oc->update("test");
        og->update("test");
        for (size_t i = 0; i < shapes.size(); ++i) {
          const std::string at = og->slots[i].path + " after step " + std::to_string(step);
          expect_close(og->slots[i].grad, oc->slots[i].grad, tol, "the gradient of " + at);
          expect_close(og->slots[i].param, oc->slots[i].param, tol, at);
          for (size_t k = 0; k < og->slots[i].state.size(); ++k)
            expect_close(og->slots[i].state[k], oc->slots[i].state[k], tol, og->slots[i].keys[k]);
        }
      }
      og->zero_grads();
      for (const OptSlot& s : og->slots)
        EXPECT_EQ(kernels::sum_of_squares(s.grad), 0.0) << s.path << " after zero_grads";
    }
}

// sum_of_squares of 0, 1, ..., n - 1 is n (n - 1) (2 n - 1) / 6, exact in
// double for these n; the device adds the squares in double.
TEST_F(GpuFunctions, SumOfSquaresOnTheDeviceIsExactForIntegers) {
  for (DType dt : kDtypes)
    for (int64_t n : pointwise_sizes()) {
      Array x = Array::empty(dt, {n});
      for (int64_t i = 0; i < n; ++i) {
        if (dt == DType::Float32)
          x.data<float>()[i] = static_cast<float>(i);
        else
          x.data<double>()[i] = static_cast<double>(i);
      }
      const double expected = static_cast<double>(n) * (n - 1) * (2 * n - 1) / 6;
      EXPECT_EQ(kernels::sum_of_squares(x.to_device(gpu())), expected)
          << dtype_name(dt) << " n=" << n;
    }
}

}  // namespace
}  // namespace gputest
