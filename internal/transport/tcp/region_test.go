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
	late := transport.TagNotice(transport.NoticeTag, 5)
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
	put := frame(header{kind: KindPut, key: keyWord(w.key), length: size,
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

// stallConn reports, once, a write that has not returned stallAfter after
// it began: the peer stopped taking the bytes and the socket buffers are
// full.
type stallConn struct {
	net.Conn
	stalled chan struct{}
	once    *sync.Once
}

// stallAfter is how long a write must wait before stallConn reports it.
const stallAfter = 200 * time.Millisecond

func (c *stallConn) Write(b []byte) (int, error) {
	t := time.AfterFunc(stallAfter, func() { c.once.Do(func() { close(c.stalled) }) })
	defer t.Stop()
	return c.Conn.Write(b)
}

// TestUnexposeStalledGet checks that Unexpose does not wait on the
// network for the replies to gets of the region: a peer sends many gets
// (more than the socket buffers hold) and reads none of the replies, so
// that the target's writes stall. Unexpose must return well within the
// peer timeout, and once it has returned the region's memory is the
// user's: the replies, read afterwards, carry what the region held
// before (or refuse the get), never what the user wrote later.
func TestUnexposeStalledGet(t *testing.T) {
	const region = chunkPayload
	cases := []struct {
		name        string
		size, count int
	}{
		{"large", chunkPayload, 16},  // each reply larger than the reply buffer
		{"small", 2 << 10, 16 << 10}, // replies that fit the reply buffer, which fills
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secret := NewSecret()
			stalled := make(chan struct{})
			var once sync.Once
			eps := newGroup(t, Config{Size: 3, Secret: secret, PeerTimeout: 20 * time.Second,
				wrapConn: func(self, peer int, out bool, c net.Conn) net.Conn {
					if self == 1 && peer == 2 && !out { // rank 1's replies to rank 2
						return &stallConn{Conn: c, stalled: stalled, once: &once}
					}
					return c
				}})
			w := watch(t, eps[1], region)
			c := dial(t, eps[1])
			if err := clientHandshake(c, secret, 2, 1, 3, time.Now().Add(waitLimit)); err != nil {
				t.Fatalf("handshake as rank 2: %v", err)
			}
			offset := func(i int) int { return i * tc.size % region }
			var gets []byte
			for i := range tc.count {
				gets = append(gets, frame(header{kind: KindGet, id: uint32(i + 1), key: keyWord(w.key),
					off: uint64(offset(i)), result: uint32(tc.size)}, nil)...)
			}
			// The target may stop reading the gets once its replies
			// stall: write them on the side.
			wrote := make(chan error, 1)
			go func() {
				_, err := c.Write(gets)
				wrote <- err
			}()
			select {
			case <-stalled:
			case <-time.After(waitLimit):
				t.Fatal("the target's replies did not stall")
			}

			done := make(chan error, 1)
			go func() { done <- eps[1].Unexpose(w.key) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Unexpose: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("Unexpose waited more than 5 s for replies the peer does not read")
				c.Close() // the reader leaves the region once its connection ends
				<-done
				<-wrote
				return
			}
			// The memory is the user's again.
			for i := range w.mem {
				w.mem[i] = ^w.want[i]
			}

			var ok, refused int
			for i := range tc.count {
				h, payload := readReply(t, c)
				if h.id != uint32(i+1) {
					t.Fatalf("reply %d answers get %d", i+1, h.id)
				}
				switch st := Status(h.notice); st {
				case StatusOK:
					ok++
					if want := w.want[offset(i) : offset(i)+tc.size]; !bytes.Equal(payload, want) {
						t.Fatalf("get %d: the reply does not carry what the region held before Unexpose", i+1)
					}
				case StatusNoRegion:
					refused++
				default:
					t.Fatalf("get %d answered with status %v", i+1, st)
				}
			}
			if err := <-wrote; err != nil {
				t.Fatalf("writing the gets: %v", err)
			}
			t.Logf("%d gets answered, %d refused", ok, refused)
			if ok == 0 || refused == 0 {
				t.Errorf("%d gets answered, %d refused: want some of each", ok, refused)
			}
			w.noFailure(t)
		})
	}
}
