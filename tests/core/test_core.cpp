// Internals of src/core/ tested directly (static library + private headers):
// shapes, dtypes, arrays, the caching allocator, the handle table, the graph
// and the backward engine, error state. The public behaviour is covered by
// tests/capi/; this suite pins down the building blocks underneath.
#include <gtest/gtest.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/parallel.h"
#include "capi/error_state.h"
#include "capi/handles.h"
#include "core/allocator.h"
#include "core/array.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/variable.h"
#include "ops/ops.h"

using namespace chainerc;

namespace {

template <typename F>
ch_status status_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return CH_OK;
}

template <typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- Shape -----------------------------------------------------------------------

TEST(CoreShape, ToStringAndSize) {
  EXPECT_EQ(Shape{}.to_string(), "()");
  EXPECT_EQ(Shape({4}).to_string(), "(4,)");  // NumPy's 1-tuple spelling
  EXPECT_EQ(Shape({2, 3}).to_string(), "(2, 3)");
  EXPECT_EQ(Shape{}.size(), 1);
  EXPECT_EQ(Shape({2, 0, 3}).size(), 0);
  EXPECT_EQ(Shape({2, 3, 4}).size(), 24);
  EXPECT_TRUE(Shape({2, 3}) == Shape({2, 3}));
  EXPECT_TRUE(Shape({2, 3}) != Shape({3, 2}));
  EXPECT_TRUE(Shape({1}) != Shape{});
}

