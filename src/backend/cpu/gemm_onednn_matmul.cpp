#include "gemm_onednn_matmul.h"

#if CH_HAVE_DNNL
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "core/array.h"
#endif

namespace chainerc::cpu::onednn_matmul {

#if CH_HAVE_DNNL
namespace {

// What makes one primitive: everything but the pointers.
struct Key {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  uint32_t alpha_bits, beta_bits;
  bool operator<(const Key& o) const {
    return std::tie(ta, tb, m, n, k, lda, ldb, ldc, alpha_bits, beta_bits) <
           std::tie(o.ta, o.tb, o.m, o.n, o.k, o.lda, o.ldb, o.ldc, o.alpha_bits, o.beta_bits);
  }
};

struct Made {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc scratch;  // its scratchpad
};

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// Never destroyed, as the primitives: GEMMs may run in static destructors.
const dnnl::engine& engine() {
  static const dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

// Row-major op(X) (rows x cols) with row stride ld as oneDNN's strided 2-D
// memory: a transposed X is stored cols x rows.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool trans, int64_t ld) {
  return dnnl::memory::desc({rows, cols}, dnnl::memory::data_type::f32,
                            trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

std::shared_ptr<const Made> make(const Key& key, float alpha, float beta) {
  dnnl::primitive_attr attr;
  // The scratchpad is each call's own (sgemm): primitives run concurrently
  // from the pool's threads.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (beta != 0.f) {
    dnnl::post_ops sum;
    sum.append_sum(beta);
    attr.set_post_ops(sum);
  }
  const dnnl::matmul::desc desc(matrix(key.m, key.k, key.ta, key.lda),
                                matrix(key.k, key.n, key.tb, key.ldb),
                                matrix(key.m, key.n, false, key.ldc));
  dnnl::matmul::primitive_desc pd(desc, attr, engine());
  dnnl::matmul primitive(pd);
  dnnl::memory::desc scratch = pd.scratchpad_desc();
  return std::make_shared<const Made>(
      Made{std::move(pd), std::move(primitive), std::move(scratch)});
}

struct Primitives {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const Made>> held;  // null: oneDNN refused the shape
};

Primitives& primitives() {
  static Primitives* p = new Primitives;  // never destroyed: GEMMs may run in static destructors
  return *p;
}

// The process's primitive for the key, made on first use (null: refused, or
// kMaxPrimitives held).
std::shared_ptr<const Made> held_primitive(const Key& key, float alpha, float beta) {
  Primitives& p = primitives();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto it = p.held.find(key);
  if (it != p.held.end()) return it->second;
  if (p.held.size() >= size_t(kMaxPrimitives)) return nullptr;
  std::shared_ptr<const Made> made;
  try {
    made = make(key, alpha, beta);
  } catch (const dnnl::error&) {
    made = nullptr;  // remembered: not asked again
  }
  p.held.emplace(key, made);
  return made;
}

std::shared_ptr<const Made> primitive_for(const Key& key, float alpha, float beta) {
  // Each thread remembers the primitives it had (as gemm_libxsmm.cpp its
  // kernels): no lock on the hot path.
  thread_local std::map<Key, std::shared_ptr<const Made>> seen;
  auto hit = seen.find(key);
  if (hit != seen.end()) return hit->second;
  std::shared_ptr<const Made> made = held_primitive(key, alpha, beta);
  if (made) seen.emplace(key, made);
  return made;
}

// The instruction set oneDNN's kernels use on this CPU (the implementation
// it then picks, e.g. "brg:avx512_core", follows from it).
const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace

bool available() { return true; }

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

std::string version() {
  return onednn_version() + " matmul (" + isa_name(dnnl_get_effective_cpu_isa()) + " kernels)";
}

bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const Key key{trans_a, trans_b, m, n, k, lda, ldb, ldc, bits_of(alpha), bits_of(beta)};
  std::shared_ptr<const Made> made = primitive_for(key, alpha, beta);
  if (!made) return false;
  try {
    thread_local std::unique_ptr<dnnl::stream> stream;
    if (!stream) stream = std::make_unique<dnnl::stream>(engine());
    // The scratchpad comes from the arrays' caching allocator: a block the
    // step freed serves it, rather than a buffer held beside the arrays.
    const Array scratch =
        Array::empty(DType::Float32, Shape{int64_t((made->scratch.get_size() + 3) / 4)});
    const dnnl::engine& e = engine();
    dnnl::memory am(made->pd.src_desc(), e, const_cast<float*>(a));
    dnnl::memory bm(made->pd.weights_desc(), e, const_cast<float*>(b));
    dnnl::memory cm(made->pd.dst_desc(), e, c);
    dnnl::memory sm(made->scratch, e, scratch.data<float>());
    made->primitive.execute(*stream, {{DNNL_ARG_SRC, am},
                                      {DNNL_ARG_WEIGHTS, bm},
                                      {DNNL_ARG_DST, cm},
                                      {DNNL_ARG_SCRATCHPAD, sm}});
    stream->wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

int primitives_held() {
  Primitives& p = primitives();
  std::lock_guard<std::mutex> lock(p.mutex);
  return int(p.held.size());
}

#else  // built without oneDNN

bool available() { return false; }
std::string onednn_version() { return {}; }
std::string version() { return {}; }
bool sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
           int64_t, float, float*, int64_t) {
  return false;
}
int primitives_held() { return 0; }

#endif

}  // namespace chainerc::cpu::onednn_matmul
