package join

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// tcpEnv returns the environment of rank r of a tcp job of n ranks whose
// bootstrap listens at addr. The listen address is left to the rank.
func tcpEnv(r, n int, addr string, secret []byte) bootstrap.Env {
	return bootstrap.Env{
		Rank: r, Size: n, Addr: addr, Job: "1-ab", Transport: "tcp",
		Secret: bootstrap.EncodeSecret(secret), PeerTimeout: 5 * time.Second,
	}
}

// catchLost makes the ranks of this test report the end of their
// bootstrap connection on the returned channel instead of exiting.
func catchLost(t *testing.T, n int) <-chan string {
	t.Helper()
	c := make(chan string, n)
	prev, prevSay := lost, say
	lost = func(env bootstrap.Env, err error) { c <- fmt.Sprintf("rank %d: %v", env.Rank, err) }
	say = func(bootstrap.Env, error) {}
	t.Cleanup(func() { lost, say = prev, prevSay })
	return c
}

// TestLaunchedTCP joins three ranks, goroutines here, to a job over a
// real bootstrap server, on a Unix socket and over TCP, and sends an
// active message around the ring. The ranks keep their bootstrap
// connections once they have joined, and the job ends well when they
// close them.
func TestLaunchedTCP(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) { testLaunchedTCP(t, network) })
	}
}

