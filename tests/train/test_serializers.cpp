// .npz checkpoints: round trips of function sets and optimizers, files
// written by Chainer 7.8.1 (data/, see make_chainer_files.py), readability
// by NumPy (check_npz_numpy.py), and malformed files, which must leave the
// model untouched.
#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "data/chainer_values.h"
#include "train_test_util.h"

using namespace train_test;

#ifndef TRAIN_TEST_DATA_DIR
#error "TRAIN_TEST_DATA_DIR must be defined by the build"
#endif

namespace {

class SerializersTest : public CapiTest {};

std::string data_file(const char* name) { return std::string(TRAIN_TEST_DATA_DIR) + "/" + name; }

// The model of data/chainer_mlp.npz: l1 = Linear(4, 3), l2 = Linear(3, 2), float32.
FnSet make_mlp(ch_dtype dtype = CH_FLOAT32, int64_t l2_in = 3) {
  FnSet model;
  EXPECT_EQ(ch_function_set_new(model.out()), CH_OK);
  Fn l1 = make_linear(dtype, 4, 3, 0, 0.5);
  Fn l2 = make_linear(dtype, l2_in, 2, 10, 0.25);
  EXPECT_EQ(ch_function_set_add_function(model, "l1", l1), CH_OK);
  EXPECT_EQ(ch_function_set_add_function(model, "l2", l2), CH_OK);
  return model;
}

std::vector<std::vector<double>> all_params(const ch_function_set* s) {
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < ch_function_set_parameter_count(s); ++i) out.push_back(param_values(s, i));
  return out;
}

template <size_t N>
std::vector<double> vec(const double (&a)[N]) {
  return std::vector<double>(a, a + N);
}

// A zip file with the given entries (name -> bytes), stored.
void write_zip(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, bytes] : entries) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    ASSERT_NE(src, nullptr);
    zip_int64_t idx = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    ASSERT_GE(idx, 0);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(z), 0);
}

