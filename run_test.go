package narma_test

// Run and RunContext: ranks, failure propagation (an error or a panic in
// one rank aborts the others' blocking calls and becomes Run's error),
// contexts, and invalid arguments.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// TestRunRanks: Run starts n ranks with distinct ranks 0..n-1 and the
// right size, and returns nil when all return nil.
func TestRunRanks(t *testing.T) {
	for n := 1; n <= 7; n++ {
		var seen [8]atomic.Int32
		var calls atomic.Int32
		run(t, n, func(c *narma.Comm) error {
			calls.Add(1)
			if c.Size() != n {
				return fmt.Errorf("Size() = %d, want %d", c.Size(), n)
			}
			if r := c.Rank(); r < 0 || r >= n {
				return fmt.Errorf("Rank() = %d, want in [0,%d)", r, n)
			}
			seen[c.Rank()].Add(1)
			if c.Context() == nil || c.Context().Err() != nil {
				return fmt.Errorf("Context() of a running job: %v", c.Context())
			}
			return c.Barrier(c.Context())
		})
		if calls.Load() != int32(n) {
			t.Errorf("Run(%d) called fn %d times", n, calls.Load())
		}
		for r := 0; r < n; r++ {
			if seen[r].Load() != 1 {
				t.Errorf("Run(%d): rank %d seen %d times", n, r, seen[r].Load())
			}
		}
	}
}

var errBoom = errors.New("boom from rank 0")

// TestRunRankErrorAbortsOthers: an error returned by one rank while the
// others are blocked in Recv, Barrier, PSCW Wait, Request.Wait, Probe and
// a contended Lock (with their own contexts or the job's) makes Run return
// that error, and the blocked calls return errors wrapping ErrAborted.
func TestRunRankErrorAbortsOthers(t *testing.T) {
	const n = 7
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		blocked := make([]error, n)
		var ready atomic.Int32
		err := runErr(t, n, func(c *narma.Comm) error {
			bg := context.Background()
			w, err := narma.Allocate[int64](c.Context(), c, 1, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			// Rank 6 holds rank 5's lock for the rest of the job.
			if c.Rank() == 6 {
				if err := w.Lock(bg, narma.Exclusive, 5, 0); err != nil {
					return err
				}
				if err := w.Put([]int64{1}, 5, 0); err != nil {
					return err
				}
				if err := w.Flush(bg, 5); err != nil {
					return err
				}
			}
			if err := c.Barrier(c.Context()); err != nil {
				return err
			}
			var e error
			switch c.Rank() {
			case 0:
				// Give the others time to block (not needed for
				// correctness).
				for ready.Load() < n-2 {
					yield(1)
				}
				time.Sleep(20 * time.Millisecond)
				return errBoom
			case 1:
				ready.Add(1)
				_, e = c.Recv(bg, make([]byte, 1), 0, 0)
			case 2:
				ready.Add(1)
				e = c.Barrier(bg)
			case 3:
				if err := w.Post([]int{0}, 0); err != nil {
					return err
				}
				ready.Add(1)
				e = w.Wait(bg)
			case 4:
				r, err := c.Irecv(make([]byte, 1), narma.AnySource, 3)
				if err != nil {
					return err
				}
				ready.Add(1)
				_, e = r.Wait(bg)
			case 5:
				ready.Add(1)
				if e = w.Lock(bg, narma.Exclusive, 5, 0); e == nil {
					if e = w.Put([]int64{2}, 5, 0); e == nil {
						e = w.Flush(bg, 5)
					}
				}
			case 6:
				_, e = c.Probe(bg, 0, 77)
			}
			blocked[c.Rank()] = e
			return e
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Run returned %v, want an error wrapping rank 0's error", err)
		}
		if !strings.Contains(err.Error(), "rank 0") {
			t.Errorf("Run's error %q does not name the failed rank", err)
		}
		for r := 1; r < n; r++ {
			if !errors.Is(blocked[r], narma.ErrAborted) {
				t.Errorf("rank %d's blocked call returned %v, want an error wrapping ErrAborted", r, blocked[r])
			}
		}
	})
}

// TestAbortedCallsWrapErrAborted: when the job is aborted, calls blocked
// with the job's own context (Comm.Context, as the examples do) also return
// errors wrapping ErrAborted, as Run documents, not a bare
// context.Canceled. Repeated, because which of the two a call reports must
// not be left to chance.
func TestAbortedCallsWrapErrAborted(t *testing.T) {
	const n, runs = 4, 10
	for i := 0; i < runs; i++ {
		blocked := make([]error, n)
		var ready atomic.Int32
		err := runErr(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			if c.Rank() == 0 {
				for ready.Load() < n-1 {
					yield(1)
				}
				time.Sleep(5 * time.Millisecond)
				return errBoom
			}
			ready.Add(1)
			var e error
			switch c.Rank() % 3 {
			case 0:
				_, e = c.Probe(ctx, 0, 1)
			case 1:
				_, e = c.Recv(ctx, nil, 0, 1)
			default:
				e = c.Barrier(ctx)
			}
			blocked[c.Rank()] = e
			return e
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("run %d: Run returned %v, want an error wrapping %v", i, err, errBoom)
		}
		for r := 1; r < n; r++ {
			if !errors.Is(blocked[r], narma.ErrAborted) {
				t.Fatalf("run %d: rank %d blocked with Comm.Context() got %q, want an error wrapping ErrAborted", i, r, blocked[r])
			}
		}
	}
}

