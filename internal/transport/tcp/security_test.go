package tcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// testContext returns a context that ends after waitLimit.
func testContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitLimit)
}

// waitLimit bounds every wait for something that must happen: reaching it
// fails the test.
const waitLimit = 10 * time.Second

// watched is an endpoint whose notices and failure reports a test
// records, with a region exposed on it that holds a known pattern.
type watched struct {
	ep   *Endpoint
	key  transport.Key
	mem  []byte // the exposed memory
	want []byte // its contents as the test wrote them

	mu       sync.Mutex
	notices  []transport.Notice
	failures chan failure // every report of the failure handler
}

type failure struct {
	rank int
	err  error
}

// watch exposes a region of size bytes on ep, filled with a pattern, and
// installs notice and failure handlers that record what they are told.
func watch(t *testing.T, ep *Endpoint, size int) *watched {
	t.Helper()
	w := &watched{
		ep:       ep,
		mem:      mem.Alloc(size),
		failures: make(chan failure, 16),
	}
	for i := range w.mem {
		w.mem[i] = byte(i*7 + 3)
	}
	w.want = bytes.Clone(w.mem)
	var err error
	if w.key, err = ep.Expose(w.mem); err != nil {
		t.Fatal(err)
	}
	ep.SetNoticeHandler(func(src int, key transport.Key, n transport.Notice) {
		w.mu.Lock()
		w.notices = append(w.notices, n)
		w.mu.Unlock()
	})
	ep.SetFailureHandler(func(peer int, err error) {
		w.failures <- failure{peer, err}
	})
	return w
}

// noticeCount returns the number of notices delivered.
func (w *watched) noticeCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.notices)
}

// checkUnchanged fails the test if the region's memory changed. The
// caller must have seen, through a handler, that the target is done with
// the frames it checks.
func (w *watched) checkUnchanged(t *testing.T) {
	t.Helper()
	if !bytes.Equal(w.mem, w.want) {
		for i := range w.mem {
			if w.mem[i] != w.want[i] {
				t.Errorf("target memory changed at offset %d: %#x, want %#x", i, w.mem[i], w.want[i])
				break
			}
		}
	}
}

// nextFailure waits for the failure handler's next report.
func (w *watched) nextFailure(t *testing.T) failure {
	t.Helper()
	select {
	case f := <-w.failures:
		return f
	case <-time.After(waitLimit):
		t.Fatalf("rank %d: no failure reported within %v", w.ep.Rank(), waitLimit)
		return failure{}
	}
}

// noFailure fails the test if the failure handler reported anything.
func (w *watched) noFailure(t *testing.T) {
	t.Helper()
	select {
	case f := <-w.failures:
		t.Errorf("rank %d: failure handler called for rank %d: %v", w.ep.Rank(), f.rank, f.err)
	default:
	}
}

// frame returns h and payload as they go on the wire; h.length is taken
// as it is (a frame may lie about its payload).
func frame(h header, payload []byte) []byte {
	b := make([]byte, headerSize, headerSize+len(payload))
	h.encode(b)
	return append(b, payload...)
}

// dial opens a raw TCP connection to ep, closed when the test ends.
func dial(t *testing.T, ep *Endpoint) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", ep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	return c.(*net.TCPConn)
}

// checkClosed fails the test unless the other end closed c: reading
// returns an error (EOF, or a reset) that is not the deadline's, and
// no data.
func checkClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	var b [256]byte
	n, err := c.Read(b[:])
	var ne net.Error
	switch {
	case n > 0:
		t.Errorf("read %d unexpected bytes %x from the target", n, b[:n])
	case err == nil:
		t.Errorf("read nothing and no error")
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("the target did not close the connection within %v", waitLimit)
	}
}

// readReply reads one frame of the reply direction from c.
func readReply(t *testing.T, c net.Conn) (header, []byte) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	var hb [headerSize]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	h, err := decodeHeader(hb[:], false)
	if err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	payload := make([]byte, h.length)
	if _, err := io.ReadFull(c, payload); err != nil {
		t.Fatalf("reading a reply's payload: %v", err)
	}
	return h, payload
}

