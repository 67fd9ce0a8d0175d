// Soak: many training steps of the small MLP (reliability_model.h) on tiny
// batches; from step 10^4 on, the resident memory (RSS) and the live-handle
// counts must stay flat. A second test raises an error from a user function
// every 1,000 steps (a forward that fails, as a training loop with a bad
// batch would meet) and checks the same.
//
// CH_SOAK_STEPS sets the number of steps (meson sets 10^6 in the default pass
// and 1.5 * 10^4 under sanitizers; default here 10^5).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "reliability_model.h"

// Under AddressSanitizer, freed blocks wait in a quarantine (256 MiB by
// default) before they are reused, so a library that mallocs and frees a
// buffer on every call (OpenBLAS's GEMM does) makes the RSS climb until the
// quarantine is full: growth that is not ours and not a leak. This test
// measures RSS, so it runs without the quarantine (ASAN_OPTIONS still wins).
extern "C" const char* __asan_default_options() { return "quarantine_size_mb=0"; }

namespace {

constexpr long kFlatFrom = 10000;
// Allowed RSS growth after kFlatFrom: malloc's arenas may still settle a
// little; a leak of one small array per step would exceed this within 10^4
// steps (10^4 * 64 bytes = 640 KiB, and our arrays take at least 64).
constexpr long kRssSlackKiB = 512;

long steps_to_run() {
  const char* s = std::getenv("CH_SOAK_STEPS");
  long n = s ? std::atol(s) : 100000;
  return n > kFlatFrom + 1000 ? n : kFlatFrom + 1000;
}

long rss_kib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long pages = 0, resident = 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident * 4;  // 4 KiB pages
}

ch_status fail_now(void*, ch_context*, ch_array* const*, size_t) {
  ch_error_set(CH_ERR_INVALID_ARGUMENT, "soak: a bad batch");
  return CH_ERR_INVALID_ARGUMENT;
}

void soak(bool with_errors) {
  const long steps = steps_to_run();
  reliability::Mlp model(3);
  ch_function* bad = nullptr;
  ch_function_def def = {};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "bad_batch";
  def.forward = fail_now;
  ASSERT_EQ(ch_function_new(&bad, &def), CH_OK);
  long rss_at = 0, rss_max = 0;
  int64_t handles_at = 0, arrays_at = 0, vars_at = 0;
  double first = 0, last = 0;
  long errors = 0;
  for (long s = 0; s < steps; ++s) {
    if (with_errors && s % 1000 == 999) {
      ch_variable* x = reliability::Mlp::batch_input(2);
      ch_variable* y = model.forward(x);
      ch_variable* out = nullptr;
      size_t n = 0;
      ch_status st = ch_function_apply(bad, &y, 1, &out, 1, &n);
      ASSERT_EQ(st, CH_ERR_CALLBACK);
      ASSERT_NE(std::string(ch_error_message()).find("a bad batch"), std::string::npos)
          << ch_error_message();
      ASSERT_EQ(out, nullptr);
      ch_variable_release(y);
      ch_variable_release(x);
      ++errors;
      continue;
    }
    last = model.step(1 + s % 3);
    if (s == 0) first = last;
    if (s == kFlatFrom) {
      rss_at = rss_kib();
      handles_at = ch_debug_live_handles();
      arrays_at = ch_debug_live_arrays();
      vars_at = ch_debug_live_variables();
    }
    if (s > kFlatFrom && s % 1000 == 0) {
      const long r = rss_kib();
      if (r > rss_max) rss_max = r;
      ASSERT_EQ(ch_debug_live_handles(), handles_at) << "step " << s;
      ASSERT_EQ(ch_debug_live_arrays(), arrays_at) << "step " << s;
      ASSERT_EQ(ch_debug_live_variables(), vars_at) << "step " << s;
    }
  }
  ch_function_release(bad);
  EXPECT_LE(rss_max - rss_at, kRssSlackKiB)
      << "RSS grew from " << rss_at << " KiB at step " << kFlatFrom << " to " << rss_max << " KiB";
  EXPECT_LT(last, first) << "the loss did not fall";
  std::printf(
      "[ soak    ] %ld steps%s: RSS %ld KiB at step %ld, at most %ld KiB after; "
      "%lld live handles; loss %.4g -> %.4g%s\n",
      steps, with_errors ? " with errors" : "", rss_at, kFlatFrom, rss_max,
      static_cast<long long>(handles_at), first, last,
      with_errors ? (", " + std::to_string(errors) + " failed forwards").c_str() : "");
}

TEST(Soak, TrainingStepsKeepMemoryAndHandlesFlat) { soak(false); }
TEST(Soak, ErrorEveryThousandStepsKeepsMemoryAndHandlesFlat) { soak(true); }

}  // namespace
