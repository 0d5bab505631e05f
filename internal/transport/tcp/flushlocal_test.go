package tcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// TestFlushLocal: while the target's reader is stopped (so that nothing
// more is applied there), FlushLocal after a put returns at once, its
// source already on the wire, and sends no flush, while Flush waits for
// the target; after a get, FlushLocal waits for the get's reply, and
// returns with the data in place once the target moves again.
func TestFlushLocal(t *testing.T) {
	eps, r, b, _ := stalledPair(t)
	e := eps[0]
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 200*time.Millisecond)
	}
	src := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if err := r.Put(16, src, transport.Notice{}, nil); err != nil {
		t.Fatal(err)
	}
	flushes := e.Stats().Sent[KindFlush].Frames
	ctx, cancel := short()
	defer cancel()
	if err := e.FlushLocal(ctx, 1); err != nil {
		t.Fatalf("FlushLocal after a put to a stalled target: %v, want nil at once", err)
	}
	if err := e.FlushLocalAll(ctx); err != nil {
		t.Fatalf("FlushLocalAll after a put to a stalled target: %v, want nil at once", err)
	}
	if n := e.Stats().Sent[KindFlush].Frames; n != flushes {
		t.Errorf("FlushLocal after a put sent %d flush frames, want none", n-flushes)
	}
	clear(src) // FlushLocal returned: the buffer is ours again

	if err := e.Flush(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush to a stalled target: %v, want the context's deadline", err)
	}

	got := make([]byte, 16)
	var c transport.Completion
	if err := r.Get(16, got, transport.Notice{}, &c); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := short()
	defer cancel2()
	if err := e.FlushLocal(ctx2, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FlushLocal after a get from a stalled target: %v, want the context's deadline", err)
	}
	b.unblock()
	ctx3, cancel3 := testContext()
	defer cancel3()
	if err := e.FlushLocal(ctx3, 1); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != byte(i+1) {
			t.Fatalf("after FlushLocal the get read %v, want 1..16", got)
		}
	}
}
