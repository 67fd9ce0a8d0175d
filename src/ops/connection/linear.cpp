// Linear: y = x W^T + b (Chainer's F.Linear), the fully-connected layer.
// W has shape (out_size, in_size), b (out_size,); an input of shape (N, ...)
// is flattened to (N, in_size). Backward accumulates gW += gy^T x and
// gb += sum(gy, 0) into the shared parameter gradients and returns gx = gy W
// (gW = gy^T x, with GEMM's beta 0, where zero_grads left gW marked zero).
// Where the optimizer takes SGD's step in backward (Buffer::take_step: the
// gradient is armed by zero_grads and this is W's only application since the
// last update), backward computes gx first and then W += scale gy^T x
// (scale = -lr) as one GEMM into W: no gradient written, no update pass over
// W and gW.
// In the usual loop (zero_grads, forward, backward, update), a large gW
// pending zero is left unwritten as the product gy^T x (WeightGradProduct,
// Buffer::defer_value): SGD's update then adds -lr gy^T x into W in one GEMM
// (Buffer::add_deferred_to), and any other reader of gW, before or after the
// update, gets the product written first: the same saving without giving up
// the gradient.
#include <cmath>

#include "core/random.h"
#include "kernels/connection.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

namespace chainerc::ops {
namespace {

// W += scale gy^T x, one GEMM into W (alpha = scale, beta = 1).
void add_scaled_weight_grad(const Array& gy, const Array& x, double scale, Array W) {
  kernels::Gemm g = kernels::Gemm::packed(true, false, W.shape()[0], W.shape()[1], gy.shape()[0]);
  g.alpha = scale;
  g.beta = 1;
  kernels::gemm(g, gy, x, W);
}

// W's gradient gy^T x, not yet written (see the top of the file).
class WeightGradProduct final : public DeferredValue {
 public:
  WeightGradProduct(Array gy, Array x, DType dtype, int64_t out, int64_t in)
      : DeferredValue({gy, x}), dtype_(dtype), out_(out), in_(in) {}

  void write(void* dst) const override {
    Array gw(Buffer::wrap(dst, static_cast<size_t>(out_ * in_) * dtype_size(dtype_), gy().device(),
                          nullptr, nullptr),
             dtype_, Shape{out_, in_});
    kernels::gemm(kernels::Gemm::packed(true, false, out_, in_, gy().shape()[0]), gy(), x(), gw);
  }
  bool add_scaled_to(const Array& target, double scale) const override {
    if (target.dtype() != dtype_ || target.shape() != Shape{out_, in_} ||
        target.device() != gy().device())
      return false;
    add_scaled_weight_grad(gy(), x(), scale, target);
    return true;
  }

