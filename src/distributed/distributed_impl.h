// Internals of libchainerc_mpi shared by communicator.cpp and nccl.cpp.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <ch/ch.h>
#include <ch/distributed.h>
#include <mpi.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#ifndef CH_MPI_HAVE_NCCL
#define CH_MPI_HAVE_NCCL 0
#endif

namespace chainerc::distributed {

// Every failure is a Failure carrying a status; the C entry points turn it
// into ch_error_set + the status (translate).
struct Failure {
  ch_status status;
  std::string message;
};

template <typename... Parts>
[[noreturn]] void fail(ch_status status, const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Failure{status, os.str()};
}

// Inside a catch block: record the exception as this thread's error.
ch_status translate(const char* who) noexcept;
// Fail with MPI's error string when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* who, const char* what);
// Fail with libchainerc's status and message when st is not CH_OK.
void check_ch(ch_status st, const char* who);

struct NcclState;
struct ShmState;

struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;  // duplicate of MPI_COMM_WORLD, MPI_ERRORS_RETURN
  MPI_Comm shm = MPI_COMM_NULL;   // the ranks on this machine
  int rank = 0, size = 1, intra_rank = 0, intra_size = 1;
  double timeout = 0;        // CH_MPI_TIMEOUT: seconds a collective may wait (0: no limit)
  std::vector<char> buffer;  // host packing buffer, grown on demand
  std::shared_ptr<NcclState> nccl;
  // The shared-memory segment of host gradient reductions (shm.cpp).
  std::shared_ptr<ShmState> shm_state;
  // Whether CUDA gradients go through NCCL: decided by all ranks together at
  // the first reduction of CUDA gradients (use_nccl in communicator.cpp).
  enum class NcclMode { kUndecided, kNccl, kHost } nccl_mode = NcclMode::kUndecided;
  Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();
};

// One parameter: new references to its arrays, released with it.
struct Param {
  std::string path;
  ch_array* param = nullptr;
  ch_array* grad = nullptr;
  Param() = default;
  Param(const Param&) = delete;
  Param& operator=(const Param&) = delete;
  ~Param();
};

std::vector<Param> params_of_set(const ch_function_set* set, const char* who);
std::vector<Param> params_of_optimizer(const ch_optimizer* opt, const char* who);
Comm& comm_of(const ch_communicator* h, std::shared_ptr<Comm>& keep, const char* who);
std::shared_ptr<Comm> make_world_comm(const char* who);

// A setting every rank must agree on (CH_NCCL, CH_MPI_SHM): each rank
// answers 1 (it will use the path), 0 (it will not), -1 (the path is required
// but impossible here) or -2 (the setting's value is invalid). One allreduce
// gives every rank the lowest and highest answers and, when the lowest is
// negative, the first rank that gave it (a second allreduce).
struct Agreement {
  int lowest, highest, first;
};
Agreement agree(Comm& c, int mine, const char* who);

void check_models(Comm& c, const std::vector<Param>& ps, const char* who);
void allreduce_grads(Comm& c, const std::vector<Param>& ps, const char* who);
void bcast_params(Comm& c, const std::vector<Param>& ps, const char* who);
void allreduce_array(Comm& c, ch_array* array, ch_reduce_op op, const char* who);
void scatter(int64_t* out, int64_t capacity, int64_t* count, Comm& c, int64_t n, int32_t shuffle,
             uint64_t seed, const char* who);

// dst[i] = src[i] / size for `count` elements of dtype d (float32 or float64).
void divide_into(void* dst, const void* src, size_t count, ch_dtype d, int size);

// shm.cpp: the mean over the ranks of host arrays of one dtype (float32 or
// float64), in place, through a shared-memory segment when every rank is on
// this machine and CH_MPI_SHM is not 0 (all ranks agreeing at the first
// call). False, having done nothing, when the MPI path must run instead.
bool shm_allreduce_mean(Comm& c, const std::vector<ch_array*>& arrays, ch_dtype d, const char* who);
void shm_destroy(Comm& c) noexcept;

#if CH_MPI_HAVE_NCCL
// nccl.cpp: mean of CUDA arrays of one dtype over the ranks, on the GPU.
void nccl_allreduce_mean(Comm& c, const std::vector<ch_array*>& arrays, ch_dtype d,
                         const char* who);
void nccl_destroy(Comm& c) noexcept;
// Opens libnccl on the first call; empty when it is loaded, else why not.
std::string nccl_load_error();
#endif

}  // namespace chainerc::distributed
