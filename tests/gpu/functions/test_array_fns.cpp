// CPU / emulated-GPU agreement of the array functions of issue 42, all of
// them strided gathers and scatter-adds (cuda/ops/array/strided.cu) or
// compositions of reshape, transpose and concat: get_item (steps, negative
// steps, None, Ellipsis, an index array with repeats: the atomic scatter of
// its backward), scatter_add, flip, repeat, tile, pad, select_item, stack,
// split_axis, expand_dims, squeeze, swapaxes, flatten and cast; forward and
// gradients, check_double_backward on cuda:0 for the gather and scatter.
#include <ch/ch.h>

#include "../require_gpu.h"
#include "agreement.h"
#include "core/error.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

ops::IndexItem slice(int64_t start, int64_t stop, int64_t step, bool has_start = true,
                     bool has_stop = true) {
  ops::IndexItem it;
  it.start = start;
  it.stop = stop;
  it.step = step;
  it.has_start = has_start;
  it.has_stop = has_stop;
  return it;
}
ops::IndexItem at(int64_t i) {
  ops::IndexItem it;
  it.kind = ops::IndexItem::kInt;
  it.start = i;
  return it;
}
ops::IndexItem kind(ops::IndexItem::Kind k) {
  ops::IndexItem it;
  it.kind = k;
  return it;
}
ops::IndexItem index_array(const std::vector<int32_t>& v) {
  ops::IndexItem it;
  it.kind = ops::IndexItem::kArray;
  it.array =
      Array::from_host(DType::Int32, Shape{static_cast<int64_t>(v.size())}, v.data(), Device{});
  return it;
}

Build get_item_of(std::vector<ops::IndexItem> key) {
  return [key](const std::vector<VarPtr>& xs, const FuncPtr&) {
    return std::vector<VarPtr>{ops::get_item(xs[0], key)};
  };
}

std::vector<int32_t> repeated_indices(int32_t n, int32_t count) {
  std::vector<int32_t> v;
  for (int32_t i = 0; i < count; ++i) v.push_back((i * 7) % n - (i % 3 == 0 ? n : 0));
  return v;
}

TEST_F(GpuFunctions, GetItemAndScatterAdd) {
  for (DType dt : kDtypes) {
    const std::string d = dtype_name(dt);
    const std::vector<std::pair<std::string, std::vector<ops::IndexItem>>> keys = {
        {"x[1:30:3, ::-2]", {slice(1, 30, 3), slice(0, 0, -2, false, false)}},
        {"x[-1, None, ..., 5:0:-1]",
         {at(-1), kind(ops::IndexItem::kNewAxis), kind(ops::IndexItem::kEllipsis),
          slice(5, 0, -1)}},
        {"x[idx] (repeats)", {index_array(repeated_indices(33, 200))}},
        {"x[:, :, idx]",
         {slice(0, 0, 1, false, false), slice(0, 0, 1, false, false),
          index_array(repeated_indices(257, 1000))}},
    };
    for (const auto& [name, key] : keys)
      expect_agreement(
          {"get_item " + name + " " + d, {uniform(dt, {33, 5, 257}, -1, 1, 40)}, get_item_of(key)});
    expect_agreement({"scatter_add a[idx] += b " + d,
                      {uniform(dt, {33, 17}, -1, 1, 41), uniform(dt, {200, 17}, -1, 1, 42)},
                      [](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{
                            ops::scatter_add(x[0], {index_array(repeated_indices(33, 200))}, x[1])};
                      }});
    expect_agreement({"scatter_add a[::2] += b (broadcast) " + d,
                      {uniform(dt, {31, 1025}, -1, 1, 43), uniform(dt, {1025}, -1, 1, 44)},
                      [](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{
                            ops::scatter_add(x[0], {slice(0, 0, 2, false, false)}, x[1])};
                      }});
  }
  expect_agreement({"get_item int32",
                    {labels({9, 1025}, 1000, 45)},
                    get_item_of({slice(8, 0, -3), index_array({1, 1, -1})}),
                    nullptr,
                    false});
  expect_check_double_backward(
      {"get_item double backward",
       {uniform(DType::Float64, {7, 6}, -1, 1, 46)},
       [](const std::vector<VarPtr>& x, const FuncPtr&) {
         VarPtr s = ops::get_item(x[0], {slice(0, 0, -1, false, false), index_array({1, 1, 4})});
         return std::vector<VarPtr>{ops::mul(s, s)};
       }});
  expect_check_double_backward(
      {"scatter_add double backward",
       {uniform(DType::Float64, {5, 3}, -1, 1, 47), uniform(DType::Float64, {4, 3}, -1, 1, 48)},
       [](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::scatter_add(
             ops::mul(x[0], x[0]), {index_array({0, 4, 0, 2})}, ops::mul(x[1], x[1]))};
       }});
}

