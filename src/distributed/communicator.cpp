// libchainerc_mpi: ch_communicator on MPI (include/ch/distributed.h).
//
// Built only on libchainerc's public C API (function sets, optimizers, arrays,
// ch_error_set), so the shared library links the shared libchainerc and
// libchainerc never needs MPI. CUDA gradients go through nccl.cpp when NCCL
// support is compiled in and libnccl loads (use_nccl), else through host
// memory (ch_array_read / ch_array_write), as every other array does.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "distributed_impl.h"

namespace chainerc::distributed {

namespace {

// --- MPI initialisation: ours to finalize only when we initialised it ------

std::mutex g_init_mutex;
bool g_we_initialized = false;

// At exit: MPI_Finalize after a successful run. A rank that exits with a
// non-zero status while the others may still wait in a collective would block
// in MPI_Finalize (a fence over the whole job) and the job would hang: it
// aborts the job instead (MPI_Abort, the exit status as the error code).
void finalize_at_exit(int status, void*) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
}

void ensure_mpi(const char* who) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) fail(CH_ERR_INVALID_ARGUMENT, who, ": MPI has already been finalized");
  if (initialized) return;
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) check_mpi(rc, who, "MPI_Init_thread");
  if (!g_we_initialized) {
    g_we_initialized = true;
    on_exit(finalize_at_exit, nullptr);  // glibc: atexit that sees the exit status
  }
}

// --- the collective watchdog -------------------------------------------------
// A collective cannot be cancelled, and a rank that stalls (or whose peer
// hangs without dying) would keep every other rank waiting for ever. Each
// collective operation of this library arms a deadline, CH_MPI_TIMEOUT
// seconds (default 1800; 0: none) from its start; a thread of our own ends
// the process (_exit(kTimeoutExit), after a line on stderr naming the rank
// and the operation) when it passes. mpirun then ends the other ranks (a rank
// exited non-zero), so the whole job ends within the timeout of the first
// rank to give up. _exit, not MPI_Abort: MPI is initialised SERIALIZED and
// the waiting thread is inside MPI.

constexpr int kTimeoutExit = 124;
constexpr double kDefaultTimeout = 1800;

// CH_MPI_TIMEOUT in seconds; fails for anything but a finite number >= 0.
double timeout_from_environment(const char* who) {
  const char* env = std::getenv("CH_MPI_TIMEOUT");
  if (!env || !*env) return kDefaultTimeout;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (*end != '\0' || !std::isfinite(v) || v < 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": CH_MPI_TIMEOUT is '", env,
         "'; it must be the seconds a collective may wait (a number >= 0; 0: no limit)");
  return v > 1e9 ? 0 : v;  // beyond 30 years: no limit (and no overflow of the clock)
}

struct Watchdog {
  std::mutex mutex;
  std::condition_variable cv;
  bool armed = false;
  std::chrono::steady_clock::time_point deadline;
  double seconds = 0;
  std::string what;
  int rank = -1;
  bool started = false;
};

Watchdog& watchdog() {
  static Watchdog* w = new Watchdog;  // never destroyed: its thread may outlive exit handlers
  return *w;
}

[[noreturn]] void watch_loop(Watchdog* w) {
  std::unique_lock<std::mutex> lock(w->mutex);
  while (true) {
    w->cv.wait(lock, [&] { return w->armed; });
    const auto deadline = w->deadline;
    if (w->cv.wait_until(lock, deadline, [&] { return !w->armed || w->deadline != deadline; }))
      continue;  // finished (or another collective) in time
    std::fprintf(stderr,
                 "chainerc: rank %d: %s did not complete within %g s (CH_MPI_TIMEOUT): another "
                 "rank stalled, died or runs other code; ending this rank with status %d\n",
                 w->rank, w->what.c_str(), w->seconds, kTimeoutExit);
    std::fflush(stderr);
    _exit(kTimeoutExit);
  }
}

thread_local int t_watch_depth = 0;

// Arms the deadline for the collective `what` of `c` (the outermost one
// only: an update hook's reduction is part of the update).
class Watch {
 public:
  Watch(const Comm& c, const char* what) : Watch(c.timeout, c.rank, c.size, what) {}
  Watch(double timeout, int rank, int size, const char* what) {
    if (t_watch_depth++ > 0 || timeout <= 0 || size <= 1) return;
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mutex);
    if (!w.started) {
      std::thread(watch_loop, &w).detach();
      w.started = true;
    }
    w.armed = true;
    w.seconds = timeout;
    w.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(timeout));
    w.what = what;
    w.rank = rank;
    armed_ = true;
    w.cv.notify_all();
  }
  ~Watch() {
    --t_watch_depth;
    if (!armed_) return;
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mutex);
    w.armed = false;
    w.cv.notify_all();
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  bool armed_ = false;
};

