// Parameter: a function with no inputs that outputs its parameter array "W"
// (Chainer's F.Parameter). The output shares the parameter's memory (the
// seed's shallow copy); backward accumulates the output gradient into gW.
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

namespace chainerc::ops {
namespace {

class ParameterFunction final : public Function {
 public:
  explicit ParameterFunction(std::shared_ptr<Parameters> params) { parameters = std::move(params); }
  const char* name() const override { return "Parameter"; }
  FuncPtr clone() const override { return std::make_shared<ParameterFunction>(parameters); }
  Arrays forward(const Arrays& in) override {
    if (!in.empty()) fail(CH_ERR_INVALID_ARGUMENT, "Parameter: takes no inputs, got ", in.size());
    return {parameter_at(*this, 0).param};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    Parameter& p = parameter_at(*this, 0);
    if (gy[0].shape() != p.grad.shape() || gy[0].dtype() != p.grad.dtype())
      fail(CH_ERR_SHAPE, "Parameter: the output gradient is a ", gy[0].describe(),
           " but the parameter is a ", p.grad.describe());
    kernels::add_into(p.grad, gy[0]);
    return {};
  }
  // The same accumulation (no inputs, so nothing of it is a graph); none inside ch_grad.
  CH_GRAPH_BACKWARD {
    Parameter& p = parameter_at(*this, 0);
    if (gy[0]->data.shape() != p.grad.shape() || gy[0]->data.dtype() != p.grad.dtype())
      fail(CH_ERR_SHAPE, "Parameter: the output gradient is a ", gy[0]->data.describe(),
           " but the parameter is a ", p.grad.describe());
    if (parameter_grads_enabled()) kernels::add_into(p.grad, gy[0]->data);
    return {};
  }
};

// The node of parameter_variable: outputs one parameter of another
// function, adds into its gradient in backward.
class ParameterOf final : public Function {
 public:
  explicit ParameterOf(const Parameter& p) {
    parameters = std::make_shared<Parameters>(Parameters{p});  // shares param and grad
  }
  const char* name() const override { return "ParameterOf"; }
  Arrays forward(const Arrays&) override { return {parameter_at(*this, 0).param}; }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    if (parameter_grads_enabled()) kernels::add_into(parameter_at(*this, 0).grad, gy[0]);
    return {};
  }
  CH_GRAPH_BACKWARD {
    if (parameter_grads_enabled()) kernels::add_into(parameter_at(*this, 0).grad, gy[0]->data);
    return {};
  }
};

}  // namespace

VarPtr parameter_variable(const Function& f, size_t i) {
  return apply1(std::make_shared<ParameterOf>(parameter_at(f, i)), {});
}

FuncPtr parameter_new(const Array& initial) {
  check_float("Parameter", initial);
  auto params = std::make_shared<Parameters>();
  params->push_back(make_parameter("W", initial.copy()));
  return std::make_shared<ParameterFunction>(std::move(params));
}

}  // namespace chainerc::ops
