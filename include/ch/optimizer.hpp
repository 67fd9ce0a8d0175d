// chainerc's C++ API: ch::Optimizer (over <ch/optimizer.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_OPTIMIZER_HPP
#define CH_OPTIMIZER_HPP

#include <ch/function_set.hpp>

namespace ch {
/// An optimizer (ch_optimizer): SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop, NesterovAG with the
/// seed's defaults. A handle: copies refer to the same optimizer. See <ch/optimizer.h>.
class Optimizer : public detail::Handle<ch_optimizer, ch_optimizer_retain, ch_optimizer_release> {
 public:
  Optimizer() noexcept = default;
  static Optimizer adopt(ch_optimizer* handle) noexcept { return Optimizer(handle); }
  static Optimizer borrow(ch_optimizer* handle) noexcept {
    return Optimizer(handle ? ch_optimizer_retain(handle) : nullptr);
  }

  static Optimizer sgd(double lr = CH_SGD_DEFAULT_LR) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_sgd_new(&out, lr));
    return Optimizer(out);
  }
  static Optimizer momentum_sgd(double lr = CH_MOMENTUM_SGD_DEFAULT_LR,
                                double momentum = CH_MOMENTUM_SGD_DEFAULT_MOMENTUM) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_momentum_sgd_new(&out, lr, momentum));
    return Optimizer(out);
  }
  static Optimizer adagrad(double lr = CH_ADAGRAD_DEFAULT_LR, double eps = CH_ADAGRAD_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adagrad_new(&out, lr, eps));
    return Optimizer(out);
  }
  static Optimizer adadelta(double rho = CH_ADADELTA_DEFAULT_RHO,
                            double eps = CH_ADADELTA_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adadelta_new(&out, rho, eps));
    return Optimizer(out);
  }
  static Optimizer adam(double alpha = CH_ADAM_DEFAULT_ALPHA, double beta1 = CH_ADAM_DEFAULT_BETA1,
                        double beta2 = CH_ADAM_DEFAULT_BETA2, double lam = CH_ADAM_DEFAULT_LAM,
                        double eps = CH_ADAM_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adam_new(&out, alpha, beta1, beta2, lam, eps));
    return Optimizer(out);
  }
  /// Chainer 7's Adam: weight_decay_rate (AdamW), eta, amsgrad, with Chainer 7's
  /// defaults in CH_ADAM_OPTIONS_INIT (e.g. `auto o = ch_adam_options
  /// CH_ADAM_OPTIONS_INIT; o.weight_decay_rate = 0.01; Optimizer::adam(o)`).
  static Optimizer adam(const ch_adam_options& options) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adam_new_ex(&out, &options));
    return Optimizer(out);
  }
  /// Chainer 7's NesterovAG.
  static Optimizer nesterov_ag(double lr = CH_NESTEROV_AG_DEFAULT_LR,
                               double momentum = CH_NESTEROV_AG_DEFAULT_MOMENTUM) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_nesterov_ag_new(&out, lr, momentum));
    return Optimizer(out);
  }
  static Optimizer rmsprop(double lr = CH_RMSPROP_DEFAULT_LR,
                           double alpha = CH_RMSPROP_DEFAULT_ALPHA,
                           double eps = CH_RMSPROP_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_rmsprop_new(&out, lr, alpha, eps));
    return Optimizer(out);
  }

  std::string name() const { return ch_optimizer_name(get()); }
  double hyperparam(const std::string& name) const {
    double v = 0;
    check(ch_optimizer_get_hyperparam(&v, get(), name.c_str()));
    return v;
  }
  void set_hyperparam(const std::string& name, double value) {
    check(ch_optimizer_set_hyperparam(get(), name.c_str(), value));
  }
  /// Set up with every parameter of `set` (t = 0, fresh state). Returns *this.
  Optimizer& setup(const FunctionSet& set) {
    check(ch_optimizer_setup(get(), set.get()));
    return *this;
  }
  Optimizer& setup(const std::vector<Array>& params, const std::vector<Array>& grads) {
    if (params.size() != grads.size())
      detail::fail(CH_ERR_INVALID_ARGUMENT, "Optimizer::setup: " + std::to_string(params.size()) +
                                                " parameters but " + std::to_string(grads.size()) +
                                                " gradients");
    std::vector<ch_array*> ps = detail::handles_of(params), gs = detail::handles_of(grads);
    check(ch_optimizer_setup_arrays(get(), ps.data(), gs.data(), ps.size()));
    return *this;
  }
  void zero_grads() { check(ch_optimizer_zero_grads(get())); }
  void update() { check(ch_optimizer_update(get())); }
  /// Plain SGD's step taken inside backward (ch_optimizer_set_step_in_backward):
  /// each Linear weight applied once is stepped by one GEMM into W; its
  /// gradient is not written, so the gradient utilities throw until update().
  Optimizer& set_step_in_backward(bool enable) {
    check(ch_optimizer_set_step_in_backward(get(), enable ? 1 : 0));
    return *this;
  }
  bool step_in_backward() const noexcept { return ch_optimizer_step_in_backward(get()) != 0; }
  int64_t t() const noexcept { return ch_optimizer_t(get()); }
  void set_t(int64_t t) { check(ch_optimizer_set_t(get(), t)); }
  int64_t epoch() const noexcept { return ch_optimizer_epoch(get()); }
  void new_epoch() { check(ch_optimizer_new_epoch(get())); }
  void accumulate_grads(const std::vector<Array>& grads) {
    std::vector<ch_array*> gs = detail::handles_of(grads);
    check(ch_optimizer_accumulate_grads(get(), gs.data(), gs.size()));
  }
  double compute_grads_norm() const {
    double norm = 0;
    check(ch_optimizer_compute_grads_norm(&norm, get()));
    return norm;
  }
  void clip_grads(double maxnorm) { check(ch_optimizer_clip_grads(get(), maxnorm)); }
  void weight_decay(double decay) { check(ch_optimizer_weight_decay(get(), decay)); }
  /// State arrays by checkpoint key ("l1/W/v"), shared with the optimizer.
  std::vector<std::pair<std::string, Array>> state() const {
    std::vector<std::pair<std::string, Array>> out;
    for (size_t i = 0, n = ch_optimizer_state_count(get()); i < n; ++i) {
      ch_array* a = nullptr;
      const char* key = nullptr;
      check(ch_optimizer_state(&a, &key, get(), i));
      out.emplace_back(key, Array::adopt(a));
    }
    return out;
  }
  void save_npz(const std::string& path, bool compress = false) const {
    check(ch_optimizer_save_npz(get(), path.c_str(), compress ? CH_NPZ_COMPRESSED : CH_NPZ_STORED));
  }
  void load_npz(const std::string& path) { check(ch_optimizer_load_npz(get(), path.c_str())); }

 private:
  explicit Optimizer(ch_optimizer* adopted) noexcept : Handle(adopted) {}
};

}  // namespace ch

#endif  // CH_OPTIMIZER_HPP
