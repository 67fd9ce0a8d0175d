#include "array.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "allocator.h"
#include "device_backend.h"
#include "error.h"

namespace chainerc {

namespace {

// The buffers holding a deferred value, for Buffer::before_write: a write
// into an operand of one computes it first. Recursive: computing a value
// while its reader holds the lock removes the value's entry. Never
// destroyed: a static Array may outlive any static here.
struct DeferredEntry {
  const Buffer* owner;
  const DeferredValue* value;
};
std::recursive_mutex& deferred_mutex() {
  static auto* m = new std::recursive_mutex;
  return *m;
}
std::vector<DeferredEntry>& deferred_entries() {
  static auto* entries = new std::vector<DeferredEntry>;
  return *entries;
}

}  // namespace

// The value's entry goes, and its operands no longer count it as a reader.
void Buffer::forget_deferred(const DeferredValue& value) {
  std::lock_guard<std::recursive_mutex> lock(deferred_mutex());
  auto& entries = deferred_entries();
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const DeferredEntry& e) { return e.value == &value; }),
                entries.end());
  for (const Array& a : value.operands())
    if (a.buffer()) a.buffer()->deferred_readers_.fetch_sub(1, std::memory_order_acq_rel);
}

std::shared_ptr<Buffer> Buffer::allocate(size_t nbytes, Device device, void* stream) {
  auto b = std::make_shared<Buffer>(Key{});
  if (device.is_cpu()) {
    b->data_ = host_allocate(nbytes);
    b->owner_ = Owner::HostCache;
  } else {
    b->data_ = backend_for(device, "allocate").allocate(device.index, nbytes, stream);
    b->owner_ = Owner::DeviceCache;
  }
  b->nbytes_ = nbytes;
  b->device_ = device;
  return b;
}

std::shared_ptr<Buffer> Buffer::allocate_pinned(size_t nbytes) {
  DeviceBackend* backend = cuda_backend();
  if (!backend)
    fail(CH_ERR_DEVICE, "page-locked host memory: this build of chainerc has no CUDA backend");
  auto b = std::make_shared<Buffer>(Key{});
  b->data_ = backend->allocate_pinned(nbytes);
  b->owner_ = Owner::Pinned;
  b->nbytes_ = nbytes;
  b->device_ = Device{};
  return b;
}

bool Buffer::defer_zero(size_t nbytes) {
  if (owner_ != Owner::HostCache || nbytes != nbytes_ || exposed_.load(std::memory_order_relaxed))
    return false;
  unsigned char s = lazy_zero_.load(std::memory_order_acquire);
  while (s != kPending && s != kLent) {      // lent: pending zero, and so it stays
    if (s == kZeroing || s == kComputing) {  // another thread writes: wait, then mark again
      s = lazy_zero_.load(std::memory_order_acquire);
      continue;
    }
    if (s == kDeferred) {  // the value is not needed: drop it
      if (!lazy_zero_.compare_exchange_weak(s, kComputing, std::memory_order_acq_rel)) continue;
      drop_deferred();
      lazy_zero_.store(kPending, std::memory_order_release);
      break;
    }
    if (lazy_zero_.compare_exchange_weak(s, kPending, std::memory_order_acq_rel)) break;
  }
  return true;
}

bool Buffer::claim_zero(size_t nbytes) {
  if (nbytes != nbytes_) return false;  // data() writes the zeros for a partial writer
  for (;;) {
    unsigned char s = kPending;
    if (lazy_zero_.compare_exchange_strong(s, kEager, std::memory_order_acq_rel)) return true;
    if (s == kEager) return false;
    if (s == kZeroing || s == kDeferred || s == kComputing) {
      (void)data();  // the zeros or the value written (here or by another thread)
      return false;
    }
    while (lazy_zero_.load(std::memory_order_acquire) == kLent) {  // pending again after the loan
    }
  }
}

void* Buffer::lend_pending_zero(size_t nbytes) {
  if (nbytes > nbytes_) return nullptr;
  unsigned char s = kPending;
  return lazy_zero_.compare_exchange_strong(s, kLent, std::memory_order_acq_rel) ? data_ : nullptr;
}

void Buffer::end_loan() { lazy_zero_.store(kPending, std::memory_order_release); }

void Buffer::arm_step(double scale) {
  step_scale_.store(scale, std::memory_order_release);
  step_armed_.store(true, std::memory_order_release);
}

void Buffer::disarm_step() {
  step_armed_.store(false, std::memory_order_release);
  step_taken_.store(false, std::memory_order_release);
}

void Buffer::restart_step_uses() { step_uses_.store(0, std::memory_order_release); }

bool Buffer::take_step(double* scale) {
  if (!step_armed_.load(std::memory_order_acquire) ||
      step_uses_.load(std::memory_order_acquire) != 1)
    return false;
  bool taken = false;
  if (!step_taken_.compare_exchange_strong(taken, true, std::memory_order_acq_rel)) return false;
  *scale = step_scale_.load(std::memory_order_acquire);
  return true;
}

