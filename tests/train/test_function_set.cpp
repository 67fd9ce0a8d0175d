// ch_function_set: members, parameter order and paths (Chainer 1.x:
// members sorted by name, nested sets recursively), collect_parameters,
// copy_parameters_from, to_cpu/to_gpu, and misuse.
#include "train_test_util.h"

using namespace train_test;

namespace {

class FunctionSetTest : public CapiTest {};

// model = {l2, l1, enc = {l1}} added out of order.
FnSet make_model() {
  FnSet model, enc;
  EXPECT_EQ(ch_function_set_new(model.out()), CH_OK);
  EXPECT_EQ(ch_function_set_new(enc.out()), CH_OK);
  Fn l2 = make_linear(CH_FLOAT32, 3, 2, 100);
  Fn l1 = make_linear(CH_FLOAT32, 4, 3, 0);
  Fn e1 = make_linear(CH_FLOAT32, 2, 2, 50);
  EXPECT_EQ(ch_function_set_add_function(model, "l2", l2), CH_OK);
  EXPECT_EQ(ch_function_set_add_function(model, "l1", l1), CH_OK);
  EXPECT_EQ(ch_function_set_add_function(enc, "l1", e1), CH_OK);
  EXPECT_EQ(ch_function_set_add_set(model, "enc", enc), CH_OK);
  return model;
}

TEST_F(FunctionSetTest, EmptySet) {
  FnSet s;
  ASSERT_CH_OK(ch_function_set_new(s.out()));
  EXPECT_EQ(ch_function_set_member_count(s), 0u);
  EXPECT_EQ(ch_function_set_parameter_count(s), 0u);
  size_t n = 99;
  ASSERT_CH_OK(ch_function_set_collect_parameters(nullptr, nullptr, 0, &n, s));
  EXPECT_EQ(n, 0u);
  EXPECT_CH_OK(ch_function_set_release(nullptr));
}

TEST_F(FunctionSetTest, ParametersSortedByMemberNameWithPaths) {
  FnSet model = make_model();
  EXPECT_EQ(ch_function_set_member_count(model), 3u);
  std::vector<std::string> names;
  for (size_t i = 0; i < 3; ++i) {
    const char* name = nullptr;
    ASSERT_CH_OK(ch_function_set_member_name(&name, model, i));
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"enc", "l1", "l2"}));
  EXPECT_EQ(paths_of(model),
            (std::vector<std::string>{"enc/l1/W", "enc/l1/b", "l1/W", "l1/b", "l2/W", "l2/b"}));
  EXPECT_TRUE(AllClose(param_values(model, 2), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(AllClose(param_values(model, 5), {-1, -2}));
  std::vector<double> l2w(6);
  for (int i = 0; i < 6; ++i) l2w[i] = 100 + i;
  EXPECT_TRUE(AllClose(param_values(model, 4), l2w));
}

TEST_F(FunctionSetTest, ParametersShareTheFunctionsArrays) {
  FnSet model = make_model();
  Fn l1;
  ASSERT_CH_OK(ch_function_set_get_function(l1.out(), model, "l1"));
  EXPECT_STREQ(ch_function_name(l1), "Linear");
  Arr fw, fgw, sw, sgw;
  ASSERT_CH_OK(ch_function_parameter(fw.out(), fgw.out(), nullptr, l1, 0));
  ASSERT_CH_OK(ch_function_set_parameter(sw.out(), sgw.out(), nullptr, model, 2));
  EXPECT_EQ(ch_array_data(fw), ch_array_data(sw));
  EXPECT_EQ(ch_array_data(fgw), ch_array_data(sgw));
  // Writing through the set is seen by the function.
  ASSERT_CH_OK(ch_array_fill(sw, 7.0));
  EXPECT_EQ(values(fw)[3], 7.0);
}

TEST_F(FunctionSetTest, CollectParametersTwoCallPattern) {
  FnSet model = make_model();
  size_t n = 0;
  ASSERT_CH_OK(ch_function_set_collect_parameters(nullptr, nullptr, 0, &n, model));
  ASSERT_EQ(n, 6u);
  std::vector<ch_array*> params(n), grads(n);
  ASSERT_CH_OK(ch_function_set_collect_parameters(params.data(), grads.data(), n, &n, model));
  EXPECT_EQ(shape_of(params[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(shape_of(params[3]), (std::vector<int64_t>{3}));
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(shape_of(params[i]), shape_of(grads[i]));
    EXPECT_TRUE(AllClose(values(grads[i]),
                         std::vector<double>(static_cast<size_t>(ch_array_size(grads[i])), 0.0)));
    EXPECT_CH_OK(ch_array_release(params[i]));
    EXPECT_CH_OK(ch_array_release(grads[i]));
  }
  // A smaller capacity returns only the first ones but reports the total.
  ch_array* first[2] = {nullptr, nullptr};
  ASSERT_CH_OK(ch_function_set_collect_parameters(first, nullptr, 2, &n, model));
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(shape_of(first[1]), (std::vector<int64_t>{2}));
  EXPECT_CH_OK(ch_array_release(first[0]));
  EXPECT_CH_OK(ch_array_release(first[1]));
}

TEST_F(FunctionSetTest, NestedSetAndReplaceAndRemove) {
  FnSet model = make_model();
  FnSet enc;
  ASSERT_CH_OK(ch_function_set_get_set(enc.out(), model, "enc"));
  EXPECT_EQ(ch_function_set_parameter_count(enc), 2u);
  // Adding to the nested set shows through the parent.
  Fn l0 = make_linear(CH_FLOAT32, 1, 1);
  ASSERT_CH_OK(ch_function_set_add_function(enc, "l0", l0));
  EXPECT_EQ(paths_of(model)[0], "enc/l0/W");
  // Replacing a member by name (setting the attribute again).
  Fn bigger = make_linear(CH_FLOAT32, 5, 5);
  ASSERT_CH_OK(ch_function_set_add_function(model, "l2", bigger));
  EXPECT_EQ(ch_function_set_member_count(model), 3u);
  Arr w;
  ASSERT_CH_OK(ch_function_set_parameter(w.out(), nullptr, nullptr, model, 6));
  EXPECT_EQ(shape_of(w), (std::vector<int64_t>{5, 5}));
  ASSERT_CH_OK(ch_function_set_remove(model, "enc"));
  EXPECT_EQ(paths_of(model), (std::vector<std::string>{"l1/W", "l1/b", "l2/W", "l2/b"}));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_remove(model, "enc"));
  EXPECT_TRUE(contains(ch_error_message(), "enc"));
}

TEST_F(FunctionSetTest, MembersOutliveTheCallersHandles) {
  FnSet model;
  ASSERT_CH_OK(ch_function_set_new(model.out()));
  {
    Fn l = make_linear(CH_FLOAT64, 2, 2);
    ASSERT_CH_OK(ch_function_set_add_function(model, "l", l));
  }
  EXPECT_TRUE(AllClose(param_values(model, 0), {0, 1, 2, 3}));
  FnSet copy(ch_function_set_retain(model));
  ASSERT_TRUE(copy);
  model.reset();
  EXPECT_EQ(ch_function_set_parameter_count(copy), 2u);
}

TEST_F(FunctionSetTest, GetMemberErrors) {
  FnSet model = make_model();
  Fn f;
  FnSet s;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_get_function(f.out(), model, "nope"));
  EXPECT_TRUE(contains(ch_error_message(), "'nope'")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "enc, l1, l2")) << ch_error_message();
  EXPECT_EQ(f.get(), nullptr);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_get_function(f.out(), model, "enc"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_get_set(s.out(), model, "l1"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_get_set(s.out(), model, nullptr));
  const char* name = nullptr;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_member_name(&name, model, 3));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_function_set_parameter(nullptr, nullptr, nullptr, model, 6));
  EXPECT_TRUE(contains(ch_error_message(), "6 parameters")) << ch_error_message();
}

