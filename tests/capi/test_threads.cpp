// Threading contracts (variable.h, function.h, common.h): callbacks run on
// the thread that called forward/backward, handles may be released from a
// finalizer thread, independent graphs run concurrently, errors and payloads
// are per thread.
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>

#include "user_functions.h"

using namespace capi_test;

namespace {

class Threads : public CapiTest {};

TEST_F(Threads, BackwardRunsCallbacksOnTheCallingThread) {
  Probe probe;
  {
    Fn f = make_muladd(&probe);
    Var x = var_f32({2}, {1, 2}), y = var_f32({2}, {3, 4}), z = var_f32({2}, {5, 6});
    Var w = apply1(f, {x, y, z});  // forward on this thread
    EXPECT_EQ(probe.forward_thread, std::this_thread::get_id());
    Var s;
    ASSERT_CH_OK(ch_functions_sum(s.out(), w));

    // A host whose tasks move between OS threads (goroutines): backward
    // from another thread, sequentially, then read the results here.
    std::thread::id worker_id;
    ch_status st = CH_ERR_INTERNAL;
    std::thread worker([&] {
      worker_id = std::this_thread::get_id();
      st = ch_variable_backward(s, 0);
    });
    worker.join();
    ASSERT_EQ(st, CH_OK);
    EXPECT_EQ(probe.backward_thread, worker_id);
    EXPECT_NE(probe.backward_thread, std::this_thread::get_id());
    EXPECT_TRUE(AllClose(grad_of(x), {3, 4}, 0, 0));

    // And again from this thread.
    ASSERT_CH_OK(ch_variable_backward(s, 0));
    EXPECT_EQ(probe.backward_thread, std::this_thread::get_id());

    // Forward from another thread runs the forward callback there.
    std::thread::id fwd_id;
    std::thread other([&] {
      fwd_id = std::this_thread::get_id();
      Var w2 = apply1(f, {x, y, z});
    });
    other.join();
    EXPECT_EQ(probe.forward_thread, fwd_id);
  }
  EXPECT_EQ(probe.destroyed.load(), 1);
}

// A finalizer thread, as a garbage-collected host has: releases whatever
// handles are queued, concurrently with the main thread's work.
class Finalizer {
 public:
  Finalizer() : thread_([this] { run(); }) {}
  ~Finalizer() { stop(); }
  void push(ch_array* a) { enqueue({a, nullptr, nullptr}); }
  void push(ch_variable* v) { enqueue({nullptr, v, nullptr}); }
  void push(ch_function* f) { enqueue({nullptr, nullptr, f}); }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  int failures() const { return failures_; }
  int released() const { return released_; }

 private:
  struct Item {
    ch_array* a;
    ch_variable* v;
    ch_function* f;
  };
  void enqueue(Item it) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(it);
    }
    cv_.notify_one();
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) return;
      Item it = queue_.front();
      queue_.pop_front();
      lock.unlock();
      ch_status st = it.a   ? ch_array_release(it.a)
                     : it.v ? ch_variable_release(it.v)
                            : ch_function_release(it.f);
      if (st != CH_OK) failures_++;
      released_++;
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::atomic<int> failures_{0};
  std::atomic<int> released_{0};
  std::thread thread_;
};

TEST_F(Threads, ReleasingFromAFinalizerThread) {
  Probe probe;
  const int iterations = 300;
  int pushed = 0;
  {
    Finalizer fin;
    Fn f = make_muladd(&probe);
    for (int i = 0; i < iterations; ++i) {
      // loss = sum(exp(MulAdd(x, x, c) * 0.5)); the host drops its handles to
      // intermediates (and a duplicate of the function object) as soon as it
      // no longer needs them; the finalizer releases them while we continue.
      Arr xa = f32({4}, {0.1, 0.2, 0.3, 0.4 + 0.001 * i});
      Var x = make_var(xa);
      Var c = var_f32({4}, {1, 1, 1, 1});
      fin.push(xa.release());
      fin.push(ch_function_retain(f));
      Var w = apply1(f, {x, x, c});
      Var h, e, loss;
      ASSERT_CH_OK(ch_functions_mul_scalar(h.out(), w, 0.5));
      fin.push(w.release());
      fin.push(c.release());
      ASSERT_CH_OK(ch_functions_exp(e.out(), h));
      fin.push(h.release());
      ASSERT_CH_OK(ch_functions_sum(loss.out(), e));
      fin.push(e.release());
      Fn creator;
      ASSERT_CH_OK(ch_variable_creator(creator.out(), loss));
      fin.push(creator.release());
      ASSERT_CH_OK(ch_variable_backward(loss, 0));
      // d loss / dx = exp(0.5 (x^2 + 1)) * x (hand-derived)
      std::vector<double> xs = data_of(x), expected;
      for (double v : xs) expected.push_back(std::exp(0.5 * (v * v + 1)) * v);
      EXPECT_TRUE(AllClose(grad_of(x), expected, 1e-5, 1e-5)) << "iteration " << i;
      fin.push(loss.release());
      fin.push(x.release());
      pushed += 9;
    }
    fin.push(f.release());
    pushed += 1;
    fin.stop();
    EXPECT_EQ(fin.failures(), 0);
    EXPECT_EQ(fin.released(), pushed);
  }
  EXPECT_EQ(probe.destroyed.load(), 1);
  EXPECT_EQ(probe.forward_calls.load(), iterations);
  EXPECT_EQ(probe.backward_calls.load(), iterations);
}

