// Package chainerc is a Go binding of chainerc, Chainer's define-by-run
// neural-network engine behind a C ABI (include/ch/ch.h).
//
// Errors are error values (*Error) carrying the status kind and the library's
// message. The message is thread-local in C, so every fallible call goes
// through a small C helper (capi_gen.c) that calls the API and copies the
// message inside the same cgo call: goroutines need no runtime.LockOSThread.
//
// Handles (*Array, *Variable, *Function) own one reference each: Close
// releases it (idempotent); a finalizer releases it if Close was never called.
// Custom functions are Go values implementing FunctionImpl, reached from C
// through runtime/cgo.Handle values (C never keeps a Go pointer).
package chainerc

// The headers and the library come from pkg-config (chainerc.pc of the
// libchainerc-dev package or of `meson install`; for a build tree, test.sh sets
// PKG_CONFIG_PATH to its meson-uninstalled/ folder).

/*
#cgo pkg-config: chainerc
#include <stdlib.h>
#include "capi_gen.h"
#include "capi_extra.h"
*/
import "C"