// TestRunRankErrorAfterOthersFinished: Run returns the error of a rank even
// when every other rank has already returned nil.
func TestRunRankErrorAfterOthersFinished(t *testing.T) {
	var finished atomic.Int32
	err := runErr(t, 4, func(c *narma.Comm) error {
		if c.Rank() != 3 {
			finished.Add(1)
			return nil
		}
		for finished.Load() < 3 {
			yield(1)
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Run returned %v, want an error wrapping %v", err, errBoom)
	}
}

// TestRunPanic: a panic in a rank becomes Run's error, containing
// "panicked" and the panic value, and aborts ranks blocked in the library.
func TestRunPanic(t *testing.T) {
	var aborted atomic.Int32
	err := runErr(t, 3, func(c *narma.Comm) error {
		if c.Rank() == 1 {
			time.Sleep(10 * time.Millisecond)
			panic("kaboom in rank 1")
		}
		err := c.Barrier(context.Background())
		if errors.Is(err, narma.ErrAborted) {
			aborted.Add(1)
		}
		return err
	})
	if err == nil {
		t.Fatal("Run returned nil after a rank panicked")
	}
	for _, s := range []string{"panicked", "kaboom in rank 1", "rank 1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("Run's error %q does not contain %q", err, s)
		}
	}
	if aborted.Load() != 2 {
		t.Errorf("%d ranks saw their Barrier aborted, want 2", aborted.Load())
	}
}

// TestRunContextDeadline: RunContext returns the context's error when its
// deadline passes or it is cancelled while ranks are blocked.
func TestRunContextDeadline(t *testing.T) {
	for _, how := range []string{"deadline", "cancel"} {
		t.Run(how, func(t *testing.T) {
			var ctx context.Context
			var cancel context.CancelFunc
			want := context.DeadlineExceeded
			if how == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				want = context.Canceled
			}
			defer cancel()
			var aborted atomic.Int32
			done := make(chan error, 1)
			go func() {
				done <- narma.RunContext(ctx, 3, func(c *narma.Comm) error {
					var err error
					if c.Rank() == 0 {
						_, err = c.Recv(context.Background(), nil, 1, 0)
					} else {
						_, err = c.Recv(c.Context(), nil, 0, 0)
					}
					if errors.Is(err, narma.ErrAborted) || errors.Is(err, context.Canceled) || errors.Is(err, want) {
						aborted.Add(1)
					}
					return err
				})
			}()
			select {
			case err := <-done:
				if !errors.Is(err, want) {
					t.Fatalf("RunContext returned %v, want an error wrapping %v", err, want)
				}
			case <-time.After(testTimeout):
				t.Fatal("RunContext did not return after its context ended")
			}
			if aborted.Load() != 3 {
				t.Errorf("%d ranks saw their Recv aborted, want 3", aborted.Load())
			}
		})
	}
}

// TestRunContextAlreadyDone: RunContext with a context that is already
// cancelled (or past its deadline) returns the context's error, even when
// the ranks have nothing to block on and return at once.
func TestRunContextAlreadyDone(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"cancelled", cancelled, context.Canceled}, {"expired", expired, context.DeadlineExceeded}} {
		t.Run(tc.name, func(t *testing.T) {
			// Run many jobs: whether a broken RunContext notices the
			// context before its ranks finish is a matter of scheduling.
			for i := 0; i < 1000; i++ {
				err := narma.RunContext(tc.ctx, 2, func(c *narma.Comm) error { return nil })
				if !errors.Is(err, tc.want) {
					t.Fatalf("attempt %d: RunContext with a done context returned %v, want an error wrapping %v", i, err, tc.want)
				}
			}
		})
	}
}

// TestRunInvalid: Run with fewer than one rank or a nil function returns
// ErrInvalid without calling anything.
func TestRunInvalid(t *testing.T) {
	var called atomic.Int32
	fn := func(*narma.Comm) error { called.Add(1); return nil }
	for _, n := range []int{0, -1, -100} {
		if err := narma.Run(n, fn); !errors.Is(err, narma.ErrInvalid) {
			t.Errorf("Run(%d): %v, want ErrInvalid", n, err)
		}
		if err := narma.RunContext(context.Background(), n, fn); !errors.Is(err, narma.ErrInvalid) {
			t.Errorf("RunContext(%d): %v, want ErrInvalid", n, err)
		}
	}
	if err := narma.Run(2, nil); !errors.Is(err, narma.ErrInvalid) {
		t.Errorf("Run(2, nil): %v, want ErrInvalid", err)
	}
	if called.Load() != 0 {
		t.Errorf("fn called %d times by invalid Runs", called.Load())
	}
}
