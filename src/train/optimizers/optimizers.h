// The built-in optimizers (chainer.optimizers), one file each in this folder.
// Each factory validates the hyperparameters (Error(CH_ERR_INVALID_ARGUMENT)
// naming the value, prefixed with `who`).
#pragma once

#include "train/optimizer.h"

namespace chainerc {

OptimizerPtr make_sgd(double lr, const char* who);
OptimizerPtr make_momentum_sgd(double lr, double momentum, const char* who);
OptimizerPtr make_adagrad(double lr, double eps, const char* who);
OptimizerPtr make_adadelta(double rho, double eps, const char* who);
OptimizerPtr make_adam(double alpha, double beta1, double beta2, double lam, double eps,
                       const char* who);
// Adam with Chainer 7's terms: eta scales the step, weight_decay_rate is the
// decoupled weight decay (AdamW), amsgrad divides by the running maximum of v.
// The defaults are Chainer 7's (lam = 1: no decay of beta1).
struct AdamConfig {
  double alpha = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, eta = 1.0;
  double weight_decay_rate = 0.0;
  bool amsgrad = false;
  double lam = 1.0;
};
OptimizerPtr make_adam(const AdamConfig& config, const char* who);
OptimizerPtr make_nesterov_ag(double lr, double momentum, const char* who);
OptimizerPtr make_rmsprop(double lr, double alpha, double eps, const char* who);

}  // namespace chainerc
