package tcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Buffer sizes of a connection. A payload of at most readBuffer bytes is
// taken whole from the read buffer (a frame cut short writes nothing);
// a larger one streams straight into its destination.
const (
	readBuffer  = 32 << 10
	writeBuffer = 16 << 10
	// smallPayload is the largest payload copied behind its header into
	// one write; larger ones go out with the header in one writev.
	smallPayload = 4 << 10
	// writePiece is the most written at once: a larger payload goes
	// out in pieces, each a sign of life of the peer that took it.
	writePiece = 1 << 20
)

// call is a request waiting for its reply. The connection keeps its
// pending calls by value, so issuing one allocates nothing.
type call struct {
	id     uint32
	dst    []byte                // receives the reply's payload
	c      *transport.Completion // told when the reply arrives, if not nil
	w      *waiter               // receives the outcome, if not nil
	covers uint64                // a flush: the operations it completes
}

// finish completes the call with err.
func (cl *call) finish(err error) {
	switch {
	case cl.w != nil:
		cl.w.ch <- err
	case cl.c != nil:
		cl.c.Done(err)
	}
}

// waiter receives the outcome of a call that a goroutine waits for.
type waiter struct {
	ch   chan error // buffered
	home *outConn   // takes the waiter back for its next flush, if set
}

func newWaiter() *waiter { return &waiter{ch: make(chan error, 1)} }

