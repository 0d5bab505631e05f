package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma/internal/transport/local"
)

// msgHdr builds a two-sided message header as send() does.
func msgHdr(ctx ctxID, tag int) []byte {
	var hdr [msgHeaderLen]byte
	binary.LittleEndian.PutUint16(hdr[0:2], uint16(ctx))
	binary.LittleEndian.PutUint32(hdr[4:8], uint32(int32(tag)))
	return hdr[:]
}

// msgPayload is the payload of message id: the id in the first two bytes,
// then filler derived from it, n bytes in all (n >= 2).
func msgPayload(id, n int) []byte {
	p := make([]byte, n)
	binary.LittleEndian.PutUint16(p, uint16(id))
	for i := 2; i < n; i++ {
		p[i] = byte(id*31 + i)
	}
	return p
}

// refMatcher is the reference: MPI matching with slices and linear scans.
type refMatcher struct {
	msgs       []refMsg  // every message, by id
	recvs      []refRecv // every receive, by id
	posted     []int     // receive ids, in posting order
	unexpected []int     // message ids, in arrival order
}

type refMsg struct {
	src, tag int
	ctx      ctxID
	data     []byte
}

type refRecv struct {
	src, tag  int
	ctx       ctxID
	blen      int
	got       int // message id, -1 while unmatched
	cancelled bool
}

func (m *refMatcher) match(r refRecv, g refMsg) bool {
	return r.ctx == g.ctx && (r.src == AnySource || r.src == g.src) && (r.tag == AnyTag || r.tag == g.tag)
}

func (m *refMatcher) arrive(g refMsg) {
	id := len(m.msgs)
	m.msgs = append(m.msgs, g)
	for i, rid := range m.posted {
		if m.match(m.recvs[rid], g) {
			m.recvs[rid].got = id
			m.posted = append(m.posted[:i:i], m.posted[i+1:]...)
			return
		}
	}
	m.unexpected = append(m.unexpected, id)
}

func (m *refMatcher) post(r refRecv) {
	r.got = -1
	rid := len(m.recvs)
	m.recvs = append(m.recvs, r)
	for i, mid := range m.unexpected {
		if m.match(r, m.msgs[mid]) {
			m.recvs[rid].got = mid
			m.unexpected = append(m.unexpected[:i:i], m.unexpected[i+1:]...)
			return
		}
	}
	m.posted = append(m.posted, rid)
}

// cancel is MPI_Cancel of a receive: it succeeds (true) unless the
// receive has matched.
func (m *refMatcher) cancel(rid int) bool {
	if m.recvs[rid].got >= 0 {
		return false
	}
	m.recvs[rid].cancelled = true
	for i, p := range m.posted {
		if p == rid {
			m.posted = append(m.posted[:i:i], m.posted[i+1:]...)
			break
		}
	}
	return true
}

// matchHarness drives a real Comm and the reference with the same
// operations.
type matchHarness struct {
	t     testing.TB
	c     *Comm
	ref   refMatcher
	reqs  []*recvReq
	trace []string
}

func newMatchHarness(t testing.TB, size int) *matchHarness {
	eps, err := local.New(size)
	if err != nil {
		t.Fatal(err)
	}
	c := New(eps[0], nil, nil)
	t.Cleanup(func() { _ = c.Close() })
	return &matchHarness{t: t, c: c}
}

func (h *matchHarness) arrive(src int, ctx ctxID, tag, n int) {
	id := len(h.ref.msgs)
	p := msgPayload(id, n)
	h.trace = append(h.trace, fmt.Sprintf("msg%d(src %d ctx %d tag %d len %d)", id, src, ctx, tag, n))
	h.ref.arrive(refMsg{src: src, tag: tag, ctx: ctx, data: append([]byte(nil), p...)})
	h.c.handleMsg(src, msgHdr(ctx, tag), p)
	clear(p) // the transport does not let a handler retain the payload
}

func (h *matchHarness) post(src int, ctx ctxID, tag, blen int) {
	h.trace = append(h.trace, fmt.Sprintf("recv%d(src %d ctx %d tag %d buf %d)", len(h.reqs), src, ctx, tag, blen))
	h.ref.post(refRecv{src: src, tag: tag, ctx: ctx, blen: blen})
	r := &recvReq{src: src, from: src, ctx: ctx, tag: tag, buf: make([]byte, blen)}
	h.reqs = append(h.reqs, r)
	h.c.post(r)
}

