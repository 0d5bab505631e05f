package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/inproc"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// countingRegion counts the window control messages sent through it:
// notices with no data (sendCtl).
type countingRegion struct {
	transport.Region
	ctl *atomic.Int64
}

func (r countingRegion) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	if len(src) == 0 && n.Kind() == transport.NoticeCounter {
		r.ctl.Add(1)
	}
	return r.Region.Put(off, src, n, c)
}

// shmCounting is a shared-memory endpoint whose regions count the window
// control messages sent through them; every other method, Poller and
// Sleeper included, is the endpoint's own.
type shmCounting struct {
	*shm.Endpoint
	ctl *atomic.Int64
}

func (e shmCounting) Region(target int, key transport.Key, size int) (transport.Region, error) {
	r, err := e.Endpoint.Region(target, key, size)
	return countingRegion{r, e.ctl}, err
}

// localCounting is the same over the in-process transport.
type localCounting struct {
	transport.Endpoint
	ctl *atomic.Int64
}

func (e localCounting) Region(target int, key transport.Key, size int) (transport.Region, error) {
	r, err := e.Endpoint.Region(target, key, size)
	return countingRegion{r, e.ctl}, err
}

// TestControlMessagesAsNotices: PSCW's posts and completes and the
// deferred fence's done-counts travel as notices with no data on the
// target's control region, over shared memory as over the in-process
// transport (the engine writes no peer's memory itself), and the epochs
// still order the data.
func TestControlMessagesAsNotices(t *testing.T) {
	for _, name := range []string{"shm", "local"} {
		t.Run(name, func(t *testing.T) {
			const n = 3
			var ctl atomic.Int64
			cs := wrappedJob(t, name, n,
				func(ep *shm.Endpoint) transport.Endpoint { return shmCounting{ep, &ctl} },
				func(ep transport.Endpoint) transport.Endpoint { return localCounting{ep, &ctl} })
			ws := make([]*Win, n)
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w, err := c.Allocate(ctx, 8*n, WinOptions{Strategy: Deferred})
				ws[c.rank] = w
				return err
			})
			before := ctl.Load()
			// Rounds of PSCW (every rank posts to and accesses every
			// other) and of the deferred fence, each putting its round
			// number into its slot at every other rank, checked after the
			// epoch.
			const rounds = 20
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w := ws[c.rank]
				var others []int
				for r := range n {
					if r != c.rank {
						others = append(others, r)
					}
				}
				check := func(what string, round uint64) error {
					for _, r := range others {
						if got := mem.AtomicLoad64(w.mem[8*r:]); got != round {
							return fmt.Errorf("%s round %d: slot of rank %d holds %d", what, round, r, got)
						}
					}
					return nil
				}
				val := make([]byte, 8)
				put := func(round uint64) error {
					mem.AtomicStore64(val, round)
					for _, r := range others {
						if err := w.Do(&Access{Kind: KindPut, Type: mem.Uint64, Origin: val, Target: r, Disp: 8 * c.rank}); err != nil {
							return err
						}
					}
					return nil
				}
				for i := uint64(1); i <= rounds; i++ {
					if err := w.Post(others, 0); err != nil {
						return err
					}
					if err := w.Start(ctx, others, 0); err != nil {
						return err
					}
					if err := put(i); err != nil {
						return err
					}
					if err := w.Complete(ctx); err != nil {
						return err
					}
					if err := w.Wait(ctx); err != nil {
						return err
					}
					if err := check("PSCW", i); err != nil {
						return err
					}
				}
				if err := w.Fence(ctx, 0); err != nil {
					return err
				}
				for i := uint64(rounds + 1); i <= 2*rounds; i++ {
					if err := put(i); err != nil {
						return err
					}
					if err := w.Fence(ctx, 0); err != nil {
						return err
					}
					if err := check("fence", i); err != nil {
						return err
					}
				}
				return w.Fence(ctx, NoSucceed)
			})
			// Per round and rank: PSCW posts to and completes at n-1
			// ranks; a deferred fence tells n-1 targets it is done.
			want := int64(n * (n - 1) * (2*rounds + rounds))
			if sent := ctl.Load() - before; sent != want {
				t.Errorf("the epochs sent %d window control messages as notices, want %d", sent, want)
			}
		})
	}
}

// TestAbortWakesSleeper: a waiter asleep on the shared-memory transport's
// doorbell sees the abort of the job at once: the engine rings the
// doorbell for it. The sleep is made an hour long here, so without the
// ring the wait would end only then; it must end within 10 s.
func TestAbortWakesSleeper(t *testing.T) {
	defer func(d time.Duration) { sleepMax = d }(sleepMax)
	sleepMax = time.Hour
	t.Setenv("NARMA_TRANSPORT", "shm")
	eps, err := inproc.New(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := eps[0].(transport.Sleeper); !ok {
		t.Fatalf("%T is not a transport.Sleeper", eps[0])
	}
	abort := make(chan struct{})
	c := New(eps[0], abort, nil)
	defer c.Close()
	waited := make(chan error, 1)
	go func() { waited <- c.wait(context.Background(), func() bool { return false }) }()
	// Past its polling (at most pollSpin + pollYield), the waiter sleeps.
	time.Sleep(50 * time.Millisecond)
	close(abort)
	select {
	case err := <-waited:
		if !errors.Is(err, ErrAborted) {
			t.Fatalf("wait: %v, want ErrAborted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the abort did not end a sleeping wait within 10 s")
	}
}
