// ch_datasets_read_idx: Fashion-MNIST (Debian's dataset-fashion-mnist, when
// installed), IDX files of every element type written by the test, plain
// and gzip, and malformed files.
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "train_test_util.h"

using namespace train_test;

namespace {

class DatasetsTest : public CapiTest {};

const char* kFashion = "/usr/share/datasets/fashion-mnist";

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// IDX bytes: magic 0 0 type ndim, big-endian extents, then `data` as given.
std::string idx(unsigned type, std::vector<uint32_t> dims, const std::string& data) {
  std::string out;
  out += '\0';
  out += '\0';
  out += static_cast<char>(type);
  out += static_cast<char>(dims.size());
  for (uint32_t d : dims) {
    out += static_cast<char>(d >> 24);
    out += static_cast<char>((d >> 16) & 0xff);
    out += static_cast<char>((d >> 8) & 0xff);
    out += static_cast<char>(d & 0xff);
  }
  return out + data;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST_F(DatasetsTest, FashionMnist) {
  std::string dir = kFashion;
  if (!exists(dir + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << dir
                 << " (Debian package dataset-fashion-mnist)";
  struct {
    const char* images;
    const char* labels;
    int64_t n;
  } splits[] = {{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 60000},
                {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 10000}};
  for (const auto& s : splits) {
    SCOPED_TRACE(s.images);
    Arr x, y;
    ASSERT_CH_OK(
        ch_datasets_read_idx(x.out(), (dir + "/" + s.images).c_str(), CH_FLOAT32, 1.0 / 255));
    EXPECT_EQ(shape_of(x), (std::vector<int64_t>{s.n, 28, 28}));
    EXPECT_EQ(ch_array_dtype(x), CH_FLOAT32);
    const float* px = static_cast<const float*>(ch_array_data(x));
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < ch_array_size(x); ++i) {
      lo = std::min(lo, px[i]);
      hi = std::max(hi, px[i]);
    }
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);  // 255 / 255
    ASSERT_CH_OK(ch_datasets_read_idx(y.out(), (dir + "/" + s.labels).c_str(), CH_INT32, 1.0));
    EXPECT_EQ(shape_of(y), (std::vector<int64_t>{s.n}));
    const int32_t* py = static_cast<const int32_t*>(ch_array_data(y));
    std::vector<int64_t> counts(10, 0);
    for (int64_t i = 0; i < s.n; ++i) {
      ASSERT_GE(py[i], 0);
      ASSERT_LE(py[i], 9);
      ++counts[static_cast<size_t>(py[i])];
    }
    // Fashion-MNIST is balanced: n / 10 examples of every class.
    for (int64_t c : counts) EXPECT_EQ(c, s.n / 10);
  }
}

TEST_F(DatasetsTest, EveryElementTypePlainAndGzip) {
  struct Case {
    unsigned type;
    std::string data;  // big-endian
    std::vector<double> values;
  } cases[] = {
      {0x08, std::string("\x00\x01\xff\x80\x02\x03", 6), {0, 1, 255, 128, 2, 3}},
      {0x09, std::string("\x00\x01\xff\x80\x02\x7f", 6), {0, 1, -1, -128, 2, 127}},
      {0x0B,
       std::string("\x00\x01\xff\xff\x80\x00\x01\x00\x00\x00\x7f\xff", 12),
       {1, -1, -32768, 256, 0, 32767}},
      {0x0C,
       std::string("\x00\x00\x00\x01\xff\xff\xff\xff\x80\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00"
                   "\x00\x7f\xff\xff\xff",
                   24),
       {1, -1, -2147483648.0, 65536, 0, 2147483647.0}},
      {0x0D,
       std::string("\x3f\x80\x00\x00\xc0\x00\x00\x00\x3f\x00\x00\x00\x00\x00\x00\x00\x41\x20\x00"
                   "\x00\x42\xc8\x00\x00",
                   24),
       {1, -2, 0.5, 0, 10, 100}},
      {0x0E,
       std::string("\x3f\xf0\x00\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00\x3f\xe0\x00"
                   "\x00\x00\x00\x00\x00"
                   "\x00\x00\x00\x00\x00\x00\x00\x00\x40\x24\x00\x00\x00\x00\x00\x00\x40\x59\x00"
                   "\x00\x00\x00\x00\x00",
                   48),
       {1, -2, 0.5, 0, 10, 100}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("type " + std::to_string(c.type));
    std::string bytes = idx(c.type, {2, 3}, c.data);
    std::string plain = temp_path("t.idx"), gz = temp_path("t.idx.gz");
    write_file(plain, bytes);
    write_gz(gz, bytes);
    for (const std::string& path : {plain, gz}) {
      Arr a;
      ASSERT_CH_OK(ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT64, 1.0));
      EXPECT_EQ(shape_of(a), (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(values(a), c.values);
      ASSERT_CH_OK(ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT32, 0.5));
      std::vector<double> half;
      for (double v : c.values) half.push_back(static_cast<float>(v * 0.5));
      EXPECT_EQ(values(a), half);
      if (c.type <= 0x0C) {
        ASSERT_CH_OK(ch_datasets_read_idx(a.out(), path.c_str(), CH_INT32, 1.0));
        EXPECT_EQ(ch_array_dtype(a), CH_INT32);
        EXPECT_EQ(values(a), c.values);
      } else {
        EXPECT_CH_ERR(CH_ERR_DTYPE, ch_datasets_read_idx(a.out(), path.c_str(), CH_INT32, 1.0));
        EXPECT_TRUE(contains(ch_error_message(), "float")) << ch_error_message();
      }
    }
  }
}

// Data of several MiB arrives in chunks (1, 1, 2, 4 MiB, ...; idx.cpp) that
// are converted one after another: every element lands at its place, for a
// byte type and for an 8-byte one, plain and gzip.
TEST_F(DatasetsTest, DataOfSeveralMebibytesConvertsAcrossChunks) {
  // 5.6 MB of float64 (chunks of 1, 1, 2 MiB and the rest) and 2.5 MB of
  // unsigned bytes (1, 1 MiB and the rest).
  auto double_at = [](uint32_t i) { return double(i % 1000) - 0.25 * double(i % 7); };
  auto byte_at = [](uint32_t i) { return static_cast<uint8_t>(i * 2654435761u >> 24); };
  struct Case {
    unsigned type;
    uint32_t n;
  } cases[] = {{0x0E, 700000}, {0x08, 2500000}};
  for (const Case& c : cases) {
    SCOPED_TRACE("type " + std::to_string(c.type));
    std::string data;
    for (uint32_t i = 0; i < c.n; ++i) {
      if (c.type == 0x08) {
        data += static_cast<char>(byte_at(i));
        continue;
      }
      const double v = double_at(i);
      uint64_t u;
      std::memcpy(&u, &v, 8);
      for (int b = 7; b >= 0; --b) data += static_cast<char>((u >> (8 * b)) & 0xff);
    }
    const std::string file = idx(c.type, {c.n / 100, 100}, data);
    const std::string plain = temp_path("big.idx"), gz = temp_path("big.idx.gz");
    write_file(plain, file);
    write_gz(gz, file);
    for (const std::string& path : {plain, gz}) {
      Arr a;
      ASSERT_CH_OK(ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT64, 1.0));
      EXPECT_EQ(shape_of(a), (std::vector<int64_t>{c.n / 100, 100}));
      const std::vector<double> got = values(a);
      ASSERT_EQ(got.size(), size_t{c.n});
      for (uint32_t i = 0; i < c.n; ++i) {
        const double want = c.type == 0x0E ? double_at(i) : double(byte_at(i));
        ASSERT_EQ(got[i], want) << "element " << i << " of " << path;
      }
    }
  }
}

TEST_F(DatasetsTest, MalformedFiles) {
  const std::string six(6, '\x01');
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  } cases[] = {
      {"empty", "", "only 0 bytes"},
      {"bad magic", std::string("\x01\x02\x08\x01\x00\x00\x00\x06", 8) + six, "bad magic"},
      {"unknown type", idx(0x0A, {6}, six), "bad magic"},
      {"zero dimensions", idx(0x08, {}, six), "0 dimensions"},
      {"too many dimensions", idx(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 6}, six), "9 dimensions"},
      {"truncated header", idx(0x08, {2, 3}, "").substr(0, 9), "truncated inside its header"},
      {"truncated data", idx(0x08, {2, 3}, six.substr(0, 4)), "only 4 bytes follow"},
      {"extra data", idx(0x08, {2, 3}, six + "zz"), "data after the 6 elements"},
      {"extents larger than data", idx(0x08, {60000, 28, 28}, six), "truncated"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    for (bool gz : {false, true}) {
      std::string path = temp_path(gz ? "bad.idx.gz" : "bad.idx");
      if (gz)
        write_gz(path, c.bytes);
      else
        write_file(path, c.bytes);
      Arr a;
      EXPECT_CH_ERR(CH_ERR_IO, ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT32, 1.0));
      EXPECT_TRUE(contains(ch_error_message(), c.message)) << ch_error_message();
      EXPECT_TRUE(contains(ch_error_message(), path)) << ch_error_message();
      EXPECT_EQ(a.get(), nullptr);
    }
  }
}

