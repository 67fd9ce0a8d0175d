// Shared helpers for the C API tests (tests/capi/): status assertions, small
// RAII owners for C handles, array constructors and value readers, and a
// fixture that checks every test gives back all the handles it took.
//
// These tests exercise the public C ABI only (<ch/ch.h>); they deliberately do
// not use the C++ wrapper <ch/ch.hpp>.
#pragma once

#include <ch/ch.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

// ---- status assertions ---------------------------------------------------

// The status must be CH_OK; on failure print the library's message.
#define ASSERT_CH_OK(call)                                                        \
  do {                                                                            \
    ch_status ch_st_ = (call);                                                    \
    ASSERT_EQ(ch_st_, CH_OK) << #call << " -> " << ch_status_name(ch_st_) << ": " \
                             << ch_error_message();                               \
  } while (0)
#define EXPECT_CH_OK(call)                                                        \
  do {                                                                            \
    ch_status ch_st_ = (call);                                                    \
    EXPECT_EQ(ch_st_, CH_OK) << #call << " -> " << ch_status_name(ch_st_) << ": " \
                             << ch_error_message();                               \
  } while (0)
// The status must be `code`; also checks that ch_error_status() agrees and the
// message is not empty (every failure must say what was wrong).
#define EXPECT_CH_ERR(code, call)                                                   \
  do {                                                                              \
    ch_status ch_st_ = (call);                                                      \
    EXPECT_EQ(ch_st_, (code)) << #call << " -> " << ch_status_name(ch_st_) << ": "  \
                              << ch_error_message();                                \
    if (ch_st_ != CH_OK) {                                                          \
      EXPECT_EQ(ch_error_status(), ch_st_) << #call;                                \
      EXPECT_STRNE(ch_error_message(), "") << #call << " failed without a message"; \
    }                                                                               \
  } while (0)

// Run a body in a forked child process (a gtest death test): a crash or
// a sanitizer abort inside it fails this test with the child's stderr, while
// the rest of the suite keeps running. Failed expectations inside the child
// make it exit with status 1.
// Usage: EXPECT_NO_CRASH({ ...body... }); the body is a lambda capturing by
// reference.
#define EXPECT_NO_CRASH(...)                                         \
  do {                                                               \
    auto ch_no_crash_body_ = [&]() __VA_ARGS__;                      \
    EXPECT_EXIT((ch_no_crash_body_(), std::fflush(nullptr),          \
                 std::_Exit(::testing::Test::HasFailure() ? 1 : 0)), \
                ::testing::ExitedWithCode(0), "");                   \
  } while (0)

namespace capi_test {

// ---- RAII owners -----------------------------------------------------------

// Owns one reference to a C handle; releases it on destruction.
template <typename T, ch_status (*Release)(T*)>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T* p) : p_(p) {}
  ~Ref() { reset(); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : p_(o.release()) {}
  Ref& operator=(Ref&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }

  T* get() const { return p_; }
  operator T*() const { return p_; }  // pass straight to C calls
  explicit operator bool() const { return p_ != nullptr; }
  // For C out-parameters: drops the current reference first.
  T** out() {
    reset();
    return &p_;
  }
  T* release() {
    T* p = p_;
    p_ = nullptr;
    return p;
  }
  void reset(T* p = nullptr) {
    if (p_) {
      ch_status st = Release(p_);
      EXPECT_EQ(st, CH_OK) << "release failed: " << ch_error_message();
    }
    p_ = p;
  }

 private:
  T* p_ = nullptr;
};

using Arr = Ref<ch_array, ch_array_release>;
using Var = Ref<ch_variable, ch_variable_release>;
using Fn = Ref<ch_function, ch_function_release>;

// ---- arrays ----------------------------------------------------------------

inline ch_device cpu() { return ch_device_cpu(); }

// New array of `dtype` from double values (converted), with `shape`.
Arr make_array(ch_dtype dtype, std::vector<int64_t> shape, const std::vector<double>& values);
inline Arr f32(std::vector<int64_t> shape, const std::vector<double>& values) {
  return make_array(CH_FLOAT32, std::move(shape), values);
}
inline Arr f64(std::vector<int64_t> shape, const std::vector<double>& values) {
  return make_array(CH_FLOAT64, std::move(shape), values);
}
Arr full(ch_dtype dtype, std::vector<int64_t> shape, double value);

// Every element as double (empty for a NULL/invalid handle).
std::vector<double> values(const ch_array* a);
std::vector<int64_t> shape_of(const ch_array* a);

// ---- variables -------------------------------------------------------------

Var make_var(ch_array* data, bool is_volatile = false);
Var var_f32(std::vector<int64_t> shape, const std::vector<double>& values,
            bool is_volatile = false);
Var var_f64(std::vector<int64_t> shape, const std::vector<double>& values,
            bool is_volatile = false);

std::vector<double> data_of(const ch_variable* v);
// The gradient's values; empty when the variable has no grad.
std::vector<double> grad_of(const ch_variable* v);
bool has_grad(const ch_variable* v);
// The creator's ch_function_name, or "" for a root.
std::string creator_name(const ch_variable* v);
bool has_creator(const ch_variable* v);

// Data pointer of a variable's data array (to compare memory identity).
const void* data_ptr(const ch_variable* v);

// ---- comparisons -------------------------------------------------------------

// Elementwise |a - b| <= atol + rtol * |b|; produces a readable failure.
::testing::AssertionResult AllClose(const std::vector<double>& actual,
                                    const std::vector<double>& expected, double atol = 1e-6,
                                    double rtol = 1e-6);

bool contains(const std::string& haystack, const std::string& needle);

// ---- fixture ---------------------------------------------------------------

// Records the live handle counts before the test and checks that every
// handle the test created was released by its end.
class CapiTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  int64_t baseline_handles_ = 0;
};

}  // namespace capi_test
