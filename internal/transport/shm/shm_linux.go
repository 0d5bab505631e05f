package shm

import (
	"context"
	"errors"
	"fmt"
	"github.com/narma-rma/narma/internal/mem"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/sys"
	"github.com/narma-rma/narma/internal/transport"
)

// Config describes an endpoint to New.
type Config struct {
	// Rank and Size place the endpoint in the job.
	Rank, Size int
	// Heap is this process's shared heap, installed as mem's source so
	// that the memory the engine exposes lies in segments.
	Heap *Heap
	// Exchange is the job's start-up allgather (the launcher's bootstrap):
	// every rank passes its data and gets every rank's, indexed by rank.
	// New calls it twice, the second time as a barrier.
	Exchange func(ctx context.Context, data []byte) ([][]byte, error)
	// NoticeSlots is the capacity of the endpoint's notice ring, a power
	// of two (0: 1024).
	NoticeSlots int
	// RingSize is the size in bytes of each incoming active-message ring,
	// a power of two of at least 4096 (0: chosen from Size).
	RingSize int
	// NoSingleCopy sends large active messages through the rings only,
	// never by single copy (cma_linux.go).
	NoSingleCopy bool
	// CheckInterval is how often peers are checked for failure (0: 20ms).
	// A peer whose process is gone is reported within about this time.
	CheckInterval time.Duration
}

// defaultRingSize gives each incoming ring 4 MiB / size, within
// [64 KiB, 1 MiB]: a 1 MiB message streams in four records at 2 ranks.
func defaultRingSize(size int) int {
	rs := 1 << 20
	for rs > 64<<10 && rs*size > 4<<20 {
		rs >>= 1
	}
	return rs
}

// caps: operations are loads and stores on mapped memory, complete at the
// target when they return.
var caps = transport.Caps{Name: "shm", Synchronous: true, Direct: true}

// Peer states as the endpoint sees them.
const (
	peerOK uint32 = iota
	peerClosed
	peerFailed
)

// Endpoint is one rank of a job whose ranks are processes on one host. It
// implements transport.Endpoint and transport.Poller; its methods are safe
// for concurrent use.
type Endpoint struct {
	rank, size int
	heap       *Heap
	job        string
	own        *ctl   // this endpoint's control segment
	peers      []*ctl // every rank's control segment, own included
	pids       []int
	shared     bool // other ranks of the job are goroutines of this process
	// barrier: this process is registered for global memory barriers,
	// which the endpoint's sleepers run before their last look
	// (membarrier_linux.go).
	barrier bool
	cma     bool // large messages go by single copy (CMAStatus)
	// cmaPids are the processes single-copy reads come from, by source:
	// pids, in a slice of their own that only the drainer reads (tests
	// break an entry to make the reads fail, which checkPeers, reading
	// pids, must not see).
	cmaPids []int

	cmaMu    sync.Mutex
	cmaErrs  map[int]error // per source: why a single-copy read failed
	interval time.Duration

	closed    atomic.Bool
	peerState []atomic.Uint32
	errClosed []error // per peer: it closed
	errFailed []error // per peer: it failed

	transport.Handlers

	// The consumer side: whoever holds draining runs the handlers.
	draining    drainLock
	ringStalled []atomic.Bool // per source: its ring waits for a handler (written with draining held)
	ringBroken  []bool        // per source: its ring held a corrupt record and is read no more (draining held)
	// lastKey is the key of the region of the last notice drained, and
	// lastWord its word (draining held): see keyOf.
	lastKey  transport.Key
	lastWord uint64
	partial  []*assembly // per source: message being reassembled, or nil
	spare    []*assembly // per source: a finished assembly, its buffer to reuse
	scratch  []byte      // for records that wrap around the ring end
	// ackWait is the acknowledgement a single-copy send of this
	// endpoint waits for while it drains (sendRemote), nil when none:
	// once it has come, the drain leaves the next single-copy record for
	// the receive the caller is about to post (held with draining).
	ackWait *amRing
	ackSeq  uint64

	polled atomic.Bool // Poll was called since the progress goroutine last looked
	// asleep is, while the progress goroutine is registered as a sleeper
	// on the doorbell, its ticket plus one; else 0. A caller of Poll
	// takes the registration over (poll).
	asleep atomic.Uint64
	kick   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	send []sender // per target

	expMu   sync.Mutex
	nextGen uint64
	free    []int // free exposure table indices

}

