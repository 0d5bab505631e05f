package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport/local"
)

// testTimeout bounds every multi-rank test, so that a hang fails the test
// instead of the whole binary.
const testTimeout = 20 * time.Second

// newComms builds n connected communicators over the local transport. All
// of them are built before any rank runs, so every handler is installed
// before the first message.
func newComms(t testing.TB, n int) []*Comm {
	t.Helper()
	eps, err := local.New(n)
	if err != nil {
		t.Fatalf("local.New(%d): %v", n, err)
	}
	cs := make([]*Comm, n)
	for r := range cs {
		cs[r] = New(eps[r], nil, nil)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			_ = c.Close()
		}
	})
	return cs
}

// runRanks runs f on every rank as a goroutine and returns each rank's
// error. It fails the test if the ranks do not all return within
// testTimeout (ctx is cancelled then, so a rank blocked in a wait returns).
func runRanks(t testing.TB, cs []*Comm, f func(ctx context.Context, c *Comm) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[r] = fmt.Errorf("rank %d panicked: %v", r, p)
				}
			}()
			errs[r] = f(ctx, c)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("ranks still running after %v", testTimeout)
	}
	return errs
}

// runOK is runRanks that fails the test for any rank's error.
func runOK(t testing.TB, cs []*Comm, f func(ctx context.Context, c *Comm) error) {
	t.Helper()
	for r, err := range runRanks(t, cs, f) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// The message contexts of a communicator made by New (Dup makes others).
const (
	ctxUser ctxID = 0
	ctxColl ctxID = 1
)
