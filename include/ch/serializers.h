/*
 * chainerc — checkpoints: a function set's parameters and an optimizer's state as NumPy .npz files.
 *
 * The files are ordinary NumPy archives: a zip file whose entries
 * "<key>.npy" are NPY format 1.0 arrays (little-endian '<f4', '<f8', '<i4' or
 * '<i8', C order), so numpy.load(path)[key] reads each array directly.
 *  - A function set's file has one entry per parameter, keyed by its path
 *    ("l1/W", "enc/l1/b"): the keys chainer.serializers.save_npz(path, model)
 *    writes for a Chain of the same structure (Chainer >= 1.5), so files from
 *    Chainer load here and files from here load in Chainer.
 *  - An optimizer's file has, as Chainer's save_npz(path, optimizer): "t" and
 *    "epoch" (int64 scalars), and for each parameter "<path>/t" (int64) and one
 *    entry per state array "<path>/<state name>" (e.g. "l1/W/m", "l1/W/v").
 *
 * Loading reads entries stored or deflated (numpy.savez or
 * numpy.savez_compressed, Chainer's compressed default). Every entry needed is
 * read and checked (present, well-formed, same shape and dtype as the target)
 * before any array is written: on any error the model or optimizer is left
 * untouched and the message names the file, the key and the values. Extra
 * entries in the file are ignored.
 *
 * Threading: a function set or optimizer must not be updated by another
 * thread while it is saved or loaded.
 */
#ifndef CH_SERIALIZERS_H
#define CH_SERIALIZERS_H

#include "common.h"
#include "function_set.h"
#include "optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags for the save functions. */
enum {
  CH_NPZ_STORED = 0,    /* entries stored uncompressed, as numpy.savez */
  CH_NPZ_COMPRESSED = 1 /* entries deflated, as numpy.savez_compressed */
};

/* Write every parameter of `set` to `path` (created or replaced), keyed by
 * its path; parameters on a GPU are written from host copies. CH_ERR_IO
 * naming the file if it cannot be written. */
CH_API ch_status ch_function_set_save_npz(const ch_function_set* set, const char* path,
                                          int32_t flags);
/* Read every parameter of `set` from `path` (see above: all checked first,
 * then copied into the existing arrays in place, on whatever device they
 * are: a GPU model loads as it is). Errors: CH_ERR_IO (missing,
 * truncated or malformed file or entry), CH_ERR_INVALID_ARGUMENT (a key is
 * missing), CH_ERR_SHAPE / CH_ERR_DTYPE (an entry's shape or dtype differs from
 * the parameter's). */
CH_API ch_status ch_function_set_load_npz(ch_function_set* set, const char* path);

/* Write the optimizer's t and state to `path`. The optimizer must be set up. */
CH_API ch_status ch_optimizer_save_npz(const ch_optimizer* optimizer, const char* path,
                                       int32_t flags);
/* Read t and every state array from `path` into a set-up optimizer (checked
 * first, as for function sets; "epoch" and "<path>/t" entries are optional
 * and otherwise ignored). */
CH_API ch_status ch_optimizer_load_npz(ch_optimizer* optimizer, const char* path);

/* Write `n` arrays to `path` as an .npz with keys[i] (entry "<keys[i]>.npy").
 * Keys must be non-empty and distinct. arrays[] are borrowed. */
CH_API ch_status ch_serializers_save_npz_arrays(const char* path, const char* const* keys,
                                                ch_array* const* arrays, size_t n, int32_t flags);
/* Read the entry `key` of the .npz at `path` as a new array ('<f4' float32,
 * '<f8' float64, '<i4' int32; '<i8' is converted to int32 when every value
 * fits). *out: new reference; release with ch_array_release. */
CH_API ch_status ch_serializers_load_npz_array(ch_array** out, const char* path, const char* key);

#ifdef __cplusplus
}
#endif
#endif /* CH_SERIALIZERS_H */