TEST_F(FunctionSetTest, BadNamesAndCycles) {
  FnSet a, b;
  ASSERT_CH_OK(ch_function_set_new(a.out()));
  ASSERT_CH_OK(ch_function_set_new(b.out()));
  Fn l = make_linear(CH_FLOAT32, 1, 1);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_add_function(a, "", l));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_add_function(a, "x/y", l));
  EXPECT_TRUE(contains(ch_error_message(), "'x/y'")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_add_function(a, nullptr, l));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_add_set(a, "self", a));
  EXPECT_TRUE(contains(ch_error_message(), "cycle")) << ch_error_message();
  ASSERT_CH_OK(ch_function_set_add_set(a, "b", b));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_add_set(b, "a", a));
  EXPECT_EQ(ch_function_set_member_count(b), 0u);
}

TEST_F(FunctionSetTest, InvalidHandles) {
  FnSet s;
  ASSERT_CH_OK(ch_function_set_new(s.out()));
  Fn l = make_linear(CH_FLOAT32, 1, 1);
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_function_set_add_function(nullptr, "l", l));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_function_set_add_function(s, "l", nullptr));
  // A function handle where a set is expected, and the other way round.
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE,
                ch_function_set_add_function(reinterpret_cast<ch_function_set*>(l.get()), "l", l));
  EXPECT_TRUE(contains(ch_error_message(), "ch_function, not a ch_function_set"))
      << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE,
                ch_function_set_add_function(s, "l", reinterpret_cast<ch_function*>(s.get())));
  EXPECT_EQ(ch_function_set_parameter_count(reinterpret_cast<ch_function_set*>(l.get())), 0u);
  EXPECT_EQ(ch_function_set_retain(reinterpret_cast<ch_function_set*>(l.get())), nullptr);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_set_new(nullptr));
  // Released twice.
  ch_function_set* raw = nullptr;
  ASSERT_CH_OK(ch_function_set_new(&raw));
  ASSERT_CH_OK(ch_function_set_release(raw));
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_function_set_release(raw));
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_function_set_to_cpu(raw));
  EXPECT_EQ(ch_function_set_member_count(raw), 0u);
}

