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

// putWorld is two endpoints, rank 1 exposing a 64-byte region that
// rank 0 holds a handle on; rank 1's notices are checked against its
// memory as they arrive.
type putWorld struct {
	eps []*Endpoint
	buf []byte
	key transport.Key
	r   transport.Region

	mu      sync.Mutex
	seen    [][]byte // the region's first 16 bytes when each notice arrived
	notices chan transport.Notice
}

func newPutWorld(t *testing.T) *putWorld {
	t.Helper()
	w := &putWorld{eps: newGroup(t, Config{Size: 2}), notices: make(chan transport.Notice, 4096)}
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

func (w *putWorld) notice(t *testing.T) transport.Notice {
	t.Helper()
	select {
	case n := <-w.notices:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no notice")
	}
	return transport.Notice{}
}

// TestNotifiedPutCompleteAtReturn: a notified put's data is in the
// target's memory when Put returns, before any Flush and whether or not
// the target has taken the notice (Caps.Synchronous), and it is there when
// the notice is delivered (DESIGN rule 1).
func TestNotifiedPutCompleteAtReturn(t *testing.T) {
	w := newPutWorld(t)
	if c := w.eps[0].Caps(); !c.Synchronous {
		t.Fatalf("Caps %+v: want Synchronous", c)
	}
	for _, n := range []int{1, 8, 16, 48} {
		data := bytes.Repeat([]byte{byte(n)}, n)
		if err := w.r.Put(16, data, transport.TagNotice(transport.NoticeTag, int32(n)), nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.buf[16:16+n], data) {
			t.Fatalf("%d-byte notified put: memory when Put returned %v, want %v", n, w.buf[16:16+n], data)
		}
		if got := w.notice(t); got.Tag() != int32(n) {
			t.Fatalf("notice %+v, want tag %d", got, n)
		}
	}
	if err := w.r.Put(0, []byte{9, 9, 9, 9, 9, 9, 9, 9}, transport.TagNotice(transport.NoticeTag, 99), nil); err != nil {
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

// TestPutOrder: no later operation of the origin to the target overtakes
// a small notified put: a larger notified put and a get after it see (or
// overwrite) its data in issue order, without a Flush between them.
func TestPutOrder(t *testing.T) {
	w := newPutWorld(t)
	a := bytes.Repeat([]byte{0xaa}, 8)
	b := bytes.Repeat([]byte{0xbb}, 32)
	for round := 0; round < 200; round++ {
		// Inline a, then the 32-byte b over it: b must win.
		if err := w.r.Put(0, a, transport.TagNotice(transport.NoticeTag, 1), nil); err != nil {
			t.Fatal(err)
		}
		if err := w.r.Put(0, b, transport.TagNotice(transport.NoticeTag, 2), nil); err != nil {
			t.Fatal(err)
		}
		w.notice(t)
		w.notice(t)
		if !bytes.Equal(w.buf[:32], b) {
			t.Fatalf("round %d: a small put overtook a later put: %x", round, w.buf[:32])
		}
		// a again, then get it back without a flush.
		if err := w.r.Put(0, a, transport.TagNotice(transport.NoticeTag, 3), nil); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 8)
		if err := w.r.Get(0, got, transport.Notice{}, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) {
			t.Fatalf("round %d: a get overtook a small put: %x", round, got)
		}
		w.notice(t)
	}
}

// TestNotifiedPutBounds: a notified put outside its handle fails with
// ErrBounds, writes nothing and queues no notice; a notice for a region
// withdrawn meanwhile is still delivered (the engine drops it).
func TestNotifiedPutBounds(t *testing.T) {
	w := newPutWorld(t)
	for i := range w.buf {
		w.buf[i] = 0x11
	}
	for _, off := range []int{-1, 57, 64, 1 << 40} {
		if err := w.r.Put(off, make([]byte, 8), transport.TagNotice(transport.NoticeTag, 1), nil); !errors.Is(err, transport.ErrBounds) {
			t.Errorf("notified put at %d: %v, want ErrBounds", off, err)
		}
	}
	if !bytes.Equal(w.buf, bytes.Repeat([]byte{0x11}, 64)) {
		t.Fatalf("a refused put wrote %x", w.buf)
	}
	if err := w.eps[0].Flush(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-w.notices:
		t.Fatalf("a refused put delivered %+v", n)
	case <-time.After(20 * time.Millisecond):
	}
	if err := w.eps[1].Unexpose(w.key); err != nil {
		t.Fatal(err)
	}
	if err := w.eps[0].notify(1, w.r.(*region).word, transport.TagNotice(transport.NoticeTag, 7)); err != nil {
		t.Fatal(err)
	}
	if n := w.notice(t); n.Tag() != 7 {
		t.Fatalf("notice %+v, want tag 7", n)
	}
	if err := w.r.Put(0, make([]byte, 8), transport.TagNotice(transport.NoticeTag, 8), nil); !errors.Is(err, transport.ErrNoRegion) {
		t.Fatalf("put to a withdrawn region: %v, want ErrNoRegion", err)
	}
}

// TestNotifiedPutStream: a stream of small notified puts, a goroutine at
// the target polling all along, and the origin never flushing: each
// notice arrives once, its put's data (or a later one's) in place.
func TestNotifiedPutStream(t *testing.T) {
	w := newPutWorld(t)
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
		if err := w.r.Put(8, val, transport.TagNotice(transport.NoticeTag, 1), nil); err != nil {
			t.Fatal(err)
		}
		if got := mem.AtomicLoad64(w.buf[8:]); got != uint64(i) {
			t.Fatalf("when put %d returned the memory held %d", i, got)
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

// TestDrainBounded: one drain takes at most pollNotices notices, and
// stops after the one for which a taker reports done; what it leaves
// stays in the ring, in order, for the next one.
func TestDrainBounded(t *testing.T) {
	w := newPutWorld(t)
	e := w.eps[1]
	for !e.draining.tryLock() {
		time.Sleep(time.Millisecond) // the progress goroutine drains
	}
	defer e.draining.unlock()
	const total = pollNotices + 4
	for tag := int32(1); tag <= total; tag++ {
		if err := w.r.Put(0, nil, transport.TagNotice(transport.NoticeTag, tag), nil); err != nil {
			t.Fatal(err)
		}
	}
	var taken []int32
	take := func(_ int, _ transport.Key, n transport.Notice) bool {
		taken = append(taken, n.Tag())
		return n.Tag() == 2
	}
	if !e.drain(take, pollNotices) {
		t.Fatal("drain reports nothing")
	}
	if len(taken) != 2 || taken[0] != 1 || taken[1] != 2 {
		t.Fatalf("the taker got %v, want [1 2]: done did not stop the drain", taken)
	}
	var handled []int32
	for e.drain(nil, pollNotices) {
		if len(w.notices) > pollNotices {
			t.Fatalf("one drain handled %d notices, more than %d", len(w.notices), pollNotices)
		}
		for len(w.notices) > 0 {
			handled = append(handled, (<-w.notices).Tag())
		}
	}
	if len(handled) != total-2 {
		t.Fatalf("handled %v after the taker, want tags 3 to %d", handled, total)
	}
	for i, tag := range handled {
		if tag != int32(i+3) {
			t.Fatalf("handled %v after the taker, want tags 3 to %d in order", handled, total)
		}
	}
}

// TestNoticeKeysInterleaved: notices about two regions, interleaved and
// in runs, each reach the handler with its own region's key, through
// Poll and through PollNotices (the drain reuses the last notice's Key
// while the key's word repeats, and must make a new one when it
// changes).
func TestNoticeKeysInterleaved(t *testing.T) {
	eps := newGroup(t, Config{Size: 2})
	var keys [2]transport.Key
	var regs [2]transport.Region
	for i := range keys {
		buf := mem.Alloc(64)
		t.Cleanup(func() { mem.Free(buf) })
		var err error
		if keys[i], err = eps[1].Expose(buf); err != nil {
			t.Fatal(err)
		}
		if regs[i], err = eps[0].Region(1, keys[i], 64); err != nil {
			t.Fatal(err)
		}
	}
	// Region of each notice: runs and alternations, tagged with its index.
	which := []int{0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0}
	type arrival struct {
		key transport.Key
		n   transport.Notice
	}
	// The handler may run on the progress goroutine: arrivals go through
	// a channel, and are checked here.
	got := make(chan arrival, len(which))
	take := func(_ int, key transport.Key, n transport.Notice) bool {
		got <- arrival{key, n}
		return false
	}
	eps[1].SetNoticeHandler(func(src int, key transport.Key, n transport.Notice) { take(src, key, n) })
	for _, taker := range []bool{false, true} {
		for i, r := range which {
			if err := regs[r].Put(8, []byte{1, 2, 3, 4, 5, 6, 7, 8}, transport.TagNotice(transport.NoticeTag, int32(i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; i < len(which); {
			select {
			case a := <-got:
				if int(a.n.Tag()) != i {
					t.Fatalf("taker %v: notice %d arrived as %d", taker, i, a.n.Tag())
				}
				if a.key != keys[which[i]] {
					t.Fatalf("taker %v: notice %d about region %d came with key %v, want %v", taker, i, which[i], a.key, keys[which[i]])
				}
				i++
				continue
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("taker %v: %d of %d notices arrived", taker, i, len(which))
			}
			if taker {
				eps[1].PollNotices(take)
			} else {
				eps[1].Poll()
			}
		}
	}
}
