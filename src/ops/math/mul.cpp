// mul: y = a * b with broadcasting; y = x * s.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Mul final : public Function {
 public:
  const char* name() const override { return "Mul"; }
  Arrays forward(const Arrays& in) override {
    return {binary_broadcast("mul", in[0], in[1], [](auto a, auto b) { return a * b; })};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    auto times = [](auto g, auto v) { return g * v; };
    return {cpu::sum_to(binary_broadcast("mul", gy[0], in[1], times), in[0].shape()),
            cpu::sum_to(binary_broadcast("mul", gy[0], in[0], times), in[1].shape())};
  }
};

class MulScalar final : public Function {
 public:
  explicit MulScalar(double s) : s_(s) {}
  const char* name() const override { return "MulScalar"; }
  Arrays forward(const Arrays& in) override {
    return {
        unary("mul_scalar", in[0], [s = s_](auto x) { return x * static_cast<decltype(x)>(s); })};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {
        unary("mul_scalar", gy[0], [s = s_](auto g) { return g * static_cast<decltype(g)>(s); })};
  }

 private:
  double s_;
};

}  // namespace

VarPtr mul(const VarPtr& a, const VarPtr& b) { return apply1(std::make_shared<Mul>(), {a, b}); }
VarPtr mul_scalar(const VarPtr& x, double s) { return apply1(std::make_shared<MulScalar>(s), {x}); }

}  // namespace chainerc::ops
