package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestListenTCP(t *testing.T) {
	if _, err := ListenTCP("127.0.0.1:0", 2, testSecret[:MinSecret-1]); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Errorf("ListenTCP with a short secret: %v, want an error", err)
	}
	if _, err := ListenTCP("127.0.0.1:0", 0, testSecret); err == nil {
		t.Error("ListenTCP for 0 ranks succeeded")
	}
	if srv, err := ListenTCP("0.0.0.0:0", 2, testSecret); err == nil || !strings.Contains(err.Error(), "wildcard") {
		if srv != nil {
			srv.Close()
		}
		t.Errorf("ListenTCP on a wildcard address: %v, want an error", err)
	}
	srv, err := ListenTCP("127.0.0.1:0", 2, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.Addr(), "tcp:127.0.0.1:") || strings.HasSuffix(srv.Addr(), ":0") {
		t.Errorf("Addr() = %q, want tcp:127.0.0.1: and the port", srv.Addr())
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
}

// TestDialTCPNeedsSecret: a rank without the secret fails at once, before
// it dials.
func TestDialTCPNeedsSecret(t *testing.T) {
	start := time.Now()
	_, err := Dial(testCtx(t), "tcp:127.0.0.1:9", 0, 2, nil)
	if err == nil || !strings.Contains(err.Error(), EnvSecret) {
		t.Fatalf("Dial without a secret: %v, want an error naming %s", err, EnvSecret)
	}
	if time.Since(start) > time.Second {
		t.Errorf("took %v: Dial dialed before checking the secret", time.Since(start))
	}
}