TEST(CoreShape, FromCValidates) {
  int64_t dims[9] = {1, 2, 3, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(Shape::from_c(dims, 3, "t").to_string(), "(1, 2, 3)");
  EXPECT_EQ(status_of([&] { Shape::from_c(dims, 9, "t"); }), CH_ERR_SHAPE);
  EXPECT_EQ(status_of([&] { Shape::from_c(dims, -1, "t"); }), CH_ERR_SHAPE);
  EXPECT_EQ(status_of([&] { Shape::from_c(nullptr, 2, "t"); }), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Shape::from_c(nullptr, 0, "t").ndim(), 0);
  int64_t neg[2] = {2, -1};
  std::string msg = message_of([&] { Shape::from_c(neg, 2, "who"); });
  EXPECT_NE(msg.find("who"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-1"), std::string::npos) << msg;
  Shape s;
  for (int i = 0; i < CH_MAX_NDIM; ++i) s.push_back(1);
  EXPECT_EQ(status_of([&] { s.push_back(1); }), CH_ERR_SHAPE);
}

// size() and checked_nbytes() answer the usual shape in one pass and leave
// the rest to an exact walk: both paths must give what the walk alone gave.
TEST(CoreShape, SizeAndBytesAtTheEdges) {
  const int64_t p31 = int64_t{1} << 31, p40 = int64_t{1} << 40, p62 = int64_t{1} << 62;
  EXPECT_EQ(Shape({p40, p40, 0}).size(), 0);  // a zero wins over the overflowing product
  EXPECT_EQ(Shape({0, p40, p40}).size(), 0);
  EXPECT_EQ(Shape({-1, 0}).size(), 0);  // as before: a zero extent is checked first
  EXPECT_EQ(Shape({p62}).size(), p62);
  EXPECT_EQ(Shape({p31, p31}).size(), p62);
  EXPECT_EQ(Shape({3, 5}).checked_nbytes(8, "t"), 120u);
  EXPECT_EQ(Shape{}.checked_nbytes(4, "t"), 4u);
  EXPECT_EQ(Shape({p40, p40, 0}).checked_nbytes(4, "t"), 0u);
  EXPECT_EQ(Shape({p62}).checked_nbytes(1, "t"), static_cast<size_t>(p62));
  for (const Shape& bad : {Shape({-1}), Shape({2, -3}), Shape({-1, -1}), Shape({INT64_MIN})})
    EXPECT_EQ(status_of([&] { bad.size(); }), CH_ERR_SHAPE) << bad.to_string();
  EXPECT_EQ(status_of([] { Shape({p31, p31, 2}).size(); }), CH_ERR_SHAPE);
  EXPECT_EQ(status_of([] { Shape({p62}).checked_nbytes(2, "t"); }), CH_ERR_SHAPE);
  EXPECT_EQ(status_of([] { Shape({p31, p31, 2}).checked_nbytes(1, "t"); }), CH_ERR_SHAPE);
  std::string msg = message_of([] { Shape({0, -1}).checked_nbytes(4, "who"); });
  EXPECT_NE(msg.find("who"), std::string::npos) << msg;  // negative, though there is a zero
  EXPECT_NE(msg.find("negative extent -1"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { Shape({-1, -1}).checked_nbytes(4, "t"); }), CH_ERR_SHAPE);
}
TEST(CoreShape, Broadcasting) {
  // NumPy's rules (numpy.broadcast_shapes).
  EXPECT_EQ(broadcast_shapes(Shape({2, 3}), Shape({3}), "t"), Shape({2, 3}));
  EXPECT_EQ(broadcast_shapes(Shape({2, 1}), Shape({1, 3}), "t"), Shape({2, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape({4, 5}), "t"), Shape({4, 5}));
  EXPECT_EQ(broadcast_shapes(Shape({5, 1, 4}), Shape({3, 1}), "t"), Shape({5, 3, 4}));
  EXPECT_EQ(broadcast_shapes(Shape({0}), Shape({1}), "t"), Shape({0}));
  std::string msg = message_of([] { broadcast_shapes(Shape({2, 3}), Shape({4}), "add"); });
  EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { broadcast_shapes(Shape({2}), Shape({3}), "t"); }), CH_ERR_SHAPE);
}

TEST(CoreShape, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(-1, 3, "t"), 2);
  EXPECT_EQ(normalize_axis(0, 3, "t"), 0);
  EXPECT_EQ(normalize_axis(-3, 3, "t"), 0);
  EXPECT_EQ(status_of([] { normalize_axis(3, 3, "t"); }), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([] { normalize_axis(-4, 3, "t"); }), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([] { normalize_axis(0, 0, "t"); }), CH_ERR_INVALID_ARGUMENT);
}

// ---- dtype / Device --------------------------------------------------------------------

TEST(CoreDtype, NamesSizesDispatch) {
  EXPECT_STREQ(dtype_name(DType::Float32), "float32");
  EXPECT_EQ(dtype_size(DType::Float64), 8u);
  EXPECT_TRUE(is_floating(DType::Float64));
  EXPECT_FALSE(is_floating(DType::Int32));
  EXPECT_FALSE(is_valid_dtype(3));
  EXPECT_EQ(dispatch_floating(DType::Float32, "t", [](auto v) { return sizeof(v); }), 4u);
  EXPECT_EQ(dispatch_floating(DType::Float64, "t", [](auto v) { return sizeof(v); }), 8u);
  EXPECT_EQ(
      status_of([] { dispatch_floating(DType::Int32, "t", [](auto v) { return sizeof(v); }); }),
      CH_ERR_DTYPE);
  EXPECT_EQ(Device{}.to_string(), "cpu");
  EXPECT_EQ((Device{CH_DEVICE_CUDA, 1}).to_string(), "cuda:1");
  EXPECT_TRUE(Device{} == Device::from_c(ch_device{CH_DEVICE_CPU, 0}));
}

// ---- Array -------------------------------------------------------------------------------

TEST(CoreArray, FullCopyReshapeGet) {
  Array a = Array::full(DType::Float32, Shape({2, 3}), 1.5);
  EXPECT_TRUE(a.defined());
  EXPECT_EQ(a.nbytes(), 24u);
  EXPECT_EQ(a.get(5), 1.5);
  EXPECT_EQ(status_of([&] { a.get(6); }), CH_ERR_INVALID_ARGUMENT);
  Array b = a.copy();
  EXPECT_FALSE(b.shares_memory_with(a));
  b.fill(2);
  EXPECT_EQ(a.get(0), 1.5);
  Array r = a.reshaped(Shape({3, 2}));
  EXPECT_TRUE(r.shares_memory_with(a));
  EXPECT_EQ(status_of([&] { a.reshaped(Shape({4})); }), CH_ERR_SHAPE);
  EXPECT_EQ(a.describe(), "float32 array of shape (2, 3) on cpu");
  Array none;
  EXPECT_FALSE(none.defined());
  EXPECT_EQ(none.raw(), nullptr);
  Array i = Array::full(DType::Int32, Shape({2}), 7.9);
  EXPECT_EQ(i.get(1), 7.0);  // converted like C's double -> int32
}

TEST(CoreArray, WrappedBufferReleasedOnceWithLastCopy) {
  int calls = 0;
  float data[3] = {1, 2, 3};
  {
    Array a(
        Buffer::wrap(
            data, sizeof data, Device{}, [](void*, void* ud) { ++*static_cast<int*>(ud); }, &calls),
        DType::Float32, Shape({3}));
    Array b = a;  // copies share the buffer
    Array c = a.reshaped(Shape({1, 3}));
    EXPECT_EQ(c.raw(), static_cast<void*>(data));
    a = Array();
    b = Array();
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 1);
}

TEST(CoreArray, AllocationOnAMissingDeviceIsRefused) {
  EXPECT_EQ(status_of([] {
              Array::empty(DType::Float32, Shape({2}), Device{CH_DEVICE_CUDA, 1000});
            }),
            CH_ERR_DEVICE);
  EXPECT_EQ(status_of([] {
              Array::empty(DType::Float32, Shape({2}), Device{9, 0});
            }),
            CH_ERR_DEVICE);
}

// ---- allocator ----------------------------------------------------------------------------

TEST(CoreAllocator, SizeClassesReuseAndAlign) {
  host_empty_cache();
  ch_memory_stats s0 = host_memory_stats();
  void* p = host_allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  host_deallocate(p, 1000);
  ch_memory_stats s1 = host_memory_stats();
  EXPECT_EQ(s1.cache_misses, s0.cache_misses + 1);
  EXPECT_GE(s1.bytes_cached, 1000);
  // 1000 and 1020 bytes fall in the same size class (four per power of two:
  // 768, 896, 1024 ... -> 1024), so the block is reused.
  void* q = host_allocate(1020);
  EXPECT_EQ(q, p);
  ch_memory_stats s2 = host_memory_stats();
  EXPECT_EQ(s2.cache_misses, s1.cache_misses);
  EXPECT_EQ(s2.allocations, s1.allocations + 1);
  host_deallocate(q, 1020);
  // A different class misses.
  void* r = host_allocate(5000);
  EXPECT_EQ(host_memory_stats().cache_misses, s2.cache_misses + 1);
  host_deallocate(r, 5000);
  host_empty_cache();
  EXPECT_EQ(host_memory_stats().bytes_cached, 0);
  EXPECT_GE(host_memory_stats().peak_bytes_in_use, 5000);
}

// ---- handles ------------------------------------------------------------------------------

TEST(CoreHandles, KindsGenerationsAndCounts) {
  const int64_t live0 = handle_live_count(0);
  void* h = handle_new(HandleKind::Array,
                       std::make_shared<Array>(Array::zeros(DType::Float32, Shape({1}))));
  EXPECT_EQ(handle_live_count(0), live0 + 1);
  EXPECT_NE(handle_find(h, HandleKind::Array), nullptr);
  EXPECT_EQ(handle_find(h, HandleKind::Variable), nullptr);
  EXPECT_EQ(status_of([&] { handle_get(h, HandleKind::Function, "who", "arg"); }),
            CH_ERR_RELEASED_HANDLE);
  EXPECT_EQ(status_of([&] { handle_get(nullptr, HandleKind::Array, "who", "arg"); }),
            CH_ERR_NULL_HANDLE);
  EXPECT_TRUE(handle_retain(h, HandleKind::Array));
  handle_release(h, HandleKind::Array, "t");
  EXPECT_NE(handle_find(h, HandleKind::Array), nullptr) << "one reference left";
  handle_release(h, HandleKind::Array, "t");
  EXPECT_EQ(handle_find(h, HandleKind::Array), nullptr);
  EXPECT_EQ(handle_live_count(0), live0);
  EXPECT_EQ(status_of([&] { handle_release(h, HandleKind::Array, "t"); }), CH_ERR_RELEASED_HANDLE);
  EXPECT_FALSE(handle_retain(h, HandleKind::Array));
  handle_release(nullptr, HandleKind::Array, "t");  // no-op
}

TEST(CoreHandles, StaleHandleStaysDeadWhileSlotsAreRecycled) {
  // A released handle keeps failing even after many more handles come and go
  // (slots are reused only after a delay, with a new generation).
  void* stale = handle_new(HandleKind::Stream, std::make_shared<int>(1));
  handle_release(stale, HandleKind::Stream, "t");
  for (int i = 0; i < 20000; ++i) {
    void* h = handle_new(HandleKind::Stream, std::make_shared<int>(i));
    EXPECT_NE(h, stale);
    handle_release(h, HandleKind::Stream, "t");
    if (h == stale) break;
  }
  EXPECT_EQ(handle_find(stale, HandleKind::Stream), nullptr);
}

TEST(CoreHandles, ObjectDestroyedOutsideTheTableLock) {
  // The last release destroys the object after the table lock is dropped, so
  // a destructor may create and release handles itself.
  struct Reentrant {
    ~Reentrant() {
      void* h = handle_new(HandleKind::Array, std::make_shared<int>(0));
      handle_release(h, HandleKind::Array, "dtor");
      ran = true;
    }
    bool& ran;
  };
  bool ran = false;
  void* h = handle_new(HandleKind::Function, std::shared_ptr<void>(new Reentrant{ran}, [](void* p) {
                         delete static_cast<Reentrant*>(p);
                       }));
  handle_release(h, HandleKind::Function, "t");
  EXPECT_TRUE(ran);
}

// ---- graph and backward -------------------------------------------------------------------

// y = k * x for a scalar k, as a minimal Function, counting backward calls.
class Scale final : public Function {
 public:
  explicit Scale(double k, std::atomic<int>* calls = nullptr) : k_(k), calls_(calls) {}
  const char* name() const override { return "Scale"; }
  Arrays forward(const Arrays& in) override {
    Array y = Array::empty_like(in[0]);
    for (int64_t i = 0; i < y.size(); ++i) y.data<double>()[i] = k_ * in[0].data<double>()[i];
    return {y};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    if (calls_) ++*calls_;
    Array gx = Array::empty_like(gy[0]);
    for (int64_t i = 0; i < gx.size(); ++i) gx.data<double>()[i] = k_ * gy[0].data<double>()[i];
    return {gx};
  }

 private:
  double k_;
  std::atomic<int>* calls_;
};

// z = a + b (same shapes).
class Plus final : public Function {
 public:
  const char* name() const override { return "Plus"; }
  Arrays forward(const Arrays& in) override {
    Array y = Array::empty_like(in[0]);
    for (int64_t i = 0; i < y.size(); ++i)
      y.data<double>()[i] = in[0].data<double>()[i] + in[1].data<double>()[i];
    return {y};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {gy[0], gy[0]}; }
};

VarPtr scalar(double v, bool vol = false) {
  return std::make_shared<VariableImpl>(Array::full(DType::Float64, Shape({1}), v), vol);
}

TEST(CoreGraph, RanksAndLinks) {
  VarPtr x = scalar(2);
  VarPtr a = apply1(std::make_shared<Scale>(3), {x});
  VarPtr b = apply1(std::make_shared<Scale>(5), {a});
  VarPtr c = apply1(std::make_shared<Plus>(), {a, b});
  EXPECT_EQ(x->rank, 0);
  EXPECT_EQ(a->rank, 1);
  EXPECT_EQ(b->rank, 2);
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->creator->rank, 2);
  EXPECT_EQ(c->creator->inputs.size(), 2u);
  EXPECT_EQ(c->creator->outputs[0].lock(), c);
  EXPECT_TRUE(c->creator->applied);
  // A node cannot be applied twice.
  EXPECT_EQ(status_of([&] { apply_function(c->creator, {x}); }), CH_ERR_GRAPH);
  // c = 3x + 15x -> dc/dx = 18 (hand-derived)
  backward(c, false);
  EXPECT_EQ(x->grad.get(0), 18.0);
  EXPECT_FALSE(a->grad.defined()) << "intermediate grads are freed without retain_grad";
  EXPECT_EQ(c->grad.get(0), 1.0);
}

