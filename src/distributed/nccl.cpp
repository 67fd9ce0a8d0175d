// libchainerc_mpi: gradients of CUDA arrays averaged with NCCL on the device's
// default stream (the stream chainerc's own work runs on), the NCCL id made by
// rank 0 and broadcast through MPI. Compiled where NCCL is found; never run in
// CI (no GPU): see the README.
#include <cuda_runtime.h>
#include <nccl.h>

#include "distributed_impl.h"

namespace chainerc::distributed {

struct NcclState {
  int device = -1;
  ncclComm_t comm = nullptr;
  void* buffer = nullptr;
  size_t capacity = 0;
};

namespace {

void check_cuda(cudaError_t e, const char* who, const char* what) {
  if (e != cudaSuccess) fail(CH_ERR_DEVICE, who, ": ", what, " failed: ", cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* who, const char* what) {
  if (r != ncclSuccess) fail(CH_ERR_IO, who, ": ", what, " failed: ", ncclGetErrorString(r));
}

NcclState& state_for(Comm& c, int device, const char* who) {
  if (c.nccl && c.nccl->device == device) return *c.nccl;
  if (c.nccl)
    fail(CH_ERR_DEVICE, who, ": this rank's gradients moved from CUDA device ", c.nccl->device,
         " to ", device, "; one rank reduces on one device");
  ncclUniqueId id;
  if (c.rank == 0) check_nccl(ncclGetUniqueId(&id), who, "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c.comm), who, "MPI_Bcast of the NCCL id");
  auto s = std::make_shared<NcclState>();
  s->device = device;
  check_cuda(cudaSetDevice(device), who, "cudaSetDevice");
  check_nccl(ncclCommInitRank(&s->comm, c.size, id, c.rank), who, "ncclCommInitRank");
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
  cudaStream_t stream = nullptr;  // the default stream, ordered with chainerc's work
  char* buf = static_cast<char*>(s.buffer);
  size_t off = 0;
  for (ch_array* a : arrays) {
    size_t nb = ch_array_nbytes(a);
    check_cuda(cudaMemcpyAsync(buf + off, ch_array_data(a), nb, cudaMemcpyDeviceToDevice, stream),
               who, "cudaMemcpyAsync");
    off += nb;
  }
  const size_t elem = d == CH_FLOAT64 ? 8 : 4;
  check_nccl(ncclAllReduce(buf, buf, total / elem, d == CH_FLOAT64 ? ncclFloat64 : ncclFloat32,
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

void nccl_destroy(Comm& c) noexcept {
  if (!c.nccl) return;
  if (c.nccl->comm) ncclCommDestroy(c.nccl->comm);
  if (c.nccl->buffer) cudaFree(c.nccl->buffer);
  c.nccl.reset();
}

}  // namespace chainerc::distributed
