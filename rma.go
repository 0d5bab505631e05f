package narma

import (
	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// Data movement. Every call checks its arguments against the target's
// window (known at every rank since creation) and returns an error, having
// written nothing, if the target is not in an open access epoch, a rank,
// displacement or length is out of range, or an operation is not defined on
// T. Whether the transfer happens during the call or in the epoch's closing
// call depends on the window's Strategy; either way the data is in place
// when the closing call (or a Flush) returns.

func (w *Win[T]) do(a *engine.Access) error {
	if w == nil {
		return w.eng().Do(a)
	}
	a.Type = w.t
	return w.e.Do(a)
}

// Put writes src into target's window starting at displacement disp.
func (w *Win[T]) Put(src []T, target, disp int) error {
	return w.do(&engine.Access{Kind: engine.KindPut, Origin: mem.Bytes(src), Target: target, Disp: disp})
}

// PutStrided writes the elements of src laid out by srcL into target's
// window at disp laid out by dstL; both layouts must describe the same
// number of elements.
func (w *Win[T]) PutStrided(src []T, srcL Layout, target, disp int, dstL Layout) error {
	return w.do(&engine.Access{Kind: engine.KindPut, Origin: mem.Bytes(src), OLayout: srcL.engine(), Target: target, Disp: disp, TLayout: dstL.engine()})
}

// Get reads len(dst) elements from target's window at disp into dst. dst
// is filled when the epoch's closing call (or a Flush) returns.
func (w *Win[T]) Get(dst []T, target, disp int) error {
	return w.do(&engine.Access{Kind: engine.KindGet, Origin: mem.Bytes(dst), Target: target, Disp: disp})
}

// GetStrided reads elements laid out by srcL in target's window at disp
// into dst laid out by dstL.
func (w *Win[T]) GetStrided(dst []T, dstL Layout, target, disp int, srcL Layout) error {
	return w.do(&engine.Access{Kind: engine.KindGet, Origin: mem.Bytes(dst), OLayout: dstL.engine(), Target: target, Disp: disp, TLayout: srcL.engine()})
}

// Accumulate combines src into target's window at disp: t[i] = t[i] op
// src[i]. Each element is updated atomically with respect to every other
// accumulate-family call, and accumulates from one origin to one target are
// applied in the order they were issued.
func (w *Win[T]) Accumulate(src []T, target, disp int, op Op) error {
	return w.do(&engine.Access{Kind: engine.KindAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Target: target, Disp: disp})
}

// AccumulateStrided is Accumulate with layouts on both sides.
func (w *Win[T]) AccumulateStrided(src []T, srcL Layout, target, disp int, dstL Layout, op Op) error {
	return w.do(&engine.Access{Kind: engine.KindAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), OLayout: srcL.engine(), Target: target, Disp: disp, TLayout: dstL.engine()})
}

// GetAccumulate stores target's elements at disp into result and combines
// src into them, element by element atomically. With NoOp, src is ignored
// (may be nil) and the call is an atomic get; with Replace, an atomic swap.
func (w *Win[T]) GetAccumulate(src, result []T, target, disp int, op Op) error {
	return w.do(&engine.Access{Kind: engine.KindGetAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Result: mem.Bytes(result), Target: target, Disp: disp})
}

// FetchAndOp is GetAccumulate of one element: *result receives target's
// element at disp, which becomes element op v. *result is valid after the
// epoch's closing call or a Flush.
func (w *Win[T]) FetchAndOp(v T, result *T, target, disp int, op Op) error {
	if w == nil {
		return w.do(nil)
	}
	w.scratch[0] = v
	return w.do(&engine.Access{Kind: engine.KindFetchAndOp, Op: mem.Op(op), Origin: mem.Bytes(w.scratch[:1]), Result: mem.PtrBytes(result), Target: target, Disp: disp})
}

// CompareAndSwap atomically replaces target's element at disp with swap if
// it equals compare; *result receives the element's previous value. T must
// be an integer type (ErrOp otherwise, as MPI).
func (w *Win[T]) CompareAndSwap(compare, swap T, result *T, target, disp int) error {
	if w == nil {
		return w.do(nil)
	}
	w.scratch[0], w.scratch[1] = swap, compare
	return w.do(&engine.Access{Kind: engine.KindCompareAndSwap, Origin: mem.Bytes(w.scratch[:1]), Compare: mem.Bytes(w.scratch[1:2]), Result: mem.PtrBytes(result), Target: target, Disp: disp})
}

func (w *Win[T]) doReq(a *engine.Access) (*Request, error) {
	if w == nil {
		return requestOf(w.eng().DoRequest(a))
	}
	a.Type = w.t
	return requestOf(w.e.DoRequest(a))
}

// Rput is Put returning a request that completes when the data is in
// target's window. As in MPI, request-based calls are valid in lock
// epochs only.
func (w *Win[T]) Rput(src []T, target, disp int) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindPut, Origin: mem.Bytes(src), Target: target, Disp: disp})
}

// Rget is Get returning a request that completes when dst is filled.
func (w *Win[T]) Rget(dst []T, target, disp int) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindGet, Origin: mem.Bytes(dst), Target: target, Disp: disp})
}

// Raccumulate is Accumulate returning a request.
func (w *Win[T]) Raccumulate(src []T, target, disp int, op Op) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Target: target, Disp: disp})
}

// RgetAccumulate is GetAccumulate returning a request that completes when
// result is filled.
func (w *Win[T]) RgetAccumulate(src, result []T, target, disp int, op Op) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindGetAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Result: mem.Bytes(result), Target: target, Disp: disp})
}