TEST(CoreGraph, EachNodeRunsOncePerPass) {
  // A diamond where the shared node must wait for both consumers: its
  // backward runs exactly once per pass.
  std::atomic<int> calls{0};
  VarPtr x = scalar(1);
  VarPtr a = apply1(std::make_shared<Scale>(2, &calls), {x});
  VarPtr b = apply1(std::make_shared<Scale>(3), {a});
  VarPtr c = apply1(std::make_shared<Scale>(4), {a});
  VarPtr d = apply1(std::make_shared<Plus>(), {b, c});
  backward(d, true);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(a->grad.get(0), 7.0);
  EXPECT_EQ(x->grad.get(0), 14.0);
  backward(d, true);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(x->grad.get(0), 14.0) << "a root's grad is this pass's, not a sum over passes";
}

TEST(CoreGraph, GradientOfSharedBufferIsNotWrittenInPlace) {
  // Plus passes gy through to both inputs (aliasing); summing into x must
  // allocate instead of writing into the aliased buffer.
  VarPtr x = scalar(1);
  VarPtr y = apply1(std::make_shared<Plus>(), {x, x});
  VarPtr z = apply1(std::make_shared<Plus>(), {y, x});
  Array g = Array::full(DType::Float64, Shape({1}), 1.0);
  z->grad = g;
  backward(z, false);
  EXPECT_EQ(x->grad.get(0), 3.0);
  EXPECT_EQ(g.get(0), 1.0) << "the initial error was modified";
}

