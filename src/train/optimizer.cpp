#include "optimizer.h"

#include <cmath>
#include <cstring>
#include <set>

#include "backend/cpu/parallel.h"
#include "capi/callback_function.h"
#include "capi/error_state.h"
#include "capi/handles.h"

namespace chainerc {

// ---- the base class ----------------------------------------------------------

double Optimizer::get_hyperparam(const std::string& name, const char* who) const {
  fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", this->name(), "' has no hyperparameter '",
       name, "' (a user-defined optimizer keeps its hyperparameters in its user data)");
}

void Optimizer::set_hyperparam(const std::string& name, double, const char* who) {
  get_hyperparam(name, who);
}

void Optimizer::require_setup(const char* who) const {
  if (!is_setup)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name(),
         "' is not set up (call ch_optimizer_setup or ch_optimizer_setup_arrays first)");
}

void Optimizer::setup(std::vector<NamedParameter> params, const char* who) {
  std::vector<OptSlot> fresh;
  fresh.reserve(params.size());
  for (NamedParameter& p : params) {
    if (!p.param.defined() || !p.grad.defined())
      fail(CH_ERR_INVALID_ARGUMENT, who, ": parameter '", p.path, "' has no ",
           p.param.defined() ? "gradient" : "data", " array");
    if (!is_floating(p.param.dtype()))
      fail(CH_ERR_DTYPE, who, ": parameter '", p.path, "' is a ", p.param.describe(),
           "; optimizers update float32 or float64 parameters");
    if (p.param.shape() != p.grad.shape() || p.param.dtype() != p.grad.dtype() ||
        p.param.device() != p.grad.device())
      fail(CH_ERR_SHAPE, who, ": parameter '", p.path, "' is a ", p.param.describe(),
           " but its gradient is a ", p.grad.describe());
    if (!p.param.device().is_cpu())
      fail(CH_ERR_DEVICE, who, ": parameter '", p.path, "' is a ", p.param.describe(),
           "; this build updates CPU parameters only");
    OptSlot s;
    s.path = std::move(p.path);
    s.param = std::move(p.param);
    s.grad = std::move(p.grad);
    init_state(s);
    for (const std::string& n : state_names()) s.keys.push_back(s.path + "/" + n);
    fresh.push_back(std::move(s));
  }
  slots.swap(fresh);
  t = 0;
  is_setup = true;
}

void Optimizer::update(const char* who) {
  require_setup(who);
  ++t;
  for (OptSlot& s : slots) update_one(s);
}

namespace {

template <typename F>
void for_chunks(int64_t n, F&& body) {
  cpu::parallel_for(n, cpu::kElementwiseGrain, body);
}

}  // namespace

void Optimizer::zero_grads() {
  for (OptSlot& s : slots) {
    if (!s.grad.device().is_cpu()) {
      s.grad.fill(0.0);
      continue;
    }
    // All-zero bytes are 0.0 in float32 and float64: memset in chunks on the
    // pool (a large model's gradients are several MiB per step).
    char* bytes = static_cast<char*>(s.grad.raw());
    cpu::parallel_for(
        static_cast<int64_t>(s.grad.nbytes()), int64_t{1} << 18,
        [bytes](int64_t b, int64_t e) { std::memset(bytes + b, 0, static_cast<size_t>(e - b)); });
  }
}

void Optimizer::accumulate_grads(const Arrays& grads, const char* who) {
  require_setup(who);
  if (grads.size() != slots.size())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", grads.size(), " gradients given for ", slots.size(),
         " parameters");
  for (size_t i = 0; i < grads.size(); ++i) {
    const Array& g = slots[i].grad;
    if (grads[i].dtype() != g.dtype() || grads[i].shape() != g.shape() ||
        !grads[i].device().is_cpu())
      fail(CH_ERR_SHAPE, who, ": grads[", i, "] is a ", grads[i].describe(),
           " but the gradient of '", slots[i].path, "' is a ", g.describe());
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    const Array& src = grads[i];
    Array& dst = slots[i].grad;
    dispatch_floating(dst.dtype(), who, [&](auto tag) {
      using T = decltype(tag);
      T* d = dst.data<T>();
      const T* s = src.data<T>();
      for_chunks(dst.size(), [=](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) d[k] += s[k];
      });
    });
  }
}