var (
	_ transport.Endpoint = (*Endpoint)(nil)
	_ transport.Poller   = (*Endpoint)(nil)
	_ transport.Waker    = (*Endpoint)(nil)
)

// ErrLayout reports a peer's control segment that is not what this
// endpoint expects (another version, another job geometry).
var ErrLayout = errors.New("shm: peer control segment does not match")

// New creates this rank's control segment, exchanges its name with the
// other ranks through cfg.Exchange, maps theirs and starts the endpoint's
// progress goroutine. Every rank of the job must call it.
func New(ctx context.Context, cfg Config) (*Endpoint, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("shm: rank %d of %d", cfg.Rank, cfg.Size)
	}
	if cfg.Heap == nil || cfg.Exchange == nil {
		return nil, errors.New("shm: Config needs a Heap and an Exchange")
	}
	slots := cfg.NoticeSlots
	if slots == 0 {
		slots = 1024
	}
	rs := cfg.RingSize
	if rs == 0 {
		rs = defaultRingSize(cfg.Size)
	}
	if slots < 2 || slots&(slots-1) != 0 || rs < 4096 || rs&(rs-1) != 0 {
		return nil, fmt.Errorf("shm: %d notice slots and %d-byte rings: want powers of two, rings of at least 4096", slots, rs)
	}
	interval := cfg.CheckInterval
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	job := cfg.Heap.Job()
	name := "r" + strconv.Itoa(cfg.Rank)
	if !cfg.NoSingleCopy {
		sys.AllowPeers()
	}
	b, err := createSegment(segmentPath(job, name), (ctlSize(cfg.Size, slots, rs)+pageSize-1)&^(pageSize-1))
	if err != nil {
		return nil, err
	}
	h, err := mem.As[header](b)
	if err != nil {
		return nil, err
	}
	h.size, h.rank, h.pid = uint32(cfg.Size), uint32(cfg.Rank), uint32(os.Getpid())
	h.slots, h.amRingSize = uint32(slots), uint32(rs)
	h.magic = magic
	own, err := layout(b)
	if err != nil {
		sys.Retire(b)
		return nil, err
	}
	for i := range own.slots {
		own.slots[i].storeSeq(uint64(i), false)
	}
	barrier := barrierReady()
	if barrier {
		h.barrier = 1
	}
	own.relaxed = barrier
	h.state.Store(stateOpen)

	e := &Endpoint{
		rank: cfg.Rank, size: cfg.Size, heap: cfg.Heap, job: job, own: own,
		peers: make([]*ctl, cfg.Size), pids: make([]int, cfg.Size), interval: interval,
		peerState: make([]atomic.Uint32, cfg.Size),
		errClosed: make([]error, cfg.Size), errFailed: make([]error, cfg.Size),
		partial: make([]*assembly, cfg.Size), spare: make([]*assembly, cfg.Size),
		ringStalled: make([]atomic.Bool, cfg.Size), ringBroken: make([]bool, cfg.Size),
		kick: make(chan struct{}, 1), done: make(chan struct{}), barrier: barrier,
		send: make([]sender, cfg.Size),
		free: make([]int, 0, maxExpose),
	}
	for i := maxExpose - 1; i >= 0; i-- {
		e.free = append(e.free, i)
	}
	fail := func(err error) (*Endpoint, error) {
		h.state.Store(stateClosed)
		return nil, err
	}
	all, err := cfg.Exchange(ctx, []byte(name))
	if err != nil {
		return fail(fmt.Errorf("shm: exchange of segment names: %w", err))
	}
	if len(all) != cfg.Size {
		return fail(fmt.Errorf("shm: exchange returned %d names for %d ranks", len(all), cfg.Size))
	}
	for r, nm := range all {
		e.errClosed[r] = fmt.Errorf("shm: rank %d closed: %w", r, transport.ErrPeer)
		e.errFailed[r] = fmt.Errorf("shm: rank %d failed: %w", r, transport.ErrPeer)
		if r == cfg.Rank {
			e.peers[r], e.pids[r] = own, os.Getpid()
			continue
		}
		if string(nm) != "r"+strconv.Itoa(r) {
			return fail(fmt.Errorf("shm: rank %d announced segment %q", r, nm))
		}
		pb, err := openSegment(segmentPath(job, string(nm)))
		if err != nil {
			return fail(err)
		}
		pc, err := layout(pb)
		if err != nil || int(pc.hdr.size) != cfg.Size || int(pc.hdr.rank) != r {
			sys.Retire(pb)
			return fail(fmt.Errorf("%w: rank %d (%v)", ErrLayout, r, err))
		}
		pc.relaxed = barrier && pc.hdr.barrier == 1
		e.peers[r], e.pids[r] = pc, int(pc.hdr.pid)
	}
	if _, err := cfg.Exchange(ctx, nil); err != nil {
		return fail(fmt.Errorf("shm: start-up barrier: %w", err))
	}
	for r, pid := range e.pids {
		e.shared = e.shared || (r != cfg.Rank && pid == os.Getpid())
	}
	if !cfg.NoSingleCopy {
		e.cma, _ = CMAStatus()
	}
	e.cmaPids = slices.Clone(e.pids)
	// Every rank has mapped every control segment: the names are no
	// longer needed, and removing them now leaves nothing behind whatever
	// happens to the job.
	os.Remove(segmentPath(job, name))
	e.wg.Add(1)
	go e.progress()
	return e, nil
}

