// matmul: Chainer 7's F.matmul, NumPy's matmul rules: op(a) op(b) where op
// swaps the last two axes when transa / transb is set (ignored for a 1-D
// operand); a 1-D a is a row (1, k) and a 1-D b a column (k, 1), the added
// axis dropped from the result; N-d operands are stacks of matrices over
// their leading axes, broadcast against each other. Two 2-D operands are one
// MatMul node; anything else is broadcast_to / reshape around one
// BatchMatMul node (differentiable, so the gradients sum over broadcast
// axes). batch_matmul (Chainer 1's): the same for each of the B matrices of
// (B, m, k) operands; a 2-D operand (B, n) is a batch of column vectors
// (B, n, 1). Every product goes through the gemm kernel.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class MatMul final : public Function {
 public:
  MatMul(bool batched, bool transa, bool transb) : batched_(batched), ta_(transa), tb_(transb) {}
  const char* name() const override { return batched_ ? "BatchMatMul" : "MatMul"; }

  Arrays forward(const Arrays& in) override {
    const char* who = batched_ ? "batch_matmul" : "matmul";
    check_float_pair(who, in[0], in[1]);
    Shape sa = as_matrices(in[0], "a"), sb = as_matrices(in[1], "b");
    if (sa[0] != sb[0])
      fail(CH_ERR_SHAPE, who, ": batch sizes differ (a has shape ", in[0].shape().to_string(),
           ", b has shape ", in[1].shape().to_string(), ")");
    const int64_t m = ta_ ? sa[2] : sa[1], ka = ta_ ? sa[1] : sa[2];
    const int64_t kb = tb_ ? sb[2] : sb[1], n = tb_ ? sb[1] : sb[2];
    if (ka != kb)
      fail(CH_ERR_SHAPE, who, ": inner dimensions differ: a has shape ", in[0].shape().to_string(),
           ta_ ? " (transposed)" : "", " and b has shape ", in[1].shape().to_string(),
           tb_ ? " (transposed)" : "", " (", ka, " vs ", kb, ")");
    Array y =
        Array::empty(in[0].dtype(), batched_ ? Shape{sa[0], m, n} : Shape{m, n}, in[0].device());
    product(ta_, tb_, sa[0], m, n, ka, in[0], in[1], y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array &a = in[0], &b = in[1], &gy = gys[0];
    Shape sa = as_matrices(a, "a"), sb = as_matrices(b, "b");
    const int64_t batch = sa[0];
    const int64_t m = ta_ ? sa[2] : sa[1], k = ta_ ? sa[1] : sa[2], n = tb_ ? sb[1] : sb[2];
    Array ga = Array::empty_like(a), gb = Array::empty_like(b);
    // ga: op(a) = gy op(b)^T, i.e. a = gy op(b)^T (m x k) or a = op(b) gy^T (k x m)
    if (!ta_)
      product(false, !tb_, batch, m, k, n, gy, b, ga);
    else
      product(tb_, true, batch, k, m, n, b, gy, ga);
    // gb: op(b) = op(a)^T gy, i.e. b = op(a)^T gy (k x n) or b = gy^T op(a) (n x k)
    if (!tb_)
      product(!ta_, false, batch, k, n, m, a, gy, gb);
    else
      product(true, ta_, batch, n, k, m, gy, a, gb);
    return {ga, gb};
  }
  CH_GRAPH_BACKWARD {
    const VarPtr &a0 = inputs[0], &b0 = inputs[1];
    auto mat = [&](const VarPtr& v, const char* arg) {
      Shape s = as_matrices(v->data, arg);
      return reshape(v, batched_ ? s : Shape{s[1], s[2]});
    };
    VarPtr a = mat(a0, "a"), b = mat(b0, "b");
    auto mm = [&](const VarPtr& l, const VarPtr& r, bool tl, bool tr) {
      return batched_ ? batch_matmul(l, r, tl, tr) : matmul(l, r, tl, tr);
    };
    VarPtr g = gy[0], ga, gb;
    if (needs_input_grad(0))
      ga = reshape(ta_ ? mm(b, g, tb_, true) : mm(g, b, false, !tb_), a0->data.shape());
    if (needs_input_grad(1))
      gb = reshape(tb_ ? mm(g, a, true, ta_) : mm(a, g, !ta_, false), b0->data.shape());
    return {ga, gb};
  }

 private:
  // (batch, rows, cols) of an operand as stored (before op()).
  Shape as_matrices(const Array& x, const char* arg) const {
    const Shape& s = x.shape();
    if (!batched_) {
      if (s.ndim() == 1) return Shape{1, s[0], 1};
      if (s.ndim() == 2) return Shape{1, s[0], s[1]};
      fail(CH_ERR_SHAPE, "matmul: ", arg, " has shape ", s.to_string(),
           "; a 1-D or 2-D array is expected");
    }
    if (s.ndim() == 2) return Shape{s[0], s[1], 1};
    if (s.ndim() == 3) return Shape{s[0], s[1], s[2]};
    fail(CH_ERR_SHAPE, "batch_matmul: ", arg, " has shape ", s.to_string(),
         "; a 2-D or 3-D array is expected");
  }

  // For each of `batch` packed matrices, one after another: C (m x n) =
  // op(A) op(B) with op(A) m x k.
  static void product(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                      const Array& A, const Array& B, Array& C) {
    kernels::Gemm g = kernels::Gemm::packed(ta, tb, m, n, k);
    g.batch = batch;
    g.stride_a = m * k;
    g.stride_b = k * n;
    g.stride_c = m * n;
    kernels::gemm(g, A, B, C);
  }

  bool batched_, ta_, tb_;
};

}  // namespace

