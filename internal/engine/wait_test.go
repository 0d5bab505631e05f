package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// netPollEndpoint is an endpoint that says its arrivals come through the
// network poller.
type netPollEndpoint struct{ transport.Endpoint }

func (e netPollEndpoint) Caps() transport.Caps {
	c := e.Endpoint.Caps()
	c.NetPoll = true
	return c
}

// TestWaitSpinsUnlessNetPoll checks the waiting policy over a transport
// that is not a Poller: a waiter re-checks its condition a few times,
// yielding between checks, before it sleeps; over a NetPoll transport it
// sleeps after its first check (yields would delay the network poller
// that delivers what it waits for). Either way the wake-up ends the wait.
func TestWaitSpinsUnlessNetPoll(t *testing.T) {
	for _, netPoll := range []bool{false, true} {
		eps, err := local.New(1)
		if err != nil {
			t.Fatal(err)
		}
		ep := eps[0]
		if netPoll {
			ep = netPollEndpoint{ep}
		}
		c := New(ep, nil, nil)
		var checks atomic.Int32
		var done atomic.Bool
		waited := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			waited <- c.wait(ctx, func() bool {
				checks.Add(1)
				return done.Load()
			})
		}()
		// Let the waiter reach its sleep: it registers as a sleeper.
		for c.sleepers.Load() == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		before := checks.Load()
		done.Store(true)
		c.wake()
		if err := <-waited; err != nil {
			t.Fatalf("NetPoll=%v: wait: %v", netPoll, err)
		}
		// Checks before the sleep: the spins, then the sleeper's own
		// check before it blocks (which may not have happened yet when
		// the waiter has registered).
		if netPoll && before > 1 {
			t.Errorf("NetPoll: %d checks before sleeping, want at most 1", before)
		}
		if !netPoll && before < spinRounds {
			t.Errorf("%d checks before sleeping, want at least %d", before, spinRounds)
		}
		_ = c.Close()
	}
}
