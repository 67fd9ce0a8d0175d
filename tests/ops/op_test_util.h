// Shared helpers for the built-in function tests (tests/ops/): RAII owners of
// C API handles, arrays from std::vector and back, comparisons against the
// NumPy references of references.h, error assertions, gradient checking
// through ch_check_backward_graph, and a fixture that checks for leaked
// handles. Only the C API (<ch/ch.h>) is used.
#pragma once

#include <ch/ch.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "references.h"

namespace ref {
// gtest prints a failing case's parameter by its name.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
}  // namespace ref

namespace optest {

// ---- status handling -------------------------------------------------------

// Throws (gtest reports the exception as a failure of the test) when a call
// that must succeed fails, with the library's status name and message.
inline void ok(ch_status st, const char* what) {
  if (st != CH_OK)
    throw std::runtime_error(std::string(what) + " failed: " + ch_status_name(st) + ": " +
                             ch_error_message());
}
#define OPTEST_OK(call) ::optest::ok((call), #call)

// ---- RAII owners -------------------------------------------------------------

template <typename T, ch_status (*Release)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* h) : h_(h) {}
  ~Handle() { reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : h_(o.release()) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  T* get() const { return h_; }
  // For `T** out` parameters: drops what is held and hands out the slot.
  T** out() {
    reset();
    return &h_;
  }
  T* release() {
    T* h = h_;
    h_ = nullptr;
    return h;
  }
  void reset(T* h = nullptr) {
    if (h_) Release(h_);
    h_ = h;
  }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T* h_ = nullptr;
};

using Array = Handle<ch_array, ch_array_release>;
using Var = Handle<ch_variable, ch_variable_release>;
using Func = Handle<ch_function, ch_function_release>;

// ---- arrays ----------------------------------------------------------------

using Shape = std::vector<int64_t>;

inline std::string shape_str(const Shape& s) {  // NumPy's tuple spelling: (2, 3), (4,), ()
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) out += ",";
  return out + ")";
}

inline int64_t size_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// New array of `dtype` holding `values` (converted from double).
inline Array make_array(ch_dtype dtype, const Shape& shape, const double* values, int64_t n) {
  if (n != size_of(shape))
    throw std::runtime_error("make_array: " + std::to_string(n) + " values for shape " +
                             shape_str(shape));
  std::vector<float> f;
  std::vector<double> d;
  std::vector<int32_t> i;
  const void* data = nullptr;
  switch (dtype) {
    case CH_FLOAT32:
      f.assign(values, values + n);
      data = f.data();
      break;
    case CH_FLOAT64:
      d.assign(values, values + n);
      data = d.data();
      break;
    case CH_INT32:
      for (int64_t k = 0; k < n; ++k) i.push_back(static_cast<int32_t>(values[k]));
      data = i.data();
      break;
    default:
      throw std::runtime_error("make_array: unknown dtype");
  }
  Array a;
  OPTEST_OK(ch_array_new(a.out(), dtype, shape.data(), static_cast<int32_t>(shape.size()), data,
                         ch_device_cpu()));
  return a;
}
inline Array make_array(ch_dtype dtype, const Shape& shape, const std::vector<double>& values) {
  return make_array(dtype, shape, values.data(), static_cast<int64_t>(values.size()));
}
inline Shape shape_of(const ref::Tensor& t) { return Shape(t.shape, t.shape + t.ndim); }
inline Array make_array(ch_dtype dtype, const ref::Tensor& t) {
  return make_array(dtype, shape_of(t), t.data, t.size);
}
// An array of `shape` filled with 0.5, 1.5, 2.5, ... (handy for error tests).
inline Array iota(ch_dtype dtype, const Shape& shape) {
  std::vector<double> v(static_cast<size_t>(size_of(shape)));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(k) + 0.5;
  return make_array(dtype, shape, v);
}

inline Shape shape_of(const ch_array* a) {
  const int64_t* s = ch_array_shape(a);
  return Shape(s, s + ch_array_ndim(a));
}

