package chainerc

/*
#include <stdlib.h>
#include "capi_gen.h"
*/
import "C"

import "unsafe"

// Mode is the train argument of functions that behave differently in
// training and testing.
type Mode int32

const (
	ModeTest    Mode = C.CH_MODE_TEST
	ModeTrain   Mode = C.CH_MODE_TRAIN
	ModeDefault Mode = C.CH_MODE_DEFAULT
)

// SetTrain sets the process default for ModeDefault.
func SetTrain(train bool) {
	t := C.int32_t(0)
	if train {
		t = 1
	}
	C.ch_config_set_train(t)
}

// Train is the process default.
func Train() bool { return C.ch_config_train() != 0 }

// SetNumThreads sets the CPU threads of kernels and BLAS (n >= 1).
func SetNumThreads(n int) error { return errOf(C.g_ch_config_set_num_threads(C.int32_t(n))) }

// NumThreads is the number of CPU threads used.
func NumThreads() int { return int(C.ch_config_num_threads()) }

// Seed reseeds the CPU random generator.
func Seed(seed uint64) { C.ch_config_seed(C.uint64_t(seed)) }

// BLAS describes the CPU's GEMM: the candidate libraries, the mode, and the
// library chosen per shape class (include/ch/config.h, ch_config_blas).
func BLAS() string { return C.GoString(C.ch_config_blas()) }

// SetGEMM fixes the library of the CPU's matrix products ("openblas",
// "onednn", "blis", "libxsmm", "onednn-matmul"), or "auto" (the default): the fastest measured per shape
// class. An error names the candidates when the library is not available.
func SetGEMM(library string) error {
	cs := C.CString(library)
	defer C.free(unsafe.Pointer(cs))
	return errOf(C.g_ch_config_set_gemm(cs))
}

// GEMM is "auto" or the library set by SetGEMM or CH_GEMM.
func GEMM() string { return C.GoString(C.ch_config_gemm()) }

// SetGEMMCache sets where the GEMM choices are kept on disk for later
// processes: a directory, or "" (kept in this process only: nothing read or
// written). ResetGEMMCache goes back to the environment's directory. Both
// clear the choices made so far.
func SetGEMMCache(dir string) error {
	cs := C.CString(dir)
	defer C.free(unsafe.Pointer(cs))
	return errOf(C.g_ch_config_set_gemm_cache(cs))
}

// ResetGEMMCache goes back to the environment's directory for the GEMM
// choices ($CH_GEMM_CACHE_DIR, else ~/.cache/chainerc/gemm; none with
// CH_GEMM_CACHE=0).
func ResetGEMMCache() error { return errOf(C.g_ch_config_set_gemm_cache(nil)) }

// GEMMCache is the directory of the GEMM choices; "" when they are not kept
// on disk.
func GEMMCache() string { return C.GoString(C.ch_config_gemm_cache()) }

func cBool(on bool) C.int32_t {
	if on {
		return 1
	}
	return 0
}

// SetUseCuDNN sets whether the CUDA backend may use cuDNN (the seed's
// use_cudnn; on at start). Off, or where cuDNN is absent, chainerc's own
// CUDA kernels run.
func SetUseCuDNN(on bool) { C.ch_config_set_use_cudnn(cBool(on)) }

// UseCuDNN reports whether the CUDA backend may use cuDNN.
func UseCuDNN() bool { return C.ch_config_use_cudnn() != 0 }

// CuDNNState reports whether cuDNN is in use (ch_config_cudnn): the state
// (0 in use, 1 switched off, 2 not built, 3 not found, 4 version mismatch,
// 5 no device, 6 init failed), why not ("" when in use) and cudnnGetVersion()
// (0 where not loaded).
func CuDNNState() (state int, reason string, version int) {
	var r *C.char
	var v C.int32_t
	st := C.ch_config_cudnn(&r, &v)
	if r != nil {
		reason = C.GoString(r)
	}
	return int(st), reason, int(v)
}

// CuDNNCalls counts the calls into cuDNN for chainerc's kernel `function`
// ("conv2d_forward", "relu", ...), or for all kernels with "".
func CuDNNCalls(function string) int64 {
	if function == "" {
		return int64(C.ch_config_cudnn_calls(nil))
	}
	c := C.CString(function)
	defer C.free(unsafe.Pointer(c))
	return int64(C.ch_config_cudnn_calls(c))
}

// ResetCuDNNCalls sets every count of CuDNNCalls to 0.
func ResetCuDNNCalls() { C.ch_config_reset_cudnn_calls() }

// SetAllowTF32 sets whether float32 GEMMs and convolutions on CUDA may use
// TF32 tensor cores (off at start).
func SetAllowTF32(on bool) { C.ch_config_set_allow_tf32(cBool(on)) }

// AllowTF32 reports whether TF32 is allowed.
func AllowTF32() bool { return C.ch_config_allow_tf32() != 0 }

// SetDeterministic sets whether work on CUDA devices must give bit-identical
// results from run to run (off at start; cuDNN then uses deterministic
// algorithms only).
func SetDeterministic(on bool) { C.ch_config_set_deterministic(cBool(on)) }

// Deterministic reports whether the determinism switch is on.
func Deterministic() bool { return C.ch_config_deterministic() != 0 }
