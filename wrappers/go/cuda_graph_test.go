package chainerc

import (
	"errors"
	"testing"
)

// CudaGraph's refusals where no capture can run (the CPU, no capture begun);
// capture and replay themselves are tested on the emulated devices in C
// (tests/gpu/test_gpu_graph.cpp) and Python.
func TestCudaGraphRefusesTheCPU(t *testing.T) {
	var e *Error
	if err := BeginCapture(CPU); !errors.As(err, &e) || e.Status != ErrDevice {
		t.Fatalf("BeginCapture(CPU) = %v, want ErrDevice", err)
	}
	if g, err := EndCapture(CPU); g != nil || err == nil {
		t.Fatalf("EndCapture(CPU) without a capture = %v, %v; want an error", g, err)
	}
	if g, err := Capture(CPU, func() error { return nil }); g != nil || !errors.As(err, &e) || e.Status != ErrDevice {
		t.Fatalf("Capture(CPU) = %v, %v; want ErrDevice", g, err)
	}
	if EngineStream(-1) != nil {
		t.Fatalf("EngineStream(-1) is not nil")
	}
}
