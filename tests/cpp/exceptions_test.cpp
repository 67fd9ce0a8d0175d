// C++ exceptions thrown inside a user function never unwind through the C library: they
// travel as the error's payload and reach the caller of apply()/backward() with their
// original type and message; the process and the graph survive.
#include <stdexcept>
#include <thread>

#include "test_util.h"

namespace {

using ch::Array;
using ch_test::contains;
using ch_test::elementwise;
using ch_test::expect_values;
using Arrays = std::vector<ch::Array>;

struct BoomError : std::runtime_error {
  BoomError(const std::string& what, int code) : std::runtime_error(what), code(code) {}
  int code;
};

// y = 3x; throws on demand in forward or backward.
class Flaky : public ch::FunctionBase {
 public:
  Flaky() : FunctionBase("Flaky") {}
  bool fail_forward = false;
  bool fail_backward = true;
  bool throw_int = false;
  bool bad_shape_in_backward = false;

  Arrays forward(const Arrays& in) override {
    if (fail_forward) throw BoomError("boom in forward", 1);
    return {elementwise([](auto x) { return 3 * x; }, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    if (throw_int) throw 42;
    if (fail_backward) throw BoomError("boom in backward", 2);
    if (bad_shape_in_backward)  // a ch::Error raised by ch.hpp itself inside the callback
      return {Array(std::vector<float>{1, 2, 3}, {2, 2})};
    (void)in;
    return {elementwise([](auto g) { return 3 * g; }, gout[0])};
  }
};

size_t live_payloads() {
  ch::detail::PayloadRegistry& r = ch::detail::payload_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.size();
}

TEST(Exceptions, BackwardExceptionKeepsTypeAndMessageThenGraphWorks) {
  Flaky f;
  ch::Variable x(Array(std::vector<float>{1, 2}, {2}));
  ch::Variable y = ch::exp(f(x) * 0.0) * 2;  // y = 2 exp(0 * 3x) = 2; dy/dx = 0
  ch::Variable s = ch::sum(f(x));            // s = 3 (x0 + x1); ds/dx = 3
  expect_values(s.data(), {}, {9});
  try {
    s.backward();
    FAIL() << "backward must throw";
  } catch (const BoomError& e) {
    EXPECT_STREQ(e.what(), "boom in backward");
    EXPECT_EQ(e.code, 2);
  }
  // The library's message names the function and the phase, with the original message.
  std::string msg = ch_error_message();
  EXPECT_TRUE(contains(msg, "Flaky")) << msg;
  EXPECT_TRUE(contains(msg, "backward")) << msg;
  EXPECT_TRUE(contains(msg, "boom in backward")) << msg;
  EXPECT_EQ(live_payloads(), 0u);  // the payload was taken and freed

  f.fail_backward = false;
  s.backward();  // same graph, now succeeding
  expect_values(x.grad(), {2}, {3, 3});
  y.set_grad(Array::ones({2}));
  y.backward();
  expect_values(x.grad(), {2}, {0, 0});
}

TEST(Exceptions, ForwardExceptionReachesApply) {
  Flaky f;
  f.fail_forward = true;
  ch::Variable x(Array(std::vector<float>{1}, {1}));
  EXPECT_THROW(
      {
        try {
          f(x);
        } catch (const BoomError& e) {
          EXPECT_STREQ(e.what(), "boom in forward");
          EXPECT_EQ(e.code, 1);
          throw;
        }
      },
      BoomError);
  f.fail_forward = false;
  expect_values(f(x).data(), {1}, {3});
}

TEST(Exceptions, NonStandardExceptionTypeSurvives) {
  Flaky f;
  f.throw_int = true;
  ch::Variable x(Array(std::vector<float>{1}, {1}));
  ch::Variable y = f(x);
  try {
    y.backward();
    FAIL() << "backward must throw";
  } catch (int v) {
    EXPECT_EQ(v, 42);
  }
  EXPECT_EQ(ch_error_status(), CH_ERR_CALLBACK);
}

TEST(Exceptions, ChErrorInsideCallbackKeepsItsStatus) {
  Flaky f;
  f.fail_backward = false;
  f.bad_shape_in_backward = true;
  ch::Variable x(Array(std::vector<float>{1, 2}, {2}));
  ch::Variable y = f(x);
  y.set_grad(Array::ones({2}));
  try {
    y.backward();
    FAIL() << "backward must throw";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_SHAPE);
    EXPECT_TRUE(contains(e.what(), "3 elements")) << e.what();
  }
}

TEST(Exceptions, ExceptionsInsideGradientCheckCallbacks) {
  Flaky f;  // backward throws
  EXPECT_THROW(ch::check_backward(f, {Array(std::vector<double>{1, 2}, {2})}), BoomError);
  EXPECT_THROW(ch::check_backward(
                   [](const std::vector<ch::Variable>&) -> std::vector<ch::Variable> {
                     throw std::logic_error("graph builder failed");
                   },
                   {Array(std::vector<double>{1}, {1})}, {Array(std::vector<double>{1}, {1})}),
               std::logic_error);
  Array x(std::vector<double>{1, 2}, {2});
  try {
    ch::numerical_grad([]() -> Arrays { throw std::out_of_range("eval failed"); }, {x},
                       {Array::ones_like(x)});
    FAIL() << "numerical_grad must throw";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "eval failed");
  }
  expect_values(x, {2}, {1, 2});  // inputs restored after the failure
  EXPECT_EQ(live_payloads(), 0u);
}

TEST(Exceptions, EachThreadGetsItsOwnException) {
  // The error state is per thread: a backward failing on another thread rethrows there.
  Flaky f;
  ch::Variable x(Array(std::vector<float>{1}, {1}));
  ch::Variable y = f(x);
  std::string caught;
  std::thread t([&] {
    try {
      y.backward();
    } catch (const BoomError& e) {
      caught = e.what();
    }
  });
  t.join();
  EXPECT_EQ(caught, "boom in backward");
  EXPECT_EQ(live_payloads(), 0u);
}

TEST(Exceptions, DestroyedStackObjectFailsCleanly) {
  ch::Variable x(Array(std::vector<float>{1}, {1}));
  ch::Variable y;
  {
    Flaky f;
    f.fail_backward = false;
    y = f(x);
  }
  try {
    y.backward();
    FAIL() << "backward through a node whose C++ object is gone must throw";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_CALLBACK);
    EXPECT_TRUE(contains(e.what(), "destroyed")) << e.what();
  }
}

}  // namespace
