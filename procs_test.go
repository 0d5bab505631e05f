package narma_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/testjob"
)

const peerDeathCall = "peer-death"

// TestProcessPeerDeath: a rank process killed with SIGKILL turns the
// blocking calls that depend on it, on the surviving processes, into
// errors wrapping ErrPeer within a bounded time (DESIGN rule 7), all with
// no deadline of their own: a lock on a window that the dead rank held
// exclusively, a wait for a notice from it, Recv from it, and a Barrier.
func TestProcessPeerDeath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("processes over shared memory need Linux")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := testjob.Run(ctx, 3, peerDeathCall, "-test.run=^$")
	if err == nil {
		t.Fatal("the killed rank is not reported")
	}
	if res == nil {
		t.Fatal(err)
	}
	if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "killed") {
		t.Errorf("rank 2: %v, want killed", res[2].Err)
	}
	for _, r := range res[:2] {
		if r.Err != nil {
			t.Errorf("survivor rank %d: %v\n%s", r.Rank, r.Err, r.Output)
		}
	}
}

// peerDeathRank is a rank of TestProcessPeerDeath.
func peerDeathRank() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	w, err := narma.Allocate[int64](ctx, c, 4)
	if err != nil {
		return err
	}
	// Allocate may return at one rank while another still looks up its
	// window: rank 2 must not die before all are done with it.
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == 2 {
		// Hold rank 0's window exclusively, tell rank 1, and die
		// holding it.
		if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
			return err
		}
		if err := w.Put([]int64{7}, 0, 0); err != nil {
			return err
		}
		if err := w.Flush(ctx, 0); err != nil {
			return err
		}
		if err := c.Send(ctx, []byte("held"), 1, 2); err != nil {
			return err
		}
		syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {}
	}
	start := time.Now()
	bg := context.Background()
	switch c.Rank() {
	case 0:
		r, err := w.NotifyInit(2, 5, 1)
		if err != nil {
			return err
		}
		if err := r.Start(); err != nil {
			return err
		}
		if _, err := r.Wait(bg); !errors.Is(err, narma.ErrPeer) {
			return fmt.Errorf("Wait for a notice from the killed rank: %v, want ErrPeer", err)
		}
		// Stay until rank 1 has tried the lock: a rank that ends looks
		// failed to the others, which would fail the lock for another
		// reason.
		if _, err := c.Recv(ctx, make([]byte, 8), 1, 3); err != nil {
			return err
		}
	case 1:
		buf := make([]byte, 8)
		if _, err := c.Recv(ctx, buf, 2, 2); err != nil {
			return err
		}
		err := w.Lock(bg, narma.Exclusive, 0, 0)
		if err == nil {
			// The deferred strategy takes the lock when it must.
			err = w.Flush(bg, 0)
		}
		if !errors.Is(err, narma.ErrPeer) || !strings.Contains(err.Error(), "by rank 2") {
			return fmt.Errorf("Lock of a window the killed rank held: %v, want ErrPeer naming rank 2", err)
		}
		if err := c.Send(ctx, nil, 0, 3); err != nil {
			return err
		}
	}
	buf := make([]byte, 8)
	_, rerr := c.Recv(bg, buf, 2, 1)
	if !errors.Is(rerr, narma.ErrPeer) {
		return fmt.Errorf("Recv from the killed rank: %v, want ErrPeer", rerr)
	}
	if f := c.Failed(); !slices.Equal(f, []int{2}) {
		return fmt.Errorf("Failed() = %v after rank 2 was killed, want [2]", f)
	}
	// A survivor that ends looks failed to the other: rank 1 stays until
	// rank 0 has looked.
	if c.Rank() == 0 {
		if err := c.Send(ctx, nil, 1, 4); err != nil {
			return err
		}
	} else if _, err := c.Recv(ctx, buf, 0, 4); err != nil {
		return err
	}
	berr := c.Barrier(bg)
	if !errors.Is(berr, narma.ErrPeer) {
		return fmt.Errorf("Barrier with the killed rank: %v, want ErrPeer", berr)
	}
	if d := time.Since(start); d > 10*time.Second {
		return fmt.Errorf("errors took %v", d)
	}
	return nil
}
