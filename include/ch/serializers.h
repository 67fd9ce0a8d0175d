/*
 * chainerc — checkpoints: a function set's parameters and an optimizer's state as NumPy .npz files.
 */
#ifndef CH_SERIALIZERS_H
#define CH_SERIALIZERS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* CH_SERIALIZERS_H */
