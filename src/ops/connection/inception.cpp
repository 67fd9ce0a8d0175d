// Inception: the GoogLeNet module of Chainer 1.0.1's chainer.functions.Inception:
//   out1 = conv1(x)                          1x1, in -> out1
//   out3 = conv3(relu(proj3(x)))             1x1 in -> proj3, 3x3 pad 1 -> out3
//   out5 = conv5(relu(proj5(x)))             1x1 in -> proj5, 5x5 pad 2 -> out5
//   pool = projp(max_pooling_2d(x, 3, 1, 1)) 1x1 in -> proj_pool
//   y = relu(concat((out1, out3, out5, pool), axis=1))
// Chainer inserts the sub-graph behind x; here the module is ONE graph node
// whose forward runs the sub-functions' forward on arrays and keeps the
// intermediate arrays, and whose backward runs their backward in reverse
// order (no engine re-entry, no extra variables). The node's parameters are
// the six convolutions' W and b in Chainer's FunctionSet order (sorted by
// name): conv1, conv3, conv5, proj3, proj5, projp, named "conv1/W", ...; the
// sub-convolutions read them from that one list. The relus are the relu
// function's kernels; the branches are joined and split by concat's.
// The graph backward (double backprop) is the same chain over variables:
// the relus' masks as constants, the sub-convolutions' and the pooling's
// graph backwards (graph_ops.h) with the kept arrays as their inputs; the
// parameters' gradients stay arrays, as Linear's.
#include <array>
#include <string>
#include <vector>

#include "kernels/activation.h"
#include "kernels/array.h"
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

enum Sub { kConv1, kConv3, kConv5, kProj3, kProj5, kProjP, kSubs };
constexpr const char* kSubNames[kSubs] = {"conv1", "conv3", "conv5", "proj3", "proj5", "projp"};

struct InceptionConfig {
  int64_t in, out1, proj3, out3, proj5, out5, proj_pool;
  DType dtype;
};

class Inception final : public Function {
 public:
  Inception(const InceptionConfig& c, std::shared_ptr<Parameters> params,
            std::array<FuncPtr, kSubs> convs)
      : c_(c), convs_(std::move(convs)) {
    parameters = std::move(params);
  }
  const char* name() const override { return "Inception"; }
  FuncPtr clone() const override { return std::make_shared<Inception>(c_, parameters, convs_); }

  Arrays forward(const Arrays& in) override {
    const char* who = "inception";
    if (in.size() != 1) fail(CH_ERR_INVALID_ARGUMENT, who, ": takes 1 input, got ", in.size());
    const Array& x = in[0];
    check_float(who, x);
    if (x.ndim() != 4)
      fail(CH_ERR_SHAPE, who, ": x must be 4-d (batch, channels, height, width); got a ",
           x.describe());
    if (x.shape()[1] != c_.in)
      fail(CH_ERR_SHAPE, who, ": x has ", x.shape()[1], " channels (shape ", x.shape().to_string(),
           ") but the module has in_channels ", c_.in);
    if (x.dtype() != c_.dtype)
      fail(CH_ERR_DTYPE, who, ": x is ", dtype_name(x.dtype()), " but the module's parameters are ",
           dtype_name(c_.dtype));
    // The sub-convolutions read this object's current parameter list (a
    // clone may have been given another one, e.g. copies on a device):
    // sub-convolution i's W and b are entries 2i and 2i + 1.
    for (int i = 0; i < kSubs; ++i)
      nodes_[i] = convolution_2d_rebind(convs_[i], parameters, 2 * static_cast<size_t>(i));
    pool_ = max_pooling_2d_node(3, 3, 1, 1, 1, 1, true);

    Array o1 = nodes_[kConv1]->forward({x})[0];
    r3_ = run(kernels::relu, nodes_[kProj3]->forward({x})[0]);
    Array o3 = nodes_[kConv3]->forward({r3_})[0];
    r5_ = run(kernels::relu, nodes_[kProj5]->forward({x})[0]);
    Array o5 = nodes_[kConv5]->forward({r5_})[0];
    pooled_ = pool_->forward({x})[0];
    Array op = nodes_[kProjP]->forward({pooled_})[0];

    // y = relu(concat(o1, o3, o5, op) on channels).
    const int64_t C = c_.out1 + c_.out3 + c_.out5 + c_.proj_pool;
    Array cat =
        Array::empty(x.dtype(), Shape{x.shape()[0], C, x.shape()[2], x.shape()[3]}, x.device());
    kernels::concat(std::vector<Array>{o1, o3, o5, op}, 1, cat);
    Array y = run(kernels::relu, cat);
    y_ = y;
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    const int64_t N = x.shape()[0], H = x.shape()[2], W = x.shape()[3];
    const int64_t widths[4] = {c_.out1, c_.out3, c_.out5, c_.proj_pool};
    std::vector<Array> g(4);
    for (int k = 0; k < 4; ++k)
      g[k] = Array::empty(x.dtype(), Shape{N, widths[k], H, W}, x.device());
    // Split relu'(y) * gy into the four branches.
    kernels::concat_split(run(kernels::relu_grad, gy, y_), 1, g);
    Array gx = nodes_[kConv1]->backward({x}, {g[0]})[0];
    Array g3 = run(kernels::relu_grad, nodes_[kConv3]->backward({r3_}, {g[1]})[0], r3_);
    kernels::add_into(gx, nodes_[kProj3]->backward({x}, {g3})[0]);
    Array g5 = run(kernels::relu_grad, nodes_[kConv5]->backward({r5_}, {g[2]})[0], r5_);
    kernels::add_into(gx, nodes_[kProj5]->backward({x}, {g5})[0]);
    Array gp = nodes_[kProjP]->backward({pooled_}, {g[3]})[0];
    kernels::add_into(gx, pool_->backward({x}, {gp})[0]);
    return {gx};
  }