// --- handles ---------------------------------------------------------------
// A handle is a key into this table, never dereferenced, never reused: a
// released or foreign handle is reported instead of crashing.

struct Slot {
  std::shared_ptr<Comm> comm;
  int64_t refs = 0;
};
std::mutex g_handles_mutex;
std::map<uintptr_t, Slot> g_handles;
uintptr_t g_next_handle = 0x7c0000001000u;

ch_communicator* handle_new(std::shared_ptr<Comm> comm) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  uintptr_t key = g_next_handle;
  g_next_handle += 16;
  g_handles[key] = Slot{std::move(comm), 1};
  return reinterpret_cast<ch_communicator*>(key);
}

std::shared_ptr<Comm> handle_find(const ch_communicator* h) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  auto it = g_handles.find(reinterpret_cast<uintptr_t>(h));
  return it == g_handles.end() ? nullptr : it->second.comm;
}

// --- signatures --------------------------------------------------------------

std::string dtype_name(ch_dtype d) {
  switch (d) {
    case CH_FLOAT32:
      return "float32";
    case CH_FLOAT64:
      return "float64";
    case CH_INT32:
      return "int32";
    default:
      return "dtype " + std::to_string(d);
  }
}

std::string shape_text(const ch_array* a) {
  std::ostringstream os;
  os << '(';
  const int64_t* s = ch_array_shape(a);
  int32_t nd = ch_array_ndim(a);
  for (int32_t i = 0; i < nd; ++i) os << (i ? ", " : "") << s[i];
  if (nd == 1) os << ',';
  os << ')';
  return os.str();
}

// One line per parameter: "path\tdtype\tshape\tdevice type".
std::string signature_of(const std::vector<Param>& ps) {
  std::string sig;
  for (const Param& p : ps) {
    sig += p.path + '\t' + dtype_name(ch_array_dtype(p.param)) + '\t' + shape_text(p.param) + '\t' +
           (ch_array_device(p.param).type == CH_DEVICE_CUDA ? "cuda" : "cpu") + '\n';
  }
  return sig;
}

