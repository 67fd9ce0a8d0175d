package chainerc

/*
#include "capi_gen.h"
*/
import "C"

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

// BLAS describes the BLAS library in use.
func BLAS() string { return C.GoString(C.ch_config_blas()) }
