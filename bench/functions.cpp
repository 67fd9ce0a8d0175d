// chainerc vs libtorch: forward + backward of each built-in function.
//
// One row per function on a typical shape (float32, batch first). One timed
// call: forward, then backward with an output gradient of ones (an array of
// ones made once, set as y's gradient; with --via-sum, sum(y) then backward;
// a 0-d output is backpropagated directly), then the graph is freed.
// Inputs are built once, with the same values on both sides; the function
// objects of parameterized functions (Linear, Convolution2D, EmbedID,
// BatchNormalization, PReLU) are created once, and their parameter gradients
// accumulate on both sides (chainerc: gW +=, libtorch: .grad +=), while the
// gradients of the inputs start afresh at every call on both sides.
//
// The chainerc side uses only the public C API <ch/ch.h>; the libtorch side
// torch's C++ API with the op a libtorch user would call. Every row runs with
// each thread count (ch_config_set_num_threads / torch::set_num_threads, BLAS
// following). Timing as bench/overhead.cpp: every body calibrated alone, the
// repeats of all rows of one thread count interleaved, median.
//
// Usage: functions [--quick] [--threads 1,2] [--only NAME] [--repeats N]
//                  [--min-time SECONDS] [--via-sum]

#include <ch/ch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_util.h"

#ifndef CH_BENCH_HAVE_TORCH
#define CH_BENCH_HAVE_TORCH 0
#endif
#if CH_BENCH_HAVE_TORCH
#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <torch/version.h>
#endif

namespace {

using bench::die;
using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

std::vector<float> randn(const Shape& s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(numel(s)));
  for (float& x : v) x = d(gen);
  return v;
}

std::vector<int32_t> randint(int64_t n, int32_t hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> d(0, hi - 1);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = d(gen);
  return v;
}

// --- chainerc side ---------------------------------------------------------------

// Handles kept for the whole run, released at the end.
struct Held {
  std::vector<ch_variable*> vars;
  std::vector<ch_function*> fns;
  std::vector<ch_array*> arrays;
  ~Held() {
    for (ch_variable* v : vars) ch_variable_release(v);
    for (ch_function* f : fns) ch_function_release(f);
    for (ch_array* a : arrays) ch_array_release(a);
  }
};

ch_variable* ch_input(Held& held, const Shape& s, const void* data, ch_dtype dtype,
                      bool requires_grad) {
  ch_array* a = nullptr;
  CH_BENCH_CHECK(
      ch_array_new(&a, dtype, s.data(), static_cast<int32_t>(s.size()), data, ch_device_cpu()));
  ch_variable* v = nullptr;
  CH_BENCH_CHECK(ch_variable_new(&v, a, 0));
  CH_BENCH_CHECK(ch_array_release(a));
  if (!requires_grad) CH_BENCH_CHECK(ch_variable_set_requires_grad(v, 0));
  held.vars.push_back(v);
  return v;
}

ch_variable* ch_apply(ch_function* f, std::vector<ch_variable*> in) {
  ch_variable* y = nullptr;
  CH_BENCH_CHECK(ch_function_apply(f, in.data(), in.size(), &y, 1, nullptr));
  return y;
}

// With --via-sum, the output gradient of ones comes from sum(y) (one more
// function on each side); by default it is an array of ones made once.
bool g_via_sum = false;

// y: new reference from the forward; backward with ones (gy, or NULL for a
// one-element y), then frees the graph.
void ch_backward_ones(ch_variable* y, ch_array* gy) {
  if (ch_variable_size(y) == 1) {
    CH_BENCH_CHECK(ch_variable_backward(y, 0));
  } else if (!g_via_sum) {
    CH_BENCH_CHECK(ch_variable_set_grad(y, gy));
    CH_BENCH_CHECK(ch_variable_backward(y, 0));
  } else {
    ch_variable* s = nullptr;
    CH_BENCH_CHECK(ch_functions_sum(&s, y));
    CH_BENCH_CHECK(ch_variable_backward(s, 0));
    CH_BENCH_CHECK(ch_variable_release(s));
  }
  CH_BENCH_CHECK(ch_variable_release(y));
}

// --- libtorch side -----------------------------------------------------------------

#if CH_BENCH_HAVE_TORCH
torch::Tensor t_input(const Shape& s, const std::vector<float>& data, bool requires_grad) {
  return torch::from_blob(const_cast<float*>(data.data()), s, torch::kFloat32)
      .clone()
      .requires_grad_(requires_grad);
}

