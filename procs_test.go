package narma_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
// errors wrapping ErrPeer within a bounded time (DESIGN rule 7): Recv from
// it and a Barrier, with no deadline of their own.
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
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == 2 {
		syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {}
	}
	start := time.Now()
	buf := make([]byte, 8)
	_, rerr := c.Recv(context.Background(), buf, 2, 1)
	if !errors.Is(rerr, narma.ErrPeer) {
		return fmt.Errorf("Recv from the killed rank: %v, want ErrPeer", rerr)
	}
	berr := c.Barrier(context.Background())
	if !errors.Is(berr, narma.ErrPeer) {
		return fmt.Errorf("Barrier with the killed rank: %v, want ErrPeer", berr)
	}
	if d := time.Since(start); d > 10*time.Second {
		return fmt.Errorf("errors took %v", d)
	}
	return nil
}
