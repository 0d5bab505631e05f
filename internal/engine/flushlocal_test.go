package engine

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// asyncCounter is a local endpoint that says it is not synchronous (so
// that the engine asks it to flush) and counts its flushes of each kind
// (a transport.LocalFlusher).
type asyncCounter struct {
	transport.Endpoint
	flushes, localFlushes atomic.Int32
}

func (a *asyncCounter) Caps() transport.Caps {
	c := a.Endpoint.Caps()
	c.Synchronous = false
	return c
}

func (a *asyncCounter) Flush(ctx context.Context, t int) error {
	a.flushes.Add(1)
	return a.Endpoint.Flush(ctx, t)
}

func (a *asyncCounter) FlushAll(ctx context.Context) error {
	a.flushes.Add(1)
	return a.Endpoint.FlushAll(ctx)
}

func (a *asyncCounter) FlushLocal(ctx context.Context, t int) error {
	a.localFlushes.Add(1)
	return a.Endpoint.Flush(ctx, t)
}

func (a *asyncCounter) FlushLocalAll(ctx context.Context) error {
	a.localFlushes.Add(1)
	return a.Endpoint.FlushAll(ctx)
}

// TestFlushLocalAsksLocal: the window's FlushLocal and FlushLocalAll ask
// the transport for local completion only, Flush and FlushAll for
// completion at the target.
func TestFlushLocalAsksLocal(t *testing.T) {
	eps, err := local.New(2)
	if err != nil {
		t.Fatal(err)
	}
	counters := make([]*asyncCounter, len(eps))
	cs := make([]*Comm, len(eps))
	for r, e := range eps {
		counters[r] = &asyncCounter{Endpoint: e}
		cs[r] = New(counters[r], nil, nil)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			_ = c.Close()
		}
	})
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		w, err := c.Allocate(ctx, 64, WinOptions{})
		if err != nil {
			return err
		}
		if c.rank == 0 {
			a := counters[0]
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: []byte{7}, Target: 1}); err != nil {
				return err
			}
			f0 := a.flushes.Load()
			if err := w.FlushLocal(ctx, 1); err != nil {
				return err
			}
			if err := w.FlushLocalAll(ctx); err != nil {
				return err
			}
			// FlushLocalAll flushes each of the two targets of LockAll.
			if lf, f := a.localFlushes.Load(), a.flushes.Load()-f0; lf != 3 || f != 0 {
				t.Errorf("FlushLocal and FlushLocalAll: %d local and %d full flushes of the transport, want 3 and 0", lf, f)
			}
			if err := w.Flush(ctx, 1); err != nil {
				return err
			}
			if lf, f := a.localFlushes.Load(), a.flushes.Load()-f0; lf != 3 || f != 1 {
				t.Errorf("then Flush: %d local and %d full flushes of the transport, want 3 and 1", lf, f)
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
		}
		return w.Free(ctx)
	})
}
