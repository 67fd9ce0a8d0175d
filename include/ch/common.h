/*
 * chainerc — common definitions: version, status codes, dtypes, devices, errors.
 *
 * Conventions used by every header of <ch/ch.h>:
 *  - Functions that can fail return ch_status (0 = CH_OK, negative = error kind).
 *    After a failure, ch_error_message() returns a message naming what was wrong
 *    and with which values. The message is thread-local: read it on the thread
 *    (and, for Go, inside the same cgo call) that made the failing call.
 *    Successful calls do not clear it.
 *  - Outputs come first and are named `out`. On failure, *out is set to NULL.
 *  - Ownership is stated on every function: "new reference; release with X" or
 *    "borrowed; valid until Y". Every *_release(NULL) is a no-op returning CH_OK.
 *    Releasing an already-released handle returns CH_ERR_RELEASED_HANDLE.
 *  - Handles are opaque pointers that are never dereferenced by the caller. The
 *    library validates every handle it receives: NULL, released or wrong-kind
 *    handles give an error, never a crash.
 *  - Enums have explicit values; the API grows by appending.
 */
#ifndef CH_COMMON_H
#define CH_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CH_API __declspec(dllexport)
#else
#define CH_API __attribute__((visibility("default")))
#endif

#define CH_VERSION_MAJOR 0
#define CH_VERSION_MINOR 1
#define CH_VERSION_PATCH 0
/* Version as one integer: major * 10000 + minor * 100 + patch. */
#define CH_VERSION (CH_VERSION_MAJOR * 10000 + CH_VERSION_MINOR * 100 + CH_VERSION_PATCH)

/* The most dimensions an array may have. */
#define CH_MAX_NDIM 8

/* Status codes. 0 is success; errors are negative and never change meaning. */
typedef int32_t ch_status;
enum {
  CH_OK = 0,
  CH_ERR_INVALID_ARGUMENT = -1, /* a value out of range, a bad option */
  CH_ERR_NULL_HANDLE = -2,      /* a required handle was NULL */
  CH_ERR_RELEASED_HANDLE = -3,  /* a handle already released, or of another kind */
  CH_ERR_SHAPE = -4,            /* shapes do not match or cannot broadcast */
  CH_ERR_DTYPE = -5,            /* unsupported or mismatched dtype */
  CH_ERR_DEVICE = -6,           /* wrong, missing or mismatched device */
  CH_ERR_OUT_OF_MEMORY = -7,    /* an allocation failed */
  CH_ERR_CALLBACK = -8,         /* a user callback reported failure or broke its contract */
  CH_ERR_GRAPH = -9,            /* misuse of the graph: volatile mixing, no initial error */
  CH_ERR_NOT_CLOSE = -10,       /* a numeric comparison / gradient check failed */
  CH_ERR_IO = -11,              /* reading or writing a file failed */
  CH_ERR_UNSUPPORTED = -12,     /* not available in this build or on this device */
  CH_ERR_INTERNAL = -13         /* a bug in chainerc; please report it */
};

/* Element types. Values are stable. */
typedef int32_t ch_dtype;
enum { CH_FLOAT32 = 0, CH_FLOAT64 = 1, CH_INT32 = 2 };

/* Device types, numbered as DLPack's DLDeviceType. */
enum { CH_DEVICE_CPU = 1, CH_DEVICE_CUDA = 2 };

/* A device is a value: its type and its index (0 for the CPU). */
typedef struct ch_device {
  int32_t type;
  int32_t index;
} ch_device;

/* Opaque handle types. Threading contracts are stated in each noun's header. */
typedef struct ch_array ch_array;
typedef struct ch_variable ch_variable;
typedef struct ch_function ch_function;
typedef struct ch_context ch_context;

/* Types shared by the array, memory and device headers (here so that the
 * engine's core sees no API header beyond this one). */

/* Called when a wrapped external buffer is no longer used by chainerc. */
typedef void (*ch_release_callback)(void* data, void* user_data);

/* Statistics of a caching allocator (see ch_memory_stats() in array.h). */
typedef struct ch_memory_stats {
  int64_t bytes_in_use; /* held by live arrays */
  int64_t bytes_cached; /* freed by arrays, kept for reuse */
  int64_t peak_bytes_in_use;
  int64_t allocations;  /* requests served */
  int64_t cache_misses; /* requests that reached the system allocator */
} ch_memory_stats;

/* The out-of-memory hook (see ch_memory_set_oom_hook() in array.h). */
typedef void (*ch_oom_hook)(void* user_data, ch_device device, size_t requested_bytes);

/* --- version ----------------------------------------------------------- */

/* Run-time version as CH_VERSION computes it. Cannot fail. */
CH_API int32_t ch_version(void);
/* Version string such as "0.1.0". Borrowed; static storage. */
CH_API const char* ch_version_string(void);

/* --- errors ------------------------------------------------------------ */

/* Status of the last failed call on this thread (CH_OK if none yet). */
CH_API ch_status ch_error_status(void);
/* Message of the last failed call on this thread ("" if none yet).
 * Borrowed; valid until the next failing call on this thread. */
CH_API const char* ch_error_message(void);
/* Name of a status code, e.g. "CH_ERR_SHAPE". Borrowed; static storage. */
CH_API const char* ch_status_name(ch_status status);

/* For user callbacks (forward, backward, graph and eval callbacks): record why
 * the callback is about to fail. The engine clears this before it calls a
 * callback and reads it when the callback returns a non-zero status; the
 * message is then wrapped with the function's name and the phase.
 * `message` is copied. */
CH_API void ch_error_set(ch_status status, const char* message);

/* For user callbacks: attach a host-language error object to the failure being
 * reported (a Python exception, a Go error handle, a boxed Rust panic).
 * The engine carries it to the caller of the C API call that failed, where
 * ch_error_take_payload() hands it back. If nobody takes it, `destroy` (may be
 * NULL) is called when the next error replaces it or the thread exits. */
CH_API void ch_error_set_payload(void* payload, void (*destroy)(void* payload));

/* Take the payload attached to the last error on this thread, or NULL.
 * Ownership passes to the caller (its destroy will not be called). */
CH_API void* ch_error_take_payload(void);

/* --- debugging --------------------------------------------------------- */

/* Number of live handles of each kind, for leak checks. Cannot fail. */
CH_API int64_t ch_debug_live_handles(void);
CH_API int64_t ch_debug_live_arrays(void);
CH_API int64_t ch_debug_live_variables(void);
CH_API int64_t ch_debug_live_functions(void);
/* Print every live handle (kind, handle, a short description) to stderr.
 * Setting the environment variable CH_LEAK_REPORT=1 prints this at exit. */
CH_API void ch_debug_report_live_handles(void);

#ifdef __cplusplus
}
#endif
#endif /* CH_COMMON_H */
