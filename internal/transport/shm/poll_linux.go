package shm

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/sys"
	"github.com/narma-rma/narma/internal/transport"
)

// Polling and sleeping: draining the rings, on the caller's goroutine or
// the background one, and the doorbell that sleepers wait on.

// drainLock is the endpoint's right to drain its rings: taken with a
// compare-and-swap, given back with a release store (a drain that ends
// need not wait for its store to reach the other goroutines).
type drainLock struct{ v uint32 }

func (l *drainLock) tryLock() bool { return atomic.CompareAndSwapUint32(&l.v, 0, 1) }

func (l *drainLock) unlock() { mem.StoreRelease32(&l.v, 0) }

func (l *drainLock) held() bool { return atomic.LoadUint32(&l.v) != 0 }

// Poll runs the handlers of the notices and active messages that have
// arrived (at most pollNotices notices, and of a ring of active messages,
// those up to one that starts a cache line after one it ran: drainRing),
// on the calling goroutine
// (after waiting for another goroutine that is draining, if any); it
// reports whether it ran any (transport.Poller).
func (e *Endpoint) Poll() bool { return e.poll(nil) }

// PollNotices is Poll with t in place of the notice handler, stopping
// after a notice for which t reports done (transport.Poller).
func (e *Endpoint) PollNotices(t transport.NoticeTaker) bool { return e.poll(t) }

// pollNotices bounds the notices one Poll takes: a stream whose producer
// publishes as fast as the poller takes would otherwise keep it draining,
// the notice its caller waits for long handled, until the stream paused
// (in the pipelined stencil the consumer saw a row only once its
// producer had sent all of them). The caller looks at its condition and
// polls again. A few rather than one: a poll looks at every ring.
//
// takeNotices is PollNotices' bound, larger: its taker says when the
// caller has what it waits for, and the bound only limits a stream of
// notices for others. A waiter that polls in its condition yields the
// processor between polls when ranks outnumber cores, so a request that
// counts many notices must not need a poll for every few of them.
const (
	pollNotices = 4
	takeNotices = 64
)

// poll is Poll with notices given to t, or to the installed handler if t
// is nil.
func (e *Endpoint) poll(t transport.NoticeTaker) bool {
	if !e.polled.Load() {
		e.polled.Store(true)
	}
	if a := e.asleep.Load(); a != 0 && e.asleep.CompareAndSwap(a, 0) {
		e.takeOver()
	}
	// Nothing pending, and nobody draining what was: done, with loads
	// only (the common case of a waiter's spin). The order matters: a
	// handler still running for an arrival that pending no longer shows
	// holds draining until it returns.
	if !e.pending() && !e.draining.held() {
		return false
	}
	for !e.draining.tryLock() {
		// Another goroutine (the background progress, say) is draining:
		// wait for it, so that what arrived before Poll was called has
		// been delivered when Poll returns. Handlers never block.
		if e.closed.Load() {
			return false
		}
		runtime.Gosched()
	}
	max := pollNotices
	if t != nil {
		max = takeNotices
	}
	n := e.drain(t, max)
	e.draining.unlock()
	return n
}

// takeOver ends the progress goroutine's registration as a sleeper on the
// doorbell, on its behalf, for a caller of Poll that found it registered,
// and wakes it. While it is registered every producer rings, a system
// call per notice; and a goroutine woken from its sleep leaves the
// sleepers only once it runs again, which may take milliseconds when the
// process's one processor (GOMAXPROCS=1, as under narmarun) belongs to a
// waiter that polls and every core to a spinning rank. The caller polls,
// so arrivals need no ring for now; the progress goroutine, woken (its
// ticket no longer matches the doorbell), finds the endpoint polled and
// naps on its timer, and registers again when nobody has polled for a
// nap (model/ring.pml checks that no wake-up is lost).
func (e *Endpoint) takeOver() {
	e.own.hdr.sleepers.Add(^uint32(0))
	e.Wake()
}

// Yield gives the processor to another thread of any process, and first,
// if ranks of the job are goroutines of this process (a group of
// goroutine ranks), to the other goroutines (transport.Poller):
// sched_yield alone would leave them queued behind the caller until the
// runtime preempts it (10 ms). A rank alone in its process does not call
// Gosched, which wakes an idle thread of the runtime each time.
func (e *Endpoint) Yield() {
	if e.shared {
		runtime.Gosched()
	}
	sys.Yield()
}