torch::Tensor t_labels(const std::vector<int32_t>& data) {
  return torch::from_blob(const_cast<int32_t*>(data.data()), {static_cast<int64_t>(data.size())},
                          torch::kInt32)
      .to(torch::kLong);
}

void t_backward_ones(const torch::Tensor& y, const torch::Tensor& gy) {
  if (y.numel() == 1)
    y.backward();
  else if (!g_via_sum)
    y.backward(gy);
  else
    y.sum().backward();
}
#endif

// --- rows ------------------------------------------------------------------------------

struct Row {
  std::string name;
  std::string shape;
  std::function<ch_variable*()> ch_fwd;  // new reference to the output
  int64_t ch_out_size = 0;
  ch_array* ch_gy = nullptr;  // ones of the output's shape
#if CH_BENCH_HAVE_TORCH
  std::function<torch::Tensor()> t_fwd;
  std::vector<torch::Tensor> t_inputs;  // their grads are reset before every call
  torch::Tensor t_gy;                   // ones of the output's shape
#endif
};

struct Result {
  std::string name, shape;
  int threads;
  double ch_us = NAN, t_us = NAN;
  double t1_us = NAN;  // libtorch with torch::set_num_threads(1), OpenBLAS at `threads` ("1/n")
};

Row make_row(std::string name, std::string shape, std::function<ch_variable*()> fwd) {
  Row r;
  r.name = std::move(name);
  r.shape = std::move(shape);
  r.ch_fwd = std::move(fwd);
  return r;
}

