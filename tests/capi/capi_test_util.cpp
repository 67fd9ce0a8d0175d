#include "capi_test_util.h"

#include <cmath>
#include <sstream>

namespace capi_test {

Arr make_array(ch_dtype dtype, std::vector<int64_t> shape, const std::vector<double>& vals) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  EXPECT_EQ(static_cast<size_t>(n), vals.size()) << "make_array: wrong number of values";
  Arr a;
  ch_status st =
      ch_array_new_empty(a.out(), dtype, shape.data(), static_cast<int32_t>(shape.size()), cpu());
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  if (st != CH_OK) return a;
  void* p = ch_array_data(a);
  for (size_t i = 0; i < vals.size() && i < static_cast<size_t>(n); ++i) {
    switch (dtype) {
      case CH_FLOAT32:
        static_cast<float*>(p)[i] = static_cast<float>(vals[i]);
        break;
      case CH_FLOAT64:
        static_cast<double*>(p)[i] = vals[i];
        break;
      case CH_INT32:
        static_cast<int32_t*>(p)[i] = static_cast<int32_t>(vals[i]);
        break;
      default:
        break;
    }
  }
  return a;
}

Arr full(ch_dtype dtype, std::vector<int64_t> shape, double value) {
  Arr a;
  ch_status st = ch_array_new_full(a.out(), dtype, shape.data(), static_cast<int32_t>(shape.size()),
                                   value, cpu());
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return a;
}

std::vector<double> values(const ch_array* a) {
  std::vector<double> out;
  if (!a) return out;
  int64_t n = ch_array_size(a);
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    ch_status st = ch_array_get(&v, a, i);
    EXPECT_EQ(st, CH_OK) << ch_error_message();
    out.push_back(v);
  }
  return out;
}

std::vector<int64_t> shape_of(const ch_array* a) {
  const int64_t* s = ch_array_shape(a);
  int32_t nd = ch_array_ndim(a);
  return s ? std::vector<int64_t>(s, s + nd) : std::vector<int64_t>();
}

Var make_var(ch_array* data, bool is_volatile) {
  Var v;
  ch_status st = ch_variable_new(v.out(), data, is_volatile ? 1 : 0);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return v;
}

Var var_f32(std::vector<int64_t> shape, const std::vector<double>& vals, bool is_volatile) {
  Arr a = f32(std::move(shape), vals);
  return make_var(a, is_volatile);
}

Var var_f64(std::vector<int64_t> shape, const std::vector<double>& vals, bool is_volatile) {
  Arr a = f64(std::move(shape), vals);
  return make_var(a, is_volatile);
}

std::vector<double> data_of(const ch_variable* v) {
  Arr d;
  ch_status st = ch_variable_data(d.out(), v);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return values(d);
}

std::vector<double> grad_of(const ch_variable* v) {
  Arr g;
  ch_status st = ch_variable_grad(g.out(), v);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return values(g);
}

bool has_grad(const ch_variable* v) {
  Arr g;
  ch_status st = ch_variable_grad(g.out(), v);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return static_cast<bool>(g);
}

std::string creator_name(const ch_variable* v) {
  Fn f;
  ch_status st = ch_variable_creator(f.out(), v);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return f ? ch_function_name(f) : "";
}

bool has_creator(const ch_variable* v) {
  Fn f;
  ch_status st = ch_variable_creator(f.out(), v);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return static_cast<bool>(f);
}

const void* data_ptr(const ch_variable* v) {
  Arr d;
  ch_status st = ch_variable_data(d.out(), v);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return ch_array_data(d);
}

::testing::AssertionResult AllClose(const std::vector<double>& actual,
                                    const std::vector<double>& expected, double atol, double rtol) {
  auto dump = [](const std::vector<double>& v) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    os << "]";
    return os.str();
  };
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "sizes differ: actual " << dump(actual) << " expected " << dump(expected);
  for (size_t i = 0; i < actual.size(); ++i) {
    double d = std::fabs(actual[i] - expected[i]);
    if (!(d <= atol + rtol * std::fabs(expected[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs " << expected[i] << "\n  actual   "
             << dump(actual) << "\n  expected " << dump(expected);
  }
  return ::testing::AssertionSuccess();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

void CapiTest::SetUp() { baseline_handles_ = ch_debug_live_handles(); }

void CapiTest::TearDown() {
  int64_t now = ch_debug_live_handles();
  EXPECT_EQ(now, baseline_handles_) << "the test leaked (or over-released) handles";
  if (now != baseline_handles_) ch_debug_report_live_handles();
}

}  // namespace capi_test