// NPY v1.0 bytes with a given header dict and data.
std::string npy(const std::string& dict, const std::string& data) {
  std::string header = dict;
  size_t total = 10 + header.size() + 1;
  header.append((total + 63) / 64 * 64 - total, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

TEST_F(SerializersTest, FunctionSetRoundTripStoredAndCompressed) {
  for (int32_t flags : {CH_NPZ_STORED, CH_NPZ_COMPRESSED}) {
    for (ch_dtype dtype : {CH_FLOAT32, CH_FLOAT64}) {
      SCOPED_TRACE(std::to_string(flags) + " " + ch_dtype_name(dtype));
      FnSet model = make_mlp(dtype);
      auto saved = all_params(model);
      std::string path = temp_path("roundtrip.npz");
      ASSERT_CH_OK(ch_function_set_save_npz(model, path.c_str(), flags));
      FnSet other = make_mlp(dtype);
      for (size_t i = 0; i < 4; ++i) {
        Arr p;
        ASSERT_CH_OK(ch_function_set_parameter(p.out(), nullptr, nullptr, other, i));
        ASSERT_CH_OK(ch_array_fill(p, 42.0));
      }
      ASSERT_CH_OK(ch_function_set_load_npz(other, path.c_str()));
      EXPECT_EQ(all_params(other), saved);
      // Single arrays through the generic reader.
      Arr w;
      ASSERT_CH_OK(ch_serializers_load_npz_array(w.out(), path.c_str(), "l2/W"));
      EXPECT_EQ(ch_array_dtype(w), dtype);
      EXPECT_EQ(shape_of(w), (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(values(w), saved[2]);
    }
  }
}

TEST_F(SerializersTest, LoadsAModelWrittenByChainer) {
  FnSet model = make_mlp();
  ASSERT_CH_OK(ch_function_set_load_npz(model, data_file("chainer_mlp.npz").c_str()));
  using namespace chainer_files;
  EXPECT_TRUE(AllClose(param_values(model, 0), vec(kModel_l1_W), 0, 0));
  EXPECT_TRUE(AllClose(param_values(model, 1), vec(kModel_l1_b), 0, 0));
  EXPECT_TRUE(AllClose(param_values(model, 2), vec(kModel_l2_W), 0, 0));
  EXPECT_TRUE(AllClose(param_values(model, 3), vec(kModel_l2_b), 0, 0));
}

TEST_F(SerializersTest, LoadsAnAdamStateWrittenByChainer) {
  FnSet model = make_mlp();
  Opt adam;
  ASSERT_CH_OK(ch_optimizer_adam_new(adam.out(), 0.001, 0.9, 0.999, 1 - 1e-8, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup(adam, model));
  ASSERT_CH_OK(ch_optimizer_load_npz(adam, data_file("chainer_adam.npz").c_str()));
  using namespace chainer_files;
  EXPECT_EQ(ch_optimizer_t(adam), kAdamT);
  std::vector<std::vector<double>> want = {vec(kAdam_l1_W_m), vec(kAdam_l1_W_v), vec(kAdam_l1_b_m),
                                           vec(kAdam_l1_b_v), vec(kAdam_l2_W_m), vec(kAdam_l2_W_v),
                                           vec(kAdam_l2_b_m), vec(kAdam_l2_b_v)};
  ASSERT_EQ(ch_optimizer_state_count(adam), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    Arr s;
    ASSERT_CH_OK(ch_optimizer_state(s.out(), nullptr, adam, i));
    EXPECT_TRUE(AllClose(values(s), want[i], 0, 0)) << i;
  }
}

TEST_F(SerializersTest, OptimizerStateHasChainersKeys) {
  FnSet model = make_mlp();
  Opt adam;
  ASSERT_CH_OK(ch_optimizer_adam_new(adam.out(), 0.001, 0.9, 0.999, 1 - 1e-8, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup(adam, model));
  ASSERT_CH_OK(ch_optimizer_update(adam));
  ASSERT_CH_OK(ch_optimizer_update(adam));
  std::string path = temp_path("adam_keys.npz");
  ASSERT_CH_OK(ch_optimizer_save_npz(adam, path.c_str(), CH_NPZ_COMPRESSED));
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  ASSERT_NE(z, nullptr);
  std::vector<std::string> keys;
  for (zip_int64_t i = 0; i < zip_get_num_entries(z, 0); ++i) {
    std::string n = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
    keys.push_back(n.substr(0, n.size() - 4));
  }
  zip_discard(z);
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> chainer_keys(std::begin(chainer_files::kAdamKeys),
                                        std::end(chainer_files::kAdamKeys));
  EXPECT_EQ(keys, chainer_keys);
  Arr t;
  ASSERT_CH_OK(ch_serializers_load_npz_array(t.out(), path.c_str(), "t"));
  EXPECT_EQ(ch_array_ndim(t), 0);
  EXPECT_EQ(values(t), (std::vector<double>{2}));
}

TEST_F(SerializersTest, OptimizerRoundTripResumesExactly) {
  auto train = [](ch_function_set* model, ch_optimizer* opt, int steps) {
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < ch_function_set_parameter_count(model); ++i) {
        Arr g;
        ASSERT_CH_OK(ch_function_set_parameter(nullptr, g.out(), nullptr, model, i));
        ASSERT_CH_OK(
            ch_array_fill(g, 0.1 * static_cast<double>(s + 1) - 0.05 * static_cast<double>(i)));
      }
      ASSERT_CH_OK(ch_optimizer_update(opt));
    }
  };
  FnSet a = make_mlp();
  Opt oa;
  ASSERT_CH_OK(ch_optimizer_rmsprop_new(oa.out(), 0.01, 0.99, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup(oa, a));
  train(a, oa, 3);
  ASSERT_CH_OK(ch_optimizer_new_epoch(oa));
  EXPECT_EQ(ch_optimizer_epoch(oa), 1);
  std::string mpath = temp_path("resume_model.npz"), opath = temp_path("resume_opt.npz");
  ASSERT_CH_OK(ch_function_set_save_npz(a, mpath.c_str(), CH_NPZ_STORED));
  ASSERT_CH_OK(ch_optimizer_save_npz(oa, opath.c_str(), CH_NPZ_STORED));
  FnSet b = make_mlp();
  Opt ob;
  ASSERT_CH_OK(ch_optimizer_rmsprop_new(ob.out(), 0.01, 0.99, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup(ob, b));
  ASSERT_CH_OK(ch_function_set_load_npz(b, mpath.c_str()));
  ASSERT_CH_OK(ch_optimizer_load_npz(ob, opath.c_str()));
  EXPECT_EQ(ch_optimizer_t(ob), 3);
  EXPECT_EQ(ch_optimizer_epoch(ob), 1);
  train(a, oa, 2);
  train(b, ob, 2);
  EXPECT_EQ(all_params(a), all_params(b));
}

TEST_F(SerializersTest, ReadableByNumPy) {
  if (std::system("python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with numpy is not available";
  FnSet enc = make_mlp(CH_FLOAT64);
  FnSet model = make_mlp(CH_FLOAT32);
  ASSERT_CH_OK(ch_function_set_add_set(model, "enc", enc));
  std::string stored = temp_path("for_numpy.npz"), compressed = temp_path("for_numpy_z.npz");
  ASSERT_CH_OK(ch_function_set_save_npz(model, stored.c_str(), CH_NPZ_STORED));
  ASSERT_CH_OK(ch_function_set_save_npz(model, compressed.c_str(), CH_NPZ_COMPRESSED));
  Opt o;
  ASSERT_CH_OK(ch_optimizer_momentum_sgd_new(o.out(), 0.01, 0.9));
  ASSERT_CH_OK(ch_optimizer_setup(o, model));
  ASSERT_CH_OK(ch_optimizer_update(o));
  std::string opath = temp_path("opt_for_numpy.npz");
  ASSERT_CH_OK(ch_optimizer_save_npz(o, opath.c_str(), CH_NPZ_STORED));
  // check_npz_numpy.py recomputes make_linear's values and compares.
  std::string cmd = "python3 '" + std::string(TRAIN_TEST_DATA_DIR) + "/../check_npz_numpy.py' '" +
                    stored + "' '" + compressed + "' --optimizer '" + opath + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST_F(SerializersTest, EmptySetWritesAnEmptyArchive) {
  FnSet empty;
  ASSERT_CH_OK(ch_function_set_new(empty.out()));
  std::string path = temp_path("empty.npz");
  ASSERT_CH_OK(ch_function_set_save_npz(empty, path.c_str(), CH_NPZ_STORED));
  EXPECT_EQ(read_file(path).size(), 22u);
  ASSERT_CH_OK(ch_function_set_load_npz(empty, path.c_str()));
}

// Every failure leaves all parameters as they were.
class MalformedTest : public SerializersTest {
 protected:
  void SetUp() override {
    SerializersTest::SetUp();
    model_ = make_mlp();
    before_ = all_params(model_);
  }
  void TearDown() override {
    EXPECT_EQ(all_params(model_), before_) << "a failed load changed the model";
    model_.reset();
    SerializersTest::TearDown();
  }
  ch_status load(const std::string& path) { return ch_function_set_load_npz(model_, path.c_str()); }
  FnSet model_;
  std::vector<std::vector<double>> before_;
};

TEST_F(MalformedTest, MissingFileAndGarbage) {
  EXPECT_CH_ERR(CH_ERR_IO, load(temp_path("does_not_exist.npz")));
  EXPECT_TRUE(contains(ch_error_message(), "does_not_exist.npz")) << ch_error_message();
  std::string garbage = temp_path("garbage.npz");
  write_file(garbage, std::string(1000, 'x'));
  EXPECT_CH_ERR(CH_ERR_IO, load(garbage));
  EXPECT_TRUE(contains(ch_error_message(), "garbage.npz")) << ch_error_message();
  write_file(garbage, "");
  EXPECT_CH_ERR(CH_ERR_IO, load(garbage));
}

TEST_F(MalformedTest, TruncatedFiles) {
  FnSet source = make_mlp();
  for (size_t i = 0; i < 4; ++i) {
    Arr p;
    ASSERT_CH_OK(ch_function_set_parameter(p.out(), nullptr, nullptr, source, i));
    ASSERT_CH_OK(ch_array_fill(p, 3.0));
  }
  for (int32_t flags : {CH_NPZ_STORED, CH_NPZ_COMPRESSED}) {
    std::string good = temp_path("good.npz");
    ASSERT_CH_OK(ch_function_set_save_npz(source, good.c_str(), flags));
    std::string bytes = read_file(good);
    for (size_t keep : {bytes.size() / 2, bytes.size() - 10, size_t{30}}) {
      std::string cut = temp_path("truncated.npz");
      write_file(cut, bytes.substr(0, keep));
      SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(bytes.size()));
      EXPECT_CH_ERR(CH_ERR_IO, load(cut));
      EXPECT_TRUE(contains(ch_error_message(), "truncated.npz")) << ch_error_message();
    }
  }
}

TEST_F(MalformedTest, CorruptedEntryData) {
  FnSet source = make_mlp();
  std::string path = temp_path("corrupt.npz");
  for (int32_t flags : {CH_NPZ_STORED, CH_NPZ_COMPRESSED}) {
    ASSERT_CH_OK(ch_function_set_save_npz(source, path.c_str(), flags));
    std::string bytes = read_file(path);
    // The last entry's data ends where the central directory starts.
    size_t cd = bytes.find("PK\x01\x02");
    ASSERT_NE(cd, std::string::npos);
    size_t at = cd - 3;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    bytes[at + 1] = static_cast<char>(bytes[at + 1] ^ 0xa5);
    write_file(path, bytes);
    SCOPED_TRACE("flags " + std::to_string(flags));
    EXPECT_CH_ERR(CH_ERR_IO, load(path));
    EXPECT_TRUE(contains(ch_error_message(), "corrupt.npz")) << ch_error_message();
  }
}

TEST_F(MalformedTest, MissingKeyWrongShapeWrongDtype) {
  // l2 has W of shape (2, 4): the first parameters are fine, l2/W is not.
  FnSet wrong_shape = make_mlp(CH_FLOAT32, 4);
  std::string path = temp_path("wrong_shape.npz");
  ASSERT_CH_OK(ch_function_set_save_npz(wrong_shape, path.c_str(), CH_NPZ_STORED));
  EXPECT_CH_ERR(CH_ERR_SHAPE, load(path));
  EXPECT_TRUE(contains(ch_error_message(), "'l2/W'")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "(2, 4)")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "(2, 3)")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "wrong_shape.npz")) << ch_error_message();

  FnSet f64model = make_mlp(CH_FLOAT64);
  path = temp_path("wrong_dtype.npz");
  ASSERT_CH_OK(ch_function_set_save_npz(f64model, path.c_str(), CH_NPZ_STORED));
  EXPECT_CH_ERR(CH_ERR_DTYPE, load(path));
  EXPECT_TRUE(contains(ch_error_message(), "'<f8'")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "float32")) << ch_error_message();

  // Only l1 in the file: l2/W is missing.
  FnSet l1_only;
  ASSERT_CH_OK(ch_function_set_new(l1_only.out()));
  Fn l1 = make_linear(CH_FLOAT32, 4, 3, 7);
  ASSERT_CH_OK(ch_function_set_add_function(l1_only, "l1", l1));
  path = temp_path("missing_key.npz");
  ASSERT_CH_OK(ch_function_set_save_npz(l1_only, path.c_str(), CH_NPZ_STORED));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, load(path));
  EXPECT_TRUE(contains(ch_error_message(), "no key 'l2/W'")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "l1/W, l1/b")) << ch_error_message();
}

TEST_F(MalformedTest, BadNpyEntries) {
  const std::string ok_b(12, '\0');
  const std::string good_w =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", std::string(48, '\0'));
  const std::string good_b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", ok_b);
  const std::string l2w =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(24, '\0'));
  const std::string l2b =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
  struct Case {
    const char* what;
    std::string l1b;
    ch_status status;
    const char* message;
  } cases[] = {
      {"no magic", std::string("not an npy file at all"), CH_ERR_IO, "magic"},
      {"truncated data",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", ok_b.substr(0, 8)),
       CH_ERR_IO, "truncated"},
      {"trailing bytes",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", ok_b + "xx"), CH_ERR_IO,
       "after the data"},
      {"bad shape", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", ok_b),
       CH_ERR_IO, "shape"},
      {"no descr", npy("{'fortran_order': False, 'shape': (3,), }", ok_b), CH_ERR_IO, "descr"},
      {"unknown dtype",
       npy("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", std::string(24, '\0')),
       CH_ERR_DTYPE, "<c8"},
      {"fortran order", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", ok_b),
       CH_OK, ""},
      {"header longer than entry", std::string("\x93NUMPY\x01\x00\xff\x00{", 11), CH_ERR_IO,
       "header"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    std::string path = temp_path("bad_npy.npz");
    write_zip(path,
              {{"l1/W.npy", good_w}, {"l1/b.npy", c.l1b}, {"l2/W.npy", l2w}, {"l2/b.npy", l2b}});
    if (c.status == CH_OK) {
      // 1-d Fortran order is the same layout: accepted (and it sets zeros).
      FnSet m = make_mlp();
      EXPECT_CH_OK(ch_function_set_load_npz(m, path.c_str()));
      continue;
    }
    EXPECT_CH_ERR(c.status, load(path));
    EXPECT_TRUE(contains(ch_error_message(), c.message)) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), "'l1/b'")) << ch_error_message();
  }
  // A 2-d Fortran-order array is refused.
  std::string path = temp_path("fortran.npz");
  write_zip(path, {{"l1/W.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }",
                                    std::string(48, '\0'))},
                   {"l1/b.npy", good_b},
                   {"l2/W.npy", l2w},
                   {"l2/b.npy", l2b}});
  EXPECT_CH_ERR(CH_ERR_UNSUPPORTED, load(path));
  // Big-endian data is byte-swapped.
  std::string be_b("\x3f\x80\x00\x00\x40\x00\x00\x00\x40\x40\x00\x00", 12);  // 1, 2, 3
  write_zip(path,
            {{"l1/W.npy", good_w},
             {"l1/b.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", be_b)},
             {"l2/W.npy", l2w},
             {"l2/b.npy", l2b}});
  FnSet m = make_mlp();
  ASSERT_CH_OK(ch_function_set_load_npz(m, path.c_str()));
  EXPECT_EQ(param_values(m, 1), (std::vector<double>{1, 2, 3}));
}

