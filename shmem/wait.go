package shmem

import (
	"context"
	"runtime"
	"time"

	"github.com/narma-rma/narma"
)

// Cmp is a comparison of WaitUntil, Test and SignalWaitUntil: narma's
// (OpenSHMEM's SHMEM_CMP_*).
type Cmp = narma.Cmp

// The comparisons: the variable compared with the value.
const (
	CmpEQ = narma.CmpEQ
	CmpNE = narma.CmpNE
	CmpGT = narma.CmpGT
	CmpGE = narma.CmpGE
	CmpLT = narma.CmpLT
	CmpLE = narma.CmpLE
)

// Point-to-point synchronization. The variables are elements of a
// symmetric object on this PE, updated by other PEs' atomics, which
// wake nobody: the waiting calls poll. Each poll reads the
// variables atomically (narma FetchAndOp or GetAccumulate with NoOp on
// this PE, then Flush); between polls the caller yields the processor for
// 64 rounds (a few microseconds), then sleeps, from 1µs doubling up to
// 50µs (when nothing else runs, the Go runtime may stretch such a sleep to
// a millisecond). ctx and the job's abort end the wait within one sleep.
//
// Update the variables with the atomics (AtomicSet, AtomicAdd, ...): a
// Put or P into a variable that is being polled is a data race in Go's
// memory model on the in-process transport, where a put is a plain copy
// (the race detector reports it).

// WaitUntil waits until ivar (one element) satisfies cmp against value
// (shmem_wait_until).
func WaitUntil[T Int](ctx context.Context, w *World, ivar Sym[T], cmp Cmp, value T) error {
	if err := elemCheck(w, "WaitUntil", ivar, cmp); err != nil {
		return err
	}
	for try := 0; ; try++ {
		ok, err := test1(ctx, w, ivar, cmp, value)
		if ok || err != nil {
			return err
		}
		if err := w.backoff(ctx, "WaitUntil", try); err != nil {
			return err
		}
	}
}

// WaitUntilAll waits until every element of ivars satisfies cmp against
// value (shmem_wait_until_all). ignore, if not nil, has one entry per
// element, and the elements whose entry is true are left out (OpenSHMEM's
// status array).
func WaitUntilAll[T Int](ctx context.Context, w *World, ivars Sym[T], ignore []bool, cmp Cmp, value T) error {
	if err := vecCheck(w, "WaitUntilAll", ivars, ignore, cmp); err != nil {
		return err
	}
	for try := 0; ; try++ {
		vals, err := probe(ctx, w, ivars)
		if err != nil {
			return err
		}
		all := true
		for i, v := range vals {
			if !skip(ignore, i) && !holds(cmp, v, value) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if err := w.backoff(ctx, "WaitUntilAll", try); err != nil {
			return err
		}
	}
}

// WaitUntilAny waits until some element of ivars that ignore does not
// leave out satisfies cmp against value, and returns the index of the
// lowest such element (shmem_wait_until_any). It returns -1 at once if
// ignore leaves out every element.
func WaitUntilAny[T Int](ctx context.Context, w *World, ivars Sym[T], ignore []bool, cmp Cmp, value T) (int, error) {
	if err := vecCheck(w, "WaitUntilAny", ivars, ignore, cmp); err != nil {
		return -1, err
	}
	if none(ignore, ivars.n) {
		return -1, nil
	}
	for try := 0; ; try++ {
		i, err := testAny(ctx, w, ivars, ignore, cmp, value)
		if i >= 0 || err != nil {
			return i, err
		}
		if err := w.backoff(ctx, "WaitUntilAny", try); err != nil {
			return -1, err
		}
	}
}

// WaitUntilSome waits until at least one element of ivars that ignore
// does not leave out satisfies cmp against value, and appends the indices
// of all such elements to indices (shmem_wait_until_some); pass a reused
// slice to avoid allocating. It returns at once, appending nothing, if
// ignore leaves out every element.
func WaitUntilSome[T Int](ctx context.Context, w *World, ivars Sym[T], ignore []bool, indices []int, cmp Cmp, value T) ([]int, error) {
	if err := vecCheck(w, "WaitUntilSome", ivars, ignore, cmp); err != nil {
		return indices, err
	}
	if none(ignore, ivars.n) {
		return indices, nil
	}
	n := len(indices)
	for try := 0; ; try++ {
		var err error
		indices, err = testSome(ctx, w, ivars, ignore, indices, cmp, value)
		if len(indices) > n || err != nil {
			return indices, err
		}
		if err := w.backoff(ctx, "WaitUntilSome", try); err != nil {
			return indices, err
		}
	}
}

// Test reports whether ivar (one element) satisfies cmp against value
// (shmem_test). It does not wait.
func Test[T Int](w *World, ivar Sym[T], cmp Cmp, value T) (bool, error) {
	if err := elemCheck(w, "Test", ivar, cmp); err != nil {
		return false, err
	}
	return test1(w.c.Context(), w, ivar, cmp, value)
}

// TestAll reports whether every element of ivars that ignore does not
// leave out satisfies cmp against value (shmem_test_all).
func TestAll[T Int](w *World, ivars Sym[T], ignore []bool, cmp Cmp, value T) (bool, error) {
	if err := vecCheck(w, "TestAll", ivars, ignore, cmp); err != nil {
		return false, err
	}
	vals, err := probe(w.c.Context(), w, ivars)
	if err != nil {
		return false, err
	}
	for i, v := range vals {
		if !skip(ignore, i) && !holds(cmp, v, value) {
			return false, nil
		}
	}
	return true, nil
}

// TestAny returns the index of the lowest element of ivars that ignore
// does not leave out and that satisfies cmp against value, or -1 if there
// is none (shmem_test_any).
func TestAny[T Int](w *World, ivars Sym[T], ignore []bool, cmp Cmp, value T) (int, error) {
	if err := vecCheck(w, "TestAny", ivars, ignore, cmp); err != nil {
		return -1, err
	}
	return testAny(w.c.Context(), w, ivars, ignore, cmp, value)
}

// TestSome appends to indices the index of every element of ivars that
// ignore does not leave out and that satisfies cmp against value
// (shmem_test_some).
func TestSome[T Int](w *World, ivars Sym[T], ignore []bool, indices []int, cmp Cmp, value T) ([]int, error) {
	if err := vecCheck(w, "TestSome", ivars, ignore, cmp); err != nil {
		return indices, err
	}
	return testSome(w.c.Context(), w, ivars, ignore, indices, cmp, value)
}

// cmpCheck checks the World and the comparison of a waiting or testing
// call.
func cmpCheck(w *World, op string, cmp Cmp) error {
	if err := w.ok(op); err != nil {
		return err
	}
	if cmp < CmpEQ || cmp > CmpLE {
		return w.opErr(op, narma.ErrInvalid, "comparison %d", cmp)
	}
	return nil
}

// elemCheck checks the arguments of WaitUntil and Test.
func elemCheck[T Int](w *World, op string, ivar Sym[T], cmp Cmp) error {
	if err := cmpCheck(w, op, cmp); err != nil {
		return err
	}
	return ivar.elem(w, op)
}

// vecCheck checks the arguments of the vector forms.
func vecCheck[T Int](w *World, op string, ivars Sym[T], ignore []bool, cmp Cmp) error {
	if err := cmpCheck(w, op, cmp); err != nil {
		return err
	}
	if err := ivars.check(w, op); err != nil {
		return err
	}
	if ignore != nil && len(ignore) != ivars.n {
		return w.opErr(op, narma.ErrInvalid, "%d ignore entries for %v", len(ignore), ivars)
	}
	return nil
}

// test1 reads ivar atomically and compares it.
func test1[T Int](ctx context.Context, w *World, ivar Sym[T], cmp Cmp, value T) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	vw := viewOf[T](w)
	if err := vw.win.FetchAndOp(0, &vw.one[0], w.me, ivar.off, narma.NoOp); err != nil {
		return false, err
	}
	if err := w.win.Flush(ctx, w.me); err != nil {
		return false, err
	}
	return holds(cmp, vw.one[0], value), nil
}