// proveWithout runs the origin side of the handshake for a client that
// does not know secret: it sends a hello, ignores the target's proof and
// answers with its own, computed with guess. It reports whether the target
// accepted the connection.
func proveWithout(c net.Conn, guess []byte, origin, target, size int) bool {
	h := hello{origin: uint32(origin), target: uint32(target), size: uint32(size)}
	_, _ = rand.Read(h.nonce[:])
	hb := h.encode()
	if _, err := c.Write(hb); err != nil {
		return false
	}
	var reply [preambleSize + nonceSize + macSize]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return false
	}
	nonce := reply[preambleSize : preambleSize+nonceSize]
	if _, err := c.Write(proof(guess, "origin", hb, nonce)); err != nil {
		return false
	}
	var ok [1]byte
	_, err := io.ReadFull(c, ok[:])
	return err == nil && ok[0] == 1
}

// controlPut has rank 0 put to a second region of the target and flushes:
// the target still serves honest ranks, and once it returns every frame
// the target received before has been dealt with. It checks that the
// target delivered exactly one notice for it.
func controlPut(t *testing.T, origin *Endpoint, target *watched) {
	t.Helper()
	ctl := mem.Alloc(64)
	key, err := target.ep.Expose(ctl)
	if err != nil {
		t.Fatal(err)
	}
	before := target.noticeCount()
	r, err := origin.Region(target.ep.Rank(), key, len(ctl))
	if err != nil {
		t.Fatalf("control: rank %d cannot reach the target: %v", origin.Rank(), err)
	}
	if err := r.Put(8, []byte("control!"), transport.TagNotice(transport.NoticeTag, 77), nil); err != nil {
		t.Fatalf("control put: %v", err)
	}
	ctx, cancel := testContext()
	defer cancel()
	if err := origin.Flush(ctx, target.ep.Rank()); err != nil {
		t.Fatalf("control flush: %v", err)
	}
	if got := target.noticeCount(); got != before+1 {
		t.Fatalf("control put: %d notices delivered, want 1", got-before)
	}
}

// TestRefusedHandshake checks that connections from clients that do not
// hold the job secret, or that skip the handshake, are refused before any
// frame is read: the target's memory is unchanged, no notice is delivered
// and no peer is reported failed.
func TestRefusedHandshake(t *testing.T) {
	secret := NewSecret()
	wrong := NewSecret()
	put := func(w *watched) []byte {
		return frame(header{kind: KindPut, key: keyWord(w.key), off: 16, length: 8,
			notice: uint8(transport.NoticeTag), tag: 1}, []byte("INTRUDER"))
	}
	cases := []struct {
		name   string
		attack func(t *testing.T, c *net.TCPConn, w *watched)
	}{
		{"wrong secret", func(t *testing.T, c *net.TCPConn, w *watched) {
			err := clientHandshake(c, wrong, 0, 1, 3, time.Now().Add(waitLimit))
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("handshake with the wrong secret: %v, want an error wrapping ErrAuth", err)
			}
			c.Write(put(w))
		}},
		{"wrong secret, target's proof ignored", func(t *testing.T, c *net.TCPConn, w *watched) {
			if proveWithout(c, wrong, 0, 1, 3) {
				t.Fatal("the target accepted a client that does not hold the secret")
			}
			c.Write(put(w))
		}},
		{"empty secret", func(t *testing.T, c *net.TCPConn, w *watched) {
			if proveWithout(c, nil, 2, 1, 3) {
				t.Fatal("the target accepted a client with an empty secret")
			}
			c.Write(put(w))
		}},
		{"no handshake", func(t *testing.T, c *net.TCPConn, w *watched) {
			if _, err := c.Write(put(w)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a rank of another job size", func(t *testing.T, c *net.TCPConn, w *watched) {
			if err := clientHandshake(c, secret, 0, 1, 4, time.Now().Add(waitLimit)); !errors.Is(err, ErrAuth) {
				t.Fatalf("handshake for a job of 4: %v, want an error wrapping ErrAuth", err)
			}
			c.Write(put(w))
		}},
		{"rank out of range", func(t *testing.T, c *net.TCPConn, w *watched) {
			if err := clientHandshake(c, secret, 3, 1, 3, time.Now().Add(waitLimit)); !errors.Is(err, ErrAuth) {
				t.Fatalf("handshake from rank 3 of 3: %v, want an error wrapping ErrAuth", err)
			}
			c.Write(put(w))
		}},
		{"the target's own rank", func(t *testing.T, c *net.TCPConn, w *watched) {
			if err := clientHandshake(c, secret, 1, 1, 3, time.Now().Add(waitLimit)); !errors.Is(err, ErrAuth) {
				t.Fatalf("handshake from rank 1 to itself: %v, want an error wrapping ErrAuth", err)
			}
			c.Write(put(w))
		}},
		{"another target", func(t *testing.T, c *net.TCPConn, w *watched) {
			if err := clientHandshake(c, secret, 0, 2, 3, time.Now().Add(waitLimit)); !errors.Is(err, ErrAuth) {
				t.Fatalf("handshake meant for rank 2: %v, want an error wrapping ErrAuth", err)
			}
			c.Write(put(w))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eps := newGroup(t, Config{Size: 3, Secret: secret})
			w := watch(t, eps[1], 256)
			c := dial(t, eps[1])
			tc.attack(t, c, w)
			checkClosed(t, c)
			// Rank 0 (whose rank the attacker may have claimed) still
			// connects, and its flush orders everything before it.
			controlPut(t, eps[0], w)
			w.checkUnchanged(t)
			if n := w.noticeCount(); n != 1 {
				t.Errorf("%d notices delivered, want only the control put's", n)
			}
			w.noFailure(t)
		})
	}
}