 private:
  const Array& gy() const { return operands()[0]; }
  const Array& x() const { return operands()[1]; }
  DType dtype_;
  int64_t out_, in_;
};

// Gradients smaller than this are written at once: their update pass runs
// from the cache and costs little, while the deferred product keeps gy and x.
constexpr size_t kDeferWeightGradBytes = size_t{1} << 20;

// Leaves gW = gy^T x deferred where gW is pending zero (host memory only:
// Buffer::defer_zero), at least kDeferWeightGradBytes, its operands on its
// device, and neither shares memory with W or gW. An
// operand whose writes the engine cannot see (Buffer::writes_seen: the
// caller's memory, a pointer handed out) is kept as a copy, when the copies
// come to at most half of W's bytes. False: nothing done, write gW now.
bool defer_weight_grad(const Array& gy, const Array& x, const Parameter& pw) {
  const Array& gw = pw.grad;
  Buffer* gw_buffer = gw.buffer().get();
  if (!gw_buffer || gw.nbytes() < kDeferWeightGradBytes || gw.nbytes() != gw_buffer->nbytes() ||
      !gw_buffer->zero_pending())
    return false;
  for (const Array* a : {&gy, &x})
    if (a->shares_memory_with(gw) || a->shares_memory_with(pw.param) || a->device() != gw.device())
      return false;
  size_t copied = 0;
  for (const Array* a : {&gy, &x})
    if (!a->buffer()->writes_seen()) copied += a->nbytes();
  if (copied > pw.param.nbytes() / 2) return false;
  auto kept = [](const Array& a) { return a.buffer()->writes_seen() ? a : a.copy(); };
  const int64_t out = gw.shape()[0], in = gw.shape()[1];
  return gw_buffer->defer_value(
      std::make_shared<WeightGradProduct>(kept(gy), kept(x), gw.dtype(), out, in), gw.nbytes());
}

class Linear final : public Function {
 public:
  Linear(int64_t in_size, int64_t out_size, bool has_bias, std::shared_ptr<Parameters> params)
      : in_(in_size), out_(out_size), has_bias_(has_bias) {
    parameters = std::move(params);
  }
  const char* name() const override { return "Linear"; }
  FuncPtr clone() const override {
    return std::make_shared<Linear>(in_, out_, has_bias_, parameters);
  }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 1) fail(CH_ERR_INVALID_ARGUMENT, "Linear: takes 1 input, got ", in.size());
    const Array& x = in[0];
    check_float("Linear", x);
    const Array& W = parameter_at(*this, 0).param;
    check_weights(W);
    if (x.dtype() != W.dtype())
      fail(CH_ERR_DTYPE, "Linear: input x is ", dtype_name(x.dtype()), " but W is ",
           dtype_name(W.dtype()));
    if (x.ndim() < 1) fail(CH_ERR_SHAPE, "Linear: input x is 0-d; (N, ", in_, ") expected");
    const int64_t n = x.shape()[0];
    const int64_t features = n ? x.size() / n : [&] {
      int64_t f = 1;
      for (int32_t i = 1; i < x.ndim(); ++i) f *= x.shape()[i];
      return f;
    }();
    if (features != in_)
      fail(CH_ERR_SHAPE, "Linear: input x has shape ", x.shape().to_string(), " (", features,
           " features per sample) but in_size is ", in_);
    Array y = Array::empty(x.dtype(), Shape{n, out_}, x.device());
    kernels::Gemm g = kernels::Gemm::packed(false, true, n, out_, in_);  // y = x W^T (+ y)
    if (has_bias_) {  // y rows start as b; the product is added onto them
      kernels::broadcast_to(parameter_at(*this, 1).param, y);
      g.beta = 1;
    }
    Buffer* gw = parameter_at(*this, 0).grad.buffer().get();
    // W's gradient, pending zero since zero_grads, holds nothing until backward
    // writes it: it lends its bytes to the product, which may put W transposed
    // there (GemmWorkspace). Not when an operand is that gradient itself.
    const bool operand_is_gw = gw && (x.buffer().get() == gw || W.buffer().get() == gw);
    const Buffer::Loan loan(operand_is_gw ? nullptr : gw, W.nbytes());
    g.workspace = loan.data();
    g.workspace_bytes = loan.data() ? W.nbytes() : 0;
    kernels::gemm(g, x, W, y);
    if (gw) gw->count_step_use();
    return {y};
  }

