// NumPy .npy / .npz files (NPY format 1.0 written; 1.0, 2.0 and 3.0 read) and
// zip containers through libzip: the codec. What a model or an optimizer
// writes with it is checkpoint.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/array.h"

namespace chainerc::npz {

// A decoded .npy entry: its dtype descriptor ("<f4"), shape and raw bytes in
// the file's byte order.
struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
  int64_t count() const;
};

// The header of .npy bytes: dtype descriptor, shape, and where the data
// starts and how many bytes it takes.
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
  size_t data_bytes = 0;
};

// Encoded .npy bytes of an array (float32 '<f4', float64 '<f8', int32 '<i4').
std::string encode(const Array& a);
// Encoded .npy bytes of a 0-d int64 ('<i8') value (Chainer's t and epoch).
std::string encode_int64_scalar(int64_t v);
// Parses .npy bytes; Error(CH_ERR_IO) naming `where` for malformed data.
NpyArray decode(std::string&& bytes, const std::string& where);
// Parses the header at the start of `bytes` (the data may be absent or
// partial); Error(CH_ERR_IO) naming `where` when malformed or incomplete.
NpyHeader parse_header(const std::string& bytes, const std::string& where);
// The size of the magic, version, length and header at the start of `bytes`,
// or 0 while fewer than 12 bytes are there to tell.
size_t header_size(const std::string& bytes);

// Writes entries "<name>.npy" (name -> npy bytes) to `path`, replacing it.
void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& entries, bool compress,
               const char* who);

// What a caller will accept for an entry: compared with the entry's .npy
// header as soon as it is read, before the data is inflated (a small file
// may declare a huge entry).
struct Target {
  DType dtype;
  Shape shape;
};

// An open .npz file (a regular file only; opened without blocking).
class Reader {
 public:
  Reader(const std::string& path, const char* who);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  bool has(const std::string& key) const;
  // The entry `key` decoded; Error(CH_ERR_INVALID_ARGUMENT) if absent, CH_ERR_IO if malformed;
  // with `target`, CH_ERR_DTYPE / CH_ERR_SHAPE (as to_array) before its data is read when the
  // header declares another dtype or shape.
  NpyArray read(const std::string& key, const Target* target = nullptr) const;

 private:
  std::string path_;
  const char* who_;
  void* zip_ = nullptr;
  // The file's size (the largest value for a non-regular file).
  uint64_t file_bytes_ = UINT64_MAX;
};

// The decoded entry as an Array of `dtype` with `shape` ("<f4"/">f4" for
// float32...); Error naming path, key and both shapes/dtypes otherwise.
Array to_array(const NpyArray& a, const std::string& path, const std::string& key, DType dtype,
               const Shape& shape, const char* who);
// Error (CH_ERR_DTYPE, CH_ERR_SHAPE) as to_array unless an entry of `descr`
// and shape `have` can be read into `dtype` and `shape`.
void check_target(const std::string& descr, const std::vector<int64_t>& have,
                  const std::string& path, const std::string& key, DType dtype, const Shape& shape,
                  const char* who);
// The decoded entry as an Array of the dtype it holds ('<i8' narrowed to int32).
Array to_array_any(const NpyArray& a, const std::string& path, const std::string& key,
                   const char* who);

}  // namespace chainerc::npz
