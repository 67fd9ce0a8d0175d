// The input decoder of the API-sequence fuzz targets (fuzz_sequence.cpp,
// fuzz_reentry.cpp): the bytes read one at a time, and pools of live handles
// that the bytes name by slot. Both targets' corpora depend on how bytes are
// consumed here: change it and their inputs mean other call sequences.
#pragma once

#include <ch/ch.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace chfuzz {

// The input, consumed byte by byte (zeros once it is exhausted).
class Bytes {
 public:
  Bytes(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool more() const { return at_ < n_; }
  unsigned byte() { return at_ < n_ ? d_[at_++] : 0; }
  unsigned pick(unsigned n) { return n ? byte() % n : 0; }
  double value() { return (static_cast<int>(byte()) - 128) / 16.0; }
  // An extent from {0 .. 4, 2**20, 2**31, 2**40, 2**62, INT64_MAX}.
  int64_t extent() {
    static const int64_t kExtents[] = {0,
                                       1,
                                       2,
                                       3,
                                       4,
                                       int64_t{1} << 20,
                                       int64_t{1} << 31,
                                       int64_t{1} << 40,
                                       int64_t{1} << 62,
                                       INT64_MAX};
    return kExtents[pick(sizeof kExtents / sizeof kExtents[0])];
  }
  int64_t small_or_extreme() { return pick(4) ? static_cast<int64_t>(pick(4)) : extent(); }

 private:
  const uint8_t* d_;
  size_t n_, at_ = 0;
};

// A fixed-size pool of handles; a slot is empty (nullptr) or holds one
// reference. A slot is emptied (or holds its new handle) before what it held
// is released, so a callback that runs inside that release and touches the
// pool (fuzz_reentry) never releases the same handle twice.
template <typename T, ch_status (*Release)(T*), size_t N>
class Pool {
 public:
  Pool() = default;
  ~Pool() { clear(); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  T* get(unsigned i) const { return slots_[i % N]; }
  T* get(Bytes& b) const { return get(b.byte()); }
  // Stores a new reference, releasing what the slot held.
  void put(unsigned i, T* h) {
    T* old = slots_[i % N];
    slots_[i % N] = h;
    if (old) Release(old);
  }
  void release(unsigned i) { put(i, nullptr); }
  // True when it released something (callbacks may refill slots meanwhile).
  bool clear() {
    bool any = false;
    for (size_t i = 0; i < N; ++i)
      if (slots_[i]) {
        any = true;
        release(static_cast<unsigned>(i));
      }
    return any;
  }

 private:
  std::array<T*, N> slots_{};
};

}  // namespace chfuzz
