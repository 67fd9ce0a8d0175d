// Array: a C-contiguous n-d view of a shared, reference-counted buffer.
// Array is a cheap value type; copies share the buffer.
#pragma once

#include <ch/common.h>

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "dtype.h"
#include "shape.h"

namespace chainerc {

class Array;
class DeferredValue;

// Memory owned by the engine (caching allocator) or by the user (wrapped).
class Buffer {
 public:
  // Engine-owned block of nbytes on `device`: the host's caching allocator
  // for the CPU, the device's caching allocator (ordered on `stream`, a
  // backend stream; null = the default stream) for a CUDA device.
  static std::shared_ptr<Buffer> allocate(size_t nbytes, Device device, void* stream = nullptr);
  // Page-locked host memory (a CPU buffer) for asynchronous device copies.
  static std::shared_ptr<Buffer> allocate_pinned(size_t nbytes);
  // External memory; `release` (may be null) is called from the destructor.
  static std::shared_ptr<Buffer> wrap(void* data, size_t nbytes, Device device,
                                      ch_release_callback release, void* user_data);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // The memory; a buffer zeroed lazily (defer_zero) is zeroed here first, one
  // whose value is deferred (defer_value) gets it written here first.
  void* data() const {
    if (lazy_zero_.load(std::memory_order_acquire) != kEager) materialize();
    return data_;
  }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool pinned() const { return owner_ == Owner::Pinned; }

  // Only allocate() and wrap() can name the key: the constructor is public so
  // that std::make_shared (one allocation with the count) can call it.
  struct Key {
   private:
    Key() = default;
    friend class Buffer;
  };
  explicit Buffer(Key) {}

  // Lazy zeroing (Optimizer::zero_grads): defer_zero marks the whole buffer
  // "zero" without writing it and returns true, or returns false (the caller
  // zeroes it itself) for memory the engine does not own alone: a device,
  // pinned or wrapped buffer, one whose pointer ch_array_data handed out
  // (expose), or a view of fewer than all its bytes. The zeros are written by
  // the next data() (every read and write goes through it), unless a writer
  // that overwrites every byte first takes them over with claim_zero (true:
  // the buffer was pending zero and now is not, and the caller must write all
  // of it; a GEMM with beta 0 instead of 1).
  bool defer_zero(size_t nbytes);
  bool claim_zero(size_t nbytes);
  bool zero_pending() const {
    const unsigned char s = lazy_zero_.load(std::memory_order_acquire);
    return s == kPending || s == kLent || s == kZeroing;
  }

  // A deferred value (Linear's backward leaves W's gradient as the product
  // gy^T x, DeferredValue): a buffer pending zero (and only such a buffer,
  // else false) takes `value` as what it holds, computed by the next data()
  // on any thread. defer_zero drops it (pending zero again); claim_zero
  // answers false (the writer adds to it, through data()). Until then
  // add_deferred_to may add a multiple of it into another array without
  // writing it: an SGD update of W from a gradient never written. A buffer
  // the value reads must not change meanwhile: whatever writes into an
  // existing array calls before_write first, which computes the deferred
  // values that read it.
  bool defer_value(std::shared_ptr<const DeferredValue> value, size_t nbytes);
  // Whether every write into this buffer passes through the engine (which
  // calls before_write): not the caller's memory, no pointer handed out. A
  // deferred value may keep such a buffer as an operand without copying it.
  bool writes_seen() const {
    return owner_ != Owner::External && !exposed_.load(std::memory_order_relaxed);
  }
  bool value_deferred() const { return lazy_zero_.load(std::memory_order_acquire) == kDeferred; }
  // Whether whoever holds the only reference may give these bytes a new
  // value in place: memory of the engine's caching allocators, no pointer
  // handed out, the bytes holding the value (no lazy zeros, no deferred
  // value) and no deferred value reading them.
  bool overwritable() const {
    return (owner_ == Owner::HostCache || owner_ == Owner::DeviceCache) &&
           !exposed_.load(std::memory_order_relaxed) &&
           lazy_zero_.load(std::memory_order_acquire) == kEager &&
           deferred_readers_.load(std::memory_order_acquire) == 0;
  }
  // target += scale x the deferred value, the buffer keeping it; false (and
  // nothing done) where no value is deferred or the value cannot.
  bool add_deferred_to(const Array& target, double scale);
  // Before a write into this buffer: computes the deferred values of other
  // buffers that read it. One atomic load when none does.
  void before_write() const {
    if (deferred_readers_.load(std::memory_order_acquire) != 0) materialize_readers();
  }
  // A buffer pending zero holds no value until its zeros are written or
  // claimed, so its bytes can serve as scratch memory meanwhile (Linear's
  // forward puts W transposed into W's gradient). lend_pending_zero returns
  // them (nullptr unless the buffer is pending zero, not lent, and at least
  // nbytes long); the buffer stays pending zero, and data(), claim_zero and
  // defer_zero on any thread wait until end_loan. The borrower must not
  // reach this buffer through data() before end_loan (it would wait for
  // itself): see Loan.
  void* lend_pending_zero(size_t nbytes);
  void end_loan();
  // The loan as a scope; data() is null when nothing was lent.
  class Loan {
   public:
    Loan(Buffer* buffer, size_t nbytes)
        : buffer_(buffer), data_(buffer ? buffer->lend_pending_zero(nbytes) : nullptr) {}
    ~Loan() {
      if (data_) buffer_->end_loan();
    }
    Loan(const Loan&) = delete;
    Loan& operator=(const Loan&) = delete;
    void* data() const { return data_; }

