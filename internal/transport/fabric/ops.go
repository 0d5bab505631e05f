//go:build fabric

package fabric

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Operations in flight. Each has a number, its libfabric context; the
// table maps numbers back to operations when their completions come.
// An operation that waits for a reply (a software atomic, a control call)
// is finished by two events, its send's completion and the reply, in
// either order.

// class is what kind of libfabric operation an op is, for the provider's
// ordering rules (msg_order).
type class uint8

const (
	classW  class = iota // RMA write
	classD               // RMA write with remote CQ data
	classR               // RMA read
	classS               // message
	classAW              // native atomic that writes (and may fetch)
	classAR              // native atomic that only reads (NoOp fetch)
	nclass
)

var classNames = [nclass]string{"write", "write", "read", "send", "atomic", "atomic read"}

// orderBits[x][y] is the msg_order bit that keeps an x issued after a y
// in order at the target. msg_order orders where data lands, not the
// target's completion queue (comp_order): a write's remote CQ data and a
// message each become a completion there, and nothing keeps those two
// kinds in order, so neither passes the other in flight.
//
// Native atomics keep issue order among themselves only (accumulates
// from one origin to one target apply in issue order; a put and an
// accumulate are not ordered): one that writes after one that writes
// needs the write and the fetched value ordered, a read-only one after a
// writer its read, a writer after a read-only one that read's; two reads
// need nothing. A notice after an atomic waits for its completion.
// Entries that need all of several bits list them all.
var orderBits = [nclass][nclass]uint64{
	classW:  {classW: orderWAW, classD: orderWAW, classR: orderWAR, classS: orderWAS},
	classD:  {classW: orderWAW, classD: orderWAW, classR: orderWAR},
	classR:  {classW: orderRAW, classD: orderRAW, classR: orderRAR, classS: orderRAS},
	classS:  {classW: orderSAW, classR: orderSAR, classS: orderSAS},
	classAW: {classAW: orderAtomicWAW | orderAtomicRAW, classAR: orderAtomicWAR},
	classAR: {classAW: orderAtomicRAW},
}

// unordered[x][y] is true where an x need not arrive after a y issued
// before it.
var unordered = func() (u [nclass][nclass]bool) {
	for _, x := range []class{classAW, classAR} {
		for _, y := range []class{classW, classD, classR, classS} {
			u[x][y] = true
		}
	}
	u[classAR][classAR] = true
	return u
}()

// op is one operation in flight. Ops are recycled: a completion or a
// reply finds its op by number, and a number is never reused.
type op struct {
	id     uint64
	target int
	peer   *peer
	class  class
	c      *transport.Completion
	pin    runtime.Pinner
	pinned bool
	mr     uint64 // the local registration of a pinned buffer
	desc   uint64 // and its descriptor
	waits  int    // events still to come: 1, or 2 with a reply
	done   bool   // c was told
	err    error

	// What to issue (issue): an RMA write of data (with remote CQ data
	// cq if withData), a read into data, or a send of the C buffer buf.
	data     []byte
	addr     uint64
	key      uint64
	cq       uint64
	withData bool
	inject   bool
	small    *[smallData]byte // a small write's data, copied (memory free of Go pointers, as cgo wants)
	buf      cbuf             // a send's message, or a write's, read's or atomic's bounce buffer
	out      []byte           // what a read or fetching atomic returns, in buf
	dst      []byte           // where out goes at completion
	cmp      []byte           // a compare-and-swap's compare value, in buf

	// A native atomic: its kind, libfabric operation and datatype, and
	// how many elements of data it applies.
	akind, aop, adt int
	count           int
	n               int    // a send's length
	seq             uint32 // a send's number, once issued (numbered)
	numbered        bool
	ordered         bool // queued behind the operations before it (a notice)
	lazy            bool // a write that completes when sent; delivered once a confirm after it completes
	confirm         bool // a confirm: one word written with delivery completion
	// covers, of a confirm, counts the lazy writes (classW) and writes
	// with data (classD) issued before it that its completion confirms.
	covers   [classD + 1]int
	local    bool // counted in peer.local until told
	expects  bool // a reply will come (waits started at 2)
	answered bool // the reply came

	// result receives a reply's payload (a fetching atomic's old value).
	result []byte
	// reply, if not nil, gets a reply's status and payload (a call).
	reply chan reply
}

// reply is the answer to a call.
type reply struct {
	status  status
	payload []byte
}

// spareOps is how many recycled ops an endpoint keeps; it starts with
// half as many.
const spareOps = 1024

