// Parameter gradients against central differences on cuda:0, and error
// agreement between the CPU and cuda:0 (parameter_check.h).
#include "parameter_check.h"

#include <cmath>

#include "core/error.h"

namespace gputest {
namespace {

using chainerc::VariableImpl;

// sum(y * gy) in double, on the CPU.
double weighted_sum(const Array& y, const Array& gy) {
  const Array a = y.to_device(cpu()), b = gy.to_device(cpu());
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += a.get(i) * b.get(i);
  return s;
}

// A fresh application of c.function on cuda:0 whose parameters are `params`
// (CPU arrays) copied there.
FuncPtr function_with(const Case& c, const std::vector<Array>& params) {
  FuncPtr g = with_parameters_on(c.function, gpu());
  for (size_t i = 0; i < params.size(); ++i) (*g->parameters)[i].param = params[i].to_device(gpu());
  return g;
}

Array run_output(const Case& c, const std::vector<Array>& params) {
  std::vector<VarPtr> xs;
  for (const Array& x : c.inputs) xs.push_back(std::make_shared<VariableImpl>(x.to_device(gpu())));
  return c.build(xs, function_with(c, params))[0]->data;
}

}  // namespace

void expect_parameter_gradients(const Case& c, double eps, double atol, double rtol) {
  SCOPED_TRACE(c.name + " (parameter gradients on cuda:0)");
  ASSERT_TRUE(c.function && c.function->parameters);
  std::vector<Array> base;
  for (const chainerc::Parameter& p : *c.function->parameters)
    base.push_back(p.param.to_device(cpu()));
  // Analytic gradients from one backward pass.
  FuncPtr fn = function_with(c, base);
  std::vector<VarPtr> xs;
  for (const Array& x : c.inputs) xs.push_back(std::make_shared<VariableImpl>(x.to_device(gpu())));
  VarPtr y = c.build(xs, fn)[0];
  const Array gy = uniform(y->data.dtype(), y->data.shape(), -1, 1, 4242);
  y->grad = gy.to_device(gpu());
  chainerc::backward(y, false);
  for (size_t i = 0; i < base.size(); ++i) {
    const Array analytic = (*fn->parameters)[i].grad.to_device(cpu());
    ASSERT_EQ(analytic.device(), cpu());
    for (int64_t e = 0; e < base[i].size(); ++e) {
      std::vector<Array> plus = base, minus = base;
      plus[i] = base[i].copy();
      minus[i] = base[i].copy();
      const double v = base[i].get(e);
      ASSERT_EQ(base[i].dtype(), DType::Float64);
      plus[i].data<double>()[e] = v + eps;
      minus[i].data<double>()[e] = v - eps;
      const double numeric =
          (weighted_sum(run_output(c, plus), gy) - weighted_sum(run_output(c, minus), gy)) /
          (2 * eps);
      const double a = analytic.get(e);
      EXPECT_LE(std::abs(a - numeric), atol + rtol * std::abs(numeric))
          << "parameter " << (*c.function->parameters)[i].name << " element " << e
          << ": backward gives " << a << ", central differences " << numeric;
    }
  }
}

Raised raised_on(const Case& c, Device device) {
  Raised r;
  try {
    std::vector<VarPtr> xs;
    for (const Array& x : c.inputs)
      xs.push_back(std::make_shared<VariableImpl>(x.to_device(device)));
    const std::vector<VarPtr> ys =
        c.build(xs, c.function ? with_parameters_on(c.function, device) : nullptr);
    // On CUDA the label and id checks run on the device and report at the
    // next synchronisation (ops/label_check.h): reading the outputs.
    for (const VarPtr& y : ys) y->data.to_device(cpu());
  } catch (const chainerc::Error& e) {
    r.status = e.status();
    r.message = e.what();
    const std::string later = " (found on the device, reported at the next synchronisation)";
    if (device != cpu() && r.message.size() > later.size() &&
        r.message.compare(r.message.size() - later.size(), later.size(), later) == 0)
      r.message.resize(r.message.size() - later.size());
  }
  return r;
}

void expect_same_error(const Case& c, ch_status status, const std::string& needle) {
  SCOPED_TRACE(c.name);
  const Raised on_cpu = raised_on(c, cpu()), on_gpu = raised_on(c, gpu());
  EXPECT_EQ(on_cpu.status, status) << on_cpu.message;
  EXPECT_NE(on_cpu.message.find(needle), std::string::npos)
      << "'" << on_cpu.message << "' does not contain '" << needle << "'";
  EXPECT_EQ(on_gpu.status, on_cpu.status);
  EXPECT_EQ(on_gpu.message, on_cpu.message);
}

}  // namespace gputest