// A header is never trusted: a few bytes claiming 10^12 elements (or 8 * 10^8
// bytes, which would fit in memory) are refused by comparing the claim with the
// file's size before anything is allocated (under AddressSanitizer an
// allocation of that size would abort the test).
TEST_F(DatasetsTest, HugeClaimsAreRefusedBeforeAllocating) {
  struct Case {
    const char* what;
    unsigned type;
    std::vector<uint32_t> dims;
    const char* bytes;
  } cases[] = {
      {"10^12 ubyte", 0x08, {1000000, 1000000}, "1000000000000 bytes of data"},
      {"10^8 float64", 0x0E, {10000, 10000}, "800000000 bytes of data"},
      {"one extent of 2^32 - 1", 0x08, {0xffffffffu}, "4294967295 bytes of data"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    for (bool gz : {false, true}) {
      std::string path = temp_path(gz ? "huge.idx.gz" : "huge.idx");
      std::string bytes = idx(c.type, c.dims, std::string(16, '\x01'));
      if (gz)
        write_gz(path, bytes);
      else
        write_file(path, bytes);
      Arr a;
      EXPECT_CH_ERR(CH_ERR_IO, ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT32, 1.0));
      EXPECT_TRUE(contains(ch_error_message(), path)) << ch_error_message();
      EXPECT_TRUE(contains(ch_error_message(), c.bytes)) << ch_error_message();
      EXPECT_TRUE(
          contains(ch_error_message(), gz ? "decompress to at most" : "only 16 bytes follow"))
          << ch_error_message();
      EXPECT_EQ(a.get(), nullptr);
    }
  }
}

