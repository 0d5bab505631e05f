package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// CT is a counting-puts event counter (Dinan et al.'s shmem_ct_t): every
// PE has its own count, and a counting put (PutCT) to PE pe increments
// pe's count once its data is in place there. A PE reads, sets and waits
// for its own count; nobody else can.
//
// A CT is a notification counter of the heap's narma window, and PutCT
// is a narma PutNotify carrying narma.Counter: the count is kept by the
// target's runtime, so a counting put costs no second message. As in the
// paper, a count of k means that k counting puts have landed, and nothing
// more: no order among them or with other puts is promised.
//
// A CT belongs to the World that made it and is used by its goroutine.
type CT struct {
	w     *World
	i     int // the counter's index, the same on every PE
	freed bool
}

// CTCreate makes a CT at zero on every PE, collectively (shmem_ct_create).
func CTCreate(ctx context.Context, w *World) (*CT, error) {
	if err := w.ok("CTCreate"); err != nil {
		return nil, err
	}
	i, err := w.heap.NewCounter(ctx)
	if err != nil {
		return nil, w.opErr("CTCreate", err, "new counter")
	}
	return &CT{w: w, i: i}, nil
}

// ok guards the CT's methods: a nil or freed CT, or one whose World was
// finalized, is an error.
func (ct *CT) ok(op string) error {
	if ct == nil {
		return &narma.OpError{Op: "shmem." + op, Rank: -1, Detail: "nil CT", Err: narma.ErrInvalid}
	}
	if err := ct.w.ok(op); err != nil {
		return err
	}
	if ct.freed {
		return ct.w.opErr(op, narma.ErrFreed, "CT %d", ct.i)
	}
	return nil
}

// Free releases the CT, collectively (shmem_ct_free). Like Free, it
// completes this PE's operations and waits for every PE first, so no
// counting put to it is in flight. Later calls on it fail with
// narma.ErrFreed.
func (ct *CT) Free(ctx context.Context) error {
	if ct == nil || ct.w == nil {
		return ct.ok("CT.Free")
	}
	// A PE whose CT is unusable still takes part, so that the others
	// learn of it instead of waiting for it.
	local := ct.ok("CT.Free")
	if err := ct.w.BarrierAll(ctx); err != nil {
		return err
	}
	i := ct.i
	if local != nil {
		i = -1 // refused by FreeCounter on this PE only
	}
	if err := ct.w.heap.FreeCounter(ctx, i); err != nil {
		if local != nil {
			return local
		}
		return ct.w.opErr("CT.Free", err, "CT %d", ct.i)
	}
	ct.freed = true
	return nil
}

// Get returns this PE's count (shmem_ct_get).
func (ct *CT) Get() (uint64, error) {
	if err := ct.ok("CT.Get"); err != nil {
		return 0, err
	}
	ct.w.mu.Lock()
	defer ct.w.mu.Unlock()
	return ct.w.win.Counter(ct.i)
}

// Set sets this PE's count to v (shmem_ct_set). Counting puts that land
// meanwhile may be lost: set the count when no counting put to this PE
// can be in flight, as in the paper's ping-pong (or alternate two CTs).
func (ct *CT) Set(v uint64) error {
	if err := ct.ok("CT.Set"); err != nil {
		return err
	}
	ct.w.mu.Lock()
	defer ct.w.mu.Unlock()
	return ct.w.win.SetCounter(ct.i, v)
}

// Wait waits until this PE's count is at least v (shmem_ct_wait), and the
// data of that many counting puts is in place. It sleeps, and counting
// puts wake it: narma's WaitCounter.
func (ct *CT) Wait(ctx context.Context, v uint64) error {
	if err := ct.ok("CT.Wait"); err != nil {
		return err
	}
	return ct.w.win.WaitCounter(ctx, ct.i, v)
}

// PutCT is Put counted by ct (shmem_putmem_ct): it copies src into the
// first len(src) elements of dst on PE pe, and pe's count of ct is
// incremented once the data is in place there. It returns when src may
// be reused. An empty src is a pure count.
func PutCT[T narma.Elem](ctx context.Context, ct *CT, dst Sym[T], src []T, pe int) error {
	if err := putCT(ct, "PutCT", dst, src, pe); err != nil {
		return err
	}
	ct.w.mu.Lock()
	defer ct.w.mu.Unlock()
	return ct.w.win.Flush(ctx, pe)
}

// PutCTNBI is the nonblocking PutCT: it returns at once, and src must not
// change until Quiet. The count at pe is still incremented when the data
// lands there, which is how the target learns of it.
func PutCTNBI[T narma.Elem](ct *CT, dst Sym[T], src []T, pe int) error {
	return putCT(ct, "PutCTNBI", dst, src, pe)
}

func putCT[T narma.Elem](ct *CT, op string, dst Sym[T], src []T, pe int) error {
	if err := ct.ok(op); err != nil {
		return err
	}
	if err := ct.w.okPE(op, pe); err != nil {
		return err
	}
	if err := dst.span(ct.w, op, len(src)); err != nil {
		return err
	}
	ct.w.mu.Lock()
	defer ct.w.mu.Unlock()
	return viewOf[T](ct.w).win.PutNotify(src, pe, dst.off, narma.Counter(ct.i))
}
