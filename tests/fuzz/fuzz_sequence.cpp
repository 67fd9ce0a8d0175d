// Fuzz target: bytes decoded into a sequence of C API calls on live handles.
// Every byte chooses an operation; the bytes after it choose its operands
// (pool slots, dtypes, extents, flags). Operations: create arrays and
// variables, apply built-in and user-defined functions (whose callbacks may
// fail on request), backward, set/get data and gradients, unchain, release
// any handle in any order, build a model (Linear layers in a function set),
// set up and step an optimizer, and save/load model and optimizer to a temp
// file. Every failing call must return a status with a message; whatever is
// still alive at the end of the input is released (LeakSanitizer checks
// that nothing is left).
#include <dirent.h>
#include <sys/stat.h>

#include <vector>

#include "fuzz_decode.h"
#include "fuzz_util.h"

namespace {

using chfuzz::Bytes;
using chfuzz::Pool;

// Whether the user function's callbacks fail (set per operation).
bool g_fail_forward = false;
bool g_fail_backward = false;

ch_status user_forward(void*, ch_context* ctx, ch_array* const* in, size_t n) {
  if (g_fail_forward) {
    ch_error_set(CH_ERR_INVALID_ARGUMENT, "fuzz: forward fails on request");
    return CH_ERR_INVALID_ARGUMENT;
  }
  if (n < 1) {
    ch_error_set(CH_ERR_INVALID_ARGUMENT, "fuzz: no input");
    return CH_ERR_INVALID_ARGUMENT;
  }
  ch_array* y = nullptr;
  ch_status st = ch_array_copy(&y, in[0]);
  if (st != CH_OK) return st;
  st = ch_context_add_output(ctx, y);
  ch_array_release(y);
  return st;
}

ch_status user_backward(void*, ch_context* ctx, ch_array* const*, size_t, ch_array* const*, size_t,
                        ch_array* const* gy, size_t n_gy) {
  if (g_fail_backward) {
    ch_error_set(CH_ERR_INVALID_ARGUMENT, "fuzz: backward fails on request");
    return CH_ERR_INVALID_ARGUMENT;
  }
  if (n_gy < 1) return CH_OK;
  return ch_context_set_grad_input(ctx, 0, gy[0]);
}

const std::string& temp_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/ch_fuzz_sequence_XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    return std::string(tmpl);
  }();
  return dir;
}

