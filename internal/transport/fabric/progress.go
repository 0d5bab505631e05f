//go:build fabric

package fabric

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/sys"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// Progress: libfabric's providers progress manually, when their
// completion queue is read. Whoever waits polls it (Poll); a goroutine
// per endpoint polls it otherwise, sleeping on the queue's wait
// descriptor where the provider has one. One goroutine at a time handles
// completions (drain), so handlers run in the queue's order; a goroutine
// that must make the provider progress while another drains (an issue
// that found the provider full, from inside a handler perhaps) reads the
// queue into the backlog, which the drain handles first.

// maxEarly bounds the messages a target keeps from one source while it
// waits for one before them; a source past it has lost one, or lies, and
// is failed.
const maxEarly = 4096

// maxAM bounds an active message (header and payload) that arrives in
// fragments.
const maxAM = 1 << 40

// recvBuffers is how many receive buffers an endpoint keeps posted.
const recvBuffers = 32

// recvCtx marks the contexts of receive buffers: recvCtx+i is buffer i.
const recvCtx = 1 << 62

type progress struct {
	drain   sync.Mutex
	cqmu    sync.Mutex
	backlog []comp          // read from the queue, not yet handled; under cqmu
	batch   [compBatch]comp // what one read of the queue gives; under cqmu
	work    []comp          // what the drain handles; under drain
	scratch []byte          // the result of an atomic applied here; under drain
	recv    []cbuf

	smu     sync.Mutex
	selfq   []func() // active messages to self, handled by the drain
	selfN   atomic.Int32
	polled  atomic.Int64 // when a waiter last polled (UnixNano), 0 once it parked
	on      atomic.Bool
	paused  atomic.Bool // in tests: the background goroutine does not poll
	quit    chan struct{}
	stopped chan struct{}
}

// start posts the receive buffers and starts the background goroutine.
func (pr *progress) start(e *Endpoint) error {
	pr.recv = make([]cbuf, 0, recvBuffers)
	for i := range recvBuffers {
		b, err := e.newBuf(msgBufSize)
		if err != nil {
			return err
		}
		pr.recv = append(pr.recv, b)
		if ret := e.lib.recv(b.b, b.desc, recvCtx+uint64(i)); ret != 0 {
			return &libError{"fi_recv", ret}
		}
	}
	pr.quit = make(chan struct{})
	pr.stopped = make(chan struct{})
	pr.on.Store(true)
	go pr.loop(e)
	return nil
}

// running reports whether the background goroutine runs.
func (pr *progress) running() bool { return pr.on.Load() }

// stop ends the background goroutine and waits for it.
func (pr *progress) stop() {
	if pr.on.Swap(false) {
		close(pr.quit)
		<-pr.stopped
	}
}

// free releases the receive buffers (the libfabric endpoint is shut).
func (pr *progress) free(e *Endpoint) {
	for _, b := range pr.recv {
		e.freeBuf(b)
	}
	pr.recv = nil
}

// loop polls while there is something, and otherwise waits.
func (pr *progress) loop(e *Endpoint) {
	defer close(pr.stopped)
	idle := 0
	for {
		select {
		case <-pr.quit:
			return
		default:
		}
		if pr.paused.Load() {
			time.Sleep(time.Millisecond)
			continue
		}
		if e.drainOnce(nil) {
			idle = 0
			continue
		}
		idle++
		switch {
		case idle < 16:
			runtime.Gosched()
		case time.Now().UnixNano()-pr.polled.Load() < int64(waiterActive):
			// A waiter polls: it delivers, and a thread woken by every
			// packet would only take the processor from it.
			time.Sleep(waiterActive / 4)
		case e.attr.waitFD >= 0 && e.lib.trywait():
			sys.WaitReadable(e.attr.waitFD, 2*time.Millisecond)
		default:
			time.Sleep(time.Duration(min(idle, 200)) * time.Microsecond)
		}
	}
}

// idleWait is how a waiter of this package waits between polls that
// found nothing, since start: it yields for a network round trip or
// two, then sleeps a little between polls.
func (pr *progress) idleWait(start time.Time) {
	if time.Since(start) < spinFor {
		runtime.Gosched()
		return
	}
	time.Sleep(20 * time.Microsecond)
}

// spinFor is how long a waiter polls before it sleeps between polls.
const spinFor = 200 * time.Microsecond

