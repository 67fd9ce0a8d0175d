// NVRTC compilation of generated CUDA sources to CUBIN for one architecture,
// through the disk cache (disk_cache.h). Independent of any GPU: tests
// compile for sm_90 on machines without one.
#pragma once

#include <string>

namespace chainerc::kernels::nvrtc {

struct Result {
  std::string binary;       // CUBIN image
  bool from_cache = false;  // read from the disk cache (no NVRTC run)
  std::string cache_file;   // where it is (or would be) cached; "" without a cache dir
};

// Compile `source` (kernel `name`, for error messages) for `arch` ("sm_90").
// A compile error is Error(CH_ERR_INVALID_ARGUMENT) carrying NVRTC's log.
// Uses disk_cache::directory() at each call.
Result compile(const std::string& source, const std::string& name, const std::string& arch);

// ptxas's resource report (-Xptxas -v: registers, stack frame, spills) of
// `source` compiled for `arch`, without the disk cache; for the budget tests.
std::string ptxas_report(const std::string& source, const std::string& name,
                         const std::string& arch);

// NVRTC's version as major * 1000 + minor * 10.
int version();

// Number of NVRTC compilations this process ran (disk cache misses), for tests.
long long compile_count();

}  // namespace chainerc::kernels::nvrtc
