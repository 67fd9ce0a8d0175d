#include "disk_cache.h"

#include "core/disk_cache.h"

namespace chainerc::kernels::disk_cache {
namespace {

// A compiled CUBIN, or under emulation a shared object; larger files are not read.
constexpr chainerc::disk_cache::Kind kKernelFile = {
    {'C', 'H', 'K', 'C', 'A', 'C', 'H', '1'}, ".cubin", size_t{256} << 20};

}  // namespace

std::string directory() {
  return chainerc::disk_cache::directory("CH_KERNEL_CACHE_DIR", "kernels");
}

uint64_t hash64(const std::string& data, uint64_t seed) {
  return chainerc::disk_cache::hash64(data, seed);
}

std::string path_for(const std::string& dir, const std::string& key) {
  return chainerc::disk_cache::path_for(kKernelFile, dir, key);
}

bool load(const std::string& dir, const std::string& key, std::string* payload) {
  return chainerc::disk_cache::load(kKernelFile, dir, key, payload);
}

bool store(const std::string& dir, const std::string& key, const std::string& payload) {
  return chainerc::disk_cache::store(kKernelFile, dir, key, payload);
}

}  // namespace chainerc::kernels::disk_cache
