// ch_array through the C API (array.h): copies and zero-copy wraps, getters,
// 0-d and empty arrays, shape validation, read/write, reshape, and the
// caching host allocator's statistics.
#include <cstring>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class Arrays : public CapiTest {};

TEST_F(Arrays, DtypeHelpers) {
  EXPECT_EQ(ch_dtype_size(CH_FLOAT32), 4u);
  EXPECT_EQ(ch_dtype_size(CH_FLOAT64), 8u);
  EXPECT_EQ(ch_dtype_size(CH_INT32), 4u);
  EXPECT_EQ(ch_dtype_size(17), 0u);
  EXPECT_STREQ(ch_dtype_name(CH_FLOAT32), "float32");
  EXPECT_STREQ(ch_dtype_name(CH_FLOAT64), "float64");
  EXPECT_STREQ(ch_dtype_name(CH_INT32), "int32");
  EXPECT_STREQ(ch_dtype_name(-3), "unknown");
  ch_device d = ch_device_cpu();
  EXPECT_EQ(d.type, CH_DEVICE_CPU);
  EXPECT_EQ(d.index, 0);
}

TEST_F(Arrays, NewCopiesTheSource) {
  float src[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[] = {2, 3};
  Arr a;
  ASSERT_CH_OK(ch_array_new(a.out(), CH_FLOAT32, shape, 2, src, cpu()));
  EXPECT_NE(ch_array_data(a), static_cast<void*>(src));
  src[0] = 100;  // modifying the source afterwards does not change the array
  EXPECT_TRUE(AllClose(values(a), {1, 2, 3, 4, 5, 6}, 0, 0));
  shape[0] = 7;  // nor does modifying the shape buffer
  EXPECT_EQ(shape_of(a), (std::vector<int64_t>{2, 3}));
  // Getters.
  EXPECT_EQ(ch_array_dtype(a), CH_FLOAT32);
  EXPECT_EQ(ch_array_ndim(a), 2);
  EXPECT_EQ(ch_array_size(a), 6);
  EXPECT_EQ(ch_array_nbytes(a), 24u);
  EXPECT_EQ(ch_array_device(a).type, CH_DEVICE_CPU);
  EXPECT_EQ(ch_array_device(a).index, 0);
  // NULL data is refused when there are elements to copy.
  Arr b;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_array_new(b.out(), CH_FLOAT32, shape, 2, nullptr, cpu()));
}

TEST_F(Arrays, AllDtypes) {
  int64_t shape[] = {3};
  double d[3] = {0.5, -1.25, 1e300};
  int32_t i[3] = {-7, 0, 2147483647};
  Arr a, b;
  ASSERT_CH_OK(ch_array_new(a.out(), CH_FLOAT64, shape, 1, d, cpu()));
  ASSERT_CH_OK(ch_array_new(b.out(), CH_INT32, shape, 1, i, cpu()));
  EXPECT_TRUE(AllClose(values(a), {0.5, -1.25, 1e300}, 0, 0));
  EXPECT_TRUE(AllClose(values(b), {-7, 0, 2147483647}, 0, 0));
  EXPECT_EQ(ch_array_nbytes(a), 24u);
  EXPECT_EQ(ch_array_nbytes(b), 12u);
  Arr c;
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_array_new(c.out(), 3, shape, 1, d, cpu()));
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_array_new_empty(c.out(), -1, shape, 1, cpu()));
  Arr f = full(CH_INT32, {2}, 3.0);
  EXPECT_TRUE(AllClose(values(f), {3, 3}, 0, 0));
}

struct WrapCounter {
  int calls = 0;
  void* data = nullptr;
};
void wrap_release(void* data, void* user_data) {
  auto* c = static_cast<WrapCounter*>(user_data);
  c->calls++;
  c->data = data;
}

