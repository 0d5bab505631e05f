package engine

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// This file is the engine's waiting policy: how a call that waits for a
// condition spins, polls the transport, yields and sleeps (wait,
// waitPolling, pollWait, sleepWait), and how state changes wake it (wake,
// and the broadcast signal below).

// signal is a broadcast wake-up: a waiter takes a channel (channel),
// checks its condition, sleeps on the channel, and gives it back
// (release); broadcast signals every channel taken since the last
// broadcast. Channels are reused, so a waiter that sleeps allocates
// nothing in the steady state; state changes nobody waits for cost a
// mutex and nothing else.
type signal struct {
	mu      sync.Mutex
	waiting []chan struct{} // taken and not yet signalled
	spare   []chan struct{} // given back, empty
}

func (s *signal) channel() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ch chan struct{}
	if n := len(s.spare); n > 0 {
		ch, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		ch = make(chan struct{}, 1)
	}
	s.waiting = append(s.waiting, ch)
	return ch
}

// release gives back a channel from channel, signalled or not.
func (s *signal) release(ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.waiting {
		if w == ch {
			last := len(s.waiting) - 1
			s.waiting[i] = s.waiting[last]
			s.waiting[last] = nil
			s.waiting = s.waiting[:last]
			break
		}
	}
	select {
	case <-ch:
	default:
	}
	s.spare = append(s.spare, ch)
}

func (s *signal) broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, ch := range s.waiting {
		select {
		case ch <- struct{}{}:
		default:
		}
		s.waiting[i] = nil
	}
	s.waiting = s.waiting[:0]
}

// spinRounds is how many times a waiter re-checks its condition, yielding
// the processor between checks, before it sleeps on a channel. A handful of
// yields covers the common case of a peer goroutine that is about to
// deliver, at the cost of a few hundred nanoseconds when it is not. Over a
// transport whose arrivals come through the network poller (Host.NetPoll)
// the waiter sleeps at once: its yields would keep the runtime from
// polling the network, and the delivering goroutine from running, until
// they end.
const spinRounds = 8

// spinFor re-checks cond, yielding to other goroutines between checks,
// spinRounds times, and then gives up; unless the ranks of the host each
// have a processor (Comm.spin is set): then it re-checks busily for up to
// Comm.spin, yielding only every spinYieldEvery checks. The delivery of a
// large transfer (a 1 MiB copy takes tens of microseconds) would
// otherwise find the waiter parked, and waking it costs as much again;
// and a yield costs the scheduler's global lock, which the peer's yields
// contend for, more than a check. It reports whether cond became true.
func (c *Comm) spinFor(cond func() bool) bool {
	if c.spinRounds == 0 {
		return false // NetPoll: sleep at once
	}
	var start, yielded time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if c.spin == 0 {
			if i >= c.spinRounds {
				return false
			}
			runtime.Gosched()
			continue
		}
		if i%spinClockEvery != spinClockEvery-1 {
			continue
		}
		now := time.Now()
		if start.IsZero() {
			start, yielded = now, now
		} else if now.Sub(start) > c.spin {
			return false
		}
		if now.Sub(yielded) >= spinYieldAfter {
			runtime.Gosched() // other goroutines of this processor
			yielded = now
		}
	}
}

// A waiter with a processor of its own looks at the clock every
// spinClockEvery checks, and yields to the other goroutines of its
// processor once per spinYieldAfter: by time, not by checks, because a
// check may cost one load (a counter) or a poll of the transport, and a
// yield takes the scheduler's lock, for which the peer rank's yields
// contend (a counter's ping-pong between goroutine ranks took 590 ns
// with a yield every 64 checks, 350 as a request's).
const (
	spinClockEvery = 64
	spinYieldAfter = 10 * time.Microsecond
)

// wait blocks until cond returns true, ctx is done or the job is aborted.
// cond is called without locks held by wait; it must be cheap.
//
// It spins first (yielding between checks), then registers as a sleeper
// and sleeps on the Comm's signal. Wakers (wake) broadcast only when a
// sleeper is registered, so the common handoff to a spinning waiter costs
// the waker one atomic load. No wake-up is lost: a sleeper registers
// before its last check of cond, and a waker changes the state before it
// looks for sleepers.
func (c *Comm) wait(ctx context.Context, cond func() bool) error {
	return c.waitPolling(ctx, false, cond)
}

// waitPolling is wait for a cond that polls the transport itself (self):
// the wait then leaves polling to it.
func (c *Comm) waitPolling(ctx context.Context, self bool, cond func() bool) error {
	if p := c.poller; p != nil {
		for c.sleeper != nil {
			if c.pollWait(ctx, p, self, cond) {
				return nil
			}
			if done, err := c.sleepWait(ctx, self, cond); done || err != nil {
				return err
			}
			// Woken early by an arrival that did not end the wait: more
			// may follow at once (a stream of notices counted towards
			// a threshold), and a sleeper pays a wake-up, two system
			// calls, for each. Poll again before sleeping again.
		}
		if c.pollWait(ctx, p, self, cond) {
			return nil
		}
		p.Park()
	} else if c.spinFor(cond) {
		return nil
	}
	c.sleepers.Add(1)
	defer c.sleepers.Add(-1)
	for {
		ch := c.sig.channel()
		if cond() {
			c.sig.release(ch)
			return nil
		}
		select {
		case <-ch:
			c.sig.release(ch)
		case <-ctx.Done():
			c.sig.release(ch)
			return c.stopErr(ctx)
		case <-c.abort:
			c.sig.release(ch)
			return c.abortError()
		}
	}
}

