// Matrix products on the CPU. Several libraries can do them (OpenBLAS,
// oneDNN's sgemm and its matmul primitive, BLIS, libxsmm's generated kernels;
// which are present depends on the build and the machine), and which is fastest depends on the CPU
// and the shape: gemm() measures the candidates on the first calls of each shape class and then
// uses the fastest for that class (gemm.cpp explains the measurement). The
// environment variable CH_GEMM, or force_gemm_library, fixes the choice.
//
// Threads: every library runs each call on one thread; gemm() splits C into
// blocks over chainerc's own pool (parallel.h), so no library pool competes
// with it for the cores.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace chainerc::cpu {

// Memory a product may use while it runs, whose contents nobody keeps: with
// a transposed B and at least k x n elements, libxsmm (whose kernels take B
// only as stored) is a candidate too, on B transposed there first; such
// calls are classes of their own ("B^T in a workspace"); why it pays:
// bench/results/constants.md (GemmWorkspace). Linear's forward lends W's gradient for it,
// where zero_grads left the gradient pending zero (Buffer::lend_pending_zero):
// no memory beside the model's.
struct GemmWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// Row-major C (m x n) = alpha * op(A) * op(B) + beta * C, where op(A) is
// m x k (A itself, or A transposed when trans_a) and op(B) is k x n.
// lda/ldb/ldc are the row strides of A, B and C as stored. With beta == 0, C
// is not read (NaNs in it do not propagate), as in BLAS.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          GemmWorkspace workspace = {});
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc, GemmWorkspace workspace = {});

// The GEMM libraries chainerc can call (whether each is present: below).
enum class GemmLibrary : int { openblas = 0, onednn = 1, blis = 2, libxsmm = 3, onednn_matmul = 4 };
constexpr int kGemmLibraries = 5;

// "openblas", "onednn", "blis", "libxsmm", "onednn-matmul".
const char* gemm_library_name(GemmLibrary lib);
// Whether the library is built in and loadable here, for float64 (f64) or
// float32 GEMMs (oneDNN has no float64 GEMM on CPUs).
bool gemm_library_available(GemmLibrary lib, bool f64);
// Whether the library, available for the dtype, computes products with these
// transposes: libxsmm's kernels take no transposed B (gemm_libxsmm.h) unless
// a workspace can hold it transposed (b_workspace, GemmWorkspace); the others
// take every combination.
bool gemm_library_supports(GemmLibrary lib, bool f64, bool trans_a, bool trans_b,
                           bool b_workspace = false);
// The libraries available for the dtype, in enum order (each can be forced).
std::vector<GemmLibrary> gemm_libraries(bool f64);
// Those of them auto mode measures: all but a BLIS on its reference kernels
// (gemm_library_not_measured).
std::vector<GemmLibrary> gemm_candidates(bool f64);
// Whether auto mode measures the library (when available), and if not, why
// ("" when it does).
std::string gemm_library_not_measured(GemmLibrary lib);
// The library's own description, e.g. "OpenBLAS 0.3.21 ... Cooperlake".
std::string gemm_library_version(GemmLibrary lib);

// How gemm_using cuts C over the pool: by the size rule gemm() uses for a
// forced library (rule), left whole (one block), or one block per thread.
enum class GemmBlocks { rule, one, per_thread };

// The same product through one library, on the pool as gemm() does (bench/gemm
// and the tests call it; CH_ERR_INVALID_ARGUMENT if the library is not
// available for the dtype or does not support the transposes). libxsmm
// leaves a call with alpha other than 1 or beta other than 0 and 1 to
// OpenBLAS, as gemm() does.
void gemm_using(GemmLibrary lib, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                float* c, int64_t ldc, GemmBlocks blocks = GemmBlocks::rule,
                GemmWorkspace workspace = {});
void gemm_using(GemmLibrary lib, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                double alpha, const double* a, int64_t lda, const double* b, int64_t ldb,
                double beta, double* c, int64_t ldc, GemmBlocks blocks = GemmBlocks::rule,
                GemmWorkspace workspace = {});

