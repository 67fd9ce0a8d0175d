// RAII: every handle ch.hpp creates is released by its owner; after a scope that creates,
// copies, moves and drops many handles (including failures), the library's live-handle
// count is back where it was.
#include <stdexcept>

#include "test_util.h"

namespace {

using ch::Array;
using Arrays = std::vector<ch::Array>;

class Square : public ch::FunctionBase {
 public:
  Square() : FunctionBase("Square") {
    w_ = Array::ones({2}, CH_FLOAT64);
    gw_ = Array::zeros({2}, CH_FLOAT64);
    add_parameter("unused", w_, gw_);
  }
  bool fail = false;
  Arrays forward(const Arrays& in) override {
    save_for_backward(in[0]);
    return {ch_test::elementwise([](auto x) { return x * x; }, in[0])};
  }
  Arrays backward(const Arrays&, const Arrays&, const Arrays& gout) override {
    if (fail) throw std::runtime_error("fail");
    return {ch_test::elementwise([](auto x, auto g) { return 2 * x * g; }, saved()[0], gout[0])};
  }

 private:
  Array w_, gw_;
};

TEST(Raii, LiveHandlesReturnToBaseline) {
  const int64_t before = ch::debug::live_handles();
  const int64_t arrays_before = ch::debug::live_arrays();
  {
    std::vector<ch::Variable> keep;
    for (int i = 0; i < 50; ++i) {
      Array a(std::vector<double>{double(i), 1}, {2});
      Array copy = a;  // retain
      Array moved = std::move(copy);
      Array assigned;
      assigned = moved;  // retain
      Array& alias = assigned;
      assigned = alias;  // self-assignment is a no-op
      ch::Variable x(a);
      ch::Variable y = ch::sum(x * x - 2 * x + 1);
      y.backward(/*retain_grad=*/i % 2 == 0);
      Array g = x.grad();
      ch::Function c = y.creator();
      std::vector<ch::Variable> ins = c.inputs();
      if (i % 10 == 0) keep.push_back(y);
    }
    EXPECT_GT(ch::debug::live_handles(), before);
    {
      auto f = std::make_shared<Square>();
      ch::Variable x(Array(std::vector<double>{1, 2}, {2}));
      ch::Variable y = ch::sum((*f)(x));
      y.backward();
      std::vector<ch::Parameter> ps = f->parameters();
      ch::check_backward(*f, {Array(std::vector<double>{3, 4}, {2})});
      f->fail = true;
      EXPECT_THROW(y.backward(), std::runtime_error);
      ch::numerical_grad([&] { return Arrays{x.data().copy()}; }, {x.data()},
                         {Array::ones({2}, CH_FLOAT64)});
    }
    EXPECT_THROW(ch::Variable(Array::ones({2})) + ch::Variable(Array::ones({3})), ch::Error);
    keep.clear();
  }
  EXPECT_EQ(ch::debug::live_handles(), before);
  EXPECT_EQ(ch::debug::live_arrays(), arrays_before);
  if (ch::debug::live_handles() != before) ch::debug::report_live_handles();
}

TEST(Raii, ReleaseAndAdoptTransferOwnership) {
  const int64_t before = ch::debug::live_handles();
  {
    Array a = Array::zeros({3});
    ch_array* raw = a.release();
    EXPECT_FALSE(a.valid());
    Array b = Array::adopt(raw);   // takes the reference back
    Array c = Array::borrow(raw);  // retains: two references now
    EXPECT_EQ(c.get(), raw);
    ch::Variable v(b);
    ch::Variable v2 = ch::Variable::borrow(v.get());
    v2.reset();
    EXPECT_FALSE(v2);
  }
  EXPECT_EQ(ch::debug::live_handles(), before);
}

}  // namespace
