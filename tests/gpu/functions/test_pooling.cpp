// CPU / emulated-GPU agreement of the 2-D pooling functions (max_pooling_2d,
// average_pooling_2d): forward and backward over window geometries with
// strides, padding and cover_all (overlapping windows, windows cut by the
// padding, a window wholly in the padding), ties (max pooling keeps the first
// maximum in window order), NaN (propagated, its gradient to the first NaN),
// float32 and float64; check_backward on cuda:0.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "agreement.h"
#include "core/config.h"
#include "kernels/pooling.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

struct Geometry {
  int64_t kh, kw, sy, sx, ph, pw;
  bool cover_all;
  std::string name() const {
    return "k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" + std::to_string(sy) + "x" +
           std::to_string(sx) + " p" + std::to_string(ph) + "x" + std::to_string(pw) +
           (cover_all ? " cover_all" : "");
  }
};

const Geometry kGeometries[] = {
    {2, 2, 2, 2, 0, 0, false},  // tiling, odd sizes drop the last row/column
    {2, 2, 2, 2, 0, 0, true},   // ... which cover_all keeps
    {3, 3, 2, 2, 1, 1, false},  // overlapping windows cut by the padding
    {3, 3, 2, 2, 1, 1, true},  {3, 3, 1, 1, 1, 1, false},  // stride 1: every input in 9 windows
    {3, 2, 2, 3, 1, 0, true},                              // different extents per axis
    {1, 1, 2, 2, 1, 1, true},  // windows wholly in the padding (max: -inf, no gradient)
};

using Pool = VarPtr (*)(const VarPtr&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool);
// average_pooling_2d has no cover_all (Chainer's neither): cases with it are skipped.
VarPtr average(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph,
               int64_t pw, bool) {
  return ops::average_pooling_2d(x, kh, kw, sy, sx, ph, pw);
}
const std::pair<const char*, Pool> kPools[] = {{"max_pooling_2d", ops::max_pooling_2d},
                                               {"average_pooling_2d", average}};
bool applies(Pool f, const Geometry& g) { return f != average || !g.cover_all; }

Build pool(Pool f, const Geometry& g) {
  return [f, g](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{f(x[0], g.kh, g.kw, g.sy, g.sx, g.ph, g.pw, g.cover_all)};
  };
}

TEST_F(GpuFunctions, PoolingOverWindowGeometries) {
  for (const auto& op : kPools)
    for (const Geometry& g : kGeometries)
      for (DType dt : kDtypes)
        for (const Shape& s : {Shape{2, 3, 7, 9}, Shape{1, 1, 5, 4}})
          if (applies(op.second, g))
            expect_agreement({std::string(op.first) + " " + g.name() + " " + dtype_name(dt) + " " +
                                  s.to_string(),
                              {uniform(dt, s, -2, 2, 1)},
                              pool(op.second, g)});
}

// More planes and outputs than the emulator's grid of threads (grid-stride
// loops), about 1e5 input elements.
TEST_F(GpuFunctions, PoolingOfALargeInput) {
  const Geometry g{3, 3, 2, 2, 1, 1, false};
  for (const auto& op : kPools)
    for (DType dt : kDtypes)
      expect_agreement({std::string(op.first) + " " + dtype_name(dt) + " (4, 8, 63, 49)",
                        {uniform(dt, {4, 8, 63, 49}, -1, 1, 2)},
                        pool(op.second, g)});
}

TEST_F(GpuFunctions, PoolingOfAnEmptyBatch) {
  for (const auto& op : kPools)
    for (DType dt : kDtypes)
      expect_agreement({std::string(op.first) + " " + dtype_name(dt) + " (0, 3, 7, 9)",
                        {uniform(dt, {0, 3, 7, 9}, -1, 1, 5)},
                        pool(op.second, kGeometries[2])});
}

// Values from {0, 1, 2}: ties in nearly every window. The gradient goes to the
// first maximum in window order on both devices.
TEST_F(GpuFunctions, MaxPoolingTiesGoToTheFirstMaximum) {
  for (const Geometry& g : kGeometries)
    for (DType dt : kDtypes) {
      Array x = uniform(dt, {2, 3, 7, 9}, 0, 3, 3);
      for (int64_t i = 0; i < x.size(); ++i) {
        if (dt == DType::Float32)
          x.data<float>()[i] = std::floor(x.data<float>()[i]);
        else
          x.data<double>()[i] = std::floor(x.data<double>()[i]);
      }
      expect_agreement({std::string("max_pooling_2d ties ") + g.name() + " " + dtype_name(dt),
                        {x},
                        pool(ops::max_pooling_2d, g)});
    }
}

