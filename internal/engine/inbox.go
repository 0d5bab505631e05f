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

// inbox collects the tag notices of a window, for the window's owner, in
// arrival order. Notices go into a bounded ring of slots without a lock
// (inboxRing): a producer claims a position with a compare-and-swap and
// publishes its slot with a store of the slot's sequence, the owner takes
// slots in order. The ring lives in the window's control region, which
// the transport exposes: producers are the handlers of notices in the
// owner's process and, where the transport maps the region into an
// origin's process, the origins themselves (pushDirect, in notify.go).
//
// When the ring is full, the owner's handlers put notices in an overflow
// buffer under a mutex, and keep putting them there, so that the notices
// of one producer stay in order, until the owner has taken the overflow;
// an origin that finds the ring full or overflowing sends its notice
// through the transport instead, and keeps doing so until the owner's
// handlers have placed all it sent that way (the ring's handled counts).
// Nothing allocates once the overflow buffer has grown.
type inbox struct {
	// What the handlers read, then, on lines of their own, their copy
	// of the take counter and what the owner writes at every take: in a
	// job of goroutine ranks the handlers run on the origins' goroutines.
	r       *inboxRing
	handled []atomic.Uint64 // per source rank: its notices placed by a handler
	ranks   int32           // sources are ranks [0, ranks); 0: any
	_       [64]byte
	seen    atomic.Uint64 // the handlers' copy of r.deq (inboxRing.tryClaim)
	_       [56]byte
	deq     uint64 // next position to take; the owner's only
	refused int64  // ring entries refused (a bad source or tag); the owner's only
	_       [48]byte

	mu    sync.Mutex
	buf   []noticeEntry
	spare []noticeEntry
}

// inboxRing is the shared part of an inbox, laid out by hand in a
// window's control region (ctlInboxAt): the overflow flag, the owner's
// take counter and the producers' claim counter, each on a pair of lines
// of its own (processors fetch lines in pairs), then the slots. The
// owner writes no slot: a producer learns that the slot of a position is
// free from the take counter, which it reads only when the ring looks
// full to it (its seen count), so that a slot's line moves once per
// notice, from producer to owner. The flag comes first, at the address
// that a check for a nil pointer to the ring reads: the owner and the
// producers only read it, while a check that read the claim counter
// would pull it away from the producer that writes it next.
type inboxRing struct {
	over atomic.Uint64 // 1: handlers put notices in the overflow, which the owner has not taken
	_    [120]byte
	deq  uint64 // next position the owner takes: the owner's release stores
	_    [120]byte
	enq  atomic.Uint64 // next position to claim
	_    [120]byte
	slot [inboxSlots]inboxSlot
}

// inboxSlot holds the notice of position pos when seq is pos+1.
type inboxSlot struct {
	seq      uint64 // loadSeq, publish (producer)
	src, tag int32
	_        [48]byte
}

func (s *inboxSlot) loadSeq() uint64 { return atomic.LoadUint64(&s.seq) }

// publish is the producer's store of a notice. Fenced, it is
// sequentially consistent, for the look at the sleepers of Comm.wake
// follows it (the waiter registers, then looks at the inbox): a plain
// store and a fence rather than an exchange on the line the owner polls
// (mem.StoreFenced64). Else it is a release store, for a wake-up that
// orders it before its look itself (transport.Waker).
func (s *inboxSlot) publish(seq uint64, fenced bool) {
	if fenced {
		mem.StoreFenced64(&s.seq, seq)
	} else {
		mem.StoreRelease64(&s.seq, seq)
	}
}

// inboxSize is the bytes of a window's control region that the inbox of
// a window of n ranks takes: the ring, then the handled counts.
func inboxSize(n int) int { return mem.SizeOf[inboxRing]() + 8*n }

// attach makes the inbox of a window of ranks ranks (0: not checked) use
// r and, if not nil, handled, one count per source rank.
func (b *inbox) attach(r *inboxRing, handled []atomic.Uint64, ranks int) {
	b.r, b.handled, b.ranks = r, handled, int32(ranks)
}

// push appends a notice, from a handler in the owner's process, and
// counts it as placed for its source.
func (b *inbox) push(src, tag int32) {
	if pos, ok := b.r.claimInOrder(&b.seen); ok {
		b.r.fill(pos, src, tag, true)
	} else {
		b.mu.Lock()
		b.r.over.Store(1)
		b.buf = append(b.buf, noticeEntry{src, tag})
		b.mu.Unlock()
	}
	b.placed(src)
}

// empty reports whether the ring holds nothing, published or claimed,
// and nothing is in the overflow; the owner only.
func (b *inbox) empty() bool {
	return b.r.over.Load() == 0 && b.deq == b.r.enq.Load()
}

// placed counts a notice of src that a handler placed (in the ring, the
// overflow, the queue or a request): an origin that sent notices through
// the transport pushes into the ring again only once all are placed.
func (b *inbox) placed(src int32) {
	if uint32(src) < uint32(len(b.handled)) {
		b.handled[src].Add(1)
	}
}