double Optimizer::grads_norm() const {
  double total = 0;
  constexpr int64_t kBlock = cpu::kElementwiseGrain;
  for (const OptSlot& s : slots) {
    const int64_t n = s.grad.size();
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
    dispatch_floating(s.grad.dtype(), "compute_grads_norm", [&](auto tag) {
      using T = decltype(tag);
      const T* g = s.grad.data<T>();
      double* out = partial.data();
      // Fixed blocks summed in order: the result does not depend on the thread count.
      cpu::parallel_for(blocks, 1, [=](int64_t b, int64_t e) {
        for (int64_t blk = b; blk < e; ++blk) {
          const int64_t lo = blk * kBlock, hi = std::min(n, lo + kBlock);
          double acc = 0;
          for (int64_t k = lo; k < hi; ++k)
            acc += static_cast<double>(g[k]) * static_cast<double>(g[k]);
          out[blk] = acc;
        }
      });
    });
    for (double p : partial) total += p;
  }
  return std::sqrt(total);
}

void Optimizer::clip_grads(double maxnorm, const char* who) {
  if (!(maxnorm >= 0) || !std::isfinite(maxnorm))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": maxnorm is ", maxnorm, "; it must be finite and >= 0");
  require_setup(who);
  double norm = grads_norm();
  if (!(norm > maxnorm)) return;
  double rate = maxnorm / norm;
  for (OptSlot& s : slots) {
    dispatch_floating(s.grad.dtype(), who, [&](auto tag) {
      using T = decltype(tag);
      T* g = s.grad.data<T>();
      const T r = static_cast<T>(rate);
      for_chunks(s.grad.size(), [=](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) g[k] *= r;
      });
    });
  }
}

void Optimizer::weight_decay(double decay, const char* who) {
  if (!std::isfinite(decay))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": decay is ", decay, "; it must be finite");
  require_setup(who);
  for (OptSlot& s : slots) {
    dispatch_floating(s.grad.dtype(), who, [&](auto tag) {
      using T = decltype(tag);
      T* g = s.grad.data<T>();
      const T* p = s.param.data<T>();
      const T d = static_cast<T>(decay);
      for_chunks(s.grad.size(), [=](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) g[k] += d * p[k];
      });
    });
  }
}

// ---- built-in optimizers ---------------------------------------------------------

namespace {

class BuiltinOptimizer final : public Optimizer {
 public:
  BuiltinOptimizer(OptimizerKind kind, const Hyperparams& h) : kind_(kind), h_(h) {}

  const char* name() const override {
    switch (kind_) {
      case OptimizerKind::SGD:
        return "SGD";
      case OptimizerKind::MomentumSGD:
        return "MomentumSGD";
      case OptimizerKind::AdaGrad:
        return "AdaGrad";
      case OptimizerKind::AdaDelta:
        return "AdaDelta";
      case OptimizerKind::Adam:
        return "Adam";
      case OptimizerKind::RMSprop:
        return "RMSprop";
    }
    return "Optimizer";
  }

  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> none, v{"v"}, h{"h"}, ada{"msg", "msdx"}, adam{"m", "v"},
        ms{"ms"};
    switch (kind_) {
      case OptimizerKind::SGD:
        return none;
      case OptimizerKind::MomentumSGD:
        return v;
      case OptimizerKind::AdaGrad:
        return h;
      case OptimizerKind::AdaDelta:
        return ada;
      case OptimizerKind::Adam:
        return adam;
      case OptimizerKind::RMSprop:
        return ms;
    }
    return none;
  }