// reap reads the completion queue into the backlog without handling
// anything: the provider progresses.
func (pr *progress) reap(e *Endpoint) {
	pr.cqmu.Lock()
	defer pr.cqmu.Unlock()
	if n := e.lib.poll(&pr.batch); n > 0 {
		pr.backlog = append(pr.backlog, pr.batch[:n]...)
	}
}

// self queues f, an active message to self, for the drain.
func (pr *progress) self(e *Endpoint, f func()) {
	pr.smu.Lock()
	pr.selfq = append(pr.selfq, f)
	pr.selfN.Add(1)
	pr.smu.Unlock()
	// If another goroutine drains, it looks at the queue after it let go.
	if pr.drain.TryLock() {
		pr.runSelf()
		pr.drain.Unlock()
		pr.afterDrain(e)
	}
}

// runSelf runs the queued messages to self; drain is held.
func (pr *progress) runSelf() bool {
	if pr.selfN.Load() == 0 {
		return false
	}
	pr.smu.Lock()
	q := pr.selfq
	pr.selfq = nil
	pr.selfN.Store(0)
	pr.smu.Unlock()
	for _, f := range q {
		f()
	}
	return len(q) > 0
}

// afterDrain runs messages to self queued while the drain was held.
func (pr *progress) afterDrain(e *Endpoint) {
	for pr.selfN.Load() > 0 && pr.drain.TryLock() {
		pr.runSelf()
		pr.drain.Unlock()
	}
}

// waiterActive is how recently a waiter must have polled for the
// background goroutine to leave the completion queue to it.
const waiterActive = time.Millisecond

// Poll handles what had arrived (a few batches at most) and reports
// whether there was anything.
func (e *Endpoint) Poll() bool {
	e.prog.polled.Store(time.Now().UnixNano())
	return e.drainOnce(nil)
}

// PollNotices is Poll, except that notices go to t, and it stops after
// the one for which t reports done.
func (e *Endpoint) PollNotices(t transport.NoticeTaker) bool {
	e.prog.polled.Store(time.Now().UnixNano())
	return e.drainOnce(t)
}

// Yield gives the processor to other goroutines and threads.
func (e *Endpoint) Yield() {
	runtime.Gosched()
}

// Park tells the background goroutine that the waiters stopped polling:
// it waits on the completion queue's descriptor again, so that an arrival
// is handled at once.
func (e *Endpoint) Park() { e.prog.polled.Store(0) }

// drainOnce takes the drain, handles the backlog and up to four batches
// of the queue, and reports whether it handled anything.
func (e *Endpoint) drainOnce(t transport.NoticeTaker) bool {
	pr := &e.prog
	if !pr.on.Load() || !e.life.enter() {
		return false
	}
	defer e.life.exit()
	pr.drain.Lock()
	any := pr.runSelf()
	for round := 0; round < 4; round++ {
		pr.cqmu.Lock()
		work := append(pr.work[:0], pr.backlog...)
		pr.backlog = pr.backlog[:0]
		if len(work) == 0 {
			if n := e.lib.poll(&pr.batch); n > 0 {
				work = append(work, pr.batch[:n]...)
			}
		}
		pr.cqmu.Unlock()
		pr.work = work
		if len(work) == 0 {
			break
		}
		any = true
		done := false
		for i := range work {
			if e.dispatch(&work[i], t) {
				done, t = true, nil
			}
		}
		if done {
			break
		}
	}
	pr.drain.Unlock()
	pr.afterDrain(e)
	return any
}

// dispatch handles one completion, notices to t if not nil, and reports
// whether t said done.
func (e *Endpoint) dispatch(c *comp, t transport.NoticeTaker) bool {
	id := compCtx(c)
	code, perr := compErr(c)
	switch {
	case id >= recvCtx:
		i := int(id - recvCtx)
		if code != 0 || i >= len(e.prog.recv) {
			return false // cancelled at close
		}
		b := e.prog.recv[i]
		done := e.handleMsg(b.b[:compLen(c)], t)
		if ret := e.lib.recv(b.b, b.desc, id); ret != 0 && e.open() {
			// A buffer fewer: messages still arrive through the others.
			_ = ret
		}
		return done
	case id == 0:
		if code != 0 || compFlags(c)&flagRemoteCQData == 0 {
			return false
		}
		n, src, slot, ok := fromCQData(compData(c))
		if !ok || src >= e.size || (src == e.rank && e.limits == nil) {
			return false // (operations on its own regions go through libfabric only with native atomics)
		}
		if src == e.rank {
			defer e.selfEvents.Add(-1)
		}
		e.peers[src].heard()
		x := e.regions.lookupSlot(slot)
		if x == nil {
			return false
		}
		return e.deliver(src, x.key, n, t)
	}
	o := e.ops.get(id)
	if o == nil {
		return false
	}
	var err error
	if code != 0 {
		err = e.opError(o, code, perr)
	}
	e.completed(o, err)
	return false
}