TEST_F(Threads, WholeGraphFreedOnAnotherThread) {
  // The last reference to a graph (with user data destructors) goes on a
  // thread other than the one that built it.
  Probe probe;
  ch_variable* y = nullptr;
  {
    Fn f = make_muladd(&probe);
    Var x = var_f32({1}, {2});
    Var cur(ch_variable_retain(x));
    for (int i = 0; i < 1000; ++i) cur = apply1(f, {cur, x, x});
    y = cur.release();
  }
  EXPECT_EQ(probe.destroyed.load(), 0);
  std::thread([&] { EXPECT_CH_OK(ch_variable_release(y)); }).join();
  EXPECT_EQ(probe.destroyed.load(), 1);
}

TEST_F(Threads, ConcurrentIndependentGraphs) {
  // Two threads, each with its own graphs (the shared function object has
  // thread-safe callbacks), produce the same results as sequential runs.
  Probe probe;
  Fn f = make_expadd(&probe);
  auto worker = [&](int id) -> int {
    int bad = 0;
    for (int i = 0; i < 200; ++i) {
      double base = 0.01 * (i % 50) - 0.25 + id;
      Var x = var_f64({8}, std::vector<double>(8, base));
      Var y = var_f64({8}, std::vector<double>(8, -base));
      Var z = apply1(f, {x, y});
      Var m, p, s;
      if (ch_functions_mul(m.out(), z, x) != CH_OK) ++bad;
      if (ch_functions_pow_scalar(p.out(), m, 2.0) != CH_OK) ++bad;
      if (ch_functions_sum(s.out(), p) != CH_OK) ++bad;
      if (ch_variable_backward(s, 0) != CH_OK) ++bad;
      // s = sum((e^x + e^-x)^2 x^2) elementwise with x = base, y = -base:
      // ds/dx = 2 m (e^x x + z), ds/dy = 2 m e^y x  (hand-derived)
      const double ex = std::exp(base), ey = std::exp(-base), zz = ex + ey, mm = zz * base;
      std::vector<double> gx = grad_of(x), gy = grad_of(y);
      if (gx.size() != 8 || gy.size() != 8) {
        ++bad;
        continue;
      }
      for (int k = 0; k < 8; ++k) {
        if (std::fabs(gx[k] - 2 * mm * (ex * base + zz)) > 1e-9 * (1 + std::fabs(gx[k]))) ++bad;
        if (std::fabs(gy[k] - 2 * mm * ey * base) > 1e-9 * (1 + std::fabs(gy[k]))) ++bad;
      }
    }
    return bad;
  };
  auto a = std::async(std::launch::async, worker, 0);
  auto b = std::async(std::launch::async, worker, 1);
  int bad_main = worker(2);
  EXPECT_EQ(a.get(), 0);
  EXPECT_EQ(b.get(), 0);
  EXPECT_EQ(bad_main, 0);
  EXPECT_EQ(probe.forward_calls.load(), 600);
  EXPECT_EQ(probe.backward_calls.load(), 600);
}

TEST_F(Threads, ErrorsAreThreadLocal) {
  Var out;
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_functions_exp(out.out(), nullptr));
  std::string other_msg = "unset";
  ch_status other_status = CH_ERR_INTERNAL;
  std::thread([&] {
    other_status = ch_error_status();
    other_msg = ch_error_message();
    ch_variable* v = nullptr;
    ch_functions_add(&v, nullptr, nullptr);  // fails on that thread only
  }).join();
  EXPECT_EQ(other_status, CH_OK) << "a fresh thread has no error";
  EXPECT_EQ(other_msg, "");
  EXPECT_EQ(ch_error_status(), CH_ERR_NULL_HANDLE);
  EXPECT_TRUE(contains(ch_error_message(), "ch_functions_exp")) << ch_error_message();
}

