// div: y = a / b with broadcasting; y = x / s; y = s / x.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Div final : public Function {
 public:
  const char* name() const override { return "Div"; }
  Arrays forward(const Arrays& in) override {
    y_ = binary_broadcast("div", in[0], in[1], [](auto a, auto b) { return a / b; });
    return {y_};
  }
  // ga = gy / b;  gb = -gy * a / b^2 = -gy * y / b
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array ga = binary_broadcast("div", gy[0], in[1], [](auto g, auto b) { return g / b; });
    Array gy_y = binary_same("div", gy[0], y_, [](auto g, auto y) { return g * y; });
    Array gb = binary_broadcast("div", gy_y, in[1], [](auto gyy, auto b) { return -gyy / b; });
    return {cpu::sum_to(ga, in[0].shape()), cpu::sum_to(gb, in[1].shape())};
  }

 private:
  Array y_;  // the output: arrays hold no graph references, so no cycle
};

class DivScalar final : public Function {  // x / s
 public:
  explicit DivScalar(double s) : s_(s) {}
  const char* name() const override { return "DivScalar"; }
  Arrays forward(const Arrays& in) override {
    return {
        unary("div_scalar", in[0], [s = s_](auto x) { return x / static_cast<decltype(x)>(s); })};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {
        unary("div_scalar", gy[0], [s = s_](auto g) { return g / static_cast<decltype(g)>(s); })};
  }

 private:
  double s_;
};

class RDivScalar final : public Function {  // s / x
 public:
  explicit RDivScalar(double s) : s_(s) {}
  const char* name() const override { return "RDivScalar"; }
  Arrays forward(const Arrays& in) override {
    return {
        unary("rdiv_scalar", in[0], [s = s_](auto x) { return static_cast<decltype(x)>(s) / x; })};
  }
  // gx = -s / x^2 * gy
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {binary_same("rdiv_scalar", gy[0], in[0], [s = s_](auto g, auto x) {
      return -static_cast<decltype(x)>(s) * g / (x * x);
    })};
  }

 private:
  double s_;
};

}  // namespace

VarPtr div(const VarPtr& a, const VarPtr& b) { return apply1(std::make_shared<Div>(), {a, b}); }
VarPtr div_scalar(const VarPtr& x, double s) { return apply1(std::make_shared<DivScalar>(s), {x}); }
VarPtr rdiv_scalar(const VarPtr& x, double s) {
  return apply1(std::make_shared<RDivScalar>(s), {x});
}

}  // namespace chainerc::ops
