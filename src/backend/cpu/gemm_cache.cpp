#include "gemm_cache.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/disk_cache.h"

namespace chainerc::cpu::gemm_cache {
namespace {

constexpr disk_cache::Kind kChoiceFile = {
    {'C', 'H', 'G', 'E', 'M', 'M', 'C', '1'}, ".choice", kMaxFileBytes};

// x86 flags (/proc/cpuinfo's names) of the instruction sets OpenBLAS, oneDNN
// and BLIS choose kernels by; other architectures keep every feature.
bool isa_flag(const std::string& f) {
  static const char* const prefixes[] = {"sse", "ssse3", "avx", "fma",  "f16c",
                                         "amx", "bmi",   "xop", "movbe"};
  for (const char* p : prefixes)
    if (f.compare(0, std::strlen(p), p) == 0) return true;
  return false;
}

}  // namespace

std::string directory_from_environment() {
  const char* off = std::getenv("CH_GEMM_CACHE");
  if (off && std::strcmp(off, "0") == 0) return "";
  return disk_cache::directory("CH_GEMM_CACHE_DIR", "gemm");
}

std::string cpu_identity() {
  // The first processor's block (the lines up to the first empty one).
  std::ifstream block("/proc/cpuinfo");
  static const char* const fields[] = {
      "vendor_id",       "cpu family",       "model",       "model name", "stepping",
      "CPU implementer", "CPU architecture", "CPU variant", "CPU part",   "CPU revision"};
  std::string line, out, isa;
  while (std::getline(block, line) && !line.empty()) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (name == "flags" || name == "Features") {
      std::istringstream words(value);
      std::set<std::string> kept;  // sorted: the order of the flags does not matter
      for (std::string w; words >> w;)
        if (name == "Features" || isa_flag(w)) kept.insert(w);
      for (const std::string& w : kept) isa += (isa.empty() ? "" : " ") + w;
      continue;
    }
    for (const char* f : fields)
      if (name == f) out += (out.empty() ? "" : "; ") + name + "=" + value;
  }
  if (out.empty() && isa.empty()) return "unknown CPU";
  return out + "; isa=" + isa;
}

std::string path_for(const std::string& dir, const std::string& key) {
  return disk_cache::path_for(kChoiceFile, dir, key);
}

bool load(const std::string& dir, const std::string& key, std::string* payload) {
  return disk_cache::load(kChoiceFile, dir, key, payload);
}

bool store(const std::string& dir, const std::string& key, const std::string& payload) {
  return disk_cache::store(kChoiceFile, dir, key, payload);
}

}  // namespace chainerc::cpu::gemm_cache
