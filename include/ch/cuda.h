/*
 * chainerc — CUDA devices, the current device, streams, page-locked host
 * memory and asynchronous copies, and the per-device random generators.
 *
 * These functions exist in every build. In a build without the CUDA backend
 * (-Dcuda=disabled, or no toolkit), and on a machine without a GPU or driver,
 * ch_cuda_device_count() is 0 and every request for a CUDA device fails with
 * CH_ERR_DEVICE and a message "no CUDA device: ..." that says why (the CUDA
 * runtime's error); nothing falls back to the CPU silently.
 *
 * Threading: the current device is per OS thread, as in CUDA (hosts whose
 * tasks move between threads, e.g. Go, pass explicit devices instead or pin
 * the task to its thread). A ch_stream may be used from any thread; work
 * queued on one stream from several threads at once runs in an unspecified
 * order.
 *
 * Memory: each CUDA device has a caching allocator (statistics, empty cache,
 * limit and out-of-memory hook: ch_memory_* in <ch/array.h>).
 */
#ifndef CH_CUDA_H
#define CH_CUDA_H

#include "array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- devices ------------------------------------------------------------ */

/* Number of CUDA devices this process can use: 0 (not an error) without the
 * CUDA backend, a driver or a GPU. Cannot fail. */
CH_API int32_t ch_cuda_device_count(void);
/* Why ch_cuda_device_count() is 0 (e.g. "cudaErrorInsufficientDriver: CUDA
 * driver version is insufficient for CUDA runtime version", or "this build
 * has no CUDA backend"); "" when devices are available. Borrowed; valid until
 * the next call of this function on the same thread. Cannot fail. */
CH_API const char* ch_cuda_unavailable_reason(void);
/* The device value of CUDA device `index` (it need not exist; using it
 * checks). Cannot fail. */
CH_API ch_device ch_device_cuda(int32_t index);

/* The calling thread's current CUDA device (0 at start). CH_ERR_DEVICE when
 * there is no CUDA device. */
CH_API ch_status ch_cuda_current_device(int32_t* out);
/* Make `index` the calling thread's current device until the matching
 * ch_cuda_device_pop (the seed's `with cuda.using_device(index)`). Pushes
 * nest; each thread has its own stack. CH_ERR_DEVICE for a device that does
 * not exist (nothing is pushed then). */
CH_API ch_status ch_cuda_device_push(int32_t index);
/* Restore the current device from before the last push on this thread.
 * CH_ERR_INVALID_ARGUMENT when this thread has nothing pushed. */
CH_API ch_status ch_cuda_device_pop(void);
/* Wait for all work queued on device `index`. */
CH_API ch_status ch_cuda_synchronize(int32_t index);

/* Reseed the cuRAND generator of device `index` (-1: every device) as the
 * environment variable CH_SEED=seed does at start: device d draws from a seed
 * derived from (seed, d), so devices differ and runs repeat. Without CH_SEED
 * the generators start from the operating system's entropy. */
CH_API ch_status ch_cuda_seed(int32_t index, uint64_t seed);

/* --- streams ------------------------------------------------------------ */

/* chainerc's work on a CUDA device (kernels, copies, cuBLAS, cuRAND, cuDNN)
 * runs on that device's engine stream, a non-blocking stream
 * (cudaStreamNonBlocking): it does not wait for CUDA's legacy default stream
 * (NULL), nor that for it. Host code that queues its own device work next to
 * chainerc's (kernels, cudaMemcpyAsync, NCCL) queues it on this stream.
 * The cudaStream_t of device `device`'s engine stream; NULL when the device
 * does not exist. Borrowed; valid for the life of the process. Cannot fail. */
CH_API void* ch_cuda_engine_stream(int32_t device);

typedef struct ch_stream ch_stream;

/* A new stream on CUDA device `device` (non-blocking). It is ordered with the
 * device's engine stream, on which chainerc's own work runs: work queued on
 * the stream through chainerc starts after earlier engine work and before
 * later engine work (events, no host synchronisation).
 * *out: new reference; release with ch_stream_release. */
CH_API ch_status ch_stream_new(ch_stream** out, ch_device device);
/* Wait until everything queued on `stream` is done; then drop the arrays the
 * stream kept alive for its asynchronous copies. */
CH_API ch_status ch_stream_synchronize(ch_stream* stream);
/* New reference to the same stream. Returns `stream` (NULL if not live). */
CH_API ch_stream* ch_stream_retain(ch_stream* stream);
/* Drop a reference; the last one waits for the stream's work and destroys
 * it. NULL is a no-op. */
CH_API ch_status ch_stream_release(ch_stream* stream);
/* The stream's device ({0, 0} for an invalid handle). Cannot fail. */
CH_API ch_device ch_stream_device(const ch_stream* stream);
/* The cudaStream_t, for the host's own CUDA calls (NULL for an invalid
 * handle). Borrowed; valid while the stream is alive. Cannot fail. */
CH_API void* ch_stream_native(const ch_stream* stream);

/* --- page-locked host memory and asynchronous copies --------------------- */

/* A CPU array in page-locked (pinned) host memory, with uninitialized
 * elements: the host side of truly asynchronous copies. It is an ordinary CPU
 * array otherwise. CH_ERR_DEVICE without a CUDA device.
 * *out: new reference; release with ch_array_release. */
