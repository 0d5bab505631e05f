package engine

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// newTestInbox returns an inbox over a ring of its own, which checks no
// sources and counts none.
func newTestInbox() *inbox {
	b := new(inbox)
	b.attach(new(inboxRing), nil, 0)
	return b
}

// tryPush puts a notice in r as a producer does, claim then fill; it
// reports false if the ring is full.
func (r *inboxRing) tryPush(src, tag int32, seen *atomic.Uint64, fenced bool) bool {
	pos, ok := r.tryClaim(seen)
	if ok {
		r.fill(pos, src, tag, fenced)
	}
	return ok
}

// takeAll returns the inbox's waiting notices in the order take gives.
func takeAll(b *inbox) []noticeEntry {
	var got []noticeEntry
	b.take(func(e noticeEntry) { got = append(got, e) })
	return got
}

// TestInboxOrder: notices come out in the order they went in, through
// the ring, through the overflow when the ring is full, and through the
// ring again once the overflow was taken, lap after lap.
func TestInboxOrder(t *testing.T) {
	b := newTestInbox()
	next, want := int32(0), int32(0)
	for _, burst := range []int{1, inboxSlots - 1, inboxSlots, inboxSlots + 1, 3*inboxSlots + 7, 0, 5, 2 * inboxSlots} {
		for range burst {
			b.push(1, next)
			next++
		}
		if got := b.pending(); got != (burst > 0) {
			t.Fatalf("after %d pushes: pending %v", burst, got)
		}
		for _, e := range takeAll(b) {
			if e.src != 1 || e.tag != want {
				t.Fatalf("burst of %d: took %+v, want tag %d", burst, e, want)
			}
			want++
		}
		if want != next {
			t.Fatalf("burst of %d: took up to %d of %d", burst, want, next)
		}
		if b.pending() || (b.r.over.Load() != 0) {
			t.Fatalf("burst of %d: pending after everything was taken", burst)
		}
	}
}

// TestInboxConcurrent: producers push while the owner takes; every
// notice comes out once, each producer's in its order.
func TestInboxConcurrent(t *testing.T) {
	const producers, each = 4, 20000
	b := newTestInbox()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				b.push(int32(p), int32(i))
				if i%1000 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var next [producers]int32
	total := 0
	check := func(e noticeEntry) {
		if e.src < 0 || e.src >= producers || e.tag != next[e.src] {
			t.Fatalf("took %+v, want tag %d from %d", e, next[max(0, min(e.src, producers-1))], e.src)
		}
		next[e.src]++
		total++
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		b.take(check)
		runtime.Gosched()
	}
	b.take(check)
	if total != producers*each {
		t.Fatalf("took %d notices, want %d", total, producers*each)
	}
}

// FuzzInbox: any sequence of pushes from a few sources and takes keeps
// every source's notices in order, loses none and makes none up.
func FuzzInbox(f *testing.F) {
	f.Add([]byte{0, 1, 2, 255, 0})
	f.Add(make([]byte, 400))
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := newTestInbox()
		var pushed, taken [4]int32
		take := func() {
			b.take(func(e noticeEntry) {
				if e.src < 0 || e.src > 3 || e.tag != taken[e.src] {
					t.Fatalf("took %+v out of order", e)
				}
				taken[e.src]++
			})
		}
		for _, op := range ops {
			if op == 255 {
				take()
				continue
			}
			src := int32(op % 4)
			for range 1 + int(op/4)%8 {
				b.push(src, pushed[src])
				pushed[src]++
			}
		}
		take()
		if pushed != taken {
			t.Fatalf("pushed %v, took %v", pushed, taken)
		}
	})
}

// TestInboxClaimedSlot: a producer's notices in the ring behind a slot
// that another producer has claimed and not yet published come out
// before that producer's later notices in the overflow.
func TestInboxClaimedSlot(t *testing.T) {
	b := newTestInbox()
	b.r.enq.Store(1) // producer 9 claimed position 0 and has not published it
	for i := range inboxSlots + 1 {
		b.push(1, int32(i)) // positions 1..inboxSlots-1, then the overflow
	}
	if !(b.r.over.Load() != 0) {
		t.Fatal("the ring did not overflow")
	}
	if got := takeAll(b); len(got) != 0 {
		t.Fatalf("took %v before the claimed slot was published", got)
	}
	b.r.slot[0].src, b.r.slot[0].tag = 9, 0
	b.r.slot[0].publish(1, true)
	got := takeAll(b)
	if len(got) != inboxSlots+2 || got[0] != (noticeEntry{9, 0}) {
		t.Fatalf("took %d notices, first %v; want %d, first {9 0}", len(got), got[0], inboxSlots+2)
	}
	for i, e := range got[1:] {
		if e != (noticeEntry{1, int32(i)}) {
			t.Fatalf("notice %d of producer 1 is %v", i, e)
		}
	}
}

// TestInboxVoidAndRefused: a position its producer gave up (a void
// notice, dropDirect) is skipped, and so is an entry an origin wrote into
// the shared ring that names no rank of the window or a negative tag,
// which the inbox counts as refused; the notices after them come out.
func TestInboxVoidAndRefused(t *testing.T) {
	b := new(inbox)
	handled := make([]atomic.Uint64, 3)
	b.attach(new(inboxRing), handled, len(handled))
	var seen atomic.Uint64
	pos, ok := b.r.tryClaim(&seen)
	if !ok {
		t.Fatal("claim in an empty ring failed")
	}
	b.push(1, 10) // behind the claimed position
	if got := takeAll(b); len(got) != 0 {
		t.Fatalf("took %v before the claimed position was filled", got)
	}
	b.r.fill(pos, voidSrc, 0, false)
	for _, e := range []noticeEntry{{3, 1}, {-2, 1}, {2, -1}} {
		if !b.r.tryPush(e.src, e.tag, &seen, false) {
			t.Fatal("push failed")
		}
	}
	b.push(2, 11)
	got := takeAll(b)
	if want := []noticeEntry{{1, 10}, {2, 11}}; !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	if b.refused != 3 {
		t.Fatalf("refused %d entries, want 3", b.refused)
	}
	if handled[1].Load() != 1 || handled[2].Load() != 1 || handled[0].Load() != 0 {
		t.Fatalf("handled counts %d %d %d, want 0 1 1", handled[0].Load(), handled[1].Load(), handled[2].Load())
	}
}

// TestInboxFullClaim: a producer's claim fails once the ring holds
// inboxSlots notices, and succeeds again once the owner took one, even
// with the producer's copy of the take counter out of date.
func TestInboxFullClaim(t *testing.T) {
	b := newTestInbox()
	var seen atomic.Uint64
	for i := range inboxSlots {
		if !b.r.tryPush(1, int32(i), &seen, false) {
			t.Fatalf("push %d failed", i)
		}
	}
	if b.r.tryPush(1, inboxSlots, &seen, false) {
		t.Fatal("push into a full ring succeeded")
	}
	b.takeUntil(func(noticeEntry) bool { return true }) // one
	if !b.r.tryPush(1, inboxSlots, &seen, false) {
		t.Fatal("push after a take failed")
	}
	if got := takeAll(b); len(got) != inboxSlots || got[0].tag != 1 || got[inboxSlots-1].tag != inboxSlots {
		t.Fatalf("took %d notices, first %v, last %v", len(got), got[0], got[len(got)-1])
	}
}

// take calls f for every waiting notice, in arrival order; the owner only.
func (b *inbox) take(f func(noticeEntry)) {
	b.takeUntil(func(e noticeEntry) bool { f(e); return false })
}
