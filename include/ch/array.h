/*
 * chainerc — n-dimensional arrays (ch_array).
 *
 * An array is C-contiguous, has a dtype (CH_FLOAT32, CH_FLOAT64, CH_INT32), a
 * shape of at most CH_MAX_NDIM dimensions and a device. Several handles and
 * variables may share one array's memory: the data stays alive while any of
 * them does.
 *
 * Threading: any handle may be used, retained and released from any thread.
 * Reading an array from several threads at once is safe; writing its elements
 * while another thread reads or writes them is the caller's race to avoid.
 */
#ifndef CH_ARRAY_H
#define CH_ARRAY_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ch_release_callback is in common.h. */

/* Size of one element of `dtype` in bytes, or 0 for an unknown dtype. */
CH_API size_t ch_dtype_size(ch_dtype dtype);
/* Name such as "float32". Borrowed; static storage ("unknown" if invalid). */
CH_API const char* ch_dtype_name(ch_dtype dtype);
/* The CPU device value. */
CH_API ch_device ch_device_cpu(void);

/* New array with a copy of `data`, which holds prod(shape) elements of `dtype`
 * laid out C-contiguously in host memory. ndim may be 0 (a scalar).
 * *out: new reference; release with ch_array_release. */
CH_API ch_status ch_array_new(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                              const void* data, ch_device device);
/* New array with uninitialized elements. *out: new reference. */
CH_API ch_status ch_array_new_empty(ch_array** out, ch_dtype dtype, const int64_t* shape,
                                    int32_t ndim, ch_device device);
/* New array with every element equal to `value` (converted to dtype).
 * *out: new reference. */
CH_API ch_status ch_array_new_full(ch_array** out, ch_dtype dtype, const int64_t* shape,
                                   int32_t ndim, double value, ch_device device);

/* Wrap an external buffer without copying. The buffer must hold prod(shape)
 * elements C-contiguously on `device` and stay valid until `release` is called
 * (with `data` and `user_data`) once chainerc no longer uses it; `release` may
 * be NULL when the caller manages the lifetime. On failure `release` is NOT
 * called. *out: new reference. */
CH_API ch_status ch_array_wrap(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                               void* data, ch_device device, ch_release_callback release,
                               void* user_data);

/* Deep copy. *out: new reference. */
CH_API ch_status ch_array_copy(ch_array** out, const ch_array* array);
/* An array sharing `array`'s memory with another shape of the same size.
 * *out: new reference. */
CH_API ch_status ch_array_reshape(ch_array** out, const ch_array* array, const int64_t* shape,
                                  int32_t ndim);
/* Copy the elements into `dst`, a host buffer of `nbytes` bytes, which must
 * be ch_array_nbytes(array). */
CH_API ch_status ch_array_read(const ch_array* array, void* dst, size_t nbytes);
/* Overwrite the elements from `src`, a host buffer of ch_array_nbytes bytes. */
CH_API ch_status ch_array_write(ch_array* array, const void* src, size_t nbytes);
/* Set every element to `value`. */
CH_API ch_status ch_array_fill(ch_array* array, double value);
/* Element at flat index `index` converted to double (for tests and debugging). */
CH_API ch_status ch_array_get(double* out, const ch_array* array, int64_t index);

/* New reference to the same array: retain. Returns `array`. */
CH_API ch_array* ch_array_retain(ch_array* array);
/* Drop a reference. NULL is a no-op. */
CH_API ch_status ch_array_release(ch_array* array);

/* Getters. They cannot fail; given an invalid handle they return 0, NULL,
 * -1 (dtype) or a device of type 0. */
/* Pointer to the first element on the array's device. Borrowed; valid while
 * the array is alive. Inputs and gradients passed to callbacks are read-only. */
CH_API void* ch_array_data(const ch_array* array);
CH_API ch_dtype ch_array_dtype(const ch_array* array);
CH_API int32_t ch_array_ndim(const ch_array* array);
/* Pointer to ndim extents. Borrowed; valid while the array is alive. */
CH_API const int64_t* ch_array_shape(const ch_array* array);
/* Number of elements (1 for a 0-d array). */
CH_API int64_t ch_array_size(const ch_array* array);
CH_API size_t ch_array_nbytes(const ch_array* array);
CH_API ch_device ch_array_device(const ch_array* array);

