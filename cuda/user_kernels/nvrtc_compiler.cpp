#include "nvrtc_compiler.h"

#include <nvrtc.h>

#include <atomic>
#include <vector>

#include "core/error.h"
#include "disk_cache.h"

namespace chainerc::kernels::nvrtc {
namespace {

std::atomic<long long> g_compiles{0};

void check(nvrtcResult r, const char* what, const std::string& name) {
  if (r != NVRTC_SUCCESS)
    fail(CH_ERR_INTERNAL, "kernel '", name, "': ", what, " failed: ", nvrtcGetErrorString(r));
}

std::vector<std::string> options_for(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17", "-DCH_NVRTC=1"};
}

// Compiles `source` with `opts` into a new program *prog (the caller destroys
// it) and returns NVRTC's status; *log gets the compiler's log, if any.
nvrtcResult compile_program(const std::string& source, const std::string& name,
                            const std::vector<std::string>& opts, nvrtcProgram* prog,
                            std::string* log) {
  check(nvrtcCreateProgram(prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram", name);
  std::vector<const char*> copts;
  for (const std::string& o : opts) copts.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(*prog, static_cast<int>(copts.size()), copts.data());
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(*prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log->resize(log_size);
    if (nvrtcGetProgramLog(*prog, &(*log)[0]) != NVRTC_SUCCESS) log->clear();
  }
  return r;
}

}  // namespace

int version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 0;
  return major * 1000 + minor * 10;
}

long long compile_count() { return g_compiles.load(); }

Result compile(const std::string& source, const std::string& name, const std::string& arch) {
  const std::vector<std::string> opts = options_for(arch);
  std::string key = "chainerc-nvrtc " + std::to_string(version()) + "\narch " + arch + "\n";
  for (const std::string& o : opts) key += o + "\n";
  key += "--\n" + source;

  Result res;
  const std::string dir = disk_cache::directory();
  if (!dir.empty()) res.cache_file = disk_cache::path_for(dir, key);
  if (disk_cache::load(dir, key, &res.binary)) {
    res.from_cache = true;
    return res;
  }

  ++g_compiles;
  nvrtcProgram prog = nullptr;
  std::string log;
  const nvrtcResult r = compile_program(source, name, opts, &prog, &log);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", name, "': NVRTC could not compile it for ", arch,
         " (", nvrtcGetErrorString(r), "):\n", log);
  }
  size_t size = 0;
  nvrtcResult rs = nvrtcGetCUBINSize(prog, &size);
  if (rs == NVRTC_SUCCESS) {
    res.binary.resize(size);
    rs = nvrtcGetCUBIN(prog, &res.binary[0]);
  }
  nvrtcDestroyProgram(&prog);
  check(rs, "nvrtcGetCUBIN", name);
  disk_cache::store(dir, key, res.binary);
  return res;
}

std::string ptxas_report(const std::string& source, const std::string& name,
                         const std::string& arch) {
  std::vector<std::string> opts = options_for(arch);
  opts.push_back("--ptxas-options=-v");
  nvrtcProgram prog = nullptr;
  std::string log;
  const nvrtcResult r = compile_program(source, name, opts, &prog, &log);
  nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS)
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", name, "': NVRTC could not compile it for ", arch,
         ":\n", log);
  return log;
}

}  // namespace chainerc::kernels::nvrtc
