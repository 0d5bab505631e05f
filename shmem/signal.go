package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// SignalOp is the update a put-with-signal makes to its signal word:
// SignalSet or SignalAdd (narma's).
type SignalOp = narma.SignalOp

// Signal operations (OpenSHMEM 1.5's SHMEM_SIGNAL_SET and
// SHMEM_SIGNAL_ADD).
const (
	SignalSet = narma.SignalSet
	SignalAdd = narma.SignalAdd
)

// PutSignal is Put with signal (shmem_put_signal): it copies src into the
// first len(src) elements of dst on PE pe and then, once the data is in
// place there, updates sig (one uint64 element) on pe with op and value.
// It returns when src may be reused. It is a narma PutNotify carrying
// narma.Signal at sig's byte offset: one transfer, no separate flag
// update. An empty src is a pure signal.
func PutSignal[T narma.Elem](ctx context.Context, w *World, dst Sym[T], src []T, sig Sym[uint64], value uint64, op SignalOp, pe int) error {
	if err := w.okPE("PutSignal", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := putSignalIn(w, &w.own, "PutSignal", dst, src, sig, value, op, pe); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// PutSignalNBI is the nonblocking PutSignal (shmem_put_signal_nbi): it
// returns at once, src must not change until Quiet, and the signal is
// still updated only after the data has landed.
func PutSignalNBI[T narma.Elem](w *World, dst Sym[T], src []T, sig Sym[uint64], value uint64, op SignalOp, pe int) error {
	if err := w.okPE("PutSignalNBI", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return putSignalIn(w, &w.own, "PutSignalNBI", dst, src, sig, value, op, pe)
}

// putSignalIn is PutSignalNBI to World PE pe, with the views and spans of
// cache c; w.mu is held.
func putSignalIn[T narma.Elem](w *World, c *cache, name string, dst Sym[T], src []T, sig Sym[uint64], value uint64, op SignalOp, pe int) error {
	if err := dst.spanIn(w, c, name, len(src)); err != nil {
		return err
	}
	if err := sig.elemIn(w, c, name); err != nil {
		return err
	}
	return viewIn[T](w, c).win.PutNotify(src, pe, dst.off, narma.Signal(sig.off, value, op))
}

// SignalWaitUntil waits until this PE's sig (one uint64 element)
// satisfies cmp against value, and returns its value then
// (shmem_signal_wait_until). Puts with signal wake it: narma's WaitSignal.
func SignalWaitUntil(ctx context.Context, w *World, sig Sym[uint64], cmp Cmp, value uint64) (uint64, error) {
	if err := elemCheck(w, "SignalWaitUntil", sig, cmp); err != nil {
		return 0, err
	}
	return w.win.WaitSignal(ctx, sig.off, cmp, value)
}

// SignalFetch returns the value of this PE's sig (one uint64 element),
// read atomically (shmem_signal_fetch).
func SignalFetch(w *World, sig Sym[uint64]) (uint64, error) {
	if err := w.ok("SignalFetch"); err != nil {
		return 0, err
	}
	if err := sig.elem(w, "SignalFetch"); err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.win.Signal(sig.off)
}