TEST_F(Arrays, WrapIsZeroCopyAndReleasesOnce) {
  float buffer[4] = {1, 2, 3, 4};
  int64_t shape[] = {4};
  WrapCounter counter;
  Arr a;
  ASSERT_CH_OK(ch_array_wrap(a.out(), CH_FLOAT32, shape, 1, buffer, cpu(), wrap_release, &counter));
  EXPECT_EQ(ch_array_data(a), static_cast<void*>(buffer));
  buffer[2] = 30;  // the array sees the external buffer
  EXPECT_TRUE(AllClose(values(a), {1, 2, 30, 4}, 0, 0));
  // The last reference is a variable holding it, then an op's output view.
  Var x = make_var(a);
  ch_array* extra = ch_array_retain(a);
  a.reset();
  EXPECT_EQ(counter.calls, 0);
  ASSERT_CH_OK(ch_array_release(extra));
  EXPECT_EQ(counter.calls, 0) << "the variable still holds the buffer";
  Var y;  // identity shares its input's data
  ASSERT_CH_OK(ch_functions_identity(y.out(), x));
  x.reset();
  EXPECT_EQ(counter.calls, 0) << "the graph (y's creator's input) still holds it";
  y.reset();
  EXPECT_EQ(counter.calls, 1);
  EXPECT_EQ(counter.data, static_cast<void*>(buffer));
}

TEST_F(Arrays, WrapWithoutReleaseAndFailedWrap) {
  double buffer[2] = {1, 2};
  int64_t shape[] = {2};
  Arr a;
  ASSERT_CH_OK(ch_array_wrap(a.out(), CH_FLOAT64, shape, 1, buffer, cpu(), nullptr, nullptr));
  EXPECT_EQ(ch_array_data(a), static_cast<void*>(buffer));
  a.reset();
  // array.h: "On failure `release` is NOT called."
  WrapCounter counter;
  int64_t bad[] = {-2};
  EXPECT_CH_ERR(CH_ERR_SHAPE,
                ch_array_wrap(a.out(), CH_FLOAT64, bad, 1, buffer, cpu(), wrap_release, &counter));
  EXPECT_CH_ERR(CH_ERR_DTYPE,
                ch_array_wrap(a.out(), 9, shape, 1, buffer, cpu(), wrap_release, &counter));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_wrap(a.out(), CH_FLOAT64, shape, 1, nullptr,
                                                       cpu(), wrap_release, &counter));
  EXPECT_EQ(counter.calls, 0);
  EXPECT_EQ(a.get(), nullptr);
}

TEST_F(Arrays, ZeroDimAndEmptyArrays) {
  float v = 2.5f;
  Arr s;
  ASSERT_CH_OK(ch_array_new(s.out(), CH_FLOAT32, nullptr, 0, &v, cpu()));
  EXPECT_EQ(ch_array_ndim(s), 0);
  EXPECT_EQ(ch_array_size(s), 1);
  EXPECT_EQ(ch_array_nbytes(s), 4u);
  EXPECT_TRUE(AllClose(values(s), {2.5}, 0, 0));
  Var x = make_var(s);
  EXPECT_EQ(ch_variable_size(x), 1);
  Var y;
  ASSERT_CH_OK(ch_functions_mul(y.out(), x, x));
  ASSERT_CH_OK(ch_variable_backward(y, 0));  // one element: implicit ones
  EXPECT_TRUE(AllClose(grad_of(x), {5}, 0, 0));
  Arr g;
  ASSERT_CH_OK(ch_variable_grad(g.out(), x));
  EXPECT_EQ(ch_array_ndim(g), 0);

  int64_t shape[] = {0, 3};
  Arr e;
  ASSERT_CH_OK(ch_array_new(e.out(), CH_FLOAT32, shape, 2, nullptr, cpu()));
  EXPECT_EQ(ch_array_size(e), 0);
  EXPECT_EQ(ch_array_nbytes(e), 0u);
  EXPECT_EQ(shape_of(e), (std::vector<int64_t>{0, 3}));
  EXPECT_CH_OK(ch_array_read(e, nullptr, 0));
  double d = 0;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_get(&d, e, 0));
}

