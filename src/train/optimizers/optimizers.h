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
OptimizerPtr make_rmsprop(double lr, double alpha, double eps, const char* who);

}  // namespace chainerc
