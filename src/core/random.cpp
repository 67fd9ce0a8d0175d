#include "random.h"

#include <cstdlib>
#include <mutex>
#include <random>

#include "device_backend.h"
#include "dtype.h"
#include "error.h"

namespace chainerc::random {

uint64_t initial_seed() {
  if (const char* env = std::getenv("CH_SEED")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && end != env) return v;
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

namespace {

struct Generator {
  std::mutex mutex;
  std::mt19937_64 engine{initial_seed()};
};

Generator& generator() {
  static Generator* g = new Generator;  // never destroyed: usable from static destructors
  return *g;
}

// For a device's generator: (normal?, mean or low, stddev or high).
struct DistParams {
  bool normal;
  double a, b;
};
DistParams params(const std::uniform_real_distribution<double>& d) { return {false, d.a(), d.b()}; }
DistParams params(const std::normal_distribution<double>& d) {
  return {true, d.mean(), d.stddev()};
}

template <typename Dist>
void fill(Array& a, Dist dist, const char* who) {
  if (!is_floating(a.dtype())) fail(CH_ERR_DTYPE, who, ": ", a.describe(), " is not a float array");
  DistParams p = params(dist);  // each device's own generator
  backend_for(a.device(), who)
      .fill_random(a.device().index, a.raw(), a.dtype(), a.size(), p.normal, p.a, p.b);
}

}  // namespace

void seed(uint64_t s) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.engine.seed(s);
}

void fill_normal(Array& a, double mean, double stddev) {
  fill(a, std::normal_distribution<double>(mean, stddev), "random normal");
}

void fill_uniform(Array& a, double low, double high) {
  fill(a, std::uniform_real_distribution<double>(low, high), "random uniform");
}

void host_samples(void* dst, DType dtype, int64_t n, bool normal, double a, double b) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  dispatch_floating(dtype, "random", [&](auto t) {
    using T = decltype(t);
    T* p = static_cast<T*>(dst);
    if (normal) {
      std::normal_distribution<double> dist(a, b);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(dist(g.engine));
    } else {
      std::uniform_real_distribution<double> dist(a, b);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(dist(g.engine));
    }
  });
}

uint64_t next_u64() {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.engine();
}

}  // namespace chainerc::random