  CH_GRAPH_BACKWARD {
    const Array& x = inputs[0]->data;
    const int64_t N = x.shape()[0], H = x.shape()[2], W = x.shape()[3];
    const int64_t widths[4] = {c_.out1, c_.out3, c_.out5, c_.proj_pool};
    std::vector<Shape> shapes;
    for (int64_t w : widths) shapes.push_back(Shape{N, w, H, W});
    auto relu_mask = [](const Array& y) {
      return constant_variable(
          run(kernels::relu_grad, Array::full(y.dtype(), y.shape(), 1.0, y.device()), y));
    };
    std::vector<VarPtr> g = split_axis(mul(gy[0], relu_mask(y_)), 1, std::move(shapes));
    auto conv = [&](Sub k, const Array& in, const VarPtr& gk) {
      return convolution_2d_graph_grad(nodes_[k], in, gk, true);
    };
    VarPtr gx = conv(kConv1, x, g[0]);
    gx = add(gx, conv(kProj3, x, mul(conv(kConv3, r3_, g[1]), relu_mask(r3_))));
    gx = add(gx, conv(kProj5, x, mul(conv(kConv5, r5_, g[2]), relu_mask(r5_))));
    gx = add(gx, max_pooling_2d_grad(pool_, x, conv(kProjP, pooled_, g[3])));
    return {gx};
  }

 private:
  InceptionConfig c_;
  std::array<FuncPtr, kSubs> convs_;  // unapplied sub-convolutions (shared by clones)
  std::array<FuncPtr, kSubs> nodes_;  // this application's sub-nodes
  FuncPtr pool_;
  Array r3_, r5_, pooled_, y_;
};

}  // namespace

FuncPtr inception_new(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5,
                      int64_t out5, int64_t proj_pool, DType dtype) {
  const char* who = "inception";
  const int64_t sizes[] = {in_channels, out1, proj3, out3, proj5, out5, proj_pool};
  for (int64_t s : sizes)
    if (s <= 0)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": channel counts must be positive (in_channels ",
           in_channels, ", out1 ", out1, ", proj3 ", proj3, ", out3 ", out3, ", proj5 ", proj5,
           ", out5 ", out5, ", proj_pool ", proj_pool, ")");
  // (in, out, k, pad) per sub-convolution, in kSubNames order.
  const int64_t spec[kSubs][4] = {{in_channels, out1, 1, 0},  {proj3, out3, 3, 1},
                                  {proj5, out5, 5, 2},        {in_channels, proj3, 1, 0},
                                  {in_channels, proj5, 1, 0}, {in_channels, proj_pool, 1, 0}};
  auto params = std::make_shared<Parameters>();
  std::array<FuncPtr, kSubs> convs;
  for (int i = 0; i < kSubs; ++i) {
    FuncPtr conv =
        convolution_2d_new(spec[i][0], spec[i][1], spec[i][2], spec[i][2], 1, 1, spec[i][3],
                           spec[i][3], dtype, 1.0, 0.0, false, nullptr, nullptr);
    const size_t offset = params->size();  // 2 * i: W and b per sub-convolution
    for (Parameter p : *conv->parameters) {
      p.name = std::string(kSubNames[i]) + "/" + p.name;
      params->push_back(std::move(p));
    }
    convs[i] = convolution_2d_rebind(conv, params, offset);
  }
  return std::make_shared<Inception>(
      InceptionConfig{in_channels, out1, proj3, out3, proj5, out5, proj_pool, dtype}, params,
      std::move(convs));
}

}  // namespace chainerc::ops
