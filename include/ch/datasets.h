/*
 * chainerc — data sets: IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed.
 */
#ifndef CH_DATASETS_H
#define CH_DATASETS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* CH_DATASETS_H */
