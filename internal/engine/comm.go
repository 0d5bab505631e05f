package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Active-message handler ids used by the engine.
const (
	amMsg transport.AMID = 1 // two-sided message: hdr = msgHeader
)

// Comm is one rank's communicator: some or all of the job's ranks, and a
// message context, on the engine state of a rank (its core). Dup, Split
// and Create make more communicators over the same core, each with its
// own contexts, as MPI_Comm_dup, MPI_Comm_split and MPI_Comm_create do,
// so that a library's messages never match the application's.
//
// Every rank a Comm's methods take or return is a rank of the
// communicator; the transport's ranks are the job's, and jobRank and
// commRank translate at the transport's calls and handlers.
type Comm struct {
	*core
	rank int    // this rank's number in the communicator
	size int    // the communicator's number of ranks
	grp  *group // its ranks among the job's; nil for the job's own
	user ctxID  // context of this communicator's two-sided messages
	coll ctxID  // context of its collectives

	winMu   sync.Mutex
	nextWin uint32 // windows created on this communicator
}

// core is the engine state of one rank over one transport endpoint,
// shared by every communicator of the rank.
type core struct {
	ep   transport.Endpoint
	rank int
	size int

	abort    <-chan struct{}
	abortErr func() error
	// closing ends the goroutine that rings the transport's doorbell
	// when the job is aborted (wakeOnAbort), if there is one.
	closing   chan struct{}
	closeOnce sync.Once

	sig signal // broadcast on every state change that a waiter may need

	mu         sync.Mutex                // guards the two-sided queues and nextCtx
	posted     fifo[*recvReq]            // receives posted, in posting order
	unexpected fifo[*message]            // messages not yet matched, in arrival order
	spareData  [][]byte                  // buffers of matched unexpected messages, to reuse (c.mu)
	spareMsgs  []*message                // matched unexpected messages, with their small buffers, to reuse (c.mu)
	nextCtx    int                       // next free message context (newContexts)
	usedCtx    [(maxCtx + 1) / 64]uint64 // contexts of this rank's communicators (newContexts)

	winsMu sync.Mutex
	wins   map[uint64]*Win          // by id: the creating communicator's context, and its count of windows
	byKey  atomic.Pointer[keyTable] // windows by key, for notices; copy-on-write under winsMu

	sleepers atomic.Int32 // goroutines asleep in wait, to be woken by wake

	// poller is the endpoint as a transport.Poller, if it is one: its
	// notices and active messages are drained by the waiting rank.
	poller transport.Poller
	// waker is the endpoint as a transport.Waker, if it is one: an origin
	// that sets a signal word itself, through the mapping of the target's
	// window or counters, wakes the target's waiters with it (splitDirect).
	waker transport.Waker
	// sleeper is the poller as a transport.Sleeper, if it is one: its
	// waiters sleep on the transport's doorbell.
	sleeper transport.Sleeper
	// spin is how long a waiter polls busily before it starts yielding:
	// long when every rank can have a core, nothing when ranks outnumber
	// the cores (a busy waiter would then keep the rank it waits for off
	// the processor).
	spin time.Duration
	// pollSpins is how many rounds a waiter polls before it looks at
	// the clock: pollSpins, or pollSpinsShared when ranks outnumber the
	// cores.
	pollSpins int
	// spinRounds is how often a waiter on a transport that is not a
	// Poller yields before it sleeps: spinRounds, or 0 over a NetPoll
	// transport.
	spinRounds int

	failed  []atomic.Bool // peers the transport reported failed
	nfailed atomic.Int32
	// acked are the failed peers acknowledged by AckFailures (nacked of
	// them): wildcard waits no longer give up for them.
	ackMu  sync.Mutex
	acked  []bool
	nacked atomic.Int32
}

// New builds the engine for one rank over ep. abort is closed when the job
// is aborted; abortErr then says why. Both may be nil.
func New(ep transport.Endpoint, abort <-chan struct{}, abortErr func() error) *Comm {
	k := &core{
		ep:       ep,
		rank:     ep.Rank(),
		size:     ep.Size(),
		abort:    abort,
		abortErr: abortErr,
		wins:     make(map[uint64]*Win),
		failed:   make([]atomic.Bool, ep.Size()),
		nextCtx:  2,
	}
	k.poller, _ = ep.(transport.Poller)
	k.sleeper, _ = ep.(transport.Sleeper)
	k.waker, _ = ep.(transport.Waker)
	host := ep.Host()
	k.pollSpins = pollSpinsShared
	if !sharesCores(host, k.size) {
		k.spin = pollSpin
		k.pollSpins = pollSpins
	}
	if !host.NetPoll {
		k.spinRounds = spinRounds
	}
	if abort != nil && k.sleeper != nil {
		k.closing = make(chan struct{})
		go k.wakeOnAbort()
	}
	c := &Comm{core: k, rank: k.rank, size: k.size, user: 0, coll: 1}
	k.useCtx(0, true)
	k.useCtx(1, true)
	ep.SetAMHandler(amMsg, c.handleMsg)
	if p, ok := ep.(transport.Placer); ok {
		p.SetAMPlacer(amMsg, (*msgPlacer)(c))
	}
	ep.SetFailureHandler(c.handleFailure)
	ep.SetNoticeHandler(c.handleNotice)
	return c
}

