package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// patience bounds every wait of these tests; nothing should come close.
const patience = 30 * time.Second

// testJob is a Server running Serve for a test.
type testJob struct {
	srv    *Server
	addr   string
	path   string // socket path, over a Unix socket
	secret []byte // job secret, over TCP
	size   int
	serve  chan error // Serve's result
	cancel func()     // ends Serve's context
}

// networks are those a server listens on.
var networks = []string{"unix", "tcp"}

// testSecret is the job secret of the tests' TCP servers.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// startJob listens on a fresh socket and runs Serve until the test ends.
func startJob(t *testing.T, size int) *testJob {
	t.Helper()
	return startJobOn(t, "unix", size)
}

// startJobOn is startJob on network: a fresh socket, or loopback TCP.
func startJobOn(t *testing.T, network string, size int) *testJob {
	t.Helper()
	var srv *Server
	var err error
	j := &testJob{size: size, serve: make(chan error, 1)}
	if network == "tcp" {
		j.secret = testSecret
		srv, err = ListenTCP("127.0.0.1:0", size, j.secret)
	} else {
		j.path = filepath.Join(t.TempDir(), "boot.sock")
		srv, err = Listen(j.path, size)
	}
	if err != nil {
		t.Fatal(err)
	}
	j.srv, j.addr = srv, srv.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	go func() { j.serve <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		srv.Close()
	})
	return j
}

// wait returns Serve's result.
func (j *testJob) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-j.serve:
		return err
	case <-time.After(patience):
		t.Fatal("Serve did not return")
		return nil
	}
}

// ctx returns a context that bounds a test's waits.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

// blob is what rank contributes to round.
func blob(rank, round int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("r%d.k%d;", rank, round)), (rank*7+round)%5)
}