   private:
    Buffer* buffer_;
    void* data_;
  };
  // The pointer leaves the engine (ch_array_data): never zeroed lazily again,
  // and whatever deferred value reads it is computed now (the caller may
  // write through the pointer).
  void expose() {
    exposed_.store(true, std::memory_order_relaxed);
    before_write();
  }

  // A step taken in backward (Optimizer::step_in_backward, plain SGD), kept
  // on a parameter's gradient buffer, which the optimizer and the function
  // owning the parameter share. Every forward of the function counts a use;
  // update() restarts the count (and the optimizer's setup); zero_grads arms
  // the buffer with the step's scale (-lr). The backward of a function whose
  // parameter was used once since the count restarted may then take the step
  // (add scale x its gradient into the parameter rather than write the
  // gradient), once; update() leaves that parameter alone and disarms.
  void arm_step(double scale);
  void disarm_step();
  void restart_step_uses();
  // Saturates at 2 (only "once" matters): no overflow however many forwards
  // run without an update, and a plain load once there.
  void count_step_use() {
    if (step_uses_.load(std::memory_order_acquire) < 2)
      step_uses_.fetch_add(1, std::memory_order_acq_rel);
  }
  // True (with the scale) when armed, used once and not taken: now taken.
  bool take_step(double* scale);
  bool step_taken() const { return step_taken_.load(std::memory_order_acquire); }
  bool step_armed() const { return step_armed_.load(std::memory_order_acquire); }

 private:
  // kEager: the bytes are the value. kPending: zero, not written. kZeroing:
  // a thread writes the zeros. kLent: pending zero, the bytes lent out.
  // kDeferred: deferred_ is the value. kComputing: a thread writes it, or
  // adds it elsewhere (add_deferred_to).
  enum : unsigned char { kEager, kPending, kZeroing, kLent, kDeferred, kComputing };
  void materialize() const;
  void materialize_readers() const;
  // In materialize (kComputing): computes the deferred value over its
  // adoptable operand and exchanges memory with it, where nothing else holds
  // the operand and its bytes are this buffer's kind and size; false: nothing done.
  bool adopt_operand() const;
  // Takes deferred_ away (kComputing held by the caller) and stops counting
  // its operands' readers.
  std::shared_ptr<const DeferredValue> drop_deferred() const;
  static void forget_deferred(const DeferredValue& value);
  mutable std::atomic<unsigned char> lazy_zero_{kEager};
  mutable std::shared_ptr<const DeferredValue> deferred_;  // in kDeferred / kComputing
  mutable std::atomic<int> deferred_readers_{0};           // deferred values reading this
  std::atomic<bool> exposed_{false};
  std::atomic<int> step_uses_{0};
  std::atomic<bool> step_armed_{false}, step_taken_{false};
  std::atomic<double> step_scale_{0};
  // Mutable: computing a deferred value may exchange it for an operand's
  // memory (adopt_operand).
  mutable void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  ch_release_callback release_ = nullptr;
  void* user_data_ = nullptr;
  enum class Owner : unsigned char { External, HostCache, DeviceCache, Pinned };
  Owner owner_ = Owner::External;
};

class Array {
 public:
  Array() = default;  // the "none" array: defined() is false
  Array(std::shared_ptr<Buffer> buffer, DType dtype, const Shape& shape)
      : buffer_(std::move(buffer)), dtype_(dtype), shape_(shape) {}
  Array(const Array&) = default;
  Array(Array&&) noexcept = default;
  // Assignment stores the whole new value before the old one is let go.
  // Letting go of a wrapped buffer runs its release callback, which may call
  // back into the library and read or assign this very array (a variable's
  // grad or data). Member-wise assignment would let go half-way through
  // (std::shared_ptr's copy assignment drops the old count before it stores
  // the new pointer): a nested assignment then takes a reference that the
  // outer one overwrites, and the buffer it names is never freed.
  Array& operator=(const Array& o) {
    Array replaced(o);
    swap(replaced);  // now holds the previous value, let go on return
    return *this;
  }
  Array& operator=(Array&& o) noexcept {
    Array replaced(std::move(o));
    swap(replaced);
    return *this;
  }
  void swap(Array& o) noexcept {
    buffer_.swap(o.buffer_);
    std::swap(dtype_, o.dtype_);
    std::swap(shape_, o.shape_);
  }