TEST_F(Arrays, ShapeValidation) {
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  Arr a;
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_new_empty(a.out(), CH_FLOAT32, nine, 9, cpu()));
  EXPECT_TRUE(contains(ch_error_message(), "9")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_SHAPE,
                ch_array_new_full(a.out(), CH_FLOAT32, nine, CH_MAX_NDIM + 1, 0.0, cpu()));
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_new_empty(a.out(), CH_FLOAT32, nine, -1, cpu()));
  // Exactly CH_MAX_NDIM is fine.
  ASSERT_CH_OK(ch_array_new_full(a.out(), CH_FLOAT32, nine, CH_MAX_NDIM, 1.0, cpu()));
  EXPECT_EQ(ch_array_ndim(a), CH_MAX_NDIM);
  int64_t negative[] = {2, -3};
  Arr b;
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_new_empty(b.out(), CH_FLOAT32, negative, 2, cpu()));
  EXPECT_TRUE(contains(ch_error_message(), "-3")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_array_new_empty(b.out(), CH_FLOAT32, nullptr, 2, cpu()));
  EXPECT_EQ(b.get(), nullptr);
}

TEST_F(Arrays, HugeShapesAreRefusedNotWrapped) {
  // Shapes whose element count or byte size overflows 64 bits must be
  // refused with an error (never wrapped to a small allocation and then
  // filled past its end). Run in a child process: a crash fails only this test.
  // LIBRARY BUG CANDIDATE (reported): Shape::size() and Array::nbytes()
  // multiply without overflow checks, so {2^62} float64 (2^65 bytes) wraps to
  // a 0-byte allocation that ch_array_new_full then fills.
  EXPECT_NO_CRASH({
    const int64_t big = int64_t{1} << 62;
    struct Case {
      ch_dtype dtype;
      std::vector<int64_t> shape;
    };
    for (const Case& c : {Case{CH_FLOAT64, {big}}, Case{CH_FLOAT32, {big, 4}},
                          Case{CH_FLOAT32, {int64_t{1} << 40, int64_t{1} << 30}},
                          Case{CH_INT32, {big, big, big}}}) {
      ch_array* a = nullptr;
      ch_status st = ch_array_new_full(&a, c.dtype, c.shape.data(),
                                       static_cast<int32_t>(c.shape.size()), 1.0, ch_device_cpu());
      EXPECT_NE(st, CH_OK) << "shape of " << c.shape.size() << " extents starting " << c.shape[0];
      EXPECT_EQ(a, nullptr);
      ch_array_release(a);
      st = ch_array_new_empty(&a, c.dtype, c.shape.data(), static_cast<int32_t>(c.shape.size()),
                              ch_device_cpu());
      EXPECT_NE(st, CH_OK);
      ch_array_release(a);
    }
  });
}

TEST_F(Arrays, ReadWriteFillGet) {
  Arr a = f64({2, 2}, {1, 2, 3, 4});
  double out[4] = {};
  ASSERT_CH_OK(ch_array_read(a, out, sizeof out));
  EXPECT_EQ(out[3], 4);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_read(a, out, sizeof out - 8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_read(a, out, sizeof out + 8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_read(a, nullptr, sizeof out));
  double in[4] = {9, 8, 7, 6};
  ASSERT_CH_OK(ch_array_write(a, in, sizeof in));
  EXPECT_TRUE(AllClose(values(a), {9, 8, 7, 6}, 0, 0));
  in[0] = 0;  // write copied
  EXPECT_TRUE(AllClose(values(a), {9, 8, 7, 6}, 0, 0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_write(a, in, 3));
  EXPECT_TRUE(AllClose(values(a), {9, 8, 7, 6}, 0, 0)) << "a failed write changes nothing";
  ASSERT_CH_OK(ch_array_fill(a, -0.5));
  EXPECT_TRUE(AllClose(values(a), {-0.5, -0.5, -0.5, -0.5}, 0, 0));
  double v = 0;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_get(&v, a, 4));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_get(&v, a, -1));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_get(nullptr, a, 0));
}

TEST_F(Arrays, CopyAndReshape) {
  Arr a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Arr c;
  ASSERT_CH_OK(ch_array_copy(c.out(), a));
  EXPECT_NE(ch_array_data(c), ch_array_data(a)) << "deep copy";
  ASSERT_CH_OK(ch_array_fill(a, 0));
  EXPECT_TRUE(AllClose(values(c), {1, 2, 3, 4, 5, 6}, 0, 0));

  int64_t s[] = {3, 2};
  Arr r;
  ASSERT_CH_OK(ch_array_reshape(r.out(), c, s, 2));
  EXPECT_EQ(ch_array_data(r), ch_array_data(c)) << "reshape shares memory";
  EXPECT_EQ(shape_of(r), (std::vector<int64_t>{3, 2}));
  c.reset();  // the reshaped array keeps the memory alive
  EXPECT_TRUE(AllClose(values(r), {1, 2, 3, 4, 5, 6}, 0, 0));
  int64_t bad[] = {4, 2};
  Arr r2;
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_reshape(r2.out(), r, bad, 2));
  EXPECT_TRUE(contains(ch_error_message(), "(4, 2)")) << ch_error_message();
}