TEST_F(FunctionSetTest, CopyParametersFrom) {
  FnSet a = make_model();
  FnSet b;
  ASSERT_CH_OK(ch_function_set_new(b.out()));
  // Same structure, other values and other names.
  FnSet enc;
  ASSERT_CH_OK(ch_function_set_new(enc.out()));
  Fn e1 = make_linear(CH_FLOAT32, 2, 2, 1000);
  Fn l1 = make_linear(CH_FLOAT32, 4, 3, 2000);
  Fn l2 = make_linear(CH_FLOAT32, 3, 2, 3000);
  ASSERT_CH_OK(ch_function_set_add_function(enc, "x", e1));
  ASSERT_CH_OK(ch_function_set_add_set(b, "a", enc));
  ASSERT_CH_OK(ch_function_set_add_function(b, "b", l1));
  ASSERT_CH_OK(ch_function_set_add_function(b, "c", l2));
  ASSERT_CH_OK(ch_function_set_copy_parameters_from(a, b));
  for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(AllClose(param_values(a, i), param_values(b, i))) << i;
  // Not the same memory: copied, not shared.
  Arr pa, pb;
  ASSERT_CH_OK(ch_function_set_parameter(pa.out(), nullptr, nullptr, a, 0));
  ASSERT_CH_OK(ch_function_set_parameter(pb.out(), nullptr, nullptr, b, 0));
  EXPECT_NE(ch_array_data(pa), ch_array_data(pb));
}

