package engine

import (
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/mem"
)

// Wildcards for Recv, Irecv and Probe.
const (
	AnySource = -1
	AnyTag    = -1
)

// ProcNull is the null rank (MPI_PROC_NULL): a send to it or an RMA
// operation on it completes at once and does nothing; a receive or probe
// from it completes at once with Status{Source: ProcNull, Tag: AnyTag}.
const ProcNull = -2

// nullStatus is the status of a receive or probe from ProcNull.
var nullStatus = Status{Source: ProcNull, Tag: AnyTag}

// Status describes a received or probed message.
type Status struct {
	Source int // the sending rank
	Tag    int // the message tag
	Count  int // the message length in bytes
}

// msgHeader: ctx u16, 2 bytes pad, tag i32 (little-endian).
const msgHeaderLen = 8

type message struct {
	src  int // the sender's job rank
	ctx  ctxID
	tag  int
	data []byte
}

type recvReq struct {
	src  int    // the source as the communicator numbers it, or AnySource
	from int    // the source's job rank, or AnySource: what messages match
	grp  *group // the communicator's ranks, to number the sender of a match
	ctx  ctxID
	tag  int
	buf  []byte
	// done is 1 once the request has matched: set, under Comm.mu, after
	// st and err, with a release store (the Unlock that follows orders it
	// before the look for sleepers, wake); a waiter polls it without the
	// lock (isDone).
	done uint32
	// placed: buf is lent to the transport, which writes the payload of
	// the message that matches into it (msgPlacer); under Comm.mu.
	placed bool
	st     Status
	err    error
}

// remove deletes element i of s, keeping the order, and clears the slot
// it frees so that the backing array does not keep the element alive.
func remove[E any](s []E, i int) []E {
	copy(s[i:], s[i+1:])
	var zero E
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// matches reports whether a message from job rank src with tag in
// context ctx matches a receive of wantSrc (a job rank or AnySource),
// wantTag and wantCtx.
func matches(wantSrc, wantTag int, wantCtx ctxID, src, tag int, ctx ctxID) bool {
	return ctx == wantCtx && (wantSrc == AnySource || wantSrc == src) && (wantTag == AnyTag || wantTag == tag)
}

// deliver completes r with m; the caller holds c.mu.
func (r *recvReq) deliver(src, tag int, data []byte) {
	n := len(data)
	if !r.placed || n == 0 || &data[0] != &r.buf[0] {
		n = copy(r.buf, data) // else the transport wrote it in place
	}
	r.placed = false
	r.st = Status{Source: r.grp.rankOf(src), Tag: tag, Count: n}
	if len(data) > len(r.buf) {
		r.err = ErrTruncate
		r.st.Count = len(data)
	}
	mem.StoreRelease32(&r.done, 1)
}

// parseMsgHeader returns the context and tag of a message's header; ok
// is false if the header is too short.
func parseMsgHeader(hdr []byte) (ctx ctxID, tag int, ok bool) {
	if len(hdr) < msgHeaderLen {
		return 0, 0, false
	}
	return ctxID(binary.LittleEndian.Uint16(hdr[0:2])), int(int32(binary.LittleEndian.Uint32(hdr[4:8]))), true
}

// handleMsg runs for every incoming two-sided message, from job rank src,
// whatever its communicator (the context in its header). Messages from one
// source arrive in send order (a transport guarantee), posted receives are
// scanned in posting order and unexpected messages kept in arrival order:
// together that is MPI's non-overtaking rule.
func (c *Comm) handleMsg(src int, hdr, payload []byte) {
	ctx, tag, ok := parseMsgHeader(hdr)
	if !ok {
		return
	}
	c.mu.Lock()
	for i, r := range c.posted.All() {
		if matches(r.from, r.tag, r.ctx, src, tag, ctx) {
			// Out of the queue first: once done is set, its receiver
			// may return and give r back to the pool (cancel, freeRecv).
			c.posted.Remove(i)
			r.deliver(src, tag, payload)
			c.mu.Unlock()
			c.wake()
			return
		}
	}
	c.unexpected.Push(c.newMessage(src, ctx, tag, payload))
	c.mu.Unlock()
	c.wake()
}

func (c *Comm) send(op string, ctx ctxID, buf []byte, dest, tag int) error {
	if err := c.checkRank(op, dest); err != nil {
		return err
	}
	if err := c.checkTag(op, tag); err != nil {
		return err
	}
	// The header goes through an interface call, so a local array would
	// be allocated on the heap each time: take one from the pool (SendAM
	// copies it).
	// One 8-byte store: the transport reads the header back whole, and
	// a load wider than the stores before it cannot be forwarded from
	// the store buffer (a stall of tens of cycles).
	hdr := hdrPool.Get().(*[msgHeaderLen]byte)
	binary.LittleEndian.PutUint64(hdr[:], uint64(uint16(ctx))|uint64(uint32(int32(tag)))<<32)
	err := c.ep.SendAM(c.jobRank(dest), amMsg, hdr[:], buf)
	hdrPool.Put(hdr)
	if err != nil {
		return opErr(op, c.rank, ErrPeer, "to rank %d: %v", dest, err)
	}
	return nil
}

// Send sends buf to dest with tag. The data is copied out before Send
// returns (eager protocol), so Send never waits for the receiver.
func (c *Comm) Send(ctx context.Context, buf []byte, dest, tag int) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr("Send", err)
	}
	if dest == ProcNull {
		return c.checkTag("Send", tag)
	}
	return c.send("Send", c.user, buf, dest, tag)
}