func testLaunchedTCP(t *testing.T, network string) {
	const n = 3
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	secret := tcp.NewSecret()
	var srv *bootstrap.Server
	var err error
	if network == "tcp" {
		srv, err = bootstrap.ListenTCP("127.0.0.1:0", n, secret)
	} else {
		srv, err = bootstrap.Listen(filepath.Join(t.TempDir(), "boot.sock"), n)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	lostC := catchLost(t, n)

	jobs := make([]*Job, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { jobs[r], errs[r] = launched(ctx, tcpEnv(r, n, srv.Addr(), secret)) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	defer func() {
		for _, j := range jobs {
			j.Endpoint.Close()
		}
	}()

	got := make(chan string, n)
	for r, j := range jobs {
		if j.Transport != "tcp" || j.Singleton || j.Endpoint.Rank() != r || j.Endpoint.Size() != n || j.Endpoint.Caps().Name != "tcp" {
			t.Fatalf("rank %d: job %+v, endpoint rank %d of %d", r, j, j.Endpoint.Rank(), j.Endpoint.Size())
		}
		ep := j.Endpoint.(*tcp.Endpoint)
		if host, _, _ := net.SplitHostPort(ep.Addr().String()); host != "127.0.0.1" {
			t.Errorf("rank %d listens on %s, want 127.0.0.1", r, ep.Addr())
		}
		ep.SetAMHandler(1, func(src int, hdr, payload []byte) {
			got <- fmt.Sprintf("%d<-%d:%s", r, src, hdr)
		})
		if j.Ready == nil {
			t.Fatalf("rank %d: no Ready", r)
		}
	}
	// Ready is a barrier: each rank's runs on its own goroutine.
	for r, j := range jobs {
		wg.Go(func() { errs[r] = j.Ready(ctx) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Ready: %v", r, err)
		}
	}
	// Every rank keeps its bootstrap connection after the last round:
	// the job goes on for the server.
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v while the ranks run", err)
	default:
	}
	for r, j := range jobs {
		if err := j.Endpoint.SendAM((r+1)%n, 1, fmt.Appendf(nil, "hello from %d", r), nil); err != nil {
			t.Fatalf("rank %d: SendAM: %v", r, err)
		}
	}
	seen := map[string]bool{}
	for range n {
		select {
		case m := <-got:
			seen[m] = true
		case <-ctx.Done():
			t.Fatalf("messages received: %v", seen)
		}
	}
	for r := range n {
		if m := fmt.Sprintf("%d<-%d:hello from %d", (r+1)%n, r, r); !seen[m] {
			t.Errorf("missing %q in %v", m, seen)
		}
	}
	// The ranks' processes exit: their connections close, and the job
	// is over for the server, which reports success.
	for _, j := range jobs {
		j.boot.Close()
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case m := <-lostC:
		t.Errorf("a rank was told its launcher is gone: %s", m)
	default:
	}
}

// TestLaunchedLosesLauncher: once joined, a rank whose bootstrap
// connection ends, because the launcher stops the job or dies, is told
// (and, outside this test, exits).
func TestLaunchedLosesLauncher(t *testing.T) {
	for _, how := range []string{"stopped", "died"} {
		t.Run(how, func(t *testing.T) {
			const n = 2
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			secret := tcp.NewSecret()
			srv, err := bootstrap.ListenTCP("127.0.0.1:0", n, secret)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			serveCtx, stop := context.WithCancel(ctx)
			defer stop()
			go srv.Serve(serveCtx)
			lostC := catchLost(t, n)
			jobs := make([]*Job, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for r := range n {
				wg.Go(func() {
					if jobs[r], errs[r] = launched(ctx, tcpEnv(r, n, srv.Addr(), secret)); errs[r] == nil {
						errs[r] = jobs[r].Ready(ctx)
					}
				})
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
				defer jobs[r].Endpoint.Close()
			}
			want := "the launcher stopped the job"
			if how == "stopped" {
				stop()
			} else {
				srv.Close()
				want = "the server closed the connection"
			}
			for range n {
				select {
				case m := <-lostC:
					if !strings.Contains(m, want) {
						t.Errorf("%s; want %q", m, want)
					}
				case <-ctx.Done():
					t.Fatal("the ranks did not notice")
				}
			}
		})
	}
}

// TestLaunchedTCPSecret: a rank without the job secret, or with one too
// short, fails before it dials the bootstrap, with an error that says so
// (and does not show the secret).
func TestLaunchedTCPSecret(t *testing.T) {
	short := make([]byte, tcp.MinSecret-1)
	for i := range short {
		short[i] = 0xa5
	}
	for _, tt := range []struct {
		name, secret, want string
	}{
		{"missing", "", bootstrap.EnvSecret + " is missing"},
		{"short", bootstrap.EncodeSecret(short), fmt.Sprintf("%d bytes, fewer than the %d required", len(short), tcp.MinSecret)},
		{"not hex", "not a secret", bootstrap.EnvSecret + " is not hexadecimal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			// No server listens there: a rank that got as far as dialing
			// would fail differently, after retrying for seconds.
			env := tcpEnv(0, 2, "unix:"+filepath.Join(t.TempDir(), "nobody.sock"), nil)
			env.Secret = tt.secret
			start := time.Now()
			j, err := launched(ctx, env)
			if err == nil {
				j.Endpoint.Close()
				t.Fatal("joined without a valid secret")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "rank 0 of 2") {
				t.Fatalf("error %q; want it to name the rank and say %q", err, tt.want)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Fatalf("error %q shows the secret", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("took %v: the rank dialed before checking its secret", d)
			}
		})
	}
}

// TestLaunchedUnknownTransport names the variable and the transports.
func TestLaunchedUnknownTransport(t *testing.T) {
	env := tcpEnv(0, 2, "unix:/nowhere", tcp.NewSecret())
	env.Transport = "udp"
	if _, err := launched(t.Context(), env); err == nil || !strings.Contains(err.Error(), bootstrap.EnvTransport) || !strings.Contains(err.Error(), "tcp") {
		t.Fatalf("error %v; want one naming %s and the transports", err, bootstrap.EnvTransport)
	}
}

// TestReadyWaits: Ready returns only once every rank has called it, and
// fails, naming the cause, when a rank leaves the job instead.
func TestReadyWaits(t *testing.T) {
	const n = 2
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv, err := bootstrap.Listen(filepath.Join(t.TempDir(), "boot.sock"), n)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	catchLost(t, n)
	secret := tcp.NewSecret()
	jobs := make([]*Job, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { jobs[r], errs[r] = launched(ctx, tcpEnv(r, n, srv.Addr(), secret)) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	defer jobs[0].Endpoint.Close()
	ready := make(chan error, 1)
	go func() { ready <- jobs[0].Ready(ctx) }()
	select {
	case err := <-ready:
		t.Fatalf("rank 0's Ready returned %v before rank 1 called its own", err)
	case <-time.After(100 * time.Millisecond):
	}
	// Rank 1 dies instead: its endpoint and its bootstrap connection go.
	jobs[1].Endpoint.(*tcp.Endpoint).Kill()
	go jobs[1].Ready(canceled())
	select {
	case err := <-ready:
		if err == nil || !strings.Contains(err.Error(), "waiting for the other ranks") {
			t.Fatalf("rank 0's Ready: %v; want an error", err)
		}
	case <-ctx.Done():
		t.Fatal("rank 0's Ready did not return after rank 1 left")
	}
	if err := <-served; err == nil {
		t.Fatal("Serve succeeded though rank 1 left in a round")
	}
}

// canceled returns a context that has ended.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
