/*
 * chainerc — index specifications for ch_functions_get_item and
 * ch_functions_scatter_add (NumPy's x[key], Chainer 7's F.get_item): an
 * array of ch_index items, one per element of the key tuple.
 *
 *   CH_INDEX_INT       x[i]: `start` is the integer (negative counts from
 *                      the end); the axis goes away
 *   CH_INDEX_SLICE     x[start:stop:step]: a bound is used only where its
 *                      flag (CH_INDEX_HAS_START / CH_INDEX_HAS_STOP) is set,
 *                      Python's None otherwise; step 0 means 1; negative
 *                      steps count down (Python's slice.indices)
 *   CH_INDEX_NEWAXIS   None: a new axis of extent 1
 *   CH_INDEX_ELLIPSIS  ...: as many full slices as the other items leave
 *                      (at most one per key)
 *   CH_INDEX_ARRAY     an int32 array (borrowed for the call; any device, any
 *                      shape; negative entries count from the end) along
 *                      one axis: its shape replaces the axis (NumPy's
 *                      advanced indexing with one array; at most one per key)
 *
 * Items after the last one act as full slices. Each item carries its
 * version (CH_INDEX_VERSION; initialise with CH_INDEX_INIT, a full slice),
 * so that fields appended later keep older callers' meaning.
 */
#ifndef CH_INDEX_H
#define CH_INDEX_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of ch_index items (ch_index.kind). */
enum {
  CH_INDEX_INT = 0,
  CH_INDEX_SLICE = 1,
  CH_INDEX_NEWAXIS = 2,
  CH_INDEX_ELLIPSIS = 3,
  CH_INDEX_ARRAY = 4
};

#define CH_INDEX_HAS_START 1
#define CH_INDEX_HAS_STOP 2

#define CH_INDEX_VERSION 1
typedef struct ch_index {
  uint32_t version;      /* CH_INDEX_VERSION */
  int32_t kind;          /* CH_INDEX_INT, ... */
  int32_t flags;         /* CH_INDEX_HAS_START | CH_INDEX_HAS_STOP (slices) */
  int32_t reserved;      /* 0 */
  int64_t start;         /* the integer (INT), the first position (SLICE) */
  int64_t stop;          /* the end, exclusive (SLICE) */
  int64_t step;          /* the step (SLICE; 0 = 1) */
  const ch_array* array; /* the int32 index array (ARRAY); borrowed */
} ch_index;
#define CH_INDEX_INIT \
  { CH_INDEX_VERSION, CH_INDEX_SLICE, 0, 0, 0, 0, 1, NULL }

#ifdef __cplusplus
}
#endif

#endif /* CH_INDEX_H */
