// Caching host allocator: freed blocks are kept and handed out again, so a
// training loop does not reach malloc for every temporary in steady state.
//
// Small requests (<= 64 KiB) are rounded to size classes (four per power of
// two, so at most 25% slack) and kept in a list per class. Large ones are
// rounded to 4 KiB and served best fit from segments (one system allocation
// each): a free block is split when the rest is at least 64 KiB, and freed
// neighbours merge again, so memory freed by one size serves others (exact
// classes held the sum of every class's own peak: the MNIST convnet's step
// peaks at 13.4 MiB of arrays but held 16.4 MiB).
//
// When a large request finds no free block that fits, every whole free
// segment goes back to the system and the new segment is the request plus
// as much of their bytes as the bound below allows, so free memory gathers
// in few segments (without this, the convnet's heap at two threads was
// 16.8 MiB; with it, 15.7-16.1). What the cache holds (in use + cached) is
// bounded by the most bytes ever in use at once (since the start or the last
// host_empty_cache) and half as much again, at least 1 MiB more: a miss
// gives back cached small blocks (largest class first) and whole free
// segments that would put it above. Free pieces of segments partly in use
// cannot be given back, so the bound may be passed by them.
// When the system refuses memory, every cached block that can be is given
// back and the request retried once before Error(CH_ERR_OUT_OF_MEMORY).
// Thread-safe (one mutex; system calls outside it).
#pragma once

#include <ch/common.h>

#include <cstddef>

namespace chainerc {

// 64-byte aligned block of at least `nbytes` bytes; throws Error(CH_ERR_OUT_OF_MEMORY).
void* host_allocate(size_t nbytes);
// Give back a block from host_allocate with the same `nbytes`.
void host_deallocate(void* ptr, size_t nbytes) noexcept;
ch_memory_stats host_memory_stats();
// Gives every cached small block and whole free segment back to the system;
// the bound's high-water mark restarts from the bytes now in use.
void host_empty_cache();

namespace testing {
// Allocation-failure injection for tests (internal, not exported): after
// fail_allocation_after(n), the n-th following host_allocate throws
// Error(CH_ERR_OUT_OF_MEMORY) (once); n <= 0 turns injection off.
// host_allocations_counted() is how many host_allocate calls were counted
// since the last fail_allocation_after.
void fail_allocation_after(long long n);
long long host_allocations_counted();
// The system refusing memory, for tests: system allocations above `bytes`
// fail as aligned_alloc fails (null); 0 turns it off.
void refuse_system_allocations_above(size_t bytes);
// Small blocks and segments given back to the system by trims, since the start.
long long host_blocks_trimmed();
// The bound above as it stands (bytes the cache may hold: in use + cached).
size_t host_held_bound();
// Large-block segments held (each one system allocation).
size_t host_segments();
}  // namespace testing

}  // namespace chainerc
