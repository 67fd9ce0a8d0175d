/*
 * chainerc — process-wide settings: train/test mode default, CPU threads,
 * random seed, which BLAS the build uses, and the CUDA backend's use of
 * cuDNN and TF32.
 *
 * Threading: these are process-wide and may be called from any thread; a
 * change applies to calls that start after it returns.
 */
#ifndef CH_CONFIG_H
#define CH_CONFIG_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values for the `train` argument of functions that behave differently in
 * training and in testing (dropout, batch normalization). */
enum {
  CH_MODE_TEST = 0,    /* test / evaluation behaviour */
  CH_MODE_TRAIN = 1,   /* training behaviour */
  CH_MODE_DEFAULT = -1 /* whatever ch_config_set_train last set (train at start) */
};

/* Default train flag used where a function is called with CH_MODE_DEFAULT.
 * Starts as 1 (train). */
CH_API void ch_config_set_train(int32_t train);
CH_API int32_t ch_config_train(void);

/* Threads the CPU kernels and the BLAS library use, the calling thread
 * included. Default: the environment variable CH_NUM_THREADS, else the
 * number of cores. CH_ERR_INVALID_ARGUMENT if n < 1. */
CH_API ch_status ch_config_set_num_threads(int32_t n);
CH_API int32_t ch_config_num_threads(void);

/* Reseed the CPU random generator (parameter initialisation, dropout).
 * At start it is seeded from the environment variable CH_SEED (a decimal
 * integer) when set, else from the operating system's entropy. */
CH_API void ch_config_seed(uint64_t seed);

/* The CPU's matrix products (GEMM) on one line, e.g.
 *   GEMM auto (measured per shape class) | openblas: OpenBLAS 0.3.21 ...
 *   Cooperlake ...; onednn: oneDNN 2.6.3 sgemm (float32 only); blis: BLIS
 *   0.9.0 (zen3 kernels, libblis.so.4) | one library thread per block of
 *   chainerc's 2-thread pool | chosen: float32 NT m<=128 n<=1024 k<=1024
 *   1 thread: onednn 100.9 GFLOP/s (openblas 95%, blis 81%) [cached]; ...
 *   | choices kept in /home/me/.cache/chainerc/gemm
 * Fields are separated by " | ": the mode ("auto (measured per shape
 * class)" or the library set by ch_config_set_gemm / CH_GEMM); the
 * candidates, each "name: the library's own description", "; "-separated
 * (in auto mode a BLIS on its reference kernels, a CPU it has none for,
 * adds " (not measured: reference kernels)": auto never runs it, far behind
 * the others and heavy in memory; it can still be set below);
 * the threading; once classes have been decided, "chosen: " and one entry
 * per shape class ("; "-separated): dtype, the transposes of A and B (N or
 * T), the powers of two m, n and k round up to, the thread count, the
 * library chosen and its measured rate, then the others' rates in percent
 * of it, for a large class judged again in context (during the program's
 * own calls) "; in context " and the same there, e.g. "; in context onednn
 * 105.0 GFLOP/s (blis 98%, libxsmm 70%)", and " [cached]" where the choice
 * was read from the disk cache
 * rather than measured in this process; such a cached class's own calls
 * are watched (timed, nine after the first four) and it adds "; here 101.2
 * GFLOP/s", or where they ran below 80% or above 125% of its rate in
 * context on disk and the class was judged again, "; judged again here,
 * blis ran at 80.1
 * GFLOP/s"; last, where the choices are kept
 * on disk ("choices kept in DIR": $CH_GEMM_CACHE_DIR, else
 * $XDG_CACHE_HOME/chainerc/gemm, else ~/.cache/chainerc/gemm) or "choices
 * not kept on disk" (CH_GEMM_CACHE=0). Borrowed; valid until the next call
 * on the same thread. */
CH_API const char* ch_config_blas(void);

