package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// Int is the set of element types of the atomics and of WaitUntil: the
// 32- and 64-bit integers (and types defined on them), OpenSHMEM's int,
// long, unsigned int and unsigned long.
type Int interface {
	~int32 | ~int64 | ~uint32 | ~uint64
}

// Atomic memory operations (OpenSHMEM's shmem_atomic_*) on one element of
// a symmetric object on PE pe: dst (or src) must be one element (At).
// They are atomic with respect to each other, from every PE, and to
// WaitUntil's reads, but not to Put and P.
//
// They are narma's FetchAndOp and CompareAndSwap on the heap window,
// followed by a Flush of pe: every atomic, fetching or not, is complete
// at pe when it returns. (OpenSHMEM lets the non-fetching ones complete
// later; a transport that defers operations would then hold them until
// the next Quiet, and a PE waiting for the word would wait forever.)

// AtomicFetch returns the value of src on PE pe, read atomically.
func AtomicFetch[T Int](ctx context.Context, w *World, src Sym[T], pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicFetch", src, 0, pe, narma.NoOp)
}

// AtomicSet writes v into dst on PE pe atomically.
func AtomicSet[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	return nonFetchOp(ctx, w, "AtomicSet", dst, v, pe, narma.Replace)
}

// AtomicSwap writes v into dst on PE pe and returns the previous value.
func AtomicSwap[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicSwap", dst, v, pe, narma.Replace)
}

// AtomicCompareSwap writes v into dst on PE pe if dst equals cond, and
// returns the previous value (equal to cond if the swap happened).
func AtomicCompareSwap[T Int](ctx context.Context, w *World, dst Sym[T], cond, v T, pe int) (T, error) {
	if err := w.okPE("AtomicCompareSwap", pe); err != nil {
		var zero T
		return zero, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return compareSwapIn(ctx, w, &w.own, "AtomicCompareSwap", dst, cond, v, pe)
}

// compareSwapIn is AtomicCompareSwap on World PE pe, with the views and
// spans of cache c; w.mu is held.
func compareSwapIn[T Int](ctx context.Context, w *World, c *cache, name string, dst Sym[T], cond, v T, pe int) (T, error) {
	var zero T
	if err := dst.elemIn(w, c, name); err != nil {
		return zero, err
	}
	vw := viewIn[T](w, c)
	if err := vw.win.CompareAndSwap(cond, v, &vw.one[0], pe, dst.off); err != nil {
		return zero, err
	}
	if err := w.win.Flush(ctx, pe); err != nil {
		return zero, err
	}
	return vw.one[0], nil
}

// AtomicFetchAdd adds v to dst on PE pe and returns the previous value.
// Integers wrap around, as in Go.
func AtomicFetchAdd[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicFetchAdd", dst, v, pe, narma.Sum)
}

// AtomicAdd adds v to dst on PE pe.
func AtomicAdd[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	return nonFetchOp(ctx, w, "AtomicAdd", dst, v, pe, narma.Sum)
}

// AtomicInc adds 1 to dst on PE pe.
func AtomicInc[T Int](ctx context.Context, w *World, dst Sym[T], pe int) error {
	return nonFetchOp(ctx, w, "AtomicInc", dst, 1, pe, narma.Sum)
}

// AtomicFetchInc adds 1 to dst on PE pe and returns the previous value.
func AtomicFetchInc[T Int](ctx context.Context, w *World, dst Sym[T], pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicFetchInc", dst, 1, pe, narma.Sum)
}

// AtomicAnd replaces dst on PE pe with dst & v.
func AtomicAnd[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	return nonFetchOp(ctx, w, "AtomicAnd", dst, v, pe, narma.Band)
}

// AtomicFetchAnd replaces dst on PE pe with dst & v and returns the
// previous value.
func AtomicFetchAnd[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicFetchAnd", dst, v, pe, narma.Band)
}

// AtomicOr replaces dst on PE pe with dst | v.
func AtomicOr[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	return nonFetchOp(ctx, w, "AtomicOr", dst, v, pe, narma.Bor)
}

// AtomicFetchOr replaces dst on PE pe with dst | v and returns the
// previous value.
func AtomicFetchOr[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicFetchOr", dst, v, pe, narma.Bor)
}

// AtomicXor replaces dst on PE pe with dst ^ v.
func AtomicXor[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	return nonFetchOp(ctx, w, "AtomicXor", dst, v, pe, narma.Bxor)
}

// AtomicFetchXor replaces dst on PE pe with dst ^ v and returns the
// previous value.
func AtomicFetchXor[T Int](ctx context.Context, w *World, dst Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, w, "AtomicFetchXor", dst, v, pe, narma.Bxor)
}

// fetchOp applies op with v to dst on pe and returns the previous value.
func fetchOp[T Int](ctx context.Context, w *World, name string, dst Sym[T], v T, pe int, op narma.Op) (T, error) {
	if err := w.okPE(name, pe); err != nil {
		var zero T
		return zero, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return fetchOpIn(ctx, w, &w.own, name, dst, v, pe, op, true)
}

// nonFetchOp applies op with v to dst on pe.
func nonFetchOp[T Int](ctx context.Context, w *World, name string, dst Sym[T], v T, pe int, op narma.Op) error {
	if err := w.okPE(name, pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := fetchOpIn(ctx, w, &w.own, name, dst, v, pe, op, false)
	return err
}

// fetchOpIn applies op with v to dst on World PE pe, with the views and
// spans of cache c, and returns the previous value if fetch; w.mu is
// held. Without fetch the previous value lands in the view's sink:
// FetchAndOp copies its operand, where Accumulate would need v to stay
// in a buffer until the flush.
func fetchOpIn[T Int](ctx context.Context, w *World, c *cache, name string, dst Sym[T], v T, pe int, op narma.Op, fetch bool) (T, error) {
	var zero T
	if err := dst.elemIn(w, c, name); err != nil {
		return zero, err
	}
	vw := viewIn[T](w, c)
	result := &vw.sink
	if fetch {
		result = &vw.one[0]
	}
	if err := vw.win.FetchAndOp(v, result, pe, dst.off, op); err != nil {
		return zero, err
	}
	if err := w.win.Flush(ctx, pe); err != nil {
		return zero, err
	}
	if !fetch {
		return zero, nil
	}
	return vw.one[0], nil
}