VarPtr matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb) {
  check_float_pair("matmul", a->data, b->data);
  const Shape &sa = a->data.shape(), &sb = b->data.shape();
  if (sa.ndim() == 0 || sb.ndim() == 0)
    fail(CH_ERR_SHAPE, "matmul: a has shape ", sa.to_string(), " and b has shape ", sb.to_string(),
         "; operands of at least 1 dimension are expected");
  const bool a_vec = sa.ndim() == 1, b_vec = sb.ndim() == 1;
  if (a_vec) transa = false;  // Chainer 7 (NumPy): a 1-D operand is not transposed
  if (b_vec) transb = false;
  // The operands as (batch..., rows, cols) as stored.
  Shape ma = a_vec ? Shape{1, sa[0]} : sa, mb = b_vec ? Shape{sb[0], 1} : sb;
  const int32_t na = ma.ndim(), nb = mb.ndim();
  const int64_t m = transa ? ma[na - 1] : ma[na - 2], ka = transa ? ma[na - 2] : ma[na - 1];
  const int64_t kb = transb ? mb[nb - 1] : mb[nb - 2], n = transb ? mb[nb - 2] : mb[nb - 1];
  if (ka != kb)
    fail(CH_ERR_SHAPE, "matmul: inner dimensions differ: a has shape ", sa.to_string(),
         transa ? " (transposed)" : "", " and b has shape ", sb.to_string(),
         transb ? " (transposed)" : "", " (", ka, " vs ", kb, ")");
  Shape batch_a, batch_b;
  for (int32_t d = 0; d < na - 2; ++d) batch_a.push_back(ma[d]);
  for (int32_t d = 0; d < nb - 2; ++d) batch_b.push_back(mb[d]);
  const Shape batch = broadcast_shapes(batch_a, batch_b, "matmul");
  Shape out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  if (batch.ndim() == 0) {
    VarPtr y = apply1(std::make_shared<MatMul>(false, transa, transb),
                      {a_vec ? reshape(a, ma) : a, b_vec ? reshape(b, mb) : b});
    return y->data.shape() == out ? y : reshape(y, out);
  }
  const int64_t nbatch = batch.size();
  auto stack = [&](const VarPtr& v, const Shape& mat) {  // (nbatch, rows, cols)
    Shape full = batch;
    full.push_back(mat[mat.ndim() - 2]);
    full.push_back(mat[mat.ndim() - 1]);
    VarPtr w = v->data.shape() == mat ? v : reshape(v, mat);
    if (mat != full) w = broadcast_to(w, full);
    return reshape(w, Shape{nbatch, mat[mat.ndim() - 2], mat[mat.ndim() - 1]});
  };
  VarPtr y = apply1(std::make_shared<MatMul>(true, transa, transb), {stack(a, ma), stack(b, mb)});
  return reshape(y, out);
}
VarPtr batch_matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb) {
  return apply1(std::make_shared<MatMul>(true, transa, transb), {a, b});
}

}  // namespace chainerc::ops