// checkTag checks the tag of a send.
func (c *Comm) checkTag(op string, tag int) error {
	if tag < 0 || int64(tag) > int64(1<<31-1) {
		return opErr(op, c.rank, ErrTag, "tag %d not in [0,2^31)", tag)
	}
	return nil
}

func (c *Comm) checkRecvArgs(op string, src, tag int) error {
	if src != AnySource {
		if err := c.checkRank(op, src); err != nil {
			return err
		}
	}
	if tag != AnyTag && tag < 0 {
		return opErr(op, c.rank, ErrTag, "tag %d is negative and not AnyTag", tag)
	}
	return nil
}

// Buffers of unexpected messages from spareMin bytes are kept, up to
// maxSpare of them of at most spareMax bytes each, for the next ones: an
// eager protocol copies every message that arrives before its receive,
// and a fresh large buffer costs its zeroing and its pages' first faults.
const (
	spareMin = 4 << 10
	spareMax = 4 << 20
	maxSpare = 4
)

// copyData returns a copy of payload, in a kept buffer if one is large
// enough; the caller holds c.mu.
func (c *Comm) copyData(payload []byte) []byte {
	if len(payload) >= spareMin {
		for i, b := range c.spareData {
			if cap(b) >= len(payload) {
				c.spareData = remove(c.spareData, i)
				return append(b[:0], payload...)
			}
		}
	}
	return append([]byte(nil), payload...)
}

// maxSpareMsgs is how many matched unexpected messages are kept, with
// their buffers if smaller than spareMin, for the next ones: an
// allocation per message costs little itself, but a heap that grows
// between collections costs a page fault per fresh page.
const maxSpareMsgs = 64

// newMessage returns an unexpected message holding a copy of payload, in
// a kept message and buffer where it can; the caller holds c.mu.
func (c *Comm) newMessage(src int, ctx ctxID, tag int, payload []byte) *message {
	var m *message
	if k := len(c.spareMsgs); k > 0 {
		m = c.spareMsgs[k-1]
		c.spareMsgs[k-1] = nil
		c.spareMsgs = c.spareMsgs[:k-1]
	} else {
		m = new(message)
	}
	m.src, m.ctx, m.tag = src, ctx, tag
	if len(payload) < spareMin {
		m.data = append(m.data[:0], payload...) // the kept buffer, if large enough
	} else {
		m.data = c.copyData(payload)
	}
	return m
}

// freeMessage keeps m, matched, for newMessage, and its buffer: small
// ones with it, large ones for copyData; the caller holds c.mu.
func (c *Comm) freeMessage(m *message) {
	if cap(m.data) >= spareMin {
		c.keepData(m.data)
		m.data = nil
	}
	if len(c.spareMsgs) < maxSpareMsgs {
		c.spareMsgs = append(c.spareMsgs, m)
	}
}

