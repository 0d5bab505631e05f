package hybrid

import (
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Polling. The local endpoint is a Poller whose waiters drain its rings
// and a Sleeper whose doorbell producers ring; the remote endpoint runs
// its handlers on its own reader goroutines. Poll, PollNotices, Yield and
// Park are the local endpoint's; Sleep sleeps on its doorbell, and a
// remote delivery (notice, active message, failure) rings it as a Wake
// would when a waiter is registered (Prepare): that waiter's Sleep ends,
// or returns at once.

// Poll runs the handlers of what has arrived through the local endpoint
// (transport.Poller). Remote deliveries run on their own.
func (e *Endpoint) Poll() bool { return e.sleeper.Poll() }

// WakeRank wakes the waiters of rank, if it is a rank of this host and
// the local endpoint is a Waker (transport.Waker): only those ranks' memory
// is mapped here.
func (e *Endpoint) WakeRank(rank int) {
	if e.waker != nil && uint(rank) < uint(len(e.localOf)) && e.localOf[rank] >= 0 {
		e.waker.WakeRank(e.localOf[rank])
	}
}

// PollNotices is Poll with the local endpoint's notices given to t, with
// global sources and hybrid keys (transport.Poller). It allocates nothing
// unless several goroutines poll at once: waiters call it in their spin.
func (e *Endpoint) PollNotices(t transport.NoticeTaker) bool {
	if t == nil {
		return e.Poll()
	}
	x := e.pollX.Swap(nil)
	if x == nil {
		x = newPollXlate(e)
	}
	x.t = t
	did := e.sleeper.PollNotices(x.fn)
	x.t = nil
	e.pollX.Store(x)
	return did
}

// pollXlate is the taker PollNotices gives the local endpoint: fn
// translates a notice and passes it to t. The endpoint keeps one for
// reuse, so that fn is made once.
type pollXlate struct {
	e  *Endpoint
	t  transport.NoticeTaker
	fn transport.NoticeTaker
}

func newPollXlate(e *Endpoint) *pollXlate {
	x := &pollXlate{e: e}
	x.fn = func(src int, key transport.Key, n transport.Notice) bool {
		g, k, ok := x.e.fromLocal(src, key)
		return ok && x.t(g, k, n)
	}
	return x
}

// Yield gives the processor to other threads (transport.Poller).
func (e *Endpoint) Yield() { e.sleeper.Yield() }

// Park tells the local endpoint that its caller stops polling
// (transport.Poller).
func (e *Endpoint) Park() { e.sleeper.Park() }

// Prepare registers the caller as a sleeper (transport.Sleeper): from
// now on remote deliveries ring the local endpoint's doorbell, whose
// ticket it returns.
func (e *Endpoint) Prepare() uint32 {
	e.sleeping.Add(1)
	return e.sleeper.Prepare()
}

// Sleep sleeps on the local endpoint's doorbell for at most d, unless it
// rang since the Prepare that gave ticket: same-host arrivals, Wake and
// remote deliveries ring it (transport.Sleeper).
func (e *Endpoint) Sleep(ticket uint32, d time.Duration) {
	e.sleeper.Sleep(ticket, d)
	e.sleeping.Add(-1)
}

// Cancel ends the registration of Prepare (transport.Sleeper).
func (e *Endpoint) Cancel() {
	e.sleeper.Cancel()
	e.sleeping.Add(-1)
}

// Wake ends the Sleep of every sleeper (transport.Sleeper).
func (e *Endpoint) Wake() { e.sleeper.Wake() }

// delivered is called after each delivery that the local doorbell does
// not announce (remote notices and active messages, failures): it rings
// the doorbell if a goroutine is registered as a sleeper (Prepare). With
// nobody registered it costs one load: a waiter that registers later
// looks for what arrived after its Prepare.
func (e *Endpoint) delivered() {
	if e.sleeping.Load() != 0 {
		e.sleeper.Wake()
	}
}