// FNV-1a over bytes, continuing from h.
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The hash of what signature_of describes (paths, dtypes, shapes, device
// types, in order), from the raw fields: every step hashes this, the text is
// made only when the ranks differ.
uint64_t signature_hash(const std::vector<Param>& ps) {
  uint64_t h = fnv1a(nullptr, 0);
  for (const Param& p : ps) {
    const int64_t head[3] = {static_cast<int64_t>(p.path.size()), ch_array_dtype(p.param),
                             ch_array_device(p.param).type == CH_DEVICE_CUDA ? 1 : 0};
    const int32_t nd = ch_array_ndim(p.param);
    h = fnv1a(head, sizeof head, h);
    h = fnv1a(p.path.data(), p.path.size(), h);
    h = fnv1a(&nd, sizeof nd, h);
    h = fnv1a(ch_array_shape(p.param), sizeof(int64_t) * static_cast<size_t>(nd), h);
  }
  return h;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b < s.size()) {
    size_t e = s.find('\n', b);
    out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

std::string describe(const std::string& line) {
  // "path\tdtype\tshape\tdevice" -> "'path' (float32, shape (2, 3), cpu)"
  std::vector<std::string> f;
  size_t b = 0;
  for (;;) {
    size_t e = line.find('\t', b);
    f.push_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (f.size() != 4) return "'" + line + "'";
  return "'" + f[0] + "' (" + f[1] + ", shape " + f[2] + ", " + f[3] + ")";
}

std::string bcast_string(Comm& c, const std::string& mine, int root, const char* who) {
  int64_t len = static_cast<int64_t>(mine.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT64_T, root, c.comm), who, "MPI_Bcast");
  std::string s = c.rank == root ? mine : std::string(static_cast<size_t>(len), '\0');
  if (len > INT_MAX) fail(CH_ERR_UNSUPPORTED, who, ": a model signature of ", len, " bytes");
  if (len)
    check_mpi(MPI_Bcast(&s[0], static_cast<int>(len), MPI_CHAR, root, c.comm), who, "MPI_Bcast");
  return s;
}

// --- packing -------------------------------------------------------------------

size_t dtype_size(ch_dtype d) { return d == CH_FLOAT64 ? 8 : 4; }

MPI_Datatype mpi_type(ch_dtype d, const char* who) {
  switch (d) {
    case CH_FLOAT32:
      return MPI_FLOAT;
    case CH_FLOAT64:
      return MPI_DOUBLE;
    case CH_INT32:
      return MPI_INT32_T;
    default:
      fail(CH_ERR_DTYPE, who, ": unsupported dtype ", d);
  }
}

// MPI counts are int: large buffers go in chunks.
template <typename Call>
void chunked(char* buf, size_t count, size_t elem, Call&& call) {
  const size_t kMax = static_cast<size_t>(INT_MAX) / 2;
  for (size_t off = 0; off < count; off += kMax) {
    size_t n = std::min(kMax, count - off);
    call(buf + off * elem, static_cast<int>(n));
  }
}

void divide(char* buf, size_t count, ch_dtype d, int size) {
  if (d == CH_FLOAT32) {
    float* p = reinterpret_cast<float*>(buf);
    const float s = static_cast<float>(size);
    for (size_t i = 0; i < count; ++i) p[i] /= s;
  } else if (d == CH_FLOAT64) {
    double* p = reinterpret_cast<double*>(buf);
    for (size_t i = 0; i < count; ++i) p[i] /= size;
  } else {
    int32_t* p = reinterpret_cast<int32_t*>(buf);
    for (size_t i = 0; i < count; ++i) p[i] /= size;
  }
}

// dst[i] = src[i] / size for `count` elements of dtype d. For a power of two
// the division is a multiplication by its exact reciprocal (the same results,
// several times faster).
}  // namespace

void divide_into(void* dst, const void* src, size_t count, ch_dtype d, int size) {
  const bool pow2 = (size & (size - 1)) == 0;
  if (d == CH_FLOAT32) {
    float* q = static_cast<float*>(dst);
    const float* p = static_cast<const float*>(src);
    const float s = static_cast<float>(size), r = 1.0f / s;
    if (pow2)
      for (size_t i = 0; i < count; ++i) q[i] = p[i] * r;
    else
      for (size_t i = 0; i < count; ++i) q[i] = p[i] / s;
  } else {
    double* q = static_cast<double*>(dst);
    const double* p = static_cast<const double*>(src);
    const double s = static_cast<double>(size), r = 1.0 / s;
    if (pow2)
      for (size_t i = 0; i < count; ++i) q[i] = p[i] * r;
    else
      for (size_t i = 0; i < count; ++i) q[i] = p[i] / s;
  }
}

Agreement agree(Comm& c, int mine, const char* who) {
  int range[2] = {-mine, mine}, all[2] = {0, 0};  // {-min, max}
  check_mpi(MPI_Allreduce(range, all, 2, MPI_INT, MPI_MAX, c.comm), who, "MPI_Allreduce");
  Agreement a{-all[0], all[1], c.size};
  if (a.lowest < 0) {  // name the first rank at fault (every rank takes part)
    int culprit = mine == a.lowest ? c.rank : c.size;
    check_mpi(MPI_Allreduce(&culprit, &a.first, 1, MPI_INT, MPI_MIN, c.comm), who, "MPI_Allreduce");
  }
  return a;
}

namespace {

// Arrays of one dtype through one host buffer: read them all, run `op` on the
// packed buffer, write them back (when `write_back`).
template <typename Op>
void through_host(Comm& c, const std::vector<ch_array*>& arrays, ch_dtype d, bool write_back,
                  const char* who, Op&& op) {
  size_t total = 0;
  for (ch_array* a : arrays) total += ch_array_nbytes(a);
  if (total == 0) return;
  if (c.buffer.size() < total) c.buffer.resize(total);
  char* buf = c.buffer.data();
  size_t off = 0;
  for (ch_array* a : arrays) {
    size_t nb = ch_array_nbytes(a);
    check_ch(ch_array_read(a, buf + off, nb), who);
    off += nb;
  }
  op(buf, total / dtype_size(d));
  if (!write_back) return;
  off = 0;
  for (ch_array* a : arrays) {
    size_t nb = ch_array_nbytes(a);
    check_ch(ch_array_write(a, buf + off, nb), who);
    off += nb;
  }
}

// Groups (device type, dtype) -> arrays, in a fixed order every rank shares.
std::map<std::pair<int, int>, std::vector<ch_array*>> group(const std::vector<Param>& ps,
                                                            bool grads) {
  std::map<std::pair<int, int>, std::vector<ch_array*>> g;
  for (const Param& p : ps) {
    ch_array* a = grads ? p.grad : p.param;
    g[{ch_array_device(a).type, ch_array_dtype(a)}].push_back(a);
  }
  return g;
}

// Why NCCL cannot be used by this rank; empty when it can.
std::string nccl_unavailable() {
#if CH_MPI_HAVE_NCCL
  return nccl_load_error();
#else
  return "this libchainerc_mpi was built without NCCL (no CUDA backend or no nccl.h at build "
         "time)";
#endif
}

// Whether CUDA gradients go through NCCL, decided once per communicator at
// its first reduction of CUDA gradients (that is when libnccl is opened) by
// the environment variable CH_NCCL:
//   unset or "auto"  NCCL when every rank can load it, else the MPI path
//                    through host memory on every rank;
//   "0"              the MPI path through host memory;
//   "1"              NCCL required: when a rank cannot load it, every rank
//                    fails with CH_ERR_UNSUPPORTED naming that rank.
// The ranks agree (an allreduce) before either path runs, so a job whose
// machines differ never mixes NCCL and MPI collectives.
bool use_nccl(Comm& c, const char* who) {
  if (c.nccl_mode != Comm::NcclMode::kUndecided) return c.nccl_mode == Comm::NcclMode::kNccl;
  const char* env = std::getenv("CH_NCCL");
  const std::string want = env ? env : "auto";
  const bool valid = want == "auto" || want == "0" || want == "1";
  const std::string why = valid && want != "0" ? nccl_unavailable() : std::string();
  // This rank's answer: 1 it can use NCCL, 0 it will not (CH_NCCL=0, or auto
  // without NCCL), -1 NCCL is required here but missing, -2 CH_NCCL is not valid.
  const int mine = !valid ? -2 : want == "0" ? 0 : why.empty() ? 1 : want == "1" ? -1 : 0;
  const auto [lowest, highest, first] = agree(c, mine, who);
  if (lowest < 0) {
    if (lowest == -2)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": CH_NCCL is '", c.rank == first ? want : "?",
           "' on rank ", first,
           "; expected 0 (MPI through host memory), 1 (NCCL required) or auto");
    fail(CH_ERR_UNSUPPORTED, who, ": CH_NCCL=1 asks for NCCL for CUDA gradients but rank ", first,
         " cannot use it", c.rank == first ? " (" + why + ")" : std::string(),
         "; install NCCL or add its folder to the loader's path, or unset CH_NCCL (auto: MPI "
         "through host memory where NCCL is missing)");
  }
  c.nccl_mode = lowest == 1 && highest == 1 ? Comm::NcclMode::kNccl : Comm::NcclMode::kHost;
  return c.nccl_mode == Comm::NcclMode::kNccl;
}

struct HookData {
  std::shared_ptr<Comm> comm;
};

ch_status multi_node_hook(void* user_data, ch_optimizer* optimizer) {
  const char* who = "ch_optimizer_new_multi_node (update hook)";
  try {
    Comm& c = *static_cast<HookData*>(user_data)->comm;
    Watch watch(c, who);
    std::vector<Param> ps = params_of_optimizer(optimizer, who);
    check_models(c, ps, who);
    allreduce_grads(c, ps, who);
  } catch (...) {
    return translate(who);
  }
  return CH_OK;
}

void destroy_hook(void* user_data) { delete static_cast<HookData*>(user_data); }

}  // namespace

