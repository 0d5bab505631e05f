package shm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// claimChildEnv names the job a child process of
// TestInlineOriginDiesMidClaim joins as rank 0.
const claimChildEnv = "NARMA_SHM_CLAIM_CHILD_JOB"

// pipeExchange is the start-up exchange of a job of two processes over a
// pair of pipes: each call writes a line and reads the other's.
func pipeExchange(r *bufio.Reader, w *os.File) func(context.Context, []byte) ([][]byte, error) {
	return func(_ context.Context, data []byte) ([][]byte, error) {
		if _, err := fmt.Fprintln(w, "x"); err != nil {
			return nil, err
		}
		if _, err := r.ReadString('\n'); err != nil {
			return nil, err
		}
		return [][]byte{[]byte("r0"), []byte("r1")}, nil
	}
}

// TestInlineOriginDiesMidClaim: an origin process dies (SIGKILL) after it
// claimed an inline put's slot and before it marked the data copied,
// while nobody polls at the target, so that the target's progress
// goroutine is the consumer waiting for the origin. The target still
// reports the origin failed, its Poll still returns, and the notice of
// the put whose data never arrived is not delivered (DESIGN rules 1, 7).
func TestInlineOriginDiesMidClaim(t *testing.T) {
	if job := os.Getenv(claimChildEnv); job != "" {
		claimChild(job)
		return
	}
	job := NewJobID()
	t.Cleanup(func() { RemoveJob(job) })
	heap, err := NewHeap(job)
	if err != nil {
		t.Fatal(err)
	}
	toChild, childIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	childOut, fromChild, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInlineOriginDiesMidClaim$")
	cmd.Env = append(os.Environ(), claimChildEnv+"="+job)
	cmd.ExtraFiles = []*os.File{toChild, fromChild} // fds 3 (in) and 4 (out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toChild.Close()
	fromChild.Close()
	defer childIn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := New(ctx, Config{Rank: 1, Size: 2, Heap: heap, CheckInterval: 10 * time.Millisecond,
		Exchange: pipeExchange(bufio.NewReader(childOut), childIn)})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	defer e.Close()
	failed := make(chan int, 2)
	e.SetFailureHandler(func(r int, _ error) { failed <- r })
	notices := make(chan transport.Notice, 2)
	e.SetNoticeHandler(func(_ int, _ transport.Key, n transport.Notice) { notices <- n })
	// The child publishes its claimed slot and dies; reaping it makes
	// its pid unknown to the peer checks.
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child was not killed")
	}
	select {
	case r := <-failed:
		if r != 0 {
			t.Fatalf("rank %d reported failed, want 0", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the origin that died holding an inline claim is never reported failed (the target's consumer waits for it for ever)")
	}
	polled := make(chan struct{})
	go func() { e.Poll(); close(polled) }()
	select {
	case <-polled:
	case <-time.After(5 * time.Second):
		t.Fatal("Poll does not return")
	}
	select {
	case n := <-notices:
		t.Fatalf("notice %+v delivered for an inline put whose data never arrived", n)
	case <-time.After(20 * time.Millisecond):
	}
}

// claimChild is rank 0 of TestInlineOriginDiesMidClaim: it joins the job,
// publishes into rank 1's ring an inline notice whose slot it holds
// claimed (as the origin's Flush does before it copies the data), and
// dies with SIGKILL.
func claimChild(job string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "claim child:", err)
		os.Exit(3)
	}
	heap, err := NewHeap(job)
	if err != nil {
		fail(err)
	}
	in, out := os.NewFile(3, "in"), os.NewFile(4, "out")
	if in == nil || out == nil {
		fail(errors.New("no pipes"))
	}
	e, err := New(context.Background(), Config{Rank: 0, Size: 2, Heap: heap, Exchange: pipeExchange(bufio.NewReader(in), out)})
	if err != nil {
		fail(err)
	}
	c := e.peers[1]
	pos := c.hdr.enq.Add(1) - 1 // the only producer
	s := &c.slots[pos&uint64(len(c.slots)-1)]
	s.src = 0
	s.kind = uint8(transport.NoticeTag)
	s.tag = 5
	s.key = 0
	s.putOff = 0
	s.inl = uint8(copy(s.data[:], []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	s.st.Store(stWord(pos, inlineOrigin))
	s.seq.Store(pos + 1)
	e.ring(c)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
