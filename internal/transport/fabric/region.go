//go:build fabric

package fabric

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// Regions this endpoint exposes, in a table of slots: a Key names the
// slot and its generation, so a withdrawn region's key never reaches its
// slot's next region.

// exposed is a region this endpoint exposed. Operations the target
// applies itself (atomics, puts to self) hold mu for reading; Unexpose
// takes it for writing.
type exposed struct {
	mu    sync.RWMutex
	mem   []byte
	key   transport.Key
	slot  uint32
	gen   uint32
	mr    uint64 // registration, 0 for an empty region
	dead  bool
	pin   runtime.Pinner
	umu   sync.Mutex
	users map[int]bool // ranks that looked the region up
}

// regionTable is the slot table.
type regionTable struct {
	mu    sync.RWMutex
	slots []*exposed
	gens  []uint32
	free  []freeSlot // oldest first
}

// freeSlot is a slot of a withdrawn region and when it was freed. A
// write's remote CQ data names the slot without its generation, and its
// completion may be handled after the withdrawal (completion order is the
// provider's): a slot is reused only once slotQuarantine passed, so that
// such a notice finds no region rather than the next one.
type freeSlot struct {
	slot uint32
	at   time.Time
}

// slotQuarantine is how long a freed slot stays unused.
const slotQuarantine = time.Second

// Key layout: the remote address of the region's first byte (0 unless
// the provider names memory by virtual address), fi_mr_key, slot,
// generation.
func makeKey(addr, mrKey uint64, slot, gen uint32) transport.Key {
	var k transport.Key
	binary.LittleEndian.PutUint64(k[0:], addr)
	binary.LittleEndian.PutUint64(k[8:], mrKey)
	binary.LittleEndian.PutUint32(k[16:], slot)
	binary.LittleEndian.PutUint32(k[20:], gen)
	return k
}

// splitKey returns what makeKey stored, and whether k could be one.
func splitKey(k transport.Key) (addr, mrKey uint64, slot, gen uint32, ok bool) {
	le := binary.LittleEndian
	addr, mrKey, slot, gen = le.Uint64(k[0:]), le.Uint64(k[8:]), le.Uint32(k[16:]), le.Uint32(k[20:])
	return addr, mrKey, slot, gen, gen != 0 && [8]byte(k[24:]) == [8]byte{}
}

// Expose registers m with the provider for remote reads and writes and
// returns its key. m stays pinned until Unexpose.
func (e *Endpoint) Expose(m []byte) (transport.Key, error) {
	if !e.open() || !e.life.enter() {
		return transport.Key{}, transport.ErrClosed
	}
	defer e.life.exit()
	x := &exposed{mem: m}
	t := &e.regions
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.free) > 0 && time.Since(t.free[0].at) > slotQuarantine {
		x.slot = t.free[0].slot
		t.free = t.free[1:]
	} else {
		x.slot = uint32(len(t.slots))
		t.slots = append(t.slots, nil)
		t.gens = append(t.gens, 0)
	}
	t.gens[x.slot]++
	if t.gens[x.slot] == 0 {
		t.gens[x.slot] = 1
	}
	x.gen = t.gens[x.slot]
	var addr, mrKey uint64
	if len(m) > 0 {
		pin(&x.pin, m)
		var err error
		x.mr, mrKey, err = e.lib.register(m, uint64(x.slot)<<20|uint64(x.gen&0xfffff))
		if err != nil {
			x.pin.Unpin()
			t.free = append(t.free, freeSlot{x.slot, time.Time{}})
			return transport.Key{}, fmt.Errorf("fabric: expose %d bytes: %w", len(m), err)
		}
		if e.attr.mrMode&mrVirtAddr != 0 {
			addr = addrOf(m)
		}
	}
	x.key = makeKey(addr, mrKey, x.slot, x.gen)
	t.slots[x.slot] = x
	return x.key, nil
}

// lookup returns the live region key names, or nil.
func (t *regionTable) lookup(slot, gen uint32) *exposed {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if int(slot) >= len(t.slots) {
		return nil
	}
	x := t.slots[slot]
	if x == nil || x.gen != gen {
		return nil
	}
	return x
}