struct Payload {
  std::atomic<int>* destroyed;
};
void payload_destroy(void* p) { (*static_cast<Payload*>(p)->destroyed)++; }

TEST_F(Threads, UntakenPayloadIsDestroyedAtThreadExit) {
  // common.h: an untaken payload's destroy runs "when the next error replaces
  // it or the thread exits".
  std::atomic<int> destroyed{0};
  Payload payload{&destroyed};
  Lambda l;
  l.forward = [&](ch_context*, ch_array* const*, size_t) -> ch_status {
    ch_error_set(CH_ERR_IO, "host failure");
    ch_error_set_payload(&payload, payload_destroy);
    return CH_ERR_IO;
  };
  Fn f = make_lambda_fn("Thrower", &l);
  Var x = var_f32({1}, {1});
  std::thread([&] {
    ch_variable* in[] = {x};
    ch_variable* y = nullptr;
    EXPECT_EQ(ch_function_apply(f, in, 1, &y, 1, nullptr), CH_ERR_CALLBACK);
    EXPECT_EQ(destroyed.load(), 0);
  }).join();
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(ch_error_take_payload(), nullptr) << "payloads do not cross threads";
}

// A host error object that holds engine handles (a Python exception whose
// traceback references tensors): its destroy releases them.
struct GraphHoldingPayload {
  ch_variable* held = nullptr;
  std::atomic<int>* destroyed = nullptr;
};
void graph_payload_destroy(void* p) {
  auto* g = static_cast<GraphHoldingPayload*>(p);
  EXPECT_EQ(ch_variable_release(g->held), CH_OK);
  (*g->destroyed)++;
}

TEST_F(Threads, PayloadHoldingAGraphDestroyedAtThreadExit) {
  // The untaken payload is destroyed during the thread's exit, and its
  // destroy frees a whole graph there (thread-local engine state must still
  // be usable at that point). Run in a child process: a crash fails only this test.
  EXPECT_NO_CRASH({
    std::atomic<int> destroyed{0};
    GraphHoldingPayload payload;
    payload.destroyed = &destroyed;
    Lambda l;
    l.forward = [&](ch_context*, ch_array* const*, size_t) -> ch_status {
      ch_error_set(CH_ERR_IO, "host failure");
      ch_error_set_payload(&payload, graph_payload_destroy);
      return CH_ERR_IO;
    };
    Fn f = make_lambda_fn("Thrower", &l);
    std::thread([&] {
      // Touch the error state first, then build and drop graphs on this thread.
      ch_variable* none = nullptr;
      EXPECT_EQ(ch_functions_exp(&none, nullptr), CH_ERR_NULL_HANDLE);
      Var x = var_f32({1}, {1});
      Var cur(ch_variable_retain(x));
      for (int i = 0; i < 100; ++i) {
        Var next;
        EXPECT_CH_OK(ch_functions_add_scalar(next.out(), cur, 1.0));
        cur = std::move(next);
      }
      Var tmp;
      EXPECT_CH_OK(ch_functions_exp(tmp.out(), cur));
      tmp.reset();                   // frees a node on this thread
      payload.held = cur.release();  // the payload now owns a 100-node graph
      ch_variable* in[] = {x};
      ch_variable* y = nullptr;
      EXPECT_EQ(ch_function_apply(f, in, 1, &y, 1, nullptr), CH_ERR_CALLBACK);
    }).join();
    EXPECT_EQ(destroyed.load(), 1);
  });
}

TEST_F(Threads, ConcurrentRetainRelease) {
  // Many threads retaining and releasing the same handles.
  Arr a = f32({4}, {1, 2, 3, 4});
  Var v = make_var(a);
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        ch_array* a2 = ch_array_retain(a);
        ch_variable* v2 = ch_variable_retain(v);
        if (!a2 || !v2) failures++;
        if (ch_variable_size(v2) != 4) failures++;
        if (ch_array_release(a2) != CH_OK) failures++;
        if (ch_variable_release(v2) != CH_OK) failures++;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ch_array_size(a), 4);
  EXPECT_EQ(ch_variable_size(v), 4);
}

}  // namespace
