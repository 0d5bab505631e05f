package local

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/transport"
)

// Errors of the local transport, besides those of package transport.
var (
	// ErrRank is returned (wrapped) for a rank outside [0, Size()).
	ErrRank = errors.New("local: rank out of range")
	// ErrNoHandler is returned (wrapped) by SendAM when the target has no
	// handler for the message's AMID, or the AMID is not below
	// transport.MaxAMID.
	ErrNoHandler = errors.New("local: no active-message handler")
)

// caps is what the local transport does: everything completes in the call,
// with loads and stores on the target's memory.
var caps = transport.Caps{Name: "local", Synchronous: true, Direct: true}

// Endpoint states.
const (
	epOpen uint32 = iota
	epClosed
	epFailed
)

// Fabric is a set of connected local endpoints, one per rank.
type Fabric struct {
	eps []*Endpoint
}

// NewFabric returns a fabric of n connected endpoints with ranks 0..n-1.
func NewFabric(n int) (*Fabric, error) {
	if n < 1 {
		return nil, fmt.Errorf("local: fabric of %d ranks", n)
	}
	f := &Fabric{eps: make([]*Endpoint, n)}
	for i := range f.eps {
		f.eps[i] = &Endpoint{
			fab:           f,
			rank:          i,
			regions:       make(map[transport.Key]*entry),
			handles:       make(map[handleKey]*region),
			errPeerClosed: fmt.Errorf("local: rank %d closed: %w", i, transport.ErrPeer),
			errPeerFailed: fmt.Errorf("local: rank %d failed: %w", i, transport.ErrPeer),
		}
	}
	return f, nil
}

// New returns n connected endpoints; endpoint i has rank i. The concrete
// type of each is *Endpoint.
func New(n int) ([]transport.Endpoint, error) {
	f, err := NewFabric(n)
	if err != nil {
		return nil, err
	}
	return f.Endpoints(), nil
}

// Size returns the number of ranks.
func (f *Fabric) Size() int { return len(f.eps) }

// Endpoint returns the endpoint of rank, or nil if rank is out of range.
func (f *Fabric) Endpoint(rank int) *Endpoint {
	if uint(rank) >= uint(len(f.eps)) {
		return nil
	}
	return f.eps[rank]
}

// Endpoints returns all the endpoints, indexed by rank.
func (f *Fabric) Endpoints() []transport.Endpoint {
	eps := make([]transport.Endpoint, len(f.eps))
	for i, e := range f.eps {
		eps[i] = e
	}
	return eps
}

// Close closes every endpoint that is still open.
func (f *Fabric) Close() error {
	for _, e := range f.eps {
		if e.state.Load() == epOpen {
			_ = e.Close() // ErrClosed if closed meanwhile: fine
		}
	}
	return nil
}

// Kill simulates the failure of rank, for tests: the endpoint is shut
// down as by Close (its own operations then fail with transport.ErrClosed,
// operations aimed at it with an error matching transport.ErrPeer), and
// then the FailureHandler of every other open endpoint is called, on the
// calling goroutine, with the rank and an error matching transport.ErrPeer.
// Kill fails if rank is out of range or its endpoint is already closed or
// killed.
func (f *Fabric) Kill(rank int) error {
	e := f.Endpoint(rank)
	if e == nil {
		return fmt.Errorf("%w: %d (size %d)", ErrRank, rank, len(f.eps))
	}
	if !e.state.CompareAndSwap(epOpen, epFailed) {
		return fmt.Errorf("local: kill rank %d: %w", rank, transport.ErrClosed)
	}
	e.shutdown(hPeerFailed)
	for _, o := range f.eps {
		if o == e || o.state.Load() != epOpen {
			continue
		}
		if h := o.Failure(); h != nil {
			h(rank, e.errPeerFailed)
		}
	}
	return nil
}