// Fixes the library every GEMM uses ("openblas", "onednn", "blis",
// "libxsmm"), or goes back to measuring per shape class (nullptr, "" or
// "auto"). A library that lacks a dtype's GEMM (oneDNN for float64) leaves
// that dtype measured; the products libxsmm cannot do (a transposed B, alpha
// other than 1, beta other than 0 and 1) go to OpenBLAS when it is fixed.
// CH_ERR_INVALID_ARGUMENT for an unknown or unavailable name. Also clears
// the choices made so far.
void force_gemm_library(const char* name);
// "auto" or the forced library's name.
std::string forced_gemm_library();

// The library gemm() has chosen for the shape class of this call, or -1
// while the class is still being measured (or was never seen). A forced
// library is reported as chosen. b_workspace: the class of calls with a
// workspace for B transposed (GemmWorkspace).
int gemm_choice(bool f64, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                bool b_workspace = false);

// Which BLAS libraries are in use and what was chosen, one line (for
// ch_config_blas; gemm.cpp documents the format).
const char* blas_name();
// Called by set_num_threads (parallel.h). The libraries always run one
// thread per call (see above), so this only keeps them there.
void set_blas_threads(int n);

// The timed calls of each candidate of a shape class before the choice: the
// candidates take turns (A B C A B C ...; each turn an untimed call, then a
// timed one, on C the pool's threads wrote in between where there are more),
// at least kGemmSamples calls each, more until each has run kGemmSampleSeconds
// in all (timed), at most kGemmMaxSamples; a candidate clearly slower than the
// leader after three calls is dropped, and the class is decided with one left.
constexpr int kGemmSamples = 5;
constexpr int kGemmMaxSamples = 32;
constexpr double kGemmSampleSeconds = 4e-3;

// Classes of at least 2^kGemmContextLog2Work multiply-adds (m, n and k
// rounded up) are judged again in context: those timed calls run back to
// back on operands hot in the caches, while a training step's calls find
// them where the step's other work left them (the large MLP's 1000 x 1000
// weight, 4 MB, is read from farther away). Every candidate of those calls
// (one dropped early too: a start disturbed by the machine's other work must
// not decide for good) then computes stretches of the program's own later
// calls of the class, the fewest samples first (kGemmContextRounds), and is
// timed on kGemmContextSamples of them; the best median of those decides (later
// processes watch it: kGemmRejudgeBelow). gemm_choice says -1 meanwhile, and
// the results come from the stretch's candidate: a library is timed as it
// runs when chosen, its own calls back to back in the step (chosen by
// measurement: bench/results/constants.md, kGemmContextLog2Work).
constexpr int kGemmContextLog2Work = 27;
constexpr int kGemmContextSamples = 9;
// The samples come in rounds: a contender's stretch ends with its next
// kGemmContextSamples / kGemmContextRounds samples, and the contender with
// the fewest samples has the next one, so a spell in which the machine's
// other work slows every call spoils one stretch, a third of a contender's
// samples, not its median (chosen by measurement:
// bench/results/constants.md, kGemmContextRounds).
constexpr int kGemmContextRounds = 3;
static_assert(kGemmContextSamples % kGemmContextRounds == 0, "whole rounds");
// The first calls of a judged class in each process are the leader's,
// untimed: a library's first calls in a process run slower than its later
// ones (oneDNN allocates its packing buffer in every call, and page-faults
// until glibc's thresholds have grown).
constexpr int kGemmContextSettle = 4;
// A library runs slower in its first few dozen calls of a product in a
// process, whatever the other libraries did before (measured:
// bench/results/constants.md, kGemmContextWarmup). So the first kGemmContextWarmup calls of
// each contender's first stretch in a process are untimed, where its back-to-back rate was at least
// 70% of the leader's (a warm-up gains 10-15%; one far behind is timed from its first call).
constexpr int kGemmContextWarmup = 32;
// A class judged in context and found decided in the disk cache is watched: its
// choice is timed on kGemmContextSamples of the program's own calls (after the
// first kGemmContextSettle), and where their median is below kGemmRejudgeBelow
// of the best median in context on disk, the machine is no longer the one that
// judged it (the cache directory shared with another host of the same CPU
// model, other memory or neighbours, other clocks) and the class is judged in
// context again (the cached choice leads: it computes the settling calls; a
// candidate below half the best rate both back to back and in context on disk
// sits it out). A safety net, not a re-measurement: the bound lies beyond the
// noise a shared VM showed (bench/results/constants.md, kGemmRejudgeBelow).
constexpr double kGemmRejudgeBelow = 0.8;
// And where the watched median is above kGemmRejudgeAbove of the best median
// in context on disk, the judging on disk ran in a disturbed spell, and the
// class is judged again too (measured: bench/results/constants.md,
// kGemmRejudgeAbove).
constexpr double kGemmRejudgeAbove = 1.25;
// Judged again only where this many processes in a row (the one before kept
// its doubt on disk) watched the choice outside those bounds on the same
// side; one that watches it within them clears the doubt (chosen by
// measurement: bench/results/constants.md, kGemmRejudgeAgreeing).
constexpr int kGemmRejudgeAgreeing = 2;