// opError is the error of o, which failed with libfabric error code.
func (e *Endpoint) opError(o *op, code, perr int) error {
	p := e.peers[o.target]
	switch syscall.Errno(code) {
	case syscall.ECANCELED:
		return transport.ErrClosed
	case syscall.EACCES, syscall.EKEYREJECTED, syscall.EFAULT, syscall.EINVAL, syscall.EREMOTEIO:
		return fmt.Errorf("fabric: %s at rank %d refused: %s: %w", classNames[o.class], o.target, strerror(code), transport.ErrNoRegion)
	}
	err := fmt.Errorf("fabric: %s to rank %d failed: %s (provider error %d): %w", classNames[o.class], o.target, strerror(code), perr, transport.ErrPeer)
	e.fail(p, err)
	return err
}

// deliver gives a notice to t, or to the notice handler, and reports
// whether t said done.
func (e *Endpoint) deliver(src int, key transport.Key, n transport.Notice, t transport.NoticeTaker) bool {
	if t != nil {
		return t(src, key, n)
	}
	if f := e.Notice(); f != nil {
		f(src, key, n)
	}
	return false
}

// handleAM runs the active-message handler.
func (e *Endpoint) handleAM(src int, id transport.AMID, hdr, payload []byte) {
	if f := e.AM(id); f != nil {
		f(src, hdr, payload)
	}
}

// handleMsg handles a message and those that waited for it, in the
// order their source sent them, and reports whether t said done. The
// message names its source: the provider need not (FI_SOURCE).
func (e *Endpoint) handleMsg(b []byte, t transport.NoticeTaker) bool {
	var m msg
	body, err := m.decode(b)
	if err != nil {
		return false
	}
	src := int(m.src)
	if src >= e.size || (src == e.rank && e.limits == nil) {
		return false
	}
	p := e.peers[src]
	p.heard()
	if m.seq != p.recvSeq+1 {
		// Messages complete out of order (a large one that the provider
		// fetches by rendezvous after a small one behind it): keep it
		// until those before it came.
		if d := m.seq - p.recvSeq; d > 0 && d < 1<<31 {
			if len(p.early) >= maxEarly {
				e.fail(p, fmt.Errorf("fabric: rank %d: %d messages arrived before the one they follow: %w", src, len(p.early), transport.ErrPeer))
				p.early = nil
				return false
			}
			if p.early == nil {
				p.early = make(map[uint32][]byte)
			}
			p.early[m.seq] = append([]byte(nil), b...)
		}
		return false
	}
	done := false
	for {
		p.recvSeq++
		if e.handle(p, &m, body, t) {
			done, t = true, nil
		}
		if src == e.rank {
			e.selfEvents.Add(-1)
		}
		next, ok := p.early[p.recvSeq+1]
		if !ok {
			return done
		}
		delete(p.early, p.recvSeq+1)
		if body, err = m.decode(next); err != nil {
			return done
		}
	}
}

