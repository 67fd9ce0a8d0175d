// chainerc's C++ API: ch::config, the process-wide settings (over <ch/config.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_CONFIG_HPP
#define CH_CONFIG_HPP

#include <ch/common.hpp>

namespace ch {
/// Process-wide settings (<ch/config.h>).
namespace config {
/// Default mode of dropout and batch normalization called with CH_MODE_DEFAULT.
inline void set_train(bool train) noexcept { ch_config_set_train(train ? 1 : 0); }
inline bool train() noexcept { return ch_config_train() != 0; }
/// Threads of the CPU kernels and BLAS (>= 1).
inline void set_num_threads(int32_t n) { check(ch_config_set_num_threads(n)); }
inline int32_t num_threads() noexcept { return ch_config_num_threads(); }
/// Reseed the engine's generator (parameter initialisation, dropout).
inline void seed(uint64_t seed) noexcept { ch_config_seed(seed); }
/// The CPU's GEMM: the candidate libraries, the mode, the choice per shape class.
inline std::string blas() { return ch_config_blas(); }
/// The library of the CPU's matrix products ("openblas", "onednn", "blis",
/// "libxsmm", "onednn-matmul"), or "auto" (the default: the fastest measured per shape class).
inline void set_gemm(const std::string& library) { check(ch_config_set_gemm(library.c_str())); }
inline std::string gemm() { return ch_config_gemm(); }
/// Where the GEMM choices are kept on disk: a directory, "" (not kept), or
/// nullptr (the environment's: $CH_GEMM_CACHE_DIR, else ~/.cache/chainerc/gemm).
inline void set_gemm_cache(const char* directory) { check(ch_config_set_gemm_cache(directory)); }
inline void set_gemm_cache(const std::string& directory) { set_gemm_cache(directory.c_str()); }
/// The directory in use; "" when the choices are not kept on disk.
inline std::string gemm_cache() { return ch_config_gemm_cache(); }
/// One switch for deterministic results (the seed's deterministic mode).
inline void set_deterministic(bool on) noexcept { ch_config_set_deterministic(on ? 1 : 0); }
inline bool deterministic() noexcept { return ch_config_deterministic() != 0; }
/// Whether the CUDA backend may use cuDNN (default true; the seed's use_cudnn).
inline void set_use_cudnn(bool on) noexcept { ch_config_set_use_cudnn(on ? 1 : 0); }
inline bool use_cudnn() noexcept { return ch_config_use_cudnn() != 0; }
/// Whether float32 GEMMs and convolutions on CUDA may use TF32 (default false).
inline void set_allow_tf32(bool on) noexcept { ch_config_set_allow_tf32(on ? 1 : 0); }
inline bool allow_tf32() noexcept { return ch_config_allow_tf32() != 0; }

/// Sets the default mode for its lifetime and restores the previous one:
///   { ch::config::TrainMode test(false); ... evaluate ... }
class TrainMode {
 public:
  explicit TrainMode(bool train) noexcept : saved_(ch::config::train()) { set_train(train); }
  ~TrainMode() { set_train(saved_); }
  TrainMode(const TrainMode&) = delete;
  TrainMode& operator=(const TrainMode&) = delete;

 private:
  bool saved_;
};
}  // namespace config

}  // namespace ch

#endif  // CH_CONFIG_HPP
