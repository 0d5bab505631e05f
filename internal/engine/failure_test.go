package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// TestPeerFailureEndsWaits checks DESIGN rule 7: when the transport
// declares a peer failed, blocking calls that depend on it return an error
// wrapping ErrPeer at once, without a deadline, instead of hanging.
func TestPeerFailureEndsWaits(t *testing.T) {
	for _, st := range []Strategy{Immediate, Deferred} {
		t.Run(st.String(), func(t *testing.T) {
			// Windows on every rank, then rank 2 takes an exclusive lock on
			// rank 1 and dies holding it.
			f, cs, ws := killableWins(t, 3, st)
			w0, w2 := ws[0], ws[2]
			ctx := context.Background()
			if err := w2.Lock(ctx, true, 1, 0); err != nil {
				t.Fatal(err)
			}
			if err := w2.Flush(ctx, 1); err != nil { // deferred: takes the lock now
				t.Fatal(err)
			}
			if st == Deferred {
				// A deferred lock is taken only by a flush with something
				// to do: queue an operation first.
				one := []byte{1}
				if err := w2.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: one, Target: 1}); err != nil {
					t.Fatal(err)
				}
				if err := w2.Flush(ctx, 1); err != nil {
					t.Fatal(err)
				}
			}
			// And sends rank 0 one notice of tag 5 before it dies.
			if err := w2.Lock(ctx, false, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := w2.Do(&Access{Kind: KindPut, Type: mem.Uint8, Target: 0, Notice: transport.TagNotice(transport.NoticeTag, 5)}); err != nil {
				t.Fatal(err)
			}
			// And one of tag 6.
			if err := w2.Do(&Access{Kind: KindPut, Type: mem.Uint8, Target: 0, Notice: transport.TagNotice(transport.NoticeTag, 6)}); err != nil {
				t.Fatal(err)
			}
			if err := w2.Flush(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if err := f.Kill(2); err != nil {
				t.Fatal(err)
			}
			c0 := cs[0]
			// A hang shows as this deadline (not ErrPeer) in check.
			ctx, cancelAll := context.WithTimeout(ctx, 10*time.Second)
			defer cancelAll()
			deadline := time.Now().Add(10 * time.Second)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrPeer) {
					t.Errorf("%s with rank 2 dead: %v, want an error wrapping ErrPeer", what, err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s took too long", what)
				}
			}
			// A wildcard request for two notices of tag 6 first takes the
			// one rank 2 sent before it failed, then fails: any failed
			// rank may be the one it waits for.
			any, err := w0.NotifyInit(AnySource, 6, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := any.Start(); err != nil {
				t.Fatal(err)
			}
			_, err = any.Wait(ctx)
			check("Wait for two notices from AnySource", err)
			if err != nil && !strings.Contains(err.Error(), "rank 2 failed with 1 of 2") {
				t.Errorf("AnySource error %q does not say rank 2 failed after one match", err)
			}
			// Signals and counters may be bumped by any rank: their
			// waits fail too.
			if _, err := w0.WaitSignal(ctx, 0, CmpEQ, 1); err != nil {
				check("WaitSignal", err)
			} else {
				t.Error("WaitSignal on a word nobody set returned without error")
			}
			_, err = c0.Recv(ctx, make([]byte, 1), AnySource, 0)
			check("Recv from AnySource", err)
			_, err = c0.Probe(ctx, AnySource, AnyTag)
			check("Probe of AnySource", err)
			check("WaitCounter", w0.WaitCounter(ctx, 0, 1))
			thr, err := w0.CounterThreshold(0, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = thr.Wait(ctx)
			check("Wait of a counter threshold", err)
			// The notice sent before the failure is delivered; a wait
			// for one more from rank 2 fails.
			r, err := w0.NotifyInit(2, 5, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
			if st, err := r.Wait(ctx); err != nil || st.Source != 2 || st.Tag != 5 {
				t.Errorf("Wait for the notice rank 2 sent before it died: %+v, %v", st, err)
			}
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
			_, err = r.Wait(ctx)
			check("Wait for a notice from rank 2", err)
			_, err = c0.Recv(ctx, make([]byte, 1), 2, 0)
			check("Recv from rank 2", err)
			_, err = c0.Probe(ctx, 2, AnyTag)
			check("Probe of rank 2", err)
			check("Barrier", c0.Barrier(ctx))
			if err := w0.Start(ctx, []int{2}, 0); st == Immediate || err != nil {
				check("Start waiting for rank 2's post", err)
			} else {
				// The deferred Start does not wait: Complete does.
				check("Complete waiting for rank 2's post", w0.Complete(ctx))
			}
			if err := w0.Post([]int{2}, 0); err == nil {
				check("Wait for rank 2's complete", w0.Wait(ctx))
			}
			// The lock rank 2 held on rank 1 is never released, and rank 1
			// is alive: an exclusive lock attempt sees that the holder
			// failed (its rank is in the lock word) and fails with
			// ErrPeer, without a deadline.
			err = w0.Lock(ctx, true, 1, 0)
			if err == nil && st == Deferred {
				one := []byte{1}
				w0.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: one, Target: 1})
				err = w0.Unlock(ctx, 1)
			}
			check("exclusive lock held by rank 2", err)
			if err != nil && !strings.Contains(err.Error(), "by rank 2") {
				t.Errorf("lock error %q does not name the holder", err)
			}
			// A lock on the dead rank itself fails with ErrPeer.
			err = w0.Lock(ctx, true, 2, 0)
			if err == nil {
				one := []byte{1}
				if err = w0.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: one, Target: 2}); err == nil {
					err = w0.Flush(ctx, 2)
				}
			}
			check("locked access to rank 2", err)
			// Once the failure is acknowledged, wildcard waits wait for
			// the living ranks again: rank 1's notice completes one.
			if got := c0.Failed(); len(got) != 1 || got[0] != 2 {
				t.Errorf("Failed() = %v, want [2]", got)
			}
			if !c0.newFailure() {
				t.Error("Failed acknowledged the failure")
			}
			if got := c0.AckFailures(); len(got) != 1 || got[0] != 2 {
				t.Errorf("AckFailures() = %v, want [2]", got)
			}
			w1 := ws[1]
			if err := w1.Lock(ctx, false, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := w1.Do(&Access{Kind: KindPut, Type: mem.Uint8, Target: 0, Notice: transport.TagNotice(transport.NoticeTag, 8)}); err != nil {
				t.Fatal(err)
			}
			if err := w1.Unlock(ctx, 0); err != nil {
				t.Fatal(err)
			}
			live, err := w0.NotifyInit(AnySource, 8, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := live.Start(); err != nil {
				t.Fatal(err)
			}
			if st, err := live.Wait(ctx); err != nil || st.Source != 1 {
				t.Errorf("AnySource wait after AckFailures for rank 1's notice: %+v, %v", st, err)
			}
			for _, c := range cs[:2] {
				c.Close()
			}
		})
	}
}

