// Thread stress test of the threading contract (docs/c-api.md), built alone for the
// ThreadSanitizer pass (-Dstress_tests=true -Db_sanitize=thread) and also run
// in the ordinary passes. Several threads at once:
//   * each trains its own model (reliability_model.h) and checks its loss falls;
//   * hands some of its variables and arrays to the next thread, which releases
//     them (handles released from another thread than the one that made them);
//   * makes calls that fail (shapes that do not broadcast, a user function
//     whose forward fails) and checks that its own thread's error message
//     names its own values (errors are per thread);
//   * drops its model while other threads still hold variables of its graph
//     (finalizers in any order).
// The live-handle count is back to its baseline at the end.
// A second test (issue 48) has release callbacks that release other handles:
// wrapped buffers whose release callback releases a variable (through the
// engine's data release, which takes the variable-release lock) and an
// array, the buffer freed on whichever thread drops its last reference.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reliability_model.h"

namespace {

constexpr int kThreads = 4;
constexpr int kSteps = 1000;

// Handles passed from thread i to thread (i + 1) % kThreads, which releases them.
struct Mailbox {
  std::mutex mutex;
  std::deque<ch_variable*> variables;
  std::deque<ch_array*> arrays;
};

ch_status failing_forward(void*, ch_context*, ch_array* const*, size_t) {
  ch_error_set(CH_ERR_INVALID_ARGUMENT, "stress: this forward always fails");
  return CH_ERR_INVALID_ARGUMENT;
}

struct Result {
  double first_loss = 0, last_loss = 0;
  int wrong_errors = 0;
  std::string detail;
};

void worker(int id, Mailbox* boxes, Result* result, std::atomic<int>* started) {
  reliability::Mlp model(id, id % 2 == 0);
  ch_function_def def = {};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "always_fails";
  def.forward = failing_forward;
  ch_function* failing = nullptr;
  REL_MUST(ch_function_new(&failing, &def));
  started->fetch_add(1);
  while (started->load() < kThreads) std::this_thread::yield();  // start together
  Mailbox& mine = boxes[id];
  Mailbox& next = boxes[(id + 1) % kThreads];
  for (int s = 0; s < kSteps; ++s) {
    const int64_t batch = 2 + (s + id) % 3;
    ch_variable* x = reliability::Mlp::batch_input(batch);
    ch_variable* y = model.forward(x);
    // Keep the output alive on the next thread: it holds our graph.
    {
      std::lock_guard<std::mutex> lock(next.mutex);
      next.variables.push_back(ch_variable_retain(y));
      ch_array* d = nullptr;
      REL_MUST(ch_variable_data(&d, x));
      next.arrays.push_back(d);
    }
    const double loss = model.finish(y, batch);
    if (s == 0) result->first_loss = loss;
    result->last_loss = loss;
    ch_variable_release(y);
    // An error of this thread: shapes (id + 1, 3) and (2, 5) do not broadcast.
    const int64_t sa[] = {id + 1, 3}, sb[] = {2, 5};
    ch_array* a = nullptr;
    ch_array* b = nullptr;
    REL_MUST(ch_array_new_full(&a, CH_FLOAT32, sa, 2, 1, ch_device_cpu()));
    REL_MUST(ch_array_new_full(&b, CH_FLOAT32, sb, 2, 1, ch_device_cpu()));
    ch_variable* va = nullptr;
    ch_variable* vb = nullptr;
    REL_MUST(ch_variable_new(&va, a, 0));
    REL_MUST(ch_variable_new(&vb, b, 0));
    ch_variable* sum = nullptr;
    ch_status st =
        id == 0 && s % 2 ? ch_functions_add(&sum, vb, va) : ch_functions_add(&sum, va, vb);
    const std::string mine_shape = "(" + std::to_string(id + 1) + ", 3)";
    if (st != CH_ERR_SHAPE ||
        std::string(ch_error_message()).find(mine_shape) == std::string::npos) {
      result->wrong_errors++;
      result->detail = std::string("add: ") + ch_error_message();
    }
    if (sum) ch_variable_release(sum);
    ch_variable* out = nullptr;
    size_t n = 0;
    st = ch_function_apply(failing, &va, 1, &out, 1, &n);
    if (st != CH_ERR_CALLBACK ||
        std::string(ch_error_message()).find("always fails") == std::string::npos) {
      result->wrong_errors++;
      result->detail = std::string("callback: ") + ch_error_message();
    }
    ch_variable_release(va);
    ch_variable_release(vb);
    ch_array_release(a);
    ch_array_release(b);
    ch_variable_release(x);
    // Release what the previous thread handed over (its graphs, its arrays).
    std::deque<ch_variable*> vars;
    std::deque<ch_array*> arrays;
    {
      std::lock_guard<std::mutex> lock(mine.mutex);
      vars.swap(mine.variables);
      arrays.swap(mine.arrays);
    }
    for (ch_variable* v : vars) {
      // Backward on another thread's graph would race with its owner's
      // optimizer (the contract allows independent graphs only); read it.
      if (ch_variable_size(v) <= 0) result->wrong_errors++;
      ch_variable_release(v);
    }
    for (ch_array* arr : arrays) ch_array_release(arr);
  }
  ch_function_release(failing);
  // The model is destroyed here while the next thread may still hold
  // variables of its last graphs.
}

TEST(ThreadStress, IndependentModelsSharedReleasesConcurrentErrors) {
  const int64_t baseline = ch_debug_live_handles();
  Mailbox boxes[kThreads];
  Result results[kThreads];
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, i, boxes, &results[i], &started);
  for (auto& t : threads) t.join();
  for (Mailbox& box : boxes) {
    for (ch_variable* v : box.variables) ch_variable_release(v);
    for (ch_array* a : box.arrays) ch_array_release(a);
  }
  for (int i = 0; i < kThreads; ++i) {
    SCOPED_TRACE("thread " + std::to_string(i));
    EXPECT_EQ(results[i].wrong_errors, 0) << results[i].detail;
    EXPECT_LT(results[i].last_loss, results[i].first_loss) << "training did not reduce the loss";
  }
  EXPECT_EQ(ch_debug_live_handles(), baseline) << "handles leaked across threads";
  std::printf("[ stress  ] %d threads x %d training steps, each with 2 failing calls\n", kThreads,
              kSteps);
}

