// chainerc's C++ API: ch::datasets (over <ch/datasets.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_DATASETS_HPP
#define CH_DATASETS_HPP

#include <ch/array.hpp>

namespace ch {
namespace datasets {
/// Read an IDX file (plain or gzip): float32/float64 values times `scale`, or int32 labels.
inline Array read_idx(const std::string& path, ch_dtype dtype = CH_FLOAT32, double scale = 1.0) {
  ch_array* out = nullptr;
  check(ch_datasets_read_idx(&out, path.c_str(), dtype, scale));
  return Array::adopt(out);
}
}  // namespace datasets

}  // namespace ch

#endif  // CH_DATASETS_HPP