// lookupSlot returns the live region in slot, or nil.
func (t *regionTable) lookupSlot(slot uint32) *exposed {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if int(slot) >= len(t.slots) {
		return nil
	}
	return t.slots[slot]
}

// byKey returns the live region key names, or nil.
func (t *regionTable) byKey(key transport.Key) *exposed {
	_, _, slot, gen, ok := splitKey(key)
	if !ok {
		return nil
	}
	if x := t.lookup(slot, gen); x != nil && x.key == key {
		return x
	}
	return nil
}

// acquire returns the region (slot, gen) with its lock held for
// reading, or nil.
func (t *regionTable) acquire(slot, gen uint32) *exposed {
	x := t.lookup(slot, gen)
	if x == nil {
		return nil
	}
	x.mu.RLock()
	if x.dead {
		x.mu.RUnlock()
		return nil
	}
	return x
}

// Unexpose withdraws the region: the ranks that looked it up stop their
// handles (Unexpose waits for their acknowledgement, within the timeout),
// then its registration closes, so that nothing reaches the memory.
func (e *Endpoint) Unexpose(key transport.Key) error {
	if !e.open() || !e.life.enter() {
		return transport.ErrClosed
	}
	defer e.life.exit()
	t := &e.regions
	x := t.byKey(key)
	if x == nil {
		return fmt.Errorf("fabric: key %v: %w", key, transport.ErrNoRegion)
	}
	t.mu.Lock()
	if t.slots[x.slot] != x {
		t.mu.Unlock()
		return fmt.Errorf("fabric: key %v: %w", key, transport.ErrNoRegion)
	}
	t.slots[x.slot] = nil
	t.mu.Unlock()
	x.mu.Lock()
	x.dead = true
	x.mu.Unlock()
	e.withdrawHandles(e.rank, key)

	x.umu.Lock()
	users := x.users
	x.users = nil
	x.umu.Unlock()
	var wg sync.WaitGroup
	for r := range users {
		p := e.peers[r]
		if p.err() != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.call(context.Background(), p, &msg{kind: msgWithdraw, slot: x.slot, gen: x.gen}, key[:])
		}()
	}
	wg.Wait()
	err := e.unregister(x)
	t.mu.Lock()
	t.free = append(t.free, freeSlot{x.slot, time.Now()})
	t.mu.Unlock()
	return err
}

// unregister closes x's registration and unpins its memory.
func (e *Endpoint) unregister(x *exposed) error {
	var err error
	if x.mr != 0 {
		err = deregister(x.mr)
		x.mr = 0
	}
	x.pin.Unpin()
	return err
}

// releaseAll releases every region (the endpoint closed).
func (t *regionTable) releaseAll(e *Endpoint) {
	t.mu.Lock()
	slots := t.slots
	t.slots = nil
	t.mu.Unlock()
	for _, x := range slots {
		if x != nil {
			x.mu.Lock()
			x.dead = true
			x.mu.Unlock()
			_ = e.unregister(x)
		}
	}
}

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

// region is a handle on a region of a peer (p set) or of this endpoint
// (self set).
type region struct {
	ep    *Endpoint
	p     *peer
	self  *exposed
	key   transport.Key
	addr  uint64 // remote address of byte 0
	mrKey uint64
	slot  uint32
	gen   uint32
	size  int
	state atomic.Uint32
}

var _ transport.Region = (*region)(nil)

