package shmem

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
)

// TestMain lets the test binary serve as the rank processes of run's
// process jobs (ranktest.Main).
func TestMain(m *testing.M) { ranktest.Main(m) }

// run runs fn on n PEs, each with a World over a small heap, and
// finalizes the Worlds. A rank's error fails the test; the job is bounded
// by a timeout so that a bug shows as a failure, not a hang. The job runs
// twice (ranktest.Run): with the PEs as goroutines, then as processes.
func run(t *testing.T, n int, fn func(ctx context.Context, w *World) error) {
	t.Helper()
	runComm(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := Init(ctx, c, WithHeapSize(1<<16))
		if err != nil {
			return err
		}
		if err := fn(ctx, w); err != nil {
			return err
		}
		return w.Finalize(ctx)
	})
}

// runComm is run for tests that make their Worlds themselves: fn gets
// the rank's Comm.
func runComm(t *testing.T, n int, fn func(c *narma.Comm) error) {
	t.Helper()
	ranktest.Run(t, n, fn)
}

// alloc is Alloc that panics on error (Run turns the panic into the
// rank's error): it keeps the tests' setup short.
func alloc[T narma.Elem](ctx context.Context, w *World, n int) Sym[T] {
	s, err := Alloc[T](ctx, w, n)
	if err != nil {
		panic(fmt.Sprintf("Alloc[%T](%d): %v", *new(T), n, err))
	}
	return s
}

// must panics on err, for setup steps.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// wantErr returns an error unless err matches target.
func wantErr(what string, err, target error) error {
	if err == nil || !errors.Is(err, target) {
		return fmt.Errorf("%s: got error %v, want %v", what, err, target)
	}
	return nil
}
