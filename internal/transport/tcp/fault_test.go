package tcp

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// fakePeer is rank 1 of a job of 2 that holds the secret and completes
// the handshake of the connections it accepts, then reads their frames and
// answers none of them, except lookups if answerLookups.
type fakePeer struct {
	ln            net.Listener
	answerLookups bool
	handshake     bool // run the handshake (else accept and say nothing)
	secret        []byte

	mu     sync.Mutex
	conns  []net.Conn
	frames map[Kind]int
	wg     sync.WaitGroup
}

func newFakePeer(t *testing.T, secret []byte, handshake, answerLookups bool) *fakePeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{ln: ln, secret: secret, handshake: handshake, answerLookups: answerLookups, frames: make(map[Kind]int)}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakePeer) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.serve(c)
		}()
	}
}

func (f *fakePeer) serve(c net.Conn) {
	defer c.Close()
	if !f.handshake {
		io.Copy(io.Discard, c)
		return
	}
	if _, err := serverHandshake(c, f.secret, 1, 2, func(int) error { return nil }); err != nil {
		return
	}
	var hb [headerSize]byte
	for {
		if _, err := io.ReadFull(c, hb[:]); err != nil {
			return
		}
		h, err := decodeHeader(hb[:], true)
		if err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(h.length)); err != nil {
			return
		}
		f.mu.Lock()
		f.frames[h.kind]++
		f.mu.Unlock()
		if h.kind == KindLookup && f.answerLookups {
			if _, err := c.Write(frame(header{kind: KindReply, id: h.id}, nil)); err != nil {
				return
			}
		}
	}
}

// count returns the number of frames of kind k the fake received.
func (f *fakePeer) count(k Kind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frames[k]
}

