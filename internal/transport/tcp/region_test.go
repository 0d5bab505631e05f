package tcp

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// gatedConn holds every write until its gate opens.
type gatedConn struct {
	net.Conn
	gate chan struct{}
}

func (c *gatedConn) Write(b []byte) (int, error) {
	<-c.gate
	return c.Conn.Write(b)
}

// waitUser waits until rank holds a handle on region key of e, as far as
// e knows: it answered the rank's lookup.
func waitUser(t *testing.T, e *Endpoint, key transport.Key, rank int) {
	t.Helper()
	e.rmu.RLock()
	x := e.regions[key]
	e.rmu.RUnlock()
	deadline := time.Now().Add(waitLimit)
	for {
		x.smu.Lock()
		ok := x.users[rank]
		x.smu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rank %d did not look region %d of rank %d up", rank, key, e.Rank())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLookupRacingUnexpose has rank 1 answer rank 0's lookup of a region,
// and withdraw the region (Unexpose, which tells rank 0) before the answer
// reaches rank 0: the withdrawal arrives on the other connection, before
// rank 0 has a handle to stop. Rank 0 must not end up with a live handle
// on the withdrawn region: Region fails with ErrNoRegion (or its handle
// refuses every operation at once), a later Region fails too, and nothing
// is written.
func TestLookupRacingUnexpose(t *testing.T) {
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	eps := newGroup(t, Config{Size: 2, PeerTimeout: 20 * time.Second,
		wrapConn: func(self, peer int, out bool, c net.Conn) net.Conn {
			if self == 1 && !out { // rank 1's answers to rank 0's requests
				return &gatedConn{Conn: c, gate: gate}
			}
			return c
		}})
	t.Cleanup(release) // before the endpoints close
	w := watch(t, eps[1], 64)
	type result struct {
		r   transport.Region
		err error
	}
	looked := make(chan result, 1)
	go func() {
		r, err := eps[0].Region(1, w.key, 64)
		looked <- result{r, err}
	}()
	waitUser(t, eps[1], w.key, 0) // its answer waits at the gate
	if err := eps[1].Unexpose(w.key); err != nil {
		t.Fatalf("Unexpose: %v", err)
	}
	release()
	var res result
	select {
	case res = <-looked:
	case <-time.After(waitLimit):
		t.Fatal("Region did not return")
	}
	late := transport.Notice{Kind: transport.NoticeTag, Tag: 5}
	switch {
	case res.err == nil:
		if err := res.r.Put(0, []byte("late put"), late, nil); !errors.Is(err, transport.ErrNoRegion) {
			t.Errorf("Region returned a live handle on the withdrawn region: a put through it returned %v, want ErrNoRegion at once", err)
		}
	case !errors.Is(res.err, transport.ErrNoRegion):
		t.Errorf("Region: %v, want ErrNoRegion", res.err)
	}
	if r, err := eps[0].Region(1, w.key, 64); !errors.Is(err, transport.ErrNoRegion) {
		t.Errorf("Region after the withdrawal: %v, want ErrNoRegion", err)
		if err == nil {
			r.Put(0, []byte("late put"), late, nil)
		}
	}
	ctx, cancel := testContext()
	defer cancel()
	eps[0].Flush(ctx, 1) // the target has seen every put before it answers
	w.checkUnchanged(t)
	if n := w.noticeCount(); n != 0 {
		t.Errorf("%d notices delivered for a withdrawn region", n)
	}
	w.noFailure(t)
}

// holding waits until something holds the lock of region key of e: a
// reader streaming a put into it.
func holding(t *testing.T, e *Endpoint, key transport.Key) {
	t.Helper()
	e.rmu.RLock()
	x := e.regions[key]
	e.rmu.RUnlock()
	deadline := time.Now().Add(waitLimit)
	for x.mu.TryLock() {
		x.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("nothing holds region %d of rank %d", key, e.Rank())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestUnexposeStalledPut checks that Unexpose does not wait on the
// network for a put streaming into the region: a peer sends the header
// of a large put and part of its payload, and stalls. Unexpose must
// return well within the peer timeout; the rest of the payload, when it
// comes, is dropped, the put refused (the flush after it says so), and
// no notice delivered.
func TestUnexposeStalledPut(t *testing.T) {
	const (
		size = 1 << 20 // streamed: larger than the read buffer
		sent = 100 << 10
	)
	secret := NewSecret()
	eps := newGroup(t, Config{Size: 3, Secret: secret, PeerTimeout: 20 * time.Second})
	w := watch(t, eps[1], size)
	c := dial(t, eps[1])
	if err := clientHandshake(c, secret, 2, 1, 3, time.Now().Add(waitLimit)); err != nil {
		t.Fatalf("handshake as rank 2: %v", err)
	}
	payload := bytes.Repeat([]byte{0xEE}, size)
	put := frame(header{kind: KindPut, key: uint64(w.key), length: size,
		notice: uint8(transport.NoticeTag), tag: 3}, payload[:sent])
	if _, err := c.Write(put); err != nil {
		t.Fatal(err)
	}
	holding(t, eps[1], w.key)

	// Another rank's lookup of the region does not wait for the put.
	looked := make(chan error, 1)
	var r transport.Region
	go func() {
		var err error
		r, err = eps[0].Region(1, w.key, size)
		looked <- err
	}()
	select {
	case err := <-looked:
		if err != nil {
			t.Fatalf("Region: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("a lookup waited more than 2 s for a stalled put to the region")
		c.Close()
		<-looked
		return
	}

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- eps[1].Unexpose(w.key) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Unexpose: %v", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Unexpose took %v", took)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("Unexpose waited more than 2 s for a stalled put")
		c.Close() // the reader leaves the region once its connection ends
		<-done
		return
	}

	rest := append(payload[sent:], frame(header{kind: KindFlush, id: 1}, nil)...)
	if _, err := c.Write(rest); err != nil {
		t.Fatal(err)
	}
	if h, _ := readReply(t, c); h.kind != KindReply || h.id != 1 || Status(h.notice) != StatusNoRegion {
		t.Errorf("flush after the put answered with %+v, want status %v", h, StatusNoRegion)
	}
	if !bytes.Equal(w.mem[sent:], w.want[sent:]) {
		t.Error("the put wrote past what had arrived when the region was withdrawn")
	}
	if n := w.noticeCount(); n != 0 {
		t.Errorf("%d notices delivered for the withdrawn put", n)
	}
	if err := r.Put(0, []byte("late"), transport.Notice{}, nil); !errors.Is(err, transport.ErrNoRegion) {
		t.Errorf("Put through rank 0's handle after Unexpose: %v, want ErrNoRegion", err)
	}
	w.noFailure(t)
}
