package async_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/async"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// TestFlushLocal: FlushLocal waits until the worker has executed the
// operations issued before it (until then it reads their sources), and
// then asks the inner endpoint for local completion only; Flush asks it
// for completion at the target.
func TestFlushLocal(t *testing.T) {
	inner, err := local.New(2)
	if err != nil {
		t.Fatal(err)
	}
	counters := make([]transport.Endpoint, len(inner))
	for i, e := range inner {
		counters[i] = &transporttest.FlushCounter{Endpoint: e}
	}
	eps := async.Wrap(counters)
	t.Cleanup(func() {
		for _, e := range eps {
			e.Close()
		}
	})
	fc := counters[0].(*transporttest.FlushCounter)
	m, key := expose(t, eps[1], 64)
	r := region(t, eps[0], 1, key, len(m))
	ctx := ctxT(t)

	// The worker is held up by a notice's handler: a put queued behind
	// it is not executed, and FlushLocal waits for it.
	b := newBlocker(eps[1])
	if err := r.Put(0, []byte{1}, transport.TagNotice(transport.NoticeTag, 1), nil); err != nil {
		t.Fatal(err)
	}
	src := []byte("sixteen bytes...")
	if err := r.Put(16, src, transport.Notice{}, nil); err != nil {
		t.Fatal(err)
	}
	<-b.entered
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := eps[0].(transport.LocalFlusher).FlushLocal(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FlushLocal while the worker is held up: %v, want the context's deadline", err)
	}
	close(b.release)
	lf0, f0 := fc.LocalFlushes.Load(), fc.Flushes.Load()
	if err := eps[0].(transport.LocalFlusher).FlushLocal(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if string(m[16:32]) != string(src) {
		t.Fatalf("after FlushLocal the target holds %q, want %q", m[16:32], src)
	}
	if lf, f := fc.LocalFlushes.Load()-lf0, fc.Flushes.Load()-f0; lf != 1 || f != 0 {
		t.Errorf("FlushLocal made %d local and %d full flushes of the inner endpoint, want 1 and 0", lf, f)
	}
	if err := eps[0].(transport.LocalFlusher).FlushLocalAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if lf, f := fc.LocalFlushes.Load()-lf0, fc.Flushes.Load()-f0; lf != 2 || f != 1 {
		t.Errorf("FlushLocal, FlushLocalAll and Flush made %d local and %d full flushes of the inner endpoint, want 2 and 1", lf, f)
	}
}