// dialAll dials every rank of j concurrently.
func dialAll(t *testing.T, j *testJob) []*Client {
	t.Helper()
	ctx := testCtx(t)
	clients := make([]*Client, j.size)
	errs := make([]error, j.size)
	var wg sync.WaitGroup
	for r := range j.size {
		wg.Go(func() { clients[r], errs[r] = Dial(ctx, j.addr, r, j.size, j.secret) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return clients
}

// forAll runs fn for every rank concurrently and returns the errors.
func forAll(n int, fn func(rank int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = fn(r) })
	}
	wg.Wait()
	return errs
}

func TestRounds(t *testing.T) {
	for _, tc := range []struct {
		network string
		size    int
	}{{"unix", 1}, {"unix", 4}, {"unix", 16}, {"tcp", 1}, {"tcp", 4}, {"tcp", 16}} {
		network, size := tc.network, tc.size
		t.Run(fmt.Sprint(network, size), func(t *testing.T) {
			const rounds = 25
			j := startJobOn(t, network, size)
			ctx := testCtx(t)
			errs := forAll(size, func(rank int) error {
				c, err := Dial(ctx, j.addr, rank, size, j.secret)
				if err != nil {
					return err
				}
				defer c.Close()
				for k := range rounds {
					all, err := c.Exchange(ctx, blob(rank, k))
					if err != nil {
						return err
					}
					if len(all) != size {
						return fmt.Errorf("round %d: %d blobs, want %d", k, len(all), size)
					}
					for r, b := range all {
						if !bytes.Equal(b, blob(r, k)) {
							return fmt.Errorf("round %d: blob of rank %d is %q, want %q", k, r, b, blob(r, k))
						}
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			if err := j.wait(t); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			for r, pid := range j.srv.PIDs() {
				if pid != os.Getpid() {
					t.Errorf("PIDs()[%d] = %d, want %d", r, pid, os.Getpid())
				}
			}
			if j.path == "" {
				return
			}
			if _, err := os.Lstat(j.path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("socket still there after Serve: %v", err)
			}
		})
	}
}

func TestLargeBlobs(t *testing.T) {
	const size = 4
	j := startJob(t, size)
	ctx := testCtx(t)
	clients := dialAll(t, j)
	big := func(r int) []byte { return bytes.Repeat([]byte{byte(r + 1)}, maxBlob) }
	if _, err := clients[0].Exchange(ctx, make([]byte, maxBlob+1)); err == nil {
		t.Fatal("Exchange of more than 1 MiB succeeded")
	}
	errs := forAll(size, func(r int) error {
		all, err := clients[r].Exchange(ctx, big(r))
		if err != nil {
			return err
		}
		for q, b := range all {
			if !bytes.Equal(b, big(q)) {
				return fmt.Errorf("blob of rank %d differs", q)
			}
		}
		return clients[r].Close()
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if err := j.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestDialBeforeListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "late.sock")
	ctx := testCtx(t)
	dialed := make(chan error, 1)
	go func() {
		c, err := Dial(ctx, "unix:"+path, 0, 1, nil)
		if err == nil {
			_, err = c.Exchange(ctx, []byte("x"))
			c.Close()
		}
		dialed <- err
	}()
	srv, err := Listen(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Serve(ctx); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-dialed; err != nil {
		t.Fatalf("rank 0: %v", err)
	}
}

func TestDialGivesUpWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, "unix:"+filepath.Join(t.TempDir(), "none.sock"), 0, 1, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a socket that never appears: %v, want context.DeadlineExceeded", err)
	}
}

func TestDialInvalid(t *testing.T) {
	ctx := testCtx(t)
	for _, tt := range []struct {
		addr       string
		rank, size int
	}{
		{"/no/scheme", 0, 1},
		{"unix:/x", -1, 1},
		{"unix:/x", 1, 1},
		{"unix:/x", 0, 0},
	} {
		if c, err := Dial(ctx, tt.addr, tt.rank, tt.size, nil); err == nil {
			c.Close()
			t.Errorf("Dial(%q, %d, %d) succeeded", tt.addr, tt.rank, tt.size)
		}
	}
}

func TestListen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path, 2); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Listen on an existing path: %v, want fs.ErrExist", err)
	}
	if _, err := Listen(filepath.Join(dir, "t"), 0); err == nil {
		t.Fatal("Listen for 0 ranks succeeded")
	}
	path = filepath.Join(dir, "u")
	srv, err := Listen(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	if got := srv.Addr(); got != "unix:"+path {
		t.Errorf("Addr() = %q", got)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left after Close: %v", err)
	}
	if err := srv.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
	if err := srv.Serve(t.Context()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Serve after Close: %v, want os.ErrClosed", err)
	}
}

// rawConn connects to j without a Client; over TCP it passes the
// handshake.
func rawConn(t *testing.T, j *testJob) net.Conn {
	t.Helper()
	network, address, err := parseAddr(j.addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if j.secret != nil {
		if err := clientAuth(conn, j.secret); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// rawHello connects to j without a Client and sends a hello.
func rawHello(t *testing.T, j *testJob, rank, size int) net.Conn {
	t.Helper()
	conn := rawConn(t, j)
	if _, err := conn.Write(appendMessage(nil, message{kind: kindHello, rank: rank, size: size, pid: 4242})); err != nil {
		t.Fatal(err)
	}
	return conn
}

// faultyRank returns the rank a Serve error blames, or -2 if it has no
// FaultyRank method.
func faultyRank(err error) int {
	if b, ok := errors.AsType[interface {
		error
		FaultyRank() int
	}](err); ok {
		return b.FaultyRank()
	}
	return -2
}

// wantJobFailed checks that err is a failure of the job whose reason
// contains every string of want.
func wantJobFailed(t *testing.T, who string, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, errJobFailed) {
		t.Errorf("%s: %v, want a job failure", who, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not mention %q", who, err, w)
		}
	}
}

func TestBadHello(t *testing.T) {
	tests := []struct {
		name        string
		rank, size  int
		wantInError string
	}{
		{"rank out of range", 7, 4, "rank 7 (pid 4242) is out of range"},
		{"wrong size", 1, 5, "believes the job has 5 ranks"},
		{"rank twice", 0, 4, "rank 0 connected twice"},
	}
	for _, network := range networks {
		for _, tt := range tests {
			t.Run(network+"/"+tt.name, func(t *testing.T) {
				j := startJobOn(t, network, 4)
				ctx := testCtx(t)
				good, err := Dial(ctx, j.addr, 0, 4, j.secret)
				if err != nil {
					t.Fatal(err)
				}
				defer good.Close()
				conn := rawHello(t, j, tt.rank, tt.size)
				err = j.wait(t)
				if err == nil || !strings.Contains(err.Error(), tt.wantInError) {
					t.Fatalf("Serve: %v, want an error with %q", err, tt.wantInError)
				}
				if r := faultyRank(err); r != -1 {
					t.Errorf("FaultyRank() = %d after a bad hello, want -1", r)
				}
				// The bad rank is told why, and so is the good one.
				m, rerr := readMessage(conn)
				if rerr != nil || m.kind != kindError || !strings.Contains(string(m.data), tt.wantInError) {
					t.Errorf("bad rank got %+v, %v; want the reason", m, rerr)
				}
				_, err = good.Exchange(ctx, nil)
				wantJobFailed(t, "rank 0", err, tt.wantInError)
			})
		}
	}
}

func TestDialDuplicateRank(t *testing.T) {
	j := startJob(t, 3)
	ctx := testCtx(t)
	first, err := Dial(ctx, j.addr, 1, 3, j.secret)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, err = Dial(ctx, j.addr, 1, 3, j.secret)
	wantJobFailed(t, "second rank 1", err, "rank 1 connected twice")
	_, err = first.Exchange(ctx, []byte("x"))
	wantJobFailed(t, "first rank 1", err, "rank 1 connected twice")
}

// TestVanishMidRound makes rank 3 leave after one round while the others
// start a second: every other rank's Exchange must fail, naming rank 3.
func TestVanishMidRound(t *testing.T) {
	for _, tc := range [][2]string{{"unix", "close"}, {"unix", "partial frame"}, {"tcp", "close"}, {"tcp", "partial frame"}} {
		network, how := tc[0], tc[1]
		t.Run(network+"/"+how, func(t *testing.T) {
			const size, quitter = 6, 3
			j := startJobOn(t, network, size)
			ctx := testCtx(t)
			clients := dialAll(t, j)
			for r, err := range forAll(size, func(r int) error {
				_, err := clients[r].Exchange(ctx, blob(r, 0))
				return err
			}) {
				if err != nil {
					t.Fatalf("round 0, rank %d: %v", r, err)
				}
			}
			errs := forAll(size, func(r int) error {
				if r != quitter {
					_, err := clients[r].Exchange(ctx, blob(r, 1))
					return err
				}
				if how == "partial frame" {
					// Half a data message, then the connection drops.
					f := appendMessage(nil, message{kind: kindData, round: 1, data: []byte("abcdef")})
					clients[r].conn.Write(f[:len(f)/2])
				}
				return clients[r].Close()
			})
			for r, err := range errs {
				if r == quitter {
					if err != nil {
						t.Errorf("rank %d Close: %v", r, err)
					}
					continue
				}
				wantJobFailed(t, fmt.Sprintf("rank %d", r), err, fmt.Sprintf("rank %d (pid %d)", quitter, os.Getpid()))
			}
			err := j.wait(t)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rank %d", quitter)) {
				t.Fatalf("Serve: %v, want an error naming rank %d", err, quitter)
			}
			if r := faultyRank(err); r != quitter {
				t.Errorf("FaultyRank() = %d, want %d", r, quitter)
			}
			// A failed Client stays failed.
			if _, err := clients[0].Exchange(ctx, nil); !errors.Is(err, errJobFailed) {
				t.Errorf("Exchange after the failure: %v", err)
			}
		})
	}
}

// TestLeaveBetweenRounds: a rank that leaves after the last round is
// done; but if the others then begin another round, it fails.
func TestLeaveBetweenRounds(t *testing.T) {
	j := startJob(t, 3)
	ctx := testCtx(t)
	clients := dialAll(t, j)
	if err := clients[2].Close(); err != nil {
		t.Fatal(err)
	}
	errs := forAll(2, func(r int) error {
		_, err := clients[r].Exchange(ctx, nil)
		return err
	})
	for r, err := range errs {
		wantJobFailed(t, fmt.Sprintf("rank %d", r), err, "rank 2 (pid", "closed its connection")
	}
	if err := j.wait(t); faultyRank(err) != 2 {
		t.Fatalf("Serve: %v, want an error blaming rank 2", err)
	}
}

func TestMalformedFromRank(t *testing.T) {
	j := startJob(t, 2)
	conn := rawHello(t, j, 1, 2)
	if _, err := readMessage(conn); err != nil {
		t.Fatal(err)
	}
	conn.Write(le(1 << 30)) // a frame length far beyond the limit
	err := j.wait(t)
	if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), "rank 1 (pid 4242)") || faultyRank(err) != 1 {
		t.Fatalf("Serve: %v, want a malformed message error naming rank 1", err)
	}
}

func TestUnexpectedMessage(t *testing.T) {
	j := startJob(t, 2)
	conn := rawHello(t, j, 0, 2)
	if _, err := readMessage(conn); err != nil {
		t.Fatal(err)
	}
	conn.Write(appendMessage(nil, message{kind: kindData, round: 5}))
	if err := j.wait(t); err == nil || !strings.Contains(err.Error(), "round 5 during round 0") {
		t.Fatalf("Serve: %v", err)
	}
}

func TestConnectionWithoutHelloIsIgnored(t *testing.T) {
	j := startJob(t, 1)
	conn, err := net.Dial("unix", j.path)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ctx := testCtx(t)
	c, err := Dial(ctx, j.addr, 0, 1, j.secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exchange(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := j.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestServeContextCanceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	srv, err := Listen(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	serveCtx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx) }()
	ctx := testCtx(t)
	// Ranks 0 and 1 wait in a round for rank 2, which never comes.
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			c, err := Dial(ctx, srv.Addr(), r, 3, nil)
			if err == nil {
				_, err = c.Exchange(ctx, nil)
				c.Close()
			}
			errs <- err
		}()
	}
	for srv.PIDs()[0] == 0 || srv.PIDs()[1] == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("ranks did not connect")
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) || faultyRank(err) != -1 {
		t.Fatalf("Serve: %v, want context.Canceled blaming nobody", err)
	}
	for range 2 {
		wantJobFailed(t, "waiting rank", <-errs, "stopped")
	}
}

