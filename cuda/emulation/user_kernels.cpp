// The emulated NVRTC: src/user_kernels/gpu.h under -Dcuda-emulation=true.
// See user_kernels.h; the object's side is user_kernel_dso.h.
#include "user_kernels.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/runtime/cuda_util.h"
#include "cuda/user_kernels/ch_emu_nvrtc_config.h"
#include "cuda/user_kernels/disk_cache.h"
#include "user_kernel_abi.h"
#include "user_kernels/gpu.h"

extern char** environ;

namespace chainerc::kernels {
namespace {

std::atomic<long long> g_compiles{0};
std::atomic<long long> g_loads{0};

// The flags of every compile (part of the cache key).
const std::vector<std::string>& compile_flags() {
  static const std::vector<std::string> flags = {
      "-std=c++17",
      "-O1",
      "-fPIC",
      "-shared",
      "-fvisibility=hidden",
      "-DCH_EMU_USER_KERNEL=1",
      std::string("-I") + CH_EMU_HEADERS + "/include",
      std::string("-I") + CH_EMU_HEADERS,
      "-Wl,--no-undefined",
  };
  return flags;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::istringstream in(s);
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

bool executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// `prog` itself when it names a path, else its first match on PATH; "" if none.
std::string resolve(const std::string& prog) {
  if (prog.empty()) return "";
  if (prog.find('/') != std::string::npos) return executable(prog) ? prog : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + prog;
    if (executable(candidate)) return candidate;
  }
  return "";
}

// The compiler command (program resolved, then its arguments), or empty with *why.
std::vector<std::string> find_compiler(std::string* why) {
  std::string tried;
  const char* env = std::getenv("CH_EMU_CXX");
  if (env && *env) {
    std::vector<std::string> cmd = split_words(env);
    const std::string p = cmd.empty() ? "" : resolve(cmd[0]);
    if (!p.empty()) {
      cmd[0] = p;
      return cmd;
    }
    // An explicit choice that does not work is not silently replaced.
    *why = std::string("$CH_EMU_CXX is '") + env + "', which is not an executable";
    return {};
  }
  if (executable(CH_EMU_CXX)) return {CH_EMU_CXX};
  tried = std::string("the build's compiler ") + CH_EMU_CXX + " (not found)";
  const char* cxx = std::getenv("CXX");
  if (cxx && *cxx) {
    std::vector<std::string> cmd = split_words(cxx);
    const std::string p = cmd.empty() ? "" : resolve(cmd[0]);
    if (!p.empty()) {
      cmd[0] = p;
      return cmd;
    }
    tried += std::string(", $CXX '") + cxx + "' (not found)";
  }
  const std::string cpp = resolve("c++");
  if (!cpp.empty()) return {cpp};
  *why = tried + ", c++ on PATH (not found)";
  return {};
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return static_cast<bool>(f) || f.eof();
}

bool write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  f.close();
  return static_cast<bool>(f);
}

// The emulation headers the objects are compiled against, concatenated: part
// of the cache key, so that an object built against older headers is never
// loaded. Fails with CH_ERR_UNSUPPORTED when they are gone (they are read
// from the source tree this build was configured from).
const std::string& header_text() {
  static const std::string* text = [] {
    auto* t = new std::string;
    const char* files[] = {"user_kernel_dso.h", "user_kernel_abi.h", "cuda_emulation.h",
                           "include/cuda_runtime.h", "include/cuda_runtime_api.h"};
    for (const char* f : files) {
      std::string s;
      if (!read_file(std::string(CH_EMU_HEADERS) + "/" + f, &s)) {
        delete t;
        return static_cast<std::string*>(nullptr);
      }
      *t += s;
    }
    return t;
  }();
  if (!text)
    fail(CH_ERR_UNSUPPORTED,
         "user kernels on the emulated CUDA devices need the emulation headers ", CH_EMU_HEADERS,
         " (the source tree this build was configured from), which are missing");
  return *text;
}

// A private directory for one compile or load; removed with what it holds.
class TempDir {
 public:
  explicit TempDir(const std::string& who) {
    const char* t = std::getenv("TMPDIR");
    std::string templ = std::string(t && *t ? t : "/tmp") + "/chainerc-emu-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
      fail(CH_ERR_IO, who, ": cannot create a temporary directory from ", templ, ": ",
           std::strerror(errno));
    path_ = buf.data();
  }
  ~TempDir() {
    for (const std::string& f : files_) unlink(f.c_str());
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// Runs `cmd` with stdout and stderr to `log_path`; the exit status, or -1
// with *why when it could not run.
int run(const std::vector<std::string>& cmd, const std::string& log_path, std::string* why) {
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int e = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) {
    *why = std::string("cannot run ") + argv[0] + ": " + std::strerror(e);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *why = std::string("waitpid: ") + std::strerror(errno);
      return -1;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *why = std::string(argv[0]) + " was killed by signal " +
         std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return -1;
}

// What the object file holds: the DSO header, the generated source, the entry.
std::string object_source(const std::string& source, const std::string& name) {
  return "#include \"user_kernel_dso.h\"\n#line 1 \"" + name + ".cu\"\n" + source +
         "\n#line 1 \"<emulated nvrtc entry>\"\nCH_EMU_USER_KERNEL_ENTRY(" + name + ")\n";
}

struct Loaded {
  ch_emu_uk_launch_fn launch = nullptr;
};

const cuda::emu::UserKernelHost& host_table() {
  namespace e = cuda::emu;
  static const e::UserKernelHost table = {
      e::kUserKernelAbi,
      []() -> e::FiberState* const* { return &e::t_fiber; },
      []() -> e::BlockState* { return &e::t_block; },
      &e::syncthreads,
      &e::warp_collective,
      &e::active_mask,
      static_cast<void (*)(const char*)>(&e::trap),
      &e::dynamic_shared,
      &e::launch_grid,
  };
  return table;
}

// dlopens the object at `path` (then removable) and binds its entry points.
Loaded open_object(const std::string& path, const std::string& name) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    fail(CH_ERR_DEVICE, "kernel '", name,
         "': the emulated NVRTC cannot load its object: ", err ? err : "dlopen failed");
  }
  auto init = reinterpret_cast<ch_emu_uk_init_fn>(dlsym(h, "ch_emu_uk_init"));
  auto launch = reinterpret_cast<ch_emu_uk_launch_fn>(dlsym(h, "ch_emu_uk_launch"));
  const unsigned abi = init ? init(&host_table()) : 0;
  if (!init || !launch || abi != cuda::emu::kUserKernelAbi) {
    dlclose(h);
    fail(CH_ERR_DEVICE, "kernel '", name, "': the emulated NVRTC's object lacks its entry points ",
         "or has interface version ", abi, " (expected ", cuda::emu::kUserKernelAbi, ")");
  }
  ++g_loads;
  // Never closed: the kernel stays loaded for the process (as CUDA modules).
  return Loaded{launch};
}

Loaded build(const std::string& source, const std::string& name) {
  std::string why;
  const std::vector<std::string> cxx = find_compiler(&why);
  if (cxx.empty())
    fail(CH_ERR_UNSUPPORTED, "kernel '", name,
         "': the emulated CUDA devices compile user kernels with the host C++ compiler, and none "
         "was found: ",
         why);
  const std::string text = object_source(source, name);
  std::string key = "chainerc-emulated-nvrtc abi " + std::to_string(cuda::emu::kUserKernelAbi) +
                    "\ncompiler " + join(cxx) + "\n";
  struct stat st;
  if (stat(cxx[0].c_str(), &st) == 0)
    key += "compiler file " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime) + "\n";
  for (const std::string& f : compile_flags()) key += f + "\n";
  key += "headers " + std::to_string(disk_cache::hash64(header_text())) + "\n--\n" + text;