// Sizes are never trusted: an .npy header claiming 4 * 10^12 bytes of data,
// and zip directories whose sizes lie, are refused with CH_ERR_IO naming the
// file and the numbers before anything of the claimed size is allocated
// (under AddressSanitizer such an allocation would abort the test).
TEST_F(SerializersTest, LyingSizesAreRefusedBeforeAllocating) {
  std::string path = temp_path("huge_npy.npz");
  write_zip(path, {{"a.npy", npy("{'descr': '<f4', 'fortran_order': False, "
                                 "'shape': (1000000000000,), }",
                                 std::string(12, '\0'))}});
  Arr back;
  EXPECT_CH_ERR(CH_ERR_IO, ch_serializers_load_npz_array(back.out(), path.c_str(), "a"));
  EXPECT_TRUE(contains(ch_error_message(), "4000000000000 bytes")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "truncated")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "huge_npy.npz")) << ch_error_message();
  EXPECT_EQ(back.get(), nullptr);

  // The central directory's sizes: uncompressed at offset 24, compressed at 20.
  auto patch_directory = [](std::string bytes, size_t field, uint32_t value) {
    size_t cd = bytes.find("PK\x01\x02");
    EXPECT_NE(cd, std::string::npos);
    for (int i = 0; i < 4; ++i) bytes[cd + field + i] = static_cast<char>(value >> (8 * i));
    return bytes;
  };
  Arr a = f32({4}, {1, 2, 3, 4});
  ch_array* arrays[] = {a};
  const char* keys[] = {"a"};
  struct Case {
    const char* what;
    int32_t flags;
    size_t field;
    uint32_t value;
    const char* message;
  } cases[] = {
      {"stored, uncompressed size 2^31", CH_NPZ_STORED, 24, 0x80000000u, "2147483648"},
      {"deflated, uncompressed size 4 * 10^9", CH_NPZ_COMPRESSED, 24, 4000000000u, "4000000000"},
      {"compressed size beyond the file", CH_NPZ_STORED, 20, 0x7fffffffu, "2147483647"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    std::string good = temp_path("good_arrays.npz");
    ASSERT_CH_OK(ch_serializers_save_npz_arrays(good.c_str(), keys, arrays, 1, c.flags));
    std::string lying = temp_path("lying.npz");
    write_file(lying, patch_directory(read_file(good), c.field, c.value));
    EXPECT_CH_ERR(CH_ERR_IO, ch_serializers_load_npz_array(back.out(), lying.c_str(), "a"));
    EXPECT_TRUE(contains(ch_error_message(), "lying.npz")) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), c.message)) << ch_error_message();
    EXPECT_EQ(back.get(), nullptr);
  }
}