/* Which library computes the CPU's float32 and float64 matrix products.
 * "auto" (also NULL or ""), the default, measures the candidates on the
 * first call of each shape class (the dtype, the two transposes, m, n and
 * k rounded up to powers of two, the thread count; a candidate is a
 * library, with more than one thread also whether the product is split over
 * the threads: each candidate runs that call 5 times into scratch memory,
 * timed) and then uses the fastest for that call and every later one of the
 * class: within a process a class's results all come from one library, but
 * the choice may differ between runs where libraries are close. (A class
 * of at least 2^27 multiply-adds, m, n and k rounded up, is judged again
 * on its next calls, each candidate timed as the first product of 9 of
 * them, from the fifth in a
 * process on: the fastest of the first calls computes the results until
 * then, and the fastest there from then on; the samples so far are kept in
 * the disk cache.) "openblas", "onednn" (oneDNN's sgemm), "blis",
 * "libxsmm" or "onednn-matmul" (oneDNN's matmul primitive, one per shape)
 * fixes one library for every product
 * (bit-identical results from run to run; a library without a dtype's GEMM,
 * oneDNN's two for float64, leave that dtype measured; libxsmm's generated
 * kernels take no transposed B, alpha other than 1 or beta other than 0 and
 * 1, and leave those products to OpenBLAS). Which are available
 * depends on the build and the machine: ch_config_blas lists them. The
 * environment variable CH_GEMM sets the same at start (an unknown or
 * missing name there makes GEMMs fail with CH_ERR_INVALID_ARGUMENT naming
 * it). Each call forgets the choices made so far.
 * CH_ERR_INVALID_ARGUMENT, naming the value and the candidates, for a name
 * that is not available; the setting is then unchanged. */
CH_API ch_status ch_config_set_gemm(const char* library);
/* "auto" or the library set by ch_config_set_gemm or CH_GEMM ("auto" also
 * while CH_GEMM names no available library). Static storage; never NULL. */
CH_API const char* ch_config_gemm(void);

/* Where the CPU GEMM choices are kept on disk, so that a later process uses
 * a shape class's choice without measuring (see ch_config_set_gemm). NULL
 * goes back to the environment's directory ($CH_GEMM_CACHE_DIR, else
 * $XDG_CACHE_HOME/chainerc/gemm, else ~/.cache/chainerc/gemm; none with
 * CH_GEMM_CACHE=0); "" keeps the choices in this process only (nothing is
 * read or written: for read-only or shared home directories, sandboxes, and
 * runs that must not depend on an earlier one); any other string is the
 * directory, created with its parents at the first choice. A directory that
 * cannot be written is not an error: the choices are then measured again by
 * the next process. Also clears the choices made so far (the next GEMM of
 * each class reads the new directory or measures). Copies `directory`.
 * CH_ERR_INVALID_ARGUMENT, naming its length, for a directory of 4,096
 * bytes or more; the setting is then unchanged. */
CH_API ch_status ch_config_set_gemm_cache(const char* directory);
/* The directory in use for the GEMM choices; "" when they are not kept on
 * disk. Borrowed; valid until the next call on the same thread. */
CH_API const char* ch_config_gemm_cache(void);

/* Whether the CUDA backend may run convolution, average pooling, softmax,
 * relu, sigmoid and tanh through cuDNN (the seed's use_cudnn, here one
 * process-wide switch). Starts as 1 (on). Any non-zero value turns it on.
 * With it off, in a build without cuDNN (the emulated devices included), or
 * where libcudnn cannot be loaded at run time, chainerc's own CUDA kernels
 * run; results agree within floating-point rounding either way. No effect on
 * the CPU. */
CH_API void ch_config_set_use_cudnn(int32_t use_cudnn);
/* 1 if the CUDA backend may use cuDNN, else 0. */
CH_API int32_t ch_config_use_cudnn(void);

