package engine

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// netPollEndpoint is an endpoint that says its arrivals come through the
// network poller.
type netPollEndpoint struct{ transport.Endpoint }

func (e netPollEndpoint) Host() transport.Host {
	h := e.Endpoint.Host()
	h.NetPoll = true
	return h
}

// TestWaitSpinsUnlessNetPoll checks the waiting policy over a transport
// that is not a Poller: a waiter re-checks its condition a few times,
// yielding between checks, before it sleeps; over a NetPoll transport it
// sleeps after its first check (yields would delay the network poller
// that delivers what it waits for). Either way the wake-up ends the wait.
func TestWaitSpinsUnlessNetPoll(t *testing.T) {
	for _, netPoll := range []bool{false, true} {
		eps, err := local.New(1)
		if err != nil {
			t.Fatal(err)
		}
		ep := eps[0]
		if netPoll {
			ep = netPollEndpoint{ep}
		}
		c := New(ep, nil, nil)
		var checks atomic.Int32
		var done atomic.Bool
		waited := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			waited <- c.wait(ctx, func() bool {
				checks.Add(1)
				return done.Load()
			})
		}()
		// Let the waiter reach its sleep: it registers as a sleeper.
		for c.sleepers.Load() == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		before := checks.Load()
		done.Store(true)
		c.wake()
		if err := <-waited; err != nil {
			t.Fatalf("NetPoll=%v: wait: %v", netPoll, err)
		}
		// Checks before the sleep: the spins, then the sleeper's own
		// check before it blocks (which may not have happened yet when
		// the waiter has registered).
		if netPoll && before > 1 {
			t.Errorf("NetPoll: %d checks before sleeping, want at most 1", before)
		}
		if !netPoll && before < spinRounds {
			t.Errorf("%d checks before sleeping, want at least %d", before, spinRounds)
		}
		_ = c.Close()
	}
}

// scriptedPoller is an endpoint that is a transport.Poller whose Poll
// reports an arrival on the calls listed in arrivals (counted from 1) and
// whose Yield counts the yields and the condition checks before the first.
type scriptedPoller struct {
	transport.Endpoint
	checks     *atomic.Int32
	polls      int
	arrivals   map[int]bool
	always     bool // every Poll finds something
	yields     int
	firstYield int32 // checks before the first yield, -1 before it
}

func (p *scriptedPoller) Poll() bool {
	p.polls++
	return p.always || p.arrivals[p.polls]
}

func (p *scriptedPoller) PollNotices(transport.NoticeTaker) bool { return p.Poll() }

func (p *scriptedPoller) Yield() {
	if p.yields == 0 {
		p.firstYield = p.checks.Load()
	}
	p.yields++
}

func (p *scriptedPoller) Park() {}