// The elements converted to double, C order.
inline std::vector<double> values_of(const ch_array* a) {
  const size_t n = static_cast<size_t>(ch_array_size(a));
  std::vector<double> out(n);
  switch (ch_array_dtype(a)) {
    case CH_FLOAT32: {
      std::vector<float> f(n);
      OPTEST_OK(ch_array_read(a, f.data(), n * sizeof(float)));
      out.assign(f.begin(), f.end());
      break;
    }
    case CH_FLOAT64:
      OPTEST_OK(ch_array_read(a, out.data(), n * sizeof(double)));
      break;
    case CH_INT32: {
      std::vector<int32_t> i(n);
      OPTEST_OK(ch_array_read(a, i.data(), n * sizeof(int32_t)));
      out.assign(i.begin(), i.end());
      break;
    }
    default:
      throw std::runtime_error("values_of: unknown dtype");
  }
  return out;
}

// ---- variables ---------------------------------------------------------------

inline Var make_var(const Array& a, bool is_volatile = false) {
  Var v;
  OPTEST_OK(ch_variable_new(v.out(), a.get(), is_volatile ? 1 : 0));
  return v;
}
inline Var make_var(ch_dtype dtype, const Shape& shape, const std::vector<double>& values,
                    bool is_volatile = false) {
  return make_var(make_array(dtype, shape, values), is_volatile);
}
inline Array data_of(const Var& v) {
  Array a;
  OPTEST_OK(ch_variable_data(a.out(), v.get()));
  return a;
}
inline Array grad_of(const Var& v) {  // empty when there is no gradient
  Array a;
  OPTEST_OK(ch_variable_grad(a.out(), v.get()));
  return a;
}
inline std::vector<double> values_of(const Var& v) { return values_of(data_of(v).get()); }
inline Shape shape_of(const Var& v) { return shape_of(data_of(v).get()); }
inline ch_dtype dtype_of(const Var& v) { return ch_array_dtype(data_of(v).get()); }

// Ones of v's shape and dtype (an initial error for backward).
inline Array ones_like(const Var& v) {
  Array d = data_of(v), out;
  OPTEST_OK(ch_array_new_full(out.out(), ch_array_dtype(d.get()), ch_array_shape(d.get()),
                              ch_array_ndim(d.get()), 1.0, ch_device_cpu()));
  return out;
}

// Name of the function that created `v` ("" for a root).
inline std::string creator_name(const Var& v) {
  Func f;
  OPTEST_OK(ch_variable_creator(f.out(), v.get()));
  return f ? ch_function_name(f.get()) : "";
}

// Set the upstream gradient and run backward (intermediate grads not retained).
inline void backward(const Var& y, const Array& gy) {
  if (gy) OPTEST_OK(ch_variable_set_grad(y.get(), gy.get()));
  OPTEST_OK(ch_variable_backward(y.get(), 0));
}

// ---- comparisons -------------------------------------------------------------

struct Tol {
  double atol;
  double rtol;
};

