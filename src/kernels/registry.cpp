#include "registry.h"

#include <mutex>
#include <vector>

namespace chainerc::kernels {
namespace {

struct KernelList {
  std::mutex mutex;
  std::vector<const KernelBase*> kernels;
};
KernelList& kernel_list() {
  static KernelList* list = new KernelList;  // never destroyed: kernels outlive static destructors
  return *list;
}

}  // namespace

KernelBase::KernelBase(const char* name) : name_(name) {
  KernelList& l = kernel_list();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.kernels.push_back(this);
}

std::vector<const KernelBase*> all_kernels() {
  KernelList& l = kernel_list();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.kernels;
}

namespace detail {
void no_kernel(const char* kernel, Device device) {
  fail(CH_ERR_DEVICE, kernel, ": no kernel for ", device.to_string(),
       " in this build (chainerc implements it on ",
       device.type == CH_DEVICE_CUDA ? "the CPU only so far" : "other devices",
       "; copy the arrays to a device that has it)");
}
}  // namespace detail

}  // namespace chainerc::kernels
