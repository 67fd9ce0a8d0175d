#include "npz_codec.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/open_file.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "chainerc's .npz code assumes a little-endian host"
#endif

namespace chainerc::npz {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string encode_raw(const std::string& descr, const std::vector<int64_t>& shape,
                       const void* data, size_t nbytes) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_str(shape) + ", }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a
  // multiple of 64 bytes and ended by a newline, as NumPy writes it.
  size_t total = 10 + header.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  header.append(padded - total, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  uint16_t len = static_cast<uint16_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  out += header;
  out.append(static_cast<const char*>(data), nbytes);
  return out;
}

const char* descr_of(DType d) {
  switch (d) {
    case DType::Float32:
      return "<f4";
    case DType::Float64:
      return "<f8";
    case DType::Int32:
      return "<i4";
  }
  return "?";
}

// The value of `key` in the header dict: the text after "'key':".
size_t find_key(const std::string& h, const char* key) {
  for (const char q : {'\'', '"'}) {
    std::string k = std::string(1, q) + key + q;
    size_t at = h.find(k);
    if (at == std::string::npos) continue;
    at += k.size();
    while (at < h.size() && (h[at] == ' ')) ++at;
    if (at < h.size() && h[at] == ':') return at + 1;
  }
  return std::string::npos;
}

size_t skip_spaces(const std::string& h, size_t at) {
  while (at < h.size() && (h[at] == ' ' || h[at] == '\t')) ++at;
  return at;
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  fail(CH_ERR_IO, where, ": not a valid .npy array: ", what);
}

int64_t itemsize_of(const std::string& descr) {
  if (descr.size() < 3) return 0;
  try {
    return std::stoll(descr.substr(2));
  } catch (...) {
    return 0;
  }
}

std::string zip_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

std::string dims(const Shape& s) {
  std::vector<int64_t> v(s.data(), s.data() + s.ndim());
  return shape_str(v);
}

}  // namespace

int64_t NpyArray::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string encode(const Array& any) {
  // An array on a GPU is written from a host copy (a GPU model saved as is).
  const Array a = any.device().is_cpu() ? any : any.to_device(Device{});
  std::vector<int64_t> shape(a.shape().data(), a.shape().data() + a.ndim());
  return encode_raw(descr_of(a.dtype()), shape, a.raw(), a.nbytes());
}

std::string encode_int64_scalar(int64_t v) { return encode_raw("<i8", {}, &v, sizeof v); }

namespace {
// The data that follows a header must be exactly what the header declares.
void check_data_size(const NpyHeader& h, size_t have, const std::string& where) {
  const size_t need = h.data_bytes;
  if (have < need)
    bad(where, "the data is truncated: " + shape_str(h.shape) + " '" + h.descr + "' needs " +
                   std::to_string(need) + " bytes but the entry has " + std::to_string(have));
  if (have > need)
    bad(where, "the entry has " + std::to_string(have - need) + " bytes after the data of shape " +
                   shape_str(h.shape));
}
}  // namespace