// y = x, recording in backward whether the engine handed it the only
// reference to gy (Array::unshared), and where its fresh gx = 2 gy lives.
class Probe final : public Function {
 public:
  explicit Probe(bool fail = false) : fail_(fail) {}
  const char* name() const override { return "Probe"; }
  Arrays forward(const Arrays& in) override { return {in[0].copy()}; }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    gy_unshared = gy[0].unshared();
    if (fail_) fail(CH_ERR_CALLBACK, "Probe: failing as asked");
    Array gx = Array::empty_like(gy[0]);
    for (int64_t i = 0; i < gx.size(); ++i) gx.data<double>()[i] = 2 * gy[0].data<double>()[i];
    gx_memory = gx.raw();
    return {gx};
  }
  bool gy_unshared = false;
  void* gx_memory = nullptr;

 private:
  bool fail_;
};

TEST(CoreGraph, BackwardHandsOverOnlyTheGradientsNothingKeeps) {
  VarPtr x = scalar(1);
  auto inner = std::make_shared<Probe>(), outer = std::make_shared<Probe>();
  VarPtr y = apply1(inner, {x});
  VarPtr z = apply1(outer, {y});
  backward(z, false);
  EXPECT_FALSE(outer->gy_unshared) << "the root keeps its gradient";
  EXPECT_TRUE(inner->gy_unshared) << "y's gradient is dropped after its creator's backward";
  EXPECT_FALSE(y->grad.defined());
  EXPECT_EQ(x->grad.get(0), 4.0);
  backward(z, true);
  EXPECT_FALSE(inner->gy_unshared) << "retain_grad keeps y's gradient";
  EXPECT_EQ(y->grad.get(0), 2.0);
  EXPECT_EQ(x->grad.get(0), 4.0);

  // Plus hands one gradient to both inputs: neither creator holds it alone
  // while the other still waits for it.
  VarPtr a = scalar(1), b = scalar(1);
  auto pa = std::make_shared<Probe>(), pb = std::make_shared<Probe>();
  VarPtr s = apply1(std::make_shared<Plus>(), {apply1(pa, {a}), apply1(pb, {b})});
  backward(apply1(std::make_shared<Scale>(1), {s}), false);  // s not the root: its grad dropped
  EXPECT_NE(pa->gy_unshared, pb->gy_unshared) << "the first of the two shares it, the last not";
  EXPECT_EQ(a->grad.get(0), 2.0);
  EXPECT_EQ(b->grad.get(0), 2.0);
}