// Rank returns the endpoint's rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size returns the number of ranks.
func (e *Endpoint) Size() int { return e.size }

// SharesMemory reports true for every rank of the job: they are
// processes of this host, and map each other's exposed memory
// (transport.MemorySharer).
func (e *Endpoint) SharesMemory(rank int) bool { return rank >= 0 && rank < e.size }

// Caps reports Caps{Name: "shm", Synchronous: true, Direct: true}.
func (e *Endpoint) Caps() transport.Caps { return caps }

// Host reports every rank on this host, goroutines of this process if
// the endpoints of a Group are.
func (e *Endpoint) Host() transport.Host {
	return transport.Host{Ranks: e.size, OneProcess: e.shared}
}

// peerErr returns the error for an operation aimed at rank target, or nil.
func (e *Endpoint) peerErr(target int) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	if uint(target) >= uint(e.size) {
		return fmt.Errorf("shm: rank %d out of range (size %d)", target, e.size)
	}
	switch e.peerState[target].Load() {
	case peerClosed:
		return e.errClosed[target]
	case peerFailed:
		return e.errFailed[target]
	}
	// The target's own word: a closed peer is refused at once, without
	// waiting for the next check.
	if s := e.peers[target].hdr.state.Load(); s != stateOpen {
		if s == stateClosed {
			return e.errClosed[target]
		}
		return e.errFailed[target]
	}
	return nil
}

// Close marks the endpoint closed in its control segment (peers then see
// it as closed, not failed), stops its progress goroutine and releases its
// mappings of other ranks' segments. Closing twice returns
// transport.ErrClosed.
func (e *Endpoint) Close() error { return e.shutdown(stateClosed) }

// shutdown stops the endpoint, leaving state (closed, or failed for
// Kill) in its control segment for the peers to see.
func (e *Endpoint) shutdown(state uint32) error {
	if !e.closed.CompareAndSwap(false, true) {
		return transport.ErrClosed
	}
	e.own.hdr.state.Store(state)
	close(e.done)
	e.own.hdr.bell.Add(1)
	sys.FutexWake(&e.own.hdr.bell)
	e.wg.Wait()
	return nil
}