// opTable holds the operations in flight in numbered slots: an op's
// number is its slot and the slot's generation.
type opTable struct {
	mu    sync.Mutex
	slots []*op
	gens  []uint32
	free  []uint32
	spare []*op // recycled ops
}

// add registers a new operation to p of class cl, told through c.
func (t *opTable) add(p *peer, cl class, c *transport.Completion, waits int) *op {
	t.mu.Lock()
	var o *op
	if k := len(t.spare); k > 0 {
		o = t.spare[k-1]
		t.spare = t.spare[:k-1]
	} else {
		o = new(op)
	}
	var slot uint32
	if k := len(t.free); k > 0 {
		slot = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		slot = uint32(len(t.slots))
		t.slots = append(t.slots, nil)
		t.gens = append(t.gens, 0)
	}
	// A generation of 30 bits, never 0: an op's number stays below the
	// receive buffers' contexts (recvCtx) and is never 0 (remote events).
	t.gens[slot] = (t.gens[slot] + 1) & (1<<30 - 1)
	if t.gens[slot] == 0 {
		t.gens[slot] = 1
	}
	o.id = uint64(t.gens[slot])<<32 | uint64(slot)
	o.target, o.peer, o.class, o.c, o.waits, o.expects = p.rank, p, cl, c, waits, waits == 2
	t.slots[slot] = o
	t.mu.Unlock()
	p.inflight.Add(1)
	if !p.known.Load() {
		p.known.Store(true) // watched by the heartbeat from now on
	}
	if c != nil {
		c.Add(1)
	}
	return o
}