  // gx = gy W with W as a variable (parameter_variable); gW += gy^T x and
  // gb += sum(gy, 0) as arrays, into the parameters' gradients.
  CH_GRAPH_BACKWARD {
    const VarPtr& x = inputs[0];
    Parameter& pw = parameter_at(*this, 0);
    check_weights(pw.param);
    if (parameter_grads_enabled()) {
      const Array& g = gy[0]->data;
      kernels::Gemm gw = kernels::Gemm::packed(true, false, out_, in_, g.shape()[0]);
      gw.beta = pw.grad.claim_zero() ? 0 : 1;
      kernels::gemm(gw, g, x->data, pw.grad);
      if (has_bias_) kernels::linear_bias_grad(g, parameter_at(*this, 1).grad);
    }
    if (!needs_input_grad(0)) return {nullptr};
    return {reshape(matmul(gy[0], parameter_variable(*this, 0), false, false), x->data.shape())};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    Parameter& pw = parameter_at(*this, 0);
    check_weights(pw.param);
    const int64_t n = gy.shape()[0];
    const bool want_gx = needs_input_grad(0);  // not for data (requires_grad 0)
    Array gx = want_gx ? Array::empty(x.dtype(), x.shape(), x.device()) : Array();
    const kernels::Gemm gx_product =
        kernels::Gemm::packed(false, false, n, in_, out_);  // gx = gy W
    Buffer* gw_buffer = pw.grad.buffer().get();
    double step = 0;
    const bool stepped = gw_buffer && gw_buffer->take_step(&step);
    if (stepped) {  // W += step gy^T x, once gx = gy W has read W
      if (want_gx) kernels::gemm(gx_product, gy, pw.param, gx);
      add_scaled_weight_grad(gy, x, step, pw.param);
    } else {
      if (gw_buffer && gw_buffer->step_taken())
        fail(CH_ERR_GRAPH,
             "Linear: backward again through a layer whose W took its SGD step in the last "
             "backward (ch_optimizer_set_step_in_backward): W has changed since forward; call "
             "ch_optimizer_update and ch_optimizer_zero_grads first");
      // After zero_grads the gradient is only marked zero (Buffer::defer_zero):
      // the first accumulation writes gW = gy^T x instead of reading zeros back,
      // or leaves it for the update (defer_weight_grad).
      if (!defer_weight_grad(gy, x, pw)) {
        kernels::Gemm gw = kernels::Gemm::packed(true, false, out_, in_, n);  // gW += gy^T x
        gw.beta = pw.grad.claim_zero() ? 0 : 1;
        kernels::gemm(gw, gy, x, pw.grad);
      }
    }
    if (has_bias_) kernels::linear_bias_grad(gy, parameter_at(*this, 1).grad);  // gb += sum(gy, 0)
    if (want_gx && !stepped) kernels::gemm(gx_product, gy, pw.param, gx);
    return {gx};
  }

 private:
  void check_weights(const Array& W) const {
    if (W.shape() != Shape{out_, in_})
      fail(CH_ERR_SHAPE, "Linear: W has shape ", W.shape().to_string(), " but (", out_, ", ", in_,
           ") is expected");
    if (has_bias_) {
      const Array& b = parameter_at(*this, 1).param;
      if (b.shape() != Shape{out_} || b.dtype() != W.dtype())
        fail(CH_ERR_SHAPE, "Linear: b is a ", b.describe(), " but a ", dtype_name(W.dtype()),
             " array of shape (", out_, ",) is expected");
    }
  }

  int64_t in_, out_;
  bool has_bias_;
};

}  // namespace

FuncPtr linear_new(int64_t in_size, int64_t out_size, DType dtype, double wscale, double bias,
                   bool nobias, const Array* initial_W, const Array* initial_b) {
  if (in_size < 1 || out_size < 1)
    fail(CH_ERR_INVALID_ARGUMENT, "Linear: in_size ", in_size, " and out_size ", out_size,
         " must be positive");
  if (nobias && initial_b)
    fail(CH_ERR_INVALID_ARGUMENT, "Linear: initial_b is given but nobias is set");
  auto params = std::make_shared<Parameters>();
  Array W = initial_parameter("Linear", "W", initial_W, dtype, Shape{out_size, in_size});
  if (!initial_W)
    random::fill_normal(W, 0.0, wscale * std::sqrt(1.0 / static_cast<double>(in_size)));
  params->push_back(make_parameter("W", W));
  if (!nobias) {
    Array b = initial_parameter("Linear", "b", initial_b, dtype, Shape{out_size});
    if (!initial_b) b.fill(bias);
    params->push_back(make_parameter("b", b));
  }
  return std::make_shared<Linear>(in_size, out_size, !nobias, std::move(params));
}

}  // namespace chainerc::ops
