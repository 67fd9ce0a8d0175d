// Defining your own functions in C++ (the seed's section 1.4) by subclassing
// ch::FunctionBase from <ch/ch.hpp>, each checked against numerical gradients
// with ch::check_backward in float64 and float32:
//   MulAdd               w = x * y + z
//   ExpAdd               z = exp(x) + exp(y)
//   EltwiseParamProduct  y = w * x with a parameter w; backward accumulates
//                        gw += gy * x (the seed's 1.4.3); gw is checked with
//                        ch::numerical_grad on w.
// Prints what it did; exits with status 1 on any failure (a wrong gradient
// included) and 2 if handles leaked.
#include <ch/ch.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>

namespace {

using ch::Array;
using Arrays = std::vector<ch::Array>;

// out[k] = f(first[k], rest[k]...) for float arrays of one dtype and shape.
template <class F, class... A>
Array map(F f, const Array& first, const A&... rest) {
  if (((rest.shape() != first.shape()) || ...))
    throw ch::Error(CH_ERR_SHAPE, "operands must have one shape");
  Array out = Array::empty_like(first);
  ch::dispatch_float(first.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* a = first.data<T>();
    for (int64_t k = 0, n = out.size(); k < n; ++k) o[k] = f(a[k], rest.template data<T>()[k]...);
  });
  return out;
}

// w = x * y + z
class MulAdd : public ch::FunctionBase {
 public:
  MulAdd() : FunctionBase("MulAdd") {}
  Arrays forward(const Arrays& in) override {
    return {map([](auto x, auto y, auto z) { return x * y + z; }, in[0], in[1], in[2])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    const Array& gw = gout[0];
    auto mul = [](auto a, auto b) { return a * b; };
    return {map(mul, in[1], gw), map(mul, in[0], gw), gw};  // gz = gw, no copy
  }
};

// z = exp(x) + exp(y)
class ExpAdd : public ch::FunctionBase {
 public:
  ExpAdd() : FunctionBase("ExpAdd") {}
  Arrays forward(const Arrays& in) override {
    return {map([](auto x, auto y) { return std::exp(x) + std::exp(y); }, in[0], in[1])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    auto g = [](auto x, auto gz) { return std::exp(x) * gz; };
    return {map(g, in[0], gout[0]), map(g, in[1], gout[0])};
  }
};

// y = w * x with the parameter w; backward accumulates into gw.
class EltwiseParamProduct : public ch::FunctionBase {
 public:
  explicit EltwiseParamProduct(const Array& w)
      : FunctionBase("EltwiseParamProduct"), w_(w), gw_(Array::zeros_like(w)) {
    add_parameter("w", w_, gw_);
  }
  Arrays forward(const Arrays& in) override {
    return {map([](auto w, auto x) { return w * x; }, w_, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    const Array& x = in[0];
    const Array& gy = gout[0];
    ch::dispatch_float(gw_.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* gw = gw_.data<T>();
      for (int64_t k = 0, n = gw_.size(); k < n; ++k) gw[k] += gy.data<T>()[k] * x.data<T>()[k];
    });
    return {map([](auto g, auto w) { return g * w; }, gy, w_)};
  }
  Array& w() { return w_; }
  Array& gw() { return gw_; }

 private:
  Array w_, gw_;
};

// A (2, 3) array of `dtype` whose values depend on `seed`.
Array sample(ch_dtype dtype, int seed) {
  std::vector<double> v(6);
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = 0.9 * std::sin(1.7 * static_cast<double>(k + 1) * (seed + 1)) + 0.05 * seed;
  Array a = Array::empty({2, 3}, dtype);
  a.write(v);
  return a;
}

void print(const char* label, const Array& a) {
  std::printf("  %s = [", label);
  const std::vector<double> v = a.to_vector<double>();
  for (size_t k = 0; k < v.size(); ++k) std::printf(k ? ", %.6g" : "%.6g", v[k]);
  std::printf("]\n");
}

struct Tolerances {
  double eps, atol, rtol;
};
Tolerances tolerances(ch_dtype dtype) {
  return dtype == CH_FLOAT64 ? Tolerances{1e-6, 1e-8, 1e-7} : Tolerances{1e-3, 1e-3, 1e-3};
}

// Apply, print the output, and check the input gradients numerically.
void check(const ch::FunctionBase& f, size_t n_inputs, ch_dtype dtype) {
  Arrays xs;
  std::vector<ch::Variable> vs;
  for (size_t i = 0; i < n_inputs; ++i) {
    xs.push_back(sample(dtype, static_cast<int>(i)));
    vs.emplace_back(xs.back());
  }
  std::printf("%s, %s:\n", f.name().c_str(), ch_dtype_name(dtype));
  print("output", f.apply(vs)[0].data());
  const Tolerances t = tolerances(dtype);
  ch::check_backward(f, xs, {}, t.eps, t.atol, t.rtol);  // throws ch::Error on a mismatch
  std::printf("  check_backward: OK\n");
}

void check_param_product(ch_dtype dtype) {
  auto f = std::make_shared<EltwiseParamProduct>(sample(dtype, 7));
  check(*f, 1, dtype);
  // gw from backward (after zeroing) against the numerical gradient in w.
  const Tolerances t = tolerances(dtype);
  Array x = sample(dtype, 3), gy = sample(dtype, 4);
  f->gw().fill(0.0);
  ch::Variable vx(x);
  ch::Variable vy = (*f)(vx);
  vy.set_grad(gy);
  vy.backward();
  Arrays num = ch::numerical_grad([&] { return Arrays{(*f)(ch::Variable(x, true)).data()}; },
                                  {f->w()}, {gy}, t.eps);
  print("gw", f->gw());
  ch::assert_allclose(f->gw(), num[0], t.atol, t.rtol);
  std::printf("  gw matches the numerical gradient: OK\n");
}

}  // namespace

int main() {
  try {
    std::printf("chainerc %s: user-defined functions in C++\n\n", ch_version_string());
    for (ch_dtype dtype : {CH_FLOAT64, CH_FLOAT32}) {
      MulAdd muladd;
      ExpAdd expadd;
      check(muladd, 3, dtype);
      check(expadd, 2, dtype);
      check_param_product(dtype);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "failed: %s\n", e.what());
    return 1;
  }
  if (ch_debug_live_handles() != 0) {
    ch_debug_report_live_handles();
    return 2;
  }
  std::printf("\nall checks passed\n");
  return 0;
}
