package chainerc

/*
#include <stdlib.h>
#include "capi_gen.h"
#include "capi_extra.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// Status is a chainerc status code (CH_OK or a negative CH_ERR_* kind). A
// Status is itself an error, so errors.Is(err, chainerc.ErrShape) tests the
// kind of an *Error.
type Status int32

const (
	OK                 Status = C.CH_OK
	ErrInvalidArgument Status = C.CH_ERR_INVALID_ARGUMENT
	ErrNullHandle      Status = C.CH_ERR_NULL_HANDLE
	ErrReleasedHandle  Status = C.CH_ERR_RELEASED_HANDLE
	ErrShape           Status = C.CH_ERR_SHAPE
	ErrDtype           Status = C.CH_ERR_DTYPE
	ErrDevice          Status = C.CH_ERR_DEVICE
	ErrOutOfMemory     Status = C.CH_ERR_OUT_OF_MEMORY
	ErrCallback        Status = C.CH_ERR_CALLBACK
	ErrGraph           Status = C.CH_ERR_GRAPH
	ErrNotClose        Status = C.CH_ERR_NOT_CLOSE
	ErrIO              Status = C.CH_ERR_IO
	ErrUnsupported     Status = C.CH_ERR_UNSUPPORTED
	ErrInternal        Status = C.CH_ERR_INTERNAL
)

// String is the status's C name, e.g. "CH_ERR_SHAPE".
func (s Status) String() string { return C.GoString(C.ch_status_name(C.ch_status(s))) }
func (s Status) Error() string  { return s.String() }

// Error is a failed chainerc call.
type Error struct {
	Status  Status
	Message string
	// Cause is what a Go callback (custom function, graph or eval function)
	// returned or panicked with (*PanicError), carried through the engine.
	Cause error
}

func (e *Error) Error() string { return e.Status.String() + ": " + e.Message }

// Unwrap gives the callback's own error, so errors.As sees through the engine.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is this error's Status.
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && s == e.Status
}

// PanicError is the Cause of an Error when a Go callback panicked.
type PanicError struct {
	Value any
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// NewError makes an error for a callback to return (the status it reports).
func NewError(status Status, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// errOf turns a helper's result into an error (nil on success).
func errOf(r C.gres) error {
	if r.st == C.CH_OK {
		return nil
	}
	return makeError(r)
}

func makeError(r C.gres) error {
	e := &Error{Status: Status(r.st)}
	if r.msg != nil {
		e.Message = C.GoString(r.msg)
		C.free(unsafe.Pointer(r.msg))
	}
	if r.payload != nil {
		if h := C.gch_payload_handle(r.payload); h != 0 {
			hd := cgo.Handle(h)
			if cause, ok := hd.Value().(error); ok {
				e.Cause = cause
			}
			hd.Delete()
		}
	}
	return e
}

//export chainercGoDeleteHandle
func chainercGoDeleteHandle(h C.uintptr_t) {
	if h != 0 {
		cgo.Handle(h).Delete()
	}
}

// fail records a callback's failure for the engine and returns its status.
func fail(err error) C.ch_status {
	status := ErrCallback
	msg := err.Error()
	if e, ok := err.(*Error); ok {
		if e.Status != OK {
			status = e.Status
		}
		msg = e.Message
	}
	cmsg := C.CString(msg)
	defer C.free(unsafe.Pointer(cmsg))
	C.gch_fail(C.ch_status(status), cmsg, C.uintptr_t(cgo.NewHandle(err)))
	return C.ch_status(status)
}

// guard runs a callback body, turning a returned error or a panic into a
// status (a Go panic never unwinds through C).
func guard(body func() error) (st C.ch_status) {
	defer func() {
		if r := recover(); r != nil {
			st = fail(&PanicError{Value: r})
		}
	}()
	if err := body(); err != nil {
		return fail(err)
	}
	return C.CH_OK
}