// handle handles message m from p.
func (e *Endpoint) handle(p *peer, m *msg, body []byte, t transport.NoticeTaker) bool {
	src := p.rank
	switch m.kind {
	case msgAM, msgFrag:
		e.handleFragment(p, m, body)
	case msgNotice:
		x := e.regions.acquire(m.slot, m.gen)
		if x == nil {
			return false
		}
		key := x.key
		x.mu.RUnlock()
		return e.deliver(src, key, m.notice, t)
	case msgAcc, msgCas:
		key, ok := e.applyAtomic(p, m, body)
		if ok && m.notice.Kind() != transport.NoticeNone {
			return e.deliver(src, key, m.notice, t)
		}
	case msgReply:
		if o := e.ops.get(m.id); o != nil && o.target == src {
			e.replied(o, status(m.a), body)
		}
	case msgLookup:
		st := statusOK
		if x := e.regions.acquire(m.slot, m.gen); x == nil || len(body) != len(x.key) || [32]byte(body) != x.key {
			if x != nil {
				x.mu.RUnlock()
			}
			st = statusNoRegion
		} else {
			if m.off > uint64(len(x.mem)) {
				st = statusBounds
			} else {
				x.umu.Lock()
				if x.users == nil {
					x.users = make(map[int]bool)
				}
				x.users[src] = true
				x.umu.Unlock()
			}
			x.mu.RUnlock()
		}
		e.answer(p, m, st, nil)
	case msgWithdraw:
		if len(body) == len(transport.Key{}) {
			e.withdrawHandles(src, transport.Key(body))
		}
		e.answer(p, m, statusOK, nil)
	case msgFlush:
		e.answer(p, m, statusOK, nil)
	case msgPing:
		if p.err() == nil && e.open() {
			_ = e.sendMsg(p, &msg{kind: msgPong}, nil, nil, false)
		}
	case msgPong:
		// Heard (handleMsg).
	case msgBye:
		e.answer(p, m, statusOK, nil)
		err := closedPeer(src)
		if p.setErr(err) {
			e.ops.failPeer(src, err)
			e.dropQueue(p, err)
		}
	}
	return false
}

// handleFragment joins the fragments of an active message and runs its
// handler once it is whole.
func (e *Endpoint) handleFragment(p *peer, m *msg, body []byte) {
	if m.kind == msgAM {
		if !m.more {
			if uint64(len(body)) != m.id || int(m.n1) > len(body) {
				return
			}
			e.handleAM(p.rank, transport.AMID(m.a), body[:m.n1], body[m.n1:])
			return
		}
		if m.id > maxAM || uint64(len(body)) >= m.id {
			return
		}
		p.fmsg = *m
		// Grown as fragments come, not sized by the header's word.
		p.frag = append(make([]byte, 0, min(m.id, 4*maxBody)), body...)
		return
	}
	if p.frag == nil {
		return
	}
	if uint64(len(p.frag)+len(body)) > p.fmsg.id {
		p.frag = nil // longer than its first fragment said: dropped
		return
	}
	p.frag = append(p.frag, body...)
	if m.more {
		return
	}
	whole, first := p.frag, p.fmsg
	p.frag = nil
	if uint64(len(whole)) != first.id || int(first.n1) > len(whole) {
		return
	}
	e.handleAM(p.rank, transport.AMID(first.a), whole[:first.n1], whole[first.n1:])
}

// applyAtomic applies an accumulate or compare-and-swap from p and
// answers it; it returns the region's key and whether it was applied.
func (e *Endpoint) applyAtomic(p *peer, m *msg, body []byte) (transport.Key, bool) {
	if e.limits != nil {
		e.answer(p, m, statusOf(errMixedAtomics), nil)
		return transport.Key{}, false
	}
	x := e.regions.acquire(m.slot, m.gen)
	if x == nil {
		e.answer(p, m, statusNoRegion, nil)
		return transport.Key{}, false
	}
	var res []byte
	var err error
	scratch := func(n int) []byte {
		if cap(e.prog.scratch) < n {
			e.prog.scratch = make([]byte, n)
		}
		return e.prog.scratch[:n]
	}
	if m.kind == msgAcc {
		if m.more {
			res = scratch(int(min(m.n2, maxBody)))
		}
		src := body
		if int(m.n1) != len(body) {
			err = mem.ErrLength
		} else {
			if m.n1 == 0 {
				src = nil
			}
			err = local.AccumulateAt(x.mem, int(m.off), mem.Op(m.a), mem.Type(m.b), src, res)
		}
	} else {
		size := int(m.n1)
		if m.more {
			res = scratch(min(size, maxBody))
		}
		if 2*size != len(body) {
			err = mem.ErrLength
		} else {
			err = local.CompareSwapAt(x.mem, int(m.off), mem.Type(m.b), body[:size], body[size:], res)
		}
	}
	key := x.key
	x.mu.RUnlock()
	e.answer(p, m, statusOf(err), res)
	return key, err == nil
}
