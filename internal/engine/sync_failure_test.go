package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// Failure tests of the window synchronization (PSCW and the deferred
// fence) after a peer failed. Control messages travel one way, as
// notices with no data on the target's control region (sendCtl); the
// tests run per path so that another way, were one added, is tested too.
var ctlPaths = []string{"notices"}

// gate holds the goroutines that pass it while it is shut.
type gate struct {
	mu      sync.Mutex
	ch      chan struct{} // nil while open
	waiting atomic.Int32  // goroutines held
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failEndpoint is a local endpoint whose flushes first pass a gate (the
// deferred fence and Complete flush before they tell a target "done"),
// which counts the two-sided messages it sends, and which can refuse
// window control messages to one rank as if it had just failed.
type failEndpoint struct {
	*local.Endpoint
	flush  gate
	msgs   atomic.Int64 // active messages of amMsg sent
	refuse atomic.Int32 // 1 + the rank window control messages are refused to; 0: none
}

func (e *failEndpoint) Flush(ctx context.Context, target int) error {
	if err := e.flush.pass(ctx); err != nil {
		return err
	}
	return e.Endpoint.Flush(ctx, target)
}

func (e *failEndpoint) FlushAll(ctx context.Context) error {
	if err := e.flush.pass(ctx); err != nil {
		return err
	}
	return e.Endpoint.FlushAll(ctx)
}

func (e *failEndpoint) SendAM(dst int, id transport.AMID, hdr, payload []byte) error {
	if id == amMsg {
		e.msgs.Add(1)
	}
	return e.Endpoint.SendAM(dst, id, hdr, payload)
}

// Region returns target's region, which refuses window control messages
// (notices with no data) while refuse names target.
func (e *failEndpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	r, err := e.Endpoint.Region(target, key, size)
	return refusingRegion{r, e, target}, err
}

type refusingRegion struct {
	transport.Region
	e      *failEndpoint
	target int
}

func (r refusingRegion) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	if len(src) == 0 && n.Kind() == transport.NoticeCounter && int(r.e.refuse.Load()) == r.target+1 {
		return fmt.Errorf("test: control message to rank %d refused: %w", r.target, transport.ErrPeer)
	}
	return r.Region.Put(off, src, n, c)
}

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
		fw.cs[r] = New(fw.eps[r], nil, nil)
	}
	t.Cleanup(func() {
		for _, e := range fw.eps {
			e.flush.open()
		}
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
	return fw
}

// put puts v into the first word of rank t's window from w.
func put(w *Win, t int, v uint64) error { return putAt(w, t, 0, v) }

// putAt puts v at displacement disp of rank t's window from w.
func putAt(w *Win, t, disp int, v uint64) error {
	b := make([]byte, 8)
	mem.AtomicStore64(b, v)
	return w.Do(&Access{Kind: KindPut, Type: mem.Uint64, Origin: b, Target: t, Disp: disp})
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

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, testTimeout)
		}
		time.Sleep(time.Millisecond)
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

// TestPSCWWaitTakesLiveCompletes: a Wait that fails because an origin
// failed still takes the completes the live origins sent for the epoch.
// Left in the control words, such a complete would end the next exposure
// epoch before that origin's next Complete: the target would read its
// window while the origin is still writing it.
func TestPSCWWaitTakesLiveCompletes(t *testing.T) {
	eachFailWorld(t, 3, func(t *testing.T, fw *failWorld, ctx context.Context) {
		// Rank 0 exposes its window to 1 and 2; 1 completes, 2 dies.
		w0, w1 := fw.ws[0], fw.ws[1]
		if err := w0.Post([]int{1, 2}, 0); err != nil {
			t.Fatal(err)
		}
		epoch(t, ctx, w1, 0, 1)
		if err := fw.f.Kill(2); err != nil {
			t.Fatal(err)
		}
		wantPeer(t, "Wait with origin 2 dead", w0.Wait(ctx), 2)
		checkWord(t, w0, 1)
		nextEpochInStep(t, ctx, w0, w1)
	})
}