TEST_F(SerializersTest, OptimizerLoadErrorsLeaveStateUntouched) {
  FnSet model = make_mlp();
  Opt o;
  ASSERT_CH_OK(ch_optimizer_momentum_sgd_new(o.out(), 0.1, 0.9));
  std::string path = temp_path("opt.npz");
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_save_npz(o, path.c_str(), CH_NPZ_STORED));
  EXPECT_TRUE(contains(ch_error_message(), "not set up")) << ch_error_message();
  ASSERT_CH_OK(ch_optimizer_setup(o, model));
  ASSERT_CH_OK(ch_optimizer_update(o));
  // A file for another model: l2/W/v has the wrong shape.
  FnSet other = make_mlp(CH_FLOAT32, 4);
  Opt o2;
  ASSERT_CH_OK(ch_optimizer_momentum_sgd_new(o2.out(), 0.1, 0.9));
  ASSERT_CH_OK(ch_optimizer_setup(o2, other));
  for (int i = 0; i < 5; ++i) ASSERT_CH_OK(ch_optimizer_update(o2));
  ASSERT_CH_OK(ch_optimizer_save_npz(o2, path.c_str(), CH_NPZ_STORED));
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_optimizer_load_npz(o, path.c_str()));
  EXPECT_TRUE(contains(ch_error_message(), "'l2/W/v'")) << ch_error_message();
  EXPECT_EQ(ch_optimizer_t(o), 1);
  // Another optimizer kind: the state keys are missing.
  Opt adam;
  ASSERT_CH_OK(ch_optimizer_adam_new(adam.out(), 0.001, 0.9, 0.999, 1, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup(adam, model));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_load_npz(adam, path.c_str()));
  EXPECT_TRUE(contains(ch_error_message(), "no key 'l1/W/m'")) << ch_error_message();
  EXPECT_EQ(ch_optimizer_t(adam), 0);
  // No 't'.
  ASSERT_CH_OK(ch_function_set_save_npz(model, path.c_str(), CH_NPZ_STORED));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_load_npz(o, path.c_str()));
  EXPECT_TRUE(contains(ch_error_message(), "no key 't'")) << ch_error_message();
}

