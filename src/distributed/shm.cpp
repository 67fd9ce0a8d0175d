// libchainerc_mpi: the mean of host gradients over ranks that share one
// machine, through a shared-memory segment instead of MPI_Allreduce on a
// packed copy.
//
// Each rank owns one slice of the gradients' flat index space (their
// concatenation, never materialised) and reduces it: every rank writes the
// parts of its gradients that other ranks own into its segment of the segment
// (that is its only copy out: no packing buffer), the ranks meet, each sums
// its slice over the ranks in rank order (its own values read from its
// gradients) into the segment's result area and writes the quotient into its
// own gradients, the ranks meet again, and each copies the other slices'
// quotients into its gradients. The sum of every element is computed once,
// by one rank, in rank order, and every rank divides the same sums the same
// way (divide_into), so the result is bit-identical on every rank.
//
// The ranks meet through one counter per rank in the segment (release stores,
// acquire loads), spinning briefly, then yielding the core (sched_yield) so
// that more ranks than cores still make progress. MPI tells which ranks share
// the machine (MPI_COMM_TYPE_SHARED) and carries the setup: at the first
// reduction, after every rank agreed to use the segment, the first rank
// creates it (shm_open, posix_fallocate so that a full /dev/shm is an error,
// not a SIGBUS later), broadcasts its name, every rank maps it, and once all
// have (an allreduce of their success) it is unlinked, so nothing is left in
// /dev/shm. Unmapping it is local: releasing the communicator stays a local
// operation (an MPI window's MPI_Win_free would be a barrier).
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "distributed_impl.h"

namespace chainerc::distributed {

struct ShmState {
  char* base = nullptr;  // the mapping: counters, segments, result
  size_t mapped = 0;     // bytes mapped at base
  size_t capacity = 0;   // bytes of one segment (and of the result)
  uint64_t generation = 0;
  enum class Mode { kUndecided, kOn, kOff } mode = Mode::kUndecided;
};

namespace {

constexpr size_t kLine = 64;  // a counter per cache line

using Counter = std::atomic<uint64_t>;
static_assert(Counter::is_always_lock_free, "counters in shared memory must be lock-free");

Counter* counter(ShmState& s, int k) {
  return reinterpret_cast<Counter*>(s.base + kLine * static_cast<size_t>(k));
}
char* segment(ShmState& s, int size, int k) {
  return s.base + kLine * static_cast<size_t>(size) + s.capacity * static_cast<size_t>(k);
}
char* result(ShmState& s, int size) { return segment(s, size, size); }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// This rank has reached `target`; wait until every rank has.
void meet(ShmState& s, int rank, int size, uint64_t target) {
  counter(s, rank)->store(target, std::memory_order_release);
  for (int k = 0; k < size; ++k) {
    unsigned spins = 0;
    while (counter(s, k)->load(std::memory_order_acquire) < target) {
      if (++spins < 2048)
        cpu_relax();
      else
        sched_yield();  // more ranks than cores: let the one we wait for run
    }
  }
}

void free_segment(ShmState& s) {
  if (s.base) munmap(s.base, s.mapped);
  s.base = nullptr;
  s.mapped = 0;
  s.capacity = 0;
  s.generation = 0;
}

// A segment of at least `bytes` per rank; collective over c.shm (every rank
// reduces the same total: check_models compared the models first).
void ensure_segment(Comm& c, ShmState& s, size_t bytes, const char* who) {
  if (bytes <= s.capacity) return;
  free_segment(s);
  const size_t cap = (bytes + kLine - 1) / kLine * kLine;
  const size_t total =
      kLine * static_cast<size_t>(c.size) + cap * (static_cast<size_t>(c.size) + 1);
  static std::atomic<unsigned> serial{0};  // segments made by this process
  char name[64] = {0};
  std::string why;  // this rank's failure, empty when it mapped the segment
  int fd = -1;
  if (c.intra_rank == 0) {
    std::snprintf(name, sizeof name, "/chainerc_mpi.%ld.%u", static_cast<long>(getpid()), serial++);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      why = std::string("shm_open: ") + std::strerror(errno);
    } else if (int e = posix_fallocate(fd, 0, static_cast<off_t>(total)); e != 0) {
      why = std::string("posix_fallocate of ") + std::to_string(total) +
            " bytes: " + std::strerror(e);
    }
    if (!why.empty()) name[0] = '\0';  // tells the others
  }
  check_mpi(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, c.shm), who, "MPI_Bcast");
  if (c.intra_rank != 0 && name[0]) {
    fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) why = std::string("shm_open: ") + std::strerror(errno);
  }
  if (fd >= 0 && why.empty()) {
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      why = std::string("mmap: ") + std::strerror(errno);
    else
      s.base = static_cast<char*>(p), s.mapped = total;
  }
  if (fd >= 0) close(fd);
  if (c.intra_rank != 0 && !name[0]) why = "the first rank could not create it";
  // Every rank's outcome; the name is unlinked once every rank has mapped it.
  int ok = why.empty() ? 1 : 0, all_ok = 0;
  const int rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c.shm);
  if (c.intra_rank == 0 && name[0]) shm_unlink(name);
  check_mpi(rc, who, "MPI_Allreduce");
  if (!all_ok) {
    free_segment(s);
    int culprit = ok ? c.size : c.rank, first = c.size;
    check_mpi(MPI_Allreduce(&culprit, &first, 1, MPI_INT, MPI_MIN, c.shm), who, "MPI_Allreduce");
    fail(CH_ERR_IO, who, ": the shared-memory segment of ", total, " bytes for the gradients ",
         "could not be set up on rank ", first, c.rank == first ? " (" + why + ")" : std::string(),
         "; CH_MPI_SHM=0 reduces through MPI instead");
  }
  // posix_fallocate zero-filled the counters; make them atomics formally.
  if (c.intra_rank == 0)
    for (int k = 0; k < c.size; ++k) new (counter(s, k)) Counter(0);
  s.capacity = cap;
  check_mpi(MPI_Barrier(c.shm), who, "MPI_Barrier");
}