// TestPSCWPostToFailedRank: a Post whose group holds a rank known to have
// failed posts to nobody and opens no epoch: the live origins of the group
// get no post to take, and the next epoch with them is in step.
func TestPSCWPostToFailedRank(t *testing.T) {
	for _, st := range []Strategy{Immediate, Deferred} {
		for _, path := range ctlPaths {
			for _, group := range [][]int{{1, 2}, {2, 1}} {
				t.Run(fmt.Sprintf("%v/%s/%v", st, path, group), func(t *testing.T) {
					fw := newFailWorld(t, 3, st, path)
					ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
					defer cancel()
					w0, w1 := fw.ws[0], fw.ws[1]
					if err := fw.f.Kill(2); err != nil {
						t.Fatal(err)
					}
					wantPeer(t, "Post with rank 2 dead", w0.Post(group, 0), 2)
					if w0.exposeOn {
						t.Error("an exposure epoch is open after the failed Post")
					}
					nextEpochInStep(t, ctx, w0, w1)
				})
			}
		}
	}
}

// TestPSCWPostFailsMidway: when a post cannot be sent to a rank that was
// not known to have failed, the origins posted to before it will access
// the window and complete though Post failed and opened no epoch: the
// next Wait on each of them waits for that complete as well as its own.
// Left in the control words, the early complete would end that epoch
// before the origin completes it.
func TestPSCWPostFailsMidway(t *testing.T) {
	for _, st := range []Strategy{Immediate, Deferred} {
		t.Run(st.String(), func(t *testing.T) {
			fw := newFailWorld(t, 3, st, "notices")
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			w0, w1 := fw.ws[0], fw.ws[1]
			fw.eps[0].refuse.Store(2 + 1)
			wantPeer(t, "Post failing at rank 2", w0.Post([]int{1, 2}, 0), 2)
			fw.eps[0].refuse.Store(0)
			if w0.exposeOn {
				t.Error("an exposure epoch is open after the failed Post")
			}
			epoch(t, ctx, w1, 0, 1) // on the post rank 1 got
			nextEpochInStep(t, ctx, w0, w1)
		})
	}
}

// TestPSCWAccessWithFailedTarget: an access epoch whose group holds a
// failed target goes on with the live targets: their posts are taken and
// they are sent their complete, so their Wait returns. The immediate Start
// fails and ends its empty epoch with them at once; the deferred Complete
// performs the operations queued for them first, dropping those for the
// failed target. No post is left over for the next epoch.
func TestPSCWAccessWithFailedTarget(t *testing.T) {
	eachFailWorld(t, 3, func(t *testing.T, fw *failWorld, ctx context.Context) {
		w0, w1 := fw.ws[0], fw.ws[1]
		if err := fw.f.Kill(2); err != nil {
			t.Fatal(err)
		}
		if err := w0.Post([]int{1}, 0); err != nil {
			t.Fatal(err)
		}
		err := w1.Start(ctx, []int{0, 2}, 0)
		want := uint64(0)
		if w1.strategy == Immediate {
			wantPeer(t, "immediate Start with target 2 dead", err, 2)
		} else {
			if err != nil {
				t.Fatalf("deferred Start: %v", err)
			}
			for _, tg := range []int{0, 2} {
				if err := put(w1, tg, 1); err != nil {
					t.Fatalf("deferred put to rank %d: %v", tg, err)
				}
			}
			wantPeer(t, "deferred Complete with target 2 dead", w1.Complete(ctx), 2)
			want = 1
		}
		if w1.accessOn || w1.queued != 0 {
			t.Errorf("after the failure: access epoch open %v, %d operations queued", w1.accessOn, w1.queued)
		}
		if err := w0.Wait(ctx); err != nil {
			t.Fatalf("Wait of the live target: %v", err)
		}
		checkWord(t, w0, want)
		nextEpochInStep(t, ctx, w0, w1)
	})
}

// eachFailWorld runs body in a subtest for each strategy and each path of
// the control messages, on a fresh world of n ranks, with a context that
// ends at testTimeout.
func eachFailWorld(t *testing.T, n int, body func(t *testing.T, fw *failWorld, ctx context.Context)) {
	for _, st := range []Strategy{Immediate, Deferred} {
		for _, path := range ctlPaths {
			t.Run(st.String()+"/"+path, func(t *testing.T) {
				fw := newFailWorld(t, n, st, path)
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				body(t, fw, ctx)
			})
		}
	}
}

// epoch runs a whole access epoch of w to target t, putting v.
func epoch(t *testing.T, ctx context.Context, w *Win, target int, v uint64) {
	t.Helper()
	if err := w.Start(ctx, []int{target}, 0); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := put(w, target, v); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := w.Complete(ctx); err != nil {
		t.Fatalf("Complete: %v", err)
	}
}