// --- shared helpers (distributed_impl.h) --------------------------------------

void check_mpi(int rc, const char* who, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "?");
  fail(CH_ERR_IO, who, ": ", what, " failed with MPI error ", rc, ": ", text);
}

void check_ch(ch_status st, const char* who) {
  if (st == CH_OK) return;
  fail(st, who, ": ", ch_error_message());
}

ch_status translate(const char* who) noexcept {
  try {
    throw;
  } catch (const Failure& e) {
    ch_error_set(e.status, e.message.c_str());
    return e.status;
  } catch (const std::bad_alloc&) {
    ch_error_set(CH_ERR_OUT_OF_MEMORY, (std::string(who) + ": out of memory").c_str());
    return CH_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    ch_error_set(CH_ERR_INTERNAL, (std::string(who) + ": " + e.what()).c_str());
    return CH_ERR_INTERNAL;
  } catch (...) {
    ch_error_set(CH_ERR_INTERNAL, (std::string(who) + ": unknown exception").c_str());
    return CH_ERR_INTERNAL;
  }
}

Param::~Param() {
  ch_array_release(param);
  ch_array_release(grad);
}

std::vector<Param> params_of_set(const ch_function_set* set, const char* who) {
  if (!set) fail(CH_ERR_NULL_HANDLE, who, ": argument 'set' is NULL");
  // A released or foreign handle: ch_function_set_parameter reports it.
  size_t n = ch_function_set_parameter_count(set);
  if (n == 0) {
    ch_status st = ch_function_set_parameter(nullptr, nullptr, nullptr, set, 0);
    if (st == CH_ERR_NULL_HANDLE || st == CH_ERR_RELEASED_HANDLE) check_ch(st, who);
  }
  std::vector<Param> ps(n);
  for (size_t i = 0; i < n; ++i) {
    const char* path = nullptr;
    check_ch(ch_function_set_parameter(&ps[i].param, &ps[i].grad, &path, set, i), who);
    ps[i].path = path ? path : "";
  }
  return ps;
}

