package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// inConn is a connection a peer opened to this endpoint: its reader
// applies the peer's requests to this endpoint's memory, in order, and
// writes the replies back.
type inConn struct {
	p  *peer
	c  net.Conn
	br *bufio.Reader

	wmu sync.Mutex // guards bw and wh: replies, and the goodbye of Close
	bw  *bufio.Writer
	wh  [headerSize]byte

	// Owned by the reader goroutine.
	hb      [headerSize]byte
	refused Status // the first refusal since the last flush
	scratch []byte // results of fetching atomics, large accumulate operands
	// delivered: a notice or an active message was delivered since the
	// reader last waited for the network.
	delivered bool
	// kicked: Unexpose interrupted the reader's stream into its region
	// (guarded by that region's smu).
	kicked bool

	byeAck chan error // receives the peer's answer to our goodbye
}

func newInConn(p *peer, c net.Conn) *inConn {
	return &inConn{
		p:      p,
		c:      c,
		br:     bufio.NewReaderSize(c, readBuffer),
		bw:     bufio.NewWriterSize(c, writeBuffer),
		byeAck: make(chan error, 1),
	}
}

// serve applies the peer's requests until the connection ends. A frame
// that is malformed, or that reaches outside the region it names, closes
// the connection and fails the peer, having written nothing.
func (in *inConn) serve() {
	defer in.c.Close()
	// A goodbye of Close waiting for its answer on this connection
	// waits no more once the connection has ended.
	defer func() {
		select {
		case in.byeAck <- transport.ErrClosed:
		default:
		}
	}()
	for {
		if in.br.Buffered() < headerSize {
			// About to wait for the network: send the replies first.
			if err := in.flushReplies(); err != nil {
				in.p.lost("write", err)
				return
			}
			if in.delivered {
				// A notice or message just delivered may have woken a
				// waiting rank: let it run (and answer) before this reader's
				// read, which finds nothing and parks.
				in.delivered = false
				runtime.Gosched()
			}
		}
		if _, err := io.ReadFull(in.br, in.hb[:]); err != nil {
			in.p.lost("connection lost", err)
			return
		}
		h, err := decodeHeader(in.hb[:], true)
		if err == nil {
			in.p.heard()
			in.p.ep.stats.received(h.kind, headerSize+int(h.length))
			err = in.handle(&h)
		}
		if err != nil {
			var fe *FrameError
			if errors.As(err, &fe) {
				in.p.fail(fmt.Errorf("tcp: rank %d sent a bad frame, connection closed: %w: %w", in.p.rank, err, transport.ErrPeer))
			} else {
				in.p.lost("connection lost", err)
			}
			return
		}
	}
}

// outside is the error for a frame reaching outside its region.
func outside(h *header, n int, size int) error {
	return &FrameError{Kind: h.kind, Reason: fmt.Sprintf("%d bytes at offset %d of a region of %d", n, h.off, size)}
}

// fits reports whether n bytes at h.off lie inside a region of size bytes.
func fits(h *header, n int, size int) bool {
	return h.off <= uint64(size) && uint64(n) <= uint64(size)-h.off
}