// Park tells the endpoint that its caller stops polling (and sleeps until
// a handler wakes it): the progress goroutine then sleeps on the doorbell
// and every arrival wakes it (transport.Poller).
func (e *Endpoint) Park() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Prepare registers the caller as a sleeper on the endpoint's doorbell
// and returns the doorbell's count as its ticket (transport.Sleeper):
// from now on every producer rings, and every ring changes the count. It
// runs the sleepers' global barrier (lastLook) after the registration and
// the ticket, so that the caller's next look sees every notice published
// before (whether or not its producer saw the registration and rang).
func (e *Endpoint) Prepare() uint32 {
	hdr := e.own.hdr
	hdr.sleepers.Add(1)
	hdr.waiters.Add(1)
	t := hdr.bell.Load()
	// The barrier comes after the ticket: a producer that rang before
	// the ticket was taken may still hold its notice in its store
	// buffer, and the caller's next look must see it.
	if !e.lastLook() {
		// Producers may not see the registration: a ticket that is not
		// the doorbell's count makes the Sleep return at once.
		t++
	}
	return t
}

// Sleep sleeps on the endpoint's doorbell for at most d, unless it rang
// since the Prepare that gave ticket (the futex compares the count with
// the ticket), and ends that registration (transport.Sleeper).
func (e *Endpoint) Sleep(ticket uint32, d time.Duration) {
	hdr := e.own.hdr
	if !e.pendingRacy() && !e.closed.Load() {
		sys.FutexWait(&hdr.bell, ticket, d)
	}
	e.Cancel()
}

// Cancel ends the registration of Prepare (transport.Sleeper).
func (e *Endpoint) Cancel() {
	hdr := e.own.hdr
	hdr.waiters.Add(^uint32(0))
	hdr.sleepers.Add(^uint32(0))
}

// Wake rings the endpoint's own doorbell (transport.Sleeper): every
// goroutine that registered before it, asleep or about to sleep, looks
// again.
func (e *Endpoint) Wake() {
	hdr := e.own.hdr
	hdr.bell.Add(1)
	sys.FutexWake(&hdr.bell)
}

// pending reports whether anything waits to be drained: exactly if the
// caller holds draining, else as a hint (poll's fast path, progress),
// which a drain under the lock settles.
func (e *Endpoint) pending() bool {
	if e.own.noticePending(e.own.hdr.loadDeq()) {
		return true
	}
	for src, rh := range e.own.ringHeads {
		if _, ok := recAt(e.own.ringData[src], rh.loadHead()); ok && !e.ringStalled[src].Load() {
			return true
		}
	}
	return false
}

// drain runs the handlers for what has arrived, at most max notices,
// which go to t, up to one for which it reports done, or to the installed
// handler if t is nil; draining is held. It reports whether there was
// anything.
func (e *Endpoint) drain(t transport.NoticeTaker, max int) bool {
	did := false
	h := e.Notice()
	// Arrivals wait for their handler: a peer may send as soon as the
	// start-up barrier is passed, before this rank installed its handlers.
	for taken := 0; (h != nil || t != nil) && taken < max; taken++ {
		deq := e.own.hdr.loadDeq()
		src, key, n, ok := e.own.pop(deq)
		if !ok {
			break
		}
		raceAcquire()
		e.own.hdr.storeDeq(deq + 1)
		did = true
		if src >= e.size {
			continue // not from a rank of this job: drop
		}
		if t == nil {
			h(src, *e.keyOf(key), n)
		} else if t(src, *e.keyOf(key), n) {
			// The caller has what it waits for: the rest can wait
			// for its next poll.
			return true
		}
	}
	for src := range e.own.ringHeads {
		if e.drainRing(src) {
			did = true
		}
	}
	return did
}

// keyOf returns the Key of word w, from the last notice's if it is the
// same (a stream of notices to one window, the common case); draining is
// held. A Key made afresh in a temporary and copied into the handler's
// arguments would be read back 16 bytes at a time from the 8 bytes just
// stored, which the processor cannot forward: a stall of tens of cycles.
func (e *Endpoint) keyOf(w uint64) *transport.Key {
	if w != e.lastWord {
		e.lastKey, e.lastWord = transport.WordKey(w), w
	}
	return &e.lastKey
}

// pendingRacy is pending for a goroutine that does not hold draining: a
// hint only.
func (e *Endpoint) pendingRacy() bool {
	if e.draining.held() {
		return false
	}
	return e.pending()
}