// claimInOrder claims a position as tryClaim does, unless the overflow is
// set: a notice in the ring would come out before older ones of its
// source in the overflow. It looks at the flag again once the claim is
// made, and fills a position claimed in vain with a void notice. The
// model (model/inbox.pml, NO_OVER_RECHECK) shows that second look
// unneeded as long as handlers set the flag before they count a notice
// placed and handle one origin's notices one at a time; it costs a load
// of a line everyone only reads, and keeps the order should either stop
// holding. It reports false if the notice must go where the overflow's
// go.
func (r *inboxRing) claimInOrder(seen *atomic.Uint64) (pos uint64, ok bool) {
	if r.over.Load() != 0 {
		return 0, false
	}
	if pos, ok = r.tryClaim(seen); ok && r.over.Load() != 0 {
		r.fill(pos, voidSrc, 0, false)
		return 0, false
	}
	return pos, ok
}

// tryClaim takes the ring's next position for the caller, which must then
// fill it, and soon: the owner takes no later notice before it. It
// reports false if the ring is full. seen is the producer's copy of the
// owner's take counter, as it last read it.
func (r *inboxRing) tryClaim(seen *atomic.Uint64) (pos uint64, ok bool) {
	for {
		pos := r.enq.Load()
		// Differences as signed: a copy of deq another goroutine stored
		// may be past the pos this one loaded (the claim then fails).
		if int64(pos-seen.Load()) >= inboxSlots {
			deq := atomic.LoadUint64(&r.deq)
			seen.Store(deq)
			if int64(pos-deq) >= inboxSlots {
				return 0, false
			}
		}
		if r.enq.CompareAndSwap(pos, pos+1) {
			return pos, true
		}
		// Another producer took pos: try the next one.
	}
}

// fill writes the notice of claimed position pos and publishes it
// (inboxSlot.publish). A producer that claimed a position and then has no
// notice for it fills it with a void one (src voidSrc), which the owner
// skips.
func (r *inboxRing) fill(pos uint64, src, tag int32, fenced bool) {
	s := &r.slot[pos%inboxSlots]
	s.src, s.tag = src, tag
	s.publish(pos+1, fenced)
}

// voidSrc is the source of a void notice (inboxRing.fill).
const voidSrc = -1

// pending reports whether a notice waits; the owner only.
func (b *inbox) pending() bool {
	return b.r.over.Load() != 0 || b.r.slot[b.deq%inboxSlots].loadSeq() == b.deq+1
}

// takeUntil calls f for the waiting notices, in arrival order, and stops
// after a notice of the ring for which f reports true, leaving the later
// ones where they are; the notices of the overflow it gives f all. The
// owner only.
func (b *inbox) takeUntil(f func(noticeEntry) (stop bool)) {
	for deq := b.deq; ; {
		s := &b.r.slot[deq%inboxSlots]
		if s.loadSeq() != deq+1 {
			break
		}
		e := noticeEntry{s.src, s.tag}
		deq++
		b.deq = deq
		mem.StoreRelease64(&b.r.deq, deq) // the slot is free: producers may fill it
		if e.src == voidSrc {
			continue
		}
		if e.tag < 0 || e.src < 0 || b.ranks != 0 && e.src >= b.ranks {
			// Written by an origin into the shared ring: a tag that
			// would match like AnyTag, or no rank of the window.
			b.refused++
			continue
		}
		if f(e) {
			return
		}
	}
	// The overflow is taken only when the ring holds nothing, published
	// or claimed: a producer's notices went to the overflow only once the
	// ring was full or the overflow not yet taken, so its older ones may
	// still be in the ring, behind a slot another producer has claimed
	// and not yet published. Those must come out first.
	if b.r.over.Load() == 0 || b.deq != b.r.enq.Load() {
		return
	}
	b.mu.Lock()
	got := b.buf
	b.buf = b.spare[:0]
	b.r.over.Store(0)
	b.mu.Unlock()
	for _, e := range got {
		f(e)
	}
	b.spare = got[:0]
}

// drainFor moves the queued notices, in arrival order, into q, except
// that the notices request r matches, up to its count, go straight to r;
// once r has its count, it leaves the rest of the ring where it is, so
// that a stream of notices, each taken by the next activation of a
// request, does not pass through q. The caller has taken from q
// everything r matches there, so these are the oldest matching notices,
// and the order of the rest is unchanged (what stays in the inbox is
// newer than all of q). Only the window's owner calls it.
func (b *inbox) drainFor(q *match.Queue, r *Request) {
	if !b.pending() {
		return
	}
	b.takeUntil(func(e noticeEntry) bool {
		if r.matched < r.count && (r.src == AnySource || r.src == e.src) && (r.tag == AnyTag || r.tag == e.tag) {
			r.matched++
			r.st = Status{Source: int(e.src), Tag: int(e.tag)}
			return r.matched == r.count
		}
		q.Push(e.src, e.tag)
		return false
	})
}