// handle applies one request.
func (in *inConn) handle(h *header) error {
	ep := in.p.ep
	switch h.kind {
	case KindPut:
		n := int(h.length)
		if err := in.awaitPayload(n); err != nil {
			return err
		}
		streamed := n > in.br.Size()
		var small []byte
		if !streamed {
			// Take a payload that fits the read buffer whole before
			// the region: nothing waits for the network under the
			// region's lock, and a frame cut short writes nothing.
			var err error
			if small, err = in.br.Peek(n); err != nil {
				return err
			}
		}
		x := ep.acquire(transport.WordKey(h.key))
		if x == nil {
			in.refuse(StatusNoRegion)
			return in.discard(n)
		}
		if !fits(h, n, len(x.mem)) {
			x.mu.RUnlock()
			return outside(h, n, len(x.mem))
		}
		dst := x.mem[h.off : h.off+uint64(n)]
		if !streamed {
			copy(dst, small)
			x.mu.RUnlock()
			if err := in.discard(n); err != nil {
				return err
			}
		} else if ok, err := in.stream(x, dst); !ok {
			return err
		}
		in.notify(h)

	case KindGet:
		n := int(h.result)
		x := ep.acquire(transport.WordKey(h.key))
		if x == nil {
			return in.reply(h.id, StatusNoRegion, nil)
		}
		if !fits(h, n, len(x.mem)) {
			x.mu.RUnlock()
			return outside(h, n, len(x.mem))
		}
		if err := in.replyFrom(h.id, x, x.mem[h.off:h.off+uint64(n)]); err != nil {
			return err
		}
		in.notify(h)

	case KindAccumulate, KindCompareSwap:
		return in.atomic(h)

	case KindAM:
		n := int(h.length)
		if err := in.awaitPayload(n); err != nil {
			return err
		}
		var b []byte
		var err error
		if n <= in.br.Size() {
			b, err = in.br.Peek(n)
		} else {
			b, err = in.readGrowing(n)
		}
		if err != nil {
			return err
		}
		if f := ep.AM(transport.AMID(h.aux)); f != nil {
			k := int(h.off)
			f(in.p.rank, b[:k:k], b[k:n:n])
			in.delivered = true // a message may have woken a receiver too
		}
		if n <= in.br.Size() {
			_, err := in.br.Discard(n)
			return err
		}

	case KindFlush:
		st := in.refused
		in.refused = StatusOK
		return in.reply(h.id, st, nil)

	case KindLookup:
		st := StatusOK
		x := ep.acquire(transport.WordKey(h.key))
		switch {
		case x == nil:
			st = StatusNoRegion
		case h.off > uint64(len(x.mem)):
			st = StatusBounds
			x.mu.RUnlock()
		default:
			x.mu.RUnlock()
			if !x.addUser(in.p.rank) { // withdrawn in between
				st = StatusNoRegion
			}
		}
		return in.reply(h.id, st, nil)

	case KindWithdraw:
		ep.withdrawHandles(in.p.rank, transport.WordKey(h.key))
		return in.reply(h.id, StatusOK, nil)

	case KindPing:
		return in.reply(h.id, StatusOK, nil)

	case KindBye:
		in.p.markClosed()
		return in.reply(h.id, StatusOK, nil)

	case KindByeAck:
		select {
		case in.byeAck <- nil:
		default:
		}
	}
	return nil
}

// atomic applies an accumulate or a compare-and-swap.
func (in *inConn) atomic(h *header) error {
	fetch := h.flags&flagFetch != 0
	n := int(h.length)
	var src []byte
	peeked := n <= in.br.Size()
	if err := in.awaitPayload(n); err != nil {
		return err
	}
	if n > 0 {
		var err error
		if peeked {
			src, err = in.br.Peek(n)
		} else {
			src = in.buffer(n)
			err = readFull(in.br, src, in.p)
		}
		if err != nil {
			return err
		}
	}
	release := func() error {
		if peeked && n > 0 {
			_, err := in.br.Discard(n)
			return err
		}
		return nil
	}
	span := n // bytes of the region covered
	switch {
	case h.kind == KindCompareSwap:
		span = h.typ.Size()
	case h.op == mem.NoOp && n == 0:
		span = int(h.result)
	}
	x := in.p.ep.acquire(transport.WordKey(h.key))
	if x == nil {
		if err := release(); err != nil {
			return err
		}
		if fetch {
			return in.reply(h.id, StatusNoRegion, nil)
		}
		in.refuse(StatusNoRegion)
		return nil
	}
	if !fits(h, span, len(x.mem)) {
		x.mu.RUnlock()
		return outside(h, span, len(x.mem))
	}
	var res []byte
	if fetch {
		res = in.result(int(h.result), peeked, n)
	}
	var err error
	if h.kind == KindCompareSwap {
		size := h.typ.Size()
		err = local.CompareSwapAt(x.mem, int(h.off), h.typ, src[:size], src[size:], res)
	} else {
		err = local.AccumulateAt(x.mem, int(h.off), h.op, h.typ, src, res)
	}
	x.mu.RUnlock()
	if rerr := release(); rerr != nil {
		return rerr
	}
	if err != nil {
		if fetch {
			return in.reply(h.id, statusOf(err), nil)
		}
		in.refuse(statusOf(err))
		return nil
	}
	if fetch {
		if err := in.reply(h.id, StatusOK, res); err != nil {
			return err
		}
	}
	in.notify(h)
	return nil
}

