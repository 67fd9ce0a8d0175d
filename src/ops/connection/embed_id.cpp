// EmbedID: y[..., :] = W[x[...], :], the seed's chainer.functions.EmbedID
// (Chainer 1.0.1): W (in_size, out_size) ~ N(0, 1); ids are int32 of any
// shape; y has shape x.shape + (out_size,). Backward scatter-adds gy into gW
// (gW[x[k]] += gy[k]); the ids get no gradient. The graph backward (double
// backprop) is the same scatter into gW, which stays an array as Linear's:
// no gradient flows to an input, so nothing of it is a graph.
#include <sstream>

#include "core/random.h"
#include "kernels/connection.h"
#include "kernels/loss.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

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
    if (x.ndim() + 1 > CH_MAX_NDIM)
      fail(CH_ERR_SHAPE, kWho, ": the ids have ", x.ndim(), " dimensions; at most ",
           CH_MAX_NDIM - 1, " allowed");
    if (x.device() != W.device())
      fail(CH_ERR_DEVICE, kWho, ": the ids are on ", x.device().to_string(), " but W is on ",
           W.device().to_string());
    // On CUDA checked on the device and reported at the next synchronisation
    // (the gather and scatter kernels skip bad ids); elsewhere at once.
    const int64_t in_size = in_size_;
    const Shape shape = x.shape();
    auto describe = [shape, in_size](int64_t bad, int64_t value) {
      std::ostringstream os;
      os << kWho << ": id " << value << " at position " << position_of(bad, shape)
         << " is out of range [0, " << in_size << ")";
      return os.str();
    };
    if (kernels::defer_out_of_range_check.implemented_for(x.device().type)) {
      kernels::defer_out_of_range_check(x, in_size_, describe);
    } else {
      const int64_t bad = kernels::embed_id_find_invalid(x, in_size_);
      if (bad >= 0) fail(CH_ERR_INVALID_ARGUMENT, describe(bad, static_cast<int64_t>(x.get(bad))));
    }
    Shape ys = x.shape();
    ys.push_back(out_size_);
    Array y = Array::empty(W.dtype(), ys, W.device());
    kernels::embed_id_forward(x, W, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& x = in[0];
    Parameter& p = (*parameters)[0];
    kernels::embed_id_backward(x, gy[0], p.grad);
    return {Array()};
  }
  CH_GRAPH_BACKWARD {
    if (parameter_grads_enabled())
      kernels::embed_id_backward(inputs[0]->data, gy[0]->data, (*parameters)[0].grad);
    return {nullptr};
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
    W = host_copy(*initial_W, dtype);
  } else {
    W = Array::empty(dtype, shape);
    random::fill_normal(W, 0.0, 1.0);  // Chainer 1.0.1: numpy.random.randn(in_size, out_size)
  }
  auto params = std::make_shared<Parameters>();
  params->push_back(Parameter{"W", W, Array::zeros_like(W)});
  return std::make_shared<EmbedID>(in_size, out_size, std::move(params));
}

}  // namespace chainerc::ops