// get returns the operation numbered id, or nil.
func (t *opTable) get(id uint64) *op {
	slot := uint32(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(slot) < len(t.slots) {
		if o := t.slots[slot]; o != nil && o.id == id {
			return o
		}
	}
	return nil
}

// recycle forgets o and keeps it for reuse; nothing refers to it any
// more.
func (t *opTable) recycle(o *op) {
	t.mu.Lock()
	defer t.mu.Unlock()
	slot := uint32(o.id)
	if int(slot) < len(t.slots) && t.slots[slot] == o {
		t.slots[slot] = nil
		t.free = append(t.free, slot)
	}
	*o = op{pin: o.pin, small: o.small} // (dispose unpinned it)
	if len(t.spare) < spareOps {
		t.spare = append(t.spare, o)
	}
}

// tell tells o's Completion (once) that o ended with err.
func (t *opTable) tell(o *op, err error) { t.tellID(o, 0, err) }

// tellID is tell of o if its number is still id (0: any). A caller that
// found o under the lock and tells it after releasing it (failPeer)
// passes the number it saw: meanwhile o may have ended, been recycled and
// been issued again, as another operation, which is not its to fail.
// Everything of o that the telling needs is read under the lock.
func (t *opTable) tellID(o *op, id uint64, err error) {
	t.mu.Lock()
	if o.done || (id != 0 && o.id != id) {
		t.mu.Unlock()
		return
	}
	o.done = true
	c, r, p := o.c, o.reply, o.peer
	if o.local {
		p.local.Add(-1)
	}
	t.mu.Unlock()
	p.inflight.Add(-1)
	if r != nil && err != nil {
		select {
		case r <- reply{status: statusErr, payload: []byte(err.Error())}:
		default:
		}
	}
	if c != nil {
		c.Done(err)
	}
}

// failPeer fails the operations aimed at rank with err. Those issued stay
// in the table until libfabric is done with their buffers.
func (t *opTable) failPeer(rank int, err error) {
	type seen struct {
		o  *op
		id uint64
	}
	t.mu.Lock()
	var fail []seen
	for _, o := range t.slots {
		if o != nil && o.target == rank && !o.done {
			fail = append(fail, seen{o, o.id})
		}
	}
	t.mu.Unlock()
	for _, f := range fail {
		t.tellID(f.o, f.id, err)
	}
}

// failAll fails every operation with err and releases its buffers: the
// libfabric endpoint is shut, nothing will complete.
func (e *Endpoint) failAll(err error) {
	t := &e.ops
	t.mu.Lock()
	all := t.slots
	t.slots, t.gens, t.free = nil, nil, nil
	t.mu.Unlock()
	for _, o := range all {
		if o == nil {
			continue
		}
		t.tell(o, err)
		e.unpin(o)
		if o.buf.p != nil {
			e.freeBuf(o.buf)
		}
	}
}

// mayGo reports whether an operation of class cl to p, issued now,
// arrives after every operation in flight to p. p.omu is held.
func (e *Endpoint) mayGo(p *peer, cl class) bool {
	for y := range nclass {
		if p.pending[y] == 0 || unordered[cl][y] {
			continue
		}
		if bits := orderBits[cl][y]; bits == 0 || e.attr.msgOrder&bits != bits {
			return false
		}
	}
	return true
}

// start issues o to p now. With ordered, o must arrive after everything
// issued to p before it (it carries a notice): it waits in p's queue
// until the provider's order or the completion of those operations
// allows it, and so does everything issued to p after it. An error means
// o was not issued and its Completion was told.
func (e *Endpoint) start(p *peer, o *op, ordered bool) error {
	if !e.life.enter() {
		e.ops.tell(o, transport.ErrClosed)
		e.dispose(o)
		return transport.ErrClosed
	}
	defer e.life.exit()
	if o.holdsCaller() {
		e.ops.mu.Lock()
		if !o.done {
			o.local = true
			p.local.Add(1)
		}
		e.ops.mu.Unlock()
	}
	p.omu.Lock()
	defer p.omu.Unlock()
	// Behind a queued notice everything waits, in order: accumulates
	// must apply in issue order, and the notice must not wait for
	// operations issued after it.
	if len(p.queue) > 0 || (ordered && !e.mayGo(p, o.class)) {
		o.ordered = ordered
		p.queue = append(p.queue, o)
		e.confirmQueued(p)
		return nil
	}
	return e.issueLocked(p, o)
}

// Lazy writes. Where the provider completes operations on delivery
// (FI_DELIVERY_COMPLETE), a write asking for it costs the target an
// acknowledgement and the origin a wait for it: on tcp;ofi_rxm, twice
// the latency of a write that completes when sent. So writes complete
// when sent (lazy), and where delivery matters (a Flush, a notice that
// must come after them) the origin confirms them: one word written with
// delivery completion into the target's confirm word. The provider keeps
// writes in issue order (FI_ORDER_WAW), so the confirm's delivery is that
// of every write before it: the order a write with remote CQ data relies
// on already, to arrive after the writes before it (orderBits). Until a
// confirm after it completes, a lazy write counts as pending, as a write
// asking for delivery counts until its completion: Flush and the
// ordering of notices (mayGo) see no difference.
//
// The first write to a peer after a Flush still asks for delivery: where
// a Flush follows each write (the ping-pong of the Notified Access paper,
// a lock epoch of one put), the write's own acknowledgement then serves
// the Flush, which a confirm would double. The writes after it, a
// stream, are lazy.

// lazyTo reports whether a write to p completes when sent.
func (e *Endpoint) lazyTo(p *peer) bool {
	return e.lazy && p.confirmable && p.rank != e.rank
}

// confirmQueued issues a confirm if the head of p's queue waits and lazy
// writes are unconfirmed: they may be what it waits for. p.omu is held.
func (e *Endpoint) confirmQueued(p *peer) {
	if len(p.queue) > 0 && p.queue[0].ordered && !e.mayGo(p, p.queue[0].class) {
		e.confirmLocked(p)
	}
}

// confirm issues a confirm to p if writes to it are unconfirmed.
func (e *Endpoint) confirm(p *peer) {
	p.omu.Lock()
	defer p.omu.Unlock()
	e.confirmLocked(p)
}

// confirmLocked is confirm with p.omu held.
func (e *Endpoint) confirmLocked(p *peer) {
	if p.unconfirmed == [classD + 1]int{} {
		return
	}
	o := e.ops.add(p, classW, nil, 1)
	o.confirm = true
	o.addr, o.key = p.confirmAddr, p.confirmKey
	if err := e.source(o, confirmWord[:]); err != nil {
		return // o was told and dropped; the writes stay unconfirmed, and their peer fails their wait
	}
	_ = e.issueLocked(p, o)
}

// confirmWord is what a confirm writes.
var confirmWord [8]byte

// countIssue counts o, issued (n = 1) or not after all (n = -1).
func (e *Endpoint) countIssue(o *op, n int) {
	if o.confirm {
		e.confirms.Add(uint64(n))
		return
	}
	e.counts[o.class].Add(uint64(n))
}

// issue hands o to libfabric; p.omu is held.
func (e *Endpoint) issue(p *peer, o *op) int {
	desc := o.descriptor()
	switch o.class {
	case classW, classD:
		e.regs.check("write", o.data, desc, o.inject)
		return e.lib.write(o.data, desc, p.rank, o.addr, o.key, o.cq, o.withData, o.inject, !o.lazy, o.id)
	case classR:
		e.regs.check("read", o.data, desc, false)
		return e.lib.read(o.data, desc, p.rank, o.addr, o.key, o.id)
	case classAW, classAR:
		e.regs.check("atomic source", o.data, desc, false)
		e.regs.check("atomic compare", o.cmp, desc, false)
		e.regs.check("atomic result", o.out, desc, false)
		return e.lib.atomic(o.akind, o.aop, o.adt, o.data, o.cmp, o.out, desc, o.count, p.rank, o.addr, o.key, o.id)
	}
	if !o.numbered {
		// Numbered in the order issued, once.
		p.sendSeq++
		o.seq, o.numbered = p.sendSeq, true
		binary.LittleEndian.PutUint32(o.buf.b[seqAt:], o.seq)
	}
	e.regs.check("send", o.buf.b[:o.n], desc, false)
	ret := e.lib.send(o.buf.b[:o.n], desc, p.rank, false, o.id)
	if ret != 0 && ret != errAgain {
		// A number the target will never see would hold back every
		// later message: the peer is lost to this endpoint.
		e.fail(p, fmt.Errorf("fabric: send to rank %d: %s: %w", p.rank, strerror(ret), transport.ErrPeer))
	}
	return ret
}

// issueLocked issues o, retrying while the provider has no room; p.omu
// is held.
func (e *Endpoint) issueLocked(p *peer, o *op) error {
	if p.rank == e.rank && (o.class == classS || o.class == classD) {
		e.selfEvents.Add(1) // before the target can see it
	}
	p.pending[o.class]++
	e.countIssue(o, 1) // before its completion can be seen
	switch {
	case o.confirm:
		o.covers, p.unconfirmed = p.unconfirmed, [classD + 1]int{}
	case o.class == classW || o.class == classD:
		o.lazy = e.lazyTo(p) && p.sinceFlush > 0
		p.sinceFlush++
		if o.lazy {
			p.unconfirmed[o.class]++
		}
	}
	var deadline time.Time
	for {
		ret := e.issue(p, o)
		if ret == 0 {
			return nil
		}
		if ret != errAgain {
			return e.abort(p, o, fmt.Errorf("fabric: %s to rank %d: %s: %w", classNames[o.class], p.rank, strerror(ret), transport.ErrPeer))
		}
		if err := p.err(); err != nil {
			return e.abort(p, o, err)
		}
		if !e.open() {
			return e.abort(p, o, transport.ErrClosed)
		}
		// The provider needs its completions read before it takes more.
		e.prog.reap(e)
		if deadline.IsZero() {
			deadline = time.Now().Add(e.timeout)
		} else if time.Now().After(deadline) {
			err := fmt.Errorf("fabric: rank %d took no operation for %v: %w", p.rank, e.timeout, transport.ErrPeer)
			e.abort(p, o, err)
			e.fail(p, err)
			return err
		}
		runtime.Gosched()
	}
}

// abort undoes the issue of o, which failed with err.
func (e *Endpoint) abort(p *peer, o *op, err error) error {
	if p.rank == e.rank && (o.class == classS || o.class == classD) {
		e.selfEvents.Add(-1)
	}
	p.pending[o.class]--
	e.countIssue(o, -1)
	switch {
	case o.confirm:
		for cl, n := range o.covers {
			p.unconfirmed[cl] += n
		}
	case o.lazy:
		p.unconfirmed[o.class]--
	}
	if !o.confirm && (o.class == classW || o.class == classD) {
		p.sinceFlush--
	}
	e.ops.tell(o, err)
	e.dispose(o)
	return err
}

// dispose releases o's buffers and recycles o.
func (e *Endpoint) dispose(o *op) {
	e.unpin(o)
	if o.buf.p != nil {
		e.sbuf.put(o.buf)
		o.buf = cbuf{}
	}
	e.ops.recycle(o)
}

// holdsCaller reports whether o, about to start, still uses the caller's
// memory or owes it a result: a pinned buffer, a read's or a fetch's
// destination. Other operations copied what they need when issued.
func (o *op) holdsCaller() bool { return o.pinned || o.dst != nil || o.result != nil }

// smallData is the most data an op holds itself.
const smallData = 64

// source sets the data of o, a write, to src, copied at once (o may wait
// in a queue, and src is the caller's again when Put returns): into o,
// for the provider to inject, if that small, else into a C buffer; a
// source larger than a buffer is pinned (and registered if need be), and
// must stay unchanged until the write completes. (libfabric never gets a
// pointer to Go memory that may hold Go pointers: cgo forbids it, and a
// caller's bytes may be part of anything.) If that fails, o is told the
// error and dropped.
func (e *Endpoint) source(o *op, src []byte) error {
	switch {
	case len(src) <= min(e.attr.injectSize, smallData):
		if o.small == nil {
			o.small = new([smallData]byte)
		}
		o.data, o.inject = o.small[:copy(o.small[:], src)], true
	case len(src) <= msgBufSize:
		if err := e.bounce(o); err != nil {
			return err
		}
		o.data = o.buf.b[:copy(o.buf.b, src)]
	default:
		return e.pinData(o, src)
	}
	return nil
}

// target sets where o, a read, puts its data: a C buffer copied out at
// completion, or dst itself, pinned (and registered if need be), if
// larger than one. If that fails, o is told the error and dropped.
func (e *Endpoint) target(o *op, dst []byte) error {
	if len(dst) > msgBufSize {
		return e.pinData(o, dst)
	}
	if err := e.bounce(o); err != nil {
		return err
	}
	o.data, o.dst = o.buf.b[:len(dst)], dst
	o.out = o.data
	return nil
}

// pinData makes b, pinned, o's data.
func (e *Endpoint) pinData(o *op, b []byte) error {
	pin(&o.pin, b)
	o.data, o.pinned = b, true
	if err := e.registerOp(o); err != nil {
		e.ops.tell(o, err)
		e.dispose(o)
		return err
	}
	return nil
}

// completed handles the completion of o's libfabric operation (err from
// the completion queue, nil if it succeeded).
func (e *Endpoint) completed(o *op, err error) {
	p := o.peer
	e.unpin(o)
	if o.dst != nil && err == nil {
		e.ops.mu.Lock()
		if !o.done { // else failed with its peer: dst is the caller's again
			copy(o.dst, o.out)
		}
		e.ops.mu.Unlock()
	}
	e.ops.mu.Lock()
	if err != nil && o.err == nil {
		o.err = err
		o.waits = 1 // no reply will come, and one that does is ignored
		o.answered = true
	}
	o.waits--
	last := o.waits == 0
	e.ops.mu.Unlock()
	e.release(p, o)
	if last {
		e.finish(o)
	}
}

// replied handles the reply to o.
func (e *Endpoint) replied(o *op, st status, payload []byte) {
	e.ops.mu.Lock()
	if !o.expects || o.answered {
		// A reply to an op that asked nothing, or a second one: a
		// confused peer; the op goes on as if it had not come.
		e.ops.mu.Unlock()
		return
	}
	o.answered = true
	if err := st.err(); err != nil && o.err == nil {
		o.err = fmt.Errorf("fabric: rank %d: %w", o.target, err)
	}
	if o.result != nil && !o.done {
		copy(o.result, payload)
	}
	r := o.reply
	o.waits--
	last := o.waits == 0
	e.ops.mu.Unlock()
	if r != nil {
		select {
		case r <- reply{status: st, payload: append([]byte(nil), payload...)}:
		default:
		}
	}
	if last {
		e.finish(o)
	}
}

// finish ends o: its Completion is told.
func (e *Endpoint) finish(o *op) {
	e.ops.tell(o, o.err)
	e.dispose(o)
}

// release records the completion of o, an operation to p, and issues
// the queued notices that may now go. A lazy write stays pending until a
// confirm after it completes.
func (e *Endpoint) release(p *peer, o *op) {
	p.omu.Lock()
	defer p.omu.Unlock()
	switch {
	case o.lazy:
		return
	case o.confirm:
		p.pending[classW] -= 1 + o.covers[classW]
		p.pending[classD] -= o.covers[classD]
	default:
		p.pending[o.class]--
	}
	defer e.confirmQueued(p)
	for len(p.queue) > 0 && (!p.queue[0].ordered || e.mayGo(p, p.queue[0].class)) {
		o := p.queue[0]
		// Shift down rather than reslice: the queue keeps its array,
		// and a steady stream of queued notices allocates nothing.
		n := copy(p.queue, p.queue[1:])
		p.queue[n] = nil
		p.queue = p.queue[:n]
		if err := p.err(); err != nil {
			e.ops.tell(o, err)
			e.dispose(o)
			continue
		}
		_ = e.issueLocked(p, o)
	}
}

// dropQueue fails the notices waiting in p's queue with err.
func (e *Endpoint) dropQueue(p *peer, err error) {
	p.omu.Lock()
	q := p.queue
	p.queue = nil
	p.omu.Unlock()
	for _, o := range q {
		e.ops.tell(o, err)
		e.dispose(o)
	}
}

// idle reports whether nothing issued to p is in flight or queued.
func (p *peer) idle() bool {
	p.omu.Lock()
	defer p.omu.Unlock()
	return p.pending == [nclass]int{} && len(p.queue) == 0
}
