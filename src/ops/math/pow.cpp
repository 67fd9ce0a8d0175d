// pow: y = x ** p for a scalar exponent p; y = s ** x for a scalar base s.
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class PowScalar final : public Function {  // x ** p
 public:
  explicit PowScalar(double p) : p_(p) {}
  const char* name() const override { return "PowScalar"; }
  Arrays forward(const Arrays& in) override {
    return {unary("pow_scalar", in[0], [p = p_](auto x) {
      using T = decltype(x);
      return p == 2 ? x * x : static_cast<T>(std::pow(x, static_cast<T>(p)));
    })};
  }
  // gx = p * x^(p-1) * gy
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {binary_same("pow_scalar", gy[0], in[0], [p = p_](auto g, auto x) {
      using T = decltype(x);
      T d = p == 2 ? T(2) * x
                   : static_cast<T>(p) * static_cast<T>(std::pow(x, static_cast<T>(p - 1)));
      return g * d;
    })};
  }

 private:
  double p_;
};

class RPowScalar final : public Function {  // s ** x
 public:
  explicit RPowScalar(double s) : s_(s) {}
  const char* name() const override { return "RPowScalar"; }
  Arrays forward(const Arrays& in) override {
    y_ = unary("rpow_scalar", in[0], [s = s_](auto x) {
      using T = decltype(x);
      return static_cast<T>(std::pow(static_cast<T>(s), x));
    });
    return {y_};
  }
  // gx = ln(s) * s^x * gy
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {binary_same("rpow_scalar", gy[0], y_, [ls = std::log(s_)](auto g, auto y) {
      return g * y * static_cast<decltype(y)>(ls);
    })};
  }

 private:
  double s_;
  Array y_;
};

}  // namespace

VarPtr pow_scalar(const VarPtr& x, double p) { return apply1(std::make_shared<PowScalar>(p), {x}); }
VarPtr rpow_scalar(const VarPtr& x, double s) {
  return apply1(std::make_shared<RPowScalar>(s), {x});
}

}  // namespace chainerc::ops