// ---- release callbacks that release other handles -------------------------

constexpr int kCallbackSteps = 300;

// A wrapped buffer and the handles its release callback releases.
struct Wrapped {
  float data[4] = {1, -2, 3, -4};
  ch_variable* other = nullptr;  // made by identity, consumed by relu: a data release
  ch_array* array = nullptr;
  std::atomic<int>* released = nullptr;
  std::atomic<int>* failures = nullptr;
};

void release_others(void*, void* user) {
  auto* w = static_cast<Wrapped*>(user);
  if (ch_variable_release(w->other) != CH_OK) w->failures->fetch_add(1);
  if (ch_array_release(w->array) != CH_OK) w->failures->fetch_add(1);
  w->released->fetch_add(1);
  delete w;
}

struct Handoff {
  std::mutex mutex;
  std::deque<ch_variable*> variables;
};

void callback_worker(int id, Handoff* boxes, std::atomic<int>* made, std::atomic<int>* released,
                     std::atomic<int>* failures, std::vector<ch_variable*>* keep) {
  Handoff& mine = boxes[id];
  Handoff& next = boxes[(id + 1) % kThreads];
  const int64_t shape[1] = {4};
  for (int s = 0; s < kCallbackSteps; ++s) {
    auto* w = new Wrapped;
    w->released = released;
    w->failures = failures;
    // `other`: identity of a root, consumed by relu, so that its release
    // takes the engine's data-release path.
    ch_array* ra = nullptr;
    REL_MUST(ch_array_new_full(&ra, CH_FLOAT32, shape, 1, 1.5, ch_device_cpu()));
    ch_variable* root = nullptr;
    REL_MUST(ch_variable_new(&root, ra, 0));
    REL_MUST(ch_functions_identity(&w->other, root));
    ch_variable* consumer = nullptr;
    REL_MUST(ch_functions_relu(&consumer, w->other));
    keep->push_back(consumer);  // keeps `other` consumed until the end
    ch_variable_release(root);
    w->array = ra;  // the callback releases this reference
    ch_array* wrapped = nullptr;
    REL_MUST(
        ch_array_wrap(&wrapped, CH_FLOAT32, shape, 1, w->data, ch_device_cpu(), release_others, w));
    made->fetch_add(1);
    // identity, then relu, then set_data (issue 48's sequence): the buffer is
    // left to h alone, whose last handle goes on the next thread.
    ch_variable* x = nullptr;
    REL_MUST(ch_variable_new(&x, wrapped, 0));
    ch_array_release(wrapped);
    ch_variable* h = nullptr;
    REL_MUST(ch_functions_identity(&h, x));
    ch_variable* y = nullptr;
    REL_MUST(ch_functions_relu(&y, h));
    ch_array* fresh = nullptr;
    REL_MUST(ch_array_new_full(&fresh, CH_FLOAT32, shape, 1, 0, ch_device_cpu()));
    REL_MUST(ch_variable_set_data(x, fresh));
    ch_array_release(fresh);
    ch_variable_release(x);
    {
      std::lock_guard<std::mutex> lock(next.mutex);
      next.variables.push_back(h);
      next.variables.push_back(y);
    }
    std::deque<ch_variable*> vars;
    {
      std::lock_guard<std::mutex> lock(mine.mutex);
      vars.swap(mine.variables);
    }
    for (ch_variable* v : vars)
      if (ch_variable_release(v) != CH_OK) failures->fetch_add(1);
  }
}

TEST(ThreadStress, ReleaseCallbacksReleaseOtherHandles) {
  const int64_t baseline = ch_debug_live_handles();
  Handoff boxes[kThreads];
  std::atomic<int> made{0}, released{0}, failures{0};
  std::vector<ch_variable*> keep[kThreads];
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back(callback_worker, i, boxes, &made, &released, &failures, &keep[i]);
  for (auto& t : threads) t.join();
  for (Handoff& box : boxes)
    for (ch_variable* v : box.variables) ch_variable_release(v);
  for (auto& k : keep)
    for (ch_variable* v : k) ch_variable_release(v);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(made.load(), kThreads * kCallbackSteps);
  EXPECT_EQ(released.load(), made.load()) << "a wrapped buffer was never released";
  EXPECT_EQ(ch_debug_live_handles(), baseline) << "handles leaked across threads";
}

}  // namespace