// TestMaliciousFrames checks what a rank does with bad frames from an
// authenticated peer: a client holding the secret connects to rank 1 of
// a job of 3 as rank 2 (before rank 2 does), shows that it can write, and
// then sends one bad frame. The target must write nothing, deliver no
// notice for it, close the connection and report rank 2 failed.
func TestMaliciousFrames(t *testing.T) {
	const size = 4096 // larger than the truncated put
	tag := func(h header) header {
		h.notice, h.tag = uint8(transport.NoticeTag), 666
		return h
	}
	cases := []struct {
		name  string
		frame func(key uint64) []byte
		// frameErr: the failure is a FrameError (else a cut connection).
		frameErr bool
	}{
		{"put reaching past the end", func(key uint64) []byte {
			return frame(tag(header{kind: KindPut, key: key, off: size - 4, length: 8}), []byte("OVERFLOW"))
		}, true},
		{"put far outside", func(key uint64) []byte {
			return frame(tag(header{kind: KindPut, key: key, off: 1 << 40, length: 8}), []byte("OVERFLOW"))
		}, true},
		{"put at an offset that wraps around", func(key uint64) []byte {
			return frame(tag(header{kind: KindPut, key: key, off: 1<<62 - 2, length: 8}), []byte("OVERFLOW"))
		}, true},
		{"empty put past the end", func(key uint64) []byte {
			return frame(tag(header{kind: KindPut, key: key, off: size + 1}), nil)
		}, true},
		{"get reaching past the end", func(key uint64) []byte {
			return frame(tag(header{kind: KindGet, id: 2, key: key, off: size - 8, result: 16}), nil)
		}, true},
		{"truncated put", func(key uint64) []byte {
			// The header announces 1000 bytes; 10 follow, then the
			// client stops writing.
			return frame(tag(header{kind: KindPut, key: key, off: 0, length: 1000}), bytes.Repeat([]byte{0xEE}, 10))
		}, false},
		{"truncated accumulate", func(key uint64) []byte {
			return frame(tag(header{kind: KindAccumulate, op: mem.Replace, typ: mem.Uint32, key: key, off: 8, length: 64}),
				bytes.Repeat([]byte{0xEE}, 12))
		}, false},
		{"truncated put to no region", func(key uint64) []byte {
			return frame(tag(header{kind: KindPut, key: key + 100, off: 0, length: 1000}), bytes.Repeat([]byte{0xEE}, 10))
		}, false},
		{"unknown kind", func(key uint64) []byte {
			b := frame(tag(header{kind: KindPut, key: key, off: 0, length: 8}), []byte("UNKNOWN!"))
			b[0] = byte(numKinds)
			return b
		}, true},
		{"reply kind from an origin", func(key uint64) []byte {
			return frame(header{kind: KindReply, id: 2, length: 8}, []byte("REPLY..."))
		}, true},
		{"misaligned accumulate", func(key uint64) []byte {
			return frame(tag(header{kind: KindAccumulate, op: mem.Sum, typ: mem.Int64, key: key, off: 4, length: 8}),
				[]byte{1, 0, 0, 0, 0, 0, 0, 0})
		}, true},
		{"accumulate reaching past the end", func(key uint64) []byte {
			return frame(tag(header{kind: KindAccumulate, op: mem.Replace, typ: mem.Int64, key: key, off: size - 8, length: 16}),
				bytes.Repeat([]byte{0xEE}, 16))
		}, true},
		{"compare-swap past the end", func(key uint64) []byte {
			return frame(tag(header{kind: KindCompareSwap, typ: mem.Uint64, key: key, off: size, length: 16}),
				make([]byte, 16))
		}, true},
		{"bitwise accumulate on floats", func(key uint64) []byte {
			return frame(tag(header{kind: KindAccumulate, op: mem.Bor, typ: mem.Float64, key: key, off: 0, length: 8}),
				bytes.Repeat([]byte{0xFF}, 8))
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secret := NewSecret()
			eps := newGroup(t, Config{Size: 3, Secret: secret})
			w := watch(t, eps[1], size)
			ctl := mem.Alloc(64)
			ctlKey, err := eps[1].Expose(ctl)
			if err != nil {
				t.Fatal(err)
			}

			c := dial(t, eps[1])
			if err := clientHandshake(c, secret, 2, 1, 3, time.Now().Add(waitLimit)); err != nil {
				t.Fatalf("handshake as rank 2: %v", err)
			}
			// The impostor is a rank as far as the target knows: its
			// put to the control region lands and is notified.
			ok := append(frame(header{kind: KindPut, key: keyWord(ctlKey), off: 0, length: 4,
				notice: uint8(transport.NoticeTag), tag: 1}, []byte("real")),
				frame(header{kind: KindFlush, id: 1}, nil)...)
			if _, err := c.Write(ok); err != nil {
				t.Fatal(err)
			}
			if h, _ := readReply(t, c); h.kind != KindReply || h.id != 1 || Status(h.notice) != StatusOK {
				t.Fatalf("flush answered with %+v", h)
			}
			if n := w.noticeCount(); n != 1 {
				t.Fatalf("%d notices for the impostor's valid put, want 1", n)
			}

			if _, err := c.Write(tc.frame(keyWord(w.key))); err != nil {
				t.Fatal(err)
			}
			if !tc.frameErr {
				// The frame is cut short: say so. (Otherwise the
				// client keeps its side open: the target closes.)
				if err := c.CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			f := w.nextFailure(t)
			if f.rank != 2 || !errors.Is(f.err, transport.ErrPeer) {
				t.Errorf("failure handler: rank %d, %v; want rank 2 and an error matching ErrPeer", f.rank, f.err)
			}
			var fe *FrameError
			if tc.frameErr && !errors.As(f.err, &fe) {
				t.Errorf("failure %v does not carry a FrameError", f.err)
			}
			checkClosed(t, c)
			w.checkUnchanged(t)
			if n := w.noticeCount(); n != 1 {
				t.Errorf("%d notices delivered, want only the valid put's", n)
			}
			if !bytes.Equal(ctl[:4], []byte("real")) {
				t.Errorf("control region holds %q", ctl[:4])
			}
			// The other ranks are unaffected.
			controlPut(t, eps[0], w)
			w.noFailure(t)
		})
	}
}

// TestForgedLength checks that a frame whose header claims a payload of
// up to the frame limit cannot make the target allocate that much before
// the bytes arrive: an authenticated peer sends the header of a 1 GiB
// active message, or of a 1 GiB accumulate, a few bytes, and then ends
// its side of the connection. The target must allocate little, run no
// handler, write nothing, and report the peer failed.
func TestForgedLength(t *testing.T) {
	const size = 4096
	cases := []struct {
		name     string
		frame    func(key uint64) []byte
		frameErr bool // refused on its header alone
	}{
		{"active message", func(uint64) []byte {
			return frame(header{kind: KindAM, aux: 1, off: 8, length: maxPayload}, bytes.Repeat([]byte{0xEE}, 100))
		}, false},
		{"accumulate", func(key uint64) []byte {
			return frame(header{kind: KindAccumulate, op: mem.Replace, typ: mem.Uint64, key: key, length: maxPayload},
				bytes.Repeat([]byte{0xEE}, 100))
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secret := NewSecret()
			eps := newGroup(t, Config{Size: 3, Secret: secret})
			w := watch(t, eps[1], size)
			var ran atomic.Int32
			eps[1].SetAMHandler(1, func(int, []byte, []byte) { ran.Add(1) })
			c := dial(t, eps[1])
			if err := clientHandshake(c, secret, 2, 1, 3, time.Now().Add(waitLimit)); err != nil {
				t.Fatalf("handshake as rank 2: %v", err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if _, err := c.Write(tc.frame(keyWord(w.key))); err != nil {
				t.Fatal(err)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			f := w.nextFailure(t)
			runtime.ReadMemStats(&after)
			if f.rank != 2 || !errors.Is(f.err, transport.ErrPeer) {
				t.Errorf("failure handler: rank %d, %v; want rank 2 and an error matching ErrPeer", f.rank, f.err)
			}
			var fe *FrameError
			if tc.frameErr && !errors.As(f.err, &fe) {
				t.Errorf("failure %v does not carry a FrameError", f.err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
				t.Errorf("the target allocated %d MiB for a frame that carried 100 bytes", got>>20)
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("the AM handler ran %d times", n)
			}
			checkClosed(t, c)
			w.checkUnchanged(t)
			controlPut(t, eps[0], w)
			w.noFailure(t)
		})
	}
}

// TestLargeAM checks that an active message larger than the first
// allocation of its payload (amStep) arrives intact, the memory grown as
// its bytes came.
func TestLargeAM(t *testing.T) {
	eps := newGroup(t, Config{Size: 2})
	hdr := []byte("large-am")
	payload := make([]byte, 3*amStep+12345)
	for i := range payload {
		payload[i] = byte(i*31 + i>>12)
	}
	got := make(chan bool, 1)
	eps[1].SetAMHandler(3, func(src int, h, p []byte) {
		got <- src == 0 && bytes.Equal(h, hdr) && bytes.Equal(p, payload)
	})
	if err := eps[0].SendAM(1, 3, hdr, payload); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-got:
		if !ok {
			t.Error("the active message arrived damaged")
		}
	case <-time.After(waitLimit):
		t.Fatal("the active message did not arrive")
	}
}

// pendingHandshakes returns the number of incoming connections e holds in
// their handshake.
func pendingHandshakes(e *Endpoint) int {
	e.hsMu.Lock()
	defer e.hsMu.Unlock()
	return len(e.handshaking)
}

// waitHandshakes waits until e holds n connections in their handshake.
func waitHandshakes(t *testing.T, e *Endpoint, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for pendingHandshakes(e) != n {
		if time.Now().After(deadline) {
			t.Fatalf("rank %d holds %d connections in their handshake, want %d", e.Rank(), pendingHandshakes(e), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPendingHandshakes checks what clients that connect and never
// complete the handshake can do: they cannot hold Close (which closes
// their connections at once instead of waiting for the handshake
// timeout), and beyond maxHandshakes at once their connections are
// closed at once; once they leave, ranks connect again.
func TestPendingHandshakes(t *testing.T) {
	const prompt = 2 * time.Second // handshakeTimeout is 10 s
	t.Run("close", func(t *testing.T) {
		eps := newGroup(t, Config{Size: 2})
		for range 8 {
			dial(t, eps[1])
		}
		waitHandshakes(t, eps[1], 8)
		start := time.Now()
		if err := eps[1].Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > prompt {
			t.Errorf("Close took %v with silent clients connected", took)
		}
	})
	t.Run("limit", func(t *testing.T) {
		eps := newGroup(t, Config{Size: 2})
		w := watch(t, eps[1], 64)
		silent := make([]net.Conn, maxHandshakes)
		for i := range silent {
			silent[i] = dial(t, eps[1])
		}
		waitHandshakes(t, eps[1], maxHandshakes)
		extra := dial(t, eps[1])
		start := time.Now()
		checkClosed(t, extra)
		if took := time.Since(start); took > prompt {
			t.Errorf("a connection beyond the limit was closed after %v", took)
		}
		for _, c := range silent {
			c.Close()
		}
		waitHandshakes(t, eps[1], 0)
		controlPut(t, eps[0], w)
		w.noFailure(t)
	})
}