// Endpoint is one rank of a Fabric. It implements transport.Endpoint; its
// methods are safe for concurrent use.
type Endpoint struct {
	fab  *Fabric
	rank int

	state atomic.Uint32 // epOpen, epClosed or epFailed

	transport.Handlers

	// mu guards the table of regions this endpoint exposes, and each
	// entry's users. It is taken before any endpoint's hmu, never after.
	mu      sync.Mutex
	regions map[transport.Key]*entry // nil once shut down
	lastKey uint64                   // the word of the last key given out (transport.WordKey)

	// hmu guards handles, the cache of the Region handles this endpoint
	// has issued as an origin, by (target, key, size). It is a leaf lock.
	hmu     sync.Mutex
	handles map[handleKey]*region // nil once shut down

	// Errors reporting this endpoint as a closed or failed peer, made once
	// so that reporting them allocates nothing.
	errPeerClosed error
	errPeerFailed error
}

var _ transport.Endpoint = (*Endpoint)(nil)

// entry is an exposed region in its owner's table.
type entry struct {
	mem   []byte
	users []*region // handles issued for this region, by any origin
}

// withdraw stops every handle of the entry with state s (unless stopped
// already) and drops them from their origins' caches. The owner's mu is
// held.
func (ent *entry) withdraw(s uint32) {
	for _, h := range ent.users {
		h.stop(s)
		h.origin.forget(h)
	}
	ent.users = nil
}

// Rank returns the endpoint's rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size returns the number of ranks of the fabric.
func (e *Endpoint) Size() int { return len(e.fab.eps) }

// SharesMemory reports true for every rank of the job: they are
// goroutines of this process (transport.MemorySharer).
func (e *Endpoint) SharesMemory(rank int) bool { return rank >= 0 && rank < len(e.fab.eps) }

// Caps reports Caps{Name: "local", Synchronous: true, Direct: true}.
func (e *Endpoint) Caps() transport.Caps { return caps }

// Host reports every rank on this host, goroutines of this process.
func (e *Endpoint) Host() transport.Host {
	return transport.Host{Ranks: e.Size(), OneProcess: true}
}

// Fabric returns the fabric the endpoint belongs to.
func (e *Endpoint) Fabric() *Fabric { return e.fab }

// Kill simulates the failure of the endpoint's rank: it calls
// e.Fabric().Kill(e.Rank()).
func (e *Endpoint) Kill() error { return e.fab.Kill(e.rank) }

// peer returns the endpoint of rank target if it is open, or the error to
// report for it.
func (e *Endpoint) peer(target int) (*Endpoint, error) {
	t := e.fab.Endpoint(target)
	if t == nil {
		return nil, fmt.Errorf("%w: %d (size %d)", ErrRank, target, len(e.fab.eps))
	}
	switch t.state.Load() {
	case epOpen:
		return t, nil
	case epClosed:
		return nil, t.errPeerClosed
	}
	return nil, t.errPeerFailed
}

// Expose makes m accessible to the other endpoints of the fabric and
// returns its key. Keys are never reused by an endpoint. m may be empty;
// for atomics on 1- and 2-byte elements its capacity must cover the
// aligned 32-bit word around each element, as memory from mem.Alloc does.
func (e *Endpoint) Expose(m []byte) (transport.Key, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.Load() != epOpen {
		return transport.Key{}, transport.ErrClosed
	}
	e.lastKey++
	key := transport.WordKey(e.lastKey)
	e.regions[key] = &entry{mem: m}
	return key, nil
}

// Unexpose withdraws the region key: every handle for it, from any origin,
// fails from then on with transport.ErrNoRegion, and Region refuses the
// key. It returns transport.ErrNoRegion if key is not exposed. See the
// package documentation for operations running concurrently with it.
func (e *Endpoint) Unexpose(key transport.Key) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.Load() != epOpen {
		return transport.ErrClosed
	}
	ent := e.regions[key]
	if ent == nil {
		return fmt.Errorf("local: unexpose key %v at rank %d: %w", key, e.rank, transport.ErrNoRegion)
	}
	delete(e.regions, key)
	ent.withdraw(hNoRegion)
	return nil
}

