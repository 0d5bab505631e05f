package engine

import (
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/match"
	"github.com/narma-rma/narma/internal/mem"
)

// noticeEntry is a tag notice waiting in an inbox.
type noticeEntry struct{ src, tag int32 }

// inboxSlots is the capacity of an inbox's ring (a power of two).
const inboxSlots = 128

// inbox collects the tag notices of a window from any goroutine, for the
// window's owner, in arrival order. Notices go into a bounded ring of
// slots without a lock: a producer claims a position with a
// compare-and-swap and publishes its slot with a store of the slot's
// sequence, the owner takes slots in order. When the ring is full they go
// to an overflow buffer under a mutex, and keep going there, so that the
// notices of one producer stay in order, until the owner has taken the
// overflow. Nothing allocates once the overflow buffer has grown. The
// zero value is an empty inbox.
type inbox struct {
	// The padding keeps enq, which every producer writes, off the lines
	// of whatever precedes the inbox in its struct (a window's fields
	// that its owner reads as it polls): a Go struct is not aligned to
	// cache lines, so the line around enq may start up to 56 bytes
	// before it.
	_   [64]byte
	enq atomic.Uint64 // next position to claim
	_   [56]byte
	deq uint64 // next position to take; the owner's only
	_   [56]byte

	ring [inboxSlots]inboxSlot

	over  atomic.Bool // notices go to buf: the ring filled and buf was not taken since
	mu    sync.Mutex
	buf   []noticeEntry
	spare []noticeEntry
}

// inboxSlot holds the notice of position pos = lap*inboxSlots + i when
// seq is lap<<1|1, and is free for it when seq is lap<<1.
type inboxSlot struct {
	seq      uint64 // loadSeq, publish (producer), free (owner)
	src, tag int32
}

func (s *inboxSlot) loadSeq() uint64 { return atomic.LoadUint64(&s.seq) }

// publish is the producer's store of a notice: sequentially consistent,
// for Comm.wake's look at the sleepers follows it (the waiter registers,
// then looks at the inbox), but a plain store and a fence rather than an
// exchange on the line the owner polls (mem.StoreFenced64).
func (s *inboxSlot) publish(seq uint64) { mem.StoreFenced64(&s.seq, seq) }

// free is the owner's store of a slot taken: a release store, which no
// producer's handshake depends on.
func (s *inboxSlot) free(seq uint64) { mem.StoreRelease64(&s.seq, seq) }

// push appends a notice.
func (b *inbox) push(src, tag int32) {
	if !b.over.Load() && b.tryRing(src, tag) {
		return
	}
	b.mu.Lock()
	b.over.Store(true)
	b.buf = append(b.buf, noticeEntry{src, tag})
	b.mu.Unlock()
}

// tryRing puts a notice in the ring; it reports false if the ring is full.
func (b *inbox) tryRing(src, tag int32) bool {
	for {
		pos := b.enq.Load()
		s := &b.ring[pos%inboxSlots]
		free := pos / inboxSlots << 1
		switch seq := s.loadSeq(); {
		case seq == free:
			if b.enq.CompareAndSwap(pos, pos+1) {
				s.src, s.tag = src, tag
				s.publish(free | 1)
				return true
			}
		case seq < free:
			return false // the slot still holds a notice of the last lap
		}
		// Another producer took pos: try the next one.
	}
}

// pending reports whether a notice waits; the owner only.
func (b *inbox) pending() bool {
	return b.over.Load() || b.ring[b.deq%inboxSlots].loadSeq() == b.deq/inboxSlots<<1|1
}

// take calls f for every waiting notice, in arrival order; the owner only.
func (b *inbox) take(f func(noticeEntry)) {
	for {
		s := &b.ring[b.deq%inboxSlots]
		lap := b.deq / inboxSlots
		if s.loadSeq() != lap<<1|1 {
			break
		}
		e := noticeEntry{s.src, s.tag}
		s.free((lap + 1) << 1)
		b.deq++
		f(e)
	}
	// The overflow is taken only when the ring holds nothing, published
	// or claimed: a producer's notices went to the overflow only once the
	// ring was full or the overflow not yet taken, so its older ones may
	// still be in the ring, behind a slot another producer has claimed
	// and not yet published. Those must come out first.
	if !b.over.Load() || b.deq != b.enq.Load() {
		return
	}
	b.mu.Lock()
	got := b.buf
	b.buf = b.spare[:0]
	b.over.Store(false)
	b.mu.Unlock()
	for _, e := range got {
		f(e)
	}
	b.spare = got[:0]
}

// drainFor moves every queued notice, in arrival order, into q, except
// that the notices request r matches, up to its count, go straight to r.
// The caller has taken from q everything r matches there, so these are
// the oldest matching notices, and the order of the rest is unchanged.
// Only the window's owner calls it.
func (b *inbox) drainFor(q *match.Queue, r *Request) {
	if !b.pending() {
		return
	}
	b.take(func(e noticeEntry) {
		if r.matched < r.count && (r.src == AnySource || r.src == e.src) && (r.tag == AnyTag || r.tag == e.tag) {
			r.matched++
			r.st = Status{Source: int(e.src), Tag: int(e.tag)}
			return
		}
		q.Push(e.src, e.tag)
	})
}
