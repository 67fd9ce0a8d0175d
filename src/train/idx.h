// IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed.
#pragma once

#include <string>

#include "core/array.h"

namespace chainerc {

// See ch_datasets_read_idx.
Array read_idx(const std::string& path, DType dtype, double scale, const char* who);

}  // namespace chainerc
