/*
 * chainerc — ch_function_set: named collections of parameterized functions (the seed's FunctionSet).
 */
#ifndef CH_FUNCTION_SET_H
#define CH_FUNCTION_SET_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* CH_FUNCTION_SET_H */
