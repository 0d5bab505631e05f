package shm

import (
	"fmt"
	"sync"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/sys"
	"github.com/narma-rma/narma/internal/transport"
)

// Active messages: records in the byte ring of each (source, target)
// pair, large messages split and reassembled, waits for room.

// sender is the producer state of this endpoint on one target's ring.
type sender struct {
	mu    sync.Mutex
	tail  uint64 // next write position
	head  uint64 // last head read from the consumer
	rdv   uint64 // single-copy messages sent
	noCMA bool   // the target could not read this process's memory
}

// assembly is a message arriving in several records.
type assembly struct {
	id  uint8
	hdr []byte
	buf []byte
	got int
}

// backoffYields is how many rounds of a wait for room at a target yield
// the processor before they sleep: a ring fills in the normal course of a
// stream (a large message fills it several times over while the target
// drains it), and a sleep there, some 50 us at the least, would cost more
// than the copy of a whole ring. About a millisecond of yields.
const backoffYields = 1024

// backoff waits a little for room at target (round spin of a wait):
// yields, then sleeps growing to a millisecond (a target that does not
// drain for that long is busy or stopped). It fails if the target or this
// endpoint is gone.
func (e *Endpoint) backoff(target int, spin int) error {
	if spin&15 == 0 || spin >= backoffYields {
		if err := e.peerErr(target); err != nil {
			return err
		}
	}
	if spin < backoffYields {
		sys.Yield()
		return nil
	}
	d := time.Duration(spin-backoffYields+1) * 10 * time.Microsecond
	time.Sleep(min(d, time.Millisecond))
	return nil
}

// maxRecord is the largest record written to a ring of size rs: a quarter
// of it, so that a reader and a writer always overlap.
func maxRecord(rs int) int { return rs / 4 }

// SendAM copies hdr and payload into target's ring for this endpoint and
// returns; a message larger than a record is split into several. It waits
// while the ring is full (the target drains it in the background).
func (e *Endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	if err := e.peerErr(target); err != nil {
		return err
	}
	if id >= transport.MaxAMID {
		return fmt.Errorf("shm: AMID %d out of range", id)
	}
	t := e.peers[target]
	data := t.ringData[e.rank]
	rh := t.ringHeads[e.rank]
	rs := len(data)
	maxRec := maxRecord(rs)
	if recHead+len(hdr) > maxRec || len(payload) > 1<<31 {
		return fmt.Errorf("shm: active message with a %d-byte header and %d-byte payload: %w", len(hdr), len(payload), transport.ErrTooLarge)
	}
	s := &e.send[target]
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(payload) >= cmaMin && e.cma && !s.noCMA {
		sent, err := e.sendRemote(target, s, id, hdr, payload)
		if err != nil || sent {
			return err
		}
		s.noCMA = true // the target cannot read this process: the ring from now on
	}
	first := true
	rest := payload
	for first || len(rest) > 0 {
		piece := maxRec - recHead
		if first {
			piece -= len(hdr)
		}
		piece = min(piece, len(rest))
		length, flags, hdrLen := uint32(recHead+piece), uint8(0), uint16(0)
		var h []byte
		if first {
			flags |= recFirst
			length += uint32(len(hdr))
			hdrLen = uint16(len(hdr))
			h = hdr
		}
		if piece == len(rest) {
			flags |= recLast
		}
		if err := e.writeRecord(target, s, data, rh, length, recRest(uint8(id), flags, hdrLen, uint32(len(payload))), h, rest[:piece]); err != nil {
			return err
		}
		rest = rest[piece:]
		first = false
	}
	return nil
}

// writeRecord writes the record of the given length whose head's second
// word is rest (recRest), followed by hdr and body, into the ring data of
// target for this endpoint (s locked), waiting for room, and publishes it.
func (e *Endpoint) writeRecord(target int, s *sender, data []byte, rh *amRing, length uint32, rest uint64, hdr, body []byte) error {
	t := e.peers[target]
	rs := len(data)
	need := uint64(pad8(int(length)))
	// Room for the record and the first word of the next one, which
	// publishRec's caller clears.
	for spin := 0; s.tail+need+8-s.head > uint64(rs); spin++ {
		s.head = rh.loadHead()
		if s.tail+need+8-s.head <= uint64(rs) {
			break
		}
		e.ring(t)
		if err := e.backoff(target, spin); err != nil {
			return err
		}
	}
	raceRelease()
	start := s.tail
	*recWord(data, start+8) = rest // 8-aligned: never wraps
	pos := start + recHead
	ringWrite(data, pos, hdr)
	pos += uint64(len(hdr))
	ringWrite(data, pos, body)
	s.tail += need
	// Clear the first word of the next record's place before this
	// record is published, so that whatever an earlier lap left there
	// (a payload's bytes, say) cannot pass for a published record when
	// the consumer comes to it: it sees the zero or a later store.
	mem.StoreRelease64(recWord(data, s.tail), 0)
	publishRec(data, start, length, t.relaxed)
	e.ring(t)
	return nil
}

