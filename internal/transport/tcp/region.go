package tcp

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// Handle states. A handle starts live and leaves that state once.
const (
	hLive     uint32 = iota
	hClosed          // this endpoint closed: ErrClosed
	hNoRegion        // the region was withdrawn: ErrNoRegion
)

// handleKey identifies a cached handle.
type handleKey struct {
	target int
	key    transport.Key
	size   int
}

// region is a handle on a region of a peer (o set) or of this endpoint
// itself (self set).
type region struct {
	ep    *Endpoint
	p     *peer    // nil for this endpoint's own region
	o     *outConn // the connection to p
	self  *exposed
	key   transport.Key
	size  int
	state atomic.Uint32
}

var _ transport.Region = (*region)(nil)

// Region returns a handle on the region key of target, of size bytes. For
// a peer's region it asks the peer, over a connection it opens if there is
// none yet, whether the region exists and is that large: it fails with
// transport.ErrNoRegion or transport.ErrBounds if not, and with an error
// matching transport.ErrPeer if the peer is unreachable. Handles are
// cached.
func (e *Endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	if !e.open() {
		return nil, transport.ErrClosed
	}
	p, err := e.peer(target)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("tcp: handle of %d bytes: %w", size, transport.ErrBounds)
	}
	if _, ok := key.AsWord(); !ok {
		return nil, fmt.Errorf("tcp: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	hk := handleKey{target, key, size}
	e.hmu.Lock()
	h := e.handles[hk]
	e.hmu.Unlock()
	if h != nil && h.usable() == nil {
		return h, nil
	}
	h = &region{ep: e, p: p, key: key, size: size}
	if p == nil {
		x := e.acquire(key)
		if x == nil {
			return nil, fmt.Errorf("tcp: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
		}
		n := len(x.mem)
		x.mu.RUnlock()
		if size > n {
			return nil, fmt.Errorf("tcp: handle of %d bytes on a region of %d: %w", size, n, transport.ErrBounds)
		}
		h.self = x
	} else {
		if h.o, err = p.conn(); err != nil {
			return nil, err
		}
		lk, lerr := e.startLookup(target, key)
		if lerr != nil {
			return nil, lerr
		}
		defer e.endLookup(lk)
		w := newWaiter()
		if err := h.o.send(&header{kind: KindLookup, key: keyWord(key), off: uint64(size)}, nil, &call{w: w}); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
		err := w.wait(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			p.fail(fmt.Errorf("tcp: rank %d did not answer a lookup within %v: %w", target, e.timeout, transport.ErrPeer))
			return nil, p.err()
		}
		if err != nil {
			return nil, fmt.Errorf("tcp: key %v of %d bytes at rank %d: %w", key, size, target, err)
		}
	}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if e.handles == nil {
		return nil, transport.ErrClosed
	}
	if l := e.lookups[hk.lookup()]; l != nil && l.withdrawn {
		return nil, fmt.Errorf("tcp: key %v at rank %d was withdrawn: %w", key, target, transport.ErrNoRegion)
	}
	e.handles[hk] = h
	return h, nil
}

// lookupKey identifies the lookups of a region.
type lookupKey struct {
	target int
	key    transport.Key
}

func (hk handleKey) lookup() lookupKey { return lookupKey{hk.target, hk.key} }

// lookups counts the Region calls waiting for a peer's answer about a
// region. The peer withdraws a region from the ranks it answered (see
// Unexpose) on the other connection, so the withdrawal may arrive before
// the answer, when there is no handle yet to stop: it marks the lookups
// instead, and they fail.
type lookups struct {
	n         int  // Region calls waiting
	withdrawn bool // the region was withdrawn while they waited
}

// startLookup records a lookup of region key of target.
func (e *Endpoint) startLookup(target int, key transport.Key) (lookupKey, error) {
	lk := lookupKey{target, key}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if e.handles == nil {
		return lk, transport.ErrClosed
	}
	if e.lookups == nil {
		e.lookups = make(map[lookupKey]*lookups)
	}
	l := e.lookups[lk]
	if l == nil {
		l = &lookups{}
		e.lookups[lk] = l
	}
	l.n++
	return lk, nil
}

// endLookup records that a lookup of lk is over.
func (e *Endpoint) endLookup(lk lookupKey) {
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if l := e.lookups[lk]; l != nil {
		if l.n--; l.n == 0 {
			delete(e.lookups, lk)
		}
	}
}

// withdrawHandles stops this endpoint's handles on region key of target,
// and fails the lookups of it in progress.
func (e *Endpoint) withdrawHandles(target int, key transport.Key) {
	e.hmu.Lock()
	defer e.hmu.Unlock()
	for hk, h := range e.handles {
		if hk.target == target && hk.key == key {
			h.stop(hNoRegion)
			delete(e.handles, hk)
		}
	}
	if l := e.lookups[lookupKey{target, key}]; l != nil {
		l.withdrawn = true
	}
}

// stop moves the handle from live to s.
func (r *region) stop(s uint32) { r.state.CompareAndSwap(hLive, s) }

// usable returns nil if operations may go through the handle, else why
// not.
func (r *region) usable() error {
	switch r.state.Load() {
	case hClosed:
		return transport.ErrClosed
	case hNoRegion:
		return fmt.Errorf("tcp: key %v: %w", r.key, transport.ErrNoRegion)
	}
	if !r.ep.open() {
		return transport.ErrClosed
	}
	if r.p != nil {
		return r.p.err()
	}
	return nil
}

// Size returns the size of the handle in bytes.
func (r *region) Size() int { return r.size }

// checkNotice refuses a notice of a kind the target could not decode.
func checkNotice(n transport.Notice) error {
	if n.Kind() > transport.NoticeSignal {
		return fmt.Errorf("tcp: notice kind %d: %w", n.Kind(), mem.ErrOp)
	}
	return nil
}

// local applies an operation to this endpoint's own region and delivers
// its notice.
func (r *region) local(n transport.Notice, apply func(m []byte) error) error {
	x := r.self
	x.mu.RLock()
	if x.dead {
		x.mu.RUnlock()
		return fmt.Errorf("tcp: key %v: %w", r.key, transport.ErrNoRegion)
	}
	err := apply(x.mem[:r.size])
	x.mu.RUnlock()
	if err == nil && n.Kind() != transport.NoticeNone {
		if f := r.ep.Notice(); f != nil {
			f(r.ep.rank, r.key, n)
		}
	}
	return err
}

// Put writes src at off: one frame, carrying the notice (a put of more
// than chunkPayload bytes is split into frames of that size, applied in
// order, the notice on the last). It is complete at the origin when it
// returns (src may be reused), at the target after a Flush.
func (r *region) Put(off int, src []byte, n transport.Notice, _ *transport.Completion) error {
	if err := r.usable(); err != nil {
		return err
	}
	if off < 0 || len(src) > r.size-off {
		return transport.ErrBounds
	}
	if err := checkNotice(n); err != nil {
		return err
	}
	if r.self != nil {
		return r.local(n, func(m []byte) error { return local.PutAt(m, off, src) })
	}
	for {
		chunk := src[:min(len(src), chunkPayload)]
		h := header{kind: KindPut, key: keyWord(r.key), off: uint64(off)}
		last := len(chunk) == len(src)
		if last {
			h.setNotice(n)
		}
		if len(src) == 0 && n.Kind() == transport.NoticeNone {
			return nil
		}
		if err := r.o.send(&h, chunk, nil); err != nil {
			return err
		}
		if last {
			return nil
		}
		src, off = src[len(chunk):], off+len(chunk)
	}
}

// Get reads len(dst) bytes at off into dst: a request and a reply, which
// completes c (one per chunkPayload bytes for a larger get).
func (r *region) Get(off int, dst []byte, n transport.Notice, c *transport.Completion) error {
	if err := r.usable(); err != nil {
		return err
	}
	if off < 0 || len(dst) > r.size-off {
		return transport.ErrBounds
	}
	if err := checkNotice(n); err != nil {
		return err
	}
	if r.self != nil {
		return r.local(n, func(m []byte) error { return local.GetAt(m, off, dst) })
	}
	for {
		chunk := dst[:min(len(dst), chunkPayload)]
		h := header{kind: KindGet, key: keyWord(r.key), off: uint64(off), result: uint32(len(chunk))}
		last := len(chunk) == len(dst)
		if last {
			h.setNotice(n)
		}
		if len(dst) == 0 && n.Kind() == transport.NoticeNone {
			return nil
		}
		if err := r.o.send(&h, nil, &call{dst: chunk, c: c}); err != nil {
			return err
		}
		if last {
			return nil
		}
		dst, off = dst[len(chunk):], off+len(chunk)
	}
}

// Accumulate applies op at the target, atomically per element. A
// fetching accumulate is a request and a reply (which completes c); any
// other is one frame. Like a put, it is split into frames of
// chunkPayload bytes.
func (r *region) Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	if err := r.usable(); err != nil {
		return err
	}
	span, err := local.CheckAccumulate(r.size, off, op, t, src, result)
	if err != nil {
		return err
	}
	if err := checkNotice(n); err != nil {
		return err
	}
	if r.self != nil {
		return r.local(n, func(m []byte) error { return local.AccumulateAt(m, off, op, t, src, result) })
	}
	if span == 0 || op == mem.NoOp && result == nil {
		// Reads nothing, writes nothing: only the notice travels.
		return r.Put(off, nil, n, nil)
	}
	if op == mem.NoOp {
		if result == nil {
			// Reads nothing, writes nothing: only the notice travels.
			return r.Put(off, nil, n, nil)
		}
		src = nil
	}
	for done := 0; ; {
		k := min(span-done, chunkPayload)
		h := header{kind: KindAccumulate, op: op, typ: t, key: keyWord(r.key), off: uint64(off + done)}
		last := done+k == span
		if last {
			h.setNotice(n)
		}
		var payload []byte
		if src != nil {
			payload = src[done : done+k]
		}
		var err error
		if result != nil {
			h.flags = flagFetch
			h.result = uint32(k)
			err = r.o.send(&h, payload, &call{dst: result[done : done+k], c: c})
		} else {
			err = r.o.send(&h, payload, nil)
		}
		if err != nil {
			return err
		}
		if done += k; last {
			return nil
		}
	}
}

// CompareSwap replaces the element at off with swap if it equals
// compare, atomically at the target. With a result it is a request and a
// reply (which completes c), else one frame.
func (r *region) CompareSwap(off int, t mem.Type, compare, swap, result []byte, n transport.Notice, c *transport.Completion) error {
	if err := r.usable(); err != nil {
		return err
	}
	if err := local.CheckCompareSwap(r.size, off, t, compare, swap, result); err != nil {
		return err
	}
	if err := checkNotice(n); err != nil {
		return err
	}
	if r.self != nil {
		return r.local(n, func(m []byte) error { return local.CompareSwapAt(m, off, t, compare, swap, result) })
	}
	size := t.Size()
	h := header{kind: KindCompareSwap, typ: t, key: keyWord(r.key), off: uint64(off)}
	h.setNotice(n)
	var ops [16]byte
	copy(ops[:], compare[:size])
	copy(ops[size:], swap[:size])
	if result == nil {
		return r.o.send(&h, ops[:2*size], nil)
	}
	h.flags = flagFetch
	h.result = uint32(size)
	return r.o.send(&h, ops[:2*size], &call{dst: result[:size], c: c})
}