TEST(CoreGraph, AFailedBackwardGivesTheGradientBack) {
  VarPtr x = scalar(1);
  VarPtr y = apply1(std::make_shared<Probe>(true), {x});
  VarPtr z = apply1(std::make_shared<Scale>(3), {y});
  EXPECT_EQ(status_of([&] { backward(z, false); }), CH_ERR_CALLBACK);
  ASSERT_TRUE(y->grad.defined()) << "y's gradient went into the failed call and stays y's";
  EXPECT_EQ(y->grad.get(0), 3.0);
  EXPECT_FALSE(x->grad.defined());
}

// relu's backward writes gx over gy where it holds the only reference, and
// into a new array where another gradient shares gy (NumPy: gx = gy (x > 0)).
TEST(CoreGraph, ReluWritesItsGradientOverAnUnsharedOne) {
  const int64_t n = 100000;  // above the parallel grain
  auto signs = [&](int64_t period) {
    Array a = Array::empty(DType::Float64, Shape({n}));
    for (int64_t i = 0; i < n; ++i) a.data<double>()[i] = i % period == 0 ? -1.0 - i : 0.5 + i;
    return std::make_shared<VariableImpl>(a);
  };
  for (bool retain : {false, true}) {
    VarPtr x = signs(3);
    auto probe = std::make_shared<Probe>();
    VarPtr z = apply1(probe, {ops::relu(x)});
    z->grad = Array::full(DType::Float64, Shape({n}), 1.0);
    backward(z, retain);
    for (int64_t i = 0; i < n; i += 999) ASSERT_EQ(x->grad.get(i), i % 3 == 0 ? 0.0 : 2.0) << i;
    EXPECT_EQ(x->grad.raw() == probe->gx_memory, !retain) << "retain_grad " << retain;
    EXPECT_EQ(z->grad.get(0), 1.0);
  }
  VarPtr x1 = signs(2), x2 = signs(5);
  VarPtr s = apply1(std::make_shared<Plus>(), {ops::relu(x1), ops::relu(x2)});
  VarPtr root = apply1(std::make_shared<Scale>(1), {s});  // s not the root: its grad dropped
  root->grad = Array::full(DType::Float64, Shape({n}), 1.0);
  backward(root, false);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(x1->grad.get(i), i % 2 == 0 ? 0.0 : 1.0) << i;
    ASSERT_EQ(x2->grad.get(i), i % 5 == 0 ? 0.0 : 1.0) << i;
  }
}

