// Caching host allocator: freed blocks are kept in size classes (four per
// power of two, so at most 25% slack) and handed out again, so a training
// loop does not reach malloc for every temporary in steady state.
#pragma once

#include <ch/common.h>

#include <cstddef>

namespace chainerc {

// 64-byte aligned block of at least `nbytes` bytes; throws Error(CH_ERR_OUT_OF_MEMORY).
void* host_allocate(size_t nbytes);
// Give back a block from host_allocate with the same `nbytes`.
void host_deallocate(void* ptr, size_t nbytes) noexcept;
ch_memory_stats host_memory_stats();
void host_empty_cache();

namespace testing {
// Allocation-failure injection for tests (internal, not exported): after
// fail_allocation_after(n), the n-th following host_allocate throws
// Error(CH_ERR_OUT_OF_MEMORY) (once); n <= 0 turns injection off.
// host_allocations_counted() is how many host_allocate calls were counted
// since the last fail_allocation_after.
void fail_allocation_after(long long n);
long long host_allocations_counted();
}  // namespace testing

}  // namespace chainerc