// wait returns the outcome. A flush's waiter goes back to its connection
// for the next flush unless ctx ends first (then the late outcome is
// dropped with it).
func (w *waiter) wait(ctx context.Context) error {
	select {
	case err := <-w.ch:
		if w.home != nil {
			w.home.spare.Store(w)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// outConn is a connection this endpoint opened to a peer: it writes its
// requests on it, and a reader goroutine takes the peer's replies.
type outConn struct {
	p  *peer
	c  net.Conn
	br *bufio.Reader

	wmu    sync.Mutex
	buf    []byte // header and small payload being written, under wmu
	issued uint64 // operations written, under wmu

	flushed atomic.Uint64 // operations known complete at the target

	spare atomic.Pointer[waiter] // a flush waiter to reuse: flushing allocates nothing

	// Calls in the order sent: the target answers in that order.
	cmu   sync.Mutex
	calls []call // calls[head:] are pending
	head  int
	// replying: the reader took a call off calls and has not finished
	// it yet (its reply's payload may still be on its way into dst). Set
	// under cmu with the call's removal, cleared without it.
	replying atomic.Bool
	lastID   uint32
	err      error // once set, calls fail with it at once

	lastSent atomic.Int64 // unix nanoseconds of the last write
	// pingDue: the heartbeat wants a ping sent; the next writer sends
	// it, ahead of its own frame.
	pingDue atomic.Bool
}

func newOutConn(p *peer, c net.Conn) *outConn {
	o := &outConn{
		p:   p,
		c:   c,
		br:  bufio.NewReaderSize(c, readBuffer),
		buf: make([]byte, 0, headerSize+smallPayload),
	}
	o.lastSent.Store(time.Now().UnixNano())
	return o
}

// send writes the request h with payload, registering cl (if not nil) to
// receive the reply. On a write error the peer fails and the error is
// returned.
func (o *outConn) send(h *header, payload []byte, cl *call) error {
	o.wmu.Lock()
	err := o.write(h, payload, nil, cl)
	o.wmu.Unlock()
	return o.sent(err)
}

// send2 is send with a payload in two parts.
func (o *outConn) send2(h *header, a, b []byte) error {
	o.wmu.Lock()
	err := o.write(h, a, b, nil)
	o.wmu.Unlock()
	return o.sent(err)
}

// sent turns a write error into the peer's failure.
func (o *outConn) sent(err error) error {
	if err == nil {
		return nil
	}
	if perr := o.p.err(); perr != nil {
		return perr
	}
	if !o.p.ep.open() {
		return transport.ErrClosed
	}
	o.p.lost("write", err)
	if perr := o.p.err(); perr != nil {
		return perr
	}
	return fmt.Errorf("tcp: rank %d: %v: %w", o.p.rank, err, transport.ErrPeer)
}

// ping sends the ping the heartbeat asked for, unless a writer did.
func (o *outConn) ping() error {
	o.wmu.Lock()
	err := o.writePing()
	o.wmu.Unlock()
	return o.sent(err)
}

// writePing writes a ping if one is due; o.wmu is held.
func (o *outConn) writePing() error {
	if !o.pingDue.CompareAndSwap(true, false) {
		return nil
	}
	return o.write(&header{kind: KindPing}, nil, nil, &call{})
}

// write writes one frame; o.wmu is held. A ping that is due goes first:
// a writer that sends frame after frame (the parts of a large put) would
// otherwise keep the heartbeat's ping waiting for the lock.
func (o *outConn) write(h *header, a, b []byte, cl *call) error {
	if h.kind != KindPing && o.pingDue.Load() {
		if err := o.writePing(); err != nil {
			return err
		}
	}
	if cl != nil {
		if err := o.register(h, cl); err != nil {
			return err
		}
	}
	n := len(a) + len(b)
	h.length = uint32(n)
	buf := o.buf[:headerSize]
	h.encode(buf)
	var err error
	switch {
	case n <= smallPayload:
		buf = append(append(buf, a...), b...)
		_, err = o.c.Write(buf)
	case n <= writePiece:
		bufs := net.Buffers{buf, a, b}
		_, err = writeBuffers(o.c, &bufs)
	default:
		err = writePieces(o.c, o.p, buf, a, b)
	}
	if err != nil {
		return err
	}
	switch h.kind {
	case KindPut, KindGet, KindAccumulate, KindCompareSwap, KindAM:
		o.issued++
	}
	o.lastSent.Store(time.Now().UnixNano())
	o.p.ep.stats.sent(h.kind, headerSize+n)
	return nil
}

// register gives h a fresh id and queues cl under it.
func (o *outConn) register(h *header, cl *call) error {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.lastID++; o.lastID == 0 {
		o.lastID++
	}
	h.id = o.lastID
	cl.id = h.id
	switch {
	case o.head == len(o.calls):
		o.calls, o.head = o.calls[:0], 0
	case o.head > 0 && len(o.calls) == cap(o.calls):
		n := copy(o.calls, o.calls[o.head:])
		clear(o.calls[n:])
		o.calls, o.head = o.calls[:n], 0
	}
	o.calls = append(o.calls, *cl)
	if cl.c != nil {
		cl.c.Add(1)
	}
	return nil
}

// take removes and returns the oldest pending call if its id is id, else
// nil: replies come in the order of the requests.
func (o *outConn) take(id uint32) (call, bool) {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	if o.head == len(o.calls) || o.calls[o.head].id != id {
		return call{}, false
	}
	cl := o.calls[o.head]
	o.calls[o.head] = call{}
	o.head++
	o.replying.Store(true) // until the reader has finished the call (done)
	return cl, true
}

// done says that the reader has finished the call take returned: its
// reply is read into its buffer and its waiter told.
func (o *outConn) done() { o.replying.Store(false) }

// awaiting reports whether calls wait for their replies, or the reader
// is still reading one into its buffer.
func (o *outConn) awaiting() bool {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	return o.head < len(o.calls) || o.replying.Load()
}

// failCalls fails every pending call, and every later one, with err.
func (o *outConn) failCalls(err error) {
	o.cmu.Lock()
	if o.err == nil {
		o.err = err
	}
	calls := o.calls[o.head:]
	o.calls, o.head = nil, 0
	o.cmu.Unlock()
	for i := range calls {
		calls[i].finish(err)
	}
}

// close closes the connection and fails its calls with err.
func (o *outConn) close(err error) {
	o.c.Close()
	o.failCalls(err)
}

// flush sends a flush request if operations were written since the last
// flush that covered them.
func (o *outConn) flush() (*waiter, error) {
	o.wmu.Lock()
	if o.flushed.Load() >= o.issued {
		o.wmu.Unlock()
		return nil, nil
	}
	w := o.spare.Swap(nil)
	if w == nil {
		w = &waiter{ch: make(chan error, 1), home: o}
	}
	err := o.write(&header{kind: KindFlush}, nil, nil, &call{w: w, covers: o.issued})
	o.wmu.Unlock()
	if err = o.sent(err); err != nil {
		return nil, err
	}
	return w, nil
}

// readReplies takes the peer's replies until the connection ends.
func (o *outConn) readReplies() {
	defer o.p.ep.wg.Done()
	// Every way out closes the connection: one that nobody reads would
	// stay readable (and end every reader's poll, see spinConn).
	defer o.c.Close()
	var hb [headerSize]byte
	for {
		if _, err := io.ReadFull(o.br, hb[:]); err != nil {
			o.p.lost("connection lost", err)
			return
		}
		h, err := decodeHeader(hb[:], false)
		if err != nil {
			o.p.fail(fmt.Errorf("tcp: rank %d: %v: %w", o.p.rank, err, transport.ErrPeer))
			return
		}
		o.p.heard()
		o.p.ep.stats.received(h.kind, headerSize+int(h.length))
		if h.kind == KindReplyBye {
			o.p.markClosed()
			o.send(&header{kind: KindByeAck}, nil, nil)
			continue
		}
		cl, ok := o.take(h.id)
		if !ok && o.p.state.Load() == pClosed {
			// The peer said goodbye, which failed our pending calls:
			// skip the answers it sent to them before.
			if _, err := o.br.Discard(int(h.length)); err != nil {
				o.p.lost("connection lost", err)
				return
			}
			continue
		}
		if !ok {
			o.p.fail(fmt.Errorf("tcp: rank %d replied out of order (id %d): %w", o.p.rank, h.id, transport.ErrPeer))
			return
		}
		st := Status(h.notice)
		if st == StatusOK && int(h.length) != len(cl.dst) {
			cl.finish(transport.ErrPeer)
			o.p.fail(fmt.Errorf("tcp: rank %d replied with %d bytes, want %d: %w", o.p.rank, h.length, len(cl.dst), transport.ErrPeer))
			return
		}
		if h.length > 0 {
			if err := readFull(o.br, cl.dst, o.p); err != nil {
				cl.finish(fmt.Errorf("tcp: rank %d: reply cut short: %w", o.p.rank, transport.ErrPeer))
				o.p.lost("connection lost", err)
				return
			}
		}
		if cl.covers > 0 {
			for {
				f := o.flushed.Load()
				if f >= cl.covers || o.flushed.CompareAndSwap(f, cl.covers) {
					break
				}
			}
		}
		if cl.w != nil {
			// A goroutine waits for this call itself (a lookup, a flush):
			// nothing is left for FlushLocal to wait for once its reply is
			// read, and the woken caller must not find the reader still
			// replying (it would take its next FlushLocal for a flush).
			o.done()
		}
		if err := st.err(); err != nil {
			cl.finish(fmt.Errorf("tcp: rank %d refused: %w", o.p.rank, err))
		} else {
			cl.finish(nil)
		}
		o.done()
	}
}

// buffersWriter is a connection that writes net.Buffers itself (as one
// vectored write, which net.Buffers makes only on the runtime's own
// connections).
type buffersWriter interface {
	writeBuffers(b *net.Buffers) (int64, error)
}

// writeBuffers writes b to c.
func writeBuffers(c net.Conn, b *net.Buffers) (int64, error) {
	if w, ok := c.(buffersWriter); ok {
		return w.writeBuffers(b)
	}
	return b.WriteTo(c)
}

// writePieces writes parts to c as one stream, at most writePiece bytes
// at a time. Once the socket buffers are full, the peer's kernel takes
// bytes only as fast as the peer reads them: each piece written is a sign
// of life of p, so a payload that takes longer than the peer timeout to
// go out does not make p look silent.
func writePieces(c net.Conn, p *peer, parts ...[]byte) error {
	var spare [3][]byte
	for len(parts) > 0 {
		piece := net.Buffers(spare[:0])
		for room := writePiece; room > 0 && len(parts) > 0; {
			k := min(room, len(parts[0]))
			piece = append(piece, parts[0][:k])
			room -= k
			if parts[0] = parts[0][k:]; len(parts[0]) == 0 {
				parts = parts[1:]
			}
		}
		if _, err := writeBuffers(c, &piece); err != nil {
			return err
		}
		p.heard()
	}
	return nil
}

// readFull reads len(dst) bytes of br into dst: from the buffer at once
// if they fit in it (nothing is written unless all arrived), else
// streaming, every read a sign of life of p (a payload may take longer
// than the peer timeout to arrive).
func readFull(br *bufio.Reader, dst []byte, p *peer) error {
	if len(dst) <= br.Size() {
		b, err := br.Peek(len(dst))
		if err != nil {
			return err
		}
		copy(dst, b)
		_, err = br.Discard(len(dst))
		return err
	}
	_, err := readStream(br, dst, p)
	return err
}

// readStream reads len(dst) bytes of br straight into dst, every read a
// sign of life of p, and returns the number of bytes read.
func readStream(br *bufio.Reader, dst []byte, p *peer) (int, error) {
	done := 0
	for done < len(dst) {
		n, err := br.Read(dst[done:])
		if n > 0 {
			done += n
			p.heard()
		}
		if err != nil && done < len(dst) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
	}
	return done, nil
}