func TestExchangeContextCanceled(t *testing.T) {
	j := startJob(t, 2)
	ctx := testCtx(t)
	clients := dialAll(t, j)
	defer clients[1].Close()
	xctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := clients[0].Exchange(xctx, []byte("alone"))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Exchange: %v, want context.Canceled", err)
	}
	// Whether or not its data got out before the cancellation, once rank 0
	// closes its failed client, rank 1 learns that round 0 cannot complete.
	if err := clients[0].Close(); err != nil {
		t.Fatal(err)
	}
	_, err := clients[1].Exchange(ctx, nil)
	wantJobFailed(t, "rank 1", err, "rank 0 (pid")
	if err := j.wait(t); err == nil {
		t.Fatal("Serve succeeded")
	}
}

func TestCloseDuringServe(t *testing.T) {
	j := startJob(t, 2)
	ctx := testCtx(t)
	c, err := Dial(ctx, j.addr, 0, 2, j.secret)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := j.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.wait(t); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Serve after Close: %v, want os.ErrClosed", err)
	}
	if _, err := c.Exchange(ctx, nil); err == nil {
		t.Fatal("Exchange after the server closed succeeded")
	}
}

func TestClientClose(t *testing.T) {
	j := startJob(t, 1)
	ctx := testCtx(t)
	c, err := Dial(ctx, j.addr, 0, 1, j.secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
	if _, err := c.Exchange(ctx, nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Exchange after Close: %v, want os.ErrClosed", err)
	}
	if err := j.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestServeTwice(t *testing.T) {
	srv, err := Listen(filepath.Join(t.TempDir(), "s"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := srv.Serve(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve with a canceled context: %v", err)
	}
	if err := srv.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second Serve: %v, want an error", err)
	}
}