// Under the determinism switch the scatter-add of repeated positions runs in
// y's order on one thread, without atomics: the CPU's sums exactly.
TEST_F(GpuFunctions, ScatterAddDeterministic) {
  ch_config_set_deterministic(1);
  for (DType dt : kDtypes)
    expect_agreement({std::string("get_item x[idx] deterministic ") + dtype_name(dt),
                      {uniform(dt, {33, 7}, -1, 1, 49)},
                      get_item_of({index_array(repeated_indices(33, 500))}),
                      nullptr,
                      true,
                      0,
                      0});
  ch_config_set_deterministic(0);
}

TEST_F(GpuFunctions, FlipRepeatTilePad) {
  for (DType dt : kDtypes) {
    const std::string d = dtype_name(dt);
    const Arrays x = {uniform(dt, {3, 31, 37}, -1, 1, 50)};
    for (int32_t axis = 0; axis < 3; ++axis)
      expect_agreement({"flip axis " + std::to_string(axis) + " " + d, x,
                        [axis](const std::vector<VarPtr>& v, const FuncPtr&) {
                          return std::vector<VarPtr>{ops::flip(v[0], axis)};
                        }});
    expect_agreement(
        {"repeat 3 along axis 1 " + d, x, [](const std::vector<VarPtr>& v, const FuncPtr&) {
           const int32_t r = 3, a = 1;
           return std::vector<VarPtr>{ops::repeat(v[0], &r, 1, &a, 1)};
         }});
    expect_agreement({"repeat per element along axis 0 " + d, x,
                      [](const std::vector<VarPtr>& v, const FuncPtr&) {
                        const int32_t r[] = {2, 0, 5}, a = 0;
                        return std::vector<VarPtr>{ops::repeat(v[0], r, 3, &a, 1)};
                      }});
    expect_agreement({"tile (2, 1, 3) " + d, x, [](const std::vector<VarPtr>& v, const FuncPtr&) {
                        const int32_t r[] = {2, 1, 3};
                        return std::vector<VarPtr>{ops::tile(v[0], r, 3)};
                      }});
    expect_agreement({"pad constant 0.5 " + d, x, [](const std::vector<VarPtr>& v, const FuncPtr&) {
                        const int32_t w[] = {1, 0, 2, 3, 0, 33};
                        return std::vector<VarPtr>{ops::pad(v[0], w, 6, 0.5)};
                      }});
  }
  expect_check_double_backward({"tile and pad double backward",
                                {uniform(DType::Float64, {2, 3}, -1, 1, 51)},
                                [](const std::vector<VarPtr>& v, const FuncPtr&) {
                                  const int32_t r[] = {2, 2}, w[] = {1, 2};
                                  VarPtr t = ops::pad(ops::tile(v[0], r, 2), w, 2, -1.0);
                                  return std::vector<VarPtr>{ops::mul(t, t)};
                                }});
}

TEST_F(GpuFunctions, SelectItemStackSplitAndReshapes) {
  for (DType dt : kDtypes) {
    const std::string d = dtype_name(dt);
    expect_agreement({"select_item " + d,
                      {uniform(dt, {1025, 7}, -1, 1, 60), labels({1025}, 7, 61)},
                      [](const std::vector<VarPtr>& v, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::select_item(v[0], v[1])};
                      }});
    expect_agreement({"stack axis 1 and split_axis " + d,
                      {uniform(dt, {3, 33}, -1, 1, 62), uniform(dt, {3, 33}, -1, 1, 63)},
                      [](const std::vector<VarPtr>& v, const FuncPtr&) {
                        VarPtr s = ops::stack(v, 1);
                        const int64_t idx[] = {1, 17};
                        std::vector<VarPtr> p = ops::split_axis(s, idx, 2, 0, 2);
                        return std::vector<VarPtr>{s, p[0], p[2]};
                      }});
    expect_agreement({"expand_dims, swapaxes, squeeze, flatten " + d,
                      {uniform(dt, {3, 1, 33}, -1, 1, 64)},
                      [](const std::vector<VarPtr>& v, const FuncPtr&) {
                        VarPtr e = ops::swapaxes(ops::expand_dims(v[0], -1), 0, 2);
                        return std::vector<VarPtr>{ops::flatten(ops::squeeze(e, nullptr, 0))};
                      }});
  }
  expect_agreement({"cast float32 to float64",
                    {uniform(DType::Float32, {1025}, -1, 1, 65)},
                    [](const std::vector<VarPtr>& v, const FuncPtr&) {
                      return std::vector<VarPtr>{ops::cast(v[0], DType::Float64)};
                    }});
}

}  // namespace
}  // namespace gputest