  TempDir tmp("kernel '" + name + "'");
  const std::string so = tmp.file("kernel.so");
  const std::string dir = disk_cache::directory();
  std::string binary;
  if (disk_cache::load(dir, key, &binary)) {
    if (!write_file(so, binary))
      fail(CH_ERR_IO, "kernel '", name, "': cannot write ", so, ": ", std::strerror(errno));
    return open_object(so, name);
  }

  const std::string src = tmp.file(name + ".cu.cpp");
  const std::string log_path = tmp.file("log");
  if (!write_file(src, text))
    fail(CH_ERR_IO, "kernel '", name, "': cannot write ", src, ": ", std::strerror(errno));
  std::vector<std::string> cmd = cxx;
  cmd.insert(cmd.end(), compile_flags().begin(), compile_flags().end());
  cmd.insert(cmd.end(), {"-x", "c++", src, "-o", so});
  ++g_compiles;
  const int rc = run(cmd, log_path, &why);
  if (rc < 0)
    fail(CH_ERR_UNSUPPORTED, "kernel '", name, "': the emulated NVRTC could not run ", cxx[0], ": ",
         why);
  std::string log;
  read_file(log_path, &log);
  while (!log.empty() && log.back() == '\n') log.pop_back();
  if (rc != 0)
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", name, "': the emulated NVRTC (", cxx[0],
         ") could not compile it (exit status ", rc, "):\n", log);
  if (read_file(so, &binary)) disk_cache::store(dir, key, binary);  // an optimization only
  return open_object(so, name);
}

