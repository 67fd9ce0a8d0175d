// libchainerc_mpi: gradients of CUDA arrays averaged with NCCL on the device's
// default stream (the stream chainerc's own work runs on), the NCCL id made by
// rank 0 and broadcast through MPI. Compiled where the CUDA backend is built
// and nccl.h is found; never run in CI (no GPU): see docs/distributed.md.
//
// libnccl is not linked: libnccl.so.<NCCL_MAJOR> is opened on first use on
// CUDA arrays (dlopen, as cuda/runtime/lazy_libraries.cpp does for cuDNN), so
// libchainerc_mpi loads on a machine without NCCL; communicator.cpp
// (use_nccl) chooses between NCCL and the MPI path through host memory.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "distributed_impl.h"

namespace chainerc::distributed {

struct NcclState {
  int device = -1;
  ncclComm_t comm = nullptr;
  void* buffer = nullptr;
  size_t capacity = 0;
};

namespace {

#define CH_NCCL_STR2_(x) #x
#define CH_NCCL_STR_(x) CH_NCCL_STR2_(x)
const char* const kSoname = "libnccl.so." CH_NCCL_STR_(NCCL_MAJOR);

// The NCCL functions this file calls, resolved from the library opened on
// first use (decltype: a signature that differs from nccl.h does not compile).
struct Nccl {
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  std::string error;  // why it could not be loaded; empty when loaded
};

const Nccl& nccl() {
  static Nccl lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      lib.error = std::string(kSoname) + " could not be loaded (" + (e ? e : "unknown error") + ")";
      return;
    }
    auto sym = [h](const char* name) {
      void* f = dlsym(h, name);
      if (!f && lib.error.empty()) lib.error = std::string(kSoname) + " has no symbol " + name;
      return f;
    };
    lib.get_unique_id = reinterpret_cast<decltype(lib.get_unique_id)>(sym("ncclGetUniqueId"));
    lib.comm_init_rank = reinterpret_cast<decltype(lib.comm_init_rank)>(sym("ncclCommInitRank"));
    lib.all_reduce = reinterpret_cast<decltype(lib.all_reduce)>(sym("ncclAllReduce"));
    lib.comm_destroy = reinterpret_cast<decltype(lib.comm_destroy)>(sym("ncclCommDestroy"));
    lib.error_string = reinterpret_cast<decltype(lib.error_string)>(sym("ncclGetErrorString"));
    if (!lib.error.empty()) {
      // A library without what we call is no NCCL for us.
      lib.get_unique_id = nullptr;
      lib.comm_init_rank = nullptr;
      lib.all_reduce = nullptr;
      lib.comm_destroy = nullptr;
      lib.error_string = nullptr;
    }
  });
  return lib;
}

void check_cuda(cudaError_t e, const char* who, const char* what) {
  if (e != cudaSuccess) fail(CH_ERR_DEVICE, who, ": ", what, " failed: ", cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* who, const char* what) {
  if (r != ncclSuccess) fail(CH_ERR_IO, who, ": ", what, " failed: ", nccl().error_string(r));
}

NcclState& state_for(Comm& c, int device, const char* who) {
  if (c.nccl && c.nccl->device == device) return *c.nccl;
  if (c.nccl)
    fail(CH_ERR_DEVICE, who, ": this rank's gradients moved from CUDA device ", c.nccl->device,
         " to ", device, "; one rank reduces on one device");
  const Nccl& lib = nccl();
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (c.rank == 0) check_nccl(lib.get_unique_id(&id), who, "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c.comm), who, "MPI_Bcast of the NCCL id");
  auto s = std::make_shared<NcclState>();
  s->device = device;
  check_cuda(cudaSetDevice(device), who, "cudaSetDevice");
  check_nccl(lib.comm_init_rank(&s->comm, c.size, id, c.rank), who, "ncclCommInitRank");
  c.nccl = s;
  return *s;
}

}  // namespace

void nccl_allreduce_mean(Comm& c, const std::vector<ch_array*>& arrays, ch_dtype d,
                         const char* who) {
  if (arrays.empty()) return;
  const int device = ch_array_device(arrays[0]).index;
  for (ch_array* a : arrays)
    if (ch_array_device(a).index != device)
      fail(CH_ERR_DEVICE, who, ": gradients on CUDA devices ", device, " and ",
           ch_array_device(a).index, "; one rank reduces on one device");
  NcclState& s = state_for(c, device, who);
  check_cuda(cudaSetDevice(device), who, "cudaSetDevice");
  size_t total = 0;
  for (ch_array* a : arrays) total += ch_array_nbytes(a);
  if (s.capacity < total) {
    if (s.buffer) cudaFree(s.buffer);
    s.buffer = nullptr;
    s.capacity = 0;
    check_cuda(cudaMalloc(&s.buffer, total), who, "cudaMalloc of the flat gradient buffer");
    s.capacity = total;
  }
  // The device's engine stream: ordered with chainerc's work, which does not
  // wait for the legacy default stream.
  cudaStream_t stream = static_cast<cudaStream_t>(ch_cuda_engine_stream(device));
  char* buf = static_cast<char*>(s.buffer);
  size_t off = 0;
  for (ch_array* a : arrays) {
    size_t nb = ch_array_nbytes(a);
    check_cuda(cudaMemcpyAsync(buf + off, ch_array_data(a), nb, cudaMemcpyDeviceToDevice, stream),
               who, "cudaMemcpyAsync");
    off += nb;
  }
  const size_t elem = d == CH_FLOAT64 ? 8 : 4;
  check_nccl(nccl().all_reduce(buf, buf, total / elem, d == CH_FLOAT64 ? ncclFloat64 : ncclFloat32,
                               ncclAvg, s.comm, stream),
             who, "ncclAllReduce");
  off = 0;
  for (ch_array* a : arrays) {
    size_t nb = ch_array_nbytes(a);
    check_cuda(cudaMemcpyAsync(ch_array_data(a), buf + off, nb, cudaMemcpyDeviceToDevice, stream),
               who, "cudaMemcpyAsync");
    off += nb;
  }
  check_cuda(cudaStreamSynchronize(stream), who, "cudaStreamSynchronize");
}

std::string nccl_load_error() { return nccl().error; }

void nccl_destroy(Comm& c) noexcept {
  if (!c.nccl) return;
  if (c.nccl->comm) nccl().comm_destroy(c.nccl->comm);
  if (c.nccl->buffer) cudaFree(c.nccl->buffer);
  c.nccl.reset();
}

}  // namespace chainerc::distributed
