package engine

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// stallFabric wraps the local transport so that puts can be kept in
// flight: while it holds them, Put queues the write instead of making
// it, and Flush and FlushAll wait until release, or until their context
// ends (with its error), as over a network that has not delivered yet.
type stallFabric struct {
	mu       sync.Mutex
	held     bool
	pending  []func()
	released chan struct{} // closed by release
	stalled  chan struct{} // receives when a Flush starts waiting
}

func newStallFabric() *stallFabric {
	return &stallFabric{released: make(chan struct{}), stalled: make(chan struct{}, 1)}
}

// hold keeps the puts issued from now on in flight.
func (f *stallFabric) hold() {
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
}

// release makes the writes kept in flight and lets the flushes return.
func (f *stallFabric) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.held {
		return
	}
	f.held = false
	for _, put := range f.pending {
		put()
	}
	f.pending = nil
	close(f.released)
}

// wait is a flush: it waits while puts are kept in flight.
func (f *stallFabric) wait(ctx context.Context) error {
	f.mu.Lock()
	busy := len(f.pending) > 0
	f.mu.Unlock()
	if !busy {
		return nil
	}
	select {
	case f.stalled <- struct{}{}:
	default:
	}
	select {
	case <-f.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type stallEndpoint struct {
	transport.Endpoint
	f *stallFabric
}

func (e *stallEndpoint) Caps() transport.Caps {
	c := e.Endpoint.Caps()
	c.Name = "stall(" + c.Name + ")"
	c.Synchronous, c.Direct = false, false
	return c
}

func (e *stallEndpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	r, err := e.Endpoint.Region(target, key, size)
	if err != nil {
		return nil, err
	}
	return &stallRegion{Region: r, f: e.f}, nil
}

func (e *stallEndpoint) Flush(ctx context.Context, target int) error {
	if err := e.f.wait(ctx); err != nil {
		return err
	}
	return e.Endpoint.Flush(ctx, target)
}

func (e *stallEndpoint) FlushAll(ctx context.Context) error {
	if err := e.f.wait(ctx); err != nil {
		return err
	}
	return e.Endpoint.FlushAll(ctx)
}

type stallRegion struct {
	transport.Region
	f *stallFabric
}

func (r *stallRegion) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	// Data is held; the window control messages (notices with no data)
	// pass, as the active messages that once carried them did.
	if !r.f.held || len(src) == 0 {
		return r.Region.Put(off, src, n, c)
	}
	src = slices.Clone(src)
	if c != nil {
		c.Add(1)
	}
	r.f.pending = append(r.f.pending, func() {
		err := r.Region.Put(off, src, n, nil)
		if c != nil {
			c.Done(err)
		}
	})
	return nil
}

// TestNoCompletionSignalBeforeFlush: a target must not leave the call
// that ends its epoch (Fence, Wait) while an origin's put to it is still
// in flight, even when the origin's flush fails because its context
// ended. Rank 0 puts to rank 1 over a transport that keeps the put in
// flight, and its context is cancelled while it flushes in the call that
// ends the epoch; rank 1's call must then fail (when its own context is
// cancelled), not return with the data missing. It once did with the
// deferred fence and with Complete, which told their targets "done"
// after the failed flush (a data race on the async transport, where the
// write lands afterwards).
func TestNoCompletionSignalBeforeFlush(t *testing.T) {
	type epoch struct {
		name string
		st   Strategy
		// open opens rank's epoch; end ends it, the origin's (rank 0's)
		// or the target's (rank 1's).
		open func(ctx context.Context, w *Win, rank int) error
		end  func(ctx context.Context, w *Win, rank int) error
	}
	fenceOpen := func(ctx context.Context, w *Win, _ int) error { return w.Fence(ctx, NoPrecede) }
	fenceEnd := func(ctx context.Context, w *Win, _ int) error { return w.Fence(ctx, 0) }
	pscwOpen := func(ctx context.Context, w *Win, rank int) error {
		if rank == 0 {
			return w.Start(ctx, []int{1}, 0)
		}
		return w.Post([]int{0}, 0)
	}
	pscwEnd := func(ctx context.Context, w *Win, rank int) error {
		if rank == 0 {
			return w.Complete(ctx)
		}
		return w.Wait(ctx)
	}
	var cases []epoch
	for _, st := range []Strategy{Immediate, Deferred} {
		cases = append(cases,
			epoch{"fence/" + st.String(), st, fenceOpen, fenceEnd},
			epoch{"pscw/" + st.String(), st, pscwOpen, pscwEnd})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStallFabric()
			defer f.release()
			inner, err := local.New(2)
			if err != nil {
				t.Fatal(err)
			}
			cs := make([]*Comm, 2)
			for r := range cs {
				cs[r] = New(&stallEndpoint{Endpoint: inner[r], f: f}, nil, nil)
			}
			t.Cleanup(func() {
				for _, c := range cs {
					c.Close()
				}
			})
			ws := make([]*Win, 2)
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w, err := c.Allocate(ctx, 8, WinOptions{Strategy: tc.st})
				ws[c.rank] = w
				return err
			})
			f.hold()
			want := []byte{1, 2, 3, 4, 5, 6, 7, 8}
			originCtx, cancelOrigin := context.WithCancel(context.Background())
			defer cancelOrigin()
			targetCtx, cancelTarget := context.WithCancel(context.Background())
			defer cancelTarget()
			var originErr, targetErr error
			var got []byte
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w := ws[c.rank]
				if err := tc.open(ctx, w, c.rank); err != nil {
					return err
				}
				if c.rank == 1 {
					targetErr = tc.end(targetCtx, w, 1)
					// What rank 1 may read now: the put is complete or
					// the epoch failed.
					got = slices.Clone(w.Memory())
					return nil
				}
				if err := w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: want, Target: 1}); err != nil {
					return err
				}
				go func() {
					select {
					case <-f.stalled:
					case <-time.After(testTimeout / 2):
					}
					cancelOrigin()
				}()
				originErr = tc.end(originCtx, w, 0)
				// Let a wrongly told target return, then end its wait.
				time.Sleep(100 * time.Millisecond)
				cancelTarget()
				return nil
			})
			if originErr == nil {
				t.Errorf("rank 0 ended its epoch with its put in flight and its context cancelled")
			}
			if targetErr == nil && !bytes.Equal(got, want) {
				t.Errorf("rank 1 ended its epoch without error while rank 0's put was in flight (rank 0: %v): window %v, want %v", originErr, got, want)
			}
			t.Logf("rank 0: %v; rank 1: %v", originErr, targetErr)
		})
	}
}
