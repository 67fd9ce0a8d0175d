// Shared helpers for the benchmarks (bench/overhead.cpp, bench/functions.cpp):
// the timing method (calibrate each body alone, interleave the
// repeats of all bodies, take the median) and the environment queries (the
// libraries actually loaded, libtorch's BLAS).

#ifndef CH_BENCH_UTIL_H
#define CH_BENCH_UTIL_H

#include <ch/ch.h>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "peer_blas.h"

namespace bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(2);
}

#define CH_BENCH_CHECK(expr)                                                                     \
  do {                                                                                           \
    const ch_status st_ = (expr);                                                                \
    if (st_ != CH_OK)                                                                            \
      ::bench::die(std::string(#expr) + ": " + ch_status_name(st_) + ": " + ch_error_message()); \
  } while (0)

struct Timing {
  int repeats = 7;
  double min_time = 0.05;  // seconds per repeat
};

// A timed body. Each is calibrated alone (calls per repeat such that a repeat
// lasts at least min_time); then the repeats of all bodies are interleaved
// (repeat 1 of every body, then repeat 2, ...) so that a change in background
// load hits every row alike. The figure is the median over repeats of the time
// of one call, in microseconds.
struct Bench {
  std::function<void()> body;
  double* result = nullptr;
  long iters = 1;
  std::vector<double> samples;
  double per = 1;  // the figure is time per call / per (e.g. per op of a chain)
};

inline void calibrate(Bench& b, const Timing& t) {
  b.body();  // warm-up: allocator caches, lazy initialisation, page faults
  b.body();
  long iters = 1;
  for (;;) {
    const double t0 = now_s();
    for (long i = 0; i < iters; ++i) b.body();
    const double dt = now_s() - t0;
    if (dt >= t.min_time || iters >= (1L << 26)) break;
    const double scale = dt > 0 ? 1.2 * t.min_time / dt : 16.0;
    iters = std::max(iters * 2, static_cast<long>(static_cast<double>(iters) * scale));
  }
  b.iters = iters;
}

inline void measure_all(std::vector<Bench>& benches, const Timing& t) {
  for (Bench& b : benches) calibrate(b, t);
  for (int r = 0; r < t.repeats; ++r) {
    for (Bench& b : benches) {
      const double t0 = now_s();
      for (long i = 0; i < b.iters; ++i) b.body();
      b.samples.push_back((now_s() - t0) / static_cast<double>(b.iters) * 1e6 / b.per);
    }
  }
  for (Bench& b : benches) {
    std::sort(b.samples.begin(), b.samples.end());
    *b.result = b.samples[b.samples.size() / 2];
  }
}

// Resolved path (symlinks such as Debian's alternatives followed) of the
// loaded object whose path contains `needle`, or "".
inline std::string loaded_realpath(const char* needle) {
  struct Query {
    const char* needle;
    std::string path;
  } q{needle, ""};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        Query* qq = static_cast<Query*>(data);
        if (!info->dlpi_name || !std::strstr(info->dlpi_name, qq->needle)) return 0;
        qq->path = info->dlpi_name;
        return 1;
      },
      &q);
  if (q.path.empty()) return "";
  char* real = realpath(q.path.c_str(), nullptr);
  if (!real) return q.path;
  std::string r = real;
  std::free(real);
  return r;
}

inline const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// CH_BENCH_SGD_IN_BACKWARD=1 (bench/train --sgd-in-backward sets it for its
// children): chainerc's SGD takes the weights' step inside backward
// (ch_optimizer_set_step_in_backward).
inline bool sgd_in_backward() {
  const char* v = std::getenv("CH_BENCH_SGD_IN_BACKWARD");
  return v && v[0] == '1';
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

}  // namespace bench

#endif  // CH_BENCH_UTIL_H