// stream reads the payload of a put, larger than the read buffer,
// straight into dst, the memory of region x, whose lock the caller holds
// for reading; it releases it. The reader waits for the network with the
// lock held, so Unexpose, which takes it for writing, interrupts the
// wait (withdraw): the rest of the payload is then read and dropped,
// and the put refused (reported to the origin at its next flush). It
// reports whether the whole payload was written; a nil error without
// that means the put was refused.
func (in *inConn) stream(x *exposed, dst []byte) (bool, error) {
	x.smu.Lock()
	if x.withdrawing {
		x.smu.Unlock()
		x.mu.RUnlock()
		in.refuse(StatusNoRegion)
		return false, in.discard(len(dst))
	}
	x.streams = append(x.streams, in)
	x.smu.Unlock()

	n, err := readStream(in.br, dst, in.p)

	x.smu.Lock()
	for i, s := range x.streams {
		if s == in {
			x.streams = append(x.streams[:i], x.streams[i+1:]...)
			break
		}
	}
	kicked := in.kicked
	in.kicked = false
	x.smu.Unlock()
	x.mu.RUnlock()
	if !kicked {
		return err == nil, err
	}
	if derr := in.c.SetReadDeadline(time.Time{}); derr != nil {
		return false, derr
	}
	switch {
	case err == nil:
		// All of it arrived before the kick took effect: the put is
		// complete, before Unexpose took the region.
		return true, nil
	case !errors.Is(err, os.ErrDeadlineExceeded):
		return false, err
	}
	in.refuse(StatusNoRegion)
	return false, in.discard(len(dst) - n)
}

// withdraw begins Unexpose's withdrawal of x and returns the ranks that
// looked it up: later lookups fail, and the readers streaming a put into
// x are interrupted (their reads, which hold x's lock, return at once;
// later ones stop before they start).
func (x *exposed) withdraw() map[int]bool {
	x.smu.Lock()
	defer x.smu.Unlock()
	x.withdrawing = true
	for _, in := range x.streams {
		in.kicked = true
		in.c.SetReadDeadline(time.Unix(1, 0)) // long past
	}
	users := x.users
	x.users = nil
	return users
}

// addUser records that rank looked x up, unless x is being withdrawn
// (false).
func (x *exposed) addUser(rank int) bool {
	x.smu.Lock()
	defer x.smu.Unlock()
	if x.withdrawing {
		return false
	}
	if x.users == nil {
		x.users = make(map[int]bool)
	}
	x.users[rank] = true
	return true
}

// amStep is the first allocation for the payload of a large active
// message.
const amStep = 1 << 20