std::vector<Param> params_of_optimizer(const ch_optimizer* opt, const char* who) {
  size_t n = ch_optimizer_parameter_count(opt);
  std::vector<Param> ps(n);
  for (size_t i = 0; i < n; ++i) {
    const char* path = nullptr;
    check_ch(ch_optimizer_parameter(&ps[i].param, &ps[i].grad, &path, opt, i), who);
    ps[i].path = path ? path : "";
  }
  return ps;
}

Comm& comm_of(const ch_communicator* h, std::shared_ptr<Comm>& keep, const char* who) {
  if (!h) fail(CH_ERR_NULL_HANDLE, who, ": argument 'comm' is NULL");
  keep = handle_find(h);
  if (!keep)
    fail(CH_ERR_RELEASED_HANDLE, who, ": argument 'comm' is a released communicator or not a ",
         "ch_communicator");
  return *keep;
}

Comm::~Comm() {
#if CH_MPI_HAVE_NCCL
  nccl_destroy(*this);
#endif
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  shm_destroy(*this);
  if (shm != MPI_COMM_NULL) MPI_Comm_free(&shm);
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

void check_models(Comm& c, const std::vector<Param>& ps, const char* who) {
  if (c.size == 1) return;  // nothing to compare with
  const uint64_t h = signature_hash(ps);
  uint64_t mine[2] = {h, ~h}, all[2] = {0, 0};
  check_mpi(MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_MAX, c.comm), who, "MPI_Allreduce");
  if (all[0] == h && all[1] == ~h) return;  // max == min == h on every rank
  // They differ: find the first rank that differs from rank 0 and describe
  // the first parameter where they part (the same text on every rank).
  std::vector<uint64_t> hashes(static_cast<size_t>(c.size));
  check_mpi(MPI_Allgather(&h, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, c.comm), who,
            "MPI_Allgather");
  int other = 1;
  while (other < c.size && hashes[static_cast<size_t>(other)] == hashes[0]) ++other;
  if (other == c.size) other = 1;  // cannot happen: the allreduce saw a difference
  const std::string sig = signature_of(ps);
  std::vector<std::string> a = split_lines(bcast_string(c, sig, 0, who));
  std::vector<std::string> b = split_lines(bcast_string(c, sig, other, who));
  std::ostringstream os;
  os << who << ": the models differ across ranks (nothing was reduced): ";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i < a.size() && i < b.size()) {
    os << "parameter " << i << " is " << describe(a[i]) << " on rank 0 but " << describe(b[i])
       << " on rank " << other;
  } else {
    os << "rank 0 has " << a.size() << " parameters, rank " << other << " has " << b.size();
    if (i < a.size()) os << "; the first one missing on rank " << other << " is " << describe(a[i]);
    if (i < b.size()) os << "; the first one missing on rank 0 is " << describe(b[i]);
  }
  fail(CH_ERR_INVALID_ARGUMENT, os.str());
}