TEST_F(SerializersTest, ArgumentErrors) {
  FnSet model = make_mlp();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_save_npz(model, nullptr, CH_NPZ_STORED));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_function_set_save_npz(model, temp_path("x.npz").c_str(), 7));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE,
                ch_function_set_save_npz(nullptr, temp_path("x.npz").c_str(), 0));
  EXPECT_CH_ERR(CH_ERR_IO, ch_function_set_save_npz(model, "/nonexistent_dir_chainerc/x.npz", 0));
  EXPECT_TRUE(contains(ch_error_message(), "/nonexistent_dir_chainerc/x.npz"))
      << ch_error_message();
  Arr a = f32({2}, {1, 2});
  ch_array* arrays[] = {a, a};
  const char* dup[] = {"k", "k"};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_serializers_save_npz_arrays(temp_path("dup.npz").c_str(), dup, arrays, 2, 0));
  EXPECT_TRUE(contains(ch_error_message(), "'k'")) << ch_error_message();
  const char* keys[] = {"a", "b/c"};
  std::string path = temp_path("arrays.npz");
  ASSERT_CH_OK(ch_serializers_save_npz_arrays(path.c_str(), keys, arrays, 2, CH_NPZ_COMPRESSED));
  Arr back;
  ASSERT_CH_OK(ch_serializers_load_npz_array(back.out(), path.c_str(), "b/c"));
  EXPECT_EQ(values(back), (std::vector<double>{1, 2}));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_serializers_load_npz_array(back.out(), path.c_str(), "zzz"));
  EXPECT_EQ(back.get(), nullptr);
}

}  // namespace