// TestPollWaitPolicy checks the polling part of a wait on a Poller: with
// a core per rank the waiter polls pollSpins rounds and then spins for
// Comm.spin before it yields; when ranks outnumber the cores it yields
// after pollSpinsShared rounds, so as not to keep the rank it waits for
// off the processor; and an arrival found just as the spins end does not
// cut the busy spin short (the clock starts at the first idle round).
func TestPollWaitPolicy(t *testing.T) {
	newComm := func(t *testing.T, spins int, spin time.Duration, arrivals map[int]bool) (*Comm, *scriptedPoller, *atomic.Int32) {
		eps, err := local.New(1)
		if err != nil {
			t.Fatal(err)
		}
		var checks atomic.Int32
		p := &scriptedPoller{Endpoint: eps[0], checks: &checks, arrivals: arrivals, firstYield: -1}
		c := New(eps[0], nil, nil)
		t.Cleanup(func() { _ = c.Close() })
		c.pollSpins, c.spin = spins, spin
		return c, p, &checks
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	t.Run("shared cores", func(t *testing.T) {
		c, p, checks := newComm(t, pollSpinsShared, 0, nil)
		ok := c.pollWait(ctx, p, false, func() bool { return checks.Add(1) > 20 })
		if !ok {
			t.Fatal("pollWait gave up before its condition held")
		}
		if p.firstYield < 0 || p.firstYield > pollSpinsShared+1 {
			t.Errorf("first yield after %d checks, want at most %d", p.firstYield, pollSpinsShared+1)
		}
	})
	t.Run("a core per rank", func(t *testing.T) {
		c, p, checks := newComm(t, pollSpins, time.Hour, nil)
		ok := c.pollWait(ctx, p, false, func() bool { return checks.Add(1) > 5*pollSpins })
		if !ok {
			t.Fatal("pollWait gave up before its condition held")
		}
		if p.yields != 0 {
			t.Errorf("%d yields (the first after %d checks) within the busy spin", p.yields, p.firstYield)
		}
	})
	t.Run("arrival as the spins end", func(t *testing.T) {
		// Poll finds something on the round the spins end: the clock
		// must still start at the first idle round, not at zero.
		c, p, checks := newComm(t, pollSpins, time.Hour, map[int]bool{pollSpins + 1: true})
		ok := c.pollWait(ctx, p, false, func() bool { return checks.Add(1) > 4*pollSpins })
		if !ok {
			t.Fatal("pollWait gave up within its busy spin")
		}
	})
	t.Run("arrivals that do not end it", func(t *testing.T) {
		// Every Poll finds something, none of it what the waiter waits
		// for: it must still give up after pollYield (and then sleep),
		// not spin on for as long as the arrivals last.
		c, p, _ := newComm(t, pollSpinsShared, 0, nil)
		p.always = true
		gave := make(chan bool, 1)
		go func() { gave <- c.pollWait(ctx, p, false, func() bool { return false }) }()
		select {
		case ok := <-gave:
			if ok {
				t.Fatal("pollWait reported a condition that never held")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("pollWait did not give up within 10 s while arrivals kept coming")
		}
	})
	t.Run("gives up after the yields", func(t *testing.T) {
		c, p, _ := newComm(t, pollSpinsShared, 0, nil)
		start := time.Now()
		if c.pollWait(ctx, p, false, func() bool { return false }) {
			t.Fatal("pollWait reported a condition that never held")
		}
		if d := time.Since(start); d < pollYield {
			t.Errorf("gave up after %v, before pollYield (%v)", d, pollYield)
		}
		if p.yields == 0 {
			t.Error("no yield before giving up")
		}
	})
}

// TestSharesCores: whether a waiter may poll busily is judged from the
// ranks of its own host (a multi-host job's size says nothing of its
// cores), against the host's cores, or against the runtime's processors
// when the ranks are goroutines of one process.
func TestSharesCores(t *testing.T) {
	cpus := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		name string
		host transport.Host
		size int
		want bool
	}{
		{"unknown host, small job", transport.Host{}, 1, false},
		{"unknown host, job larger than the cores", transport.Host{}, cpus + 1, true},
		{"one rank per host of a large job", transport.Host{Ranks: 1}, 1000, false},
		{"host full of processes", transport.Host{Ranks: cpus}, 1000, false},
		{"host over-full", transport.Host{Ranks: cpus + 1}, cpus + 1, true},
		{"two goroutine ranks on one processor", transport.Host{Ranks: 2, OneProcess: true}, 2, true},
		{"one goroutine rank", transport.Host{Ranks: 1, OneProcess: true}, 1, false},
	} {
		if got := sharesCores(c.host, c.size); got != c.want {
			t.Errorf("%s: sharesCores(%+v, %d) = %v, want %v (%d CPUs, GOMAXPROCS 1)", c.name, c.host, c.size, got, c.want, cpus)
		}
	}
}

// TestSpinForPolicy: a waiter on a transport that is not a Poller checks
// its condition spinRounds times and then, while the ranks of the host
// each have a processor (Comm.spin set), on until Comm.spin has passed,
// rather than sleep where a large transfer is about to complete; when
// ranks share processors it gives up after spinRounds checks.
func TestSpinForPolicy(t *testing.T) {
	newComm := func(t *testing.T, spin time.Duration) *Comm {
		eps, err := local.New(1)
		if err != nil {
			t.Fatal(err)
		}
		c := New(eps[0], nil, nil)
		t.Cleanup(func() { _ = c.Close() })
		c.spinRounds, c.spin = spinRounds, spin
		return c
	}
	t.Run("shared processors", func(t *testing.T) {
		c := newComm(t, 0)
		checks := 0
		if c.spinFor(func() bool { checks++; return false }) {
			t.Fatal("spinFor reported a condition that never held")
		}
		if checks != spinRounds+1 {
			t.Errorf("%d checks, want %d", checks, spinRounds+1)
		}
	})
	t.Run("a processor per rank", func(t *testing.T) {
		c := newComm(t, time.Hour)
		checks := 0
		if !c.spinFor(func() bool { checks++; return checks > 100*spinRounds }) {
			t.Fatal("spinFor gave up before its condition held")
		}
	})
	t.Run("gives up after spin", func(t *testing.T) {
		c := newComm(t, time.Millisecond)
		start := time.Now()
		if c.spinFor(func() bool { return false }) {
			t.Fatal("spinFor reported a condition that never held")
		}
		if d := time.Since(start); d < time.Millisecond {
			t.Errorf("gave up after %v, want at least the spin of 1ms", d)
		}
	})
}

// wakingSleeper is a scriptedPoller that is a transport.Sleeper whose
// every Sleep ends at once, as if an arrival rang the doorbell.
type wakingSleeper struct {
	scriptedPoller
	sleeps int
}

func (s *wakingSleeper) Prepare() uint32             { return 0 }
func (s *wakingSleeper) Sleep(uint32, time.Duration) { s.sleeps++ }
func (s *wakingSleeper) Cancel()                     {}
func (s *wakingSleeper) Wake()                       {}

// TestWaitPollsAfterEarlyWake: a waiter whose sleep on the doorbell ends
// early (an arrival that did not satisfy it: one notice of a stream it
// counts) polls again, as at the start of its wait, rather than sleep at
// once again: a sleeper costs each later arrival a wake-up, two system
// calls, where a poller costs it a load.
func TestWaitPollsAfterEarlyWake(t *testing.T) {
	eps, err := local.New(1)
	if err != nil {
		t.Fatal(err)
	}
	var checks atomic.Int32
	s := &wakingSleeper{scriptedPoller: scriptedPoller{Endpoint: eps[0], checks: &checks, firstYield: -1}}
	c := New(s, nil, nil)
	t.Cleanup(func() { _ = c.Close() })
	if c.sleeper == nil || c.poller == nil {
		t.Fatal("the scripted endpoint is not taken for a Sleeper")
	}
	// The scripted sleep returns at once; with an hour's sleepMax no
	// scheduling delay can make it look like a sleep that ran its time.
	defer func(d time.Duration) { sleepMax = d }(sleepMax)
	sleepMax = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	pollsAtSleep := -1
	err = c.waitPolling(ctx, false, func() bool {
		if s.sleeps > 0 && pollsAtSleep < 0 {
			pollsAtSleep = s.polls
		}
		// Satisfied after 50 polls since the first sleep.
		return pollsAtSleep >= 0 && s.polls-pollsAtSleep >= 50
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.sleeps != 1 {
		t.Errorf("%d sleeps, want 1: after a sleep that ended early the waiter slept again instead of polling", s.sleeps)
	}
}
