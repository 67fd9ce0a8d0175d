// ch_optimizer_set_update_hook (libchainerc), the step ch_optimizer_new_multi_node
// builds on: runs before every update with the handle, a failing hook fails the
// update with its own status and message and changes nothing, destroy runs
// once when the hook is replaced, removed or the optimizer is gone.
#include <ch/ch.h>
#include <gtest/gtest.h>

#include <string>

namespace {

struct Probe {
  int calls = 0;
  int destroyed = 0;
  int64_t t_seen = -1;
  ch_optimizer* handle_seen = nullptr;
  ch_status result = CH_OK;
};

ch_status probe_hook(void* user_data, ch_optimizer* optimizer) {
  auto* p = static_cast<Probe*>(user_data);
  ++p->calls;
  p->t_seen = ch_optimizer_t(optimizer);
  p->handle_seen = optimizer;
  // The hook sees the gradients before the update: double them.
  ch_array* g = nullptr;
  if (ch_optimizer_parameter(nullptr, &g, nullptr, optimizer, 0) != CH_OK) return CH_ERR_INTERNAL;
  float* d = static_cast<float*>(ch_array_data(g));
  for (int64_t i = 0; i < ch_array_size(g); ++i) d[i] *= 2;
  ch_array_release(g);
  if (p->result != CH_OK) ch_error_set(p->result, "probe: the models differ");
  return p->result;
}

void probe_destroy(void* user_data) { ++static_cast<Probe*>(user_data)->destroyed; }

struct Fixture {
  ch_array* param = nullptr;
  ch_array* grad = nullptr;
  ch_optimizer* opt = nullptr;
  Fixture() {
    const int64_t shape[1] = {3};
    EXPECT_EQ(ch_array_new_full(&param, CH_FLOAT32, shape, 1, 1.0, ch_device_cpu()), CH_OK);
    EXPECT_EQ(ch_array_new_full(&grad, CH_FLOAT32, shape, 1, 0.5, ch_device_cpu()), CH_OK);
    EXPECT_EQ(ch_optimizer_sgd_new(&opt, 0.1), CH_OK);
    EXPECT_EQ(ch_optimizer_setup_arrays(opt, &param, &grad, 1), CH_OK);
  }
  ~Fixture() {
    ch_optimizer_release(opt);
    ch_array_release(param);
    ch_array_release(grad);
  }
  float p0() const { return static_cast<const float*>(ch_array_data(param))[0]; }
};

TEST(OptimizerUpdateHook, RunsBeforeTheUpdateWithTheCallersHandle) {
  Probe probe;  // outlives the optimizer, whose release runs probe_destroy
  Fixture f;
  ASSERT_EQ(ch_optimizer_set_update_hook(f.opt, probe_hook, &probe, probe_destroy), CH_OK);
  ch_optimizer* other = ch_optimizer_retain(f.opt);
  ASSERT_EQ(ch_optimizer_update(other), CH_OK);
  EXPECT_EQ(probe.calls, 1);
  EXPECT_EQ(probe.t_seen, 0);  // before t += 1
  EXPECT_EQ(probe.handle_seen, other);
  // SGD used the doubled gradient: 1 - 0.1 * (2 * 0.5).
  EXPECT_FLOAT_EQ(f.p0(), 0.9f);
  EXPECT_EQ(ch_optimizer_t(f.opt), 1);
  ch_optimizer_release(other);
  EXPECT_EQ(probe.destroyed, 0);
}

TEST(OptimizerUpdateHook, AFailingHookFailsTheUpdateWithItsStatusAndChangesNothingElse) {
  Probe probe;  // outlives the optimizer, whose release runs probe_destroy
  Fixture f;
  probe.result = CH_ERR_INVALID_ARGUMENT;
  ASSERT_EQ(ch_optimizer_set_update_hook(f.opt, probe_hook, &probe, probe_destroy), CH_OK);
  EXPECT_EQ(ch_optimizer_update(f.opt), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(ch_error_message()), "ch_optimizer_update: probe: the models differ");
  EXPECT_EQ(ch_optimizer_t(f.opt), 0);
  EXPECT_FLOAT_EQ(f.p0(), 1.0f);
}

TEST(OptimizerUpdateHook, DestroyRunsOnceOnReplaceRemoveAndRelease) {
  Probe a, b, c;
  {
    Fixture f;
    ASSERT_EQ(ch_optimizer_set_update_hook(f.opt, probe_hook, &a, probe_destroy), CH_OK);
    ASSERT_EQ(ch_optimizer_set_update_hook(f.opt, probe_hook, &b, probe_destroy), CH_OK);
    EXPECT_EQ(a.destroyed, 1);
    ASSERT_EQ(ch_optimizer_set_update_hook(f.opt, nullptr, nullptr, nullptr), CH_OK);
    EXPECT_EQ(b.destroyed, 1);
    ASSERT_EQ(ch_optimizer_update(f.opt), CH_OK);  // no hook any more
    EXPECT_EQ(b.calls, 0);
    ASSERT_EQ(ch_optimizer_set_update_hook(f.opt, probe_hook, &c, probe_destroy), CH_OK);
  }
  EXPECT_EQ(a.destroyed, 1);
  EXPECT_EQ(b.destroyed, 1);
  EXPECT_EQ(c.destroyed, 1);
}

TEST(OptimizerUpdateHook, BadHandlesAreErrorsAndKeepUserData) {
  Probe p;
  EXPECT_EQ(ch_optimizer_set_update_hook(nullptr, probe_hook, &p, probe_destroy),
            CH_ERR_NULL_HANDLE);
  ch_optimizer* opt = nullptr;
  ASSERT_EQ(ch_optimizer_sgd_new(&opt, 0.1), CH_OK);
  ASSERT_EQ(ch_optimizer_release(opt), CH_OK);
  EXPECT_EQ(ch_optimizer_set_update_hook(opt, probe_hook, &p, probe_destroy),
            CH_ERR_RELEASED_HANDLE);
  EXPECT_EQ(p.destroyed, 0);
}

}  // namespace
