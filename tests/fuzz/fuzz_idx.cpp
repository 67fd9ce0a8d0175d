// Fuzz target: ch_datasets_read_idx on arbitrary bytes, plain or gzip
// (the reader tells them apart), as float32 scaled and as int32, and on the
// special files of fuzz_util.h (FIFO, directory, devices, symlinks).
#include "fuzz_util.h"

int ch_fuzz_idx(const uint8_t* data, size_t size) {
  static chfuzz::MemFile file("ch_fuzz_idx");
  static chfuzz::SpecialFiles specials;
  if (const std::string* special = specials.pick(data, size)) {
    ch_array* a = nullptr;
    chfuzz::check_refused(ch_datasets_read_idx(&a, special->c_str(), CH_FLOAT32, 1.0),
                          "ch_datasets_read_idx");
    if (a != nullptr) std::abort();
    return 0;
  }
  const std::string& path = file.write(data, size);
  for (ch_dtype dtype : {CH_FLOAT32, CH_INT32}) {
    ch_array* a = nullptr;
    ch_status st = ch_datasets_read_idx(&a, path.c_str(), dtype, dtype == CH_INT32 ? 1.0 : 0.5);
    CH_FUZZ_CHECK(st);
    if (st == CH_OK) {
      // The array holds what the header declared: touch every byte.
      volatile unsigned char sum = 0;
      const auto* p = static_cast<const unsigned char*>(ch_array_data(a));
      for (size_t i = 0; i < ch_array_nbytes(a); ++i) sum = static_cast<unsigned char>(sum + p[i]);
      ch_array_release(a);
    } else if (a != nullptr) {
      std::abort();  // a failure leaves *out untouched
    }
  }
  return 0;
}

CH_FUZZ_ENTRY(ch_fuzz_idx)
