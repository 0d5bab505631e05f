package narma

import (
	"context"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// Notice says how the target of a notified operation learns that the
// operation completed there. It is a small value: passing one costs no
// allocation. The zero Notice means "no notice" (a plain operation).
//
// Build one with Tag (matched notifications: the target's NotifyInit
// requests match the source and tag), Counter (a notification counter of
// the target's window is incremented) or Signal (a 64-bit word of the
// target's window is set or added to). In every case the target sees the
// notice only after the operation's data: a put's data is in place, a
// get's data has been read. A bad value given to Tag, Counter or Signal
// is reported, with the value, by the notified call that carries the
// notice.
//
// The notice travels with its operation, so it leaves the origin when
// the operation does. Under the Deferred strategy (see WithStrategy) a
// notified call only queues its operation until a Flush (in a lock
// epoch; FlushLocal and FlushAll too), the request's Wait (for the
// request-based forms), or the call that ends the epoch (Unlock,
// UnlockAll, Fence, Complete): nothing moves before, and a program that
// waits for the notice first, for instance for a notice it sent itself,
// waits until its context ends.
type Notice struct {
	n engine.Notice
}

// Tag returns a notice that queues (origin rank, tag) at the target, for
// requests made by NotifyInit. tag must be in [0, MaxTag]; a notified
// call refuses any other with ErrTag.
func Tag(tag int) Notice {
	if tag < 0 || tag > MaxTag {
		return Notice{engine.BadTagNotice(tag)}
	}
	return Notice{engine.TagNotice(engine.NoticeTag, int32(tag))}
}

// Counter returns a notice that increments notification counter i of the
// target's window (see SetCounters). An index the target does not have is
// refused at the origin with ErrInvalidNotification.
func Counter(i int) Notice {
	if i < 0 || i > MaxTag {
		return Notice{engine.BadCounterNotice(i)}
	}
	return Notice{engine.TagNotice(engine.NoticeCounter, int32(i))}
}

// SignalOp is the update a signal notice makes: SignalSet or SignalAdd.
type SignalOp uint8

// Signal operations, as OpenSHMEM's SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD.
const (
	SignalSet = SignalOp(engine.SignalSet)
	SignalAdd = SignalOp(engine.SignalAdd)
)

// Signal returns a notice that applies op with value to the 64-bit signal
// word at displacement disp of the target's window (in the target's
// displacement units; the word must be 8-byte aligned and inside the
// window), after the operation's data: OpenSHMEM's put-with-signal. A
// displacement outside the window is refused with ErrBounds, an op other
// than SignalSet and SignalAdd with ErrInvalidNotification.
func Signal(disp int, value uint64, op SignalOp) Notice {
	switch {
	case disp < 0 || uint64(disp) > engine.MaxSignalDisp:
		return Notice{engine.BadSignalNotice(disp)}
	case op != SignalSet && op != SignalAdd:
		return Notice{engine.BadSignalOpNotice(engine.SignalOp(op))}
	}
	return Notice{engine.SignalNotice(engine.SignalOp(op), uint64(disp), value)}
}

// MaxTag is the largest tag of a notice or message (2^31-1).
const MaxTag = 1<<31 - 1

// MaxTag is spelled out so that the documentation shows it; it must be
// the engine's, which compiling checks.
var _ = [1]struct{}{}[MaxTag-engine.MaxTag]

// Cmp is a comparison for WaitSignal.
type Cmp uint8

// Comparisons, as OpenSHMEM's SHMEM_CMP_*.
const (
	CmpEQ = Cmp(engine.CmpEQ)
	CmpNE = Cmp(engine.CmpNE)
	CmpGT = Cmp(engine.CmpGT)
	CmpGE = Cmp(engine.CmpGE)
	CmpLT = Cmp(engine.CmpLT)
	CmpLE = Cmp(engine.CmpLE)
)

// PutNotify is Put carrying notice n to the target: the target sees n
// once src is in its window. A nil or empty src moves no data: n alone
// travels, a pure notice (disp must still lie in the window). Under the
// Deferred strategy nothing moves, n included, until a Flush or the
// epoch's end (see Notice).
func (w *Win[T]) PutNotify(src []T, target, disp int, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindPut, Origin: mem.Bytes(src), Target: target, Disp: disp, Notice: n.n})
}