// TestTCPRefusesStrangers: connections that do not hold the job secret
// are refused and leave no mark on the job, whatever they send, even if
// they come first and say nothing; the ranks then run their rounds and
// the job ends well.
func TestTCPRefusesStrangers(t *testing.T) {
	const size = 3
	j := startJobOn(t, "tcp", size)
	ctx := testCtx(t)
	_, address, _ := parseAddr(j.addr)

	// A client with the wrong secret is told so and introduces itself
	// to nobody.
	wrong := bytes.Repeat([]byte{0x5a}, 32)
	if c, err := Dial(ctx, j.addr, 0, size, wrong); err == nil {
		c.Close()
		t.Fatal("Dial with the wrong secret succeeded")
	} else if !errors.Is(err, errAuth) || !strings.Contains(err.Error(), "does not hold the job secret") {
		t.Fatalf("Dial with the wrong secret: %v, want an authentication error", err)
	}
	// A connection that sends a hello instead of the handshake, one
	// that sends garbage, and one that says nothing (it stays open
	// while the job runs).
	for _, junk := range [][]byte{
		appendMessage(appendMessage(nil, message{kind: kindHello, rank: 1, size: size, pid: 4242}),
			message{kind: kindData, data: []byte("round 0 of an old client")}),
		[]byte("GET / HTTP/1.0\r\n\r\n" + strings.Repeat("x", 100)),
		nil,
	} {
		conn, err := net.Dial("tcp", address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if junk == nil {
			continue
		}
		conn.Write(junk)
		conn.SetReadDeadline(time.Now().Add(patience))
		// The server closes it without a word (a reset if it left some
		// of the junk unread).
		if n, err := io.Copy(io.Discard, conn); (err != nil && !errors.Is(err, syscall.ECONNRESET)) || n != 0 {
			t.Errorf("a connection that sent %.20q got %d bytes back, %v; want to be closed without a word", junk, n, err)
		}
	}
	for deadline := time.Now().Add(patience); j.srv.Refused() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := j.srv.Refused(); n != 3 {
		t.Errorf("Refused() = %d, want 3", n)
	}
	errs := forAll(size, func(r int) error {
		c, err := Dial(ctx, j.addr, r, size, j.secret)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Exchange(ctx, blob(r, 0))
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if err := j.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestDialImpostor: a rank that reaches a server without the secret
// tells it nothing but its challenge.
func TestDialImpostor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer conn.Close()
		// Answer the challenge with a proof made with another secret.
		challenge := make([]byte, challengeSize)
		io.ReadFull(conn, challenge)
		nonce := make([]byte, nonceSize)
		conn.Write(append(nonce, authProof([]byte("another secret, 32 bytes long..."), "server", challenge, nonce)...))
		conn.SetReadDeadline(time.Now().Add(patience))
		rest, _ := io.ReadAll(conn)
		got <- append(challenge, rest...)
	}()
	_, err = Dial(testCtx(t), "tcp:"+ln.Addr().String(), 0, 2, testSecret)
	if !errors.Is(err, errAuth) || !strings.Contains(err.Error(), "the server does not hold the job secret") {
		t.Fatalf("Dial to an impostor: %v, want an authentication error", err)
	}
	if b := <-got; len(b) != challengeSize {
		t.Errorf("the impostor got %d bytes, want only the %d of the challenge", len(b), challengeSize)
	}
}

// TestLocalAddr: the local address of a rank's connection is the
// interface that reaches the server.
func TestLocalAddr(t *testing.T) {
	j := startJobOn(t, "tcp", 1)
	c, err := Dial(testCtx(t), j.addr, 0, 1, j.secret)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok || !a.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("LocalAddr() = %v, want 127.0.0.1", c.LocalAddr())
	}
}

// watched is a rank's client after its last round, with what Watch
// reported.
type watched struct {
	c          *Client
	told, lost chan error
}

// watchAll dials every rank of j, runs one round and has each Watch.
func watchAll(t *testing.T, j *testJob) []watched {
	t.Helper()
	ctx := testCtx(t)
	clients := dialAll(t, j)
	for r, err := range forAll(j.size, func(r int) error {
		_, err := clients[r].Exchange(ctx, blob(r, 0))
		return err
	}) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	w := make([]watched, j.size)
	for r, c := range clients {
		w[r] = watched{c, make(chan error, 1), make(chan error, 1)}
		if err := c.WatchTold(func(err error) { w[r].told <- err }, func(err error) { w[r].lost <- err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	return w
}

// lostWith waits for w's Watch to report, with an error containing want.
func (w watched) lostWith(t *testing.T, want string) {
	t.Helper()
	select {
	case err := <-w.lost:
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Watch reported %v, want an error with %q", err, want)
		}
	case <-time.After(patience):
		t.Errorf("Watch did not report the end of the connection")
	}
}

// notLost checks that w's Watch has not reported.
func (w watched) notLost(t *testing.T) {
	t.Helper()
	select {
	case err := <-w.lost:
		t.Errorf("Watch reported %v", err)
	default:
	}
}

// TestWatch: after its last round a rank keeps its connection, and its
// Watch reports when the server goes away, and not when the rank closes
// its client itself; the server records when each rank's connection
// ended while the job ran.
func TestWatch(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			j := startJobOn(t, network, 2)
			srv := j.srv
			w := watchAll(t, j)
			if _, err := w[0].c.Exchange(testCtx(t), nil); err == nil || !strings.Contains(err.Error(), "after Watch") {
				t.Errorf("Exchange after Watch: %v, want an error", err)
			}
			if err := w[0].c.Watch(func(error) {}); err == nil {
				t.Error("a second Watch succeeded")
			}
			select {
			case err := <-j.serve:
				t.Fatalf("Serve returned %v while every rank held its connection", err)
			case <-time.After(50 * time.Millisecond):
			}
			// Rank 1 leaves; rank 0 is told nothing.
			if err := w[1].c.Close(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(patience); srv.Departures()[1].IsZero() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if d := srv.Departures(); d[1].IsZero() || !d[0].IsZero() {
				t.Errorf("Departures() = %v, want rank 1's only", d)
			}
			w[1].notLost(t)
			w[0].notLost(t)
			// The server goes away, as with a launcher killed.
			srv.Close()
			w[0].lostWith(t, "the launcher is gone: the server closed the connection")
			w[1].notLost(t)
		})
	}
}

// TestWatchJobStopped: when the launcher cancels Serve, every watching
// rank is told that the launcher stopped the job; the departures tell
// that the connections that ended then did so after it.
func TestWatchJobStopped(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			j := startJobOn(t, network, 3)
			srv, served, cancel := j.srv, j.serve, j.cancel
			w := watchAll(t, j)
			// Rank 2 ends first (its process exits), then the launcher
			// stops the others.
			w[2].c.Close()
			for deadline := time.Now().Add(patience); srv.Departures()[2].IsZero() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			stopped := time.Now()
			cancel()
			for r := range 2 {
				w[r].lostWith(t, "the launcher stopped the job")
			}
			if err := <-served; !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v, want context.Canceled", err)
			}
			if d := srv.Departures(); d[2].IsZero() || !d[2].Before(stopped) || d[0].Before(stopped) || d[1].Before(stopped) {
				t.Errorf("Departures() = %v, want rank 2's before %v, the others' after", d, stopped)
			}
		})
	}
}

// TestWatchEndsWell: ranks that keep their connections until they exit
// end the job well, and the server records the order they left in.
func TestWatchEndsWell(t *testing.T) {
	j := startJobOn(t, "tcp", 3)
	w := watchAll(t, j)
	for _, r := range []int{1, 2, 0} {
		before := j.srv.Departures()
		w[r].c.Close()
		for deadline := time.Now().Add(patience); j.srv.Departures()[r].IsZero() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		for q, d := range before {
			if !d.IsZero() && !d.Before(j.srv.Departures()[r]) {
				t.Errorf("rank %d left at %v, not before rank %d at %v", q, d, r, j.srv.Departures()[r])
			}
		}
	}
	if err := j.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var wg sync.WaitGroup
	for _, x := range w {
		wg.Go(func() { x.notLost(t) })
	}
	wg.Wait()
}