TEST_F(FunctionSetTest, CopyParametersFromChecksEverythingFirst) {
  FnSet a = make_model();
  std::vector<double> before = param_values(a, 0);
  FnSet b;
  ASSERT_CH_OK(ch_function_set_new(b.out()));
  FnSet enc;
  ASSERT_CH_OK(ch_function_set_new(enc.out()));
  Fn e1 = make_linear(CH_FLOAT32, 2, 2, 1000);
  Fn l1 = make_linear(CH_FLOAT32, 4, 3, 2000);
  Fn l2 = make_linear(CH_FLOAT32, 4, 2, 3000);  // l2/W is (2, 4), not (2, 3)
  ASSERT_CH_OK(ch_function_set_add_function(enc, "l1", e1));
  ASSERT_CH_OK(ch_function_set_add_set(b, "enc", enc));
  ASSERT_CH_OK(ch_function_set_add_function(b, "l1", l1));
  ASSERT_CH_OK(ch_function_set_add_function(b, "l2", l2));
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_function_set_copy_parameters_from(a, b));
  EXPECT_TRUE(contains(ch_error_message(), "'l2/W'")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "(2, 3)")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "(2, 4)")) << ch_error_message();
  EXPECT_TRUE(AllClose(param_values(a, 0), before));  // nothing copied
  // Other counts and dtypes.
  FnSet small;
  ASSERT_CH_OK(ch_function_set_new(small.out()));
  ASSERT_CH_OK(ch_function_set_add_function(small, "l1", l1));
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_function_set_copy_parameters_from(a, small));
  EXPECT_TRUE(contains(ch_error_message(), "6 parameters")) << ch_error_message();
  FnSet d64;
  ASSERT_CH_OK(ch_function_set_new(d64.out()));
  Fn l64 = make_linear(CH_FLOAT64, 4, 3);
  ASSERT_CH_OK(ch_function_set_add_function(d64, "l1", l64));
  FnSet d32;
  ASSERT_CH_OK(ch_function_set_new(d32.out()));
  ASSERT_CH_OK(ch_function_set_add_function(d32, "l1", l1));
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_function_set_copy_parameters_from(d32, d64));
  EXPECT_TRUE(contains(ch_error_message(), "float64")) << ch_error_message();
}

TEST_F(FunctionSetTest, CopyParametersFromArrays) {
  FnSet s;
  ASSERT_CH_OK(ch_function_set_new(s.out()));
  Fn l = make_linear(CH_FLOAT64, 2, 1);
  ASSERT_CH_OK(ch_function_set_add_function(s, "l", l));
  Arr w = f64({1, 2}, {5, 6});
  Arr b = f64({1}, {7});
  ch_array* arrays[] = {w, b};
  ASSERT_CH_OK(ch_function_set_copy_parameters_from_arrays(s, arrays, 2));
  EXPECT_TRUE(AllClose(param_values(s, 0), {5, 6}));
  EXPECT_TRUE(AllClose(param_values(s, 1), {7}));
  ch_array* swapped[] = {b, w};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_function_set_copy_parameters_from_arrays(s, swapped, 2));
  EXPECT_TRUE(contains(ch_error_message(), "'l/W'")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_function_set_copy_parameters_from_arrays(s, nullptr, 2));
  ch_array* with_null[] = {w, nullptr};
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_function_set_copy_parameters_from_arrays(s, with_null, 2));
}

TEST_F(FunctionSetTest, ToCpuAndToGpu) {
  FnSet model = make_model();
  EXPECT_CH_OK(ch_function_set_to_cpu(model));
  EXPECT_CH_OK(ch_function_set_to_gpu(model, ch_device_cpu()));
  ch_device cuda{CH_DEVICE_CUDA, 0};
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_function_set_to_gpu(model, cuda));
  // No CUDA device or no CUDA backend (this test runs without one): the parameters stay.
  EXPECT_TRUE(contains(ch_error_message(), "cuda:0")) << ch_error_message();
  ch_device bogus{42, 0};
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_function_set_to_gpu(model, bogus));
  Arr w;
  ASSERT_CH_OK(ch_function_set_parameter(w.out(), nullptr, nullptr, model, 0));
  EXPECT_EQ(ch_array_device(w).type, CH_DEVICE_CPU);
}

TEST_F(FunctionSetTest, ParameterlessFunctionContributesNothing) {
  FnSet s;
  ASSERT_CH_OK(ch_function_set_new(s.out()));
  Fn f = make_layer("NoParams", {});
  ASSERT_CH_OK(ch_function_set_add_function(s, "act", f));
  EXPECT_EQ(ch_function_set_member_count(s), 1u);
  EXPECT_EQ(ch_function_set_parameter_count(s), 0u);
}

}  // namespace