/* --- host memory ------------------------------------------------------- */

/* ch_memory_stats is in common.h. */

/* Statistics of the caching allocator of `device` (the CPU, or a CUDA
 * device: CH_ERR_DEVICE when that device does not exist). */
CH_API ch_status ch_memory_stats_get(ch_memory_stats* out, ch_device device);
/* Return cached blocks of `device` to the system (cudaFree for a CUDA
 * device, which waits for the device's work). Free parts of a larger block
 * whose other parts are still in use stay cached (counted in
 * bytes_cached) until those are freed too. */
CH_API ch_status ch_memory_empty_cache(ch_device device);

/* --- arrays on any device (CPU and CUDA) --------------------------------- */
/* Arrays on a CUDA device (ch_device_cuda in <ch/cuda.h>) are made by
 * ch_array_new (copying host `data` to the device), ch_array_new_empty,
 * ch_array_new_full and ch_array_to_device; ch_array_read, ch_array_write,
 * ch_array_fill, ch_array_get and ch_array_copy work on them by copying
 * through the host or on the device. ch_array_data returns a DEVICE pointer
 * for them: never dereference it on the host. Built-in functions run on the
 * device of their inputs; inputs on two devices are CH_ERR_DEVICE (except
 * ch_functions_copy, which moves its input to another device). */

/* A copy of `array` on `device`: host to device, device to host, between
 * devices or on the same device (always a new buffer). The source may be
 * changed once the call returns and the result reads as the copy; a copy to
 * a CUDA device may still be queued there (through page-locked staging
 * memory and the device's copy stream, overlapping the work queued before
 * it; <ch/cuda.h>), a copy to the host is complete.
 * *out: new reference; release with ch_array_release. */
CH_API ch_status ch_array_to_device(ch_array** out, const ch_array* array, ch_device device);
/* Copy the elements of `src` into `dst` (same dtype and number of elements,
 * any devices); complete when the call returns. */
CH_API ch_status ch_array_copy_from(ch_array* dst, const ch_array* src);
/* Fill a float array with samples from U[low, high) or N(mean, stddev^2):
 * CPU arrays from the process generator (ch_config_seed, CH_SEED), CUDA
 * arrays from their device's cuRAND generator (ch_cuda_seed, CH_SEED). */
CH_API ch_status ch_array_fill_uniform(ch_array* array, double low, double high);
CH_API ch_status ch_array_fill_normal(ch_array* array, double mean, double stddev);

/* --- device memory limit and out-of-memory hook -------------------------- */

/* Cap the bytes the caching allocator of CUDA device `device` may hold from
 * the device (in use + cached); 0 removes the cap (the default). Allocations
 * beyond it fail as if the device were full (after the out-of-memory hook).
 * A CPU device is CH_ERR_UNSUPPORTED. */
CH_API ch_status ch_memory_set_limit(ch_device device, size_t bytes);
/* The cap set by ch_memory_set_limit (0 = none). */
CH_API ch_status ch_memory_limit(size_t* out, ch_device device);

/* Called when a device allocation fails (the device is full or the limit is
 * reached, even after the allocator returned its cached blocks): the hook may
 * release arrays (run a garbage collector) and return; the allocation is then
 * retried once, and fails with CH_ERR_OUT_OF_MEMORY (message naming the
 * device, the requested and the in-use bytes) if it still cannot be served.
 * It runs on the thread that allocates, inside the C API call that needed the
 * memory; it may release handles but must not allocate device memory through
 * chainerc. `requested_bytes` is the request that failed. */
/* ch_oom_hook (in common.h) is called with the device and the requested bytes. */
/* Install the process-wide hook (NULL removes it). `user_data` is borrowed:
 * it must stay valid until the hook is replaced. Cannot fail. */
CH_API void ch_memory_set_oom_hook(ch_oom_hook hook, void* user_data);

#ifdef __cplusplus
}
#endif
#endif /* CH_ARRAY_H */