size_t header_size(const std::string& b) {
  if (b.size() < 12) return 0;
  const int major = static_cast<unsigned char>(b[6]);
  size_t len = 0;
  if (major == 1) {
    len = static_cast<unsigned char>(b[8]) |
          (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    return 10 + len;
  }
  for (int i = 3; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(b[8 + i]);
  return 12 + len;
}

NpyHeader parse_header(const std::string& b, const std::string& where) {
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0)
    bad(where, "the NPY magic bytes are missing");
  const int major = static_cast<unsigned char>(b[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) bad(where, "the header is truncated");
    header_len = 0;
    for (int i = 3; i >= 0; --i)
      header_len = (header_len << 8) | static_cast<unsigned char>(b[8 + i]);
    start = 12;
  } else {
    bad(where, "unknown NPY format version " + std::to_string(major));
  }
  if (b.size() < start + header_len)
    bad(where, "the header needs " + std::to_string(header_len) + " bytes but the entry has " +
                   std::to_string(b.size() - start));
  const std::string h = b.substr(start, header_len);
  NpyHeader out;
  // descr
  size_t at = find_key(h, "descr");
  if (at == std::string::npos) bad(where, "the header has no 'descr'");
  at = skip_spaces(h, at);
  if (at >= h.size() || (h[at] != '\'' && h[at] != '"'))
    bad(where, "'descr' is not a string (structured dtypes are not supported)");
  size_t end = h.find(h[at], at + 1);
  if (end == std::string::npos) bad(where, "'descr' is not terminated");
  out.descr = h.substr(at + 1, end - at - 1);
  // fortran_order
  at = find_key(h, "fortran_order");
  if (at == std::string::npos) bad(where, "the header has no 'fortran_order'");
  at = skip_spaces(h, at);
  bool fortran = h.compare(at, 4, "True") == 0;
  if (!fortran && h.compare(at, 5, "False") != 0)
    bad(where, "'fortran_order' is neither True nor False");
  // shape
  at = find_key(h, "shape");
  if (at == std::string::npos) bad(where, "the header has no 'shape'");
  at = skip_spaces(h, at);
  if (at >= h.size() || h[at] != '(') bad(where, "'shape' is not a tuple");
  end = h.find(')', at);
  if (end == std::string::npos) bad(where, "'shape' is not terminated");
  std::string dims_text = h.substr(at + 1, end - at - 1);
  size_t pos = 0;
  while (true) {
    pos = skip_spaces(dims_text, pos);
    if (pos >= dims_text.size()) break;
    size_t stop = pos;
    while (stop < dims_text.size() && dims_text[stop] >= '0' && dims_text[stop] <= '9') ++stop;
    if (stop == pos || stop - pos > 15)
      bad(where, "'shape' " + h.substr(at, end - at + 1) + " is not a tuple of sizes");
    out.shape.push_back(std::stoll(dims_text.substr(pos, stop - pos)));
    pos = skip_spaces(dims_text, stop);
    if (pos < dims_text.size()) {
      if (dims_text[pos] != ',')
        bad(where, "'shape' " + h.substr(at, end - at + 1) + " is not a tuple of sizes");
      ++pos;
    }
  }
  if (out.shape.size() > CH_MAX_NDIM)
    bad(where, "'shape' " + shape_str(out.shape) + " has more than " + std::to_string(CH_MAX_NDIM) +
                   " dimensions");
  int64_t count = 1;
  for (int64_t d : out.shape) {
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / 16 / d)
      bad(where, "'shape' is too large");
    count *= d;
  }
  if (fortran && out.shape.size() > 1 && count > 1)
    fail(CH_ERR_UNSUPPORTED, where, ": Fortran-order arrays of shape ", shape_str(out.shape),
         " are not supported (save a C-order array)");
  int64_t item = itemsize_of(out.descr);
  if (item <= 0 || item > 16) bad(where, "unsupported dtype descriptor '" + out.descr + "'");
  out.data_offset = start + header_len;
  out.data_bytes = static_cast<size_t>(count * item);
  return out;
}

NpyArray decode(std::string&& b, const std::string& where) {
  NpyHeader h = parse_header(b, where);
  check_data_size(h, b.size() - h.data_offset, where);
  NpyArray out;
  out.descr = std::move(h.descr);
  out.shape = std::move(h.shape);
  b.erase(0, h.data_offset);  // the data, without another copy
  out.data = std::move(b);
  return out;
}

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& entries, bool compress,
               const char* who) {
  std::set<std::string> seen;
  for (const auto& e : entries) {
    if (e.first.empty()) fail(CH_ERR_INVALID_ARGUMENT, who, ": an .npz key is empty");
    if (!seen.insert(e.first).second)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": the key '", e.first,
           "' appears twice; .npz keys must be distinct");
  }
  if (entries.empty()) {
    // libzip removes an archive left without entries; NumPy writes the
    // end-of-central-directory record alone.
    std::string why;
    const int fd = files::open_for_write(path, 0666, &why);
    if (fd < 0) fail(CH_ERR_IO, who, ": cannot write '", path, "': ", why);
    static const char eocd[22] = {'P', 'K', 5, 6};
    ssize_t w;
    do {
      w = ::write(fd, eocd, sizeof eocd);
    } while (w < 0 && errno == EINTR);
    const int saved = errno;
    bool ok = w == static_cast<ssize_t>(sizeof eocd);
    ok = ::close(fd) == 0 && ok;
    if (!ok)
      fail(CH_ERR_IO, who, ": cannot write '", path,
           "': ", w < 0 ? std::strerror(saved) : "short write");
    return;
  }
  // libzip writes a temporary file and renames it over `path` (nothing that
  // could block), but a FIFO or a device there would be replaced: refuse
  // anything but a regular file, as the empty archive above does.
  {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      fail(CH_ERR_IO, who, ": cannot write '", path, "': it is ", files::type_name(st.st_mode),
           ", not a regular file");
  }
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) fail(CH_ERR_IO, who, ": cannot create '", path, "': ", zip_message(err));
  try {
    for (const auto& [key, bytes] : entries) {
      zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
      if (!src) fail(CH_ERR_IO, who, ": cannot add '", key, "' to '", path, "': ", zip_strerror(z));
      std::string name = key + ".npy";
      zip_int64_t idx = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
      if (idx < 0) {
        zip_source_free(src);
        fail(CH_ERR_IO, who, ": cannot add '", key, "' to '", path, "': ", zip_strerror(z));
      }
      if (zip_set_file_compression(z, static_cast<zip_uint64_t>(idx),
                                   compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0)
        fail(CH_ERR_IO, who, ": cannot set the compression of '", key, "' in '", path,
             "': ", zip_strerror(z));
    }
  } catch (...) {
    zip_discard(z);
    throw;
  }
  if (zip_close(z) != 0) {
    std::string msg = zip_strerror(z);
    zip_discard(z);
    fail(CH_ERR_IO, who, ": cannot write '", path, "': ", msg);
  }
}