// actual (dtype, shape, values) against the expected ones, numpy.allclose-style.
inline ::testing::AssertionResult all_close(const ch_array* actual, ch_dtype dtype,
                                            const Shape& shape, const double* expected, int64_t n,
                                            Tol tol) {
  if (!actual) return ::testing::AssertionFailure() << "the array is missing (NULL)";
  if (ch_array_dtype(actual) != dtype)
    return ::testing::AssertionFailure() << "dtype " << ch_dtype_name(ch_array_dtype(actual))
                                         << ", expected " << ch_dtype_name(dtype);
  if (shape_of(actual) != shape)
    return ::testing::AssertionFailure()
           << "shape " << shape_str(shape_of(actual)) << ", expected " << shape_str(shape);
  std::vector<double> got = values_of(actual);
  if (static_cast<int64_t>(got.size()) != n)
    return ::testing::AssertionFailure() << got.size() << " elements, expected " << n;
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double diff = std::fabs(got[k] - expected[k]);
    const double allowed = tol.atol + tol.rtol * std::fabs(expected[k]);
    if (!(diff <= allowed) && got[k] != expected[k]) {  // equal infinities are close
      ++bad;
      const double excess = std::isnan(diff) ? INFINITY : diff - allowed;
      if (worst < 0 || excess > worst_excess) {
        worst = k;
        worst_excess = excess;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(17);
  os << bad << " of " << n << " elements differ (atol " << tol.atol << ", rtol " << tol.rtol
     << "); worst at flat index " << worst << ": actual " << got[worst] << ", expected "
     << expected[worst] << ", |diff| " << std::fabs(got[worst] - expected[worst]);
  return ::testing::AssertionFailure() << os.str();
}
inline ::testing::AssertionResult all_close(const ch_array* actual, ch_dtype dtype,
                                            const ref::Tensor& expected, Tol tol) {
  return all_close(actual, dtype, shape_of(expected), expected.data, expected.size, tol);
}
inline ::testing::AssertionResult all_close(const Array& actual, ch_dtype dtype, const Shape& shape,
                                            const std::vector<double>& expected, Tol tol) {
  return all_close(actual.get(), dtype, shape, expected.data(),
                   static_cast<int64_t>(expected.size()), tol);
}
// Exact equality (tolerance 0).
inline ::testing::AssertionResult all_equal(const Array& actual, ch_dtype dtype, const Shape& shape,
                                            const std::vector<double>& expected) {
  return all_close(actual, dtype, shape, expected, Tol{0, 0});
}

// Forward values against NumPy. float64: 1-2 ulp (libm vs NumPy's exp/log/pow
// and summation order); float32: a few ulp of float32 (NumPy's SIMD float32
// exp/log/power differ from libm's by up to ~1 ulp; float32 sums accumulate
// rounding differently from NumPy's pairwise summation).
inline Tol forward_tol(ch_dtype dtype) {
  return dtype == CH_FLOAT64 ? Tol{1e-14, 1e-13} : Tol{2e-6, 2e-6};
}
// Gradients from backward against the float64 NumPy formulas: float32
// gradients are computed in float32.
inline Tol grad_tol(ch_dtype dtype) {
  return dtype == CH_FLOAT64 ? Tol{1e-13, 1e-12} : Tol{1e-5, 1e-5};
}

// check_backward settings (central differences, as Chainer's gradient_check).
// float64: eps 1e-6 leaves a truncation error of ~f'''*eps^2/6 ~ 1e-12 and a
// rounding error of ~1e-16/eps ~ 1e-10, far below the tolerance.
// float32: with eps 1e-3 the rounding of each evaluation (~6e-8 relative)
// divided by 2*eps gives ~1e-4 absolute error for values of order 2; the
// truncation error is ~1e-6.
struct CheckTol {
  double eps, atol, rtol;
};
inline CheckTol check_tol(ch_dtype dtype) {
  return dtype == CH_FLOAT64 ? CheckTol{1e-6, 1e-8, 1e-7} : CheckTol{1e-3, 1e-3, 1e-3};
}

// ---- errors ------------------------------------------------------------------

// `st` is the error `expected`, ch_error_status() agrees, and the message
// contains every fragment (the values that were wrong).
inline ::testing::AssertionResult fails_with(ch_status st, ch_status expected,
                                             std::initializer_list<std::string> fragments = {}) {
  const std::string msg = ch_error_message();
  if (st != expected)
    return ::testing::AssertionFailure()
           << "status " << ch_status_name(st) << ", expected " << ch_status_name(expected)
           << " (last message: \"" << msg << "\")";
  if (ch_error_status() != expected)
    return ::testing::AssertionFailure()
           << "ch_error_status() is " << ch_status_name(ch_error_status()) << ", expected "
           << ch_status_name(expected);
  if (msg.empty()) return ::testing::AssertionFailure() << "the error message is empty";
  for (const std::string& f : fragments)
    if (msg.find(f) == std::string::npos)
      return ::testing::AssertionFailure()
             << "the message \"" << msg << "\" does not contain \"" << f << "\"";
  return ::testing::AssertionSuccess() << "\"" << msg << "\"";
}

// ---- gradient checking -------------------------------------------------------

// Builds one output from the input variables (returns its status).
using Build = std::function<ch_status(ch_variable* const* inputs, size_t n, ch_variable** out)>;

inline ch_status build_trampoline(void* user_data, ch_variable* const* inputs, size_t n_inputs,
                                  ch_variable** outputs, size_t n_outputs) {
  if (n_outputs != 1) {
    ch_error_set(CH_ERR_INVALID_ARGUMENT, "op tests build graphs with one output");
    return CH_ERR_INVALID_ARGUMENT;
  }
  return (*static_cast<const Build*>(user_data))(inputs, n_inputs, outputs);
}

// ch_check_backward_graph of `build` at `inputs` with upstream gradient `gy`
// (NULL: ones). Returns the status; the message is in ch_error_message().
inline ch_status check_backward(const Build& build, const std::vector<const Array*>& inputs,
                                const Array* gy, CheckTol t) {
  std::vector<ch_array*> xs;
  for (const Array* a : inputs) xs.push_back(a->get());
  ch_array* gys[1] = {gy ? gy->get() : nullptr};
  return ch_check_backward_graph(build_trampoline, const_cast<Build*>(&build), xs.data(), xs.size(),
                                 gys, 1, t.eps, t.atol, t.rtol);
}

// ---- fixtures ----------------------------------------------------------------

// Every test must give back every handle it made (the RAII owners do).
template <typename Base>
class LeakChecked : public Base {
 protected:
  void SetUp() override { live_before_ = ch_debug_live_handles(); }
  void TearDown() override {
    EXPECT_EQ(ch_debug_live_handles(), live_before_) << "the test leaked handles";
  }

 private:
  int64_t live_before_ = 0;
};

using OpTest = LeakChecked<::testing::Test>;

// ---- reference-case driver -----------------------------------------------------

// Applies the op under test to the case's input variables.
using Apply = ch_status (*)(ch_variable** out, ch_variable* const* in, const ref::Case& c);

struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<ref::Case>& info) const {
    return info.param.name;
  }
};

