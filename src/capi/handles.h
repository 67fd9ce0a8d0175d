// The handle table behind every opaque C handle.
//
// A handle is not a pointer to the object: it encodes a slot index and the
// slot's generation in a value that is a kernel address (never user memory,
// so it is never dereferenced and never collides with a garbage-collected
// heap). Looking a handle up checks the generation and kind, so NULL,
// released and wrong-kind handles are reported instead of crashing. A handle
// value is issued at most once in a process (handles.cpp): a released handle
// never names another object. Each slot holds one strong reference to its
// object plus the handle's own reference count (retain/release).
#pragma once

#include <cstdint>
#include <memory>

namespace chainerc {

enum class HandleKind : uint8_t {
  Array = 1,
  Variable = 2,
  Function = 3,
  Context = 4,
  FunctionSet = 5,
  Optimizer = 6,
  Stream = 7,
  ElementwiseKernel = 8,
  ReductionKernel = 9,
  CudaGraph = 10,
};
constexpr int kHandleKindCount = 11;            // one past the largest kind
const char* handle_kind_name(HandleKind kind);  // "ch_array", ...

// New handle with reference count 1 owning `object`. The object of a
// Variable handle must be a VariableImpl: its last release may release the
// variable's data (variable_handle_destroyed).
void* handle_new(HandleKind kind, std::shared_ptr<void> object);
// The object behind a live handle of `kind`, or throws Error (NULL -> CH_ERR_NULL_HANDLE,
// released or wrong kind -> CH_ERR_RELEASED_HANDLE) naming `who` and `arg`.
const std::shared_ptr<void>& handle_get(const void* handle, HandleKind kind, const char* who,
                                        const char* arg);
// As handle_get but returns null instead of throwing (for getters that cannot fail).
const std::shared_ptr<void>* handle_find(const void* handle, HandleKind kind) noexcept;
// retain: returns false if the handle is not live.
bool handle_retain(const void* handle, HandleKind kind) noexcept;
// release: NULL is fine; throws Error for a released or wrong-kind handle.
void handle_release(const void* handle, HandleKind kind, const char* who);

int64_t handle_live_count(int kind_or_zero) noexcept;
void handle_report_live() noexcept;

template <typename T>
T& handle_object(const void* handle, HandleKind kind, const char* who, const char* arg) {
  return *static_cast<T*>(handle_get(handle, kind, who, arg).get());
}
template <typename T>
std::shared_ptr<T> handle_shared(const void* handle, HandleKind kind, const char* who,
                                 const char* arg) {
  return std::static_pointer_cast<T>(handle_get(handle, kind, who, arg));
}

}  // namespace chainerc
