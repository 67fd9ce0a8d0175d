// CPU / emulated-GPU agreement of the optimizers: every built-in update rule
// (SGD, MomentumSGD, AdaGrad, AdaDelta, Adam with Chainer 7's AdamW and
// AMSGrad, RMSprop, NesterovAG) over a few steps on
// parameters of sizes that are not multiples of a block, float32 and
// float64, with the gradient utilities on the device (zero_grads,
// accumulate_grads, weight_decay, clip_grads, the gradients' norm); and
// sum_of_squares against its closed form.
#include <ch/ch.h>

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
    {"NesterovAG", [] { return make_nesterov_ag(0.05, 0.9, "test"); }},
    {"Adam (AdamW)",
     [] {
       AdamConfig c;
       c.weight_decay_rate = 0.01;
       c.eta = 0.5;
       return make_adam(c, "test");
     }},
    {"Adam (amsgrad)",
     [] {
       AdamConfig c;
       c.amsgrad = true;
       c.beta2 = 0.5;
       c.weight_decay_rate = 0.01;
       return make_adam(c, "test");
     }},
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
      // Few parameters and steps: the emulator's time goes by launches. The
      // large parameter in float32 only.
      const std::vector<Shape> shapes = dt == DType::Float32 ? std::vector<Shape>{{31}, {100003}}
                                                             : std::vector<Shape>{{1}, {5, 205}};
      Arrays values;
      for (size_t i = 0; i < shapes.size(); ++i)
        values.push_back(uniform(dt, shapes[i], -1, 1, static_cast<uint32_t>(i)));
      OptimizerPtr oc = f.make(), og = f.make();
      oc->setup(parameters_on(values, cpu()), "test");
      og->setup(parameters_on(values, gpu()), "test");
      for (const OptSlot& s : og->slots)
        for (const Array& st : s.state) ASSERT_EQ(st.device(), gpu()) << s.path;
      const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
      for (int step = 0; step < 2; ++step) {
        Arrays grads, grads_on_gpu;
        for (size_t i = 0; i < shapes.size(); ++i) {
          grads.push_back(uniform(dt, shapes[i], -1, 1, static_cast<uint32_t>(100 * step + i)));
          grads_on_gpu.push_back(grads.back().to_device(gpu()));
        }
        for (Optimizer* o : {oc.get(), og.get()}) {
          o->zero_grads();
          o->accumulate_grads(o == oc.get() ? grads : grads_on_gpu, "test");
          // Step 1 decays and clips (the norm is about 18 in float64, 180 in
          // float32), step 0 does neither.
          if (step == 1) o->weight_decay(1e-2, "test");
          o->clip_grads(step == 1 ? 5.0 : 1e6, "test");
        }
        // The norms agree to the dtype's precision: on a real GPU (an H100)
        // the clipped float32 gradients differ from the CPU's in their last
        // bits, and their norms by 4e-12 to 5e-11 relative.
        const double nc = oc->grads_norm("test"), ng = og->grads_norm("test");
        EXPECT_NEAR(ng, nc, (dt == DType::Float32 ? 1e-7 : 1e-12) * nc) << "step " << step;
        if (step == 1) {
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

// Through the C API: ch_function_set_to_gpu moves the parameters and their
// gradients to cuda:0, an optimizer set up there updates them there
// (weight decay and SGD: gamma = 1 - lr * decay * 1), and
// ch_function_set_to_cpu brings the values back.
TEST_F(GpuFunctions, SetMovedToTheDeviceIsUpdatedThere) {
  const int64_t size[] = {3};
  ch_function* bn = nullptr;
  ch_function_set* set = nullptr;
  ch_optimizer* sgd = nullptr;
  ASSERT_EQ(ch_functions_batch_normalization_new(&bn, size, 1, 0.9, 2e-5, CH_FLOAT64), CH_OK);
  ASSERT_EQ(ch_function_set_new(&set), CH_OK);
  ASSERT_EQ(ch_function_set_add_function(set, "bn", bn), CH_OK);
  ASSERT_EQ(ch_function_set_to_gpu(set, ch_device_cuda(0)), CH_OK) << ch_error_message();
  auto parameter = [&](size_t i, double* values) {
    ch_array *p = nullptr, *g = nullptr;
    EXPECT_EQ(ch_function_set_parameter(&p, &g, nullptr, set, i), CH_OK);
    const ch_device dp = ch_array_device(p), dg = ch_array_device(g);
    EXPECT_EQ(ch_array_read(p, values, 3 * sizeof(double)), CH_OK) << ch_error_message();
    ch_array_release(p);
    ch_array_release(g);
    EXPECT_EQ(dp.type, dg.type);
    return dp;
  };
  double gamma[3], beta[3];
  EXPECT_EQ(parameter(0, gamma).type, CH_DEVICE_CUDA);
  EXPECT_EQ(parameter(1, beta).type, CH_DEVICE_CUDA);
  ASSERT_EQ(ch_optimizer_sgd_new(&sgd, 0.5), CH_OK);
  ASSERT_EQ(ch_optimizer_setup(sgd, set), CH_OK) << ch_error_message();
  EXPECT_EQ(ch_optimizer_zero_grads(sgd), CH_OK);
  EXPECT_EQ(ch_optimizer_weight_decay(sgd, 0.1), CH_OK);
  EXPECT_EQ(ch_optimizer_update(sgd), CH_OK) << ch_error_message();
  ASSERT_EQ(ch_function_set_to_cpu(set), CH_OK) << ch_error_message();
  const ch_device d0 = parameter(0, gamma), d1 = parameter(1, beta);
  EXPECT_EQ(d0.type, CH_DEVICE_CPU);
  EXPECT_EQ(d1.type, CH_DEVICE_CPU);
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(gamma[i], 0.95);
    EXPECT_EQ(beta[i], 0.0);
  }
  ch_optimizer_release(sgd);
  ch_function_set_release(set);
  ch_function_release(bn);
}

}  // namespace
}  // namespace gputest