// relu's forward leaves y to be computed when first read (ops/activation/
// relu.cpp). By then a released input's bytes (its variable's data dropped,
// as variable_handle_destroyed does) are written over and become y's; an
// input still held, or written after relu, keeps its values, and y holds
// relu of what the input was when relu ran (NumPy: maximum(x, 0)).
TEST(CoreGraph, ReluComputesItsOutputOverAReleasedInput) {
  const int64_t n = 100000;  // 800 KB: above relu's deferral threshold
  auto value = [](int64_t i) { return i % 3 == 0 ? -1.0 - i : 0.5 + i; };
  auto layer_output = [&] {  // an intermediate, as a layer's output is
    Array a = Array::empty(DType::Float64, Shape({n}));
    for (int64_t i = 0; i < n; ++i) a.data<double>()[i] = value(i);
    return apply1(std::make_shared<Scale>(1), {std::make_shared<VariableImpl>(a)});
  };
  auto relu_of_value = [&](int64_t i) { return std::max(value(i), 0.0); };
  for (int released = 0; released < 2; ++released) {
    SCOPED_TRACE(released ? "input released" : "input held");
    VarPtr h = layer_output();
    const void* h_memory = h->data.raw();
    const int64_t in_use = host_memory_stats().bytes_in_use;
    VarPtr y = ops::relu(h);
    if (released) h->data = Array::placeholder_like(h->data);
    for (int64_t i = 0; i < n; i += 7) ASSERT_EQ(y->data.get(i), relu_of_value(i)) << i;
    EXPECT_EQ(y->data.raw() == h_memory, released == 1);
    if (released) {
      EXPECT_EQ(host_memory_stats().bytes_in_use, in_use) << "y's own block is freed";
    } else {
      EXPECT_GE(host_memory_stats().bytes_in_use, in_use + n * 8);
      for (int64_t i = 0; i < n; i += 7) ASSERT_EQ(h->data.get(i), value(i)) << i;
    }
    // The gradient through the adopted bytes (NumPy: gx = gy (x > 0)).
    VarPtr x = h->creator->inputs[0];
    y->grad = Array::full(DType::Float64, Shape({n}), 2.0);
    backward(y, false);
    for (int64_t i = 0; i < n; i += 7) ASSERT_EQ(x->grad.get(i), value(i) > 0 ? 2.0 : 0.0) << i;
  }
  // A write into the input before y is read: y is computed first, from the
  // input's values when relu ran.
  VarPtr h = layer_output();
  VarPtr y = ops::relu(h);
  h->data.fill(-7.0);
  for (int64_t i = 0; i < n; i += 7) {
    ASSERT_EQ(y->data.get(i), relu_of_value(i)) << i;
    ASSERT_EQ(h->data.get(i), -7.0) << i;
  }
  // y released unread: nothing is computed, and both blocks come back.
  VarPtr h2 = layer_output();
  const int64_t with_h2 = host_memory_stats().bytes_in_use;
  VarPtr y2 = ops::relu(h2);
  h2->data = Array::placeholder_like(h2->data);
  EXPECT_GE(host_memory_stats().bytes_in_use, with_h2 + n * 8) << "h2's bytes, y2's block";
  y2.reset();
  EXPECT_LE(host_memory_stats().bytes_in_use, with_h2 - n * 8) << "neither is held";
}

