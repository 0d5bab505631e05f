package shm

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// inlineWorld is two endpoints, rank 1 exposing a 64-byte region that
// rank 0 holds a handle on; rank 1's notices are checked against its
// memory as they arrive.
type inlineWorld struct {
	eps []*Endpoint
	buf []byte
	key transport.Key
	r   transport.Region

	mu      sync.Mutex
	seen    [][]byte // the region's first 16 bytes when each notice arrived
	notices chan transport.Notice
}

func newInlineWorld(t *testing.T) *inlineWorld {
	t.Helper()
	w := &inlineWorld{eps: newGroup(t, Config{Size: 2}), notices: make(chan transport.Notice, 4096)}
	w.buf = mem.Alloc(64)
	t.Cleanup(func() { mem.Free(w.buf) })
	w.eps[1].SetNoticeHandler(func(_ int, _ transport.Key, n transport.Notice) {
		w.mu.Lock()
		w.seen = append(w.seen, bytes.Clone(w.buf[:16]))
		w.mu.Unlock()
		w.notices <- n
	})
	var err error
	if w.key, err = w.eps[1].Expose(w.buf); err != nil {
		t.Fatal(err)
	}
	if w.r, err = w.eps[0].Region(1, w.key, 64); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *inlineWorld) notice(t *testing.T) transport.Notice {
	t.Helper()
	select {
	case n := <-w.notices:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no notice")
	}
	return transport.Notice{}
}

// TestInlinePut: a notified put of at most inlineMax bytes travels in its
// notice's slot. Its data is in the target's memory when the notice is
// delivered (DESIGN rule 1), and after the origin's Flush, with nobody
// polling at the target (its progress goroutine takes the notice).
func TestInlinePut(t *testing.T) {
	w := newInlineWorld(t)
	for _, n := range []int{1, 8, inlineMax} {
		data := bytes.Repeat([]byte{byte(n)}, n)
		if err := w.r.Put(16, data, transport.Notice{Kind: transport.NoticeTag, Tag: int32(n)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.eps[0].Flush(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.buf[16:16+n], data) {
			t.Fatalf("%d-byte inline put: memory after Flush %v, want %v", n, w.buf[16:16+n], data)
		}
		if got := w.notice(t); got.Tag != int32(n) {
			t.Fatalf("notice %+v, want tag %d", got, n)
		}
	}
	// The data is there when the notice arrives.
	if err := w.r.Put(0, []byte{9, 9, 9, 9, 9, 9, 9, 9}, transport.Notice{Kind: transport.NoticeTag, Tag: 99}, nil); err != nil {
		t.Fatal(err)
	}
	w.notice(t)
	w.mu.Lock()
	last := w.seen[len(w.seen)-1]
	w.mu.Unlock()
	if !bytes.Equal(last[:8], []byte{9, 9, 9, 9, 9, 9, 9, 9}) {
		t.Fatalf("memory when the notice arrived: %v", last[:8])
	}
}

// TestInlineOrder: no later operation of the origin to the target
// overtakes an inline put: a larger notified put, a plain put and a get
// after it see (or overwrite) its data in issue order.
func TestInlineOrder(t *testing.T) {
	w := newInlineWorld(t)
	a := bytes.Repeat([]byte{0xaa}, 8)
	b := bytes.Repeat([]byte{0xbb}, 32)
	for round := 0; round < 200; round++ {
		// Inline a, then the 32-byte b over it: b must win.
		if err := w.r.Put(0, a, transport.Notice{Kind: transport.NoticeTag, Tag: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.r.Put(0, b, transport.Notice{Kind: transport.NoticeTag, Tag: 2}, nil); err != nil {
			t.Fatal(err)
		}
		w.notice(t)
		w.notice(t)
		if err := w.eps[0].Flush(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.buf[:32], b) {
			t.Fatalf("round %d: an inline put overtook a later put: %x", round, w.buf[:32])
		}
		// Inline a again, then get it back without a flush.
		if err := w.r.Put(0, a, transport.Notice{Kind: transport.NoticeTag, Tag: 3}, nil); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 8)
		if err := w.r.Get(0, got, transport.Notice{}, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) {
			t.Fatalf("round %d: a get overtook an inline put: %x", round, got)
		}
		w.notice(t)
	}
}

// TestInlineBounds: an inline put outside its handle fails with ErrBounds
// and queues nothing; one to a region withdrawn meanwhile is dropped at
// the target (nothing written), and Flush still returns.
func TestInlineBounds(t *testing.T) {
	w := newInlineWorld(t)
	for _, off := range []int{-1, 57, 64, 1 << 40} {
		if err := w.r.Put(off, make([]byte, 8), transport.Notice{Kind: transport.NoticeTag, Tag: 1}, nil); !errors.Is(err, transport.ErrBounds) {
			t.Errorf("inline put at %d: %v, want ErrBounds", off, err)
		}
	}
	if err := w.eps[0].Flush(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-w.notices:
		t.Fatalf("a refused put delivered %+v", n)
	case <-time.After(20 * time.Millisecond):
	}
	// Withdrawn between the origin's check and the target's copy: the
	// region's memory is left alone.
	for i := range w.buf {
		w.buf[i] = 0x11
	}
	if err := w.eps[1].Unexpose(w.key); err != nil {
		t.Fatal(err)
	}
	w.eps[0].push(1, w.key, transport.Notice{Kind: transport.NoticeTag, Tag: 7}, []byte{1, 2, 3}, 0)
	if err := w.eps[0].Flush(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	w.notice(t) // delivered (the engine drops notices of unknown regions)
	if !bytes.Equal(w.buf, bytes.Repeat([]byte{0x11}, 64)) {
		t.Fatalf("inline data written into a withdrawn region: %x", w.buf[:8])
	}
}

// TestInlineFlushRace: the origin's Flush and the target's consumer race
// to copy each inline put (a goroutine at the target polls all along).
// Whoever wins, the data is in place when Flush returns and when the
// notice arrives, each notice arrives once, and later puts are not
// overwritten by earlier ones.
func TestInlineFlushRace(t *testing.T) {
	w := newInlineWorld(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.eps[1].Poll()
		}
	}()
	const rounds = 3000
	val := make([]byte, 8)
	for i := 1; i <= rounds; i++ {
		mem.AtomicStore64(val, uint64(i))
		if err := w.r.Put(8, val, transport.Notice{Kind: transport.NoticeTag, Tag: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if i%3 != 0 {
			continue // some puts left for the next flush to settle
		}
		if err := w.eps[0].Flush(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if got := mem.AtomicLoad64(w.buf[8:]); got != uint64(i) {
			t.Fatalf("after Flush of put %d the memory holds %d", i, got)
		}
	}
	close(stop)
	wg.Wait()
	for i := 1; i <= rounds; i++ {
		w.notice(t)
	}
	select {
	case n := <-w.notices:
		t.Fatalf("a notice too many: %+v", n)
	case <-time.After(20 * time.Millisecond):
	}
	// When each notice arrived its put's data (or a later one's) was there.
	w.mu.Lock()
	defer w.mu.Unlock()
	last := uint64(0)
	for k, b := range w.seen {
		v := mem.AtomicLoad64(b[8:])
		if v < uint64(k+1) || v < last {
			t.Fatalf("notice %d arrived with %d in memory (before it: %d)", k+1, v, last)
		}
		last = v
	}
}