// PutStridedNotify is PutStrided carrying notice n, which the target sees
// once every block is in its window. Under the Deferred strategy nothing
// moves, n included, until a Flush or the epoch's end (see Notice).
func (w *Win[T]) PutStridedNotify(src []T, srcL Layout, target, disp int, dstL Layout, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindPut, Origin: mem.Bytes(src), OLayout: srcL.engine(), Target: target, Disp: disp, TLayout: dstL.engine(), Notice: n.n})
}

// GetNotify is Get carrying notice n: the target learns that its data has
// been read (and may be overwritten). Under the Deferred strategy nothing
// moves, n included, until a Flush or the epoch's end (see Notice).
func (w *Win[T]) GetNotify(dst []T, target, disp int, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindGet, Origin: mem.Bytes(dst), Target: target, Disp: disp, Notice: n.n})
}

// GetStridedNotify is GetStrided carrying notice n, which the target sees
// once every block has been read. Under the Deferred strategy nothing
// moves, n included, until a Flush or the epoch's end (see Notice).
func (w *Win[T]) GetStridedNotify(dst []T, dstL Layout, target, disp int, srcL Layout, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindGet, Origin: mem.Bytes(dst), OLayout: dstL.engine(), Target: target, Disp: disp, TLayout: srcL.engine(), Notice: n.n})
}

// AccumulateNotify is Accumulate carrying notice n, which the target sees
// once the update is applied. Under the Deferred strategy nothing moves,
// n included, until a Flush or the epoch's end (see Notice).
func (w *Win[T]) AccumulateNotify(src []T, target, disp int, op Op, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Target: target, Disp: disp, Notice: n.n})
}

// AccumulateStridedNotify is AccumulateStrided carrying notice n. Under
// the Deferred strategy nothing moves, n included, until a Flush or the
// epoch's end (see Notice).
func (w *Win[T]) AccumulateStridedNotify(src []T, srcL Layout, target, disp int, dstL Layout, op Op, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), OLayout: srcL.engine(), Target: target, Disp: disp, TLayout: dstL.engine(), Notice: n.n})
}

// GetAccumulateNotify is GetAccumulate carrying notice n. Under the
// Deferred strategy nothing moves, n included, until a Flush or the
// epoch's end (see Notice).
func (w *Win[T]) GetAccumulateNotify(src, result []T, target, disp int, op Op, n Notice) error {
	return w.do(&engine.Access{Kind: engine.KindGetAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Result: mem.Bytes(result), Target: target, Disp: disp, Notice: n.n})
}

// FetchAndOpNotify is FetchAndOp carrying notice n. Under the Deferred
// strategy nothing moves, n included, until a Flush or the epoch's end
// (see Notice).
func (w *Win[T]) FetchAndOpNotify(v T, result *T, target, disp int, op Op, n Notice) error {
	if w == nil {
		return w.do(nil)
	}
	w.scratch[0] = v
	return w.do(&engine.Access{Kind: engine.KindFetchAndOp, Op: mem.Op(op), Origin: mem.Bytes(w.scratch[:1]), Result: mem.PtrBytes(result), Target: target, Disp: disp, Notice: n.n})
}

// CompareAndSwapNotify is CompareAndSwap carrying notice n. Under the
// Deferred strategy nothing moves, n included, until a Flush or the
// epoch's end (see Notice).
func (w *Win[T]) CompareAndSwapNotify(compare, swap T, result *T, target, disp int, n Notice) error {
	if w == nil {
		return w.do(nil)
	}
	w.scratch[0], w.scratch[1] = swap, compare
	return w.do(&engine.Access{Kind: engine.KindCompareAndSwap, Origin: mem.Bytes(w.scratch[:1]), Compare: mem.Bytes(w.scratch[1:2]), Result: mem.PtrBytes(result), Target: target, Disp: disp, Notice: n.n})
}

// RputNotify is Rput carrying notice n; as with PutNotify, a nil or empty
// src sends n alone. Under the Deferred strategy nothing moves, n
// included, until the request's Wait, a Flush or the epoch's end (see
// Notice).
func (w *Win[T]) RputNotify(src []T, target, disp int, n Notice) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindPut, Origin: mem.Bytes(src), Target: target, Disp: disp, Notice: n.n})
}

// RgetNotify is Rget carrying notice n. Under the Deferred strategy
// nothing moves, n included, until the request's Wait, a Flush or the
// epoch's end (see Notice).
func (w *Win[T]) RgetNotify(dst []T, target, disp int, n Notice) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindGet, Origin: mem.Bytes(dst), Target: target, Disp: disp, Notice: n.n})
}