// Region returns a handle on region key of target, of size bytes. For a
// peer's region it asks the peer whether the region exists and is that
// large (ErrNoRegion, ErrBounds if not); the peer then counts this rank
// among the users it withdraws the region from. Handles are cached.
func (e *Endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	p, err := e.peer(target)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("fabric: handle of %d bytes: %w", size, transport.ErrBounds)
	}
	addr, mrKey, slot, gen, ok := splitKey(key)
	if !ok {
		return nil, fmt.Errorf("fabric: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	hk := handleKey{target, key, size}
	e.hmu.Lock()
	h := e.handles[hk]
	e.hmu.Unlock()
	if h != nil && h.usable() == nil {
		return h, nil
	}
	h = &region{ep: e, key: key, addr: addr, mrKey: mrKey, slot: slot, gen: gen, size: size}
	if target == e.rank {
		x := e.regions.byKey(key)
		if x == nil {
			return nil, fmt.Errorf("fabric: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
		}
		if size > len(x.mem) {
			return nil, fmt.Errorf("fabric: handle of %d bytes on a region of %d: %w", size, len(x.mem), transport.ErrBounds)
		}
		h.self = x
		if e.limits != nil {
			// Through libfabric, in order with the native atomics.
			h.p = p
		}
	} else {
		h.p = p
		r, err := e.call(context.Background(), p, &msg{kind: msgLookup, slot: slot, gen: gen, off: uint64(size)}, key[:])
		if err != nil {
			return nil, err
		}
		if err := r.status.err(); err != nil {
			return nil, fmt.Errorf("fabric: key %v of %d bytes at rank %d: %w", key, size, target, err)
		}
	}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if e.handles == nil {
		return nil, transport.ErrClosed
	}
	e.handles[hk] = h
	return h, nil
}

// withdrawHandles stops this endpoint's handles on region key of target.
func (e *Endpoint) withdrawHandles(target int, key transport.Key) {
	e.hmu.Lock()
	defer e.hmu.Unlock()
	for hk, h := range e.handles {
		if hk.target == target && hk.key == key {
			h.stop(hNoRegion)
			delete(e.handles, hk)
		}
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
		return fmt.Errorf("fabric: key %v: %w", r.key, transport.ErrNoRegion)
	}
	if !r.ep.open() {
		return transport.ErrClosed
	}
	if r.p != nil {
		return r.p.err()
	}
	return nil
}

// Size returns the handle's size in bytes.
func (r *region) Size() int { return r.size }

// checkNotice refuses a notice of a kind no target decodes.
func checkNotice(n transport.Notice) error {
	if n.Kind() > transport.NoticeSignal {
		return fmt.Errorf("fabric: notice kind %d: %w", n.Kind(), mem.ErrOp)
	}
	return nil
}

// direct reports whether a put or get on r applies at once, in memory:
// r is this endpoint's own region, and nothing this endpoint issued to
// itself through libfabric (native atomics) is in flight or has a notice
// not yet handled, which the operation's notice would overtake.
func (r *region) direct() bool {
	return r.self != nil && (r.p == nil || (r.p.idle() && r.ep.selfEvents.Load() == 0))
}

// local applies an operation to this endpoint's own region and delivers
// its notice.
func (r *region) local(n transport.Notice, apply func(m []byte) error) error {
	x := r.self
	x.mu.RLock()
	if x.dead {
		x.mu.RUnlock()
		return fmt.Errorf("fabric: key %v: %w", r.key, transport.ErrNoRegion)
	}
	err := apply(x.mem[:r.size])
	x.mu.RUnlock()
	if err == nil && n.Kind() != transport.NoticeNone {
		r.ep.deliver(r.ep.rank, r.key, n, nil)
	}
	return err
}

// Put writes src at off: one fi_write, or one fi_writedata carrying a tag
// or counter notice; another notice follows as a message.
func (r *region) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	if err := r.usable(); err != nil {
		return err
	}
	if off < 0 || len(src) > r.size-off {
		return transport.ErrBounds
	}
	if err := checkNotice(n); err != nil {
		return err
	}
	if r.direct() {
		return r.local(n, func(m []byte) error { return local.PutAt(m, off, src) })
	}
	if err := r.withdrawn(); err != nil {
		return err
	}
	p := r.p
	e := r.ep
	data, withData := uint64(0), false
	// In the CQ data only where completions mean delivery: the order of
	// a write's CQ data and a message is kept by waiting for the
	// completion of the one before (ops.go), which says nothing on
	// arrival otherwise.
	if n.Kind() != transport.NoticeNone && e.attr.cqDataSize >= 8 && e.attr.delivery && len(src) > 0 {
		data, withData = cqData(n, e.rank, r.slot)
	}
	if len(src) > 0 {
		cl := classW
		if withData {
			cl = classD
		}
		o := e.ops.add(p, cl, c, 1)
		o.addr, o.key, o.cq, o.withData = r.addr+uint64(off), r.mrKey, data, withData
		if err := e.source(o, src); err != nil {
			return err
		}
		if err := e.start(p, o, withData); err != nil {
			return err
		}
	}
	if n.Kind() == transport.NoticeNone || withData {
		return nil
	}
	return r.notice(n, c)
}

// notice sends n to the region's rank (with native atomics, this
// endpoint itself for its own region) as a message that arrives after
// everything issued to it before.
func (r *region) notice(n transport.Notice, c *transport.Completion) error {
	return r.ep.sendMsg(r.p, &msg{kind: msgNotice, slot: r.slot, gen: r.gen, notice: n}, nil, c, true)
}

// Get reads len(dst) bytes at off into dst; its notice follows once the
// read completed.
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
	if r.direct() {
		return r.local(n, func(m []byte) error { return local.GetAt(m, off, dst) })
	}
	if err := r.withdrawn(); err != nil {
		return err
	}
	p := r.p
	if len(dst) > 0 {
		e := r.ep
		o := e.ops.add(p, classR, c, 1)
		o.addr, o.key = r.addr+uint64(off), r.mrKey
		if err := e.target(o, dst); err != nil {
			return err
		}
		if err := e.start(p, o, false); err != nil {
			return err
		}
	}
	if n.Kind() == transport.NoticeNone {
		return nil
	}
	return r.notice(n, c)
}

