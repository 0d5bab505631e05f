package engine

import (
	"context"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport/inproc"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// TestAnySourceTakesWhatArrived: once a peer failed, Recv, Probe and
// the Wait of an Irecv from AnySource still take a matching message that a live rank sent before
// they were called, even one the transport still holds (over shared
// memory the message waits in the ring until someone polls): they give
// up only when nothing that arrived matches.
func TestAnySourceTakesWhatArrived(t *testing.T) {
	t.Setenv(inproc.EnvVar, "shm")
	eps, err := inproc.New(3)
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]*Comm, len(eps))
	for r, ep := range eps {
		cs[r] = New(ep, nil, nil)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eps[1].(*shm.Endpoint).Kill(); err != nil {
		t.Fatal(err)
	}
	for !cs[0].anyFailed() {
		if ctx.Err() != nil {
			t.Fatal("rank 1's failure is not reported")
		}
		cs[0].progress()
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 1)
	for round := 0; round < 50; round++ {
		// Rank 0 polls (its progress goroutine then naps instead of
		// waiting on the doorbell), rank 2 sends, rank 0 receives.
		cs[0].progress()
		if round%3 == 1 {
			// A receive posted before the message is sent.
			req, err := cs[0].Irecv(buf, AnySource, 7)
			if err != nil {
				t.Fatal(err)
			}
			if err := cs[2].Send(ctx, []byte{byte(round)}, 0, 7); err != nil {
				t.Fatal(err)
			}
			st, err := req.Wait(ctx)
			if err != nil {
				t.Fatalf("round %d: Wait of an Irecv from AnySource of a message rank 2 sent: %v", round, err)
			}
			if st.Source != 2 || buf[0] != byte(round) {
				t.Fatalf("round %d: received %d from rank %d", round, buf[0], st.Source)
			}
			continue
		}
		if err := cs[2].Send(ctx, []byte{byte(round)}, 0, 7); err != nil {
			t.Fatal(err)
		}
		if round%2 == 0 {
			st, err := cs[0].Probe(ctx, AnySource, 7)
			if err != nil {
				t.Fatalf("round %d: Probe from AnySource of a message rank 2 sent before: %v", round, err)
			}
			if st.Source != 2 {
				t.Fatalf("round %d: Probe found a message of rank %d", round, st.Source)
			}
		}
		st, err := cs[0].Recv(ctx, buf, AnySource, 7)
		if err != nil {
			t.Fatalf("round %d: Recv from AnySource of a message rank 2 sent before: %v", round, err)
		}
		if st.Source != 2 || buf[0] != byte(round) {
			t.Fatalf("round %d: received %d from rank %d", round, buf[0], st.Source)
		}
	}
	// Nothing arrived: the wildcard gives up.
	if _, err := cs[0].Recv(ctx, buf, AnySource, 7); err == nil {
		t.Fatal("Recv from AnySource with nothing sent returned")
	}
}