TEST_F(Arrays, EngineArraysAreAligned) {
  // The caching allocator hands out 64-byte aligned blocks (allocator.h);
  // callbacks may rely on natural alignment at least.
  for (int64_t n : {1, 3, 17, 1000}) {
    Arr a = full(CH_FLOAT64, {n}, 0.0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ch_array_data(a)) % alignof(double), 0u);
  }
}

TEST_F(Arrays, CachingAllocatorReusesBlocks) {
  // After a warm-up iteration, creating and freeing same-sized temporaries
  // is served from the cache: no new cache misses.
  int64_t shape[] = {1000};
  ch_memory_stats before{}, after{};
  {
    Arr warm;
    ASSERT_CH_OK(ch_array_new_full(warm.out(), CH_FLOAT32, shape, 1, 0.0, cpu()));
  }
  ASSERT_CH_OK(ch_memory_stats_get(&before, cpu()));
  for (int i = 0; i < 100; ++i) {
    Arr t;
    ASSERT_CH_OK(ch_array_new_full(t.out(), CH_FLOAT32, shape, 1, i, cpu()));
  }
  ASSERT_CH_OK(ch_memory_stats_get(&after, cpu()));
  EXPECT_EQ(after.cache_misses, before.cache_misses);
  EXPECT_EQ(after.allocations, before.allocations + 100);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.peak_bytes_in_use, after.bytes_in_use);
  EXPECT_GE(after.bytes_cached, 4000);
}

TEST_F(Arrays, TrainingLoopIsServedFromTheCache) {
  // A forward/backward iteration repeated on same-shaped data reaches the
  // system allocator only in the first (warm-up) iteration.
  auto iteration = [](int i) {
    Var x = var_f32({64, 32}, std::vector<double>(64 * 32, 0.01 * i));
    Var w = var_f32({32}, std::vector<double>(32, 0.5));
    Var xw, e, s;
    EXPECT_CH_OK(ch_functions_mul(xw.out(), x, w));
    EXPECT_CH_OK(ch_functions_exp(e.out(), xw));
    EXPECT_CH_OK(ch_functions_sum(s.out(), e));
    EXPECT_CH_OK(ch_variable_backward(s, 0));
    EXPECT_EQ(grad_of(w).size(), 32u);
  };
  iteration(0);
  iteration(1);
  ch_memory_stats before{}, after{};
  ASSERT_CH_OK(ch_memory_stats_get(&before, cpu()));
  for (int i = 2; i < 12; ++i) iteration(i);
  ASSERT_CH_OK(ch_memory_stats_get(&after, cpu()));
  EXPECT_EQ(after.cache_misses, before.cache_misses);
  EXPECT_GT(after.allocations, before.allocations);
}

TEST_F(Arrays, EmptyCache) {
  int64_t shape[] = {4096};
  { Arr t = full(CH_FLOAT64, {4096}, 1.0); }
  ch_memory_stats s{};
  ASSERT_CH_OK(ch_memory_stats_get(&s, cpu()));
  EXPECT_GT(s.bytes_cached, 0);
  ASSERT_CH_OK(ch_memory_empty_cache(cpu()));
  ASSERT_CH_OK(ch_memory_stats_get(&s, cpu()));
  EXPECT_EQ(s.bytes_cached, 0);
  // The next allocation of that size misses the (now empty) cache.
  int64_t misses = s.cache_misses;
  Arr t;
  ASSERT_CH_OK(ch_array_new_empty(t.out(), CH_FLOAT64, shape, 1, cpu()));
  ASSERT_CH_OK(ch_memory_stats_get(&s, cpu()));
  EXPECT_EQ(s.cache_misses, misses + 1);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_memory_stats_get(nullptr, cpu()));
}

}  // namespace
