// dropout: in training, y = x * mask where mask is 1 / (1 - ratio) with
// probability 1 - ratio and 0 otherwise (Chainer's F.dropout, ratio 0.5);
// backward gx = gy * mask. In test mode it returns x itself, as Chainer does.
// The mask comes from a counter-based hash (splitmix64) of the element index
// and one value drawn from the engine's generator, so ch_config_seed makes it
// reproducible and the work splits over threads.
#include <cmath>

#include "core/random.h"
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// splitmix64: a counter-based stream, so every element's draw depends only
// on (seed, index) and the mask is the same whatever the thread split.
inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Dropout final : public Function {
 public:
  explicit Dropout(double ratio) : ratio_(ratio) {}
  const char* name() const override { return "Dropout"; }
  bool retains_input(size_t) const override { return false; }  // backward reads the mask
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("dropout", x);
    mask_ = Array::empty_like(x);
    Array y = Array::empty_like(x);
    // One draw from the engine's generator (ch_config_seed) seeds the mask.
    const uint64_t seed = random::next_u64();
    // u = 53 random bits / 2^53, uniform in [0, 1); kept when u >= ratio
    // (probability 1 - ratio), i.e. when the bits reach ceil(ratio * 2^53).
    const uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(ratio_, 53)));
    dispatch_floating(x.dtype(), "dropout", [&](auto t) {
      using T = decltype(t);
      const T scale = static_cast<T>(1.0 / (1.0 - ratio_));
      const T* px = x.data<T>();
      T *pm = mask_.data<T>(), *py = y.data<T>();
      cpu::parallel_for(x.size(), cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const uint64_t bits = mix(seed + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL) >> 11;
          const T m = bits >= threshold ? scale : T(0);
          pm[i] = m;
          py[i] = px[i] * m;
        }
      });
    });
    return {y};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {par_binary("dropout", gy[0], mask_, [](auto g, auto m) { return g * m; })};
  }

 private:
  double ratio_;
  Array mask_;
};

}  // namespace

VarPtr dropout(const VarPtr& x, double ratio, bool train) {
  if (!(ratio >= 0.0 && ratio < 1.0))
    fail(CH_ERR_INVALID_ARGUMENT, "dropout: ratio ", ratio, " is out of range [0, 1)");
  if (!train) return x;
  return apply1(std::make_shared<Dropout>(ratio), {x});
}

}  // namespace chainerc::ops
