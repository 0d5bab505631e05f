package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// Failure tests of the window synchronization (PSCW and the deferred
// fence) after a peer failed, over both ways control messages travel:
// "messages" (active messages, counted by handleWin) and "words" (the
// sender adds to the target's control word itself, Win.ctlWords, as over
// shared memory).
var ctlPaths = []string{"messages", "words"}

// failEndpoint is a local endpoint, for the tests to build on.
type failEndpoint struct {
	*local.Endpoint
}

// wakingEndpoint is a failEndpoint that is also a transport.Waker, so
// that windows over it keep their control words in each other's memory
// (Win.ctlWords), as over shared memory. WakeRank wakes the rank's
// waiters, as a doorbell would.
type wakingEndpoint struct {
	*failEndpoint
	wake func(r int)
}

func (e wakingEndpoint) WakeRank(r int) { e.wake(r) }

// failWorld is n ranks over a local fabric whose ranks the test can kill,
// with a 64-byte window of strategy st on each.
type failWorld struct {
	f   *local.Fabric
	eps []*failEndpoint
	cs  []*Comm
	ws  []*Win
}

func newFailWorld(t *testing.T, n int, st Strategy, path string) *failWorld {
	t.Helper()
	f, err := local.NewFabric(n)
	if err != nil {
		t.Fatal(err)
	}
	fw := &failWorld{f: f, eps: make([]*failEndpoint, n), cs: make([]*Comm, n)}
	for r := range n {
		fw.eps[r] = &failEndpoint{Endpoint: f.Endpoint(r)}
		var ep transport.Endpoint = fw.eps[r]
		if path == "words" {
			ep = wakingEndpoint{fw.eps[r], func(r int) { fw.cs[r].wake() }}
		}
		fw.cs[r] = New(ep, nil, nil)
	}
	t.Cleanup(func() {
		for _, c := range fw.cs {
			_ = c.Close()
		}
	})
	fw.ws = make([]*Win, n)
	runOK(t, fw.cs, func(ctx context.Context, c *Comm) error {
		w, err := c.Allocate(ctx, 64, WinOptions{Strategy: st})
		fw.ws[c.rank] = w
		return err
	})
	if words := fw.ws[0].ctlWords != nil; words != (path == "words") {
		t.Fatalf("path %s: windows keep control words in peers' memory: %v", path, words)
	}
	return fw
}

// wantPeer fails the test unless err wraps ErrPeer and names rank r.
func wantPeer(t *testing.T, what string, err error, r int) {
	t.Helper()
	if !errors.Is(err, ErrPeer) {
		t.Errorf("%s: %v, want an error wrapping ErrPeer", what, err)
		return
	}
	if !regexp.MustCompile(fmt.Sprintf(`\brank %d\b`, r)).MatchString(err.Error()) {
		t.Errorf("%s: %q does not name rank %d", what, err, r)
	}
}

// TestCtlToFailedRank: a window control message (post, complete,
// fence-done) to a rank known to have failed fails with ErrPeer naming
// it, whether it travels as an active message or is added to the
// target's control word directly (where the dead rank's memory may well
// still be there to add to).
func TestCtlToFailedRank(t *testing.T) {
	for _, path := range ctlPaths {
		t.Run(path, func(t *testing.T) {
			fw := newFailWorld(t, 3, Immediate, path)
			if err := fw.f.Kill(2); err != nil {
				t.Fatal(err)
			}
			w0 := fw.ws[0]
			for _, k := range []struct {
				name string
				kind uint8
			}{{"Post", winPost}, {"Complete", winComplete}, {"Fence", winFenceDone}} {
				wantPeer(t, k.name+" to the failed rank", w0.sendCtl(k.name, 2, k.kind), 2)
				if err := w0.sendCtl(k.name, 1, k.kind); err != nil {
					t.Errorf("%s to live rank 1: %v", k.name, err)
				}
			}
			wantPeer(t, "Post to the failed rank", w0.Post([]int{2}, 0), 2)
		})
	}
}
