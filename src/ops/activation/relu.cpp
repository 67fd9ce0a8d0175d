// relu: y = max(0, x) (Chainer's F.relu); gx = gy where x > 0, else 0.
// Keeps y for backward (y > 0 exactly where x > 0), so x can be released.
// A large y in host memory is computed when first read (ReluOfInput): by
// then the caller has usually released x (a layer's output, whose handle
// goes once relu has it), and y is written over x's bytes, still in cache
// from x's writer, and takes them over (DeferredValue::adoptable_operand).
// Where x is still held, y gets bytes of its own as before.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// Below this, x and y stay in the core's caches and writing y into fresh
// bytes costs little; the large MLP's 100 x 1000 float32 layers (400 KB)
// are well above it.
constexpr size_t kDeferBytes = size_t{64} << 10;

// y = relu(x), computed when y is first read.
class ReluOfInput final : public DeferredValue {
 public:
  explicit ReluOfInput(Array x) : DeferredValue({std::move(x)}) {}
  void write(void* dst) const override {
    const Array& x = operands()[0];
    Array y(Buffer::wrap(dst, x.nbytes(), x.device(), nullptr, nullptr), x.dtype(), x.shape());
    kernels::relu(x, y);
  }
  bool add_scaled_to(const Array&, double) const override { return false; }
  int adoptable_operand() const override { return 0; }  // dst may be x's bytes
};

// y = relu(x), deferred where it can be (see the top of the file): x large,
// every write into it seen by the engine (Buffer::writes_seen), and y's
// bytes able to hold a deferred value (the host's caching allocator:
// Buffer::defer_zero); else computed now.
Array relu_of(const Array& x) {
  Array y = Array::empty_like(x);
  const std::shared_ptr<Buffer>& xb = x.buffer();
  const bool deferred = x.nbytes() >= kDeferBytes && xb && xb->writes_seen() &&
                        x.nbytes() == xb->nbytes() && y.defer_zero() &&
                        y.buffer()->defer_value(std::make_shared<ReluOfInput>(x), y.nbytes());
  if (!deferred) kernels::relu(x, y);
  return y;
}

class ReLU final : public Function {
 public:
  const char* name() const override { return "ReLU"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    check_float("relu", in[0]);
    y_ = relu_of(in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run_over_grad(kernels::relu_grad, gy[0], y_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy [y > 0]; the mask is a constant (relu'' = 0)
    Array mask = run(kernels::relu_grad, Array::full(y_.dtype(), y_.shape(), 1.0, y_.device()), y_);
    return {mul(gy[0], constant_variable(mask))};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr relu(const VarPtr& x) { return apply1(std::make_shared<ReLU>(), {x}); }

}  // namespace chainerc::ops
