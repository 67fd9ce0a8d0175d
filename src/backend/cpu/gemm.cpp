// CPU GEMM: the candidates (OpenBLAS, oneDNN's sgemm, BLIS, libxsmm's
// generated kernels), the split of one product over chainerc's pool, and the
// choice among the candidates.
//
// The choice is measured, not assumed: which library is fastest differs from
// CPU to CPU and from shape to shape (bench/results/constants.md, "Why
// measure"). A shape class is the dtype, the
// two transposes, m, n and k each rounded up to a power of two, and the
// thread count (one for calls from inside a parallel_for). A
// candidate is a library, and with more than one thread also whether C is
// cut into one block per thread or left whole (for mid-sized classes, where
// splitting pays only when the pool's workers are awake).
//
// The first call of a class runs the candidates in turns (A B C A B C ...) on
// its operands but into a scratch C (with more than one thread, written by
// the pool's threads before each timed call, as a program's other work
// leaves it), timed: at least kMinSamples calls each,
// more until each has run kSampleSeconds in all (at most kMaxSamples); then
// the class uses the candidate with the highest median rate (2 m n k /
// seconds, so calls of different shapes within a class compare), and that
// candidate computes the call's own C. Candidates clearly slower than the
// leader after three calls are dropped early, and with one left the class is
// decided. A large class (gemm.h, kGemmContextLog2Work) is then judged
// again in context: those calls ran back to back on hot operands, and a
// training step's do not. Each candidate in turn then computes a stretch of the program's own
// calls (after the first few of each process, the leader's), timed on
// kGemmContextSamples of them, and the best median there decides. While a
// class is judged its results come from the candidate of the stretch; once
// decided, every result of a class within a process comes from one library.
// Another process may choose another (timings vary), so runs that must agree
// bit for bit fix one library (CH_GEMM, force_gemm_library).
//
// The choices are kept on disk (gemm_cache.h), keyed by the CPU, each
// library's identity and version, the class (with its thread count) and its
// candidates: a process that finds its class there uses the choice without
// running any other library (no scratch C, no timing).
//
// Threads: each library runs each call on one thread (OpenBLAS and BLIS are
// set to one thread, oneDNN's OpenMP team is kept at one around each call);
// gemm splits C into blocks of rows or columns, one per pool thread. Their own
// pools would spin beside ours on the same cores after each call (OpenBLAS's
// workers busy-wait for a while before they sleep); bench/gemm measures both
// ways.
#include "gemm.h"

// OpenBLAS's cblas.h (it also declares openblas_set_num_threads and friends);
// its configuration header declares C99 _Complex types, which clang warns
// about in C++.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#endif
#include <cblas.h>
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "gemm_blis.h"
#include "gemm_cache.h"
#include "gemm_libxsmm.h"
#include "gemm_onednn_matmul.h"
#include "parallel.h"

#if CH_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace chainerc::cpu {
namespace {

// Calls of each candidate timed per shape class before the choice (gemm.h);
// their median rate counts (the first call of a library can include its
// one-time set-up, e.g. oneDNN's JIT compiling a kernel, and single calls are
// at the mercy of the machine's other work, bench/results/constants.md,
// kMinSamples).
constexpr int kMinSamples = kGemmSamples;
constexpr int kMaxSamples = kGemmMaxSamples;
constexpr double kSampleSeconds = kGemmSampleSeconds;
constexpr int kContextSamples = kGemmContextSamples;
static_assert(kContextSamples <= kMaxSamples, "one median for both");

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    fail(CH_ERR_SHAPE, "gemm: ", what, " = ", v, " does not fit the BLAS library's 32-bit int");
  return static_cast<int>(v);
}

// OpenBLAS runs every call on the calling thread.
void openblas_one_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

#if CH_HAVE_DNNL
// oneDNN runs each call on one OpenMP thread: its OpenMP team is never
// started, and no OpenMP workers spin beside our pool.
class OneOpenMPThread {
 public:
  // The caller's OpenMP thread count is its own setting: put it back after.
  OneOpenMPThread() : previous_(omp_get_max_threads()) {
    if (previous_ != 1) omp_set_num_threads(1);
  }
  ~OneOpenMPThread() {
    if (previous_ != 1) omp_set_num_threads(previous_);
  }
  OneOpenMPThread(const OneOpenMPThread&) = delete;
  OneOpenMPThread& operator=(const OneOpenMPThread&) = delete;

 private:
  int previous_;
};
#endif

