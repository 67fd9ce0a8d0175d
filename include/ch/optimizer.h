/*
 * chainerc — ch_optimizer: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop and user-defined optimizers.
 */
#ifndef CH_OPTIMIZER_H
#define CH_OPTIMIZER_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* CH_OPTIMIZER_H */
