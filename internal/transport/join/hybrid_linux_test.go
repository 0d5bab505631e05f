package join

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport/shm"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// TestLaunchedHybrid: a job of NARMA_TRANSPORT=hybrid whose ranks
// alternate between two hosts joins over the hybrid transport (and one
// whose hosts each run one rank stays on plain TCP), and its ranks reach
// each other, on the same host and across.
func TestLaunchedHybrid(t *testing.T) {
	for _, tc := range []struct {
		n, hosts int
		want     string
	}{{4, 2, "hybrid(shm+tcp)"}, {2, 2, "tcp"}} {
		t.Run(fmt.Sprintf("%d ranks on %d hosts", tc.n, tc.hosts), func(t *testing.T) {
			testLaunchedHybrid(t, tc.n, tc.hosts, tc.want)
		})
	}
}

func testLaunchedHybrid(t *testing.T, n, hosts int, want string) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	prev := mem.SetSource(nil) // each rank installs its host's heap; put back the test's
	mem.SetSource(prev)
	defer mem.SetSource(prev)
	job := shm.NewJobID()
	defer shm.RemoveJob(job)
	secret := tcp.NewSecret()
	srv, err := bootstrap.ListenTCP("127.0.0.1:0", n, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go srv.Serve(ctx)
	catchLost(t, n)

	jobs := make([]*Job, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		env := tcpEnv(r, n, srv.Addr(), secret)
		env.Job, env.Transport, env.Host = job, "hybrid", r%hosts
		wg.Go(func() { jobs[r], errs[r] = launched(ctx, env) })
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
			j.boot.Close()
		}
	}()
	got := make(chan string, n*n)
	for r, j := range jobs {
		if name := j.Endpoint.Caps().Name; name != want || j.Endpoint.Rank() != r || j.Endpoint.Size() != n {
			t.Fatalf("rank %d: transport %s (job says %s), rank %d of %d; want %s", r, name, j.Transport, j.Endpoint.Rank(), j.Endpoint.Size(), want)
		}
		j.Endpoint.SetAMHandler(1, func(src int, hdr, _ []byte) { got <- fmt.Sprintf("%d<-%d:%s", r, src, hdr) })
	}
	for r, j := range jobs {
		wg.Go(func() { errs[r] = j.Ready(ctx) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Ready: %v", r, err)
		}
	}
	for r, j := range jobs {
		for to := range n {
			if err := j.Endpoint.SendAM(to, 1, fmt.Appendf(nil, "hi %d", r), nil); err != nil {
				t.Fatalf("rank %d to %d: %v", r, to, err)
			}
		}
	}
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for len(seen) < n*n {
		select {
		case m := <-got:
			seen[m] = true
		case <-deadline:
			t.Fatalf("messages received: %v", seen)
		}
	}
}