void remove_temp_dir() {
  const std::string& dir = temp_dir();
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') unlink((dir + "/" + e->d_name).c_str());
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace

int ch_fuzz_sequence(const uint8_t* data, size_t size) {
  static const bool cleanup = [] {
    temp_dir();
    std::atexit(remove_temp_dir);
    return true;
  }();
  (void)cleanup;
  Bytes b(data, size);
  Pool<ch_array, ch_array_release, 8> arrays;
  Pool<ch_variable, ch_variable_release, 16> vars;
  Pool<ch_function, ch_function_release, 4> fns;
  Pool<ch_function_set, ch_function_set_release, 2> sets;
  Pool<ch_optimizer, ch_optimizer_release, 2> opts;
  const std::string model_path = temp_dir() + "/model.npz";
  const std::string opt_path = temp_dir() + "/opt.npz";

  for (int steps = 0; b.more() && steps < 256; ++steps) {
    const unsigned op = b.pick(24);
    const unsigned dst = b.byte();
    ch_status st = CH_OK;
    switch (op) {
      case 0: {  // new array: dtype, ndim 0..3, extents 0..4, a fill value
        const ch_dtype dt = static_cast<ch_dtype>(b.pick(3));  // float32, float64, int32
        int64_t shape[3];
        const int32_t nd = static_cast<int32_t>(b.pick(4));
        for (int32_t i = 0; i < nd; ++i) shape[i] = b.pick(5);
        ch_array* a = nullptr;
        st = ch_array_new_full(&a, dt, shape, nd, b.value(), ch_device_cpu());
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) arrays.put(dst, a);
        break;
      }
      case 1: {  // new variable
        ch_variable* v = nullptr;
        st = ch_variable_new(&v, arrays.get(b), static_cast<int32_t>(b.pick(2)));
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) vars.put(dst, v);
        break;
      }
      case 2: {  // unary built-in
        ch_variable* x = vars.get(b);
        ch_variable* y = nullptr;
        const unsigned which = b.pick(12);
        switch (which) {
          case 0:
            st = ch_functions_relu(&y, x);
            break;
          case 1:
            st = ch_functions_sigmoid(&y, x);
            break;
          case 2:
            st = ch_functions_tanh(&y, x);
            break;
          case 3:
            st = ch_functions_exp(&y, x);
            break;
          case 4:
            st = ch_functions_log(&y, x);
            break;
          case 5:
            st = ch_functions_neg(&y, x);
            break;
          case 6:
            st = ch_functions_sum(&y, x);
            break;
          case 7:
            st = ch_functions_softmax(&y, x);
            break;
          case 8:
            st = ch_functions_identity(&y, x);
            break;
          case 9:
            st = ch_functions_pow_scalar(&y, x, b.value());
            break;
          case 10:
            st = ch_functions_leaky_relu(&y, x, b.value());
            break;
          default:
            st = ch_functions_sum_axis(&y, x, static_cast<int32_t>(b.pick(7)) - 3,
                                       static_cast<int32_t>(b.pick(2)));
        }
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) vars.put(dst, y);
        break;
      }
      case 3: {  // binary built-in
        ch_variable* x0 = vars.get(b);
        ch_variable* x1 = vars.get(b);
        ch_variable* y = nullptr;
        switch (b.pick(7)) {
          case 0:
            st = ch_functions_add(&y, x0, x1);
            break;
          case 1:
            st = ch_functions_sub(&y, x0, x1);
            break;
          case 2:
            st = ch_functions_mul(&y, x0, x1);
            break;
          case 3:
            st = ch_functions_div(&y, x0, x1);
            break;
          case 4:
            st = ch_functions_mean_squared_error(&y, x0, x1);
            break;
          case 5:
            st = ch_functions_softmax_cross_entropy(&y, x0, x1);
            break;
          default:
            st = ch_functions_matmul(&y, x0, x1, static_cast<int32_t>(b.pick(2)),
                                     static_cast<int32_t>(b.pick(2)));
        }
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) vars.put(dst, y);
        break;
      }
      case 4:  // backward
        CH_FUZZ_CHECK(ch_variable_backward(vars.get(b), static_cast<int32_t>(b.pick(2))));
        break;
      case 5:
        vars.release(dst);
        break;
      case 6:
        arrays.release(dst);
        break;
      case 7:
        fns.release(dst);
        break;
      case 8: {  // set_grad (or clear it)
        ch_variable* v = vars.get(b);
        CH_FUZZ_CHECK(ch_variable_set_grad(v, b.pick(4) ? arrays.get(b) : nullptr));
        break;
      }
      case 9: {  // set_data
        ch_variable* v = vars.get(b);
        CH_FUZZ_CHECK(ch_variable_set_data(v, arrays.get(b)));
        break;
      }
      case 10: {  // get data, grad or creator
        ch_variable* v = vars.get(b);
        ch_array* a = nullptr;
        st = b.pick(2) ? ch_variable_data(&a, v) : ch_variable_grad(&a, v);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK && a) arrays.put(dst, a);
        ch_function* f = nullptr;
        st = ch_variable_creator(&f, v);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK && f) fns.put(b.byte(), f);
        break;
      }
      case 11:
        CH_FUZZ_CHECK(ch_variable_unchain_backward(vars.get(b)));
        break;
      case 12: {  // reshape
        ch_variable* x = vars.get(b);
        int64_t shape[3];
        const int32_t nd = static_cast<int32_t>(b.pick(4));
        for (int32_t i = 0; i < nd; ++i) shape[i] = static_cast<int64_t>(b.pick(6)) - 1;
        ch_variable* y = nullptr;
        st = ch_functions_reshape(&y, x, shape, nd);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) vars.put(dst, y);
        break;
      }
      case 13: {  // a Linear layer
        ch_function* f = nullptr;
        st = ch_functions_linear_new(&f, b.pick(5), b.pick(5), static_cast<ch_dtype>(b.pick(2)),
                                     1.0, 0.0, static_cast<int32_t>(b.pick(2)), nullptr, nullptr);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) fns.put(dst, f);
        break;
      }
      case 14: {  // a user function whose callbacks may fail
        ch_function_def def = {};
        def.version = CH_FUNCTION_DEF_VERSION;
        def.name = "fuzz_identity";
        def.forward = user_forward;
        def.backward = b.pick(4) ? user_backward : nullptr;
        ch_function* f = nullptr;
        st = ch_function_new(&f, &def);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) fns.put(dst, f);
        break;
      }
      case 15: {  // apply a function object to 0..2 variables
        ch_function* f = fns.get(b);
        ch_variable* in[2] = {vars.get(b), vars.get(b)};
        ch_variable* out[2] = {nullptr, nullptr};
        size_t n_out = 0;
        g_fail_forward = b.pick(8) == 0;
        st = ch_function_apply(f, in, b.pick(3), out, b.pick(3), &n_out);
        g_fail_forward = false;
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) {
          for (size_t i = 0; i < n_out && i < 2; ++i)
            vars.put(dst + static_cast<unsigned>(i), out[i]);
        }
        break;
      }
      case 16:  // make the next backward's user callbacks fail, or not
        g_fail_backward = b.pick(2) == 0;
        break;
      case 17: {  // a function set: new, or add a function to one
        if (b.pick(2)) {
          ch_function_set* s = nullptr;
          st = ch_function_set_new(&s);
          CH_FUZZ_CHECK(st);
          if (st == CH_OK) sets.put(dst, s);
        } else {
          const char* names[] = {"l1", "l2", "l3"};
          CH_FUZZ_CHECK(ch_function_set_add_function(sets.get(b), names[b.pick(3)], fns.get(b)));
        }
        break;
      }
      case 18: {  // an optimizer, set up on a set
        ch_optimizer* o = nullptr;
        switch (b.pick(3)) {
          case 0:
            st = ch_optimizer_sgd_new(&o, 0.01);
            break;
          case 1:
            st = ch_optimizer_momentum_sgd_new(&o, 0.01, 0.9);
            break;
          default:
            st = ch_optimizer_adam_new(&o, 0.001, 0.9, 0.999, 1, 1e-8);
        }
        CH_FUZZ_CHECK(st);
        if (st != CH_OK) break;
        CH_FUZZ_CHECK(ch_optimizer_setup(o, sets.get(b)));
        opts.put(dst, o);
        break;
      }
      case 19: {  // optimizer steps
        ch_optimizer* o = opts.get(b);
        switch (b.pick(5)) {
          case 0:
            CH_FUZZ_CHECK(ch_optimizer_zero_grads(o));
            break;
          case 3:  // SGD's step in backward on or off (others refuse)
            CH_FUZZ_CHECK(ch_optimizer_set_step_in_backward(o, static_cast<int>(b.pick(2))));
            break;
          case 1:
            CH_FUZZ_CHECK(ch_optimizer_clip_grads(o, b.value()));
            break;
          case 2:
            CH_FUZZ_CHECK(ch_optimizer_weight_decay(o, b.value()));
            break;
          default:
            CH_FUZZ_CHECK(ch_optimizer_update(o));
        }
        break;
      }
      case 20: {  // save/load the model
        ch_function_set* s = sets.get(b);
        if (b.pick(2))
          CH_FUZZ_CHECK(
              ch_function_set_save_npz(s, model_path.c_str(), static_cast<int32_t>(b.pick(2))));
        else
          CH_FUZZ_CHECK(ch_function_set_load_npz(s, model_path.c_str()));
        break;
      }
      case 21: {  // save/load the optimizer
        ch_optimizer* o = opts.get(b);
        if (b.pick(2))
          CH_FUZZ_CHECK(
              ch_optimizer_save_npz(o, opt_path.c_str(), static_cast<int32_t>(b.pick(2))));
        else
          CH_FUZZ_CHECK(ch_optimizer_load_npz(o, opt_path.c_str()));
        break;
      }
      case 22:
        if (b.pick(2))
          sets.release(dst);
        else
          opts.release(dst);
        break;
      default: {  // retain + release of a variable (a second reference)
        ch_variable* v = vars.get(b);
        if (v && ch_variable_retain(v) != v) std::abort();
        if (v) ch_variable_release(v);
        break;
      }
    }
  }
  g_fail_backward = false;
  // The pools release the rest in declaration-reverse order; release the
  // variables first sometimes, so every order is tried.
  if (size % 2) vars.clear();
  return 0;
}

CH_FUZZ_ENTRY(ch_fuzz_sequence)