// Dup returns a new communicator with the same ranks and its own message
// contexts, collectively: every rank of c calls it. Closing a duplicate
// does nothing; the rank's endpoint lives as long as the original.
func (c *Comm) Dup(ctx context.Context) (*Comm, error) {
	id, _, err := c.newContexts(ctx, "Dup", nil)
	if err != nil {
		return nil, err
	}
	return &Comm{core: c.core, rank: c.rank, size: c.size, grp: c.grp, user: id, coll: id + 1}, nil
}

// Rank returns the calling rank, in [0, Size).
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.size }

// Caps returns the transport's capabilities (for tools and benchmarks).
func (c *Comm) Caps() transport.Caps { return c.ep.Caps() }

// Close releases the rank's endpoint; on a communicator made from
// another it does nothing.
func (c *Comm) Close() error {
	if c.user != 0 {
		return nil
	}
	if c.closing != nil {
		c.closeOnce.Do(func() { close(c.closing) })
	}
	return c.ep.Close()
}

// sharesCores is host.SharesCores(size) (a function for tests).
func sharesCores(host transport.Host, size int) bool { return host.SharesCores(size) }

// wakeOnAbort rings the transport's doorbell when the job is aborted, so
// that waiters asleep on it (sleepWait) see the abort at once, not at the
// end of their sleep: nothing else rings for it.
func (k *core) wakeOnAbort() {
	select {
	case <-k.abort:
		k.sleeper.Wake()
	case <-k.closing:
	}
}

func (c *Comm) abortError() error {
	if c.abortErr != nil {
		if err := c.abortErr(); err != nil {
			return err
		}
	}
	return ErrAborted
}

func (c *Comm) handleFailure(peer int, err error) {
	if peer >= 0 && peer < len(c.failed) && !c.failed[peer].Swap(true) {
		c.nfailed.Add(1)
	}
	c.sig.broadcast()
	if c.sleeper != nil {
		c.sleeper.Wake()
	}
}

// peerFailed reports whether the transport declared rank r failed.
func (c *Comm) peerFailed(r int) bool {
	return r >= 0 && r < c.size && c.failed[c.jobRank(r)].Load()
}

// anyFailed reports whether the transport declared any rank of c failed
// (of the job, for the job's own communicators).
func (c *Comm) anyFailed() bool {
	if c.nfailed.Load() == 0 {
		return false
	}
	if c.grp == nil {
		return true
	}
	for _, j := range c.grp.world {
		if c.failed[j].Load() {
			return true
		}
	}
	return false
}

// srcFailed reports whether a wait for something from src, a rank or
// AnySource, must give up: src failed, or, for AnySource, any peer did.
// A wildcard wait fails on any failure, as in MPI's fault-tolerance
// proposal (ULFM): the failed rank may be the one it waits for, and
// waiting on could hang for ever.
func (c *Comm) srcFailed(src int) bool {
	if src == AnySource {
		return c.newFailure()
	}
	return c.peerFailed(src)
}

// newFailure reports whether a peer failed that AckFailures has not
// acknowledged: the condition on which waits that any rank could end give
// up.
func (c *Comm) newFailure() bool { return c.nfailed.Load() > c.nacked.Load() }

// Failed returns the ranks of c the transport declared failed so far, in
// order, without acknowledging them (AckFailures does).
func (c *Comm) Failed() []int {
	var failed []int
	for r := range c.size {
		if c.peerFailed(r) {
			failed = append(failed, r)
		}
	}
	return failed
}

// AckFailures acknowledges the failures of peers known so far and returns
// the ranks of c that have failed, acknowledged before or now, in order. Waits
// that any rank could end (AnySource, counters, signals) give up when a
// peer fails; after AckFailures they wait for the living ranks again,
// until another peer fails (as MPI's fault-tolerance proposal, ULFM, has
// it with MPIX_Comm_failure_ack). It concerns every communicator of the
// rank's job.
func (c *Comm) AckFailures() []int {
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	if c.acked == nil {
		c.acked = make([]bool, len(c.failed))
	}
	n := int32(0)
	for j := range c.failed {
		if c.failed[j].Load() {
			c.acked[j] = true
		}
		if c.acked[j] {
			n++
		}
	}
	c.nacked.Store(n)
	var failed []int
	for r := range c.size {
		if c.acked[c.jobRank(r)] {
			failed = append(failed, r)
		}
	}
	return failed
}

// failedName names the failed rank that made a wait for src give up: src
// itself, or for AnySource the lowest failed rank not acknowledged.
func (c *Comm) failedName(src int) string {
	if src != AnySource {
		return fmt.Sprintf("rank %d", src)
	}
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	for j := range c.failed {
		if c.failed[j].Load() && (c.acked == nil || !c.acked[j]) {
			if r := c.commRank(j); r >= 0 {
				return fmt.Sprintf("rank %d", r)
			}
			return fmt.Sprintf("rank %d of the job", j)
		}
	}
	return "a rank"
}

func (c *Comm) checkRank(op string, r int) error {
	if r < 0 || r >= c.size {
		return opErr(op, c.rank, ErrRank, "rank %d not in [0,%d)", r, c.size)
	}
	return nil
}

// ctxErr wraps a context or abort error for op.
func (c *Comm) ctxErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Rank: c.rank, Err: err}
}

// bg is the context of calls that take none (request-based operations);
// they still end when the job is aborted.
var bg = context.Background()