void allreduce_grads(Comm& c, const std::vector<Param>& ps, const char* who) {
  for (const Param& p : ps)
    if (!p.grad) fail(CH_ERR_INVALID_ARGUMENT, who, ": parameter '", p.path, "' has no gradient");
  if (c.size == 1) return;  // the mean over one rank is its own gradient
  for (auto& [key, arrays] : group(ps, true)) {
    ch_dtype d = key.second;
    if (d != CH_FLOAT32 && d != CH_FLOAT64)
      fail(CH_ERR_DTYPE, who, ": gradients of dtype ", dtype_name(d), " cannot be averaged");
    if (key.first == CH_DEVICE_CUDA && use_nccl(c, who)) {
#if CH_MPI_HAVE_NCCL
      nccl_allreduce_mean(c, arrays, d, who);
      continue;
#endif
    }
    MPI_Datatype t = mpi_type(d, who);
    auto sum = [&](char* buf, size_t count) {
      chunked(buf, count, dtype_size(d), [&](char* p, int n) {
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, p, n, t, MPI_SUM, c.comm), who, "MPI_Allreduce");
      });
    };
    if (key.first == CH_DEVICE_CPU && shm_allreduce_mean(c, arrays, d, who)) continue;
    if (key.first == CH_DEVICE_CPU) {
      // Host arrays (C-contiguous): packed with memcpy, and the division by
      // the number of ranks done while copying back (one pass fewer).
      size_t total = 0;
      for (ch_array* a : arrays) total += ch_array_nbytes(a);
      if (c.buffer.size() < total) c.buffer.resize(total);
      char* buf = c.buffer.data();
      size_t off = 0;
      for (ch_array* a : arrays) {
        std::memcpy(buf + off, ch_array_data(a), ch_array_nbytes(a));
        off += ch_array_nbytes(a);
      }
      sum(buf, total / dtype_size(d));
      off = 0;
      for (ch_array* a : arrays) {
        const size_t nb = ch_array_nbytes(a);
        divide_into(ch_array_data(a), buf + off, nb / dtype_size(d), d, c.size);
        off += nb;
      }
      continue;
    }
    through_host(c, arrays, d, true, who, [&](char* buf, size_t count) {
      sum(buf, count);
      divide(buf, count, d, c.size);
    });
  }
}

void bcast_params(Comm& c, const std::vector<Param>& ps, const char* who) {
  for (auto& [key, arrays] : group(ps, false)) {
    ch_dtype d = key.second;
    MPI_Datatype t = mpi_type(d, who);
    through_host(c, arrays, d, c.rank != 0, who, [&](char* buf, size_t count) {
      chunked(buf, count, dtype_size(d),
              [&](char* p, int n) { check_mpi(MPI_Bcast(p, n, t, 0, c.comm), who, "MPI_Bcast"); });
    });
  }
}

std::shared_ptr<Comm> make_world_comm(const char* who) {
  const double timeout = timeout_from_environment(who);
  ensure_mpi(who);
  auto c = std::make_shared<Comm>();
  c->timeout = timeout;
  // Duplicating and splitting MPI_COMM_WORLD are collectives too: a rank
  // that never creates its communicator must not hold the others.
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  Watch watch(timeout, world_rank, world_size, who);
  // Errors on the communicators we make are returned, not fatal.
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &c->comm), who, "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN), who, "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(c->comm, &c->rank), who, "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(c->comm, &c->size), who, "MPI_Comm_size");
  check_mpi(MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &c->shm),
            who, "MPI_Comm_split_type");
  check_mpi(MPI_Comm_set_errhandler(c->shm, MPI_ERRORS_RETURN), who, "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(c->shm, &c->intra_rank), who, "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(c->shm, &c->intra_size), who, "MPI_Comm_size");
  return c;
}

void scatter(int64_t* out, int64_t capacity, int64_t* count, Comm& c, int64_t n, int32_t shuffle,
             uint64_t seed, const char* who) {
  if (n < 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": n is ", n, "; it must be >= 0");
  if (capacity < 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": capacity is ", capacity);
  if (capacity > 0 && !out)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": out is NULL with capacity ", capacity);
  // Every rank takes part in the broadcast, whatever its arguments: rank 0's
  // seed and shuffle flag decide.
  uint64_t params[3] = {seed, static_cast<uint64_t>(shuffle != 0), static_cast<uint64_t>(n)};
  check_mpi(MPI_Bcast(params, 3, MPI_UINT64_T, 0, c.comm), who, "MPI_Bcast");
  if (static_cast<int64_t>(params[2]) != n)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": n is ", n, " on rank ", c.rank, " but ",
         static_cast<int64_t>(params[2]), " on rank 0");
  const int64_t N = c.size, r = c.rank;
  const int64_t share = (n + N - 1) / N;
  const int64_t begin = (n / N) * r + ((n % N) * r) / N;  // floor(n * r / N) without overflow
  if (count) *count = share;
  const int64_t m = std::min(share, capacity);
  if (m <= 0) return;
  if (!params[1]) {
    for (int64_t i = 0; i < m; ++i) out[i] = begin + i;
    return;
  }
  // Fisher-Yates over 0..n-1 driven by splitmix64(seed): the same permutation
  // on every rank and every platform.
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  uint64_t state = params[0];
  auto next = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (int64_t i = n - 1; i > 0; --i) {
    // Unbiased draw in [0, i] by rejection.
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do x = next();
    while (x >= limit);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(x % bound)]);
  }
  for (int64_t i = 0; i < m; ++i) out[i] = perm[static_cast<size_t>(begin + i)];
}

