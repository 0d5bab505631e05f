package engine

import (
	"context"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// TestFlushLocalAsksLocal: the window's FlushLocal and FlushLocalAll ask
// the transport for local completion only, Flush and FlushAll for
// completion at the target.
func TestFlushLocalAsksLocal(t *testing.T) {
	eps, err := local.New(2)
	if err != nil {
		t.Fatal(err)
	}
	counters := make([]*transporttest.FlushCounter, len(eps))
	cs := make([]*Comm, len(eps))
	for r, e := range eps {
		counters[r] = &transporttest.FlushCounter{Endpoint: e}
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
			f0 := a.Flushes.Load()
			if err := w.FlushLocal(ctx, 1); err != nil {
				return err
			}
			if err := w.FlushLocalAll(ctx); err != nil {
				return err
			}
			// FlushLocalAll flushes each of the two targets of LockAll.
			if lf, f := a.LocalFlushes.Load(), a.Flushes.Load()-f0; lf != 3 || f != 0 {
				t.Errorf("FlushLocal and FlushLocalAll: %d local and %d full flushes of the transport, want 3 and 0", lf, f)
			}
			if err := w.Flush(ctx, 1); err != nil {
				return err
			}
			if lf, f := a.LocalFlushes.Load(), a.Flushes.Load()-f0; lf != 3 || f != 1 {
				t.Errorf("then Flush: %d local and %d full flushes of the transport, want 3 and 1", lf, f)
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
		}
		return w.Free(ctx)
	})
}