// drainRing handles the records published in the ring of src, up to one
// that starts a cache line after a record it handled; draining is held. A ring whose record waits for its handler (installed after
// the start-up barrier) is marked stalled, so that it does not keep
// pending true (the progress goroutine would spin on it); every drain
// looks at it again.
func (e *Endpoint) drainRing(src int) bool {
	if e.ringBroken[src] {
		return false
	}
	rh := e.own.ringHeads[src]
	data := e.own.ringData[src]
	head := rh.loadHead()
	maxRec := maxRecord(len(data))
	did := false
	for {
		w, ok := recAt(data, head)
		if !ok {
			break
		}
		raceAcquire()
		did = true
		var rec recHeader
		rec.decode(w, *recWord(data, head+8))
		if int(rec.length) < recHead || int(rec.length) > maxRec || int(rec.hdrLen) > int(rec.length)-recHead {
			// A corrupt ring: the peer is broken. Read no more of it.
			e.ringBroken[src] = true
			return true
		}
		if rec.flags&recFirst != 0 && e.AM(transport.AMID(rec.id)) == nil {
			// No handler yet: leave the rest of this ring for a later
			// drain (the progress goroutine retries on its timeout).
			e.ringStalled[src].Store(true)
			return did
		}
		if e.ringStalled[src].Load() {
			// Stored only on a change: a store of sync/atomic is an
			// exchange, which waits for every store before it.
			e.ringStalled[src].Store(false)
		}
		body := int(rec.length) - recHead
		b := ringSlice(data, head+recHead, body)
		if b == nil {
			if cap(e.scratch) < body {
				e.scratch = make([]byte, body)
			}
			b = e.scratch[:body]
			ringRead(data, head+recHead, b)
		}
		if rec.flags&recRemote != 0 {
			if e.ackWait != nil && e.ackWait.loadRdv()>>1 == e.ackSeq {
				// A single-copy send is waiting, and its acknowledgement
				// has come: it returns now, and its caller may post the
				// receive of this message next (a ping-pong's answer).
				// Read into that receive's buffer then, not here into a
				// buffer of the transport's, which the engine would
				// copy twice more.
				return did
			}
			e.remote(src, rh, &rec, b)
		} else {
			e.record(src, &rec, b)
		}
		head += uint64(pad8(int(rec.length)))
		rh.storeHead(head)
		if head%lineSize == 0 {
			// The next record's first word starts a cache line the
			// consumer has not read, whose word the producer cleared
			// just now (writeRecord): to look at it is to wait for the
			// line to come from the producer's core, a handoff (150 ns
			// here) on the path of whoever waits for the record just
			// handled. The next drain looks (Poll's callers that need
			// everything poll until it reports false).
			break
		}
	}
	return did
}

// record handles one record of src with body b (header then payload
// piece); draining is held.
func (e *Endpoint) record(src int, rec *recHeader, b []byte) {
	if rec.flags&recFirst != 0 {
		hdr, piece := b[:rec.hdrLen:rec.hdrLen], b[rec.hdrLen:]
		if rec.flags&recLast != 0 {
			e.deliverAM(src, rec.id, hdr, piece)
			return
		}
		a := e.reassembly(src, int(rec.total))
		a.id, a.hdr = rec.id, append(a.hdr[:0], hdr...)
		a.got = copy(a.buf, piece)
		e.partial[src] = a
		return
	}
	a := e.partial[src]
	if a == nil {
		return // a continuation without a start: drop
	}
	a.got += copy(a.buf[a.got:], b)
	if rec.flags&recLast != 0 {
		e.partial[src] = nil
		e.deliverAM(src, a.id, a.hdr, a.buf[:a.got])
		a.release()
	}
}

// reassembly returns the assembly of src, its buffer n bytes long. The
// buffer of the source's last large message is reused (a handler keeps
// nothing it is given): a fresh one per message costs its zeroing and,
// once the runtime has returned it to the system, a page fault per page.
func (e *Endpoint) reassembly(src, n int) *assembly {
	a := e.spare[src]
	if a == nil {
		a = &assembly{}
		e.spare[src] = a
	}
	if cap(a.buf) < n {
		a.buf = make([]byte, n)
	}
	a.buf = a.buf[:n]
	return a
}

// release drops a's buffer after its message was delivered if it is too
// large to keep for the next one.
func (a *assembly) release() {
	if cap(a.buf) > maxSpareAssembly {
		a.buf = nil
	}
}

// maxSpareAssembly is the largest reassembly buffer kept per source for
// the next large message.
const maxSpareAssembly = 4 << 20

func (e *Endpoint) deliverAM(src int, id uint8, hdr, payload []byte) {
	if h := e.AM(transport.AMID(id)); h != nil {
		h(src, hdr, payload[:len(payload):len(payload)])
	}
}
