// EmbedID: y[..., :] = W[x[...], :], the seed's chainer.functions.EmbedID
// (Chainer 1.0.1): W (in_size, out_size) ~ N(0, 1); ids are int32 of any
// shape; y has shape x.shape + (out_size,). Backward scatter-adds gy into gW
// (gW[x[k]] += gy[k]); the ids get no gradient.
#include <cstring>
#include <sstream>

#include "backend/cpu/parallel.h"
#include "core/random.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

constexpr const char* kWho = "EmbedID";

// "(1, 2)" for flat index k of shape s (the position of an offending id).
std::string position_of(int64_t k, const Shape& s) {
  std::vector<int64_t> idx(static_cast<size_t>(s.ndim()));
  for (int32_t d = s.ndim() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = s[d] ? k % s[d] : 0;
    k = s[d] ? k / s[d] : 0;
  }
  std::ostringstream os;
  os << "(";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << (idx.size() == 1 ? ",)" : ")");
  return os.str();
}

class EmbedID final : public Function {
 public:
  EmbedID(int64_t in_size, int64_t out_size, std::shared_ptr<Parameters> params)
      : in_size_(in_size), out_size_(out_size) {
    parameters = std::move(params);
  }
  const char* name() const override { return kWho; }
  FuncPtr clone() const override {
    return std::make_shared<EmbedID>(in_size_, out_size_, parameters);
  }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, kWho, ": expects 1 input (the ids), got ", in.size());
    const Array& x = in[0];
    const Array& W = (*parameters)[0].param;
    if (x.dtype() != DType::Int32)
      fail(CH_ERR_DTYPE, kWho, ": the ids are a ", x.describe(), "; int32 expected");
    cpu::require_cpu(x, kWho);
    if (x.ndim() + 1 > CH_MAX_NDIM)
      fail(CH_ERR_SHAPE, kWho, ": the ids have ", x.ndim(), " dimensions; at most ",
           CH_MAX_NDIM - 1, " allowed");
    const int32_t* ids = x.data<int32_t>();
    const int64_t n = x.size();
    for (int64_t k = 0; k < n; ++k)
      if (ids[k] < 0 || ids[k] >= in_size_)
        fail(CH_ERR_INVALID_ARGUMENT, kWho, ": id ", ids[k], " at position ",
             position_of(k, x.shape()), " is out of range [0, ", in_size_, ")");
    Shape ys = x.shape();
    ys.push_back(out_size_);
    Array y = Array::empty(W.dtype(), ys, W.device());
    const size_t row = static_cast<size_t>(out_size_) * dtype_size(W.dtype());
    const char* w = static_cast<const char*>(W.raw());
    char* py = static_cast<char*>(y.raw());
    const int64_t grain =
        std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, out_size_));
    cpu::parallel_for(n, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k)
        std::memcpy(py + static_cast<size_t>(k) * row, w + static_cast<size_t>(ids[k]) * row, row);
    });
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& x = in[0];
    Parameter& p = (*parameters)[0];
    const int32_t* ids = x.data<int32_t>();
    const int64_t n = x.size(), m = out_size_;
    dispatch_floating(p.grad.dtype(), kWho, [&](auto t) {
      using T = decltype(t);
      T* gw = p.grad.data<T>();
      const T* g = gy[0].data<T>();
      // Scatter-add (ids may repeat): threads split the columns, so no two
      // write the same element.
      const int64_t col_grain =
          std::max<int64_t>(8, cpu::kElementwiseGrain / std::max<int64_t>(1, n));
      cpu::parallel_for(m, col_grain, [&](int64_t jb, int64_t je) {
        for (int64_t k = 0; k < n; ++k) {
          T* dst = gw + ids[k] * m;
          const T* src = g + k * m;
          for (int64_t j = jb; j < je; ++j) dst[j] += src[j];
        }
      });
    });
    return {Array()};
  }

 private:
  int64_t in_size_, out_size_;
};

}  // namespace

FuncPtr embed_id_new(int64_t in_size, int64_t out_size, DType dtype, const Array* initial_W) {
  const char* who = "ch_functions_embed_id_new";
  if (in_size <= 0 || out_size <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": in_size ", in_size, " and out_size ", out_size,
         " must be positive");
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(dtype), " given; float32 or float64 expected");
  const Shape shape{in_size, out_size};
  Array W;
  if (initial_W) {
    if (initial_W->dtype() != dtype || initial_W->shape() != shape)
      fail(CH_ERR_SHAPE, who, ": initial_W is a ", initial_W->describe(), "; a ", dtype_name(dtype),
           " array of shape ", shape.to_string(), " expected");
    cpu::require_cpu(*initial_W, who);
    W = initial_W->copy();
  } else {
    W = Array::empty(dtype, shape);
    random::fill_normal(W, 0.0, 1.0);  // Chainer 1.0.1: numpy.random.randn(in_size, out_size)
  }
  auto params = std::make_shared<Parameters>();
  params->push_back(Parameter{"W", W, Array::zeros_like(W)});
  return std::make_shared<EmbedID>(in_size, out_size, std::move(params));
}

}  // namespace chainerc::ops