// RaccumulateNotify is Raccumulate carrying notice n. Under the Deferred
// strategy nothing moves, n included, until the request's Wait, a Flush
// or the epoch's end (see Notice).
func (w *Win[T]) RaccumulateNotify(src []T, target, disp int, op Op, n Notice) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Target: target, Disp: disp, Notice: n.n})
}

// RgetAccumulateNotify is RgetAccumulate carrying notice n. Under the
// Deferred strategy nothing moves, n included, until the request's Wait,
// a Flush or the epoch's end (see Notice).
func (w *Win[T]) RgetAccumulateNotify(src, result []T, target, disp int, op Op, n Notice) (*Request, error) {
	return w.doReq(&engine.Access{Kind: engine.KindGetAccumulate, Op: mem.Op(op), Origin: mem.Bytes(src), Result: mem.Bytes(result), Target: target, Disp: disp, Notice: n.n})
}

// NotifyInit returns a persistent request that matches tag notices
// arriving at this rank's part of the window from source with tag
// (AnySource and AnyTag match any), count of them per activation. It is
// inactive until Start; Test and Wait then take matching notices, oldest
// first, and complete after count matches with the status (source, tag)
// of the last one. Start re-arms it. Notices that arrive before a request
// looks for them wait, none lost and none matched twice; notices from one
// origin are matched in the order it issued them. If source fails, Test
// and Wait deliver what it sent before, then complete with an error
// wrapping ErrPeer; a request for AnySource does so when any rank fails
// (as MPI's fault-tolerance proposal does with wildcard receives), until
// Comm.AckFailures acknowledges the failure. A notice sent under the
// Deferred strategy arrives only once its origin flushes or ends the
// epoch (see Notice).
func (w *Win[T]) NotifyInit(source, tag, count int) (*Request, error) {
	return requestOf(w.eng().NotifyInit(source, tag, count))
}

// SetCounters gives this rank's part of the window n notification
// counters, collectively (ranks may ask for different n). It completes the
// operations issued before it first, so no notice is lost; counters kept
// across a resize keep their values.
func (w *Win[T]) SetCounters(ctx context.Context, n int) error {
	return w.eng().SetCounters(ctx, n)
}

// Counter returns the value of notification counter i.
func (w *Win[T]) Counter(i int) (uint64, error) { return w.eng().Counter(i) }

// SetCounter sets notification counter i to v.
func (w *Win[T]) SetCounter(i int, v uint64) error { return w.eng().SetCounter(i, v) }

// WaitCounter waits until notification counter i is at least v.
func (w *Win[T]) WaitCounter(ctx context.Context, i int, v uint64) error {
	return w.eng().WaitCounter(ctx, i, v)
}

// CounterThreshold returns a request that completes once notification
// counter i is at least v, for use with Test, Wait and the WaitAny family.
func (w *Win[T]) CounterThreshold(i int, v uint64) (*Request, error) {
	return requestOf(w.eng().CounterThreshold(i, v))
}

// Signal reads the 64-bit signal word at displacement disp of the local
// window.
func (w *Win[T]) Signal(disp int) (uint64, error) {
	off, err := w.signalOffset("Signal", disp)
	if err != nil {
		return 0, err
	}
	return w.e.Signal(off)
}

// WaitSignal waits until the 64-bit signal word at displacement disp of
// the local window satisfies cmp against v, and returns its value. Signal
// words are updated by Signal notices, which wake the waiter.
func (w *Win[T]) WaitSignal(ctx context.Context, disp int, cmp Cmp, v uint64) (uint64, error) {
	off, err := w.signalOffset("WaitSignal", disp)
	if err != nil {
		return 0, err
	}
	return w.e.WaitSignal(ctx, off, engine.Cmp(cmp), v)
}

func (w *Win[T]) signalOffset(name string, disp int) (int, error) {
	if w == nil {
		return 0, &OpError{Op: name, Rank: -1, Detail: "nil window", Err: ErrFreed}
	}
	if disp < 0 || disp > len(w.e.Memory()) {
		return 0, &OpError{Op: name, Rank: w.e.Comm().Rank(), Detail: "negative or huge displacement", Err: ErrBounds}
	}
	return disp * w.e.DispUnit(), nil
}