  // Uninitialized / filled / copied arrays on `device` (CPU or CUDA).
  static Array empty(DType dtype, const Shape& shape, Device device = Device{});
  static Array full(DType dtype, const Shape& shape, double value, Device device = Device{});
  static Array zeros(DType dtype, const Shape& shape, Device device = Device{}) {
    return full(dtype, shape, 0.0, device);
  }
  static Array zeros_like(const Array& a) { return zeros(a.dtype(), a.shape(), a.device()); }
  static Array empty_like(const Array& a) { return empty(a.dtype(), a.shape(), a.device()); }
  // a's dtype, shape and device without its memory (raw() is null): what a
  // variable keeps of data it released (see VariableImpl).
  static Array placeholder_like(const Array& a);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int32_t ndim() const { return shape_.ndim(); }
  int64_t size() const { return shape_.size(); }
  size_t nbytes() const { return static_cast<size_t>(size()) * dtype_size(dtype_); }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  void* raw() const { return buffer_ ? buffer_->data() : nullptr; }
  // The memory, for a write into this existing array from outside a kernel's
  // output: the deferred values that read it are computed first
  // (Buffer::before_write).
  void* raw_for_write() const {
    if (buffer_) buffer_->before_write();
    return raw();
  }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw());
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  bool shares_memory_with(const Array& o) const { return buffer_ && buffer_ == o.buffer_; }
  // No other array, variable or deferred value shares this array's memory,
  // which only the engine writes (Buffer::overwritable): a function may
  // write its result over it. backward() hands a function the only
  // reference to an output's gradient where nothing keeps that gradient, so
  // that a gradient computed element by element from it can take its place
  // (ops' run_over_grad).
  bool unshared() const { return buffer_ && buffer_.use_count() == 1 && buffer_->overwritable(); }
  // Buffer::defer_zero / claim_zero over this array's bytes (false: none).
  bool defer_zero() const { return buffer_ && buffer_->defer_zero(nbytes()); }
  bool claim_zero() const { return buffer_ && buffer_->claim_zero(nbytes()); }

  Array reshaped(const Shape& shape) const;  // shares memory; sizes must match
  Array copy() const;                        // deep copy on the same device
  // Copy on `device` (any device; a new buffer even on the same device).
  // With a backend stream the copy is queued on it; `pinned` puts a CPU
  // result in page-locked memory.
  Array to_device(Device device, void* stream = nullptr, bool pinned = false) const;
  // A new array on `device` holding the host bytes at `data` (which may be
  // reused on return; a device copy may still be queued, see DeviceBackend::upload).
  static Array from_host(DType dtype, const Shape& shape, const void* data, Device device);
  void fill(double value);               // any device
  double get(int64_t flat_index) const;  // element as double (any dtype, any device)
  std::string describe() const;          // "float32 array of shape (2, 3) on cpu"

 private:
  std::shared_ptr<Buffer> buffer_;
  DType dtype_ = DType::Float32;
  Shape shape_;
};

// A buffer's value computed when first needed (Buffer::defer_value): the
// derived class holds what computes it (the operands, kept alive and
// unchanged: Buffer::before_write) and how.
class DeferredValue {
 public:
  explicit DeferredValue(std::vector<Array> operands) : operands_(std::move(operands)) {}
  virtual ~DeferredValue() = default;
  DeferredValue(const DeferredValue&) = delete;
  DeferredValue& operator=(const DeferredValue&) = delete;

  // Writes the value over all of `dst` (the buffer's bytes, which data()
  // does not reach while this runs).
  virtual void write(void* dst) const = 0;
  // An operand (its index; -1: none) of the value's size that write() may
  // be given as dst, element by element over its own bytes. When the value
  // is computed and this deferred value is all that still holds the operand
  // (its variable's data released since), the buffer writes the value over
  // the operand's bytes and takes that memory in exchange for its own,
  // unwritten: a write into lines the operand's writer left in cache instead
  // of into memory not touched since it was freed.
  virtual int adoptable_operand() const { return -1; }
  // target += scale x the value, without writing the value; false where it
  // cannot (nothing done).
  virtual bool add_scaled_to(const Array& target, double scale) const = 0;
  const std::vector<Array>& operands() const { return operands_; }

 private:
  std::vector<Array> operands_;
};

}  // namespace chainerc
