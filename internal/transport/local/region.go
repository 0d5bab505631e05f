package local

import (
	"sync/atomic"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Handle states. A handle starts live and leaves that state once, to the
// first reason it stops.
const (
	hLive       uint32 = iota
	hClosed            // the origin closed or was killed: ErrClosed
	hNoRegion          // the region was unexposed: ErrNoRegion
	hPeerClosed        // the target closed: ErrPeer
	hPeerFailed        // the target was killed: ErrPeer
)

// handleKey identifies a cached handle at its origin.
type handleKey struct {
	target int
	key    transport.Key
	size   int
}

// region is a handle on a region exposed by target, held by origin. mem is
// the target's memory itself, cut to the handle's size but with its
// capacity kept. An operation loads state once and, if live, applies
// itself to mem with the load/store core.
type region struct {
	state  atomic.Uint32
	mem    []byte
	origin *Endpoint
	target *Endpoint
	key    transport.Key
	hk     handleKey
}

var (
	_ transport.WordRegion   = (*region)(nil)
	_ transport.MappedRegion = (*region)(nil)
)

// stop moves the handle from live to state s; a stopped handle keeps its
// first reason.
func (r *region) stop(s uint32) { r.state.CompareAndSwap(hLive, s) }

// err returns the error for stopped state s.
func (r *region) err(s uint32) error {
	switch s {
	case hClosed:
		return transport.ErrClosed
	case hNoRegion:
		return transport.ErrNoRegion
	case hPeerClosed:
		return r.target.errPeerClosed
	}
	return r.target.errPeerFailed
}

// notify delivers n to the target's notice handler, if it has one.
func (r *region) notify(n transport.Notice) {
	if h := r.target.Notice(); h != nil {
		h(r.origin.rank, r.key, n)
	}
}

// Word returns the word at off of the target's memory (see
// transport.WordRegion).
func (r *region) Word(off int) (transport.Word, error) {
	if s := r.state.Load(); s != hLive {
		return nil, r.err(s)
	}
	w, err := WordAt(r.mem, off)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Size returns the size of the handle in bytes.
func (r *region) Size() int { return len(r.mem) }

// Mapped returns the target's memory itself (transport.MappedRegion).
func (r *region) Mapped() ([]byte, bool) { return r.mem[:len(r.mem):len(r.mem)], true }

// Put copies src into the target's memory at off, then delivers n.
func (r *region) Put(off int, src []byte, n transport.Notice, _ *transport.Completion) error {
	if s := r.state.Load(); s != hLive {
		return r.err(s)
	}
	if err := PutAt(r.mem, off, src); err != nil {
		return err
	}
	if n.Kind() != transport.NoticeNone {
		r.notify(n)
	}
	return nil
}

// Get copies the target's memory at off into dst, then delivers n.
func (r *region) Get(off int, dst []byte, n transport.Notice, _ *transport.Completion) error {
	if s := r.state.Load(); s != hLive {
		return r.err(s)
	}
	if err := GetAt(r.mem, off, dst); err != nil {
		return err
	}
	if n.Kind() != transport.NoticeNone {
		r.notify(n)
	}
	return nil
}

// Accumulate applies op to the target's memory at off with
// mem.AtomicAccumulate, then delivers n.
func (r *region) Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, _ *transport.Completion) error {
	if s := r.state.Load(); s != hLive {
		return r.err(s)
	}
	if err := AccumulateAt(r.mem, off, op, t, src, result); err != nil {
		return err
	}
	if n.Kind() != transport.NoticeNone {
		r.notify(n)
	}
	return nil
}

// CompareSwap applies mem.AtomicCompareSwap to the target's memory at off,
// then delivers n.
func (r *region) CompareSwap(off int, t mem.Type, compare, swap, result []byte, n transport.Notice, _ *transport.Completion) error {
	if s := r.state.Load(); s != hLive {
		return r.err(s)
	}
	if err := CompareSwapAt(r.mem, off, t, compare, swap, result); err != nil {
		return err
	}
	if n.Kind() != transport.NoticeNone {
		r.notify(n)
	}
	return nil
}