// readGrowing reads a payload of n bytes into memory it allocates as the
// bytes arrive, doubling from amStep: a header cannot make the endpoint
// allocate more than amStep or twice what the peer actually sent
// (active messages may be as large as maxPayload).
func (in *inConn) readGrowing(n int) ([]byte, error) {
	b := make([]byte, 0, min(n, amStep))
	for len(b) < n {
		if len(b) == cap(b) {
			b = append(make([]byte, 0, min(n, 2*cap(b))), b...)
		}
		k, err := in.br.Read(b[len(b):cap(b)])
		if k > 0 {
			b = b[:len(b)+k]
			in.p.heard()
		}
		if err != nil && len(b) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}

// buffer returns the scratch buffer with at least n bytes.
func (in *inConn) buffer(n int) []byte {
	if cap(in.scratch) < n {
		in.scratch = make([]byte, n)
	}
	return in.scratch[:n]
}

// result returns a buffer of n bytes for the result of a fetching atomic
// whose operand of m bytes is in the scratch buffer unless peeked.
func (in *inConn) result(n int, peeked bool, m int) []byte {
	if peeked {
		return in.buffer(n)
	}
	b := in.buffer(m + n)
	return b[m : m+n]
}

// awaitPayload sends the queued replies if the n bytes of payload to
// come are not all in the read buffer: the reader is about to wait for
// the network, and an answer (to a ping, say) must not wait behind a
// large payload.
func (in *inConn) awaitPayload(n int) error {
	if n > in.br.Buffered() {
		return in.flushReplies()
	}
	return nil
}

// discard skips n bytes of payload.
func (in *inConn) discard(n int) error {
	_, err := in.br.Discard(n)
	return err
}

// refuse records the refusal of an operation that has no reply: the next
// flush reports it.
func (in *inConn) refuse(st Status) {
	if in.refused == StatusOK {
		in.refused = st
	}
}

// notify delivers the notice of a data request, if it carries one.
func (in *inConn) notify(h *header) {
	if h.notice == 0 {
		return
	}
	if f := in.p.ep.Notice(); f != nil {
		f(in.p.rank, transport.WordKey(h.key), h.noticeOf())
		in.delivered = true
	}
}

// reply queues the reply to request id; it goes out when the reader next
// waits for the network, or now if it does not fit the reply buffer.
func (in *inConn) reply(id uint32, st Status, payload []byte) error {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	return in.queueReply(id, st, payload)
}

// replyPool holds the buffers that the replies to large gets are copied
// into (see replyFrom), as *[]byte. The connections share them rather
// than each keeping its own: a rank would otherwise hold up to
// chunkPayload bytes for every peer that ever got that much.
var replyPool sync.Pool

// replyFrom queues the reply to get id, which carries src, memory of
// region x, whose lock the caller holds for reading; it releases it.
//
// The lock is never held across a write to the network. An origin that
// stops reading its replies stalls the write once the socket buffers are
// full, and a write under the lock would stall Unexpose with it (it
// takes the lock for writing), until the peer timeout or for ever: a
// misbehaving peer must not make others hang. So the payload is copied
// under the lock and written after: into the reply buffer if it fits
// there (as every small reply is anyway: nothing more to pay), else into
// a buffer of its own, a copy at memory speed of bytes about to cross
// the network. Interrupting a stalled write instead, as Unexpose
// interrupts a put that streams into the region (stream), would cut the
// reply frame short: the rest would have to be copied all the same, or
// the connection failed, and with it a peer that may only be slow.
func (in *inConn) replyFrom(id uint32, x *exposed, src []byte) error {
	in.wmu.Lock()
	if headerSize+len(src) <= in.bw.Available() {
		// Fits: queued without a write to the network.
		err := in.queueReply(id, StatusOK, src)
		in.wmu.Unlock()
		x.mu.RUnlock()
		return err
	}
	in.wmu.Unlock()
	bp, _ := replyPool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if cap(*bp) < len(src) {
		*bp = make([]byte, len(src))
	}
	b := (*bp)[:len(src)]
	copy(b, src)
	x.mu.RUnlock()
	err := in.reply(id, StatusOK, b)
	replyPool.Put(bp)
	return err
}

// queueReply is reply with in.wmu held.
func (in *inConn) queueReply(id uint32, st Status, payload []byte) error {
	h := header{kind: KindReply, notice: uint8(st), id: id, length: uint32(len(payload))}
	h.encode(in.wh[:])
	if _, err := in.bw.Write(in.wh[:]); err != nil {
		return err
	}
	for b := payload; len(b) > 0; {
		// A large payload goes out in pieces, each a sign of life of
		// the peer that took it (see writePieces).
		k := min(len(b), writePiece)
		if _, err := in.bw.Write(b[:k]); err != nil {
			return err
		}
		if b = b[k:]; len(b) > 0 {
			in.p.heard()
		}
	}
	in.p.ep.stats.sent(KindReply, headerSize+len(payload))
	return nil
}

// flushReplies writes out the queued replies.
func (in *inConn) flushReplies() error {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	if in.bw.Buffered() == 0 {
		return nil
	}
	return in.bw.Flush()
}

// replyBye tells the peer, in the reply direction, that this endpoint
// closes.
func (in *inConn) replyBye() error {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	h := header{kind: KindReplyBye}
	h.encode(in.wh[:])
	if _, err := in.bw.Write(in.wh[:]); err != nil {
		return err
	}
	in.p.ep.stats.sent(KindReplyBye, headerSize)
	return in.bw.Flush()
}
