#include "idx.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/open_file.h"

namespace chainerc {
namespace {

// Closes the gz stream on every path.
struct GzFile {
  gzFile f = nullptr;
  ~GzFile() {
    if (f) gzclose(f);
  }
};

// Reads up to n bytes; returns the count read (short at the end of the data).
size_t read_bytes(gzFile f, void* dst, size_t n, const std::string& path, const char* who) {
  size_t done = 0;
  char* p = static_cast<char*>(dst);
  while (done < n) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, size_t{1} << 30));
    int got = gzread(f, p + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      fail(CH_ERR_IO, who, ": cannot read '", path,
           "': ", code == Z_ERRNO ? std::strerror(errno) : msg, " (corrupt gzip stream?)");
    }
    if (got == 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      if (code != Z_OK && code != Z_BUF_ERROR)
        fail(CH_ERR_IO, who, ": cannot read '", path, "': ", msg);
      if (code == Z_BUF_ERROR)
        fail(CH_ERR_IO, who, ": '", path, "' ends in the middle of a gzip stream (truncated file)");
      break;
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

const char* type_name(unsigned code) {
  switch (code) {
    case 0x08:
      return "ubyte";
    case 0x09:
      return "byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
  }
  return "?";
}

int type_size(unsigned code) {
  switch (code) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
  }
  return 0;
}

// The big-endian element i of type `code` as double.
inline double element(const unsigned char* p, unsigned code) {
  switch (code) {
    case 0x08:
      return p[0];
    case 0x09:
      return static_cast<signed char>(p[0]);
    case 0x0B:
      return static_cast<int16_t>(static_cast<uint16_t>((p[0] << 8) | p[1]));
    case 0x0C:
      return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                                  (uint32_t{p[2]} << 8) | p[3]);
    case 0x0D: {
      uint32_t u = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case 0x0E: {
      uint64_t u = 0;
      for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
      double d;
      std::memcpy(&d, &u, 8);
      return d;
    }
  }
  return 0;
}

template <typename T>
void convert(const unsigned char* src, T* dst, int64_t n, unsigned code, double scale) {
  const int size = type_size(code);
  if (code == 0x08) {  // the common case (pixels, labels): a tight loop
    const T s = static_cast<T>(scale);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]) * s;
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(element(src + i * size, code) * scale);
}

}  // namespace

