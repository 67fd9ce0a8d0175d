// Fuzz target: C API call sequences whose callbacks re-enter the library, on
// arrays of extreme shapes (issue 48). Bytes are decoded as in
// fuzz_sequence.cpp: an operation byte, a destination slot, then operands.
//  - User functions carry a script: at forward and at backward their
//    callbacks may unchain their own node, unchain backward from an output,
//    release any pooled variable or array, apply a built-in or a pooled
//    function, run a nested backward, or replace a variable's data.
//  - Wrapped buffers (ch_array_wrap) have release callbacks that do the
//    same from inside the engine's release of a variable's data.
//  - Extents come from {0 .. 4, 2**20, 2**31, 2**40, 2**62, INT64_MAX}, as do
//    pooling and convolution windows, strides and pads: a call either
//    succeeds or fails with a status and a message; empty arrays with huge
//    extents must finish at once (libFuzzer's -timeout catches a hang).
// Host allocations above 4 MiB are refused (as the system would refuse
// them: CH_ERR_OUT_OF_MEMORY), so an extreme shape never reaches malloc.
#include <cstring>
#include <vector>

#include "core/allocator.h"
#include "fuzz_decode.h"
#include "fuzz_util.h"

namespace {

using chfuzz::Bytes;
using chfuzz::Pool;

// Pools of handles shared with the callbacks (fuzz_decode.h: a callback that
// releases a slot while the pool is being cleared never releases twice).
Pool<ch_array, ch_array_release, 8> g_arrays;
Pool<ch_variable, ch_variable_release, 16> g_vars;
Pool<ch_function, ch_function_release, 4> g_fns;
bool g_closing = false;  // the input is done: callbacks only free their buffers
int g_depth = 0;         // callbacks nested inside callbacks

// What a callback does to the library before its own work.
struct Action {
  uint8_t kind = 0, a = 0, b = 0;
};

Action read_action(Bytes& b) {
  return Action{static_cast<uint8_t>(b.pick(12)), static_cast<uint8_t>(b.byte()),
                static_cast<uint8_t>(b.byte())};
}

void run_action(const Action& act, ch_context* ctx) {
  if (g_closing || g_depth > 2) return;
  ++g_depth;
  ch_status st = CH_OK;
  switch (act.kind) {
    case 1: {  // unchain the node being run (backward only: forward has none yet)
      ch_function* f = nullptr;
      if (ctx && ch_context_function(&f, ctx) == CH_OK && f) {
        CH_FUZZ_CHECK(ch_function_unchain(f));
        ch_function_release(f);
      }
      break;
    }
    case 2: {  // unchain backward from the node's first output
      ch_function* f = nullptr;
      if (ctx && ch_context_function(&f, ctx) == CH_OK && f) {
        ch_variable* y = nullptr;
        st = ch_function_output(&y, f, 0);
        CH_FUZZ_CHECK(st);
        if (y) {
          CH_FUZZ_CHECK(ch_variable_unchain_backward(y));
          ch_variable_release(y);
        }
        ch_function_release(f);
      }
      break;
    }
    case 3:
      g_vars.release(act.a);
      break;
    case 4:
      g_arrays.release(act.a);
      break;
    case 5: {  // apply a built-in
      ch_variable* y = nullptr;
      st = act.b % 2 ? ch_functions_relu(&y, g_vars.get(act.a))
                     : ch_functions_softmax(&y, g_vars.get(act.a));
      CH_FUZZ_CHECK(st);
      if (st == CH_OK) g_vars.put(act.b, y);
      break;
    }
    case 6:  // a nested backward
      CH_FUZZ_CHECK(ch_variable_backward(g_vars.get(act.a), act.b % 2));
      break;
    case 7:
      CH_FUZZ_CHECK(ch_variable_set_data(g_vars.get(act.a), g_arrays.get(act.b)));
      break;
    case 8: {  // apply a pooled function (possibly the one running)
      ch_variable* in[1] = {g_vars.get(act.a)};
      ch_variable* out[1] = {nullptr};
      size_t n_out = 0;
      st = ch_function_apply(g_fns.get(act.b), in, 1, out, 1, &n_out);
      CH_FUZZ_CHECK(st);
      if (st == CH_OK && n_out == 1) g_vars.put(act.b + 1u, out[0]);
      break;
    }
    case 9:
      CH_FUZZ_CHECK(ch_variable_set_grad(g_vars.get(act.a), g_arrays.get(act.b)));
      break;
    case 10:
      g_fns.release(act.a);
      break;
    default:
      break;
  }
  --g_depth;
}

struct Script {
  Action at_forward, at_backward;
};

void destroy_script(void* p) { delete static_cast<Script*>(p); }

ch_status script_forward(void* user, ch_context* ctx, ch_array* const* in, size_t n) {
  run_action(static_cast<Script*>(user)->at_forward, nullptr);
  (void)ctx;
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

ch_status script_backward(void* user, ch_context* ctx, ch_array* const*, size_t, ch_array* const*,
                          size_t, ch_array* const* gy, size_t n_gy) {
  run_action(static_cast<Script*>(user)->at_backward, ctx);
  if (n_gy < 1) return CH_OK;
  return ch_context_set_grad_input(ctx, 0, gy[0]);
}

// A wrapped buffer and what its release callback does.
struct Wrapped {
  std::vector<char> bytes;
  Action at_release;
};

void wrapped_release(void*, void* user) {
  auto* w = static_cast<Wrapped*>(user);
  run_action(w->at_release, nullptr);
  delete w;
}

// Saturating element count; -1 when it passes 2**62.
int64_t count_of(const int64_t* shape, int32_t nd) {
  int64_t n = 1;
  for (int32_t i = 0; i < nd; ++i)
    if (shape[i] == 0) return 0;
  for (int32_t i = 0; i < nd; ++i)
    if (__builtin_mul_overflow(n, shape[i], &n) || n > (int64_t{1} << 62)) return -1;
  return n;
}

}  // namespace

int ch_fuzz_reentry(const uint8_t* data, size_t size) {
  static const bool once = [] {
    chainerc::testing::refuse_system_allocations_above(size_t{4} << 20);
    return true;
  }();
  (void)once;
  Bytes b(data, size);
  g_closing = false;
  for (int steps = 0; b.more() && steps < 128; ++steps) {
    const unsigned op = b.pick(16);
    const unsigned dst = b.byte();
    ch_status st = CH_OK;
    switch (op) {
      case 0: {  // new array of an extreme shape (filled when it is small)
        int64_t shape[4];
        const int32_t nd = static_cast<int32_t>(b.pick(5));
        for (int32_t i = 0; i < nd; ++i) shape[i] = b.extent();
        const int64_t n = count_of(shape, nd);
        if (n > 4096) break;  // would be memory, not a shape to test
        ch_array* a = nullptr;
        st = ch_array_new_full(&a, static_cast<ch_dtype>(b.pick(2)), shape, nd, b.value(),
                               ch_device_cpu());
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) g_arrays.put(dst, a);
        break;
      }
      case 1: {  // a small wrapped array whose release callback acts
        int64_t shape[2] = {static_cast<int64_t>(b.pick(4)), static_cast<int64_t>(b.pick(4))};
        auto* w = new Wrapped;
        w->bytes.assign(static_cast<size_t>(shape[0] * shape[1]) * sizeof(float) + 1, 0);
        w->at_release = read_action(b);
        ch_array* a = nullptr;
        st = ch_array_wrap(&a, CH_FLOAT32, shape, 2, w->bytes.data(), ch_device_cpu(),
                           wrapped_release, w);
        CH_FUZZ_CHECK(st);
        if (st != CH_OK) {
          delete w;  // not called on failure
          break;
        }
        g_arrays.put(dst, a);
        break;
      }
      case 2: {  // new variable
        ch_variable* v = nullptr;
        st = ch_variable_new(&v, g_arrays.get(b.byte()), 0);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) g_vars.put(dst, v);
        break;
      }
      case 3: {  // a scripted user function
        auto* s = new Script{read_action(b), read_action(b)};
        ch_function_def def = {};
        def.version = CH_FUNCTION_DEF_VERSION;
        def.name = "fuzz_reentry";
        def.forward = script_forward;
        def.backward = script_backward;
        def.user_data = s;
        def.destroy = destroy_script;
        ch_function* f = nullptr;
        st = ch_function_new(&f, &def);
        CH_FUZZ_CHECK(st);
        if (st != CH_OK) {
          delete s;
          break;
        }
        g_fns.put(dst, f);
        break;
      }
      case 4: {  // apply a pooled function
        ch_variable* in[2] = {g_vars.get(b.byte()), g_vars.get(b.byte())};
        ch_variable* out[2] = {nullptr, nullptr};
        size_t n_out = 0;
        st = ch_function_apply(g_fns.get(b.byte()), in, 1 + b.pick(2), out, 2, &n_out);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK)
          for (size_t i = 0; i < n_out && i < 2; ++i)
            g_vars.put(dst + static_cast<unsigned>(i), out[i]);
        break;
      }
      case 5: {  // functions that walk rows: softmax, LRN, sum over an axis, concat
        ch_variable* x = g_vars.get(b.byte());
        ch_variable* y = nullptr;
        switch (b.pick(5)) {
          case 0:
            st = ch_functions_softmax(&y, x);
            break;
          case 1:
            st = ch_functions_local_response_normalization(
                &y, x, 1 + 2 * static_cast<int32_t>(b.pick(3)), 2, 1e-4, 0.75);
            break;
          case 2:
            st = ch_functions_sum_axis(&y, x, static_cast<int32_t>(b.pick(9)) - 4,
                                       static_cast<int32_t>(b.pick(2)));
            break;
          case 3: {
            ch_variable* xs[3] = {x, g_vars.get(b.byte()), x};
            st = ch_functions_concat(&y, xs, 1 + b.pick(3), static_cast<int32_t>(b.pick(9)) - 4);
            break;
          }
          default:
            st = ch_functions_relu(&y, x);
        }
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) g_vars.put(dst, y);
        break;
      }
      case 6: {  // pooling with extreme windows, strides and pads
        ch_variable* x = g_vars.get(b.byte());
        ch_variable* y = nullptr;
        const int64_t kh = b.small_or_extreme(), kw = b.small_or_extreme();
        const int64_t sy = b.small_or_extreme(), sx = b.small_or_extreme();
        const int64_t ph = b.small_or_extreme(), pw = b.small_or_extreme();
        st = b.pick(2) ? ch_functions_max_pooling_2d(&y, x, kh, kw, sy, sx, ph, pw,
                                                     static_cast<int32_t>(b.pick(2)))
                       : ch_functions_average_pooling_2d(&y, x, kh, kw, sy, sx, ph, pw);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) g_vars.put(dst, y);
        break;
      }
      case 7: {  // a convolution with extreme geometry
        const int64_t c = 1 + b.pick(2), k = b.small_or_extreme(), s = b.small_or_extreme(),
                      p = b.small_or_extreme();
        ch_function* f = nullptr;
        st = ch_functions_convolution_2d_new(&f, c, 1 + b.pick(2), k, k, s, s, p, p, CH_FLOAT32, 1,
                                             0, static_cast<int32_t>(b.pick(2)), nullptr, nullptr);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) g_fns.put(dst, f);
        break;
      }
      case 8:  // backward (callbacks run here)
        CH_FUZZ_CHECK(ch_variable_backward(g_vars.get(b.byte()), static_cast<int32_t>(b.pick(2))));
        break;
      case 9:
        CH_FUZZ_CHECK(ch_variable_set_data(g_vars.get(b.byte()), g_arrays.get(b.byte())));
        break;
      case 10:
        CH_FUZZ_CHECK(ch_variable_unchain_backward(g_vars.get(b.byte())));
        break;
      case 11: {  // reshape to an extreme shape
        int64_t shape[3];
        const int32_t nd = static_cast<int32_t>(b.pick(4));
        for (int32_t i = 0; i < nd; ++i) shape[i] = b.pick(4) ? b.extent() : -1;
        ch_variable* y = nullptr;
        st = ch_functions_reshape(&y, g_vars.get(b.byte()), shape, nd);
        CH_FUZZ_CHECK(st);
        if (st == CH_OK) g_vars.put(dst, y);
        break;
      }
      case 12: {  // graph inspection from a variable: creator, its input and output
        ch_function* f = nullptr;
        st = ch_variable_creator(&f, g_vars.get(b.byte()));
        CH_FUZZ_CHECK(st);
        if (st != CH_OK || !f) break;
        ch_variable* v = nullptr;
        st = b.pick(2) ? ch_function_input(&v, f, b.pick(2)) : ch_function_output(&v, f, b.pick(2));
        CH_FUZZ_CHECK(st);
        if (st == CH_OK && v) g_vars.put(dst, v);
        if (b.pick(2)) CH_FUZZ_CHECK(ch_function_unchain(f));
        g_fns.put(b.byte(), f);
        break;
      }
      case 13:
        g_vars.release(dst);
        break;
      case 14:
        g_arrays.release(dst);
        break;
      default:
        g_fns.release(dst);
    }
  }
  // Release everything, the variables first on odd sizes (every order is
  // tried); callbacks run during this do nothing but free their buffers.
  g_closing = true;
  for (bool any = true; any;) {
    any = false;
    if (size % 2) any = g_vars.clear() || any;
    any = g_fns.clear() || any;
    any = g_arrays.clear() || any;
    any = g_vars.clear() || any;
  }
  g_closing = false;
  return 0;
}

CH_FUZZ_ENTRY(ch_fuzz_reentry)
