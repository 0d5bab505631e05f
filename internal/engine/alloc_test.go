package engine

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/narma-rma/narma/internal/mem"
)

// twoRankWin creates a window of size bytes on a 2-rank communicator and
// returns rank 0's part. Rank 1 runs in a goroutine that only waits: the
// local transport needs no progress from the target. The window is freed
// collectively at cleanup.
func twoRankWin(t *testing.T, size int, st Strategy) *Win {
	t.Helper()
	cs := newComms(t, 2)
	ctx := context.Background()
	done := make(chan struct{})
	res := make(chan error, 1)
	created := make(chan error, 1)
	go func() {
		w1, err := cs[1].Allocate(ctx, size, WinOptions{Strategy: st})
		created <- err
		if err != nil {
			res <- err
			return
		}
		<-done
		res <- w1.Free(ctx)
	}()
	w, err := cs[0].Allocate(ctx, size, WinOptions{Strategy: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if w.Strategy() != st {
		t.Fatalf("strategy %v, want %v", w.Strategy(), st)
	}
	t.Cleanup(func() {
		close(done)
		if err := w.Free(ctx); err != nil {
			t.Errorf("Free rank 0: %v", err)
		}
		if err := <-res; err != nil {
			t.Errorf("Free rank 1: %v", err)
		}
	})
	return w
}

type hotOps struct {
	put, get, fop *Access
	sput, sget    *Access // the same through a (trivially) strided layout
	val, res      []byte
}

func newHotOps() hotOps {
	h := hotOps{val: make([]byte, 8), res: make([]byte, 8)}
	h.val[0] = 1
	h.put = &Access{Kind: KindPut, Type: mem.Int64, Origin: make([]byte, 8), Target: 1, Disp: 0}
	h.get = &Access{Kind: KindGet, Type: mem.Int64, Origin: make([]byte, 8), Target: 1, Disp: 8}
	one := Layout{Count: 1, BlockLen: 1, Stride: 1}
	h.sput = &Access{Kind: KindPut, Type: mem.Int64, Origin: make([]byte, 8), OLayout: one, Target: 1, Disp: 24, TLayout: one}
	h.sget = &Access{Kind: KindGet, Type: mem.Int64, Origin: make([]byte, 8), OLayout: one, Target: 1, Disp: 32, TLayout: one}
	h.fop = &Access{Kind: KindFetchAndOp, Type: mem.Int64, Op: mem.Sum, Origin: h.val, Result: h.res, Target: 1, Disp: 16}
	return h
}

// allocs measures f, failing the test if f returns an error.
func allocs(t *testing.T, name string, runs int, f func() error) float64 {
	t.Helper()
	var ferr error
	a := testing.AllocsPerRun(runs, func() {
		if err := f(); err != nil && ferr == nil {
			ferr = err
		}
	})
	if ferr != nil {
		t.Fatalf("%s: %v", name, ferr)
	}
	return a
}

// TestHotPathAllocs: inside an immediate lock epoch, Do (Put, Get,
// FetchAndOp) and Flush allocate nothing. Contiguous Put and Get take
// Do's fast path; the strided ones go through prepare, the chunker and
// exec, as FetchAndOp does.
func TestHotPathAllocs(t *testing.T) {
	w := twoRankWin(t, 64, Immediate)
	ctx := context.Background()
	if err := w.Lock(ctx, true, 1, 0); err != nil {
		t.Fatal(err)
	}
	h := newHotOps()
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"Do(Put 8 bytes)", func() error { return w.Do(h.put) }},
		{"Do(Get 8 bytes)", func() error { return w.Do(h.get) }},
		{"Do(FetchAndOp)", func() error { return w.Do(h.fop) }},
		{"Do(Put, strided layout)", func() error { return w.Do(h.sput) }},
		{"Do(Get, strided layout)", func() error { return w.Do(h.sget) }},
		{"Flush", func() error { return w.Flush(ctx, 1) }},
	} {
		if a := allocs(t, c.name, 1000, c.f); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, a)
		}
	}
	if err := w.Unlock(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The fetch-and-add ran 1 + 1000 times (AllocsPerRun warms up once).
	var tmp [8]byte
	if err := w.Lock(ctx, false, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Do(&Access{Kind: KindGet, Type: mem.Int64, Origin: tmp[:], Target: 1, Disp: 16}); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint64(tmp[:]); v != 1001 {
		t.Errorf("counter = %d after 1001 fetch-and-adds", v)
	}

	// A whole epoch: Lock, the three operations, Unlock.
	a := allocs(t, "Lock/Do/Unlock", 500, func() error {
		if err := w.Lock(ctx, true, 1, 0); err != nil {
			return err
		}
		for _, op := range []*Access{h.put, h.get, h.fop} {
			if err := w.Do(op); err != nil {
				return err
			}
		}
		return w.Unlock(ctx, 1)
	})
	if a != 0 {
		t.Errorf("immediate Lock/Do/Unlock: %v allocations per epoch, want 0", a)
	}
}

// TestHotPathAllocsDeferred: with the deferred strategy the first
// operations of an epoch are queued; the queue keeps its capacity, so after
// warm-up Do and Flush (which takes the lock and replays the queue)
// allocate nothing, and neither does a whole Lock/Do/Unlock epoch.
func TestHotPathAllocsDeferred(t *testing.T) {
	w := twoRankWin(t, 64, Deferred)
	ctx := context.Background()
	h := newHotOps()

	if err := w.Lock(ctx, true, 1, 0); err != nil {
		t.Fatal(err)
	}
	if w.targets[1].lockHeld {
		t.Fatal("deferred Lock took the lock at once")
	}
	// AllocsPerRun runs the function once before measuring: that first
	// Do is queued (growing the queue) and the first Flush takes the lock
	// and replays it; the measured runs find the lock held.
	a := allocs(t, "Do+Flush", 1000, func() error {
		if err := w.Do(h.put); err != nil {
			return err
		}
		return w.Flush(ctx, 1)
	})
	if a != 0 {
		t.Errorf("deferred Do+Flush: %v allocations per iteration, want 0", a)
	}
	if err := w.Unlock(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// Every epoch queues its operations and replays them in Unlock.
	queued := -1
	a = allocs(t, "Lock/Do/Unlock", 500, func() error {
		if err := w.Lock(ctx, true, 1, 0); err != nil {
			return err
		}
		for _, op := range []*Access{h.put, h.get, h.fop, h.sput, h.sget} {
			if err := w.Do(op); err != nil {
				return err
			}
		}
		queued = w.queued
		return w.Unlock(ctx, 1)
	})
	if queued != 5 {
		t.Errorf("%d operations were queued, want 5 (the epoch did not defer)", queued)
	}
	if a != 0 {
		t.Errorf("deferred Lock/Do/Unlock: %v allocations per epoch, want 0", a)
	}

	// Do and Flush in a loop where every Do is queued: the flush in a
	// fresh epoch replays the queue.
	a = allocs(t, "Lock/Do/Flush/Unlock", 500, func() error {
		if err := w.Lock(ctx, false, 1, 0); err != nil {
			return err
		}
		if err := w.Do(h.fop); err != nil {
			return err
		}
		if err := w.Flush(ctx, 1); err != nil {
			return err
		}
		return w.Unlock(ctx, 1)
	})
	if a != 0 {
		t.Errorf("deferred Lock/Do/Flush/Unlock: %v allocations per epoch, want 0", a)
	}
}

// TestSendRecvAllocs: a blocking Send and Recv allocate nothing once
// warm, whether the message finds its receive posted or arrives before
// it (the unexpected queue keeps matched messages and their buffers).
func TestSendRecvAllocs(t *testing.T) {
	cs := newComms(t, 2)
	ctx := context.Background()
	const runs = 1000
	echo := make(chan error, 1)
	go func() {
		// Rank 1 echoes every message: AllocsPerRun's warm-up, then runs,
		// each twice (posted first, then unexpected).
		buf := make([]byte, 64)
		for i := 0; i < 2*(runs+1); i++ {
			st, err := cs[1].Recv(ctx, buf, 0, 3)
			if err == nil {
				err = cs[1].Send(ctx, buf[:st.Count], 0, 4)
			}
			if err != nil {
				echo <- err
				return
			}
		}
		echo <- nil
	}()
	out, in := make([]byte, 64), make([]byte, 64)
	for _, c := range []struct {
		name string
		f    func() error
	}{
		// The reply finds the receive posted, as a rule.
		{"Send then Recv", func() error {
			if err := cs[0].Send(ctx, out, 1, 3); err != nil {
				return err
			}
			_, err := cs[0].Recv(ctx, in, 1, 4)
			return err
		}},
		// The reply arrives before its receive, always.
		{"Send, wait, Recv", func() error {
			if err := cs[0].Send(ctx, out, 1, 3); err != nil {
				return err
			}
			for {
				if _, ok, err := cs[0].Iprobe(1, 4); err != nil || ok {
					if err != nil {
						return err
					}
					break
				}
				runtime.Gosched()
			}
			_, err := cs[0].Recv(ctx, in, 1, 4)
			return err
		}},
	} {
		// Under the race detector a sync.Pool drops a quarter of what
		// it is given, on purpose: the pooled headers and requests are
		// then allocated again.
		if a := allocs(t, c.name, runs, c.f); a != 0 && !raceEnabled {
			t.Errorf("%s: %v allocations per round trip, want 0", c.name, a)
		}
	}
	if err := <-echo; err != nil {
		t.Fatal(err)
	}
}

// TestWinTargetLine: what an operation reads of a rank's winTarget lies
// in one cache line, for every rank (on 64-bit platforms): a winTarget is
// a line long, and the allocator starts a slice of them on a line or,
// past 512 bytes, 8 bytes after one (its header), which the fields'
// 43 bytes still fit behind.
func TestWinTargetLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit platforms only")
	}
	if s := unsafe.Sizeof(winTarget{}); s != lineSize {
		t.Fatalf("winTarget is %d bytes, want %d", s, lineSize)
	}
	hot := unsafe.Offsetof(winTarget{}.inAccess) + 1
	for _, n := range []int{1, 2, 3, 4, 5, 8, 13, 64, 1000} {
		ts := make([]winTarget, n)
		for i := range ts {
			a := uintptr(unsafe.Pointer(&ts[i]))
			if a/lineSize != (a+hot-1)/lineSize {
				t.Fatalf("%d targets: the fields of target %d, at %#x, cross a line", n, i, a)
			}
		}
	}
}