class RefTest : public LeakChecked<::testing::TestWithParam<ref::Case>> {
 protected:
  // Forward output against NumPy; the inputs are not modified.
  void forward(Apply apply) {
    const ref::Case& c = GetParam();
    std::vector<Array> xs;
    std::vector<Var> vs;
    std::vector<ch_variable*> hs;
    for (int32_t i = 0; i < c.n_inputs; ++i) {
      xs.push_back(make_array(c.dtype, c.x[i]));
      vs.push_back(make_var(xs.back()));
      hs.push_back(vs.back().get());
    }
    Var y;
    ASSERT_EQ(apply(y.out(), hs.data(), c), CH_OK) << ch_error_message();
    ASSERT_TRUE(y);
    EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, forward_tol(c.dtype)));
    for (int32_t i = 0; i < c.n_inputs; ++i)
      EXPECT_TRUE(all_close(xs[i].get(), c.dtype, c.x[i], Tol{0, 0}))
          << "input " << i << " changed";
  }

  // Gradients from backward (upstream gradient gy) against NumPy; running
  // backward a second time gives the same gradients (they do not accumulate
  // across calls).
  void backward_matches(Apply apply) {
    const ref::Case& c = GetParam();
    std::vector<Var> vs;
    std::vector<ch_variable*> hs;
    for (int32_t i = 0; i < c.n_inputs; ++i) {
      vs.push_back(make_var(make_array(c.dtype, c.x[i])));
      hs.push_back(vs.back().get());
    }
    Var y;
    ASSERT_EQ(apply(y.out(), hs.data(), c), CH_OK) << ch_error_message();
    Array gy = make_array(c.dtype, c.gy);
    for (int pass = 0; pass < 2; ++pass) {
      optest::backward(y, gy);
      for (int32_t i = 0; i < c.n_inputs; ++i) {
        Array g = grad_of(vs[i]);
        EXPECT_TRUE(all_close(g.get(), c.dtype, c.gx[i], grad_tol(c.dtype)))
            << "gradient of input " << i << ", backward pass " << pass + 1;
      }
    }
    EXPECT_TRUE(all_close(gy.get(), c.dtype, c.gy, Tol{0, 0})) << "backward modified gy";
  }

  // Numerical gradient check (ch_check_backward_graph) at the case's inputs.
  void check_backward(Apply apply) {
    const ref::Case& c = GetParam();
    std::vector<Array> xs;
    for (int32_t i = 0; i < c.n_inputs; ++i) xs.push_back(make_array(c.dtype, c.x[i]));
    std::vector<const Array*> ptrs;
    for (const Array& x : xs) ptrs.push_back(&x);
    Array gy = make_array(c.dtype, c.gy);
    Build build = [&c, apply](ch_variable* const* in, size_t, ch_variable** out) {
      return apply(out, in, c);
    };
    const ch_status st = optest::check_backward(build, ptrs, &gy, check_tol(c.dtype));
    EXPECT_EQ(st, CH_OK) << ch_error_message();
  }
};