  void init_state(OptSlot& slot) override {
    slot.state.clear();
    for (size_t i = 0; i < state_names().size(); ++i)
      slot.state.push_back(Array::zeros_like(slot.param));
  }

  // The hyperparameters this kind has (Adam's "lr" is derived, read-only).
  std::vector<std::string> names() const {
    switch (kind_) {
      case OptimizerKind::SGD:
        return {"lr"};
      case OptimizerKind::MomentumSGD:
        return {"lr", "momentum"};
      case OptimizerKind::AdaGrad:
        return {"lr", "eps"};
      case OptimizerKind::AdaDelta:
        return {"rho", "eps"};
      case OptimizerKind::Adam:
        return {"alpha", "beta1", "beta2", "lam", "eps", "lr"};
      case OptimizerKind::RMSprop:
        return {"lr", "alpha", "eps"};
    }
    return {};
  }

  double* field(const std::string& n, const char* who) {
    std::vector<std::string> known = names();
    bool ok = false;
    for (const auto& k : known) ok = ok || k == n;
    if (!ok) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name(), "' has no hyperparameter '", n,
           "' (it has ", list, ")");
    }
    if (n == "lr") return &h_.lr;
    if (n == "momentum") return &h_.momentum;
    if (n == "eps") return &h_.eps;
    if (n == "rho") return &h_.rho;
    if (n == "alpha") return &h_.alpha;
    if (n == "beta1") return &h_.beta1;
    if (n == "beta2") return &h_.beta2;
    return &h_.lam;
  }

  double adam_lr(const char* who) const {
    if (t <= 0)
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t) is undefined at t = ", t,
           " (before the first update)");
    double fix1 = 1.0 - std::pow(h_.beta1, static_cast<double>(t));
    double fix2 = 1.0 - std::pow(h_.beta2, static_cast<double>(t));
    return h_.alpha * std::sqrt(fix2) / fix1;
  }

  double get_hyperparam(const std::string& n, const char* who) const override {
    double* f = const_cast<BuiltinOptimizer*>(this)->field(n, who);
    if (kind_ == OptimizerKind::Adam && n == "lr") return adam_lr(who);
    return *f;
  }

  void set_hyperparam(const std::string& n, double value, const char* who) override {
    double* f = field(n, who);
    if (kind_ == OptimizerKind::Adam && n == "lr")
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's 'lr' is derived from alpha, beta1, beta2 and t; set 'alpha'");
    validate(kind_, n, value, who);
    *f = value;
  }

  static void validate(OptimizerKind kind, const std::string& n, double v, const char* who) {
    if (!std::isfinite(v))
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ", n, " is ", v, "; it must be finite");
    bool unit = n == "momentum" || n == "rho" || n == "beta1" || n == "beta2" ||
                (n == "alpha" && kind == OptimizerKind::RMSprop);
    if (unit && !(v >= 0 && v < 1))
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ", n, " is ", v, "; it must be in [0, 1)");
    if (n == "lam" && !(v > 0 && v <= 1))
      fail(CH_ERR_INVALID_ARGUMENT, who, ": lam is ", v, "; it must be in (0, 1]");
    if (!unit && n != "lam" && v < 0)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ", n, " is ", v, "; it must be >= 0");
  }

  void check_all(const char* who) {
    for (const std::string& n : names())
      if (!(kind_ == OptimizerKind::Adam && n == "lr")) validate(kind_, n, *field(n, who), who);
  }

  void update_one(OptSlot& s) override {
    dispatch_floating(s.param.dtype(), "update", [&](auto tag) {
      using T = decltype(tag);
      run<T>(s);
    });
  }

 private:
  template <typename T>
  void run(OptSlot& s) {
    const int64_t n = s.param.size();
    T* p = s.param.data<T>();
    const T* g = s.grad.data<T>();
    switch (kind_) {
      case OptimizerKind::SGD: {
        const T lr = static_cast<T>(h_.lr);
        for_chunks(n, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) p[i] -= lr * g[i];
        });
        break;
      }
      case OptimizerKind::MomentumSGD: {
        const T lr = static_cast<T>(h_.lr), mom = static_cast<T>(h_.momentum);
        T* v = s.state[0].data<T>();
        for_chunks(n, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            T vi = mom * v[i] - lr * g[i];
            v[i] = vi;
            p[i] += vi;
          }
        });
        break;
      }
      case OptimizerKind::AdaGrad: {
        const T lr = static_cast<T>(h_.lr), eps = static_cast<T>(h_.eps);
        T* h = s.state[0].data<T>();
        for_chunks(n, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            T gi = g[i];
            T hi = h[i] + gi * gi;
            h[i] = hi;
            p[i] -= lr * gi / (std::sqrt(hi) + eps);
          }
        });
        break;
      }
      case OptimizerKind::AdaDelta: {
        const T rho = static_cast<T>(h_.rho), one_minus_rho = static_cast<T>(1 - h_.rho),
                eps = static_cast<T>(h_.eps);
        T* msg = s.state[0].data<T>();
        T* msdx = s.state[1].data<T>();
        for_chunks(n, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            T gi = g[i];
            T m = rho * msg[i] + one_minus_rho * gi * gi;
            msg[i] = m;
            T dx = std::sqrt((msdx[i] + eps) / (m + eps)) * gi;
            msdx[i] = rho * msdx[i] + one_minus_rho * dx * dx;
            p[i] -= dx;
          }
        });
        break;
      }
      case OptimizerKind::Adam: {
        const double beta1_t = h_.beta1 * std::pow(h_.lam, static_cast<double>(t - 1));
        const T a1 = static_cast<T>(1 - beta1_t), a2 = static_cast<T>(1 - h_.beta2);
        const T lr = static_cast<T>(adam_lr("update")), eps = static_cast<T>(h_.eps);
        T* m = s.state[0].data<T>();
        T* v = s.state[1].data<T>();
        for_chunks(n, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            T gi = g[i];
            T mi = m[i] + a1 * (gi - m[i]);
            T vi = v[i] + a2 * (gi * gi - v[i]);
            m[i] = mi;
            v[i] = vi;
            p[i] -= lr * mi / (std::sqrt(vi) + eps);
          }
        });
        break;
      }
      case OptimizerKind::RMSprop: {
        const T lr = static_cast<T>(h_.lr), alpha = static_cast<T>(h_.alpha),
                one_minus_alpha = static_cast<T>(1 - h_.alpha), eps = static_cast<T>(h_.eps);
        T* ms = s.state[0].data<T>();
        for_chunks(n, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            T gi = g[i];
            T msi = alpha * ms[i] + one_minus_alpha * gi * gi;
            ms[i] = msi;
            p[i] -= lr * gi / (std::sqrt(msi) + eps);
          }
        });
        break;
      }
    }
  }

  OptimizerKind kind_;
  Hyperparams h_;
};