// NaN in some windows (the agreement harness counts NaN as a difference, so
// the outputs are compared here): forward's NaN where a window holds one and
// the CPU's values elsewhere, and the gradient routed as on the CPU (to the
// first NaN of such a window), over every window geometry.
TEST_F(GpuFunctions, MaxPoolingPropagatesNaNAsTheCpu) {
  for (const Geometry& g : kGeometries)
    for (DType dt : kDtypes) {
      SCOPED_TRACE(g.name() + " " + dtype_name(dt));
      Array x = uniform(dt, {2, 2, 7, 9}, -1, 1, 6);
      for (int64_t i = 0; i < x.size(); i += 11) {
        if (dt == DType::Float32)
          x.data<float>()[i] = std::nanf("");
        else
          x.data<double>()[i] = std::nan("");
      }
      auto at = [dt](const Array& a, int64_t i) {
        return dt == DType::Float32 ? static_cast<double>(a.data<float>()[i]) : a.data<double>()[i];
      };
      Array y_on[2], gx_on[2];
      for (int d = 0; d < 2; ++d) {
        auto v = std::make_shared<VariableImpl>(x.to_device(d ? gpu() : cpu()));
        VarPtr y = ops::max_pooling_2d(v, g.kh, g.kw, g.sy, g.sx, g.ph, g.pw, g.cover_all);
        y_on[d] = y->data.to_device(cpu());
        y->grad = uniform(dt, y->data.shape(), 1, 2, 7).to_device(y->data.device());
        backward(y, false);
        gx_on[d] = v->grad.to_device(cpu());
      }
      int nans = 0;
      for (int64_t i = 0; i < y_on[0].size(); ++i) {
        const double a = at(y_on[0], i), b = at(y_on[1], i);
        nans += std::isnan(a);
        EXPECT_TRUE(std::isnan(a) ? std::isnan(b) : a == b) << "y[" << i << "]: " << a << " " << b;
      }
      if (g.kh > 1) {
        EXPECT_GT(nans, 0);
      }
      for (int64_t i = 0; i < gx_on[0].size(); ++i)
        EXPECT_NEAR(at(gx_on[1], i), at(gx_on[0], i), 1e-6) << "gx " << i;
    }
}

// The argmax is an optional by-product of max pooling's forward (the CPU's
// sets it, the CUDA ones do not): each backward, given it or not, routes the
// same gradient. Ties and NaN, every window geometry, the kernels called
// directly on both devices.
TEST_F(GpuFunctions, MaxPoolingBackwardWithAndWithoutTheArgmax) {
  for (const Geometry& g : kGeometries)
    for (DType dt : kDtypes)
      for (Device dev : {cpu(), gpu()}) {
        SCOPED_TRACE(g.name() + " " + dtype_name(dt) + (dev.is_cpu() ? " cpu" : " cuda:0"));
        Array xh = uniform(dt, {2, 3, 7, 9}, 0, 3, 8);
        for (int64_t i = 0; i < xh.size(); ++i) {  // ties, and a NaN every 13 elements
          if (dt == DType::Float32)
            xh.data<float>()[i] = i % 13 == 5 ? std::nanf("") : std::floor(xh.data<float>()[i]);
          else
            xh.data<double>()[i] = i % 13 == 5 ? std::nan("") : std::floor(xh.data<double>()[i]);
        }
        const Array x = xh.to_device(dev);
        kernels::Pool2D p{g.kh, g.kw, g.sy, g.sx, g.ph, g.pw, g.cover_all, 2, 3, 7, 9, 0, 0};
        p.oh = g.cover_all ? (7 + 2 * g.ph - g.kh + g.sy - 1) / g.sy + 1
                           : (7 + 2 * g.ph - g.kh) / g.sy + 1;
        p.ow = g.cover_all ? (9 + 2 * g.pw - g.kw + g.sx - 1) / g.sx + 1
                           : (9 + 2 * g.pw - g.kw) / g.sx + 1;
        Array y = Array::empty(dt, Shape{2, 3, p.oh, p.ow}, dev), argmax;
        kernels::max_pool_2d_forward(x, p, y, argmax);
        EXPECT_EQ(argmax.defined(), dev.is_cpu());
        const Array gy = uniform(dt, y.shape(), 1, 2, 9).to_device(dev);
        Array with = Array::zeros(dt, x.shape(), dev), without = Array::zeros(dt, x.shape(), dev);
        // On a device, in deterministic mode: cuDNN's CUDNN_POOLING_MAX (the
        // default, where libcudnn loads) adds overlapping windows' gradients
        // in any order (on an H100, k3x3 s1x1 p1x1 differed in the last bits
        // between two calls); its deterministic mode, like chainerc's kernel,
        // gives the same bits each time.
        chainerc::config::set_deterministic(!dev.is_cpu());
        kernels::max_pool_2d_backward(x, y, argmax, gy, p, with);
        kernels::max_pool_2d_backward(x, y, Array(), gy, p, without);
        chainerc::config::set_deterministic(false);
        const Array a = with.to_device(cpu()), b = without.to_device(cpu());
        EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
      }
}

// Distinct values at least 0.05 apart, so that central differences never
// move a window's maximum.
Array distinct(const Shape& s, uint32_t seed) {
  Array x = Array::empty(DType::Float64, s);
  std::vector<int64_t> order(static_cast<size_t>(x.size()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < x.size(); ++i)
    x.data<double>()[i] = 0.05 * static_cast<double>(order[static_cast<size_t>(i)]) - 1;
  return x;
}

TEST_F(GpuFunctions, PoolingCheckBackwardOnTheDevice) {
  for (const auto& op : kPools)
    for (const Geometry& g : {kGeometries[0], kGeometries[2], kGeometries[3], kGeometries[4]})
      if (applies(op.second, g))
        expect_check_backward({std::string(op.first) + " " + g.name(),
                               {distinct({2, 2, 5, 6}, 4)},
                               pool(op.second, g)});
}

}  // namespace
}  // namespace gputest