// The disk cache of the choices (gemm_cache.h; docs/performance.md): a decided class is written
// there, and a class found there is used without measuring. set_gemm_cache_directory(nullptr) goes
// back to the environment's directory ($CH_GEMM_CACHE_DIR, else
// $XDG_CACHE_HOME/chainerc/gemm, else ~/.cache/chainerc/gemm; none with
// CH_GEMM_CACHE=0), "" turns the cache off, any other string is the
// directory. Clears the choices made so far.
void set_gemm_cache_directory(const char* dir);
// The directory in use; "" when the cache is off.
std::string gemm_cache_directory();

// With more than one thread, gemm() cuts C into `parts` blocks of whole rows
// (taller than wide) or whole columns, one per thread, `extent` rows or
// columns in all. Block p (0-based) starts at gemm_block_edge(extent, parts,
// p) and ends where p + 1 starts (extent for the last). The edges are
// multiples of kGemmBlockAlign (one AVX-512 register of float32), each the
// one nearest to an even share: 100 columns over two threads are 48 + 52, not
// 64 + 36 (rounding up left one thread 64% of the small MLP's products).
constexpr int64_t kGemmBlockAlign = 16;
int64_t gemm_block_edge(int64_t extent, int64_t parts, int64_t p);

// Where a program's GEMMs spend their time (bench/step_profile's GEMMs in the
// step): after every gemm() call, observer(call, seconds, user) runs on the
// calling thread with the call's shape and the seconds it took there, choice
// and measurement included. nullptr (the default) times nothing and costs one
// atomic load per call. Set it while no GEMM runs; not for the C API.
struct GemmCall {
  bool f64, trans_a, trans_b;
  int64_t m, n, k;
  bool b_workspace;  // with a workspace for B transposed (GemmWorkspace)
};
using GemmObserver = void (*)(const GemmCall& call, double seconds, void* user);
void set_gemm_observer(GemmObserver observer, void* user);

// For the tests: the stopwatch of the measurement. It runs `call` (one GEMM
// through `lib`, in one block per pool thread if `split`, else in one block)
// and returns the seconds it took. Passing an empty function restores the
// steady clock. Clears the choices made so far.
using GemmStopwatch =
    std::function<double(GemmLibrary lib, bool split, const std::function<void()>& call)>;
void set_gemm_stopwatch_for_testing(GemmStopwatch stopwatch);
// For the tests: the untimed calls that start a close contender's stretch
// when judged in context (kGemmContextWarmup; a negative count restores it).
// Clears the choices.
void set_gemm_context_warmup_for_testing(int calls);
// For the tests: forget the forced library and the choices, and read CH_GEMM
// and the cache's variables (unless set_gemm_cache_directory set one) again
// at the next GEMM: a fresh process, as far as the choices go.
void reread_gemm_environment_for_testing();
// For the tests: what the cache keys name as the machine (the CPU and the
// libraries' versions) instead of the real one; "" restores the real one.
void set_gemm_machine_for_testing(const std::string& machine);

}  // namespace chainerc::cpu