// Waiting on a transport.Poller: the waiter drains the transport's queues
// itself. It polls busily, for pollSpins rounds and then for as long as
// Comm.spin (pollSpin when there are no more ranks than cores: a peer on
// another core answers within a microsecond or so, and a waiter that
// stops polling pays a system call's latency on top), then yields the
// processor between polls, to other processes too, for up to pollYield
// (ranks that share a core run in turn instead of waiting for the
// scheduler's tick), and then sleeps: on the transport's doorbell if it
// is a transport.Sleeper (sleepWait), else like any waiter, the
// transport's background progress waking it. This is MPI libraries'
// policy of busy polling, with their "yield when idle" when
// oversubscribed.
//
// When ranks outnumber the cores the waiter yields after pollSpinsShared
// rounds already: a round costs a drain of the transport's queues (100 ns
// or more), so pollSpins of them would keep the rank it waits for, which
// may be queued behind it on its core, off the processor for several
// microseconds of every exchange.
const (
	pollSpins       = 64
	pollSpinsShared = 2
	pollSpin        = 50 * time.Microsecond
	pollYield       = time.Millisecond
)

// pollWait is the polling part of wait: it reports whether cond became
// true (cond polls p itself if self); false means the caller should sleep
// (or ctx ended, or the job was aborted: the sleep loop reports those).
func (c *Comm) pollWait(ctx context.Context, p transport.Poller, self bool, cond func() bool) bool {
	var start time.Time
	busy := true
	for i, n := 0, 0; ; i++ {
		if cond() {
			return true
		}
		got := !self && p.Poll()
		if i < c.pollSpins {
			continue
		}
		// Past the spins: look at the clock, the context and the job
		// every 16 rounds while spinning busily, every round once
		// yielding (next to a yield, which may give a whole time slice
		// away, a look costs nothing). Rounds that found something count
		// too, so that a stream of arrivals that do not end the wait
		// does not keep it from yielding or from giving up.
		if !busy || n&15 == 0 {
			now := time.Now()
			if n == 0 {
				start = now
			}
			since := now.Sub(start)
			busy = since < c.spin
			if since > c.spin+pollYield {
				return false
			}
			if ctx.Err() != nil {
				return false
			}
			select {
			case <-c.abort:
				return false
			default:
			}
		}
		n++
		if !busy && !got {
			p.Yield()
		}
	}
}

// sleepMax bounds one sleep on a transport's doorbell, a safety net:
// arrivals, wakes, the end of ctx and the abort of the job ring it. A
// variable for tests.
var sleepMax = 2 * time.Millisecond

// sleepWait is the sleeping part of a wait on a transport.Sleeper: the
// waiter sleeps on the transport's doorbell, which producers ring, and
// polls when woken, so that an arrival wakes this thread directly. Wakers
// of the engine (wake) ring it too, and so does the end of ctx.
//
// It reports done when cond became true (or with the error that ended
// the wait), and not done when a sleep ended well before its time: the
// doorbell rang for something that did not satisfy cond, and the caller
// polls again.
func (c *Comm) sleepWait(ctx context.Context, self bool, cond func() bool) (done bool, err error) {
	s := c.sleeper
	c.sleepers.Add(1)
	defer c.sleepers.Add(-1)
	stop := context.AfterFunc(ctx, s.Wake)
	defer stop()
	// prepared: registered and not yet asleep; every way out (a
	// handler's panic in Poll too) ends the registration.
	prepared := false
	defer func() {
		if prepared {
			s.Cancel()
		}
	}()
	for {
		// Registered before the last looks: an arrival or a wake after
		// them ends the sleep.
		t := s.Prepare()
		prepared = true
		if !self {
			s.Poll()
		}
		if cond() {
			return true, nil
		}
		if ctx.Err() != nil {
			return true, c.stopErr(ctx)
		}
		select {
		case <-c.abort:
			return true, c.abortError()
		default:
		}
		prepared = false
		start := time.Now()
		s.Sleep(t, sleepMax)
		if time.Since(start) < sleepMax/2 {
			return false, nil
		}
	}
}

// progress runs the handlers of whatever the transport has queued for
// this rank, if it is a transport.Poller: the non-blocking tests call it
// so that a test loop sees arrivals at once.
func (c *Comm) progress() {
	if c.poller == nil {
		return
	}
	// A Poll may run only a first part of what arrived: poll until it
	// reports nothing, or for a bounded number of rounds under an
	// endless stream.
	for i := 0; i < progressPolls && c.poller.Poll(); i++ {
	}
}

// progressPolls bounds the Polls of one progress call.
const progressPolls = 1 << 10

// wake tells waiters that state they may be waiting for has changed.
func (c *Comm) wake() {
	if c.sleepers.Load() > 0 {
		c.sig.broadcast()
		if c.sleeper != nil {
			c.sleeper.Wake()
		}
	}
}

// stopErr is the error of a wait that ctx ended. When ctx is the job's own
// context (Comm.Context), its end and the abort are the same event, and the
// abort is what the caller must see.
func (c *Comm) stopErr(ctx context.Context) error {
	select {
	case <-c.abort:
		return c.abortError()
	default:
		return ctx.Err()
	}
}