bool Buffer::defer_value(std::shared_ptr<const DeferredValue> value, size_t nbytes) {
  if (!value || nbytes != nbytes_) return false;
  unsigned char s = kPending;
  if (!lazy_zero_.compare_exchange_strong(s, kComputing, std::memory_order_acq_rel)) return false;
  {
    std::lock_guard<std::recursive_mutex> lock(deferred_mutex());
    deferred_entries().push_back({this, value.get()});
    for (const Array& a : value->operands())
      if (a.buffer()) a.buffer()->deferred_readers_.fetch_add(1, std::memory_order_acq_rel);
  }
  deferred_ = std::move(value);
  lazy_zero_.store(kDeferred, std::memory_order_release);
  return true;
}

bool Buffer::add_deferred_to(const Array& target, double scale) {
  // The products that read the target are computed first, before this buffer
  // turns kComputing: computed from inside the addition (the target's
  // before_write), they would take the registry lock while another thread may
  // hold it, waiting in materialize_readers for this very buffer.
  if (target.buffer() && lazy_zero_.load(std::memory_order_acquire) == kDeferred)
    target.buffer()->before_write();
  unsigned char s = kDeferred;
  if (!lazy_zero_.compare_exchange_strong(s, kComputing, std::memory_order_acq_rel)) return false;
  bool added = false;
  try {
    added = deferred_->add_scaled_to(target, scale);
  } catch (...) {
    lazy_zero_.store(kDeferred, std::memory_order_release);
    throw;
  }
  lazy_zero_.store(kDeferred, std::memory_order_release);
  return added;
}

std::shared_ptr<const DeferredValue> Buffer::drop_deferred() const {
  std::shared_ptr<const DeferredValue> value = std::move(deferred_);
  deferred_.reset();
  if (value) forget_deferred(*value);
  return value;
}

void Buffer::materialize_readers() const {
  std::lock_guard<std::recursive_mutex> lock(deferred_mutex());
  std::vector<const Buffer*> owners;  // computing one removes its entry: collect first
  for (const DeferredEntry& e : deferred_entries())
    for (const Array& a : e.value->operands())
      if (a.buffer().get() == this) {
        owners.push_back(e.owner);
        break;
      }
  for (const Buffer* owner : owners) (void)owner->data();
}

bool Buffer::adopt_operand() const {
  const int i = deferred_->adoptable_operand();
  if (i < 0 || static_cast<size_t>(i) >= deferred_->operands().size()) return false;
  const Array& operand = deferred_->operands()[static_cast<size_t>(i)];
  Buffer* b = operand.buffer().get();
  // use_count 1: the value's own reference; no other thread can take a new
  // one. Its only reader is this value, and its bytes hold its value.
  if (!b || b == this || operand.buffer().use_count() != 1 || owner_ != Owner::HostCache ||
      b->owner_ != owner_ || b->nbytes_ != nbytes_ || operand.nbytes() != nbytes_ ||
      b->exposed_.load(std::memory_order_relaxed) ||
      b->lazy_zero_.load(std::memory_order_acquire) != kEager ||
      b->deferred_readers_.load(std::memory_order_acquire) != 1)
    return false;
  deferred_->write(b->data_);  // not through b's data(): it would compute this value first
  // The operand's buffer goes with the value (materialize drops it), freeing
  // the block this buffer was given and never wrote.
  std::swap(data_, b->data_);
  return true;
}

void Buffer::materialize() const {
  for (;;) {
    unsigned char s = lazy_zero_.load(std::memory_order_acquire);
    if (s == kEager) return;
    if (s == kPending) {
      if (lazy_zero_.compare_exchange_strong(s, kZeroing, std::memory_order_acq_rel)) {
        std::memset(data_, 0, nbytes_);
        lazy_zero_.store(kEager, std::memory_order_release);
        return;
      }
      continue;
    }
    if (s == kDeferred) {
      if (!lazy_zero_.compare_exchange_strong(s, kComputing, std::memory_order_acq_rel)) continue;
      try {
        if (!adopt_operand()) deferred_->write(data_);
      } catch (...) {
        lazy_zero_.store(kDeferred, std::memory_order_release);
        throw;
      }
      // Eager before the entry goes: a thread computing this buffer for a
      // write elsewhere (materialize_readers) holds the lock and waits for it.
      const std::shared_ptr<const DeferredValue> value = std::move(deferred_);
      deferred_.reset();
      lazy_zero_.store(kEager, std::memory_order_release);
      forget_deferred(*value);
      return;
    }
    // Another thread writes the zeros or the value (then eager), or has the
    // bytes on loan (then pending again, and this thread writes them).
    while (lazy_zero_.load(std::memory_order_acquire) == s) {
    }
  }
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, size_t nbytes, Device device,
                                     ch_release_callback release, void* user_data) {
  auto b = std::make_shared<Buffer>(Key{});
  b->data_ = data;
  b->nbytes_ = nbytes;
  b->device_ = device;
  b->release_ = release;
  b->user_data_ = user_data;
  return b;
}