// Whether this communicator reduces host gradients through the segment,
// decided once at its first reduction of host gradients by CH_MPI_SHM:
//   unset or "auto"  the segment when every rank is on this machine, else MPI;
//   "0"              MPI_Allreduce on a packed copy;
//   "1"              the segment required: CH_ERR_UNSUPPORTED on every rank
//                    when the ranks are on several machines.
// Every rank agrees (one allreduce) before either path runs, so that no rank
// takes the MPI path while another waits in the segment.
bool use_shm(Comm& c, ShmState& s, const char* who) {
  if (s.mode != ShmState::Mode::kUndecided) return s.mode == ShmState::Mode::kOn;
  const char* env = std::getenv("CH_MPI_SHM");
  const std::string want = env && *env ? env : "auto";
  const bool valid = want == "auto" || want == "0" || want == "1";
  const bool local = c.intra_size == c.size;
  // This rank: 1 the segment, 0 MPI, -1 the segment required but impossible,
  // -2 an invalid value.
  const int mine = !valid ? -2 : want == "0" ? 0 : local ? 1 : want == "1" ? -1 : 0;
  const Agreement a = agree(c, mine, who);
  const int lowest = a.lowest, first = a.first;
  if (lowest < 0) {
    if (lowest == -2)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": CH_MPI_SHM is '", c.rank == first ? want : "?",
           "' on rank ", first,
           "; expected 0 (MPI_Allreduce), 1 (the shared-memory segment required) or auto");
    fail(CH_ERR_UNSUPPORTED, who, ": CH_MPI_SHM=1 asks for the shared-memory segment but the ",
         c.size, " ranks are not all on one machine (this rank shares it with ", c.intra_size - 1,
         " others); unset CH_MPI_SHM to reduce through MPI");
  }
  s.mode = lowest == 1 ? ShmState::Mode::kOn : ShmState::Mode::kOff;
  return s.mode == ShmState::Mode::kOn;
}

template <typename T>
void sum_ranks(T* out, const T* const* src, int size, size_t n) {
  const T* a = src[0];
  const T* b = src[1];
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  for (int k = 2; k < size; ++k) {
    const T* q = src[k];
    for (size_t i = 0; i < n; ++i) out[i] += q[i];
  }
}

struct Piece {
  char* data;    // the gradient's elements
  size_t begin;  // its first element's index in the concatenation
  size_t count;
};