TEST(CoreGraph, VolatileRecordsNothing) {
  VarPtr x = scalar(1, true);
  VarPtr y = apply1(std::make_shared<Scale>(2), {x});
  EXPECT_TRUE(y->is_volatile);
  EXPECT_EQ(y->creator, nullptr);
  VarPtr n = scalar(1, false);
  std::string msg = message_of([&] { apply_function(std::make_shared<Plus>(), {x, n}); });
  EXPECT_NE(msg.find("volatile"), std::string::npos) << msg;
}

TEST(CoreGraph, UnchainBackward) {
  VarPtr x = scalar(1);
  VarPtr a = apply1(std::make_shared<Scale>(2), {x});
  VarPtr b = apply1(std::make_shared<Scale>(3), {a});
  FuncPtr na = a->creator, nb = b->creator;
  unchain_backward(b);
  EXPECT_EQ(b->creator, nullptr);
  EXPECT_EQ(a->creator, nullptr);
  // The links are dropped, the arity stays (function.h: input i reads NULL).
  ASSERT_EQ(na->inputs.size(), 1u);
  ASSERT_EQ(nb->inputs.size(), 1u);
  EXPECT_EQ(na->inputs[0], nullptr);
  EXPECT_EQ(nb->inputs[0], nullptr);
  backward(b, false);
  EXPECT_FALSE(x->grad.defined());
  EXPECT_FALSE(a->grad.defined());
}

TEST(CoreGraph, DeferDestroyIsIterative) {
  // 300,000 nodes freed by dropping the last variable: no recursion per node.
  VarPtr cur = scalar(1);
  for (int i = 0; i < 300000; ++i) cur = apply1(std::make_shared<Scale>(1), {cur});
  cur.reset();
  SUCCEED();
}

TEST(CoreGraph, BackwardErrorsKeepTheGraphUsable) {
  VarPtr x = std::make_shared<VariableImpl>(Array::full(DType::Float64, Shape({2}), 1.0));
  VarPtr y = apply1(std::make_shared<Scale>(2), {x});
  EXPECT_EQ(status_of([&] { backward(y, false); }), CH_ERR_GRAPH);  // no initial error, 2 elements
  y->grad = Array::full(DType::Float32, Shape({2}), 1.0);           // wrong dtype
  EXPECT_EQ(status_of([&] { backward(y, false); }), CH_ERR_SHAPE);
  y->grad = Array::full(DType::Float64, Shape({2}), 1.0);
  backward(y, false);
  EXPECT_EQ(x->grad.get(1), 2.0);
}

// ---- error state -----------------------------------------------------------------------------