void allreduce_array(Comm& c, ch_array* array, ch_reduce_op op, const char* who) {
  if (!array) fail(CH_ERR_NULL_HANDLE, who, ": argument 'array' is NULL");
  if (!ch_array_retain(array))
    fail(CH_ERR_RELEASED_HANDLE, who, ": argument 'array' is a released array or not a ch_array");
  ch_array_release(array);
  ch_dtype d = ch_array_dtype(array);
  int32_t nd = ch_array_ndim(array);
  if (op != CH_REDUCE_SUM && op != CH_REDUCE_MEAN)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": op is ", static_cast<int>(op),
         "; expected CH_REDUCE_SUM (0) or CH_REDUCE_MEAN (1)");
  // Shapes and dtypes of every rank, so a mismatch is an error everywhere.
  const int kRec = 2 + CH_MAX_NDIM;
  std::vector<int64_t> mine(kRec, 0), all(static_cast<size_t>(kRec) * c.size);
  mine[0] = d;
  mine[1] = nd;
  const int64_t* s = ch_array_shape(array);
  for (int32_t i = 0; i < nd && i < CH_MAX_NDIM; ++i) mine[2 + i] = s[i];
  check_mpi(MPI_Allgather(mine.data(), kRec, MPI_INT64_T, all.data(), kRec, MPI_INT64_T, c.comm),
            who, "MPI_Allgather");
  auto text = [&](const int64_t* rec) {
    std::ostringstream os;
    os << dtype_name(static_cast<ch_dtype>(rec[0])) << " shape (";
    for (int64_t i = 0; i < rec[1]; ++i) os << (i ? ", " : "") << rec[2 + i];
    if (rec[1] == 1) os << ',';
    os << ')';
    return os.str();
  };
  for (int k = 1; k < c.size; ++k) {
    const int64_t* rk = &all[static_cast<size_t>(k) * kRec];
    if (!std::equal(rk, rk + kRec, all.data()))
      fail(rk[0] != all[0] ? CH_ERR_DTYPE : CH_ERR_SHAPE, who,
           ": the arrays differ across ranks (nothing was reduced): ", text(all.data()),
           " on rank 0 but ", text(rk), " on rank ", k);
  }
  MPI_Datatype t = mpi_type(d, who);
  through_host(c, {array}, d, true, who, [&](char* buf, size_t count) {
    chunked(buf, count, dtype_size(d), [&](char* p, int n) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, p, n, t, MPI_SUM, c.comm), who, "MPI_Allreduce");
    });
    if (op == CH_REDUCE_MEAN) divide(buf, count, d, c.size);
  });
}

}  // namespace chainerc::distributed

using namespace chainerc::distributed;

#define CH_DIST_BEGIN try {
#define CH_DIST_END             \
  }                             \
  catch (...) {                 \
    return translate(__func__); \
  }                             \
  return CH_OK;

extern "C" {

ch_status ch_communicator_new_mpi(ch_communicator** out) {
  CH_DIST_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = nullptr;
  *out = handle_new(make_world_comm(__func__));
  CH_DIST_END
}

ch_communicator* ch_communicator_retain(ch_communicator* comm) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  auto it = g_handles.find(reinterpret_cast<uintptr_t>(comm));
  if (it == g_handles.end()) return nullptr;
  ++it->second.refs;
  return comm;
}

