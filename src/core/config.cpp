#include "config.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "error.h"

namespace chainerc::config {
namespace {
std::atomic<bool> g_train{true};
std::atomic<bool> g_use_cudnn{true};
std::atomic<bool> g_allow_tf32{false};
std::atomic<bool> g_deterministic{false};
}  // namespace

bool train_default() { return g_train.load(std::memory_order_relaxed); }
void set_train_default(bool train) { g_train.store(train, std::memory_order_relaxed); }
bool resolve_train(int32_t train) { return train < 0 ? train_default() : train != 0; }

bool use_cudnn() { return g_use_cudnn.load(std::memory_order_relaxed); }
void set_use_cudnn(bool on) { g_use_cudnn.store(on, std::memory_order_relaxed); }
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) { g_allow_tf32.store(on, std::memory_order_relaxed); }
bool deterministic() { return g_deterministic.load(std::memory_order_relaxed); }
void set_deterministic(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }

namespace {
std::atomic<CudnnProbe> g_cudnn_probe{nullptr};
bool env_is_1(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;
}
std::mutex g_calls_mutex;
std::map<std::string, int64_t>& calls() {
  static auto* m = new std::map<std::string, int64_t>;  // never destroyed
  return *m;
}
}  // namespace

void set_cudnn_probe(CudnnProbe probe) { g_cudnn_probe.store(probe); }

bool cudnn_disabled_by_env() {
  static const bool v = env_is_1("CH_DISABLE_CUDNN");
  return v;
}
bool cudnn_required() {
  static const bool v = env_is_1("CH_REQUIRE_CUDNN");
  return v;
}

CudnnStatus cudnn_status() {
  if (!use_cudnn()) return {kCudnnSwitchedOff, 0, "switched off by ch_config_set_use_cudnn(0)"};
  if (cudnn_disabled_by_env())
    return {kCudnnSwitchedOff, 0, "switched off by CH_DISABLE_CUDNN=1 in the environment"};
  const CudnnProbe probe = g_cudnn_probe.load();
  if (!probe)
    return {kCudnnNotBuilt, 0,
            "this build of chainerc has no cuDNN (built without the CUDA backend, with "
            "-Dcudnn=disabled, without cudnn.h of cuDNN 9, or for the emulated devices)"};
  return probe();
}

void check_cudnn_required(const char* who, bool unbuilt_only) {
  if (!cudnn_required()) return;
  if (unbuilt_only && g_cudnn_probe.load()) return;
  const CudnnStatus s = cudnn_status();
  if (s.state == kCudnnInUse || s.state == kCudnnSwitchedOff) return;
  fail(CH_ERR_DEVICE, who, ": CH_REQUIRE_CUDNN=1 but cuDNN is not in use: ", s.reason);
}

void count_cudnn_call(const char* kernel) {
  std::lock_guard<std::mutex> l(g_calls_mutex);
  ++calls()[kernel];
}
int64_t cudnn_calls(const char* kernel) {
  std::lock_guard<std::mutex> l(g_calls_mutex);
  if (kernel) {
    auto it = calls().find(kernel);
    return it == calls().end() ? 0 : it->second;
  }
  int64_t n = 0;
  for (const auto& kv : calls()) n += kv.second;
  return n;
}
void reset_cudnn_calls() {
  std::lock_guard<std::mutex> l(g_calls_mutex);
  calls().clear();
}

}  // namespace chainerc::config
