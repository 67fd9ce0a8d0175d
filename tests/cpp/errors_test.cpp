// Library failures surface as ch::Error with the library's status and message.
#include "test_util.h"

namespace {

using ch::Array;
using ch_test::contains;

TEST(Errors, MismatchedShapesInAdd) {
  ch::Variable a(Array::ones({2, 3}));
  ch::Variable b(Array::ones({4}));
  try {
    ch::Variable c = a + b;
    FAIL() << "(2, 3) + (4,) must not broadcast";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_SHAPE);
    EXPECT_STREQ(e.status_name(), "CH_ERR_SHAPE");
    EXPECT_FALSE(std::string(e.what()).empty());
    EXPECT_EQ(std::string(e.what()), ch_error_message());
  }
}

TEST(Errors, Dtypes) {
  ch::Variable a(Array::ones({2}, CH_FLOAT32));
  ch::Variable b(Array::ones({2}, CH_FLOAT64));
  try {
    (void)(a * b);
    FAIL() << "float32 * float64 must fail";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DTYPE);
  }
  Array f = Array::ones({2});
  try {
    (void)f.data<double>();
    FAIL() << "data<double>() of a float32 array must fail";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DTYPE);
    EXPECT_TRUE(contains(e.what(), "float32")) << e.what();
  }
  // to_vector converts.
  EXPECT_EQ(Array(std::vector<int32_t>{1, 2}, {2}).to_vector<double>(),
            (std::vector<double>{1, 2}));
}

TEST(Errors, GraphMisuse) {
  // backward from a variable with several elements and no initial error
  ch::Variable x(Array::ones({3}));
  ch::Variable y = x * 2;
  try {
    y.backward();
    FAIL() << "backward without an initial error must fail";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_GRAPH);
  }
  // mixing volatile and non-volatile inputs
  ch::Variable v(Array::ones({3}), /*is_volatile=*/true);
  EXPECT_THROW((void)(x + v), ch::Error);
}

TEST(Errors, EmptyHandlesAndBadConstruction) {
  try {
    ch::Variable v{Array()};
    FAIL() << "a variable of an empty array must fail";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_NULL_HANDLE);
  }
  try {
    Array a(std::vector<float>{1, 2, 3}, {2, 2});
    FAIL() << "3 values for shape (2, 2) must fail";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_SHAPE);
  }
  Array empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.size(), 0);
  EXPECT_THROW(empty.copy(), ch::Error);
  EXPECT_THROW(ch::Variable().backward(), ch::Error);
  EXPECT_THROW(Array::ones({2}).reshape({3}), ch::Error);
}

TEST(Errors, ArrayBasics) {
  Array a(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.dtype(), CH_FLOAT64);
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.size(), 6);
  EXPECT_EQ(a.nbytes(), 48u);
  EXPECT_TRUE(a.on_cpu());
  EXPECT_EQ(a.at(4), 5);
  Array r = a.reshape({3, 2});
  EXPECT_EQ(r.raw_data(), a.raw_data());  // shares memory
  Array c = a.copy();
  EXPECT_NE(c.raw_data(), a.raw_data());
  c.fill(7);
  EXPECT_EQ(c.to_vector<double>(), std::vector<double>(6, 7));
  EXPECT_EQ(a.at(0), 1);
  a.write(std::vector<int>{6, 5, 4, 3, 2, 1});
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(Array::scalar(2.5, CH_FLOAT64).item(), 2.5);
  EXPECT_EQ(Array::scalar(2.5).shape(), ch::Shape{});
  EXPECT_EQ(Array(std::vector<int32_t>{4, 5}).shape(), ch::Shape{2});
  Array from = Array::from<double>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(from.dtype(), CH_FLOAT64);
  EXPECT_EQ(from.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  std::ostringstream os;
  os << Array(std::vector<float>{1, 2}, {1, 2});
  EXPECT_EQ(os.str(), "array(float32, (1, 2), [1, 2])");

  float buffer[3] = {1, 2, 3};
  Array w = Array::wrap(buffer, CH_FLOAT32, {3});
  EXPECT_EQ(w.raw_data(), static_cast<void*>(buffer));
  buffer[1] = 20;
  EXPECT_EQ(w.at(1), 20);
}

}  // namespace