// checkWord checks the first word of w's window.
func checkWord(t *testing.T, w *Win, want uint64) {
	t.Helper()
	if got := mem.AtomicLoad64(w.mem); got != want {
		t.Errorf("window of rank %d holds %d, want %d", w.c.rank, got, want)
	}
}

// nextEpochInStep checks that, after an epoch between target w0 and origin
// w1 that a failure disturbed, no post or complete is left over: w1 has no
// post of w0 to take, the next exposure epoch does not end before w1
// completes it, and a full epoch then works and takes every message.
func nextEpochInStep(t *testing.T, ctx context.Context, w0, w1 *Win) {
	t.Helper()
	o, tg := w1.c.rank, w0.c.rank
	if n := w1.ctlPending(winPost, tg); n != 0 {
		t.Errorf("origin %d holds %d posts of target %d not taken", o, n, tg)
	}
	if err := w0.Post([]int{o}, 0); err != nil {
		t.Fatalf("next Post: %v", err)
	}
	if done, err := w0.Test(); done || err != nil {
		t.Fatalf("next exposure epoch ended before the origin started it: %v, %v", done, err)
	}
	epoch(t, ctx, w1, tg, 2)
	if err := w0.Wait(ctx); err != nil {
		t.Fatalf("next Wait: %v", err)
	}
	checkWord(t, w0, 2)
	if n := w1.ctlPending(winPost, tg); n != 0 {
		t.Errorf("origin %d holds %d posts of target %d not taken", o, n, tg)
	}
	if n := w0.ctlPending(winComplete, o); n != 0 {
		t.Errorf("target %d holds %d completes of origin %d not taken", tg, n, o)
	}
}

// fenceRunner starts and collects deferred fences of a failWorld's ranks.
type fenceRunner struct {
	t   *testing.T
	fw  *failWorld
	ctx context.Context
}

// start runs rank r's Fence in a goroutine; its result comes on the channel.
func (fr fenceRunner) start(ctx context.Context, r int) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fr.fw.ws[r].Fence(ctx, 0) }()
	return ch
}

// result waits for a fence started by start.
func (fr fenceRunner) result(r int, ch <-chan error) error {
	fr.t.Helper()
	select {
	case err := <-ch:
		return err
	case <-fr.ctx.Done():
		fr.t.Fatalf("fence of rank %d still running after %v", r, testTimeout)
		return nil
	}
}

// fencedEpoch makes a world of n ranks over path with deferred windows,
// opens a fence epoch on all of them, and has ranks 0 and 1 put into rank
// 2's window in it; the context ends with the test.
func fencedEpoch(t *testing.T, n int, path string) (*failWorld, context.Context, fenceRunner) {
	t.Helper()
	fw := newFailWorld(t, n, Deferred, path)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	runOK(t, fw.cs, func(ctx context.Context, c *Comm) error {
		return fw.ws[c.rank].Fence(ctx, 0)
	})
	for r := range 2 {
		if err := putAt(fw.ws[r], 2, 8*r, uint64(r+1)); err != nil {
			t.Fatal(err)
		}
	}
	return fw, ctx, fenceRunner{t, fw, ctx}
}