func (h *matchHarness) cancel(rid int) {
	h.trace = append(h.trace, fmt.Sprintf("cancel(recv%d)", rid))
	want := h.ref.cancel(rid)
	if got := h.c.cancel(h.reqs[rid]); got != want {
		h.fail("cancel(recv%d) = %v, reference %v", rid, got, want)
	}
}

func (h *matchHarness) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\noperations:\n%v", fmt.Sprintf(format, args...), h.trace)
}

// check compares every receive and both queues with the reference.
func (h *matchHarness) check() {
	h.t.Helper()
	for rid, rr := range h.ref.recvs {
		r := h.reqs[rid]
		done := h.c.recvDone(r)
		if done != (rr.got >= 0) {
			h.fail("recv%d: done=%v, reference matched message %d", rid, done, rr.got)
		}
		if !done {
			continue
		}
		g := h.ref.msgs[rr.got]
		ncopy := min(len(g.data), rr.blen)
		if string(r.buf[:ncopy]) != string(g.data[:ncopy]) {
			h.fail("recv%d: got message %d (% x), reference message %d", rid, binary.LittleEndian.Uint16(r.buf), r.buf, rr.got)
		}
		want := Status{Source: g.src, Tag: g.tag, Count: len(g.data)}
		if r.st != want {
			h.fail("recv%d: status %+v, want %+v", rid, r.st, want)
		}
		if trunc := len(g.data) > rr.blen; trunc != errors.Is(r.err, ErrTruncate) || (!trunc && r.err != nil) {
			h.fail("recv%d: err %v with %d bytes into %d", rid, r.err, len(g.data), rr.blen)
		}
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if h.c.posted.Len() != len(h.ref.posted) {
		h.fail("%d receives posted, reference %d", h.c.posted.Len(), len(h.ref.posted))
	}
	for i, rid := range h.ref.posted {
		if h.c.posted.At(i) != h.reqs[rid] {
			h.fail("posted queue entry %d is not recv%d", i, rid)
		}
	}
	if h.c.unexpected.Len() != len(h.ref.unexpected) {
		h.fail("%d unexpected messages, reference %d", h.c.unexpected.Len(), len(h.ref.unexpected))
	}
	for i, mid := range h.ref.unexpected {
		m, g := h.c.unexpected.At(i), h.ref.msgs[mid]
		if m.src != g.src || m.tag != g.tag || m.ctx != g.ctx || string(m.data) != string(g.data) {
			h.fail("unexpected queue entry %d is %+v, reference message %d", i, m, mid)
		}
	}
}

// runMatchOps decodes data into operations: data[0] picks the number of
// ranks (1..4), then each operation takes three bytes.
//
//	op%4 in {0,1}: message arrival: src b1%size, tag (b1>>4)%3, ctx b2&1, length 2+(b2>>1)%5
//	op%4 == 2:     post: src b1%(size+1)-1 (-1 is AnySource), tag (b1>>4)%4-1 (-1 is AnyTag), ctx b2&1, buffer 2+(b2>>1)%5
//	op%4 == 3:     cancel receive b1 % (receives so far), if any
func runMatchOps(t testing.TB, data []byte) {
	if len(data) == 0 {
		return
	}
	size := 1 + int(data[0]%4)
	h := newMatchHarness(t, size)
	data = data[1:]
	for len(data) >= 3 {
		op, b1, b2 := data[0], int(data[1]), data[2]
		data = data[3:]
		switch op % 4 {
		case 0, 1:
			h.arrive(b1%size, ctxID(b2&1), (b1>>4)%3, 2+int(b2>>1)%5)
		case 2:
			h.post(b1%(size+1)-1, ctxID(b2&1), (b1>>4)%4-1, 2+int(b2>>1)%5)
		case 3:
			if len(h.reqs) > 0 {
				h.cancel(b1 % len(h.reqs))
			}
		}
		h.check()
	}
}

func FuzzMatching(f *testing.F) {
	// Two messages from one source with one tag, then two wildcard receives.
	f.Add([]byte{1, 0, 0x00, 0x00, 0, 0x00, 0x02, 2, 0x00, 0x00, 2, 0x00, 0x00})
	// Receives first (AnySource/AnyTag, specific), then messages.
	f.Add([]byte{3, 2, 0x00, 0x00, 2, 0x22, 0x00, 0, 0x11, 0x00, 0, 0x21, 0x00, 0, 0x01, 0x00})
	// Contexts: a collective-context message must not match a user receive.
	f.Add([]byte{2, 0, 0x01, 0x01, 2, 0x00, 0x00, 0, 0x01, 0x00, 2, 0x00, 0x01})
	// Truncation: a 6-byte message into a 2-byte buffer.
	f.Add([]byte{0, 2, 0x00, 0x00, 0, 0x00, 0x08})
	// Cancel before and after matching.
	f.Add([]byte{1, 2, 0x10, 0x00, 2, 0x00, 0x00, 3, 0x00, 0x00, 0, 0x10, 0x00, 3, 0x01, 0x00, 3, 0x00, 0x00})
	// Mixed sources and tags.
	f.Add([]byte{3, 0, 0x01, 0x00, 0, 0x12, 0x00, 0, 0x23, 0x00, 0, 0x02, 0x00, 2, 0x30, 0x00, 2, 0x02, 0x00, 2, 0x13, 0x00, 2, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 3*400 {
			data = data[:3*400]
		}
		runMatchOps(t, data)
	})
}

func TestMatchingRandom(t *testing.T) {
	// A deterministic sweep, so that plain `go test` exercises the
	// reference comparison beyond the seed corpus.
	var x uint64 = 88172645463325252
	for i := 0; i < 300; i++ {
		data := make([]byte, 1+3*60)
		for j := range data {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			data[j] = byte(x)
		}
		runMatchOps(t, data)
	}
}

// TestNonOvertaking: messages from one source that a receive could both
// match are received in send order, whether the receives are posted before
// or after the messages arrive, and with wildcards.
func TestNonOvertaking(t *testing.T) {
	const m = 50
	for _, mode := range []string{"unexpected", "posted"} {
		for _, wild := range []struct{ src, tag int }{{1, 7}, {AnySource, 7}, {1, AnyTag}, {AnySource, AnyTag}} {
			t.Run(fmt.Sprintf("%s/src%d/tag%d", mode, wild.src, wild.tag), func(t *testing.T) {
				h := newMatchHarness(t, 3)
				if mode == "posted" {
					for i := 0; i < m; i++ {
						h.post(wild.src, ctxUser, wild.tag, 2)
					}
				}
				for i := 0; i < m; i++ {
					h.arrive(1, ctxUser, 7, 2)
				}
				if mode == "unexpected" {
					for i := 0; i < m; i++ {
						h.post(wild.src, ctxUser, wild.tag, 2)
					}
				}
				h.check()
				for i, r := range h.reqs {
					if id := int(binary.LittleEndian.Uint16(r.buf)); !r.isDone() || id != i {
						t.Fatalf("receive %d got message %d (done %v)", i, id, r.isDone())
					}
				}
			})
		}
	}
}

// TestMatchOrder checks the two scan orders directly.
func TestMatchOrder(t *testing.T) {
	t.Run("posted order", func(t *testing.T) {
		h := newMatchHarness(t, 3)
		h.post(2, ctxUser, 5, 4)         // recv0: does not match
		h.post(AnySource, ctxUser, 5, 4) // recv1: first that matches
		h.post(1, ctxUser, 5, 4)         // recv2: matches too, posted later
		h.arrive(1, ctxUser, 5, 4)
		h.check()
		if h.reqs[0].isDone() || !h.reqs[1].isDone() || h.reqs[2].isDone() {
			t.Fatalf("done = %v %v %v, want false true false", h.reqs[0].isDone(), h.reqs[1].isDone(), h.reqs[2].isDone())
		}
	})
	t.Run("arrival order", func(t *testing.T) {
		h := newMatchHarness(t, 3)
		h.arrive(2, ctxUser, 9, 4) // msg0: does not match the receive
		h.arrive(2, ctxUser, 5, 4) // msg1: first that matches
		h.arrive(1, ctxUser, 5, 4) // msg2: matches, arrived later
		h.post(AnySource, ctxUser, 5, 4)
		h.check()
		if id := binary.LittleEndian.Uint16(h.reqs[0].buf); id != 1 {
			t.Fatalf("received message %d, want 1", id)
		}
	})
	t.Run("contexts", func(t *testing.T) {
		h := newMatchHarness(t, 2)
		h.arrive(1, ctxColl, 5, 4)
		h.post(AnySource, ctxUser, AnyTag, 4)
		h.check()
		if h.reqs[0].isDone() {
			t.Fatal("a user receive matched a collective-context message")
		}
		if _, found, err := h.c.Iprobe(AnySource, AnyTag); found || err != nil {
			t.Fatalf("Iprobe found a collective-context message (err %v)", err)
		}
		h.arrive(1, ctxUser, 5, 4)
		h.check()
		if !h.reqs[0].isDone() {
			t.Fatal("user message not matched")
		}
	})
	t.Run("short header dropped", func(t *testing.T) {
		h := newMatchHarness(t, 2)
		h.c.handleMsg(1, []byte{0, 0, 0}, []byte{1})
		if h.c.unexpected.Len() != 0 {
			t.Fatal("a message with a short header was queued")
		}
	})
}

func TestCancel(t *testing.T) {
	h := newMatchHarness(t, 2)
	h.post(1, ctxUser, 3, 4) // recv0
	h.post(1, ctxUser, 3, 4) // recv1
	h.cancel(0)              // not matched: cancelled and unqueued
	h.check()
	h.arrive(1, ctxUser, 3, 4) // goes to recv1, not the cancelled recv0
	h.check()
	if h.reqs[0].isDone() || !h.reqs[1].isDone() {
		t.Fatalf("done = %v %v, want false true", h.reqs[0].isDone(), h.reqs[1].isDone())
	}
	h.cancel(1) // matched: cancel fails
	h.cancel(0) // cancelled again: still reports cancelled
	h.arrive(1, ctxUser, 3, 4)
	h.check()
	if h.c.unexpected.Len() != 1 {
		t.Fatalf("message after the cancel: %d unexpected, want 1", h.c.unexpected.Len())
	}

	// Through the request API: Free cancels an unmatched Irecv, so a later
	// message stays unexpected for the next receive.
	c := h.c
	req, err := c.Irecv(make([]byte, 4), 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := req.Test(); done || err != nil {
		t.Fatalf("Test of an unmatched Irecv = %v, %v", done, err)
	}
	if err := req.Free(); err != nil {
		t.Fatal(err)
	}
	if err := req.Free(); !errors.Is(err, ErrFreed) {
		t.Fatalf("second Free = %v, want ErrFreed", err)
	}
	c.handleMsg(1, msgHdr(ctxUser, 4), []byte{9, 9})
	st, found, err := c.Iprobe(1, 4)
	if err != nil || !found || st.Count != 2 {
		t.Fatalf("Iprobe after Free = %+v, %v, %v", st, found, err)
	}
}

// TestSendRecvOrder runs the real Send/Recv path between ranks: rank 0
// sends m messages with varying tags, rank 1 receives them in order with
// wildcards and by tag.
func TestSendRecvOrder(t *testing.T) {
	const m = 200
	cs := newComms(t, 2)
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		if c.Rank() == 0 {
			for i := 0; i < m; i++ {
				if err := c.Send(ctx, []byte{byte(i), byte(i >> 8)}, 1, i%3); err != nil {
					return err
				}
			}
			return c.Send(ctx, nil, 1, 99)
		}
		// Wait for the end marker so every message is unexpected, then
		// take the tag-2 messages first, then everything else.
		if _, err := c.Probe(ctx, 0, 99); err != nil {
			return err
		}
		buf := make([]byte, 2)
		for i := 2; i < m; i += 3 {
			st, err := c.Recv(ctx, buf, 0, 2)
			if err != nil {
				return err
			}
			if got := int(binary.LittleEndian.Uint16(buf)); got != i || st.Tag != 2 || st.Source != 0 || st.Count != 2 {
				return fmt.Errorf("tag-2 receive: message %d %+v, want %d", got, st, i)
			}
		}
		for i := 0; i < m; i++ {
			if i%3 == 2 {
				continue
			}
			st, err := c.Recv(ctx, buf, AnySource, AnyTag)
			if err != nil {
				return err
			}
			if got := int(binary.LittleEndian.Uint16(buf)); got != i || st.Tag != i%3 {
				return fmt.Errorf("wildcard receive: message %d %+v, want %d", got, st, i)
			}
		}
		st, err := c.Recv(ctx, nil, 0, 99)
		if err != nil || st.Count != 0 {
			return fmt.Errorf("end marker: %+v, %v", st, err)
		}
		if _, err := c.Recv(ctx, make([]byte, 1), AnySource, -2); !errors.Is(err, ErrTag) {
			return fmt.Errorf("receive with tag -2: %v, want ErrTag", err)
		}
		return nil
	})
}