ch_status ch_communicator_release(ch_communicator* comm) {
  CH_DIST_BEGIN
  if (!comm) return CH_OK;
  std::shared_ptr<Comm> last;  // destroyed outside the lock
  {
    std::lock_guard<std::mutex> lock(g_handles_mutex);
    auto it = g_handles.find(reinterpret_cast<uintptr_t>(comm));
    if (it == g_handles.end())
      fail(CH_ERR_RELEASED_HANDLE, __func__,
           ": the communicator was already released or is not a ch_communicator");
    if (--it->second.refs == 0) {
      last = std::move(it->second.comm);
      g_handles.erase(it);
    }
  }
  CH_DIST_END
}

int32_t ch_communicator_rank(const ch_communicator* comm) {
  std::shared_ptr<Comm> c = handle_find(comm);
  return c ? c->rank : -1;
}

int32_t ch_communicator_size(const ch_communicator* comm) {
  std::shared_ptr<Comm> c = handle_find(comm);
  return c ? c->size : -1;
}

int32_t ch_communicator_intra_rank(const ch_communicator* comm) {
  std::shared_ptr<Comm> c = handle_find(comm);
  return c ? c->intra_rank : -1;
}

int32_t ch_communicator_intra_size(const ch_communicator* comm) {
  std::shared_ptr<Comm> c = handle_find(comm);
  return c ? c->intra_size : -1;
}

ch_status ch_communicator_barrier(ch_communicator* comm) {
  CH_DIST_BEGIN
  std::shared_ptr<Comm> keep;
  Comm& c = comm_of(comm, keep, __func__);
  Watch watch(c, __func__);
  check_mpi(MPI_Barrier(c.comm), __func__, "MPI_Barrier");
  CH_DIST_END
}

ch_status ch_communicator_bcast_data(ch_communicator* comm, ch_function_set* set) {
  CH_DIST_BEGIN
  std::shared_ptr<Comm> keep;
  Comm& c = comm_of(comm, keep, __func__);
  Watch watch(c, __func__);
  std::vector<Param> ps = params_of_set(set, __func__);
  check_models(c, ps, __func__);
  bcast_params(c, ps, __func__);
  CH_DIST_END
}

ch_status ch_communicator_allreduce_grads(ch_communicator* comm, ch_function_set* set) {
  CH_DIST_BEGIN
  std::shared_ptr<Comm> keep;
  Comm& c = comm_of(comm, keep, __func__);
  Watch watch(c, __func__);
  std::vector<Param> ps = params_of_set(set, __func__);
  check_models(c, ps, __func__);
  allreduce_grads(c, ps, __func__);
  CH_DIST_END
}

ch_status ch_communicator_allreduce_array(ch_communicator* comm, ch_array* array, ch_reduce_op op) {
  CH_DIST_BEGIN
  std::shared_ptr<Comm> keep;
  Comm& c = comm_of(comm, keep, __func__);
  Watch watch(c, __func__);
  allreduce_array(c, array, op, __func__);
  CH_DIST_END
}

ch_status ch_optimizer_new_multi_node(ch_optimizer** out, ch_optimizer* optimizer,
                                      ch_communicator* comm) {
  CH_DIST_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = nullptr;
  std::shared_ptr<Comm> keep;
  comm_of(comm, keep, __func__);
  if (!optimizer) fail(CH_ERR_NULL_HANDLE, __func__, ": argument 'optimizer' is NULL");
  auto* data = new HookData{keep};
  ch_status st = ch_optimizer_set_update_hook(optimizer, multi_node_hook, data, destroy_hook);
  if (st != CH_OK) {
    delete data;
    check_ch(st, __func__);
  }
  *out = ch_optimizer_retain(optimizer);
  if (!*out) fail(CH_ERR_RELEASED_HANDLE, __func__, ": argument 'optimizer' is not live");
  CH_DIST_END
}

ch_status ch_communicator_scatter_indices(int64_t* out, int64_t capacity, int64_t* count,
                                          ch_communicator* comm, int64_t n, int32_t shuffle,
                                          uint64_t seed) {
  CH_DIST_BEGIN
  if (count) *count = 0;
  std::shared_ptr<Comm> keep;
  Comm& c = comm_of(comm, keep, __func__);
  Watch watch(c, __func__);
  scatter(out, capacity, count, c, n, shuffle, seed, __func__);
  CH_DIST_END
}

ch_status ch_communicator_finalize(void) {
  CH_DIST_BEGIN
  std::lock_guard<std::mutex> lock(g_init_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized && !finalized) check_mpi(MPI_Finalize(), __func__, "MPI_Finalize");
  CH_DIST_END
}

int32_t ch_communicator_has_nccl(void) {
  try {
    return nccl_unavailable().empty() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
