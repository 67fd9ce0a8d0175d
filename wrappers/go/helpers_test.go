package chainerc

import (
	"math"
	"sync"
	"testing"
)

// Tests run sequentially by default (no t.Parallel), so live-handle counts
// compare cleanly; the mutex guards against -parallel use anyway.
var leakMu sync.Mutex

// noLeak runs f and checks that it left no live chainerc handle (every
// handle is Closed explicitly; finalizers are not relied on).
func noLeak(t *testing.T, f func()) {
	t.Helper()
	leakMu.Lock()
	defer leakMu.Unlock()
	before := LiveHandles()
	defer func() {
		if r := recover(); r != nil {
			if m, isMust := r.(mustFailure); isMust {
				t.Fatalf("unexpected error: %v", m.err)
			}
			panic(r)
		}
	}()
	f()
	// Only an increase is this test's leak: a finalizer of an earlier test's
	// unclosed handle may release one meanwhile.
	if after := LiveHandles(); after > before {
		ReportLiveHandles()
		t.Fatalf("live handles before %d, after %d", before, after)
	}
}

type mustFailure struct{ err error }

// must returns v, or fails the test running inside noLeak (Go 1.19 cannot
// pass t and a multi-value call together).
func must[T any](v T, err error) T {
	if err != nil {
		panic(mustFailure{err})
	}
	return v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// values: deterministic numbers in [lo, hi) (an LCG, as the Rust tests).
func values(n int, seed uint64, lo, hi float64) []float64 {
	s := seed*6364136223846793005 + 1442695040888963407
	out := make([]float64, n)
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = lo + (hi-lo)*(float64(s>>11)/float64(uint64(1)<<53))
	}
	return out
}

func close64(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*(1+math.Abs(b[i])) {
			return false
		}
	}
	return true
}

func statusOf(err error) Status {
	if e, ok := err.(*Error); ok {
		return e.Status
	}
	return OK
}
