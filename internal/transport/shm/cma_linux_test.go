package shm

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// amWorld is two endpoints whose rank 1 records the active messages it
// gets (id 3).
type amWorld struct {
	eps  []*Endpoint
	got  chan []byte
	hdrs chan []byte
}

func newAMWorld(t *testing.T, cfg Config) *amWorld {
	t.Helper()
	cfg.Size = 2
	w := &amWorld{eps: newGroup(t, cfg), got: make(chan []byte, 16), hdrs: make(chan []byte, 16)}
	w.eps[1].SetAMHandler(3, func(src int, hdr, payload []byte) {
		w.hdrs <- bytes.Clone(hdr)
		w.got <- bytes.Clone(payload)
	})
	return w
}

func (w *amWorld) next(t *testing.T) (hdr, payload []byte) {
	t.Helper()
	select {
	case hdr = <-w.hdrs:
		return hdr, <-w.got
	case <-time.After(10 * time.Second):
		t.Fatal("no message")
	}
	return nil, nil
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// TestSingleCopy: a large active message goes by single copy when the
// kernel allows it: one small record in the ring, the payload read from
// the sender's memory, whole, in order with the small messages around it.
func TestSingleCopy(t *testing.T) {
	if ok, why := CMAStatus(); !ok {
		t.Skip("single copy not possible here:", why)
	}
	w := newAMWorld(t, Config{})
	s := &w.eps[0].send[1] // the sender's end of the ring
	for i, n := range []int{cmaMin, 3 << 20, 100, cmaMin + 1} {
		before := s.tail
		msg := pattern(n, i)
		if err := w.eps[0].SendAM(1, 3, []byte{byte(i)}, msg); err != nil {
			t.Fatal(err)
		}
		used := s.tail - before
		if n >= cmaMin && used > recHead+64 {
			t.Errorf("message %d of %d bytes took %d bytes of the ring: not a single copy", i, n, used)
		}
		hdr, got := w.next(t)
		if !bytes.Equal(hdr, []byte{byte(i)}) || !bytes.Equal(got, msg) {
			t.Fatalf("message %d of %d bytes: header %v, payload equal %v", i, n, hdr, bytes.Equal(got, msg))
		}
	}
	if f := w.eps[1].CMAFailures(); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
}

// TestSingleCopyFallback: a target that cannot read the sender's memory
// (here: it knows a wrong pid for it) acknowledges the failure; the
// message then comes through the ring, once, whole, and so do the later
// ones, without another try; the target says why.
func TestSingleCopyFallback(t *testing.T) {
	if ok, why := CMAStatus(); !ok {
		t.Skip("single copy not possible here:", why)
	}
	w := newAMWorld(t, Config{})
	w.eps[1].cmaPids[0] = 1<<22 + 12345 // no such process (pid_max is at most 2^22)
	for i := range 3 {
		msg := pattern(cmaMin*2, i)
		if err := w.eps[0].SendAM(1, 3, []byte{9}, msg); err != nil {
			t.Fatal(err)
		}
		if _, got := w.next(t); !bytes.Equal(got, msg) {
			t.Fatalf("message %d after a failed single copy: payload differs", i)
		}
	}
	select {
	case <-w.got:
		t.Fatal("a message delivered twice")
	case <-time.After(20 * time.Millisecond):
	}
	if !w.eps[0].send[1].noCMA {
		t.Error("the sender still tries single copy to a target that cannot read it")
	}
	if f := w.eps[1].CMAFailures(); f[0] == nil {
		t.Errorf("no reason given for the failure: %v", f)
	}
}

// TestNoSingleCopy: Config.NoSingleCopy keeps large messages in the ring.
func TestNoSingleCopy(t *testing.T) {
	w := newAMWorld(t, Config{NoSingleCopy: true})
	s := &w.eps[0].send[1] // the sender's end of the ring
	before := s.tail
	msg := pattern(cmaMin*2, 1)
	if err := w.eps[0].SendAM(1, 3, nil, msg); err != nil {
		t.Fatal(err)
	}
	if _, got := w.next(t); !bytes.Equal(got, msg) {
		t.Fatal("payload differs")
	}
	if used := s.tail - before; used < uint64(len(msg)) {
		t.Errorf("%d bytes of ring for a %d-byte message", used, len(msg))
	}
}

// testPlacer lends buf for messages whose header's first byte is 1 and
// records its calls.
type testPlacer struct {
	buf      []byte
	placed   int
	unplaced int
}

func (p *testPlacer) Place(src int, hdr []byte, n int) []byte {
	if len(hdr) == 0 || hdr[0] != 1 || n > len(p.buf) {
		return nil
	}
	p.placed++
	return p.buf[:n]
}

func (p *testPlacer) Unplace(src int, hdr []byte) { p.unplaced++ }

// TestSingleCopyPlaced: a single-copy payload goes where the placer
// says, and the handler is given that buffer; a message the placer
// declines comes in the transport's buffer; a read that fails gives the
// buffer back (Unplace) and the message comes again through the ring,
// in a buffer of the transport's.
func TestSingleCopyPlaced(t *testing.T) {
	if ok, why := CMAStatus(); !ok {
		t.Skip("single copy not possible here:", why)
	}
	w := newAMWorld(t, Config{})
	p := &testPlacer{buf: make([]byte, 4*cmaMin)}
	inPlace := make(chan bool, 16)
	w.eps[1].SetAMPlacer(3, p)
	w.eps[1].SetAMHandler(3, func(src int, hdr, payload []byte) {
		inPlace <- len(payload) > 0 && &payload[0] == &p.buf[0]
		w.hdrs <- bytes.Clone(hdr)
		w.got <- bytes.Clone(payload)
	})
	for i, c := range []struct {
		hdr     byte
		n       int
		inPlace bool
	}{{1, cmaMin, true}, {2, cmaMin, false}, {1, 8 * cmaMin, false}, {1, 3 * cmaMin, true}} {
		msg := pattern(c.n, i)
		if err := w.eps[0].SendAM(1, 3, []byte{c.hdr}, msg); err != nil {
			t.Fatal(err)
		}
		if _, got := w.next(t); !bytes.Equal(got, msg) {
			t.Fatalf("message %d: payload differs", i)
		}
		if got := <-inPlace; got != c.inPlace {
			t.Errorf("message %d (header %d, %d bytes): delivered in the placer's buffer %v, want %v", i, c.hdr, c.n, got, c.inPlace)
		}
	}
	if p.placed != 2 || p.unplaced != 0 {
		t.Errorf("%d placed, %d unplaced; want 2, 0", p.placed, p.unplaced)
	}

	w.eps[1].cmaPids[0] = 1<<22 + 12345 // no such process: the read fails
	msg := pattern(2*cmaMin, 9)
	if err := w.eps[0].SendAM(1, 3, []byte{1}, msg); err != nil {
		t.Fatal(err)
	}
	if _, got := w.next(t); !bytes.Equal(got, msg) {
		t.Fatal("message after a failed read: payload differs")
	}
	if <-inPlace {
		t.Error("message after a failed read delivered in the placer's buffer")
	}
	if p.placed != 3 || p.unplaced != 1 {
		t.Errorf("after a failed read: %d placed, %d unplaced; want 3, 1", p.placed, p.unplaced)
	}
}

// TestRingStaleMarks: a ring's bytes from an earlier lap are never taken
// for a record, even when a payload wrote there exactly the mark and a
// plausible length that a record at that place in the next lap would
// have: the producer clears the place of the next record's mark before
// it publishes one.
func TestRingStaleMarks(t *testing.T) {
	const rs = 4096
	w := newAMWorld(t, Config{RingSize: rs, NoSingleCopy: true})
	// A lap of large records whose payload words forge, at every
	// 8-byte place, the mark of the next lap's record at that place.
	piece := maxRecord(rs) - recHead
	for i := 0; i < rs/maxRecord(rs); i++ {
		payload := make([]byte, piece)
		for off := 0; off+8 <= piece; off += 8 {
			q := uint64(i*maxRecord(rs)+recHead+off) + rs // the place in the next lap
			binary.LittleEndian.PutUint64(payload[off:], uint64(recHead+8)<<32|uint64(recMark(q)))
		}
		if err := w.eps[0].SendAM(1, 3, nil, payload); err != nil {
			t.Fatal(err)
		}
		if _, got := w.next(t); !bytes.Equal(got, payload) {
			t.Fatalf("large message %d: payload differs", i)
		}
	}
	// The next lap: small messages, each delivered once, as sent.
	for i := range 200 {
		msg := []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}
		if err := w.eps[0].SendAM(1, 3, []byte{9}, msg); err != nil {
			t.Fatal(err)
		}
		hdr, got := w.next(t)
		if !bytes.Equal(got, msg) || !bytes.Equal(hdr, []byte{9}) {
			t.Fatalf("small message %d: header %v payload %v, want [9] %v", i, hdr, got, msg)
		}
	}
	select {
	case got := <-w.got:
		t.Fatalf("a message that was never sent: %v", got)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestDrainLeavesSingleCopyForAckedSender: while a single-copy send of
// the draining endpoint waits for its acknowledgement, its drain handles
// the peer's single-copy records (two ranks sending large messages to
// each other both complete); once the acknowledgement has come, it
// leaves the next one in the ring, for the receive its caller is about to
// post, and a later drain handles it.
func TestDrainLeavesSingleCopyForAckedSender(t *testing.T) {
	if ok, why := CMAStatus(); !ok {
		t.Skip("single copy not possible here:", why)
	}
	w := newAMWorld(t, Config{})
	e := w.eps[1]
	for !e.draining.tryLock() {
		time.Sleep(time.Millisecond) // the progress goroutine drains
	}
	acks := w.eps[0].own.ringHeads[1] // where rank 0 acknowledges rank 1's sends
	e.ackWait, e.ackSeq = acks, 7
	msg := pattern(cmaMin, 3)
	sent := make(chan error, 1)
	go func() { sent <- w.eps[0].SendAM(1, 3, []byte{9}, msg) }()
	for !e.pending() {
		time.Sleep(100 * time.Microsecond)
	}

	// Not yet acknowledged: the record is handled.
	e.drain(nil, 1<<30)
	if _, got := w.next(t); !bytes.Equal(got, msg) {
		t.Fatal("payload differs")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}

	// Acknowledged: the next record stays until the send is over.
	acks.storeRdv(7 << 1)
	go func() { sent <- w.eps[0].SendAM(1, 3, []byte{9}, msg) }()
	for !e.pending() {
		time.Sleep(100 * time.Microsecond)
	}
	e.drain(nil, 1<<30)
	select {
	case <-w.hdrs:
		t.Fatal("the record was handled while the acknowledged send drained")
	case <-time.After(20 * time.Millisecond):
	}
	if !e.pending() {
		t.Fatal("the record left in the ring is not pending")
	}
	e.ackWait = nil
	e.drain(nil, 1<<30)
	e.draining.unlock()
	if _, got := w.next(t); !bytes.Equal(got, msg) {
		t.Fatal("payload differs")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}
