//go:build fabric

package fabric

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Sending messages: active messages, notices, atomics and control calls.

// bufPool keeps C buffers of one size (the endpoint's newBuf, so
// registered where the provider wants it) for sends and bounces.
type bufPool struct {
	mu   sync.Mutex
	e    *Endpoint
	size int
	free []cbuf
}

// get returns a buffer of size bytes.
func (p *bufPool) get() (cbuf, error) {
	p.mu.Lock()
	if k := len(p.free); k > 0 {
		b := p.free[k-1]
		p.free = p.free[:k-1]
		p.mu.Unlock()
		return b, nil
	}
	p.mu.Unlock()
	return p.e.newBuf(p.size)
}

// put returns b to the pool.
func (p *bufPool) put(b cbuf) {
	p.mu.Lock()
	if len(p.free) < 64 {
		p.free = append(p.free, b)
		b = cbuf{}
	}
	p.mu.Unlock()
	if b.p != nil {
		p.e.freeBuf(b)
	}
}

// drop frees the pooled buffers.
func (p *bufPool) drop() {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.mu.Unlock()
	for _, b := range free {
		p.e.freeBuf(b)
	}
}

// bounce gives o, just added, a buffer of the pool; if there is none, o
// is told the error and dropped.
func (e *Endpoint) bounce(o *op) error {
	b, err := e.sbuf.get()
	if err != nil {
		e.ops.tell(o, err)
		e.dispose(o)
		return err
	}
	o.buf = b
	return nil
}

// issueMsg builds message m with its body (two parts, either may be
// empty) in a C buffer and issues it to p as operation o; ordered as in
// start.
func (e *Endpoint) issueMsg(p *peer, o *op, m *msg, body, body2 []byte, ordered bool) error {
	n := msgHeader + len(body) + len(body2)
	if n > msgBufSize {
		panic("fabric: message larger than a buffer")
	}
	m.src = uint32(e.rank)
	if m.kind != msgReply && o.waits == 2 {
		// The header names the operation, so that the answer finds it.
		m.id = o.id
	}
	if err := e.bounce(o); err != nil {
		return err
	}
	b := o.buf
	m.put(b.b)
	copy(b.b[msgHeader+copy(b.b[msgHeader:], body):], body2)
	o.n = n
	return e.start(p, o, ordered)
}

// sendMsg sends a message that needs no answer.
func (e *Endpoint) sendMsg(p *peer, m *msg, body []byte, c *transport.Completion, ordered bool) error {
	o := e.ops.add(p, classS, c, 1)
	return e.issueMsg(p, o, m, body, nil, ordered)
}

// atomic sends an accumulate or compare-and-swap, complete once the
// target answered; result receives the answer's payload.
func (e *Endpoint) atomic(p *peer, m *msg, body, body2, result []byte, c *transport.Completion) error {
	o := e.ops.add(p, classS, c, 2)
	e.ops.mu.Lock()
	o.result = result
	e.ops.mu.Unlock()
	return e.issueMsg(p, o, m, body, body2, m.notice.Kind() != transport.NoticeNone)
}

// call sends a control message and waits for the answer: a peer that
// does not answer within the timeout fails; ctx ending first ends the
// wait only (the answer, if it comes, is dropped).
func (e *Endpoint) call(ctx context.Context, p *peer, m *msg, body []byte) (reply, error) {
	o := e.ops.add(p, classS, nil, 2)
	ch := make(chan reply, 2)
	e.ops.mu.Lock() // the table already lists o
	o.reply = ch
	e.ops.mu.Unlock()
	if err := e.issueMsg(p, o, m, body, nil, false); err != nil {
		return reply{}, err
	}
	timer := time.NewTimer(e.timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.status == statusErr {
			return r, fmt.Errorf("fabric: rank %d: %s", p.rank, r.payload)
		}
		return r, nil
	case <-ctx.Done():
		return reply{}, fmt.Errorf("fabric: waiting for rank %d: %w", p.rank, ctx.Err())
	case <-timer.C:
		err := fmt.Errorf("fabric: rank %d did not answer within %v: %w", p.rank, e.timeout, transport.ErrPeer)
		e.fail(p, err)
		return reply{}, err
	}
}

// answer replies to the message m from p.
func (e *Endpoint) answer(p *peer, m *msg, st status, payload []byte) {
	if p.err() != nil || !e.open() {
		return
	}
	_ = e.sendMsg(p, &msg{kind: msgReply, a: uint8(st), id: m.id}, payload, nil, false)
}