// Accumulate applies op at the target: native atomics if the endpoint
// has them (atomic.go), else in software: a message that the target's
// progress applies with the same code as the local transports, and
// answers.
func (r *region) Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	if err := r.usable(); err != nil {
		return err
	}
	nb, err := local.CheckAccumulate(r.size, off, op, t, src, result)
	if err != nil {
		return err
	}
	if err := checkNotice(n); err != nil {
		return err
	}
	if r.ep.limits != nil {
		return r.nativeAccumulate(off, op, t, src, result, n, c)
	}
	if r.self != nil {
		return r.local(n, func(m []byte) error { return local.AccumulateAt(m, off, op, t, src, result) })
	}
	if op == mem.NoOp {
		src = nil
	}
	m := &msg{kind: msgAcc, a: uint8(op), b: uint8(t), slot: r.slot, gen: r.gen, off: uint64(off), notice: n, n1: uint32(len(src)), n2: uint32(nb)}
	if result != nil {
		m.more = true // the origin wants the previous contents
	}
	if msgHeader+len(src) > msgBufSize || (result != nil && msgHeader+nb > msgBufSize) {
		return r.split(off, op, t, src, result, n, c)
	}
	return r.ep.atomic(r.p, m, src, nil, result, c)
}

// split issues an accumulate too large for one message as several, each
// element still atomic, the notice on the last.
func (r *region) split(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	size := t.Size()
	step := (maxBody / size) * size
	total := len(src)
	if src == nil {
		total = len(result)
	}
	for done := 0; done < total; done += step {
		end := min(done+step, total)
		var s, res []byte
		if src != nil {
			s = src[done:end]
		}
		if result != nil {
			res = result[done:end]
		}
		nn := transport.Notice{}
		if end == total {
			nn = n
		}
		m := &msg{kind: msgAcc, a: uint8(op), b: uint8(t), slot: r.slot, gen: r.gen, off: uint64(off + done), notice: nn, n1: uint32(len(s)), n2: uint32(end - done), more: res != nil}
		if err := r.ep.atomic(r.p, m, s, nil, res, c); err != nil {
			return err
		}
	}
	return nil
}

// CompareSwap swaps at the target: a native atomic, or in software.
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
	if r.ep.limits != nil {
		return r.nativeCompareSwap(off, t, compare, swap, result, n, c)
	}
	if r.self != nil {
		return r.local(n, func(m []byte) error { return local.CompareSwapAt(m, off, t, compare, swap, result) })
	}
	size := t.Size()
	m := &msg{kind: msgCas, b: uint8(t), slot: r.slot, gen: r.gen, off: uint64(off), notice: n, n1: uint32(size), more: result != nil}
	var res []byte
	if result != nil {
		res = result[:size]
	}
	return r.ep.atomic(r.p, m, compare[:size], swap[:size], res, c)
}