struct ObjectCache {
  std::mutex mutex;
  // hash of name + source -> (name + source, object); the text rules out collisions.
  std::map<uint64_t, std::pair<std::string, Loaded>> entries;
};

ObjectCache& objects() {
  static ObjectCache* c = new ObjectCache();  // leaked: objects stay loaded
  return *c;
}

Loaded load(const std::string& source, const std::string& name) {
  const std::string id = name + "\n" + source;
  const uint64_t key = disk_cache::hash64(id);
  ObjectCache& c = objects();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.entries.find(key);
    if (it != c.entries.end() && it->second.first == id) return it->second.second;
  }
  // Compile outside the lock; two threads may both compile a new kernel, harmlessly.
  const Loaded l = build(source, name);
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(key);
  if (it != c.entries.end() && it->second.first == id) return it->second.second;
  c.entries[key] = std::make_pair(id, l);
  return l;
}

}  // namespace

namespace emulated_nvrtc {
long long compile_count() { return g_compiles.load(); }
long long load_count() { return g_loads.load(); }
std::string compiler(std::string* why) { return join(find_compiler(why)); }
void forget_loaded() {
  ObjectCache& c = objects();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.entries.clear();
}
}  // namespace emulated_nvrtc

namespace gpu {

bool built() { return true; }

int multiprocessor_count(int device) {
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n <= 0) {
    cudaGetLastError();
    return 1;
  }
  return n;
}

void launch(int device, const std::string& source, const std::string& kernel_name, long long count,
            const void* args, size_t args_size, unsigned grid, unsigned block, void* stream) {
  // The device must exist; it is current for the launch (cuda::DeviceGuard
  // leaves no context on the previous device where it had none).
  cuda::require_device(device, ("kernel '" + kernel_name + "'").c_str());
  cuda::DeviceGuard scope(device);
  const Loaded l = load(source, kernel_name);
  const cudaError_t e = l.launch(count, args, args_size, grid, block, stream);
  if (e == cudaSuccess) return;
  std::string detail;
  if (e == cudaErrorLaunchFailure || e == cudaErrorInvalidConfiguration)
    detail = cuda::emu::last_launch_message();
  cudaGetLastError();  // cleared: the next launch on this thread is not blamed
  fail(CH_ERR_DEVICE, "kernel '", kernel_name, "' on cuda:", device,
       ": launch failed: ", cuda::error_text(e), detail.empty() ? "" : " (" + detail + ")");
}

}  // namespace gpu
}  // namespace chainerc::kernels