Array read_idx(const std::string& path, DType dtype, double scale, const char* who) {
  if (!std::isfinite(scale))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": scale is ", scale, "; it must be finite");
  if (dtype == DType::Int32 && scale != 1.0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": scale is ", scale,
         " but int32 output keeps the values (scale must be 1)");
  // Only a regular file, opened without blocking (a FIFO without a writer
  // would block in open): its size bounds what the header may declare.
  std::string why;
  struct stat st {};
  const int fd = files::open_for_read(path, &why, &st);
  if (fd < 0) fail(CH_ERR_IO, who, ": cannot read '", path, "': ", why);
  GzFile gz;
  gz.f = gzdopen(fd, "rb");
  if (!gz.f) {
    ::close(fd);
    fail(CH_ERR_IO, who, ": cannot open '", path, "': gzdopen failed");
  }
  gzbuffer(gz.f, 1 << 17);
  unsigned char magic[4];
  size_t got = read_bytes(gz.f, magic, 4, path, who);
  if (got < 4)
    fail(CH_ERR_IO, who, ": '", path, "' is not an IDX file: it has only ", got, " bytes");
  if (magic[0] != 0 || magic[1] != 0 || type_size(magic[2]) == 0)
    fail(CH_ERR_IO, who, ": '", path, "' is not an IDX file: bad magic bytes ", int(magic[0]), " ",
         int(magic[1]), " ", int(magic[2]), " ", int(magic[3]),
         " (expected 0 0 <type 8, 9, 11, 12, 13 or 14> <ndim>)");
  const unsigned code = magic[2];
  const int ndim = magic[3];
  if (ndim < 1 || ndim > CH_MAX_NDIM)
    fail(CH_ERR_IO, who, ": '", path, "' has ", ndim, " dimensions; chainerc reads 1 to ",
         CH_MAX_NDIM);
  if (dtype == DType::Int32 && (code == 0x0D || code == 0x0E))
    fail(CH_ERR_DTYPE, who, ": '", path, "' holds ", type_name(code),
         " elements, which cannot be read as int32 (ask for float32 or float64)");
  if (!is_floating(dtype) && dtype != DType::Int32)
    fail(CH_ERR_DTYPE, who, ": unsupported dtype ", static_cast<int>(dtype));
  unsigned char dims_be[4 * CH_MAX_NDIM];
  got = read_bytes(gz.f, dims_be, 4 * static_cast<size_t>(ndim), path, who);
  if (got < 4 * static_cast<size_t>(ndim))
    fail(CH_ERR_IO, who, ": '", path, "' is truncated inside its header of ", ndim, " dimensions");
  Shape shape;
  int64_t count = 1;
  for (int i = 0; i < ndim; ++i) {
    const unsigned char* p = dims_be + 4 * i;
    int64_t d = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
    shape.push_back(d);
    if (d != 0 && count > (int64_t{1} << 40) / d)
      fail(CH_ERR_IO, who, ": '", path, "' declares the shape ", shape.to_string(),
           "..., too large to read");
    count *= d;
  }
  const size_t nbytes = static_cast<size_t>(count) * static_cast<size_t>(type_size(code));
  // Never trust the header: compare the size it declares with what the file
  // can hold before allocating. A plain file must hold exactly header + data
  // bytes; deflate expands at most 1032:1, so a gzip file of c bytes holds at
  // most 1032 * c bytes of data.
  const size_t header_bytes = 4 + 4 * static_cast<size_t>(ndim);
  {
    const auto file_bytes = static_cast<size_t>(st.st_size);
    if (gzdirect(gz.f)) {
      if (file_bytes < header_bytes + nbytes)
        fail(CH_ERR_IO, who, ": '", path, "' is truncated: its header declares shape ",
             shape.to_string(), " of ", type_name(code), " (", nbytes, " bytes of data) but only ",
             file_bytes - std::min(file_bytes, header_bytes), " bytes follow (the file has ",
             file_bytes, " bytes)");
    } else if (nbytes / 1032 > file_bytes) {
      fail(CH_ERR_IO, who, ": '", path, "' is truncated: its header declares shape ",
           shape.to_string(), " of ", type_name(code), " (", nbytes,
           " bytes of data) but the gzip file has ", file_bytes,
           " bytes, which decompress to at most ", file_bytes * 1032, " bytes");
    }
  }
  // Read in growing chunks, so that what is allocated follows the data that
  // is really there (a gzip stream, or a file truncated meanwhile, may still
  // end early). Each chunk
  // is a block of its own, kept until the conversion: one growing buffer
  // copied itself at every step and touched about twice the data's bytes in
  // fresh pages (Fashion-MNIST's 47 MB of training images: 110 MB), which on
  // a VM is most of the read.
  std::vector<std::vector<unsigned char>> chunks;
  got = 0;
  while (got < nbytes) {
    const size_t want = std::min(nbytes - got, std::max<size_t>(got, size_t{1} << 20));
    std::vector<unsigned char>& chunk = chunks.emplace_back(want);
    const size_t n = read_bytes(gz.f, chunk.data(), want, path, who);
    chunk.resize(n);
    got += n;
    if (n < want) break;
  }
  if (got < nbytes)
    fail(CH_ERR_IO, who, ": '", path, "' is truncated: its header declares shape ",
         shape.to_string(), " of ", type_name(code), " (", nbytes, " bytes of data) but only ", got,
         " bytes follow");
  unsigned char extra[64];
  size_t more = read_bytes(gz.f, extra, sizeof extra, path, who);
  if (more > 0)
    fail(CH_ERR_IO, who, ": '", path, "' has data after the ", count,
         " elements its header declares (shape ", shape.to_string(),
         "): the extents do not match the file size");
  Array out = Array::empty(dtype, shape);
  // Every chunk but the last is a power of two of at least 1 MiB: whole
  // elements of any IDX type.
  const int64_t size = type_size(code);
  int64_t at = 0;  // elements converted
  for (std::vector<unsigned char>& chunk : chunks) {
    const int64_t n = static_cast<int64_t>(chunk.size()) / size;
    switch (dtype) {
      case DType::Float32:
        convert(chunk.data(), out.data<float>() + at, n, code, scale);
        break;
      case DType::Float64:
        convert(chunk.data(), out.data<double>() + at, n, code, scale);
        break;
      case DType::Int32:
        convert(chunk.data(), out.data<int32_t>() + at, n, code, 1.0);
        break;
    }
    at += n;
    std::vector<unsigned char>().swap(chunk);  // converted: its memory goes back now
  }
  return out;
}

}  // namespace chainerc