// One block on one thread through one library. Dimensions were checked.
void one_thread(GemmLibrary lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  switch (lib) {
    case GemmLibrary::openblas:
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
      return;
    case GemmLibrary::onednn: {
#if CH_HAVE_DNNL
      OneOpenMPThread one;
      const dnnl_status_t s =
          dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      if (s != dnnl_success)
        fail(CH_ERR_INTERNAL, "gemm: oneDNN's sgemm failed with status ", int(s), " (m=", m,
             ", n=", n, ", k=", k, ")");
#endif
      return;
    }
    case GemmLibrary::blis:
      blis::sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    case GemmLibrary::onednn_matmul: {
#if CH_HAVE_DNNL
      OneOpenMPThread one;
      // A shape oneDNN's matmul refuses is its sgemm's.
      if (onednn_matmul::sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
#endif
      one_thread(GemmLibrary::onednn, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    case GemmLibrary::libxsmm:
      // A call its kernels cannot do (alpha, beta, a transposed B) is OpenBLAS's.
      if (tb || !libxsmm::sgemm(ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        one_thread(GemmLibrary::openblas, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
  }
}

void one_thread(GemmLibrary lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                int64_t ldc) {
  if (lib == GemmLibrary::blis) {
    blis::dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (lib == GemmLibrary::libxsmm && !tb &&
      libxsmm::dgemm(ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m),
              int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// out = alpha x the rows x cols matrix at b (row stride ldb), transposed
// (cols x rows) or not, row stride ldo, on the calling thread: OpenBLAS's
// omatcopy (faster than a plain blocked loop: bench/results/constants.md,
// omatcopy).
void omatcopy(bool trans, const float* b, int64_t ldb, int64_t rows, int64_t cols, float alpha,
              float* out, int64_t ldo) {
  cblas_somatcopy(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, int(rows), int(cols), alpha, b,
                  int(ldb), out, int(ldo));
}
void omatcopy(bool trans, const double* b, int64_t ldb, int64_t rows, int64_t cols, double alpha,
              double* out, int64_t ldo) {
  cblas_domatcopy(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, int(rows), int(cols), alpha, b,
                  int(ldb), out, int(ldo));
}

// Multiply-adds below which a GEMM stays on one thread when nothing was
// measured (a forced library, gemm_using): waking a sleeping worker costs
// about as much as a 100x100x100 product saves by splitting it. With a hot
// pool, splitting pays far below that: the measured choice tries both ways
// for classes between kMinSplit and this (see Chooser::candidates_for).
constexpr int64_t kGemmGrain = int64_t{1} << 21;
constexpr int64_t kMinSplit = int64_t{1} << 15;

using Blocks = GemmBlocks;

}  // namespace

int64_t gemm_block_edge(int64_t extent, int64_t parts, int64_t p) {
  if (p >= parts) return extent;
  const int64_t align = kGemmBlockAlign;
  return std::min(extent, (extent * p + parts * align / 2) / (parts * align) * align);
}

namespace {

// Splits C into blocks of whole rows (tall C) or whole columns (wide C), one
// per thread; each block is an independent GEMM on sub-matrices, on one
// thread of the library. Exceptions from the blocks are rethrown here.
// libxsmm with a transposed B and a workspace `bt` (k x n, row stride n; see
// GemmWorkspace) runs on B transposed there: by each block for its own
// columns, or first for all of them when C is cut by rows.
template <typename T>
void split_over_pool(GemmLibrary lib, Blocks blocks, bool ta, bool tb, int64_t m, int64_t n,
                     int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
                     T* c, int64_t ldc, T* bt = nullptr) {
  if (lib != GemmLibrary::libxsmm || !tb) bt = nullptr;
  // libxsmm's kernels take alpha 1 only: with another alpha (SGD's
  // W += -lr gy^T x) A is scaled into scratch first, rather than the call
  // left to OpenBLAS. The other libraries take alpha as it is.
  std::vector<T> scaled_a;
  if (lib == GemmLibrary::libxsmm && (!tb || bt) && alpha != T(1) &&
      (beta == T(0) || beta == T(1))) {
    const int64_t rows = ta ? k : m, cols = ta ? m : k;
    scaled_a.resize(static_cast<size_t>(rows * cols));
    omatcopy(false, a, lda, rows, cols, alpha, scaled_a.data(), cols);
    a = scaled_a.data();
    lda = cols;
    alpha = T(1);
  }
  const double work = double(m) * double(n) * double(k);
  const bool split_rows = m > n;
  const int64_t extent = split_rows ? m : n;
  int64_t parts = num_threads();
  if (blocks == Blocks::one)
    parts = 1;
  else if (blocks == Blocks::rule && work < double(parts) * kGemmGrain)
    parts = static_cast<int64_t>(work / kGemmGrain);
  parts = std::min(parts, (extent + kGemmBlockAlign - 1) / kGemmBlockAlign);
  std::atomic<bool> failed{false};
  std::string error;
  ch_status error_status = CH_OK;
  std::mutex error_mutex;
  if (bt && split_rows) {
    omatcopy(true, b, ldb, n, k, T(1), bt, n);
    b = bt, ldb = n, tb = false;
  }
  auto block = [&](int64_t begin, int64_t end) {
    if (begin >= end) return;
    try {
      if (split_rows) {
        one_thread(lib, ta, tb, end - begin, n, k, alpha, ta ? a + begin : a + begin * lda, lda, b,
                   ldb, beta, c + begin * ldc, ldc);
      } else if (bt) {
        omatcopy(true, b + begin * ldb, ldb, end - begin, k, T(1), bt + begin, n);
        one_thread(lib, ta, false, m, end - begin, k, alpha, a, lda, bt + begin, n, beta, c + begin,
                   ldc);
      } else {
        one_thread(lib, ta, tb, m, end - begin, k, alpha, a, lda, tb ? b + begin * ldb : b + begin,
                   ldb, beta, c + begin, ldc);
      }
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(error_mutex);
      error = e.what();
      error_status = e.status();
      failed = true;
    }
  };
  if (parts <= 1) {
    block(0, extent);
  } else {
    parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      block(gemm_block_edge(extent, parts, p0), gemm_block_edge(extent, parts, p1));
    });
  }
  if (failed) throw Error(error_status, error);
}

// Shapes every library accepts: dimensions in 32-bit ints (OpenBLAS's
// interface) and row strides at least the rows' lengths.
void check(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
           int64_t ldc) {
  blas_int(m, "m");
  blas_int(n, "n");
  blas_int(k, "k");
  blas_int(lda, "lda");
  blas_int(ldb, "ldb");
  blas_int(ldc, "ldc");
  const int64_t a_row = ta ? m : k, b_row = tb ? k : n;
  if (lda < std::max<int64_t>(1, a_row))
    fail(CH_ERR_SHAPE, "gemm: lda = ", lda, " is shorter than a row of A (", a_row,
         " elements, trans_a = ", ta, ")");
  if (ldb < std::max<int64_t>(1, b_row))
    fail(CH_ERR_SHAPE, "gemm: ldb = ", ldb, " is shorter than a row of B (", b_row,
         " elements, trans_b = ", tb, ")");
  if (ldc < std::max<int64_t>(1, n))
    fail(CH_ERR_SHAPE, "gemm: ldc = ", ldc, " is shorter than a row of C (", n, " elements)");
}

// ---------------------------------------------------------------------------
// The libraries.

bool dnnl_built() { return CH_HAVE_DNNL != 0; }

// e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64":
// with DYNAMIC_ARCH it names the kernels it detected for this CPU.
std::string openblas_description() { return openblas_get_config(); }

// ---------------------------------------------------------------------------
// The choice.

int ceil_log2(int64_t v) {
  int l = 0;
  while ((int64_t{1} << l) < v && l < 62) ++l;
  return l;
}

struct ClassKey {
  bool f64, ta, tb;
  int lm, ln, lk, threads;
  bool b_workspace = false;  // a transposed B with a GemmWorkspace for it
  // log2 of the class's most multiply-adds (m, n and k rounded up).
  int log2_work() const { return lm + ln + lk; }
  uint64_t packed() const {
    return uint64_t(f64) | uint64_t(ta) << 1 | uint64_t(tb) << 2 | uint64_t(lm) << 3 |
           uint64_t(ln) << 9 | uint64_t(lk) << 15 | uint64_t(std::min(threads, 1 << 16)) << 21 |
           uint64_t(b_workspace) << 37;
  }
};

// A call from inside a parallel_for (the convolution's per-thread parts of
// the batch) has one thread: a split there runs inline, so it belongs to the
// one-thread class, not to the class of top-level calls, which can split.
ClassKey class_of(bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t k, bool b_workspace) {
  const int threads = in_parallel_region_now() ? 1 : num_threads();
  ClassKey key{f64, ta, tb, ceil_log2(m), ceil_log2(n), ceil_log2(k), threads};
  key.b_workspace = tb && b_workspace;
  return key;
}

// A candidate: a library, and whether C is cut into one block per thread
// (code lib * 2 + 1) or left in one block (lib * 2).
constexpr int kCandidates = 2 * kGemmLibraries;
GemmLibrary library_of(int candidate) { return GemmLibrary(candidate / 2); }
bool split_of(int candidate) { return candidate % 2 == 1; }
Blocks blocks_of(int candidate) { return split_of(candidate) ? Blocks::per_thread : Blocks::one; }

struct ClassState {
  ClassKey key{};
  std::vector<int> candidates;
  int samples[kCandidates] = {};
  double seconds[kCandidates] = {};             // timed, in all
  double rates[kCandidates][kMaxSamples] = {};  // flop/s of each timed call
  bool dropped[kCandidates] = {};               // clearly slower: no more calls
  int chosen = -1;
  bool from_cache = false;
  double decided[kCandidates] = {};  // median rates at the choice (or cached); 0: not run

  // Judging in context (gemm.h, kGemmContextLog2Work): the leader of the
  // back-to-back calls computes each process's settling calls, then each
  // contender computes a stretch of the program's own calls, timed.
  bool judging = false;
  int leader = -1;
  // The class's calls in this process so far while judged, up to
  // kGemmContextSettle (those are not timed).
  int settle = 0;
  std::vector<int> contenders;
  // The contender whose stretch of calls runs now (-1: none yet), and each
  // contender's warm-up calls in this process (kGemmContextWarmup; neither
  // is kept on disk: every process warms its libraries up again).
  int stretch = -1;
  int stretch_end = 0;  // the stretch's contender's samples when it ends (kGemmContextRounds)
  int warm_calls[kCandidates] = {};
  int context_samples[kCandidates] = {};
  double context_rates[kCandidates][kContextSamples] = {};
  double in_context[kCandidates] = {};  // medians in context at the choice (or cached); 0: none

  // Watching a choice found on disk (gemm.h, kGemmRejudgeBelow): its own
  // calls timed after the settling ones, their median (0: not yet), and
  // the candidate that ran them.
  bool watching = false;
  int watch_samples = 0;
  double watch_rates[kContextSamples] = {};
  double watched = 0;
  int watched_choice = -1;
  // A process before this one watched the choice run outside the bounds
  // (kGemmRejudgeAgreeing): -1 below kGemmRejudgeBelow, +1 above
  // kGemmRejudgeAbove, 0 none; kept on disk ("doubt slower" / "doubt faster").
  int doubt = 0;

  // The median of n rates (the upper one of an even count).
  static double median_of(const double* rates, int n) {
    double r[kMaxSamples];
    for (int i = 0; i < n; ++i) {  // insertion sort of at most kMaxSamples values
      int j = i;
      for (; j > 0 && r[j - 1] > rates[i]; --j) r[j] = r[j - 1];
      r[j] = rates[i];
    }
    return n == 0 ? 0 : r[n / 2];
  }

  // The median of a candidate's back-to-back samples.
  double median(int c) const { return median_of(rates[c], samples[c]); }
  double context_median(int c) const { return median_of(context_rates[c], context_samples[c]); }
};

// A candidate whose median is below this fraction of the leader's (both
// with at least kDropAfter samples) is dropped from the measurement early.
// Three, not two: a split's first calls find the data cold in the other
// cores' caches, and one slow call must not drop it.
constexpr double kDropBelow = 0.7;
constexpr int kDropAfter = 3;
// Judged again, a candidate below this fraction of the best both back to back
// and in context on disk sits it out (start_judging).
constexpr double kSitOutBelow = 0.5;
// Where a class tries C both whole and split over the threads, the split is
// chosen only if its median rate is this much higher.
constexpr double kSplitMargin = 1.2;
// oneDNN, its sgemm and its matmul primitive alike, is chosen in a small
// class only where it beats the best of the other libraries by this much: the
// first process to run it pays for JIT-compiled kernels and buffers that stay
// (several MiB of resident memory and some heap per process). In a class this
// small a lead of a few percent is worth microseconds a step. Classes of at
// least 2^27 multiply-adds (m, n and k rounded up; a 100 x 1000 x 1000
// product) take oneDNN on any lead: there the GEMMs are the step, and its
// cost is small beside the model's own memory. Both chosen by measurement:
// bench/results/constants.md, kHeavyMargin.
constexpr double kHeavyMargin = 1.15;
constexpr int kHeavyFreeLog2Work = 27;
// The margin a heavy library must beat the others by in a small class (1:
// not heavy).
double heavy_margin(GemmLibrary lib) {
  return lib == GemmLibrary::onednn || lib == GemmLibrary::onednn_matmul ? kHeavyMargin : 1.0;
}

int library_index(const char* name) {
  for (int i = 0; i < kGemmLibraries; ++i)
    if (std::strcmp(name, gemm_library_name(GemmLibrary(i))) == 0) return i;
  return -1;
}

std::string candidate_list() {
  std::string s;
  for (int i = 0; i < kGemmLibraries; ++i) {
    const GemmLibrary lib = GemmLibrary(i);
    if (!gemm_library_available(lib, false) && !gemm_library_available(lib, true)) continue;
    s += (s.empty() ? "" : ", ") + std::string(gemm_library_name(lib));
  }
  return s;
}

class Chooser {
 public:
  static Chooser& instance() {
    static Chooser* c = new Chooser;  // never destroyed: GEMMs may run in static destructors
    return *c;
  }

  struct Pick {
    GemmLibrary lib;
    Blocks blocks;
    bool measure;
    uint64_t key;
    int candidate;
    int context = -1;            // judging in context: the contender computing this call, or -1
    bool watch = false;          // time this call of the cached choice (watching)
    bool context_timed = false;  // whether the contender's call is timed (else a warm-up)
  };

  Pick pick(bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t k, bool b_workspace) {
    const ClassKey key = class_of(f64, ta, tb, m, n, k, b_workspace);
    const uint64_t packed = key.packed();
    std::lock_guard<std::mutex> lock(mutex_);
    read_environment();
    if (forced_ >= 0 && gemm_library_available(GemmLibrary(forced_), f64))
      return {GemmLibrary(forced_), Blocks::rule, false, packed, -1};
    ClassState& st = classes_[packed];
    if (st.candidates.empty()) {
      st.key = key;
      st.candidates = candidates_for(key);
      if (st.candidates.size() == 1)
        st.chosen = st.candidates[0];
      else
        load_cached(st);
    }
    if (st.chosen >= 0) {
      const bool watch = st.watching && st.settle++ >= kGemmContextSettle;
      return {library_of(st.chosen), blocks_of(st.chosen), false, packed, st.chosen, -1, watch};
    }
    if (st.judging) {
      if (st.settle < kGemmContextSettle) {
        ++st.settle;
        return {library_of(st.leader), blocks_of(st.leader), false, packed, st.leader, -1};
      }
      // Stretches: one contender computes the class's calls until it has its
      // round's samples, then the one with the fewest samples (the first of
      // equals).
      if (st.stretch < 0 || st.context_samples[st.stretch] >= st.stretch_end) {
        st.stretch = -1;
        for (int c : st.contenders)
          if (st.context_samples[c] < kContextSamples &&
              (st.stretch < 0 || st.context_samples[c] < st.context_samples[st.stretch]))
            st.stretch = c;
        if (st.stretch < 0)  // cannot happen (the last sample decides), but never run nothing
          return {library_of(st.leader), blocks_of(st.leader), false, packed, st.leader};
        constexpr int per_round = kContextSamples / kGemmContextRounds;
        st.stretch_end =
            std::min(kContextSamples, (st.context_samples[st.stretch] / per_round + 1) * per_round);
      }
      const int c = st.stretch;
      // Only a contender close enough back to back to win needs the warm-up
      // (BLIS at a fifth of the leader's rate is timed cold).
      const bool warms = st.decided[c] >= kDropBelow * st.decided[st.leader];
      const bool timed = !warms || st.warm_calls[c] >= warmup_;
      if (!timed) ++st.warm_calls[c];
      return {library_of(c), blocks_of(c), false, packed, c, c, false, timed};
    }
    // The candidate with the fewest calls so far (the first of equals): the
    // candidates take turns, so a slow or fast spell of the machine falls on
    // all of them alike.
    int next = -1;
    for (int c : st.candidates)
      if (!st.dropped[c] && (next < 0 || st.samples[c] < st.samples[next])) next = c;
    if (next < 0) {  // cannot happen (record keeps the leader), but never measure nothing
      st.chosen = st.candidates[0];
      return {library_of(st.chosen), blocks_of(st.chosen), false, packed, -1};
    }
    return {library_of(next), blocks_of(next), true, packed, next};
  }

  void record(uint64_t packed, int candidate, double seconds, double rate) {
    std::string dir, key, payload;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = classes_.find(packed);
      if (it == classes_.end() || it->second.chosen >= 0 || it->second.judging)
        return;  // cleared or decided meanwhile
      ClassState& st = it->second;
      if (!add_sample(st, candidate, seconds, rate)) return;
      if (cache_dir_.empty()) return;
      dir = cache_dir_;
      key = cache_key(st);
      payload = cache_payload(st);
    }
    // Written without the lock (other threads' GEMMs go on); a failed write
    // only means the next process measures again.
    gemm_cache::store(dir, key, payload);
  }

  // Adds a timed call to the class's tally; true when that decided the class
  // or started judging it in context (either is written to the disk cache).
  bool add_sample(ClassState& st, int candidate, double seconds, double rate) {
    if (st.samples[candidate] >= kMaxSamples) return false;  // a concurrent extra call
    st.seconds[candidate] += seconds;
    st.rates[candidate][st.samples[candidate]++] = rate;
    // The median decides: single calls slowed by the machine's other work or
    // by a library's one-time set-up (oneDNN's JIT) do not count, and a
    // split that pays only while the pool's workers happen to be awake is
    // judged by its typical call, not its luckiest.
    // The lead is among the candidates still in: the leader itself is never
    // dropped, so one candidate always remains (a dropped candidate's frozen
    // median as the lead could drop all of them, and leave nothing to pick).
    double lead = 0;
    for (int c : st.candidates)
      if (!st.dropped[c] && st.samples[c] >= kDropAfter) lead = std::max(lead, st.median(c));
    for (int c : st.candidates)
      if (!st.dropped[c] && st.samples[c] >= kDropAfter && st.median(c) < kDropBelow * lead)
        st.dropped[c] = true;
    // Decided when one candidate is left, or at the end of a turn (every
    // candidate still in has had as many calls) once each has had
    // kMinSamples calls and either kSampleSeconds in all or kMaxSamples calls.
    int left = 0, fewest = kMaxSamples, most = 0;
    bool long_enough = true;
    for (int c : st.candidates) {
      if (st.dropped[c]) continue;
      ++left;
      fewest = std::min(fewest, st.samples[c]);
      most = std::max(most, st.samples[c]);
      long_enough = long_enough && st.seconds[c] >= kSampleSeconds;
    }
    if (left > 1 &&
        (fewest != most || fewest < kMinSamples || (!long_enough && fewest < kMaxSamples)))
      return false;
    std::vector<int> in;
    for (int c : st.candidates) {
      st.decided[c] = st.samples[c] > 0 ? st.median(c) : 0;
      if (!st.dropped[c]) in.push_back(c);
    }
    const int best = best_of(st.key, in, st.decided);
    if (start_judging(st, best)) return true;
    st.chosen = best;
    return true;
  }

  // The best of `among` by `rate` (flop/s per candidate code). A split must
  // beat the best whole product by kSplitMargin: it also changes what the
  // neighbouring operations find (a worker awake and polling, or asleep),
  // which its own timing does not show. A heavy library (oneDNN's sgemm and
  // matmul) must beat the others by its margin (heavy_margin) in a class
  // below 2^kHeavyFreeLog2Work multiply-adds.
  static int best_of(const ClassKey& key, const std::vector<int>& among, const double* rate) {
    const bool small = key.log2_work() < kHeavyFreeLog2Work;
    auto score = [&](int c) {
      return rate[c] / (split_of(c) ? kSplitMargin : 1.0) /
             (small ? heavy_margin(library_of(c)) : 1.0);
    };
    int best = -1;
    for (int c : among)
      if (best < 0 || score(c) > score(best)) best = c;
    return best;
  }

  // A large class is judged again in context, every candidate it measured
  // back to back a contender (gemm.h, kGemmContextLog2Work), `leader`
  // computing each process's settling calls; true when that starts (after its
  // back-to-back calls, or when a cached choice ran slower: record_watch).
  // Judged again (record_watch), a candidate below kSitOutBelow of the best
  // both back to back and in context on disk sits it out and keeps its
  // medians: within one cache key (the CPU model, each library's version and
  // kernels) a library that far behind twice does not come to win, and
  // running it again only costs its slow calls and its memory
  // (bench/results/constants.md, kSitOutBelow).
  static bool start_judging(ClassState& st, int leader) {
    if (st.key.log2_work() < kGemmContextLog2Work) return false;
    double best_in_context = 0, best_back_to_back = 0;
    for (int c : st.candidates) {
      best_in_context = std::max(best_in_context, st.in_context[c]);
      best_back_to_back = std::max(best_back_to_back, st.decided[c]);
    }
    auto far_behind = [&](int c) {
      return c != leader && st.in_context[c] > 0 &&
             st.in_context[c] < kSitOutBelow * best_in_context &&
             st.decided[c] < kSitOutBelow * best_back_to_back;
    };
    std::vector<int> measured;
    for (int c : st.candidates)
      if (st.decided[c] > 0 && !far_behind(c)) measured.push_back(c);
    if (measured.size() < 2) return false;
    st.judging = true;
    st.leader = leader;
    st.chosen = -1;
    st.from_cache = false;
    st.contenders = std::move(measured);
    std::fill(st.context_samples, st.context_samples + kCandidates, 0);
    std::fill(st.warm_calls, st.warm_calls + kCandidates, 0);
    st.stretch = -1;
    for (int c : st.contenders) st.in_context[c] = 0;
    return true;
  }

  // Whether each contender has its kContextSamples calls in context.
  static bool every_one_sampled(const std::vector<int>& contenders, const int* samples) {
    for (int c : contenders)
      if (samples[c] < kContextSamples) return false;
    return true;
  }

  // A call of a contender timed in context; decides the class when every
  // contender has kContextSamples. The samples so far go to the disk cache
  // with each one: a program shorter than the judging (up to 4 + 36 calls of
  // a class: a test, a benchmark's warm-up) leaves them to the next process,
  // which goes on from there rather than measuring the class again.
  void record_context(uint64_t packed, int candidate, double rate) {
    std::string dir, key, payload;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = classes_.find(packed);
      if (it == classes_.end() || !it->second.judging) return;  // cleared or decided meanwhile
      ClassState& st = it->second;
      if (st.context_samples[candidate] >= kContextSamples) return;  // a concurrent extra call
      st.context_rates[candidate][st.context_samples[candidate]++] = rate;
      if (every_one_sampled(st.contenders, st.context_samples)) {
        for (int c : st.contenders) st.in_context[c] = st.context_median(c);
        st.chosen = best_of(st.key, st.contenders, st.in_context);
        st.judging = false;
      }
      if (cache_dir_.empty()) return;
      dir = cache_dir_;
      key = cache_key(st);
      payload = cache_payload(st);
    }
    gemm_cache::store(dir, key, payload);
  }

  // A call of a watched class's cached choice, timed in context. After
  // kContextSamples of them, a median below kGemmRejudgeBelow of the best
  // median in context on disk starts judging the class again (the machine
  // has changed since), and so does one above kGemmRejudgeAbove (the judging
  // on disk ran in a disturbed spell). The leader is the cached choice (it
  // computes the settling calls), the contenders the candidates measured back
  // to back then (start_judging).
  void record_watch(uint64_t packed, int candidate, double rate) {
    std::string dir, key, payload;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = classes_.find(packed);
      if (it == classes_.end()) return;  // cleared meanwhile
      ClassState& st = it->second;
      if (!st.watching || st.chosen != candidate || st.watch_samples >= kContextSamples) return;
      st.watch_rates[st.watch_samples++] = rate;
      if (st.watch_samples < kContextSamples) return;
      st.watching = false;
      st.watched = ClassState::median_of(st.watch_rates, st.watch_samples);
      st.watched_choice = st.chosen;
      double best = 0;
      for (int c : st.candidates) best = std::max(best, st.in_context[c]);
      const int outside = st.watched < kGemmRejudgeBelow * best   ? -1
                          : st.watched > kGemmRejudgeAbove * best ? 1
                                                                  : 0;
      if (outside == 0 && st.doubt == 0) return;  // as judged, as before
      // Judged again once kGemmRejudgeAgreeing processes in a row saw the
      // choice run outside the bounds on the same side; until then the doubt
      // is kept on disk, and a process that sees it run as judged clears it.
      if (outside != 0 && outside == st.doubt) {
        st.doubt = 0;
        if (!start_judging(st, st.chosen)) return;
      } else {
        st.doubt = outside;
      }
      if (cache_dir_.empty()) return;
      dir = cache_dir_;
      key = cache_key(st);
      payload = cache_payload(st);
    }
    gemm_cache::store(dir, key, payload);
  }

  double time(int candidate, const std::function<void()>& call) {
    GemmStopwatch sw;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sw = stopwatch_;
    }
    if (sw) return sw(library_of(candidate), split_of(candidate), call);
    const auto t0 = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void force(const char* name) {
    int index = -1;
    if (name && *name && std::strcmp(name, "auto") != 0) {
      index = library_index(name);
      if (index < 0 || (!gemm_library_available(GemmLibrary(index), false) &&
                        !gemm_library_available(GemmLibrary(index), true)))
        fail(CH_ERR_INVALID_ARGUMENT, "GEMM library \"", name,
             "\" is not one of this build's and machine's: auto, ", candidate_list());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    environment_read_ = true;  // an explicit choice overrides CH_GEMM, and its error
    environment_error_.clear();
    forced_ = index;
    classes_.clear();
  }

  std::string forced() {
    std::lock_guard<std::mutex> lock(mutex_);
    read_environment();
    return forced_ >= 0 ? gemm_library_name(GemmLibrary(forced_)) : "auto";
  }

  int choice(bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t k, bool b_workspace) {
    const uint64_t packed = class_of(f64, ta, tb, m, n, k, b_workspace).packed();
    std::lock_guard<std::mutex> lock(mutex_);
    read_environment();
    if (forced_ >= 0 && gemm_library_available(GemmLibrary(forced_), f64)) return forced_;
    auto it = classes_.find(packed);
    return it == classes_.end() || it->second.chosen < 0 ? -1 : int(library_of(it->second.chosen));
  }

  void reread_environment() {
    std::lock_guard<std::mutex> lock(mutex_);
    environment_read_ = false;
    environment_error_.clear();
    forced_ = -1;
    cache_environment_read_ = false;  // a directory set by set_cache_directory stays
    classes_.clear();
  }

  void set_cache_directory(const char* dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_dir_explicit_ = dir != nullptr;
    cache_dir_ = dir ? dir : gemm_cache::directory_from_environment();
    classes_.clear();
  }

  std::string cache_directory() {
    std::lock_guard<std::mutex> lock(mutex_);
    read_cache_environment();
    return cache_dir_;
  }

  void set_machine(const std::string& machine) {
    std::lock_guard<std::mutex> lock(mutex_);
    machine_ = machine;
    classes_.clear();
  }

  void set_stopwatch(GemmStopwatch sw) {
    std::lock_guard<std::mutex> lock(mutex_);
    stopwatch_ = std::move(sw);
    classes_.clear();
  }

  void set_warmup(int calls) {
    std::lock_guard<std::mutex> lock(mutex_);
    warmup_ = calls < 0 ? kGemmContextWarmup : calls;
    classes_.clear();
  }

  // " | choices kept in DIR" or " | choices not kept on disk".
  std::string cache_text() {
    const std::string dir = cache_directory();
    return dir.empty() ? " | choices not kept on disk" : " | choices kept in " + dir;
  }

  // "float32 NT m<=128 n<=1024 k<=1024 2 threads: openblas 105.0 GFLOP/s
  // (onednn 95%, blis 90%)", ..., each taken from the disk cache followed by
  // " [cached]".
  std::string chosen_text() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<uint64_t, const ClassState*> sorted;
    for (const auto& [packed, st] : classes_)
      if (st.chosen >= 0) sorted[packed] = &st;
    std::string s;
    for (const auto& entry : sorted) {
      const ClassState* st = entry.second;  // not a structured binding: the lambda uses it
      const ClassKey& k = st->key;
      // "onednn 98.0 GFLOP/s (libxsmm 85%, ...)": the choice's rate, then the
      // others' in percent of it.
      auto rates = [&](const double* rate) {
        const double best = rate[st->chosen];
        char text[32];
        std::snprintf(text, sizeof text, " %.1f GFLOP/s", best * 1e-9);
        std::string r = candidate_name(k, st->chosen) + text, others;
        for (int i : st->candidates)
          if (i != st->chosen && rate[i] > 0) {
            std::snprintf(text, sizeof text, " %.0f%%", best > 0 ? 100 * rate[i] / best : 0);
            others += (others.empty() ? "" : ", ") + candidate_name(k, i) + text;
          }
        return others.empty() ? r : r + " (" + others + ")";
      };
      s += s.empty() ? "" : "; ";
      s += class_name(k) + ": " + rates(st->decided);
      // Judged in context: "; in context onednn 98.0 GFLOP/s (libxsmm 85%)".
      if (st->in_context[st->chosen] > 0) s += "; in context " + rates(st->in_context);
      if (st->from_cache) s += " [cached]";
      // Watched: "; here 170.2 GFLOP/s" (the cached choice kept), or judged
      // again: "; judged again here, blis split ran at 140.1 GFLOP/s".
      if (st->watched > 0) {
        char text[48];
        std::snprintf(text, sizeof text, " %.1f GFLOP/s", st->watched * 1e-9);
        s += st->from_cache
                 ? std::string("; here") + text +
                       (st->doubt < 0   ? " (slower: judged again if the next process agrees)"
                        : st->doubt > 0 ? " (faster: judged again if the next process agrees)"
                                        : "")
                 : "; judged again here, " + candidate_name(k, st->watched_choice) + " ran at" +
                       text;
      }
    }
    return s;
  }

 private:
  // CH_GEMM_CACHE and CH_GEMM_CACHE_DIR, read once unless a directory was
  // set (lock held).
  void read_cache_environment() {
    if (cache_environment_read_) return;
    cache_environment_read_ = true;
    if (!cache_dir_explicit_) cache_dir_ = gemm_cache::directory_from_environment();
  }

  // CH_GEMM, read once (lock held). An unknown or missing library fails the
  // GEMMs with a message naming it, every time, rather than being ignored.
  void read_environment() {
    if (environment_read_) {
      if (!environment_error_.empty()) fail(CH_ERR_INVALID_ARGUMENT, environment_error_);
      return;
    }
    environment_read_ = true;
    cache_environment_read_ = false;
    read_cache_environment();
    const char* env = std::getenv("CH_GEMM");
    if (!env || !*env || std::strcmp(env, "auto") == 0) return;
    const int index = library_index(env);
    if (index < 0 || (!gemm_library_available(GemmLibrary(index), false) &&
                      !gemm_library_available(GemmLibrary(index), true))) {
      environment_error_ = std::string("CH_GEMM=") + env +
                           " is not one of this build's and machine's GEMM libraries: auto, " +
                           candidate_list();
      fail(CH_ERR_INVALID_ARGUMENT, environment_error_);
    }
    forced_ = index;
  }

  static const std::vector<GemmLibrary>& candidates(bool f64) {
    static const std::vector<GemmLibrary> f32s = gemm_candidates(false),
                                          f64s = gemm_candidates(true);
    return f64 ? f64s : f32s;
  }

  // The candidates of a class: each library in one block; with more than
  // one thread, also (or, for large classes, only) in one block per thread.
  // Whether splitting a mid-sized product pays depends on whether the pool's
  // workers are awake, which only the real calls tell.
  static std::vector<int> candidates_for(const ClassKey& key) {
    const double most = std::ldexp(1.0, key.log2_work());  // multiply-adds, at most
    const bool split = key.threads > 1 && most > double(kMinSplit);
    const bool only_split = split && most / 8 >= double(key.threads) * double(kGemmGrain);
    std::vector<int> out;
    for (GemmLibrary lib : candidates(key.f64)) {
      if (!gemm_library_supports(lib, key.f64, key.ta, key.tb, key.b_workspace)) continue;
      if (!only_split) out.push_back(int(lib) * 2);
      if (split) out.push_back(int(lib) * 2 + 1);
    }
    return out;
  }

  // "float32 NT m<=128 n<=64 k<=32 2 threads", and where B may be
  // transposed into a workspace "float32 NT m<=128 n<=128 k<=1024 1 thread,
  // B^T in a workspace".
  static std::string class_name(const ClassKey& k) {
    return std::string(k.f64 ? "float64 " : "float32 ") + (k.ta ? "T" : "N") + (k.tb ? "T" : "N") +
           " m<=" + std::to_string(int64_t{1} << k.lm) +
           " n<=" + std::to_string(int64_t{1} << k.ln) +
           " k<=" + std::to_string(int64_t{1} << k.lk) + " " + std::to_string(k.threads) +
           (k.threads == 1 ? " thread" : " threads") +
           (k.b_workspace ? ", B^T in a workspace" : "");
  }

  // The constants a choice is made by: a choice cached under other margins
  // (an older chainerc) is made again, not kept.
  static std::string rules() {
    char text[320];
    std::snprintf(text, sizeof text,
                  "margins heavy %g from 2^%d, split %g; drop below %g after %d; sit "
                  "out below %g; context from 2^%d in %d rounds; judged again below %g or above "
                  "%g in %d processes; C written by the pool before each timed call",
                  kHeavyMargin, kHeavyFreeLog2Work, kSplitMargin, kDropBelow, kDropAfter,
                  kSitOutBelow, kGemmContextLog2Work, kGemmContextRounds, kGemmRejudgeBelow,
                  kGemmRejudgeAbove, kGemmRejudgeAgreeing);
    return text;
  }

  // What a cached choice is valid for (lock held): the format, the CPU and
  // each library's identity (the machine), the rules, the class and its
  // candidates. Anything different is another file's key. Format 3: the blocks per thread
  // are cut nearer to even shares (gemm_block_edge), so a split measured
  // before is measured again.
  std::string cache_key(const ClassState& st) {
    if (machine_.empty()) {
      machine_ = "cpu: " + gemm_cache::cpu_identity() + "\nlibraries:";
      for (int i = 0; i < kGemmLibraries; ++i) {
        const GemmLibrary lib = GemmLibrary(i);
        if (gemm_library_available(lib, false) || gemm_library_available(lib, true))
          machine_ +=
              std::string(" ") + gemm_library_name(lib) + ": " + gemm_library_version(lib) + ";";
      }
    }
    std::string key = "chainerc GEMM choice, format 3\n" + machine_ + "\nrules: " + rules() +
                      "\nclass: " + class_name(st.key) + "\ncandidates:";
    for (int c : st.candidates) key += " " + candidate_name(st.key, c) + ",";
    return key + "\n";
  }

  // "choice onednn split\nrate onednn split 1.05e+11\nrate ...\ncontext
  // onednn split 9.8e+10\n...": the choice, each measured candidate's median
  // rate back to back and, for a class judged in context, each contender's
  // median there (for ch_config_blas).
  // A class still judged in context has its leader as the choice, then
  // "judging\n", a "contender NAME\n" line per contender and a "sample NAME
  // RATE\n" line per call timed so far.
  static std::string cache_payload(const ClassState& st) {
    std::string p = "choice " + candidate_name(st.key, st.judging ? st.leader : st.chosen) + "\n";
    char rate[40];
    // "PREFIX NAME RATE\n" for each candidate with a rate.
    auto lines = [&](const char* prefix, const double* rates) {
      for (int c : st.candidates)
        if (rates[c] > 0) {
          std::snprintf(rate, sizeof rate, " %.6e\n", rates[c]);
          p += prefix + candidate_name(st.key, c) + rate;
        }
    };
    lines("rate ", st.decided);
    if (st.judging) {
      p += "judging\n";
      for (int c : st.contenders) p += "contender " + candidate_name(st.key, c) + "\n";
      for (int c : st.contenders)
        for (int i = 0; i < st.context_samples[c]; ++i) {
          std::snprintf(rate, sizeof rate, " %.6e\n", st.context_rates[c][i]);
          p += "sample " + candidate_name(st.key, c) + rate;
        }
    }
    lines("context ", st.in_context);
    if (st.doubt != 0 && !st.judging) p += st.doubt < 0 ? "doubt slower\n" : "doubt faster\n";
    return p;
  }

  // Takes the class's choice from the disk cache if it holds a valid one
  // (lock held). Every line must parse, the choice must be one of the
  // class's candidates and its rate a positive number, a class being judged
  // must list its contenders (the leader one of them) once each and at most
  // kContextSamples samples of each, short of all; otherwise the class is
  // measured as if nothing was there.
  void load_cached(ClassState& st) {
    read_cache_environment();
    if (cache_dir_.empty()) return;
    std::string payload;
    if (!gemm_cache::load(cache_dir_, cache_key(st), &payload)) return;
    auto candidate_named = [&](const std::string& name) {
      for (int c : st.candidates)
        if (candidate_name(st.key, c) == name) return c;
      return -1;
    };
    int chosen = -1;
    double decided[kCandidates] = {}, in_context[kCandidates] = {};
    bool judging = false;
    int doubt = 0;
    std::vector<int> contenders;
    int samples[kCandidates] = {};
    double sampled[kCandidates][kContextSamples] = {};
    // "NAME RATE" after the line's first `skip` characters: true for a
    // candidate of the class and a positive finite rate.
    auto named_rate = [&](const std::string& line, size_t skip, int* c, double* rate) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos || space <= skip) return false;
      *c = candidate_named(line.substr(skip, space - skip));
      const std::string number = line.substr(space + 1);
      char* stop = nullptr;
      *rate = std::strtod(number.c_str(), &stop);
      return *c >= 0 && !number.empty() && *stop == '\0' && std::isfinite(*rate) && *rate > 0 &&
             *rate <= 1e18;
    };
    size_t pos = 0;
    while (pos < payload.size()) {
      const size_t end = payload.find('\n', pos);
      if (end == std::string::npos) return;  // every line ends in a newline
      const std::string line = payload.substr(pos, end - pos);
      pos = end + 1;
      if (line.rfind("choice ", 0) == 0) {
        if (chosen >= 0) return;
        chosen = candidate_named(line.substr(7));
        if (chosen < 0) return;
      } else if (line.rfind("rate ", 0) == 0 || line.rfind("context ", 0) == 0) {
        const bool context = line[0] == 'c';
        int c = -1;
        double rate = 0;
        if (!named_rate(line, context ? 8 : 5, &c, &rate)) return;
        double& slot = context ? in_context[c] : decided[c];
        if (slot > 0) return;
        slot = rate;
      } else if (line == "judging") {
        if (judging || doubt != 0) return;
        judging = true;
      } else if (!judging && (line == "doubt slower" || line == "doubt faster")) {
        if (doubt != 0) return;
        doubt = line == "doubt slower" ? -1 : 1;
      } else if (judging && line.rfind("contender ", 0) == 0) {
        const int c = candidate_named(line.substr(10));
        if (c < 0 || std::find(contenders.begin(), contenders.end(), c) != contenders.end()) return;
        contenders.push_back(c);
      } else if (judging && line.rfind("sample ", 0) == 0) {
        int c = -1;
        double rate = 0;
        if (!named_rate(line, 7, &c, &rate) ||
            std::find(contenders.begin(), contenders.end(), c) == contenders.end() ||
            samples[c] >= kContextSamples)
          return;
        sampled[c][samples[c]++] = rate;
      } else {
        return;
      }
    }
    if (chosen < 0 || decided[chosen] <= 0) return;
    if (judging) {
      if (contenders.size() < 2 || every_one_sampled(contenders, samples) ||
          std::find(contenders.begin(), contenders.end(), chosen) == contenders.end())
        return;
      st.judging = true;
      st.leader = chosen;
      st.contenders = contenders;
      std::copy(samples, samples + kCandidates, st.context_samples);
      for (int c = 0; c < kCandidates; ++c)
        std::copy(sampled[c], sampled[c] + kContextSamples, st.context_rates[c]);
      std::copy(decided, decided + kCandidates, st.decided);
      // Judged again: those sitting it out keep their medians (start_judging).
      for (int c : st.candidates)
        if (std::find(contenders.begin(), contenders.end(), c) == contenders.end())
          st.in_context[c] = in_context[c];
      return;
    }
    std::copy(decided, decided + kCandidates, st.decided);
    std::copy(in_context, in_context + kCandidates, st.in_context);
    st.chosen = chosen;
    st.from_cache = true;
    st.watching = st.key.log2_work() >= kGemmContextLog2Work && in_context[chosen] > 0;
    st.doubt = st.watching ? doubt : 0;
  }

  // "onednn", or with threads "onednn split" / "onednn unsplit".
  static std::string candidate_name(const ClassKey& key, int candidate) {
    std::string s = gemm_library_name(library_of(candidate));
    if (key.threads > 1) s += split_of(candidate) ? " split" : " unsplit";
    return s;
  }

  std::mutex mutex_;
  std::unordered_map<uint64_t, ClassState> classes_;
  int forced_ = -1;
  std::string cache_dir_;  // "" when off
  bool cache_dir_explicit_ = false, cache_environment_read_ = false;
  std::string machine_;  // the CPU and libraries part of the cache keys
  bool environment_read_ = false;
  std::string environment_error_;
  GemmStopwatch stopwatch_;
  int warmup_ = kGemmContextWarmup;  // set_gemm_context_warmup_for_testing
};

// The workspace as room for op(B) (k x n) where libxsmm could use it: a
// transposed B, libxsmm available for T and the workspace large enough;
// nullptr otherwise (the workspace is then ignored).
template <typename T>
T* transposed_b_space(bool tb, int64_t n, int64_t k, GemmWorkspace workspace) {
  constexpr bool f64 = std::is_same_v<T, double>;
  if (!tb || !workspace.data || !gemm_library_available(GemmLibrary::libxsmm, f64)) return nullptr;
  const double need = double(n) * double(k) * double(sizeof(T));
  return need <= double(workspace.bytes) ? static_cast<T*>(workspace.data) : nullptr;
}

// C's m x n elements (row stride ldc) zeroed by the pool's threads in even
// shares of its rows: the memory as an elementwise function over the pool
// leaves it (gemm_chosen's measurement).
template <typename T>
void written_by_pool(T* c, int64_t m, int64_t n, int64_t ldc) {
  parallel_for(m, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      std::memset(static_cast<void*>(c + i * ldc), 0, size_t(n) * sizeof(T));
  });
}

template <typename T>
void gemm_chosen(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                 int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, T* bt) {
  if (m == 0 || n == 0) return;
  check(ta, tb, m, n, k, lda, ldb, ldc);
  if (k == 0) {  // C = beta C, as BLAS does for an empty inner dimension
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  openblas_one_thread();
  constexpr bool f64 = std::is_same_v<T, double>;
  Chooser& chooser = Chooser::instance();
  Chooser::Pick q = chooser.pick(f64, ta, tb, m, n, k, bt != nullptr);
  const bool measured = q.measure;
  const double flop = 2.0 * double(m) * double(n) * double(k);
  if (q.measure) {
    // An undecided class is decided now, on this call's operands but into a
    // scratch C, and only the chosen candidate writes the caller's C: every
    // result of a class then comes from one library, so a program gives the
    // same bits each time it runs a step within a process. No lock is held
    // while the candidates run (they use the pool, whose jobs may call gemm on
    // other threads); threads that measure the same class at once add samples
    // to the same tally. With beta 0 the caller's C serves as the scratch (no
    // candidate reads it, and the choice writes it last): a measuring process
    // holds no second C (the small MLP's gW1, 313 KB, was most of its heap).
    std::vector<T> scratch(beta == T(0) ? 0 : static_cast<size_t>((m - 1) * ldc + n));
    T* const scratch_c = beta == T(0) ? c : scratch.data();
    // With more than one thread, a program's C was last written where its
    // other work left it, by the pool's threads in shares (an elementwise
    // function, a split product), not by the candidate's own last call: the
    // timed call finds C that way (written_by_pool). A whole product then
    // pays for the lines it takes from the other cores (measured:
    // bench/results/constants.md, written_by_pool).
    const bool spread_c = num_threads() > 1 && !in_parallel_region_now();
    while (q.measure) {
      // Each timed call follows an untimed one of the same candidate: the
      // candidates take turns, and a call right after another candidate's
      // finds the operands and C in the wrong cores' caches (a split after a
      // whole product, most of all), which would judge it by that alone.
      auto run = [&] {
        split_over_pool(q.lib, q.blocks, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, scratch_c,
                        ldc, bt);
      };
      run();
      if (spread_c) written_by_pool(scratch_c, m, n, ldc);
      const double seconds = chooser.time(q.candidate, run);
      chooser.record(q.key, q.candidate, seconds, flop / std::max(seconds, 1e-9));
      q = chooser.pick(f64, ta, tb, m, n, k, bt != nullptr);
    }
  }
  // The rate of this call's own product, computed into C by the class's
  // choice (or the contender judged) and timed where the program left its
  // operands.
  auto own_rate = [&] {
    const double seconds = chooser.time(q.candidate, [&] {
      split_over_pool(q.lib, q.blocks, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bt);
    });
    return flop / std::max(seconds, 1e-9);
  };
  if (q.watch) {  // a cached choice watched
    chooser.record_watch(q.key, q.candidate, own_rate());
    return;
  }
  if (q.context >= 0 && !measured && q.context_timed) {
    // Judging in context: the contender whose stretch it is computes this
    // call (q.lib), timed where the program's own work left the operands.
    chooser.record_context(q.key, q.context, own_rate());
    return;
  }
  split_over_pool(q.lib, q.blocks, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bt);
}

template <typename T>
void gemm_using_any(GemmLibrary lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
                    const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
                    Blocks blocks, GemmWorkspace workspace) {
  constexpr bool f64 = std::is_same_v<T, double>;
  if (!gemm_library_available(lib, f64))
    fail(CH_ERR_INVALID_ARGUMENT, "gemm: ", gemm_library_name(lib), " has no ",
         f64 ? "float64" : "float32", " GEMM in this build or on this machine");
  if (m == 0 || n == 0) return;
  check(ta, tb, m, n, k, lda, ldb, ldc);
  T* bt = transposed_b_space<T>(tb, n, k, workspace);
  if (!gemm_library_supports(lib, f64, ta, tb, bt != nullptr))
    fail(CH_ERR_INVALID_ARGUMENT, "gemm: ", gemm_library_name(lib),
         " has no kernel for trans_a = ", ta, ", trans_b = ", tb,
         tb ? " without a workspace of k x n elements" : "");
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  openblas_one_thread();
  split_over_pool(lib, blocks, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bt);
}

std::atomic<GemmObserver> g_observer{nullptr};
std::atomic<void*> g_observer_user{nullptr};

template <typename T>
void gemm_observed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
                   GemmWorkspace workspace) {
  T* bt = transposed_b_space<T>(tb, n, k, workspace);
  const GemmObserver observer = g_observer.load(std::memory_order_acquire);
  if (!observer) {
    gemm_chosen(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bt);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  gemm_chosen(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bt);
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - t0;
  observer(GemmCall{std::is_same_v<T, double>, ta, tb, m, n, k, bt != nullptr}, seconds.count(),
           g_observer_user.load(std::memory_order_relaxed));
}

}  // namespace

void set_gemm_observer(GemmObserver observer, void* user) {
  g_observer_user.store(user, std::memory_order_relaxed);
  g_observer.store(observer, std::memory_order_release);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          GemmWorkspace workspace) {
  gemm_observed(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, workspace);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc, GemmWorkspace workspace) {
  gemm_observed(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, workspace);
}

void gemm_using(GemmLibrary lib, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                float* c, int64_t ldc, GemmBlocks blocks, GemmWorkspace workspace) {
  gemm_using_any(lib, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, blocks,
                 workspace);
}

void gemm_using(GemmLibrary lib, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                double alpha, const double* a, int64_t lda, const double* b, int64_t ldb,
                double beta, double* c, int64_t ldc, GemmBlocks blocks, GemmWorkspace workspace) {
  gemm_using_any(lib, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, blocks,
                 workspace);
}

const char* gemm_library_name(GemmLibrary lib) {
  switch (lib) {
    case GemmLibrary::openblas:
      return "openblas";
    case GemmLibrary::onednn:
      return "onednn";
    case GemmLibrary::blis:
      return "blis";
    case GemmLibrary::libxsmm:
      return "libxsmm";
    case GemmLibrary::onednn_matmul:
      return "onednn-matmul";
  }
  return "?";
}

bool gemm_library_available(GemmLibrary lib, bool f64) {
  switch (lib) {
    case GemmLibrary::openblas:
      return true;
    case GemmLibrary::onednn:
      return !f64 && dnnl_built();
    case GemmLibrary::blis:
      return blis::available();
    case GemmLibrary::libxsmm:
      return libxsmm::available();
    case GemmLibrary::onednn_matmul:
      return !f64 && onednn_matmul::available();
  }
  return false;
}

bool gemm_library_supports(GemmLibrary lib, bool f64, bool, bool trans_b, bool b_workspace) {
  if (!gemm_library_available(lib, f64)) return false;
  return lib != GemmLibrary::libxsmm || !trans_b || b_workspace;
}

std::vector<GemmLibrary> gemm_libraries(bool f64) {
  std::vector<GemmLibrary> out;
  for (int i = 0; i < kGemmLibraries; ++i)
    if (gemm_library_available(GemmLibrary(i), f64)) out.push_back(GemmLibrary(i));
  return out;
}

// BLIS's reference kernels are its portable C fallback for a CPU it has no
// kernels for, not a contender: far behind the leader, and the process that
// measured them would keep their packing buffers (measured:
// bench/results/constants.md, BLIS's reference kernels).
std::string gemm_library_not_measured(GemmLibrary lib) {
  if (lib == GemmLibrary::blis && blis::reference_kernels())
    return "not measured: reference kernels";
  return {};
}

std::vector<GemmLibrary> gemm_candidates(bool f64) {
  std::vector<GemmLibrary> out;
  for (GemmLibrary lib : gemm_libraries(f64))
    if (gemm_library_not_measured(lib).empty()) out.push_back(lib);
  return out;
}

std::string gemm_library_version(GemmLibrary lib) {
  switch (lib) {
    case GemmLibrary::openblas:
      return openblas_description();
    case GemmLibrary::onednn: {
#if CH_HAVE_DNNL
      return onednn_matmul::onednn_version() + " sgemm";
#else
      return {};
#endif
    }
    case GemmLibrary::blis:
      return blis::version();
    case GemmLibrary::libxsmm:
      return libxsmm::version();
    case GemmLibrary::onednn_matmul:
      return onednn_matmul::version();
  }
  return {};
}

void force_gemm_library(const char* name) { Chooser::instance().force(name); }
std::string forced_gemm_library() { return Chooser::instance().forced(); }

int gemm_choice(bool f64, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                bool b_workspace) {
  return Chooser::instance().choice(f64, trans_a, trans_b, m, n, k, b_workspace);
}

void reread_gemm_environment_for_testing() { Chooser::instance().reread_environment(); }

void set_gemm_cache_directory(const char* dir) { Chooser::instance().set_cache_directory(dir); }
std::string gemm_cache_directory() { return Chooser::instance().cache_directory(); }
void set_gemm_machine_for_testing(const std::string& machine) {
  Chooser::instance().set_machine(machine);
}

void set_gemm_context_warmup_for_testing(int calls) { Chooser::instance().set_warmup(calls); }

void set_gemm_stopwatch_for_testing(GemmStopwatch stopwatch) {
  Chooser::instance().set_stopwatch(std::move(stopwatch));
}

// "GEMM auto (measured per shape class) | openblas: OpenBLAS 0.3.21 ...;
// onednn: oneDNN 2.6.3 sgemm (float32 only); blis: BLIS 0.9.0 ... | one
// library thread per block of chainerc's 2-thread pool | chosen: float32 NT
// m<=128 n<=1024 k<=1024 2 threads: openblas 105.0 GFLOP/s (onednn 91%,
// blis 88%) [cached]; ... | choices kept in /home/me/.cache/chainerc/gemm":
// "[cached]" marks a choice read from the disk cache.
const char* blas_name() {
  thread_local std::string name;
  std::string forced;
  try {
    forced = forced_gemm_library();
  } catch (const Error& e) {
    forced = e.what();
  }
  name = "GEMM " + (forced == "auto" ? std::string("auto (measured per shape class)") : forced) +
         " | ";
  bool first = true;
  for (int i = 0; i < kGemmLibraries; ++i) {
    const GemmLibrary lib = GemmLibrary(i);
    const bool f32 = gemm_library_available(lib, false), f64 = gemm_library_available(lib, true);
    if (!f32 && !f64) continue;
    name += (first ? "" : "; ") + std::string(gemm_library_name(lib)) + ": " +
            gemm_library_version(lib) + (f64 ? "" : " (float32 only)") +
            (gemm_library_supports(lib, f32 ? false : true, false, true)
                 ? ""
                 : " (a transposed B through a workspace only)");
    const std::string why = gemm_library_not_measured(lib);
    if (!why.empty() && forced == "auto") name += " (" + why + ")";
    first = false;
  }
  name += " | one library thread per block of chainerc's " + std::to_string(num_threads()) +
          "-thread pool";
  const std::string chosen = Chooser::instance().chosen_text();
  if (!chosen.empty()) name += " | chosen: " + chosen;
  name += Chooser::instance().cache_text();
  return name.c_str();
}

void set_blas_threads(int) { openblas_set_num_threads(1); }

}  // namespace chainerc::cpu