Reader::Reader(const std::string& path, const char* who) : path_(path), who_(who) {
  // A regular file only, opened without blocking (a FIFO without a writer
  // would block in open): its size bounds what the directory may declare.
  std::string why;
  struct stat st {};
  const int fd = files::open_for_read(path, &why, &st);
  if (fd < 0) fail(CH_ERR_IO, who, ": cannot read '", path, "': ", why);
  file_bytes_ = static_cast<uint64_t>(st.st_size);
  int err = 0;
  zip_t* z = zip_fdopen(fd, 0, &err);  // owns fd from here on success
  if (!z) {
    ::close(fd);
    fail(CH_ERR_IO, who, ": cannot read '", path, "' as an .npz (zip) file: ", zip_message(err));
  }
  zip_ = z;
}

Reader::~Reader() {
  if (zip_) zip_discard(static_cast<zip_t*>(zip_));
}

bool Reader::has(const std::string& key) const {
  return zip_name_locate(static_cast<zip_t*>(zip_), (key + ".npy").c_str(), 0) >= 0;
}

NpyArray Reader::read(const std::string& key, const Target* target) const {
  zip_t* z = static_cast<zip_t*>(zip_);
  std::string name = key + ".npy";
  zip_int64_t idx = zip_name_locate(z, name.c_str(), 0);
  if (idx < 0) {
    std::string keys;
    zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n && i < 20; ++i) {
      const char* nm = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
      if (!nm) continue;
      std::string s = nm;
      if (s.size() > 4 && s.compare(s.size() - 4, 4, ".npy") == 0) s.resize(s.size() - 4);
      keys += (keys.empty() ? "" : ", ") + s;
    }
    if (n > 20) keys += ", ...";
    fail(CH_ERR_INVALID_ARGUMENT, who_, ": '", path_, "' has no key '", key, "' (it has ",
         keys.empty() ? "none" : keys, ")");
  }
  const std::string where = std::string(who_) + ": '" + path_ + "' key '" + key + "'";
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, static_cast<zip_uint64_t>(idx), 0, &st) != 0)
    fail(CH_ERR_IO, where, ": ", zip_strerror(z));
  // Never trust the directory: its sizes must fit in the file (compressed)
  // and in what deflate can produce from them (1032:1) before anything is
  // reserved, and the entry's own .npy header must agree with them.
  const bool sized = (st.valid & ZIP_STAT_SIZE) != 0;
  if (sized && (st.valid & ZIP_STAT_COMP_SIZE)) {
    if (st.comp_size > file_bytes_)
      fail(CH_ERR_IO, where, ": the directory says the entry has ", st.comp_size,
           " compressed bytes but the file has only ", file_bytes_);
    const bool method = (st.valid & ZIP_STAT_COMP_METHOD) != 0;
    if (method && st.comp_method == ZIP_CM_STORE && st.size != st.comp_size)
      fail(CH_ERR_IO, where, ": the directory says the stored entry has ", st.size,
           " bytes but it occupies ", st.comp_size);
    if (method && st.comp_method == ZIP_CM_DEFLATE && st.size / 1032 > st.comp_size + 1)
      fail(CH_ERR_IO, where, ": the directory says the entry has ", st.size,
           " bytes, more than its ", st.comp_size, " compressed bytes can hold");
  }
  zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(idx), 0);
  if (!f) fail(CH_ERR_IO, where, ": cannot open the entry: ", zip_strerror(z));
  std::string bytes;
  std::string err;
  try {
    char buf[1 << 16];
    bool header_checked = false;
    while (true) {
      zip_int64_t got = zip_fread(f, buf, sizeof buf);  // reading to the end checks the CRC
      if (got < 0) {
        err = zip_error_strerror(zip_file_get_error(f));
        break;
      }
      if (got == 0) break;
      bytes.append(buf, static_cast<size_t>(got));
      if (sized && bytes.size() > st.size)
        fail(CH_ERR_IO, where, ": the entry has more than the ", st.size,
             " bytes the directory says");
      const size_t hs = header_checked ? 0 : header_size(bytes);
      if (hs > 0 && hs <= bytes.size()) {
        // The .npy header is complete: what it declares must be what the
        // caller takes and the entry's size; only then is room made for all.
        NpyHeader h = parse_header(bytes, where);
        if (target) check_target(h.descr, h.shape, path_, key, target->dtype, target->shape, who_);
        if (sized) {
          check_data_size(h, st.size - std::min<size_t>(st.size, h.data_offset), where);
          bytes.reserve(std::min<zip_uint64_t>(st.size, zip_uint64_t{1} << 30));
        }
        header_checked = true;
      }
    }
  } catch (...) {
    zip_fclose(f);
    throw;
  }
  zip_fclose(f);
  if (!err.empty()) fail(CH_ERR_IO, where, ": the entry is corrupt or truncated: ", err);
  if ((st.valid & ZIP_STAT_SIZE) && bytes.size() != st.size)
    fail(CH_ERR_IO, where, ": the entry has ", bytes.size(), " bytes but the directory says ",
         st.size);
  if (st.valid & ZIP_STAT_CRC) {
    // libzip does not check the CRC of every entry (stored ones): do it here.
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < bytes.size(); at += (1u << 30)) {
      uInt n = static_cast<uInt>(std::min<size_t>(bytes.size() - at, 1u << 30));
      crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), n);
    }
    if (crc != st.crc)
      fail(CH_ERR_IO, where, ": the entry is corrupt: its CRC-32 is ", crc,
           " but the directory says ", st.crc);
  }
  return decode(std::move(bytes), where);
}