// Calls f(piece, first, n) for the elements [first, first + n) of `piece`
// (piece-local indices) that fall inside [lo, hi) of the concatenation, or
// outside it when `inside` is false.
template <typename F>
void for_parts(const std::vector<Piece>& pieces, size_t lo, size_t hi, bool inside, F&& f) {
  for (const Piece& p : pieces) {
    const size_t b = p.begin, e = p.begin + p.count;
    const size_t ib = std::clamp(lo, b, e), ie = std::clamp(hi, b, e);
    if (inside) {
      if (ie > ib) f(p, ib - b, ie - ib);
    } else {
      if (ib > b) f(p, size_t{0}, ib - b);
      if (e > ie) f(p, ie - b, e - ie);
    }
  }
}

template <typename T>
void reduce_mean(Comm& c, ShmState& s, const std::vector<Piece>& pieces, size_t n, ch_dtype d) {
  const int size = c.size, rank = c.intra_rank;
  // Slice k: [bound(k), bound(k + 1)), starting on cache lines.
  const size_t per_line = kLine / sizeof(T);
  auto bound = [&](int k) {
    if (k >= size) return n;
    const size_t x =
        n / static_cast<size_t>(size) * static_cast<size_t>(k) +
        n % static_cast<size_t>(size) * static_cast<size_t>(k) / static_cast<size_t>(size);
    return x / per_line * per_line;
  };
  const size_t lo = bound(rank), hi = bound(rank + 1);
  T* seg_mine = reinterpret_cast<T*>(segment(s, size, rank));
  T* res = reinterpret_cast<T*>(result(s, size));
  const uint64_t g = ++s.generation;

  // 1. What the other ranks reduce goes into this rank's segment.
  for_parts(pieces, lo, hi, false, [&](const Piece& p, size_t first, size_t m) {
    std::memcpy(seg_mine + p.begin + first, reinterpret_cast<T*>(p.data) + first, m * sizeof(T));
  });
  meet(s, rank, size, 2 * g - 1);
  // 2. This rank's slice: the sum over the ranks in rank order, into the
  // result area and, divided, into this rank's gradients.
  std::vector<const T*> src(static_cast<size_t>(size));
  for_parts(pieces, lo, hi, true, [&](const Piece& p, size_t first, size_t m) {
    const size_t at = p.begin + first;
    for (int k = 0; k < size; ++k)
      src[static_cast<size_t>(k)] = k == rank
                                        ? reinterpret_cast<const T*>(p.data) + first
                                        : reinterpret_cast<const T*>(segment(s, size, k)) + at;
    sum_ranks(res + at, src.data(), size, m);
    divide_into(reinterpret_cast<T*>(p.data) + first, res + at, m, d, size);
  });
  meet(s, rank, size, 2 * g);
  // 3. The other slices' sums, divided, into this rank's gradients. (The
  // next reduction writes segments first, which nobody reads any more, and
  // the result area only after its first meeting, when this step is done.)
  for_parts(pieces, lo, hi, false, [&](const Piece& p, size_t first, size_t m) {
    divide_into(reinterpret_cast<T*>(p.data) + first, res + p.begin + first, m, d, size);
  });
}

}  // namespace

bool shm_allreduce_mean(Comm& c, const std::vector<ch_array*>& arrays, ch_dtype d,
                        const char* who) {
  if (!c.shm_state) c.shm_state = std::make_shared<ShmState>();
  ShmState& s = *c.shm_state;
  if (!use_shm(c, s, who)) return false;
  const size_t es = d == CH_FLOAT64 ? 8 : 4;
  std::vector<Piece> pieces;
  pieces.reserve(arrays.size());
  size_t n = 0;
  for (ch_array* a : arrays) {
    const size_t count = ch_array_nbytes(a) / es;
    char* data = static_cast<char*>(ch_array_data(a));
    // A gradient listed twice (one parameter under two paths) is reduced
    // once: its second piece would read the mean written by the first.
    if (std::any_of(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.data == data; }))
      continue;
    pieces.push_back(Piece{data, n, count});
    n += count;
  }
  if (n == 0) return true;
  ensure_segment(c, s, n * es, who);
  if (d == CH_FLOAT64)
    reduce_mean<double>(c, s, pieces, n, d);
  else
    reduce_mean<float>(c, s, pieces, n, d);
  return true;
}

void shm_destroy(Comm& c) noexcept {
  if (c.shm_state) free_segment(*c.shm_state);
}

}  // namespace chainerc::distributed
