/*
 * chainerc — data sets: IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed.
 *
 * IDX format: two zero bytes, a type code (0x08 unsigned byte, 0x09 signed
 * byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of
 * dimensions (1..CH_MAX_NDIM), each extent as a big-endian uint32, then the
 * elements, big-endian, C order. Files ending in gzip streams (".gz") are
 * decompressed on the fly; plain files are read as they are.
 *
 * Threading: the functions may be called from any thread.
 */
#ifndef CH_DATASETS_H
#define CH_DATASETS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read the IDX file at `path` into a new CPU array of the file's shape.
 *  - dtype CH_FLOAT32 or CH_FLOAT64: every element converted and multiplied by
 *    `scale` (e.g. 1.0 / 255 for pixels in [0, 1]; 1.0 keeps the values).
 *  - dtype CH_INT32 (labels, ids): integer IDX types only, converted exactly;
 *    `scale` must be 1.
 * Errors: CH_ERR_IO naming the file for a missing, truncated or malformed file
 * (bad magic, unknown type code, 0 or more than CH_MAX_NDIM dimensions,
 * element count not matching the extents, data after the elements, a corrupt
 * gzip stream); CH_ERR_DTYPE / CH_ERR_INVALID_ARGUMENT for a bad dtype or
 * scale. *out: new reference; release with ch_array_release. */
CH_API ch_status ch_datasets_read_idx(ch_array** out, const char* path, ch_dtype dtype,
                                      double scale);

#ifdef __cplusplus
}
#endif
#endif /* CH_DATASETS_H */
