// Kernels of the math functions (ops/math): arithmetic with NumPy
// broadcasting, the scalar forms, pow/exp/log, reductions and matrix products.
// Arguments are checked by the op; outputs are allocated by the op on the
// inputs' device. The per-element math is in pointwise/arithmetic.h.
#pragma once

#include "kernels/registry.h"

namespace chainerc::kernels {

// y = f(a, b) where y has the broadcast shape of a and b (float arrays).
using BroadcastFn = void(const Array& a, const Array& b, Array& y);
inline Kernel<BroadcastFn> add{"add"};
inline Kernel<BroadcastFn> sub{"sub"};
inline Kernel<BroadcastFn> mul{"mul"};
inline Kernel<BroadcastFn> div{"div"};
inline Kernel<BroadcastFn> div_grad_b{"div_grad_b"};  // -a / b (a = gy * y)

inline Kernel<UnaryFn> neg{"neg"};
inline Kernel<UnaryFn> exp{"exp"};
inline Kernel<UnaryFn> log{"log"};
inline Kernel<BinaryFn> exp_grad{"exp_grad"};  // gy * y
inline Kernel<BinaryFn> log_grad{"log_grad"};  // gy / x

inline Kernel<UnaryScalarFn> add_scalar{"add_scalar"};
inline Kernel<UnaryScalarFn> sub_scalar{"sub_scalar"};
inline Kernel<UnaryScalarFn> rsub_scalar{"rsub_scalar"};
inline Kernel<UnaryScalarFn> mul_scalar{"mul_scalar"};
inline Kernel<UnaryScalarFn> div_scalar{"div_scalar"};
inline Kernel<UnaryScalarFn> rdiv_scalar{"rdiv_scalar"};
inline Kernel<UnaryScalarFn> pow_scalar{"pow_scalar"};
inline Kernel<UnaryScalarFn> rpow_scalar{"rpow_scalar"};
inline Kernel<BinaryScalarFn> rdiv_scalar_grad{"rdiv_scalar_grad"};  // (gy, x, s)
inline Kernel<BinaryScalarFn> pow_scalar_grad{"pow_scalar_grad"};    // (gy, x, p)
inline Kernel<BinaryScalarFn> rpow_scalar_grad{"rpow_scalar_grad"};  // (gy, y, ln s)

// y = x summed over the axes along which y's shape was broadcast to x's
// (NumPy: x.sum(axes).reshape(y.shape)); a 0-d or one-element y is the total,
// summed in fixed blocks so that it does not depend on the thread count.
inline Kernel<void(const Array& x, Array& y)> sum_to{"sum_to"};
// The extremum of x over the axes along which y (x's ndim) has extent 1:
// y = the maximum (is_min: the minimum; a NaN wins, as NumPy's amax) and
// index (int32, y's shape) = the position of its first occurrence among the
// reduced elements taken in row-major order (NumPy's argmax over those axes
// flattened). Either output may be null; every reduced set is non-empty
// (checked by the op). The reduce-over-axes kernel of max, min, argmax,
// argmin, logsumexp and log_softmax.
inline Kernel<void(const Array& x, bool is_min, Array* y, Array* index)> reduce_extreme{
    "reduce_extreme"};
// y = x broadcast to y's shape (NumPy rules, checked by the op); any dtype.
inline Kernel<void(const Array& x, Array& y)> broadcast_to{"broadcast_to"};
// acc += x (same shape and dtype), in place: gradient accumulation.
inline Kernel<void(Array& acc, const Array& x)> add_into{"add_into"};

// A matrix product over row-major matrices, C = alpha op(A) op(B) + beta C,
// in `batch` independent products whose operands lie `stride_*` elements
// apart, starting at element offsets `offset_*` of the arrays: the one entry
// point every GEMM in chainerc goes through.
struct Gemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t offset_a = 0, offset_b = 0, offset_c = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  // Memory the product may use while it runs, whose contents nobody keeps
  // (null: none): a backend may put op(B) there as a k x n matrix, for a
  // kernel that takes B only as stored (the CPU's libxsmm, where it measures
  // faster that way). Only for batch 1.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;

  // C (m x n) = op(A) op(B) with op(A) m x k, one product of packed matrices
  // (each leading dimension its matrix's row length as stored).
  static Gemm packed(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
    Gemm g;
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = ta ? m : k;
    g.ldb = tb ? k : n;
    g.ldc = n;
    return g;
  }
};
inline Kernel<void(const Gemm& g, const Array& a, const Array& b, Array& c)> gemm{"gemm"};

}  // namespace chainerc::kernels