// TestHalt: Halt gives every watching rank the launcher's reason, and a
// rank acts on it only once its connection closes (when Serve ends), so
// that every rank has it before any other can exit; the rank's error is
// that one sentence, without prefixes, and wraps errJobFailed.
func TestHalt(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			j := startJobOn(t, network, 2)
			srv, served, cancel := j.srv, j.serve, j.cancel
			w := watchAll(t, j)
			for r := range 2 {
				if err := w[r].c.Stopped(); err != nil {
					t.Errorf("rank %d: Stopped before Halt: %v", r, err)
				}
			}
			waitWatching(t, srv, 2)
			srv.Halt("rank 7 (pid 1234) exited with status 3")
			// Halt returns once every watching rank has acted on the
			// reason (told has returned); Stopped has it too.
			for r := range 2 {
				const want = "the launcher stopped the job: rank 7 (pid 1234) exited with status 3"
				select {
				case err := <-w[r].told:
					if err == nil || err.Error() != want {
						t.Errorf("rank %d: told %v, want %q", r, err, want)
					}
				default:
					t.Errorf("rank %d: Halt returned before the rank was told", r)
				}
				if err := w[r].c.Stopped(); err == nil || err.Error() != want {
					t.Errorf("rank %d: Stopped after Halt: %v", r, err)
				}
			}
			time.Sleep(50 * time.Millisecond)
			w[0].notLost(t) // told, but its connection is still open
			w[1].notLost(t)
			cancel()
			const want = "the launcher stopped the job: rank 7 (pid 1234) exited with status 3"
			for r := range 2 {
				select {
				case err := <-w[r].lost:
					if err == nil || err.Error() != want || !errors.Is(err, errJobFailed) {
						t.Errorf("rank %d: Watch reported %v, want %q wrapping errJobFailed", r, err, want)
					}
				case <-time.After(patience):
					t.Fatalf("rank %d: Watch did not report", r)
				}
			}
			if err := <-served; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), want) {
				t.Errorf("Serve: %v, want context.Canceled and the reason", err)
			}
		})
	}
}

// TestPeerFailures: the server records the first peer each rank reports
// failed, and reads a rank's reports until the rank closes its end, even
// after Serve has ended: a rank that exits because a peer failed
// reports it just before it exits, perhaps once the launcher has begun
// to stop the job.
func TestPeerFailures(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			j := startJobOn(t, network, 3)
			w := watchAll(t, j)
			if err := w[2].c.PeerFailed(1); err != nil {
				t.Fatal(err)
			}
			for _, p := range []int{1, 0} { // later reports do not count
				if err := w[2].c.PeerFailed(p); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []int{-1, 2, 3} {
				if err := w[2].c.PeerFailed(p); err == nil {
					t.Errorf("PeerFailed(%d) of rank 2 of 3 succeeded", p)
				}
			}
			w[2].c.Close()
			waitFor(t, j.srv, func() bool { return !j.srv.Departures()[2].IsZero() })
			if got := j.srv.PeerFailures(); !slices.Equal(got, []int{-1, -1, 1}) {
				t.Errorf("PeerFailures %v, want [-1 -1 1]", got)
			}
		})
	}
	t.Run("after Serve", func(t *testing.T) {
		j := startJobOn(t, "unix", 2)
		// Rank 1 is a raw connection, to write after it saw the end.
		c0, err := Dial(testCtx(t), j.addr, 0, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c0.Close()
		raw := rawHello(t, j, 1, 2)
		if m, err := readMessage(raw); err != nil || m.kind != kindAccept {
			t.Fatalf("hello answered with %v, %v", m, err)
		}
		j.srv.Halt("stopped")
		c0.Close() // ends Serve: rank 0 left after Halt
		// Once Serve has ended, rank 1's connection is closed for
		// writing, but what rank 1 sends is still read.
		if _, err := io.Copy(io.Discard, raw); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Write(appendMessage(nil, message{kind: kindFailed, rank: 0})); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		waitFor(t, j.srv, func() bool { return j.srv.PeerFailures()[1] == 0 })
		if err := j.wait(t); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v, want the launcher's stop", err)
		}
	})
}

// waitFor waits until ok, looking again whenever srv records a change.
func waitFor(t *testing.T, srv *Server, ok func() bool) {
	t.Helper()
	timeout := time.After(patience)
	for !ok() {
		select {
		case <-srv.Changed():
		case <-timeout:
			t.Fatal("the server did not record it")
		}
	}
}

// waitWatching waits until the server has read that n ranks watch.
func waitWatching(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		srv.mu.Lock()
		k := 0
		for p := range srv.peers {
			if p.watching {
				k++
			}
		}
		srv.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ranks watch, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}