// endpointWithFake returns rank 0 of a job of 2 whose rank 1 is f, with a
// failure handler that records its reports.
func endpointWithFake(t *testing.T, f *fakePeer, timeout time.Duration) (*Endpoint, chan failure) {
	t.Helper()
	e, err := New(context.Background(), Config{
		Rank: 0, Size: 2, Secret: f.secret, PeerTimeout: timeout,
		Exchange: func(_ context.Context, data []byte) ([][]byte, error) {
			return [][]byte{data, []byte(f.ln.Addr().String())}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	failures := make(chan failure, 16)
	e.SetFailureHandler(func(peer int, err error) { failures <- failure{peer, err} })
	return e, failures
}

// checkPeerFailed checks that err matches transport.ErrPeer, that it came
// within bound of start, and that the failure handler reported rank 1,
// once.
func checkPeerFailed(t *testing.T, what string, err error, start time.Time, bound time.Duration, failures chan failure) {
	t.Helper()
	took := time.Since(start)
	if !errors.Is(err, transport.ErrPeer) {
		t.Errorf("%s: %v, want an error matching ErrPeer", what, err)
	}
	if took > bound {
		t.Errorf("%s failed after %v, want at most %v", what, took, bound)
	}
	select {
	case f := <-failures:
		if f.rank != 1 || !errors.Is(f.err, transport.ErrPeer) {
			t.Errorf("failure handler: rank %d, %v; want rank 1 and an error matching ErrPeer", f.rank, f.err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("%s: the failure handler was not called", what)
	}
	select {
	case f := <-failures:
		t.Errorf("failure handler called again: rank %d, %v", f.rank, f.err)
	default:
	}
}

// TestSilentPeer checks that a peer that holds the secret but never
// answers is declared failed within a few peer timeouts, whatever waits
// for it.
func TestSilentPeer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const bound = 5 * timeout
	ctx := context.Background()

	t.Run("lookup", func(t *testing.T) {
		f := newFakePeer(t, NewSecret(), true, false)
		e, failures := endpointWithFake(t, f, timeout)
		start := time.Now()
		_, err := e.Region(1, transport.WordKey(1), 64)
		checkPeerFailed(t, "Region", err, start, bound, failures)
		if f.count(KindLookup) != 1 {
			t.Errorf("the fake received %d lookups, want 1", f.count(KindLookup))
		}
	})

	t.Run("flush after put", func(t *testing.T) {
		f := newFakePeer(t, NewSecret(), true, true)
		e, failures := endpointWithFake(t, f, timeout)
		r, err := e.Region(1, transport.WordKey(1), 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Put(0, make([]byte, 16), transport.TagNotice(transport.NoticeTag, 1), nil); err != nil {
			t.Fatal(err)
		}
		var c transport.Completion
		if err := r.Get(16, make([]byte, 16), transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = e.Flush(ctx, 1)
		checkPeerFailed(t, "Flush", err, start, bound, failures)
		wctx, cancel := testContext()
		defer cancel()
		if err := c.Wait(wctx); !errors.Is(err, transport.ErrPeer) {
			t.Errorf("Get: %v, want an error matching ErrPeer", err)
		}
		// Later operations fail at once.
		if err := r.Put(0, make([]byte, 8), transport.Notice{}, nil); !errors.Is(err, transport.ErrPeer) {
			t.Errorf("Put after the failure: %v, want an error matching ErrPeer", err)
		}
		if err := e.Flush(ctx, 1); !errors.Is(err, transport.ErrPeer) {
			t.Errorf("Flush after the failure: %v, want an error matching ErrPeer", err)
		}
	})

	t.Run("idle", func(t *testing.T) {
		// Nothing waits for the peer: the heartbeat alone finds it
		// silent.
		f := newFakePeer(t, NewSecret(), true, true)
		e, failures := endpointWithFake(t, f, timeout)
		if _, err := e.Region(1, transport.WordKey(1), 64); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var fl failure
		select {
		case fl = <-failures:
		case <-time.After(waitLimit):
			t.Fatal("the silent peer was not reported")
		}
		if took := time.Since(start); took > bound {
			t.Errorf("silent peer reported after %v, want at most %v", took, bound)
		}
		if fl.rank != 1 || !errors.Is(fl.err, transport.ErrPeer) {
			t.Errorf("failure handler: rank %d, %v; want rank 1 and an error matching ErrPeer", fl.rank, fl.err)
		}
		if f.count(KindPing) == 0 {
			t.Error("no ping reached the silent peer")
		}
	})

	t.Run("handshake", func(t *testing.T) {
		// The peer accepts the connection and never says a word.
		f := newFakePeer(t, NewSecret(), false, false)
		e, failures := endpointWithFake(t, f, timeout)
		start := time.Now()
		_, err := e.Region(1, transport.WordKey(1), 64)
		checkPeerFailed(t, "Region", err, start, bound, failures)
	})
}

// blocker is a notice handler that stops the target's reader of a
// connection on the notice tagged block until released: the origin's
// later requests on that connection then wait for their replies, for as
// long as the test wants. (Handlers must not block; this one does, for
// the test.)
type blocker struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

const blockTag = 4242

func newBlocker(t *testing.T, ep *Endpoint) *blocker {
	b := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	ep.SetNoticeHandler(func(src int, key transport.Key, n transport.Notice) {
		if n.Kind() == transport.NoticeTag && n.Tag() == blockTag {
			close(b.entered)
			<-b.release
		}
	})
	// Registered after newGroup's cleanup: runs before the endpoints
	// close, which waits for the reader.
	t.Cleanup(b.unblock)
	return b
}

func (b *blocker) unblock() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) wait(t *testing.T) {
	t.Helper()
	select {
	case <-b.entered:
	case <-time.After(waitLimit):
		t.Fatal("the blocking notice was not delivered")
	}
}

// stalledPair returns a group of 2 whose rank 1 exposes a region and
// whose rank 0 has a handle on it and has just had rank 1's reader stop
// in a notice handler.
func stalledPair(t *testing.T) ([]*Endpoint, transport.Region, *blocker, chan failure) {
	t.Helper()
	// The peer timeout is long: the failures these tests expect come
	// from the connection, not from the heartbeat.
	eps := newGroup(t, Config{Size: 2, PeerTimeout: 20 * time.Second})
	b := newBlocker(t, eps[1])
	failures := make(chan failure, 16)
	eps[0].SetFailureHandler(func(peer int, err error) { failures <- failure{peer, err} })
	m := mem.Alloc(256)
	key, err := eps[1].Expose(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eps[0].Region(1, key, len(m))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Put(0, []byte("block"), transport.TagNotice(transport.NoticeTag, blockTag), nil); err != nil {
		t.Fatal(err)
	}
	b.wait(t)
	return eps, r, b, failures
}

// waitSent waits until e has sent n frames of kind k.
func waitSent(t *testing.T, e *Endpoint, k Kind, n uint64) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for e.Stats().Sent[k].Frames < n {
		if time.Now().After(deadline) {
			t.Fatalf("rank %d did not send %d %v frames", e.Rank(), n, k)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConnectionCut closes the connection between two ranks under them,
// at either end, while a flush and a get wait for their replies.
func TestConnectionCut(t *testing.T) {
	t.Run("origin's end", func(t *testing.T) {
		testConnectionCut(t, func(eps []*Endpoint) { eps[0].peers[1].out.Load().c.Close() })
	})
	t.Run("target's end", func(t *testing.T) {
		testConnectionCut(t, func(eps []*Endpoint) { eps[1].peers[0].in.Load().c.Close() })
	})
}

func testConnectionCut(t *testing.T, cut func(eps []*Endpoint)) {
	eps, r, b, failures := stalledPair(t)
	ctx, cancel := testContext()
	defer cancel()

	var c transport.Completion
	dst := make([]byte, 64)
	if err := r.Get(64, dst, transport.Notice{}, &c); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- eps[0].Flush(ctx, 1) }()
	waitSent(t, eps[0], KindFlush, 1)

	start := time.Now()
	cut(eps)
	checkPeerFailed(t, "Flush", <-flushed, start, 5*time.Second, failures)
	if err := c.Wait(ctx); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Get: %v, want an error matching ErrPeer", err)
	}
	b.unblock()
	if err := r.Put(0, []byte("late"), transport.Notice{}, nil); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Put after the cut: %v, want an error matching ErrPeer", err)
	}
	if err := eps[0].Flush(ctx, 1); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Flush after the cut: %v, want an error matching ErrPeer", err)
	}
	if _, err := eps[0].Region(1, transport.WordKey(1), 8); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Region after the cut: %v, want an error matching ErrPeer", err)
	}
	// Closing rank 0 reports nothing more.
	eps[0].Close()
	select {
	case f := <-failures:
		t.Errorf("failure handler called again: rank %d, %v", f.rank, f.err)
	default:
	}
}

// TestKilledPeer kills the target of a get that waits for its reply.
func TestKilledPeer(t *testing.T) {
	eps, r, b, failures := stalledPair(t)
	ctx, cancel := testContext()
	defer cancel()

	var c transport.Completion
	if err := r.Get(8, make([]byte, 8), transport.Notice{}, &c); err != nil {
		t.Fatal(err)
	}
	waitSent(t, eps[0], KindGet, 1)
	killed := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(killed)
		eps[1].Kill() // returns once its reader leaves the handler
	}()
	checkPeerFailed(t, "Get", c.Wait(ctx), start, 5*time.Second, failures)
	b.unblock()
	select {
	case <-killed:
	case <-time.After(waitLimit):
		t.Fatal("Kill did not return")
	}
	if err := eps[0].Flush(ctx, 1); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Flush after the kill: %v, want an error matching ErrPeer", err)
	}
}

// TestHeartbeatKeepsIdlePeers checks that two idle connected ranks with a
// short peer timeout stay healthy, their pings keeping them alive.
func TestHeartbeatKeepsIdlePeers(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const idle = 2 * time.Second
	eps := newGroup(t, Config{Size: 2, PeerTimeout: timeout})
	failures := make(chan failure, 16)
	var regions [2]transport.Region
	for i, e := range eps {
		e.SetFailureHandler(func(peer int, err error) { failures <- failure{peer, err} })
		m := mem.Alloc(64)
		key, err := e.Expose(m)
		if err != nil {
			t.Fatal(err)
		}
		// The other rank connects to this one.
		if regions[1-i], err = eps[1-i].Region(i, key, len(m)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(idle) // the scenario: time passes with nothing to do
	select {
	case f := <-failures:
		t.Fatalf("idle rank %d reported failed: %v", f.rank, f.err)
	default:
	}
	ctx, cancel := testContext()
	defer cancel()
	for i, e := range eps {
		s := e.Stats()
		// A ping goes out every PeerTimeout/5 to 2*PeerTimeout/5 of
		// idleness.
		if least := uint64(idle / (2 * timeout / 5) / 2); s.Sent[KindPing].Frames < least {
			t.Errorf("rank %d sent %d pings in %v, want at least %d", i, s.Sent[KindPing].Frames, idle, least)
		}
		if s.Received[KindPing].Frames == 0 {
			t.Errorf("rank %d received no ping", i)
		}
		if s.DataFrames() != 0 {
			t.Errorf("rank %d sent %d data frames while idle", i, s.DataFrames())
		}
		// And the connections still work.
		if err := regions[i].Put(0, []byte("alive"), transport.Notice{}, nil); err != nil {
			t.Errorf("rank %d: Put after idling: %v", i, err)
		}
		if err := e.Flush(ctx, 1-i); err != nil {
			t.Errorf("rank %d: Flush after idling: %v", i, err)
		}
	}
}

// TestCloseWhilePeerDies checks that Close does not wait for the answer
// to its goodbye on a connection that a peer opened and that then died:
// a client holding the secret connects to rank 1 as rank 0, reads rank
// 1's goodbye and drops the connection without answering.
func TestCloseWhilePeerDies(t *testing.T) {
	const timeout = 20 * time.Second
	secret := NewSecret()
	eps := newGroup(t, Config{Size: 2, Secret: secret, PeerTimeout: timeout})
	c := dial(t, eps[1])
	if err := clientHandshake(c, secret, 0, 1, 2, time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- eps[1].Close() }()
	if h, _ := readReply(t, c); h.kind != KindReplyBye {
		t.Fatalf("rank 1 closing sent %v, want %v", h.kind, KindReplyBye)
	}
	c.Close()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Close took %v after the peer's connection ended", took)
		}
	case <-time.After(timeout + waitLimit):
		t.Fatal("Close did not return")
	}
}