// One suite of NumPy-reference tests (Forward, Backward, CheckBackward) per op.
#define OPTEST_REFERENCE_SUITE(Suite, cases, apply)       \
  class Suite : public ::optest::RefTest {};              \
  TEST_P(Suite, Forward) { forward(apply); }              \
  TEST_P(Suite, Backward) { backward_matches(apply); }    \
  TEST_P(Suite, CheckBackward) { check_backward(apply); } \
  INSTANTIATE_TEST_SUITE_P(NumPy, Suite, ::testing::ValuesIn(cases), ::optest::CaseName())

// Forward-only suite (int32 inputs of reshape and identity).
#define OPTEST_FORWARD_SUITE(Suite, cases, apply) \
  class Suite : public ::optest::RefTest {};      \
  TEST_P(Suite, Forward) { forward(apply); }      \
  INSTANTIATE_TEST_SUITE_P(NumPy, Suite, ::testing::ValuesIn(cases), ::optest::CaseName())

// ---- large arrays ----------------------------------------------------------------

// The inputs of references.h's large-array values (exact in float32 and float64).
inline double large_a(int64_t i) { return static_cast<double>((i * 7919) % 1024) / 256.0 - 2.0; }
inline double large_b(int64_t i) {
  return static_cast<double>((i * 104729 + 17) % 512) / 128.0 - 2.0;
}
inline std::vector<double> large_values(double (*f)(int64_t), int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = f(i);
  return v;
}

// y (kLargeN elements) against NumPy's exact sum and sampled elements.
inline void expect_large_matches(const Array& y, ch_dtype dtype, double fsum, const double* samples,
                                 Tol tol) {
  ASSERT_EQ(shape_of(y.get()), Shape{ref::kLargeN});
  ASSERT_EQ(ch_array_dtype(y.get()), dtype);
  std::vector<double> v = values_of(y.get());
  long double sum = 0;
  for (double e : v) sum += e;
  EXPECT_NEAR(static_cast<double>(sum), fsum, tol.atol + tol.rtol * std::fabs(fsum))
      << "sum of all elements";
  size_t k = 0;
  for (int64_t idx : ref::kLargeSamples) {
    EXPECT_NEAR(v[static_cast<size_t>(idx)], samples[k],
                tol.atol + tol.rtol * std::fabs(samples[k]))
        << "element " << idx;
    ++k;
  }
}

}  // namespace optest