// keepData keeps the buffer of a matched unexpected message for copyData,
// if it is of a size worth keeping and there is room; the caller holds
// c.mu.
func (c *Comm) keepData(b []byte) {
	if cap(b) >= spareMin && cap(b) <= spareMax && len(c.spareData) < maxSpare {
		c.spareData = append(c.spareData, b)
	}
}

// post matches r against the unexpected queue or queues it.
func (c *Comm) post(r *recvReq) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.unexpected.All() {
		if matches(r.from, r.tag, r.ctx, m.src, m.tag, m.ctx) {
			r.deliver(m.src, m.tag, m.data)
			c.unexpected.Remove(i)
			c.freeMessage(m)
			return
		}
	}
	c.posted.Push(r)
}

// cancel removes r from the posted queue if it has not matched; it
// reports whether r was cancelled.
func (c *Comm) cancel(r *recvReq) bool {
	if r.isDone() {
		// Matched: the match took it out of the queue, under c.mu,
		// before it set done.
		return false
	}
	for {
		c.mu.Lock()
		if r.isDone() {
			c.mu.Unlock()
			return false
		}
		if !r.placed {
			for i, p := range c.posted.All() {
				if p == r {
					c.posted.Remove(i)
					break
				}
			}
			c.mu.Unlock()
			return true
		}
		// The transport is writing a payload into r.buf: the message
		// completes r, or the transport gives the buffer back, next.
		c.mu.Unlock()
		runtime.Gosched()
	}
}

// msgPlacer is the transport.AMPlacer of two-sided messages: a message
// whose receive is posted is written by the transport straight into the
// receive's buffer, if it fits (shm writes large messages by single copy
// that way), instead of into a buffer of the transport's that handleMsg
// copies.
type msgPlacer Comm

// Place lends the buffer of the first posted receive that the message
// matches, which handleMsg will match it with.
func (p *msgPlacer) Place(src int, hdr []byte, n int) []byte {
	c := (*Comm)(p)
	ctx, tag, ok := parseMsgHeader(hdr)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.posted.All() {
		if matches(r.from, r.tag, r.ctx, src, tag, ctx) {
			if n == 0 || len(r.buf) < n || r.placed {
				return nil
			}
			r.placed = true
			return r.buf[:n:n]
		}
	}
	return nil
}

// Unplace takes back the buffer Place lent for the message.
func (p *msgPlacer) Unplace(src int, hdr []byte) {
	c := (*Comm)(p)
	ctx, tag, ok := parseMsgHeader(hdr)
	if !ok {
		return
	}
	c.mu.Lock()
	for _, r := range c.posted.All() {
		if r.placed && matches(r.from, r.tag, r.ctx, src, tag, ctx) {
			r.placed = false
			break
		}
	}
	c.mu.Unlock()
}

// recvDone reports whether r has matched (then its status and error are
// set); waiters call it every round, without the lock.
func (c *Comm) recvDone(r *recvReq) bool { return r.isDone() }

// isDone reports whether r has matched.
func (r *recvReq) isDone() bool { return atomic.LoadUint32(&r.done) != 0 }

func (c *Comm) recv(ctx context.Context, op string, mctx ctxID, buf []byte, src, tag int) (Status, error) {
	if err := c.checkRecvArgs(op, src, tag); err != nil {
		return Status{}, err
	}
	r := c.newRecv(src, mctx, tag, buf)
	st, err := c.recvPosted(ctx, op, r, buf, src)
	// Not deferred: if the wait panicked (a handler's panic, in a poll),
	// r may still be queued, and must not go back to the pool.
	c.freeRecv(r)
	return st, err
}

// recvPosted posts r, the request of a blocking receive, and waits for it.
func (c *Comm) recvPosted(ctx context.Context, op string, r *recvReq, buf []byte, src int) (Status, error) {
	c.post(r)
	werr := c.waitRecv(ctx, r)
	if werr == nil && !c.recvDone(r) {
		// The rank it waits for (for AnySource: possibly) failed:
		// take in what arrived before giving up.
		c.progress()
	}
	if c.cancel(r) {
		if werr != nil {
			return Status{}, c.ctxErr(op, werr)
		}
		return Status{}, opErr(op, c.rank, ErrPeer, "%s failed", c.failedName(src))
	}
	if r.err != nil {
		return r.st, opErr(op, c.rank, r.err, "message of %d bytes from rank %d into buffer of %d", r.st.Count, r.st.Source, len(buf))
	}
	return r.st, nil
}