// TestLockHeldSharedByFailedRank: a shared lock share held by a rank that
// dies is never given back, and shared holders are not known by rank: an
// exclusive lock attempt on that word fails with ErrPeer once it has kept
// failing for stuckLockAfter after the failure, instead of hanging.
func TestLockHeldSharedByFailedRank(t *testing.T) {
	f, cs, ws := killableWins(t, 3, Immediate)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ws[2].Lock(ctx, false, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Kill(2); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := ws[0].Lock(ctx, true, 1, 0)
	if !errors.Is(err, ErrPeer) {
		t.Fatalf("exclusive lock against a dead shared holder: %v, want ErrPeer", err)
	}
	if d := time.Since(start); d < stuckLockAfter {
		t.Errorf("gave up after %v, before stuckLockAfter (%v)", d, stuckLockAfter)
	}
	for _, c := range cs[:2] {
		c.Close()
	}
}

// killableWins builds n communicators over a local fabric (whose ranks
// the test can kill) and a 64-byte window on each with strategy st and one
// notification counter.
func killableWins(t *testing.T, n int, st Strategy) (*local.Fabric, []*Comm, []*Win) {
	t.Helper()
	f, err := local.NewFabric(n)
	if err != nil {
		t.Fatal(err)
	}
	eps := f.Endpoints()
	cs := make([]*Comm, n)
	for r := range cs {
		cs[r] = New(eps[r], nil, nil)
	}
	ws := make([]*Win, n)
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		w, err := c.Allocate(ctx, 64, WinOptions{Strategy: st})
		if err != nil {
			return err
		}
		ws[c.rank] = w
		return w.SetCounters(ctx, 1)
	})
	return f, cs, ws
}
