package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// WaitUntil returns once the other PEs' atomics make the condition true,
// whichever comparison, and the data they put before is visible then.
func TestWaitUntil(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		count := alloc[uint64](ctx, w, 1)
		data := alloc[int64](ctx, w, n)
		word := alloc[int32](ctx, w, 1)
		if me != 0 {
			// Late, so that PE 0 gets to sleep in its backoff.
			time.Sleep(time.Duration(me) * time.Millisecond)
			must(Put(ctx, w, data.At(me), []int64{int64(10 * me)}, 0))
			must(AtomicInc(ctx, w, count, 0))
		} else {
			must(WaitUntil(ctx, w, count, CmpEQ, uint64(n-1)))
			for pe := 1; pe < n; pe++ {
				if got := data.At(pe).Local(w)[0]; got != int64(10*pe) {
					return fmt.Errorf("data from PE %d: %d", pe, got)
				}
			}
		}
		must(w.BarrierAll(ctx))
		// Each comparison, with PE 1 stepping PE 0's word through 1..6.
		steps := []struct {
			cmp   Cmp
			value int32
		}{{CmpEQ, 1}, {CmpNE, 1}, {CmpGT, 2}, {CmpGE, 4}, {CmpLT, 0}, {CmpLE, -5}}
		for i, s := range steps {
			switch me {
			case 1:
				v := int32(i + 1)
				if s.cmp == CmpLT || s.cmp == CmpLE {
					v = -int32(i + 1)
				}
				must(AtomicSet(ctx, w, word, v, 0))
			case 0:
				must(WaitUntil(ctx, w, word, s.cmp, s.value))
				ok, err := Test(w, word, s.cmp, s.value)
				if !ok || err != nil {
					return fmt.Errorf("step %d: Test after WaitUntil: %v, %v", i, ok, err)
				}
			}
			if me < 2 {
				must(w.Barrier(ctx, []int{1, 0}))
			}
		}
		return nil
	})
}

// The vector forms, with ignore masks, on elements of PE 0 that the
// other PEs set in phases.
func TestWaitUntilVector(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		ivars := alloc[uint32](ctx, w, n) // element pe is set by PE pe
		set := func() {
			time.Sleep(200 * time.Microsecond)
			must(AtomicSet(ctx, w, ivars.At(me), uint32(me), 0))
		}
		// Phase 1: PE 2 sets its element; WaitUntilAny finds it.
		if me == 2 {
			set()
		}
		if me == 0 {
			i, err := WaitUntilAny(ctx, w, ivars, nil, CmpNE, 0)
			if i != 2 || err != nil {
				return fmt.Errorf("WaitUntilAny: %d, %v", i, err)
			}
			if i, err := TestAny(w, ivars, nil, CmpGT, 1); i != 2 || err != nil {
				return fmt.Errorf("TestAny: %d, %v", i, err)
			}
			if i, err := TestAny(w, ivars, []bool{false, false, true, false}, CmpGT, 1); i != -1 || err != nil {
				return fmt.Errorf("TestAny with element 2 ignored: %d, %v", i, err)
			}
			if got, err := TestSome(w, ivars, nil, []int{7}, CmpNE, 0); !slices.Equal(got, []int{7, 2}) || err != nil {
				return fmt.Errorf("TestSome: %v, %v", got, err)
			}
			if ok, err := TestAll(w, ivars, nil, CmpNE, 0); ok || err != nil {
				return fmt.Errorf("TestAll: %v, %v", ok, err)
			}
		}
		must(w.BarrierAll(ctx))
		// Phase 2: PEs 1 and 3 set theirs; WaitUntilSome, ignoring
		// element 2, sees one or both, and WaitUntilAll, ignoring element
		// 0, sees all three.
		if me == 1 || me == 3 {
			set()
		}
		if me == 0 {
			ignore := []bool{false, false, true, false}
			got, err := WaitUntilSome(ctx, w, ivars, ignore, nil, CmpNE, 0)
			if err != nil || len(got) == 0 || slices.ContainsFunc(got, func(i int) bool { return i != 1 && i != 3 }) {
				return fmt.Errorf("WaitUntilSome: %v, %v", got, err)
			}
			must(WaitUntilAll(ctx, w, ivars, []bool{true, false, false, false}, CmpNE, 0))
			if ok, err := TestAll(w, ivars, []bool{true, false, false, false}, CmpGE, 1); !ok || err != nil {
				return fmt.Errorf("TestAll: %v, %v", ok, err)
			}
			if got, err := TestSome(w, ivars, nil, nil, CmpNE, 0); !slices.Equal(got, []int{1, 2, 3}) || err != nil {
				return fmt.Errorf("TestSome: %v, %v", got, err)
			}
			// Everything ignored: nothing to wait for.
			all := []bool{true, true, true, true}
			if i, err := WaitUntilAny(ctx, w, ivars, all, CmpEQ, 99); i != -1 || err != nil {
				return fmt.Errorf("WaitUntilAny, all ignored: %d, %v", i, err)
			}
			if got, err := WaitUntilSome(ctx, w, ivars, all, []int{5}, CmpEQ, 99); !slices.Equal(got, []int{5}) || err != nil {
				return fmt.Errorf("WaitUntilSome, all ignored: %v, %v", got, err)
			}
			must(WaitUntilAll(ctx, w, ivars, all, CmpEQ, 99))
			must(WaitUntilAll(ctx, w, ivars.Slice(0, 0), nil, CmpEQ, 99))
		}
		return nil
	})
}

// A wait ends with an error wrapping the context's when ctx ends, and
// with one wrapping narma.ErrAborted when another PE fails.
func TestWaitCancel(t *testing.T) {
	run(t, 1, func(ctx context.Context, w *World) error {
		flag := alloc[int64](ctx, w, 3)
		tctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		if err := WaitUntil(tctx, w, flag.At(0), CmpEQ, 1); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitUntil past the deadline: %v", err)
		}
		if err := WaitUntilAll(tctx, w, flag, nil, CmpEQ, 1); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitUntilAll past the deadline: %v", err)
		}
		if _, err := WaitUntilAny(tctx, w, flag, nil, CmpEQ, 1); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitUntilAny past the deadline: %v", err)
		}
		if _, err := WaitUntilSome(tctx, w, flag, nil, nil, CmpEQ, 1); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitUntilSome past the deadline: %v", err)
		}
		return nil
	})
	// Run's abort, with goroutine PEs only: the waiting PE's error comes
	// back through a Go variable, and between processes a failed PE shows
	// as a failed peer (narma.ErrPeer), not as an abort.
	boom := errors.New("boom")
	var waitErr error
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := Init(ctx, c, WithHeapSize(4096))
		if err != nil {
			return err
		}
		flag := alloc[int64](ctx, w, 1)
		if w.MyPE() == 1 {
			time.Sleep(2 * time.Millisecond)
			return boom
		}
		// A context of its own, which the abort does not end.
		waitErr = WaitUntil(context.Background(), w, flag, CmpEQ, 1)
		return waitErr
	})
	if !errors.Is(err, boom) || !errors.Is(waitErr, narma.ErrAborted) {
		t.Fatalf("Run: %v; the waiting PE got %v, want narma.ErrAborted", err, waitErr)
	}
}