// ---- user-defined optimizers -------------------------------------------------------

class CallbackOptimizer final : public Optimizer {
 public:
  CallbackOptimizer(const ch_optimizer_def& def, std::string name, std::vector<std::string> states)
      : def_(def), name_(std::move(name)), states_(std::move(states)) {
    def_.name = nullptr;
    def_.state_names = nullptr;
  }
  ~CallbackOptimizer() override {
    if (def_.destroy) def_.destroy(def_.user_data);
  }
  void disown() { def_.destroy = nullptr; }

  const char* name() const override { return name_.c_str(); }
  const std::vector<std::string>& state_names() const override { return states_; }

  [[noreturn]] void callback_failed(const char* phase, const std::string& path,
                                    ch_status st) const {
    raise_callback_failure_of("optimizer '" + name_ + "'",
                              std::string(phase) + " for parameter '" + path + "'", st);
  }

  void init_state(OptSlot& slot) override {
    const size_t n = states_.size();
    slot.state.clear();
    if (!def_.init_state) {
      for (size_t i = 0; i < n; ++i) slot.state.push_back(Array::zeros_like(slot.param));
      return;
    }
    std::vector<ch_array*> out(n, nullptr);
    ch_status st;
    CallbackErrorScope errors;  // the caller's last error survives a callback that succeeds
    {
      BorrowedArrays args({slot.param, slot.grad});
      st = def_.init_state(def_.user_data, args.handles()[0], args.handles()[1], out.data(), n);
    }
    // Take the references the callback handed over, whatever happens next.
    Arrays taken(n);
    std::vector<bool> valid(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (!out[i]) continue;
      if (const std::shared_ptr<void>* obj = handle_find(out[i], HandleKind::Array)) {
        taken[i] = *static_cast<const Array*>(obj->get());
        valid[i] = true;
        try {
          handle_release(out[i], HandleKind::Array, "init_state");
        } catch (...) {
        }
      }
    }
    if (st != CH_OK) {
      errors.keep_callback_error();
      callback_failed("init_state", slot.path, st);
    }
    for (size_t i = 0; i < n; ++i) {
      if (!out[i])
        fail(CH_ERR_CALLBACK, "optimizer '", name_, "' init_state for parameter '", slot.path,
             "' returned no array for state '", states_[i], "'");
      if (!valid[i])
        fail(CH_ERR_CALLBACK, "optimizer '", name_, "' init_state for parameter '", slot.path,
             "' returned for state '", states_[i], "' something that is not a live ch_array");
    }
    slot.state = std::move(taken);
  }

