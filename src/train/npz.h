// NumPy .npy / .npz files (NPY format 1.0 written; 1.0, 2.0 and 3.0 read),
// zip containers through libzip, and the checkpoints built on them.
#pragma once

#include <string>
#include <vector>

#include "function_set.h"
#include "optimizer.h"

namespace chainerc::npz {

// A decoded .npy entry: its dtype descriptor ("<f4"), shape and raw bytes in
// the file's byte order.
struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
  int64_t count() const;
};

// Encoded .npy bytes of an array (float32 '<f4', float64 '<f8', int32 '<i4').
std::string encode(const Array& a);
// Encoded .npy bytes of a 0-d int64 ('<i8') value (Chainer's t and epoch).
std::string encode_int64_scalar(int64_t v);
// Parses .npy bytes; Error(CH_ERR_IO) naming `where` for malformed data.
NpyArray decode(std::string&& bytes, const std::string& where);

// Writes entries "<name>.npy" (name -> npy bytes) to `path`, replacing it.
void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& entries, bool compress,
               const char* who);

// An open .npz file.
class Reader {
 public:
  Reader(const std::string& path, const char* who);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  bool has(const std::string& key) const;
  // The entry `key` decoded; Error(CH_ERR_INVALID_ARGUMENT) if absent, CH_ERR_IO if malformed.
  NpyArray read(const std::string& key) const;

 private:
  std::string path_;
  const char* who_;
  void* zip_ = nullptr;
};

// The decoded entry as an Array of `dtype` with `shape` ("<f4"/">f4" for
// float32...); Error naming path, key and both shapes/dtypes otherwise.
Array to_array(const NpyArray& a, const std::string& path, const std::string& key, DType dtype,
               const Shape& shape, const char* who);
// The decoded entry as an Array of the dtype it holds ('<i8' narrowed to int32).
Array to_array_any(const NpyArray& a, const std::string& path, const std::string& key,
                   const char* who);

void save_function_set(const FunctionSet& set, const std::string& path, bool compress,
                       const char* who);
void load_function_set(const FunctionSet& set, const std::string& path, const char* who);
void save_optimizer(const Optimizer& opt, const std::string& path, bool compress, const char* who);
void load_optimizer(Optimizer& opt, const std::string& path, const char* who);

}  // namespace chainerc::npz