/* Whether float32 matrix products (cuBLAS) and cuDNN convolutions on CUDA
 * devices may use TF32 tensor cores (10-bit mantissa inputs, float32
 * accumulation; faster on A100/H100, less precise). Starts as 0 (off: full
 * float32 precision). Any non-zero value turns it on. float64 and the CPU
 * are never affected. */
CH_API void ch_config_set_allow_tf32(int32_t allow_tf32);
/* 1 if TF32 is allowed, else 0. */
CH_API int32_t ch_config_allow_tf32(void);

/* Whether work on CUDA devices must give bit-identical results from run to
 * run (same inputs, seeds, device and build). Starts as 0 (off). With it on,
 * cuDNN's convolutions use only algorithms cuDNN reports as deterministic
 * (which may be slower or need more workspace; where none fits, chainerc's own
 * kernels run). chainerc's own CUDA kernels and the CPU are deterministic
 * either way: their sums run in a fixed order and they use no floating-point
 * atomics; dropout's masks depend only on the seed. Any non-zero value turns
 * it on. */
CH_API void ch_config_set_deterministic(int32_t deterministic);
/* 1 if the determinism switch is on, else 0. */
CH_API int32_t ch_config_deterministic(void);

/* --- cuDNN: in use or why not (issue 46) ---------------------------------- */

/* Whether the CUDA backend runs cuDNN, as ch_config_cudnn says. */
enum {
  CH_CUDNN_IN_USE = 0,           /* libcudnn.so.9 loaded, a handle made on a device */
  CH_CUDNN_SWITCHED_OFF = 1,     /* ch_config_set_use_cudnn(0), or CH_DISABLE_CUDNN=1 */
  CH_CUDNN_NOT_BUILT = 2,        /* no cuDNN in this build (no CUDA backend, -Dcudnn=disabled,
                                    no cudnn.h of cuDNN 9, the emulated devices) */
  CH_CUDNN_NOT_FOUND = 3,        /* libcudnn.so.9 could not be loaded */
  CH_CUDNN_VERSION_MISMATCH = 4, /* a libcudnn whose major version is not the build's */
  CH_CUDNN_NO_DEVICE = 5,        /* no CUDA device to make a handle on */
  CH_CUDNN_INIT_FAILED = 6       /* cudnnCreate failed */
};

/* Whether cuDNN is in use (CH_CUDNN_IN_USE) and, if not, why. Loads
 * libcudnn and makes a handle on the current CUDA device if that was not done
 * yet (a kernel does the same on first use). `reason` may be NULL; else
 * *reason is set to a sentence saying why not (the loader's message, the
 * versions), or "" when in use: borrowed, valid until the next call on the
 * same thread. `version` may be NULL; else *version is cudnnGetVersion()
 * (e.g. 90100), 0 where libcudnn is not loaded. Cannot fail.
 * Environment: CH_DISABLE_CUDNN=1 keeps libcudnn unloaded (switched off);
 * CH_REQUIRE_CUDNN=1 makes every CUDA function that cuDNN would run fail
 * with CH_ERR_DEVICE, naming this reason, when the state is anything but
 * CH_CUDNN_IN_USE or CH_CUDNN_SWITCHED_OFF. Both are read once. */
CH_API int32_t ch_config_cudnn(const char** reason, int32_t* version);

/* How many times chainerc called into cuDNN for the kernel `function`
 * ("conv2d_forward", "conv2d_backward", "max_pooling_2d_forward",
 * "softmax_forward", "relu", "batch_normalization_forward", ...; the names of
 * cuda/cudnn/), or for all kernels with NULL, since the start or the last
 * ch_config_reset_cudnn_calls. Lets a test on a GPU assert that the cuDNN
 * paths ran. Cannot fail; 0 for a name never counted. */
CH_API int64_t ch_config_cudnn_calls(const char* function);
/* Set every count of ch_config_cudnn_calls to 0. */
CH_API void ch_config_reset_cudnn_calls(void);

#ifdef __cplusplus
}
#endif
#endif /* CH_CONFIG_H */