  void update_one(OptSlot& slot) override {
    Arrays args;
    args.reserve(2 + slot.state.size());
    args.push_back(slot.param);
    args.push_back(slot.grad);
    for (const Array& a : slot.state) args.push_back(a);
    BorrowedArrays h(args);
    CallbackErrorScope errors;
    ch_status st = def_.update_one(def_.user_data, h.handles()[0], h.handles()[1], h.handles() + 2,
                                   slot.state.size(), t);
    if (st != CH_OK) {
      errors.keep_callback_error();
      callback_failed("update_one", slot.path, st);
    }
  }

 private:
  ch_optimizer_def def_;
  std::string name_;
  std::vector<std::string> states_;
};

}  // namespace

OptimizerPtr make_builtin_optimizer(OptimizerKind kind, const Hyperparams& h, const char* who) {
  auto opt = std::make_shared<BuiltinOptimizer>(kind, h);
  opt->check_all(who);
  return opt;
}

OptimizerPtr make_callback_optimizer(const ch_optimizer_def& def, const char* who) {
  if (def.version < 1 || def.version > CH_OPTIMIZER_DEF_VERSION)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": def->version is ", def.version,
         "; this library knows versions 1..", CH_OPTIMIZER_DEF_VERSION);
  std::string name = def.name && def.name[0] ? def.name : "UserOptimizer";
  if (!def.update_one)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' has no update_one callback");
  if (def.n_states > 64)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' asks for ", def.n_states,
         " state arrays per parameter (at most 64)");
  if (def.n_states && !def.state_names)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' has n_states ", def.n_states,
         " but no state_names");
  std::vector<std::string> states;
  std::set<std::string> seen;
  for (size_t i = 0; i < def.n_states; ++i) {
    const char* s = def.state_names[i];
    if (!s || !s[0] || std::string(s).find('/') != std::string::npos || !seen.insert(s).second)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' state_names[", i, "] (",
           s ? "'" + std::string(s) + "'" : std::string("NULL"),
           ") must be a non-empty name without '/', distinct from the others");
    states.push_back(s);
  }
  return std::make_shared<CallbackOptimizer>(def, std::move(name), std::move(states));
}

void disown_callback_optimizer(Optimizer& opt) {
  if (auto* c = dynamic_cast<CallbackOptimizer*>(&opt)) c->disown();
}

}  // namespace chainerc
