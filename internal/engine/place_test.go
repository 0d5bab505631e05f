package engine

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// msgHeader is the header of a user message with tag, as send builds it.
func msgHeader(c *Comm, tag int) []byte {
	return msgHdr(c.user, tag)
}

// TestPlaceMessage: the placer lends the buffer of the first posted
// receive the message matches, and only if the payload fits; a message
// delivered in that buffer completes the receive without a copy, with
// the right status; a receive whose buffer is lent is not lent twice.
func TestPlaceMessage(t *testing.T) {
	cs := newComms(t, 2)
	c := cs[1]
	p := (*msgPlacer)(c)
	small := make([]byte, 4)
	big := make([]byte, 64)
	r1, err := c.Irecv(small, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Irecv(big, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	hdr := msgHeader(c, 7)
	if b := p.Place(0, hdr, 16); b != nil {
		t.Fatal("Place lent a buffer too small for the payload")
	}
	if b := p.Place(0, msgHeader(c, 8), 4); b != nil {
		t.Fatal("Place lent the buffer of a receive with another tag")
	}
	b := p.Place(0, hdr, 4)
	if b == nil || &b[0] != &small[0] || len(b) != 4 {
		t.Fatalf("Place lent %p (%d bytes), want the first receive's buffer %p", b, len(b), small)
	}
	if p.Place(0, hdr, 4) != nil {
		t.Fatal("Place lent a buffer already lent")
	}
	copy(b, "abcd") // the transport writes the payload
	c.handleMsg(0, hdr, b)
	st, done, err := r1.Test()
	if !done || err != nil || st.Count != 4 || st.Source != 0 || st.Tag != 7 || string(small) != "abcd" {
		t.Fatalf("placed receive: done %v, %v, status %+v, buffer %q", done, err, st, small)
	}
	// The next message goes to the second receive, by copy.
	c.handleMsg(0, hdr, []byte("xyz"))
	st, done, err = r2.Test()
	if !done || err != nil || st.Count != 3 || !bytes.Equal(big[:3], []byte("xyz")) {
		t.Fatalf("second receive: done %v, %v, status %+v", done, err, st)
	}
}

// TestPlacedReceiveCancel: a receive whose buffer the transport holds
// is not cancelled under it: cancel waits until the transport gives the
// buffer back (Unplace), and then cancels.
func TestPlacedReceiveCancel(t *testing.T) {
	cs := newComms(t, 2)
	c := cs[1]
	p := (*msgPlacer)(c)
	buf := make([]byte, 8)
	r, err := c.Irecv(buf, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	hdr := msgHeader(c, 5)
	if p.Place(0, hdr, 8) == nil {
		t.Fatal("Place lent nothing")
	}
	freed := make(chan error, 1)
	go func() { freed <- r.Free() }()
	select {
	case err := <-freed:
		t.Fatalf("Free returned (%v) while the transport held the buffer", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Unplace(0, hdr)
	select {
	case err := <-freed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Free still waits after Unplace")
	}
	// Cancelled: a message now is unexpected, and a new receive gets it.
	c.handleMsg(0, hdr, []byte("late"))
	in := make([]byte, 8)
	st, err := c.Recv(context.Background(), in, 0, 5)
	if err != nil || st.Count != 4 || string(in[:4]) != "late" {
		t.Fatalf("Recv after the cancel: %+v, %v, %q", st, err, in)
	}
	if string(buf[:4]) == "late" {
		t.Error("the cancelled receive's buffer got the message")
	}
}