// SendAM sends an active message: one message, or fragments that the
// target joins, sent together.
func (e *Endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	if id >= transport.MaxAMID {
		return fmt.Errorf("fabric: AMID %d out of range", id)
	}
	p, err := e.peer(target)
	if err != nil {
		return err
	}
	total := len(hdr) + len(payload)
	if target == e.rank {
		// To itself: handled here, in order with everything else it
		// sent itself (which was applied at once).
		body := make([]byte, 0, total)
		body = append(append(body, hdr...), payload...)
		e.prog.self(e, func() { e.handleAM(e.rank, id, body[:len(hdr)], body[len(hdr):]) })
		return nil
	}
	if total <= maxBody {
		body := make([]byte, 0, total)
		body = append(append(body, hdr...), payload...)
		return e.sendMsg(p, &msg{kind: msgAM, a: uint8(id), id: uint64(total), n1: uint32(len(hdr))}, body, nil, false)
	}
	// Fragments: the first names the whole, the others follow it in
	// order (FI_ORDER_SAS), none from another message between them.
	whole := make([]byte, 0, total)
	whole = append(append(whole, hdr...), payload...)
	p.smu.Lock()
	defer p.smu.Unlock()
	m := &msg{kind: msgAM, a: uint8(id), id: uint64(total), n1: uint32(len(hdr)), more: true}
	for len(whole) > 0 {
		chunk := whole[:min(len(whole), maxBody)]
		whole = whole[len(chunk):]
		m.more = len(whole) > 0
		if err := e.sendMsg(p, m, chunk, nil, false); err != nil {
			return err
		}
		m = &msg{kind: msgFrag}
	}
	return nil
}

// Flush waits until every operation issued to target is complete at the
// target, driving progress meanwhile.
func (e *Endpoint) Flush(ctx context.Context, target int) error {
	p, err := e.peer(target)
	if err != nil {
		if !e.open() || target < 0 || target >= e.size {
			return err
		}
		// A failed peer: nothing more will complete.
		return err
	}
	if target == e.rank && e.limits == nil {
		return nil // its operations on its own regions are done when issued
	}
	p.omu.Lock()
	p.sinceFlush = 0 // the next write asks for delivery (ops.go)
	p.omu.Unlock()
	if err := e.waitIdle(ctx, p); err != nil {
		return err
	}
	if e.attr.delivery {
		return nil
	}
	// Completions meant only that the data left: ask the target, whose
	// answer comes after what was sent before.
	_, err = e.call(ctx, p, &msg{kind: msgFlush}, nil)
	return err
}

// FlushAll flushes every target.
func (e *Endpoint) FlushAll(ctx context.Context) error { return e.each(ctx, e.Flush) }

// FlushLocal waits until the operations issued to target are complete
// here: the caller's buffers are its own again and results are in place
// (transport.LocalFlusher). A put's data, and an accumulate's, was
// copied when the put was issued, unless larger than a bounce buffer
// (64 KiB), so such a put needs no wait, while a Flush waits for its
// delivery; reads and fetches wait for their results.
func (e *Endpoint) FlushLocal(ctx context.Context, target int) error {
	p, err := e.peer(target)
	if err != nil {
		return err
	}
	return e.await(ctx, p, func() bool { return p.local.Load() == 0 })
}

// FlushLocalAll is FlushLocal for every target.
func (e *Endpoint) FlushLocalAll(ctx context.Context) error { return e.each(ctx, e.FlushLocal) }

// each calls flush for every target and returns the first error, but for
// failed peers other than this rank.
func (e *Endpoint) each(ctx context.Context, flush func(context.Context, int) error) error {
	if !e.open() {
		return transport.ErrClosed
	}
	var first error
	for t := range e.size {
		if err := flush(ctx, t); err != nil && first == nil && !(t != e.rank && errIs(err, transport.ErrPeer)) {
			first = err
		}
	}
	return first
}

// waitIdle polls until nothing issued to p is in flight.
// Lazy writes issued meanwhile, from its queue perhaps, are confirmed.
func (e *Endpoint) waitIdle(ctx context.Context, p *peer) error {
	return e.await(ctx, p, func() bool {
		if e.lazy {
			e.confirm(p)
		}
		return p.idle() && p.inflight.Load() == 0
	})
}

// await polls until done, p fails, the endpoint closes or ctx ends.
func (e *Endpoint) await(ctx context.Context, p *peer, done func() bool) error {
	var start time.Time
	for !done() {
		if err := p.err(); err != nil {
			return err
		}
		if !e.open() {
			return transport.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.Poll() {
			if start.IsZero() {
				start = time.Now()
			}
			e.prog.idleWait(start)
		}
	}
	// Done because the peer failed and its operations were failed with
	// it: that is no success.
	return p.err()
}