// probe reads the elements of ivars atomically, into the view's probe
// buffer.
func probe[T Int](ctx context.Context, w *World, ivars Sym[T]) ([]T, error) {
	vw := viewOf[T](w)
	if cap(vw.probe) < ivars.n {
		vw.probe = make([]T, ivars.n)
	}
	vals := vw.probe[:ivars.n]
	if len(vals) == 0 {
		return vals, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := vw.win.GetAccumulate(nil, vals, w.me, ivars.off, narma.NoOp); err != nil {
		return nil, err
	}
	if err := w.win.Flush(ctx, w.me); err != nil {
		return nil, err
	}
	return vals, nil
}

// testAny returns the lowest satisfying index, or -1.
func testAny[T Int](ctx context.Context, w *World, ivars Sym[T], ignore []bool, cmp Cmp, value T) (int, error) {
	vals, err := probe(ctx, w, ivars)
	if err != nil {
		return -1, err
	}
	for i, v := range vals {
		if !skip(ignore, i) && holds(cmp, v, value) {
			return i, nil
		}
	}
	return -1, nil
}

func testSome[T Int](ctx context.Context, w *World, ivars Sym[T], ignore []bool, indices []int, cmp Cmp, value T) ([]int, error) {
	vals, err := probe(ctx, w, ivars)
	if err != nil {
		return indices, err
	}
	for i, v := range vals {
		if !skip(ignore, i) && holds(cmp, v, value) {
			indices = append(indices, i)
		}
	}
	return indices, nil
}

func skip(ignore []bool, i int) bool { return ignore != nil && ignore[i] }

// none reports whether ignore leaves out all n elements.
func none(ignore []bool, n int) bool {
	for i := 0; i < n; i++ {
		if !skip(ignore, i) {
			return false
		}
	}
	return true
}

func holds[T Int](cmp Cmp, a, b T) bool {
	switch cmp {
	case CmpEQ:
		return a == b
	case CmpNE:
		return a != b
	case CmpGT:
		return a > b
	case CmpGE:
		return a >= b
	case CmpLT:
		return a < b
	case CmpLE:
		return a <= b
	}
	return false
}

// Backoff of the polling waits: yield for spinYields rounds, then sleep
// from 1µs, doubling, up to maxSleep.
const (
	spinYields = 64
	maxSleep   = 50 * time.Microsecond
)

// backoff pauses the try'th round of a polling wait, and returns an error
// if ctx is done or the job was aborted.
func (w *World) backoff(ctx context.Context, op string, try int) error {
	select {
	case <-ctx.Done():
		return w.opErr(op, ctx.Err(), "waiting")
	case <-w.job:
		return w.opErr(op, narma.ErrAborted, "waiting")
	default:
	}
	if try < spinYields {
		runtime.Gosched()
		return nil
	}
	time.Sleep(min(time.Microsecond<<min(try-spinYields, 6), maxSleep))
	return nil
}