// A gzip stream whose claim is within deflate's 1032:1 ratio but whose data
// ends early: the reader allocates as the data arrives and reports the count.
TEST_F(DatasetsTest, GzipClaimWithinRatioButShortData) {
  std::string path = temp_path("short.idx.gz");
  std::string data(300000, '\0');
  uint32_t state = 12345;  // incompressible bytes: the claim stays within the ratio
  for (char& ch : data) {
    state = state * 1664525u + 1013904223u;
    ch = static_cast<char>(state >> 24);
  }
  write_gz(path, idx(0x08, {1000, 1000}, data));
  Arr a;
  EXPECT_CH_ERR(CH_ERR_IO, ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT32, 1.0));
  EXPECT_TRUE(contains(ch_error_message(), "only 300000 bytes follow")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), path)) << ch_error_message();
}

TEST_F(DatasetsTest, TruncatedAndCorruptGzip) {
  std::string bytes = idx(0x08, {100, 100}, std::string(10000, '\x07'));
  std::string path = temp_path("whole.idx.gz");
  write_gz(path, bytes);
  std::string gz = read_file(path);
  std::string cut = temp_path("cut.idx.gz");
  write_file(cut, gz.substr(0, gz.size() / 2));
  Arr a;
  EXPECT_CH_ERR(CH_ERR_IO, ch_datasets_read_idx(a.out(), cut.c_str(), CH_FLOAT32, 1.0));
  EXPECT_TRUE(contains(ch_error_message(), "cut.idx.gz")) << ch_error_message();
  std::string corrupt = gz;
  for (size_t i = 12; i < 24 && i < corrupt.size(); ++i)
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0xff);
  write_file(cut, corrupt);
  EXPECT_CH_ERR(CH_ERR_IO, ch_datasets_read_idx(a.out(), cut.c_str(), CH_FLOAT32, 1.0));
}

TEST_F(DatasetsTest, ArgumentErrors) {
  std::string path = temp_path("ok.idx");
  write_file(path, idx(0x08, {3}, "\x01\x02\x03"));
  Arr a;
  EXPECT_CH_ERR(CH_ERR_IO,
                ch_datasets_read_idx(a.out(), temp_path("missing.idx").c_str(), CH_FLOAT32, 1.0));
  EXPECT_TRUE(contains(ch_error_message(), "missing.idx")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_datasets_read_idx(a.out(), nullptr, CH_FLOAT32, 1.0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_datasets_read_idx(nullptr, path.c_str(), CH_FLOAT32, 1.0));
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_datasets_read_idx(a.out(), path.c_str(), 17, 1.0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_datasets_read_idx(a.out(), path.c_str(), CH_INT32, 0.5));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_datasets_read_idx(a.out(), path.c_str(), CH_FLOAT32, NAN));
  ASSERT_CH_OK(ch_datasets_read_idx(a.out(), path.c_str(), CH_INT32, 1.0));
  EXPECT_EQ(values(a), (std::vector<double>{1, 2, 3}));
}

}  // namespace