CH_API ch_status ch_array_new_pinned(ch_array** out, ch_dtype dtype, const int64_t* shape,
                                     int32_t ndim);
/* 1 if the array's memory is page-locked (ch_array_new_pinned), else 0.
 * Cannot fail. */
CH_API int32_t ch_array_is_pinned(const ch_array* array);

/* A copy of `array` on `device`, queued on `stream` (whose device must be the
 * CUDA side of the copy: the destination, or the source for a copy to the
 * CPU). A CPU result is allocated in page-locked memory. The call returns
 * before the copy is done: read the result, or write the source, only after
 * ch_stream_synchronize(stream). The stream keeps both arrays' memory alive
 * until then. A pageable (not pinned) host source makes the copy synchronous
 * on the host side. *out: new reference; release with ch_array_release. */
CH_API ch_status ch_array_to_device_async(ch_array** out, const ch_array* array,
                                          ch_device device, ch_stream* stream);
/* Copy the elements of `src` into `dst` (same dtype and size) on `stream`,
 * as ch_array_to_device_async does. */
CH_API ch_status ch_array_copy_from_async(ch_array* dst, const ch_array* src, ch_stream* stream);

/* --- CUDA graphs: a training step captured and replayed ------------------ */

/* A step with fixed shapes (forward, backward, optimizer update) queues the
 * same kernels on the same memory every time; captured once into a CUDA graph
 * it is replayed with one launch instead of hundreds (the small MLP's step is
 * launch-bound). Between begin and end capture, everything chainerc queues on
 * the device's engine stream is recorded, not run; the arrays made meanwhile
 * come from a pool of the graph's own and keep their memory, so each replay
 * reads and writes the very arrays of the captured step (its inputs: copy new
 * data into them, ch_cuda_graph_replay_with; its outputs, e.g. the loss:
 * read them after the replay). Memory freed during the capture is reused by
 * no one else until the graph is released.
 *
 * Rules (bad use returns an error, never crashes; the capture is then
 * invalidated and ch_cuda_graph_end_capture reports it):
 *  - one capture at a time per device, begun and ended on the same thread;
 *    run the step once before capturing (lazily made state, optimizer
 *    buffers);
 *  - no host synchronisation during capture (reading an array, ch_cuda_
 *    synchronize, ch_stream_synchronize) and no copy from or to the host:
 *    CH_ERR_UNSUPPORTED naming the call;
 *  - host values fixed at capture are replayed as captured: the learning
 *    rate, Adam's step count and bias corrections, random numbers (dropout
 *    masks repeat), the batch size. Use optimizers whose update does not
 *    change between steps (SGD, MomentumSGD), or capture again;
 *  - labels and ids are still checked on the device at each replay; an
 *    error is reported at the next synchronisation, as in an eager step.
 * A graph may be replayed from any thread; replays on one device are ordered
 * with each other and with the device's other chainerc work. */
typedef struct ch_cuda_graph ch_cuda_graph;

/* Begin capturing CUDA device `device`'s work on the calling thread.
 * CH_ERR_DEVICE for the CPU or a device that does not exist;
 * CH_ERR_INVALID_ARGUMENT when the device is being captured already;
 * CH_ERR_UNSUPPORTED in a build without CUDA. */
CH_API ch_status ch_cuda_graph_begin_capture(ch_device device);
/* End the capture begun on this thread for `device`; *out: the graph (new
 * reference; release with ch_cuda_graph_release), NULL on error.
 * CH_ERR_INVALID_ARGUMENT when no capture is in progress or it began on
 * another thread; CH_ERR_UNSUPPORTED when a call was refused during the
 * capture (named in the message; nothing was recorded then). */
CH_API ch_status ch_cuda_graph_end_capture(ch_cuda_graph** out, ch_device device);
/* Queue the captured work once more on its device (no host synchronisation:
 * read an output to wait for it). CH_ERR_UNSUPPORTED during a capture on
 * the same device. */
CH_API ch_status ch_cuda_graph_replay(ch_cuda_graph* graph);
/* Copy values[i] into targets[i] (arrays the captured step reads, e.g. its
 * input batch; from the host or a device), then replay: the one call per
 * step of a captured training loop. Each value must have its target's dtype
 * and shape (CH_ERR_DTYPE / CH_ERR_SHAPE naming both: a replay cannot change
 * shapes) and each target must be on the graph's device (CH_ERR_DEVICE).
 * Nothing is copied or replayed when an argument is refused. */
CH_API ch_status ch_cuda_graph_replay_with(ch_cuda_graph* graph, ch_array* const* targets,
                                           const ch_array* const* values, int32_t n);
/* The graph's device ({0, 0} for an invalid handle). Cannot fail. */
CH_API ch_device ch_cuda_graph_device(const ch_cuda_graph* graph);
/* The kernels and cuBLAS calls the graph recorded (-1 for an invalid handle):
 * what an eager step launches one by one. Cannot fail. */
CH_API int64_t ch_cuda_graph_size(const ch_cuda_graph* graph);
/* Drop a reference; the last waits for the graph's queued replays, then
 * frees it and returns its memory pool to the device's cache (arrays made
 * during the capture and still held stay valid). NULL is a no-op. */
CH_API ch_status ch_cuda_graph_release(ch_cuda_graph* graph);

#ifdef __cplusplus
}
#endif
#endif /* CH_CUDA_H */