// Region returns a handle for the region key exposed by target, limited
// to its first size bytes. It fails with transport.ErrNoRegion if target
// has not exposed key, and with transport.ErrBounds if size is negative or
// larger than the region. Asking again for the same target, key and size
// returns the same handle.
func (e *Endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	if e.state.Load() != epOpen {
		return nil, transport.ErrClosed
	}
	t, err := e.peer(target)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state.Load() {
	case epClosed:
		return nil, t.errPeerClosed
	case epFailed:
		return nil, t.errPeerFailed
	}
	ent := t.regions[key]
	if ent == nil {
		return nil, fmt.Errorf("local: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	if size < 0 || size > len(ent.mem) {
		return nil, fmt.Errorf("local: handle of %d bytes on a region of %d: %w", size, len(ent.mem), transport.ErrBounds)
	}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if e.state.Load() != epOpen {
		return nil, transport.ErrClosed
	}
	hk := handleKey{target: target, key: key, size: size}
	if h := e.handles[hk]; h != nil && h.state.Load() == hLive {
		return h, nil
	}
	// Keep the capacity of the exposed slice: sub-word atomics need it.
	h := &region{mem: ent.mem[:size], origin: e, target: t, key: key, hk: hk}
	e.handles[hk] = h
	ent.users = append(ent.users, h)
	return h, nil
}

// forget drops h from the endpoint's handle cache.
func (e *Endpoint) forget(h *region) {
	e.hmu.Lock()
	if e.handles[h.hk] == h {
		delete(e.handles, h.hk)
	}
	e.hmu.Unlock()
}

// Flush returns at once, as every operation is complete when issued: nil,
// transport.ErrClosed if the endpoint is closed, an error matching ErrRank
// if target is out of range, or ctx.Err().
func (e *Endpoint) Flush(ctx context.Context, target int) error {
	if e.state.Load() != epOpen {
		return transport.ErrClosed
	}
	if uint(target) >= uint(len(e.fab.eps)) {
		return fmt.Errorf("%w: %d (size %d)", ErrRank, target, len(e.fab.eps))
	}
	return ctx.Err()
}

// FlushAll returns at once: nil, transport.ErrClosed if the endpoint is
// closed, or ctx.Err().
func (e *Endpoint) FlushAll(ctx context.Context) error {
	if e.state.Load() != epOpen {
		return transport.ErrClosed
	}
	return ctx.Err()
}

// SendAM calls target's handler for id with this endpoint's rank, hdr and
// payload, on the calling goroutine, and returns when it has returned. The
// handler sees hdr and payload themselves, without a copy (with their
// capacity cut to their length). SendAM fails with an error matching
// ErrRank, transport.ErrPeer (target closed or failed), ErrNoHandler, or
// transport.ErrClosed if this endpoint is closed.
func (e *Endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	if e.state.Load() != epOpen {
		return transport.ErrClosed
	}
	t, err := e.peer(target)
	if err != nil {
		return err
	}
	if id >= transport.MaxAMID {
		return fmt.Errorf("%w: AMID %d (max %d)", ErrNoHandler, id, transport.MaxAMID-1)
	}
	h := t.AM(id)
	if h == nil {
		return fmt.Errorf("%w: AMID %d at rank %d", ErrNoHandler, id, target)
	}
	h(e.rank, hdr[:len(hdr):len(hdr)], payload[:len(payload):len(payload)])
	return nil
}

// Close shuts the endpoint down in an orderly way: its exposed regions are
// withdrawn, its handles stop, and later operations on it fail with
// transport.ErrClosed while operations aimed at it fail with an error
// matching transport.ErrPeer. No FailureHandler is called. Closing a
// closed endpoint returns transport.ErrClosed; closing a killed one
// returns nil.
func (e *Endpoint) Close() error {
	if !e.state.CompareAndSwap(epOpen, epClosed) {
		if e.state.Load() == epFailed {
			return nil
		}
		return transport.ErrClosed
	}
	e.shutdown(hPeerClosed)
	return nil
}

// shutdown stops the handles of an endpoint whose state has just left
// epOpen: its own handles with hClosed, then the handles other endpoints
// hold on its regions with peer.
func (e *Endpoint) shutdown(peer uint32) {
	e.hmu.Lock()
	for _, h := range e.handles {
		h.stop(hClosed)
	}
	e.handles = nil
	e.hmu.Unlock()

	e.mu.Lock()
	for _, ent := range e.regions {
		ent.withdraw(peer)
	}
	e.regions = nil
	e.mu.Unlock()
}