TEST(CoreErrorState, CallbackFailureWrapsMessage) {
  std::string msg = message_of([] {
    invoke_callback("MyFn", "backward", [] {
      error_state().message = "user text";
      return CH_ERR_IO;
    });
  });
  EXPECT_EQ(msg, "function 'MyFn' failed in backward: user text");
  msg = message_of([] { invoke_callback("MyFn", "forward", [] { return ch_status{-11}; }); });
  EXPECT_NE(msg.find("-11"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { raise_callback_failure("f", "forward", CH_ERR_IO); }), CH_ERR_CALLBACK);
}

TEST(CoreErrorState, PayloadDroppedOnce) {
  static int destroyed = 0;
  destroyed = 0;
  ErrorState& s = error_state();
  s.drop_payload();
  s.payload = &destroyed;
  s.destroy = [](void*) { ++destroyed; };
  s.drop_payload();
  s.drop_payload();
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(s.payload, nullptr);
}

TEST(CoreError, FailFormatsParts) {
  std::string msg = message_of([] {
    fail(CH_ERR_SHAPE, "who", ": ", 3, " and ", Shape({2, 3}).to_string());
  });
  EXPECT_EQ(msg, "who: 3 and (2, 3)");
}

}  // namespace

// ---- CPU thread pool -----------------------------------------------------------------------

TEST(CoreParallel, EveryIndexOnceWhateverTheThreadCount) {
  const int saved = cpu::num_threads();
  for (int threads : {1, 2, 3, 8}) {
    cpu::set_num_threads(threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      cpu::parallel_for(n, 10, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " threads " << threads;
    }
  }
  // A parallel_for inside another runs inline (no deadlock), still covering all.
  cpu::set_num_threads(2);
  std::atomic<int64_t> total{0};
  cpu::parallel_for(4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      cpu::parallel_for(1000, 10, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 4000);
  cpu::set_num_threads(saved);
}

// The pool's workers leave a CPU they share with their job's caller through
// move_off_cpu: the thread runs on another CPU right after it, and its
// affinity is what it was (not pinned).
TEST(CoreParallel, MoveOffCpuMovesWithoutPinning) {
#if defined(__linux__)
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  if (CPU_COUNT(&before) < 2) GTEST_SKIP() << "this process may use one CPU only";
  std::thread([&] {
    for (int nth = 0; nth < 3; ++nth) {
      // Once the affinity is given back the scheduler may move the thread
      // back at once, where the other CPUs are busy (tests run in parallel:
      // it did in a CI run), so one of up to 50 moves must be seen elsewhere.
      bool moved = false;
      for (int attempt = 0; attempt < 50 && !moved; ++attempt) {
        const int busy = sched_getcpu();
        cpu::detail::move_off_cpu(busy, nth);
        moved = sched_getcpu() != busy;
        cpu_set_t after;
        ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
        EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "nth " << nth;
      }
      EXPECT_TRUE(moved) << "nth " << nth;
    }
    // Nothing to do for no CPU, and where the thread may use only the busy one.
    cpu::detail::move_off_cpu(-1, 0);
    const int here = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(here, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    cpu::detail::move_off_cpu(here, 0);
    EXPECT_EQ(sched_getcpu(), here);
    cpu_set_t after;
    ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
    EXPECT_TRUE(CPU_EQUAL(&one, &after));
  }).join();
#else
  GTEST_SKIP() << "Linux only";
#endif
}

// Idle workers poll for a while, then sleep: jobs issued back to back (taken
// by polling workers), after a pause longer than the polling (workers woken
// from sleep), and from two threads at once must each run every chunk once.
TEST(CoreParallel, JobsAreCompleteWhetherWorkersPollOrSleep) {
  const int saved = cpu::num_threads();
  cpu::set_num_threads(4);
  auto one_job = [](int64_t n) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    cpu::parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (int64_t i = 0; i < n; ++i)
      if (hits[static_cast<size_t>(i)].load() != 1) return false;
    return true;
  };
  for (int round = 0; round < 2000; ++round) ASSERT_TRUE(one_job(64)) << "round " << round;
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(one_job(64)) << "after a pause, round " << round;
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 500; ++round)
        if (!one_job(37)) ++failures;
    });
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  cpu::set_num_threads(saved);
}
