// Helpers shared by the tests of ch.hpp: value comparison and elementwise kernels for
// functions written in C++.
#pragma once

#include <gtest/gtest.h>

#include <ch/ch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ch_test {

// Every element of `a` (converted to double) is within `tol` of `expected`, and the
// shapes agree.
inline void expect_values(const ch::Array& a, const ch::Shape& shape,
                          const std::vector<double>& expected, double tol = 1e-6) {
  ASSERT_TRUE(a.valid());
  EXPECT_EQ(a.shape(), shape);
  std::vector<double> v = a.to_vector<double>();
  ASSERT_EQ(v.size(), expected.size()) << a;
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_NEAR(v[i], expected[i], tol) << "element " << i << " of " << a;
}

// out[i] = f(first[i], rest[i]...) for float arrays of one shape and dtype.
template <class F, class... A>
ch::Array elementwise(F f, const ch::Array& first, const A&... rest) {
  ch::Array out = ch::Array::empty_like(first);
  ch::dispatch_float(first.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    for (int64_t i = 0, n = first.size(); i < n; ++i)
      o[i] = static_cast<T>(f(first.data<T>()[i], rest.template data<T>()[i]...));
  });
  return out;
}

// Uniform random values in [lo, hi) from a fixed seed, as an array of `dtype`.
inline ch::Array random_array(const ch::Shape& shape, ch_dtype dtype, uint32_t seed,
                              double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(ch::detail::shape_size(shape)));
  for (double& x : v) x = dist(gen);
  ch::Array a = ch::Array::empty(shape, dtype);
  a.write(v);
  return a;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace ch_test