// Pools of the headers of sends and the requests of blocking receives,
// which would otherwise be allocated for every message. A pool's Get and
// Put take no locked instruction when the processor's own cache has an
// item (an atomic swap in the Comm took three per round trip, on its
// path).
var (
	hdrPool  = sync.Pool{New: func() any { return new([msgHeaderLen]byte) }}
	recvPool = sync.Pool{New: func() any { return new(recvReq) }}
)

// newRecv returns the request of a blocking receive, from the pool that
// freeRecv fills: a blocking receive allocates nothing.
func (c *Comm) newRecv(src int, mctx ctxID, tag int, buf []byte) *recvReq {
	r := recvPool.Get().(*recvReq)
	r.src, r.from, r.grp, r.ctx, r.tag, r.buf = src, c.from(src), c.grp, mctx, tag, buf
	// Nobody else sees r before post: plain stores (an atomic one is a
	// locked instruction).
	r.st, r.err, r.placed, r.done = Status{}, nil, false, 0
	return r
}

// freeRecv keeps r, the request of a blocking receive that has returned:
// neither the posted queue (cancel, or the match, took it out under c.mu)
// nor anything else refers to it any more.
func (c *Comm) freeRecv(r *recvReq) {
	r.buf = nil
	recvPool.Put(r)
}

func (c *Comm) waitRecv(ctx context.Context, r *recvReq) error {
	return c.wait(ctx, func() bool {
		if c.recvDone(r) {
			return true
		}
		return c.srcFailed(r.src)
	})
}

// Recv receives a message matching src and tag (AnySource, AnyTag match
// anything) into buf. A message longer than buf fills buf and returns an
// error wrapping ErrTruncate.
func (c *Comm) Recv(ctx context.Context, buf []byte, src, tag int) (Status, error) {
	if src == ProcNull {
		return nullStatus, c.checkRecvArgs("Recv", AnySource, tag)
	}
	return c.recv(ctx, "Recv", c.user, buf, src, tag)
}

// Iprobe reports whether a message matching src and tag is waiting, and
// its status, without receiving it.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	if src == ProcNull {
		err := c.checkRecvArgs("Iprobe", AnySource, tag)
		return nullStatus, err == nil, err
	}
	c.progress()
	return c.iprobe("Iprobe", src, tag)
}

func (c *Comm) iprobe(name string, src, tag int) (Status, bool, error) {
	if err := c.checkRecvArgs(name, src, tag); err != nil {
		return Status{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.unexpected.All() {
		if matches(c.from(src), tag, c.user, m.src, m.tag, m.ctx) {
			return Status{Source: c.commRank(m.src), Tag: m.tag, Count: len(m.data)}, true, nil
		}
	}
	return Status{}, false, nil
}

// Probe waits until a message matching src and tag is waiting and returns
// its status without receiving it.
func (c *Comm) Probe(ctx context.Context, src, tag int) (Status, error) {
	if src == ProcNull {
		return nullStatus, c.checkRecvArgs("Probe", AnySource, tag)
	}
	var st Status
	var found bool
	var err error
	werr := c.wait(ctx, func() bool {
		st, found, err = c.iprobe("Probe", src, tag)
		return found || err != nil || c.srcFailed(src)
	})
	if err != nil {
		return st, err
	}
	if werr != nil {
		return st, c.ctxErr("Probe", werr)
	}
	if !found {
		// The rank it waits for (for AnySource: possibly) failed:
		// take in what arrived before giving up.
		c.progress()
		if st, found, err = c.iprobe("Probe", src, tag); err != nil {
			return st, err
		}
	}
	if !found {
		return st, opErr("Probe", c.rank, ErrPeer, "%s failed", c.failedName(src))
	}
	return st, nil
}