namespace {

// The native dtype a descriptor denotes, and whether it is byte-swapped.
bool parse_descr(const std::string& d, char* kind, int* size, bool* swap) {
  if (d.size() < 3) return false;
  char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return false;
  *kind = d[1];
  *size = static_cast<int>(itemsize_of(d));
  *swap = order == '>' && *size > 1;
  return true;
}

void swap_bytes(char* p, int64_t n, int size) {
  for (int64_t i = 0; i < n; ++i) std::reverse(p + i * size, p + (i + 1) * size);
}

}  // namespace

Array to_array_any(const NpyArray& a, const std::string& path, const std::string& key,
                   const char* who) {
  char kind;
  int size;
  bool swap;
  if (!parse_descr(a.descr, &kind, &size, &swap))
    fail(CH_ERR_DTYPE, who, ": '", path, "' key '", key, "' has dtype '", a.descr,
         "', which chainerc cannot read");
  Shape shape;
  for (int64_t d : a.shape) shape.push_back(d);
  std::string swapped;
  if (swap) {
    swapped = a.data;
    swap_bytes(swapped.data(), a.count(), size);
  }
  const std::string& data = swap ? swapped : a.data;
  DType dt;
  if (kind == 'f' && size == 4) {
    dt = DType::Float32;
  } else if (kind == 'f' && size == 8) {
    dt = DType::Float64;
  } else if (kind == 'i' && size == 4) {
    dt = DType::Int32;
  } else if (kind == 'i' && size == 8) {
    Array out = Array::empty(DType::Int32, shape);
    int32_t* o = out.data<int32_t>();
    for (int64_t i = 0; i < a.count(); ++i) {
      int64_t v;
      std::memcpy(&v, data.data() + i * 8, 8);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        fail(CH_ERR_DTYPE, who, ": '", path, "' key '", key, "' is int64 and element ", i, " (", v,
             ") does not fit in int32");
      o[i] = static_cast<int32_t>(v);
    }
    return out;
  } else {
    fail(CH_ERR_DTYPE, who, ": '", path, "' key '", key, "' has dtype '", a.descr,
         "'; chainerc reads float32, float64, int32 and int64");
  }
  Array out = Array::empty(dt, shape);
  if (out.nbytes()) std::memcpy(out.raw(), data.data(), out.nbytes());
  return out;
}

Array to_array(const NpyArray& a, const std::string& path, const std::string& key, DType dtype,
               const Shape& shape, const char* who) {
  check_target(a.descr, a.shape, path, key, dtype, shape, who);
  return to_array_any(a, path, key, who);
}

void check_target(const std::string& descr, const std::vector<int64_t>& have,
                  const std::string& path, const std::string& key, DType dtype, const Shape& shape,
                  const char* who) {
  char kind;
  int size;
  bool swap;
  if (!parse_descr(descr, &kind, &size, &swap) ||
      !((kind == 'f' && size == 4 && dtype == DType::Float32) ||
        (kind == 'f' && size == 8 && dtype == DType::Float64) ||
        (kind == 'i' && size == 4 && dtype == DType::Int32)))
    fail(CH_ERR_DTYPE, who, ": '", path, "' key '", key, "' has dtype '", descr,
         "' but the target is ", dtype_name(dtype), " ('", descr_of(dtype), "')");
  std::vector<int64_t> want(shape.data(), shape.data() + shape.ndim());
  if (have != want)
    fail(CH_ERR_SHAPE, who, ": '", path, "' key '", key, "' has shape ", shape_str(have),
         " but the target has shape ", dims(shape));
}

}  // namespace chainerc::npz
