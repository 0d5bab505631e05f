package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/transport"
)

// Active-message handler ids used by the engine.
const (
	amMsg transport.AMID = 1 // two-sided message: hdr = msgHeader
	amWin transport.AMID = 2 // window control: hdr = winHeader
)

// Comm is one rank's communicator: the engine state of a rank over one
// transport endpoint.
type Comm struct {
	ep   transport.Endpoint
	rank int
	size int

	abort    <-chan struct{}
	abortErr func() error

	sig signal // broadcast on every state change that a waiter may need

	mu         sync.Mutex // guards the two-sided queues
	posted     []*recvReq // receives posted, in posting order
	unexpected []*message // messages not yet matched, in arrival order

	winMu   sync.Mutex
	wins    map[uint32]*Win
	nextWin uint32
	byKey   atomic.Pointer[map[transport.Key]*Win] // windows by data key, for notices; copy-on-write under winMu

	sleepers atomic.Int32 // goroutines asleep in wait, to be woken by wake

	failed  []atomic.Bool // peers the transport reported failed
	nfailed atomic.Int32
}

// New builds the engine for one rank over ep. abort is closed when the job
// is aborted; abortErr then says why. Both may be nil.
func New(ep transport.Endpoint, abort <-chan struct{}, abortErr func() error) *Comm {
	c := &Comm{
		ep:       ep,
		rank:     ep.Rank(),
		size:     ep.Size(),
		abort:    abort,
		abortErr: abortErr,
		wins:     make(map[uint32]*Win),
		failed:   make([]atomic.Bool, ep.Size()),
	}
	ep.SetAMHandler(amMsg, c.handleMsg)
	ep.SetAMHandler(amWin, c.handleWin)
	ep.SetFailureHandler(c.handleFailure)
	ep.SetNoticeHandler(c.handleNotice)
	return c
}

// Rank returns the calling rank, in [0, Size).
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.size }

// Caps returns the transport's capabilities (for tools and benchmarks).
func (c *Comm) Caps() transport.Caps { return c.ep.Caps() }

// Close releases the rank's endpoint.
func (c *Comm) Close() error { return c.ep.Close() }

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
}

// peerFailed reports whether the transport declared rank r failed.
func (c *Comm) peerFailed(r int) bool {
	return r >= 0 && r < len(c.failed) && c.failed[r].Load()
}

// anyFailed reports whether the transport declared any peer failed.
func (c *Comm) anyFailed() bool { return c.nfailed.Load() > 0 }

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