// TestFenceAfterFailedFence: a deferred fence that fails before all the
// "done" messages it expects have arrived must not leave the late ones to
// complete a later fence early.
//
// After a peer failure every later fence fails (its reduce-scatter sends
// to the dead rank), even when the dead rank sent its part of the next
// fence before it died ("peer"). A fence whose context ends while it waits
// leaves the others in step, and the next fence of the rank must wait for
// the late messages of the previous one as well as its own ("context").
func TestFenceAfterFailedFence(t *testing.T) {
	for _, path := range ctlPaths {
		t.Run("peer/"+path, func(t *testing.T) {
			// Ranks 0 and 1 access rank 2; rank 3 accesses nobody and dies.
			fw, ctx, fr := fencedEpoch(t, 4, path)
			// Rank 1's "done" is held back (its flush waits at the gate).
			fw.eps[1].flush.shut()
			f0, f1, f2, f3 := fr.start(ctx, 0), fr.start(ctx, 1), fr.start(ctx, 2), fr.start(ctx, 3)
			if err := fr.result(0, f0); err != nil {
				t.Fatalf("fence of rank 0: %v", err)
			}
			if err := fr.result(3, f3); err != nil {
				t.Fatalf("fence of rank 3: %v", err)
			}
			// Rank 3 enters the next fence, sends its part of the
			// reduce-scatter to the three others, and dies.
			sent := fw.eps[3].msgs.Load()
			dead, stopDead := context.WithCancel(ctx)
			defer stopDead()
			fr.start(dead, 3)
			waitFor(t, "rank 3's reduce-scatter", func() bool { return fw.eps[3].msgs.Load() >= sent+3 })
			waitFor(t, "rank 1 at the gate", func() bool { return fw.eps[1].flush.waiting.Load() == 1 })
			if err := fw.f.Kill(3); err != nil {
				t.Fatal(err)
			}
			stopDead()
			// Rank 2 has rank 0's "done" and not rank 1's: its fence fails.
			if err := fr.result(2, f2); !errors.Is(err, ErrPeer) {
				t.Fatalf("fence of rank 2 with rank 3 dead: %v, want ErrPeer", err)
			}
			fw.eps[1].flush.open()
			if err := fr.result(1, f1); err != nil {
				t.Fatalf("fence of rank 1: %v", err)
			}
			// The next fence, rank 0 accessing rank 2 again, fails
			// everywhere.
			if err := put(fw.ws[0], 2, 3); err != nil {
				t.Fatal(err)
			}
			f0, f1, f2 = fr.start(ctx, 0), fr.start(ctx, 1), fr.start(ctx, 2)
			for r, f := range []<-chan error{f0, f1, f2} {
				if err := fr.result(r, f); !errors.Is(err, ErrPeer) {
					t.Errorf("next fence of rank %d with rank 3 dead: %v, want ErrPeer", r, err)
				}
			}
		})
		t.Run("context/"+path, func(t *testing.T) {
			// Ranks 0 and 1 access rank 2.
			fw, ctx, fr := fencedEpoch(t, 3, path)
			// Rank 1's "done" is held back; rank 2's context ends while
			// it flushes (at its gate, past the reduce-scatter).
			fw.eps[1].flush.shut()
			fw.eps[2].flush.shut()
			ctx2, cancel2 := context.WithCancel(ctx)
			f0, f1, f2 := fr.start(ctx, 0), fr.start(ctx, 1), fr.start(ctx2, 2)
			if err := fr.result(0, f0); err != nil {
				t.Fatalf("fence of rank 0: %v", err)
			}
			waitFor(t, "ranks 1 and 2 at their gates", func() bool {
				return fw.eps[1].flush.waiting.Load() == 1 && fw.eps[2].flush.waiting.Load() == 1
			})
			cancel2()
			if err := fr.result(2, f2); !errors.Is(err, context.Canceled) {
				t.Fatalf("fence of rank 2 whose context ended: %v, want context.Canceled", err)
			}
			fw.eps[2].flush.open()
			fw.eps[1].flush.open()
			if err := fr.result(1, f1); err != nil {
				t.Fatalf("fence of rank 1: %v", err)
			}
			// The next fence: rank 0 accesses rank 2 again, and its
			// "done" is held back. Rank 2's fence must wait for it.
			if err := put(fw.ws[0], 2, 3); err != nil {
				t.Fatal(err)
			}
			fw.eps[0].flush.shut()
			f0, f1, f2 = fr.start(ctx, 0), fr.start(ctx, 1), fr.start(ctx, 2)
			waitFor(t, "rank 0 at the gate", func() bool { return fw.eps[0].flush.waiting.Load() == 1 })
			select {
			case err := <-f2:
				t.Fatalf("the next fence of rank 2 returned (%v) before rank 0's operation on it was complete", err)
			case <-time.After(100 * time.Millisecond):
			}
			fw.eps[0].flush.open()
			for r, f := range []<-chan error{f0, f1, f2} {
				if err := fr.result(r, f); err != nil {
					t.Errorf("next fence of rank %d: %v", r, err)
				}
			}
			checkWord(t, fw.ws[2], 3)
			if n := fw.ws[2].ctlPending(winFenceDone, 0); n != 0 {
				t.Errorf("rank 2 holds %d fence-done messages not taken", n)
			}
		})
	}
}