// The rows; `want` empty = all, else only the row of that name.
std::vector<Row> make_rows(Held& held, const std::string& want) {
  std::vector<Row> rows;
  const ch_dtype F = CH_FLOAT32;
  auto wanted = [&](const char* name) { return want.empty() || want == name; };
#if CH_BENCH_HAVE_TORCH
#define T_PART(...) __VA_ARGS__
#else
#define T_PART(...)
#endif

  // Unary elementwise-like rows on one 100x1000 input.
  struct Unary {
    const char* name;
    std::function<ch_status(ch_variable**, ch_variable*)> ch_op;
#if CH_BENCH_HAVE_TORCH
    std::function<torch::Tensor(const torch::Tensor&)> t_op;
#endif
  };
  const Shape s2 = {100, 1000};
  const std::vector<float> x2 = randn(s2, 1);
  std::vector<Unary> unary = {
      {"relu", ch_functions_relu T_PART(, [](const torch::Tensor& x) { return torch::relu(x); })},
      {"sigmoid",
       ch_functions_sigmoid T_PART(, [](const torch::Tensor& x) { return torch::sigmoid(x); })},
      {"tanh", ch_functions_tanh T_PART(, [](const torch::Tensor& x) { return torch::tanh(x); })},
      {"leaky_relu",
       [](ch_variable** o, ch_variable* x) {
         return ch_functions_leaky_relu(o, x, 0.2);
       } T_PART(, [](const torch::Tensor& x) { return torch::leaky_relu(x, 0.2); })},
      {"softmax",
       ch_functions_softmax T_PART(, [](const torch::Tensor& x) { return torch::softmax(x, 1); })},
      {"dropout",
       [](ch_variable** o, ch_variable* x) {
         return ch_functions_dropout(o, x, 0.5, CH_MODE_TRAIN);
       } T_PART(, [](const torch::Tensor& x) { return torch::dropout(x, 0.5, true); })},
      {"transpose",
       [](ch_variable** o, ch_variable* x) {
         return ch_functions_transpose(o, x, nullptr, 0);
       } T_PART(, [](const torch::Tensor& x) { return x.t(); })},
      {"sum", ch_functions_sum T_PART(, [](const torch::Tensor& x) { return x.sum(); })},
      {"exp", ch_functions_exp T_PART(, [](const torch::Tensor& x) { return torch::exp(x); })},
  };
  for (const Unary& u : unary) {
    if (!wanted(u.name)) continue;
    Row r;
    r.name = u.name;
    r.shape = "100x1000";
    ch_variable* x = ch_input(held, s2, x2.data(), F, true);
    auto op = u.ch_op;
    r.ch_fwd = [x, op] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(op(&y, x));
      return y;
    };
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s2, x2, true);
    auto top = u.t_op;
    r.t_fwd = [tx, top] { return top(tx); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("linear")) {
    const Shape s = {100, 784};
    const std::vector<float> xd = randn(s, 2);
    ch_function* f = nullptr;
    CH_BENCH_CHECK(ch_functions_linear_new(&f, 784, 1000, F, 1.0, 0.0, 0, nullptr, nullptr));
    held.fns.push_back(f);
    ch_variable* x = ch_input(held, s, xd.data(), F, true);
    Row r = make_row("linear", "100x784 -> 1000", [f, x] { return ch_apply(f, {x}); });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s, xd, true);
    torch::Tensor W = (torch::randn({1000, 784}) / std::sqrt(784.0)).requires_grad_(true);
    torch::Tensor b = torch::zeros({1000}).requires_grad_(true);
    r.t_fwd = [tx, W, b] { return torch::linear(tx, W, b); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("convolution_2d")) {
    const Shape s = {100, 20, 12, 12};
    const std::vector<float> xd = randn(s, 3);
    ch_function* f = nullptr;
    CH_BENCH_CHECK(ch_functions_convolution_2d_new(&f, 20, 50, 5, 5, 1, 1, 0, 0, F, 1.0, 0.0, 0,
                                                   nullptr, nullptr));
    held.fns.push_back(f);
    ch_variable* x = ch_input(held, s, xd.data(), F, true);
    Row r = make_row("convolution_2d", "100x20x12x12, 50 out, 5x5",
                     [f, x] { return ch_apply(f, {x}); });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s, xd, true);
    torch::Tensor W = (torch::randn({50, 20, 5, 5}) / std::sqrt(500.0)).requires_grad_(true);
    torch::Tensor b = torch::zeros({50}).requires_grad_(true);
    r.t_fwd = [tx, W, b] { return torch::conv2d(tx, W, b); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("prelu")) {
    ch_function* f = nullptr;
    CH_BENCH_CHECK(ch_functions_prelu_new(&f, nullptr, 0, F, 0.25));
    held.fns.push_back(f);
    ch_variable* x = ch_input(held, s2, x2.data(), F, true);
    Row r = make_row("prelu", "100x1000, one slope", [f, x] { return ch_apply(f, {x}); });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s2, x2, true);
    torch::Tensor W = torch::full({1}, 0.25f).requires_grad_(true);
    r.t_fwd = [tx, W] { return torch::prelu(tx, W); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("softmax_cross_entropy")) {
    const Shape s = {100, 10};
    const std::vector<float> xd = randn(s, 4);
    const std::vector<int32_t> td = randint(100, 10, 5);
    ch_variable* x = ch_input(held, s, xd.data(), F, true);
    ch_variable* t = ch_input(held, {100}, td.data(), CH_INT32, false);
    Row r = make_row("softmax_cross_entropy", "100x10, int32 labels", [x, t] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_softmax_cross_entropy(&y, x, t));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s, xd, true);
    torch::Tensor tt = t_labels(td);
    r.t_fwd = [tx, tt] { return torch::nn::functional::cross_entropy(tx, tt); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("mean_squared_error")) {
    const std::vector<float> x1 = randn(s2, 6);
    ch_variable* a = ch_input(held, s2, x2.data(), F, true);
    ch_variable* b = ch_input(held, s2, x1.data(), F, true);
    Row r = make_row("mean_squared_error", "100x1000", [a, b] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_mean_squared_error(&y, a, b));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor ta = t_input(s2, x2, true), tb = t_input(s2, x1, true);
    r.t_fwd = [ta, tb] { return torch::mse_loss(ta, tb); };
    r.t_inputs = {ta, tb};
#endif
    rows.push_back(std::move(r));
  }

  const Shape s4 = {100, 20, 24, 24};
  const std::vector<float> x4 = randn(s4, 7);
  if (wanted("max_pooling_2d")) {
    ch_variable* x = ch_input(held, s4, x4.data(), F, true);
    Row r = make_row("max_pooling_2d", "100x20x24x24, 2x2", [x] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_max_pooling_2d(&y, x, 2, 2, 2, 2, 0, 0, 1));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s4, x4, true);
    r.t_fwd = [tx] { return torch::max_pool2d(tx, {2, 2}); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }
  if (wanted("average_pooling_2d")) {
    ch_variable* x = ch_input(held, s4, x4.data(), F, true);
    Row r = make_row("average_pooling_2d", "100x20x24x24, 2x2", [x] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_average_pooling_2d(&y, x, 2, 2, 2, 2, 0, 0));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s4, x4, true);
    r.t_fwd = [tx] { return torch::avg_pool2d(tx, {2, 2}); };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }
  if (wanted("batch_normalization")) {
    ch_function* f = nullptr;
    const int64_t size[1] = {20};
    CH_BENCH_CHECK(ch_functions_batch_normalization_new(&f, size, 1, 0.9, 1e-5, F));
    held.fns.push_back(f);
    ch_variable* x = ch_input(held, s4, x4.data(), F, true);
    Row r = make_row("batch_normalization", "100x20x24x24, per channel, train", [f, x] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_batch_normalization_apply(&y, f, x, CH_MODE_TRAIN, 0));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s4, x4, true);
    torch::Tensor gamma = torch::ones({20}).requires_grad_(true);
    torch::Tensor beta = torch::zeros({20}).requires_grad_(true);
    torch::Tensor mean = torch::zeros({20}), var = torch::ones({20});
    r.t_fwd = [tx, gamma, beta, mean, var] {
      return torch::batch_norm(tx, gamma, beta, mean, var, true, 0.1, 1e-5, false);
    };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }
  if (wanted("local_response_normalization")) {
    ch_variable* x = ch_input(held, s4, x4.data(), F, true);
    Row r = make_row("local_response_normalization", "100x20x24x24, n 5", [x] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_local_response_normalization(&y, x, 5, 2.0, 1e-4, 0.75));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tx = t_input(s4, x4, true);
    // libtorch's alpha is divided by n (Chainer's is not): 5 * 1e-4 is the same function.
    r.t_fwd = [tx] {
      namespace nnf = torch::nn::functional;
      return nnf::local_response_norm(
          tx, nnf::LocalResponseNormFuncOptions(5).alpha(5e-4).beta(0.75).k(2.0));
    };
    r.t_inputs = {tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("concat")) {
    const Shape s = {100, 500};
    const std::vector<float> ad = randn(s, 8), bd = randn(s, 9);
    ch_variable* a = ch_input(held, s, ad.data(), F, true);
    ch_variable* b = ch_input(held, s, bd.data(), F, true);
    Row r = make_row("concat", "2 x 100x500, axis 1", [a, b] {
      ch_variable* xs[2] = {a, b};
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_concat(&y, xs, 2, 1));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor ta = t_input(s, ad, true), tb = t_input(s, bd, true);
    r.t_fwd = [ta, tb] { return torch::cat({ta, tb}, 1); };
    r.t_inputs = {ta, tb};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("embed_id")) {
    const std::vector<int32_t> ids = randint(100, 10000, 10);
    ch_function* f = nullptr;
    CH_BENCH_CHECK(ch_functions_embed_id_new(&f, 10000, 100, F, nullptr));
    held.fns.push_back(f);
    ch_variable* x = ch_input(held, {100}, ids.data(), CH_INT32, false);
    Row r = make_row("embed_id", "100 ids, 10000x100", [f, x] { return ch_apply(f, {x}); });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tids = t_labels(ids);
    torch::Tensor W = torch::randn({10000, 100}).requires_grad_(true);
    r.t_fwd = [tids, W] { return torch::embedding(W, tids); };
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("lstm")) {
    const Shape sc = {100, 200}, sx = {100, 800};
    const std::vector<float> cd = randn(sc, 11), xd = randn(sx, 12);
    ch_variable* c = ch_input(held, sc, cd.data(), F, true);
    ch_variable* x = ch_input(held, sx, xd.data(), F, true);
    // Backward from h only (c reaches it through h).
    Row r = make_row("lstm", "c 100x200, x 100x800 (backward from h)", [c, x] {
      ch_variable* cn = nullptr;
      ch_variable* h = nullptr;
      CH_BENCH_CHECK(ch_functions_lstm(&cn, &h, c, x));
      CH_BENCH_CHECK(ch_variable_release(cn));
      return h;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor tc = t_input(sc, cd, true), tx = t_input(sx, xd, true);
    r.t_fwd = [tc, tx] {
      const std::vector<torch::Tensor> g = tx.view({100, 200, 4}).unbind(2);
      const torch::Tensor cn = torch::tanh(g[0]) * torch::sigmoid(g[1]) + tc * torch::sigmoid(g[2]);
      return torch::tanh(cn) * torch::sigmoid(g[3]);
    };
    r.t_inputs = {tc, tx};
#endif
    rows.push_back(std::move(r));
  }

  if (wanted("matmul")) {
    const Shape sa = {100, 784}, sb = {784, 1000};
    const std::vector<float> ad = randn(sa, 13), bd = randn(sb, 14);
    ch_variable* a = ch_input(held, sa, ad.data(), F, true);
    ch_variable* b = ch_input(held, sb, bd.data(), F, true);
    Row r = make_row("matmul", "100x784 @ 784x1000", [a, b] {
      ch_variable* y = nullptr;
      CH_BENCH_CHECK(ch_functions_matmul(&y, a, b, 0, 0));
      return y;
    });
#if CH_BENCH_HAVE_TORCH
    torch::Tensor ta = t_input(sa, ad, true), tb = t_input(sb, bd, true);
    r.t_fwd = [ta, tb] { return torch::matmul(ta, tb); };
    r.t_inputs = {ta, tb};
#endif
    rows.push_back(std::move(r));
  }
#undef T_PART
  if (rows.empty()) die("--only " + want + ": no such row");
  return rows;
}

std::string fmt(double v, const char* f) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string fmt_us(double v) { return fmt(v, v < 10 ? "%.2f" : v < 1000 ? "%.1f" : "%.0f"); }

int run(const bench::Timing& timing, const std::vector<int>& threads, const std::string& only) {
  Held held;
  std::vector<Row> rows = make_rows(held, only);

  // Sanity: both sides produce outputs of the same size.
  for (Row& r : rows) {
    ch_variable* y = r.ch_fwd();
    r.ch_out_size = ch_variable_size(y);
    {
      ch_array* yd = nullptr;
      CH_BENCH_CHECK(ch_variable_data(&yd, y));
      CH_BENCH_CHECK(ch_array_new_full(&r.ch_gy, CH_FLOAT32, ch_array_shape(yd), ch_array_ndim(yd),
                                       1.0, ch_device_cpu()));
      held.arrays.push_back(r.ch_gy);
      CH_BENCH_CHECK(ch_array_release(yd));
    }
    ch_backward_ones(y, r.ch_gy);
    double gy_sum = 0;  // the given gradient must come back unchanged
    for (int64_t k = 0; k < ch_array_size(r.ch_gy); ++k) {
      double v = 0;
      CH_BENCH_CHECK(ch_array_get(&v, r.ch_gy, k));
      gy_sum += v;
    }
    if (gy_sum != static_cast<double>(ch_array_size(r.ch_gy)))
      die(r.name + ": chainerc backward wrote into the output gradient it was given");
#if CH_BENCH_HAVE_TORCH
    const torch::Tensor ty = r.t_fwd();
    r.t_gy = torch::ones_like(ty);
    const int64_t tn = ty.numel();
    if (tn != r.ch_out_size)
      die(r.name + ": chainerc output has " + std::to_string(r.ch_out_size) +
          " elements, libtorch's " + std::to_string(tn));
#endif
  }

#if CH_BENCH_HAVE_TORCH
  try {
    torch::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // already started; these ops use no inter-op parallelism
  }
#endif

  std::vector<Result> results;
  for (int th : threads) {
    CH_BENCH_CHECK(ch_config_set_num_threads(th));
#if CH_BENCH_HAVE_TORCH
    torch::set_num_threads(th);
    bench::set_openblas_threads(th);
#endif
    const size_t first = results.size();
    for (const Row& r : rows) results.push_back({r.name, r.shape, th, NAN, NAN});
    std::vector<bench::Bench> benches;
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      Result& res = results[first + i];
      auto fwd = r.ch_fwd;
      ch_array* gy = r.ch_gy;
      benches.push_back({[fwd, gy] { ch_backward_ones(fwd(), gy); }, &res.ch_us, 1, {}});
#if CH_BENCH_HAVE_TORCH
      auto tfwd = r.t_fwd;
      auto tin = r.t_inputs;
      torch::Tensor tgy = r.t_gy;
      benches.push_back({[tfwd, tin, tgy]() mutable {
                           for (torch::Tensor& t : tin) t.mutable_grad().reset();
                           t_backward_ones(tfwd(), tgy);
                         },
                         &res.t_us,
                         1,
                         {}});
#endif
    }
    bench::measure_all(benches, timing);
#if CH_BENCH_HAVE_TORCH
    // libtorch's other setting at n > 1 threads: its own ops on one thread, OpenBLAS on n
    // (the best setting of the small MLP in bench/train). torch::set_num_threads rebuilds
    // libtorch's thread pools, so this setting is a pass of its own after the first, its
    // repeats interleaved among themselves; each row takes the better of the two.
    if (th > 1) {
      torch::set_num_threads(1);
      std::vector<bench::Bench> second;
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        auto tfwd = r.t_fwd;
        auto tin = r.t_inputs;
        torch::Tensor tgy = r.t_gy;
        second.push_back({[tfwd, tin, tgy]() mutable {
                            for (torch::Tensor& t : tin) t.mutable_grad().reset();
                            t_backward_ones(tfwd(), tgy);
                          },
                          &results[first + i].t1_us,
                          1,
                          {}});
      }
      bench::measure_all(second, timing);
    }
#endif
  }

  std::printf(
      "## chainerc vs libtorch: forward + backward per built-in function (CPU, float32)\n\n");
  std::printf(
      "One call = forward + backward with an output gradient of ones (%s; a 0-d output is "
      "backpropagated directly) + freeing the graph; median of %d repeats of at least %.0f ms "
      "each, the repeats of all rows of one thread count interleaved. Ratio above 1: chainerc "
      "faster.\n\n",
      g_via_sum ? "through sum(y)" : "an array of ones made once", timing.repeats,
      timing.min_time * 1e3);
  std::printf(
      "libtorch µs is its better setting (n: the row's threads): n/n = torch::set_num_threads(n), "
      "OpenBLAS n threads; 1/n = torch::set_num_threads(1), OpenBLAS n threads (tried at n > 1, "
      "in a second pass).\n\n");
  std::printf(
      "| function | shape | threads | chainerc µs | libtorch µs | libtorch / chainerc | libtorch "
      "setting | libtorch n/n µs |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |\n");
  for (const Result& r : results) {
    const bool one = !std::isnan(r.t1_us) && r.t1_us < r.t_us;
    const double t = one ? r.t1_us : r.t_us;
    std::printf("| %s | %s | %d | %s | %s | %s | %s | %s |\n", r.name.c_str(), r.shape.c_str(),
                r.threads, fmt_us(r.ch_us).c_str(), fmt_us(t).c_str(),
                fmt(t / r.ch_us, "%.2fx").c_str(),
                std::isnan(t) ? "n/a"
                : one         ? "1/n"
                              : "n/n",
                fmt_us(r.t_us).c_str());
  }

  std::printf("\n### Environment\n\n");
  std::printf("- OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s, hardware threads: %u\n",
              bench::env_or("OMP_NUM_THREADS", "(unset)"),
              bench::env_or("OPENBLAS_NUM_THREADS", "(unset)"),
              std::thread::hardware_concurrency());
  std::printf("- chainerc %s: BLAS: %s\n", ch_version_string(), ch_config_blas());
#if CH_BENCH_HAVE_TORCH
  {
    std::printf("- libtorch %s: %s; OMP_WAIT_POLICY=%s\n", TORCH_VERSION,
                bench::torch_blas_description(at::show_config()).c_str(),
                bench::env_or("OMP_WAIT_POLICY", "(unset)"));
    std::printf("- libtorch parallel info:\n\n```\n%s```\n", at::get_parallel_info().c_str());
  }
#else
  std::printf("- libtorch: not found when this benchmark was built; libtorch columns are n/a\n");
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Timing timing;
  std::vector<int> threads = {1, 2};
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--quick") {
      timing.repeats = 3;
      timing.min_time = 0.02;
    } else if (a == "--repeats") {
      timing.repeats = std::atoi(value().c_str());
    } else if (a == "--min-time") {
      timing.min_time = std::atof(value().c_str());
    } else if (a == "--threads") {
      threads.clear();
      for (const std::string& t : bench::split(value(), ','))
        threads.push_back(std::atoi(t.c_str()));
    } else if (a == "--via-sum") {
      g_via_sum = true;
    } else if (a == "--only") {
      only = value();
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: %s [--quick] [--threads 1,2] [--only NAME] [--repeats N] [--min-time SECONDS]\n"
          "          [--via-sum]  (output gradient through sum(y) instead of a given ones array)\n"
          "  NAME: relu sigmoid tanh leaky_relu softmax dropout transpose sum exp linear\n"
          "        convolution_2d prelu softmax_cross_entropy mean_squared_error max_pooling_2d\n"
          "        average_pooling_2d batch_normalization local_response_normalization concat\n"
          "        embed_id lstm matmul\n",
          argv[0]);
      return 0;
    } else {
      die("unknown argument " + a + " (try --help)");
    }
  }
  if (timing.repeats < 1 || !(timing.min_time > 0) || threads.empty()) die("bad option value");
  for (int t : threads)
    if (t < 1) die("bad thread count");
  // Measure in a multi-threaded process, as any FFI host (see overhead.cpp).
  std::thread([] {}).join();
  try {
    return run(timing, threads, only);
  } catch (const std::exception& e) {
    die(std::string("exception: ") + e.what());
  }
}