Buffer::~Buffer() {
  const unsigned char s = lazy_zero_.load(std::memory_order_acquire);
  if (s == kDeferred || s == kComputing) {  // a writer elsewhere may be computing it: wait
    std::lock_guard<std::recursive_mutex> lock(deferred_mutex());
    drop_deferred();
  }
  switch (owner_) {
    case Owner::HostCache:
      host_deallocate(data_, nbytes_);
      break;
    case Owner::DeviceCache:
      // A buffer on a device exists only after the backend was found.
      cuda_backend()->deallocate(device_.index, data_);
      break;
    case Owner::Pinned:
      cuda_backend()->deallocate_pinned(data_);
      break;
    case Owner::External:
      if (release_) release_(data_, user_data_);
      break;
  }
}

Array Array::empty(DType dtype, const Shape& shape, Device device) {
  size_t n = shape.checked_nbytes(dtype_size(dtype), "array");
  return Array(Buffer::allocate(n, device), dtype, shape);
}

Array Array::full(DType dtype, const Shape& shape, double value, Device device) {
  Array a = empty(dtype, shape, device);
  a.fill(value);
  return a;
}

void Array::fill(double value) {
  backend_for(device(), "fill").fill(device().index, raw_for_write(), dtype_, size(), value);
}

Array Array::reshaped(const Shape& shape) const {
  if (shape.size() != size())
    fail(CH_ERR_SHAPE, "cannot reshape array of shape ", shape_.to_string(), " (size ", size(),
         ") to ", shape.to_string(), " (size ", shape.size(), ")");
  return Array(buffer_, dtype_, shape);
}

Array Array::copy() const { return to_device(device()); }

Array Array::from_host(DType dtype, const Shape& shape, const void* data, Device device) {
  const size_t n = shape.checked_nbytes(dtype_size(dtype), "array");
  if (device.is_cpu() || n == 0) {
    Array a = empty(dtype, shape, device);
    copy_bytes(a.raw(), device, data, Device{}, n);
    return a;
  }
  // A fresh device array: allocated for the backend's upload stream, so that
  // its copy need not wait for the device's queued work.
  DeviceBackend& b = backend_for(device, "copy");
  Array a(Buffer::allocate(n, device, b.upload_stream(device.index)), dtype, shape);
  b.upload(a.raw(), device.index, data, n);
  return a;
}

Array Array::to_device(Device device, void* stream, bool pinned) const {
  if (!stream && !device.is_cpu() && this->device().is_cpu())
    return from_host(dtype_, shape_, raw(), device);
  Array out = pinned && device.is_cpu()
                  ? Array(Buffer::allocate_pinned(nbytes()), dtype_, shape_)
                  : Array(Buffer::allocate(nbytes(), device, stream), dtype_, shape_);
  copy_bytes(out.raw(), device, raw(), this->device(), nbytes(), stream);
  return out;
}

double Array::get(int64_t i) const {
  if (i < 0 || i >= size())
    fail(CH_ERR_INVALID_ARGUMENT, "index ", i, " is out of range for ", describe());
  if (!device().is_cpu()) {
    double v64 = 0;
    float v32 = 0;
    int32_t vi = 0;
    void* dst = dtype_ == DType::Float64   ? static_cast<void*>(&v64)
                : dtype_ == DType::Float32 ? static_cast<void*>(&v32)
                                           : static_cast<void*>(&vi);
    size_t w = dtype_size(dtype_);
    copy_bytes(dst, Device{}, static_cast<const char*>(raw()) + static_cast<size_t>(i) * w,
               device(), w);
    // Each branch as double: `cond ? v32 : vi` alone would be a float and
    // round int32 values above 2^24.
    return dtype_ == DType::Float64   ? v64
           : dtype_ == DType::Float32 ? static_cast<double>(v32)
                                      : static_cast<double>(vi);
  }
  switch (dtype_) {
    case DType::Float32:
      return data<float>()[i];
    case DType::Float64:
      return data<double>()[i];
    case DType::Int32:
      return data<int32_t>()[i];
  }
  return 0;
}

Array Array::placeholder_like(const Array& a) {
  // One shared memoryless buffer serves every CPU placeholder.
  static const std::shared_ptr<Buffer>* cpu_none =
      new std::shared_ptr<Buffer>(Buffer::wrap(nullptr, 0, Device{}, nullptr, nullptr));
  const Device d = a.device();
  return Array(d.is_cpu() ? *cpu_none : Buffer::wrap(nullptr, 0, d, nullptr, nullptr), a.dtype(),
               a.shape());
}

std::string Array::describe() const {
  return std::string(dtype_name(dtype_)) + " array of shape " + shape_.to_string() + " on " +
         device().to_string();
}

}  // namespace chainerc
