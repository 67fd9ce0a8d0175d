#include "agreement.h"

#include <ch/ch.h>

#include <random>

#include "../require_gpu.h"
#include "core/error.h"
#include "core/gradient_check.h"

namespace gputest {

using chainerc::VariableImpl;

namespace {

void fill(const Array& a, const std::function<double()>& next) {
  for (int64_t i = 0; i < a.size(); ++i) {
    if (a.dtype() == DType::Float32)
      a.data<float>()[i] = static_cast<float>(next());
    else
      a.data<double>()[i] = next();
  }
}

// acc += h on the CPU (acc undefined: a copy of h).
void add_to(Array& acc, const Array& h) {
  if (!acc.defined()) {
    acc = h.copy();
    return;
  }
  for (int64_t k = 0; k < h.size(); ++k) {
    if (h.dtype() == DType::Float32)
      acc.data<float>()[k] += h.data<float>()[k];
    else
      acc.data<double>()[k] += h.data<double>()[k];
  }
}

bool is_float(const Array& a) { return a.dtype() == DType::Float32 || a.dtype() == DType::Float64; }

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_of(const Case& c) {
  bool single = false;
  for (const Array& x : c.inputs) single = single || x.dtype() == DType::Float32;
  Tolerance t = single ? Tolerance{1e-4, 1e-5} : Tolerance{1e-9, 1e-11};
  if (c.rtol >= 0) t.rtol = c.rtol;
  if (c.atol >= 0) t.atol = c.atol;
  return t;
}

// What one run produced, all copied to the CPU.
struct Run {
  Device device;
  Arrays outputs, input_grads, param_grads;
};

// Upstream gradients for the outputs: random, the same for every run.
Arrays upstream(const std::vector<VarPtr>& ys) {
  Arrays gys;
  uint32_t seed = 1000;
  for (const VarPtr& y : ys)
    gys.push_back(is_float(y->data) ? uniform(y->data.dtype(), y->data.shape(), -1, 1, seed++)
                                    : Array());
  return gys;
}

Run run_on(const Case& c, Device device) {
  Run r;
  r.device = device;
  std::vector<VarPtr> xs;
  for (const Array& x : c.inputs) xs.push_back(std::make_shared<VariableImpl>(x.to_device(device)));
  FuncPtr fn = c.function ? with_parameters_on(c.function, device) : nullptr;
  std::vector<VarPtr> ys = c.build(xs, fn);
  for (const VarPtr& y : ys) {
    EXPECT_EQ(y->data.device(), device) << c.name << ": an output is on the wrong device";
    r.outputs.push_back(y->data.to_device(cpu()));
  }
  if (!c.backward) return r;
  // Back-propagate each output's upstream gradient in turn; gradients add up.
  Arrays gys = upstream(ys);
  r.input_grads.resize(xs.size());
  for (size_t j = 0; j < ys.size(); ++j) {
    if (!gys[j].defined()) continue;
    for (const VarPtr& x : xs) x->grad = Array();
    ys[j]->grad = gys[j].to_device(device);
    chainerc::backward(ys[j], false);
    for (size_t i = 0; i < xs.size(); ++i) {
      const Array& g = xs[i]->grad;
      if (!g.defined()) continue;
      EXPECT_EQ(g.device(), device)
          << c.name << ": the gradient of input " << i << " is on the wrong device";
      add_to(r.input_grads[i], g.to_device(cpu()));
    }
  }
  if (fn && fn->parameters)
    for (const chainerc::Parameter& p : *fn->parameters)
      r.param_grads.push_back(p.grad.to_device(cpu()));
  return r;
}

void expect_close(const Array& gpu_value, const Array& cpu_value, const Tolerance& t,
                  const std::string& what) {
  ASSERT_EQ(gpu_value.defined(), cpu_value.defined()) << what << ": defined on one device only";
  if (!cpu_value.defined()) return;
  ASSERT_EQ(gpu_value.shape(), cpu_value.shape()) << what;
  ASSERT_EQ(gpu_value.dtype(), cpu_value.dtype()) << what;
  std::string message;
  EXPECT_TRUE(chainerc::allclose(gpu_value, cpu_value, t.atol, t.rtol, nullptr, &message))
      << what << " on cuda:0 differs from the CPU's: " << message;
}

}  // namespace

Array uniform(DType dtype, const Shape& shape, double lo, double hi, uint32_t seed) {
  Array a = Array::empty(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  fill(a, [&] { return d(rng); });
  return a;
}

Array away_from_zero(DType dtype, const Shape& shape, double gap, double hi, uint32_t seed) {
  Array a = Array::empty(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(gap, hi);
  std::bernoulli_distribution sign(0.5);
  fill(a, [&] { return sign(rng) ? d(rng) : -d(rng); });
  return a;
}

Array labels(const Shape& shape, int32_t n, uint32_t seed) {
  Array a = Array::empty(DType::Int32, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, n - 1);
  for (int64_t i = 0; i < a.size(); ++i) a.data<int32_t>()[i] = d(rng);
  return a;
}

FuncPtr with_parameters_on(const FuncPtr& f, Device device) {
  FuncPtr g = f->clone();
  if (!g) throw std::runtime_error(std::string(f->name()) + " cannot be cloned");
  auto params = std::make_shared<chainerc::Parameters>();
  if (f->parameters)
    for (const chainerc::Parameter& p : *f->parameters)
      params->push_back(
          chainerc::Parameter{p.name, p.param.to_device(device),
                              Array::zeros(p.param.dtype(), p.param.shape(), device)});
  g->parameters = params;
  return g;
}

void expect_agreement(const Case& c) {
  SCOPED_TRACE(c.name);
  const Tolerance t = tolerance_of(c);
  Run on_cpu, on_gpu;
  try {
    on_cpu = run_on(c, cpu());
    on_gpu = run_on(c, gpu());
  } catch (const chainerc::Error& e) {
    FAIL() << c.name << ": " << e.what();
  }
  ASSERT_EQ(on_gpu.outputs.size(), on_cpu.outputs.size());
  for (size_t j = 0; j < on_cpu.outputs.size(); ++j)
    expect_close(on_gpu.outputs[j], on_cpu.outputs[j], t, "output " + std::to_string(j));
  if (!c.backward) return;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (is_float(c.inputs[i]))
      expect_close(on_gpu.input_grads[i], on_cpu.input_grads[i], t,
                   "the gradient of input " + std::to_string(i));
  ASSERT_EQ(on_gpu.param_grads.size(), on_cpu.param_grads.size());
  for (size_t i = 0; i < on_cpu.param_grads.size(); ++i)
    expect_close(on_gpu.param_grads[i], on_cpu.param_grads[i], t,
                 "the gradient of parameter " + (*c.function->parameters)[i].name);
}

void expect_check_backward(const Case& c, double eps, double atol, double rtol) {
  SCOPED_TRACE(c.name + " (check_backward on cuda:0)");
  Arrays inputs;
  for (const Array& x : c.inputs) inputs.push_back(x.to_device(gpu()));
  FuncPtr fn = c.function ? with_parameters_on(c.function, gpu()) : nullptr;
  // Each evaluation applies a fresh copy of the function object.
  auto build = [&](const std::vector<VarPtr>& xs) {
    return c.build(xs, fn ? with_parameters_on(fn, gpu()) : nullptr);
  };
  // Upstream gradients shaped like the outputs: one probe run.
  std::vector<VarPtr> probe_vars;
  for (const Array& x : inputs) probe_vars.push_back(std::make_shared<VariableImpl>(x, true));
  Arrays gys = upstream(build(probe_vars));
  try {
    chainerc::check_backward(build, inputs, gys, eps, atol, rtol);
  } catch (const chainerc::Error& e) {
    ADD_FAILURE() << e.what();
  }
}

void expect_check_double_backward(const Case& c, double eps, double atol, double rtol) {
  SCOPED_TRACE(c.name + " (check_double_backward on cuda:0)");
  Arrays inputs;
  for (const Array& x : c.inputs) inputs.push_back(x.to_device(gpu()));
  FuncPtr fn = c.function ? with_parameters_on(c.function, gpu()) : nullptr;
  auto build = [&](const std::vector<VarPtr>& xs) {
    return c.build(xs, fn ? with_parameters_on(fn, gpu()) : nullptr);
  };
  std::vector<VarPtr> probe_vars;
  for (const Array& x : inputs) probe_vars.push_back(std::make_shared<VariableImpl>(x, true));
  const std::vector<VarPtr> probe = build(probe_vars);
  Arrays gys = upstream(probe);
  for (size_t j = 0; j < gys.size(); ++j)  // on each output's device (copy may move it)
    if (gys[j].defined()) gys[j] = gys[j].to_device(probe[j]->data.device());
  Arrays ggxs;
  uint32_t seed = 2000;
  for (const Array& x : inputs)
    ggxs.push_back(is_float(x) ? uniform(x.dtype(), x.shape(), -1, 1, seed++).to_device(gpu())
                               : Array());
  try {
    chainerc::check_double_backward(build, inputs, gys, ggxs, eps, atol, rtol);
  } catch (const chainerc::Error& e) {
    ADD_FAILURE() << e.what();
  }
}

void GpuFunctions::SetUp() {
  if (ch_cuda_device_count() == 0)
    CH_GPU_SKIP() << "no CUDA device: " << ch_cuda_unavailable_reason();
}

}  // namespace gputest
