package engine

import (
	"context"
	"errors"
	"math/bits"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Kind is the kind of a data-movement operation.
type Kind uint8

// Operation kinds.
const (
	KindPut Kind = iota + 1
	KindGet
	KindAccumulate
	KindGetAccumulate
	KindFetchAndOp
	KindCompareAndSwap
)

var kindNames = [...]string{"invalid", "Put", "Get", "Accumulate", "GetAccumulate", "FetchAndOp", "CompareAndSwap"}

// name returns the name of the call that made a: its kind's, or the
// notified call's if a carries a notice.
func (a *Access) name() string {
	if a.Notice.Kind() != transport.NoticeNone && a.Kind != 0 && int(a.Kind) < len(notifyNames) {
		return notifyNames[a.Kind]
	}
	return a.Kind.String()
}

// reqName returns the name of the request-based call that made a.
func (a *Access) reqName() string {
	names := &reqNames
	if a.Notice.Kind() != transport.NoticeNone {
		names = &reqNotifyNames
	}
	if int(a.Kind) < len(names) {
		return names[a.Kind]
	}
	return names[0]
}

// The names of the notified calls, of the request-based calls and of the
// notified request-based calls, by kind.
var (
	notifyNames    = [...]string{"invalid", "PutNotify", "GetNotify", "AccumulateNotify", "GetAccumulateNotify", "FetchAndOpNotify", "CompareAndSwapNotify"}
	reqNames       = [...]string{"invalid", "Rput", "Rget", "Raccumulate", "RgetAccumulate", "RfetchAndOp", "RcompareAndSwap"}
	reqNotifyNames = [...]string{"invalid", "RputNotify", "RgetNotify", "RaccumulateNotify", "RgetAccumulateNotify", "RfetchAndOpNotify", "RcompareAndSwapNotify"}
)

// String returns the name of the call, e.g. "Put".
func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return "invalid"
	}
	return kindNames[k]
}

// Access describes one data-movement operation. Origin is the local buffer
// (the source of a put or accumulate, the destination of a get), laid out
// by OLayout; Result receives fetched values (GetAccumulate, FetchAndOp,
// CompareAndSwap) with the same layout; Compare is CompareAndSwap's
// comparand. Target memory starts Disp displacement units into the
// target's window and is laid out by TLayout. Layouts count elements of
// Type; one with overlapping blocks (Layout.Overlaps) is refused on the
// side the operation writes. A layout's Shape is immutable, so a queued
// operation keeps it as it was at the call.
type Access struct {
	Kind    Kind
	Type    mem.Type
	Op      mem.Op
	Origin  []byte
	OLayout Layout
	Result  []byte
	Compare []byte
	Target  int
	Disp    int
	TLayout Layout
	Notice  transport.Notice
}

// plan is what checking an Access derives from it.
type plan struct {
	notice transport.Notice // a.Notice with the signal offset in bytes
	off    int              // byte offset at the target
	n      int              // elements
	ol     Layout           // origin layout, normalized
	tl     Layout           // target layout, normalized
	reg    transport.Region // the target's region: its window's, or an attached buffer's (dynamic windows)
}

// rmaOp is a checked Access queued for later (deferred strategies). The
// single-element operands are copied, since the caller's scratch words are
// reused by the next call.
type rmaOp struct {
	Access
	plan
	val  [8]byte               // operand of FetchAndOp and CompareAndSwap
	cmp  [8]byte               // comparand of CompareAndSwap
	comp *transport.Completion // the request of a request-based operation, or nil
}

// prepare checks a and computes its target offset and normalized layouts.
// It writes nothing.
func (w *Win) prepare(name string, a *Access, o *plan) error {
	rank := w.c.rank
	if a.Kind < KindPut || a.Kind > KindCompareAndSwap {
		return opErr(name, rank, ErrInvalidArgs, "operation kind %d", a.Kind)
	}
	if err := w.c.checkRank(name, a.Target); err != nil {
		return err
	}
	esz := a.Type.Size()
	if esz == 0 {
		return opErr(name, rank, ErrType, "element type %v", a.Type)
	}
	atomic := a.Kind >= KindAccumulate
	if atomic && a.Kind != KindCompareAndSwap && !a.Op.ValidFor(a.Type) {
		return opErr(name, rank, ErrOp, "%v on %v", a.Op, a.Type)
	}
	if a.Kind == KindCompareAndSwap && a.Type.IsFloat() {
		// MPI allows CAS on integer (and logical/byte) types only.
		return opErr(name, rank, ErrOp, "compare-and-swap on %v", a.Type)
	}
	if p := a.OLayout.problem(); p != "" {
		return opErr(name, rank, ErrLayout, "origin layout %v: %s", a.OLayout, p)
	}
	if p := a.TLayout.problem(); p != "" {
		return opErr(name, rank, ErrLayout, "target layout %v: %s", a.TLayout, p)
	}
	// Overlapping blocks (indexed layouts) only where the layout is read:
	// an element written twice would end as whichever run came last.
	if a.OLayout.Overlaps() && (a.Kind == KindGet || a.Kind == KindGetAccumulate) {
		return opErr(name, rank, ErrLayout, "origin layout %v has overlapping blocks, which %s would write", a.OLayout, name)
	}
	if a.TLayout.Overlaps() && a.Kind != KindGet && !(a.Kind == KindGetAccumulate && a.Op == mem.NoOp) {
		return opErr(name, rank, ErrLayout, "target layout %v has overlapping blocks, which %s would write", a.TLayout, name)
	}
	// The buffer that defines the origin layout: for a GetAccumulate with
	// NO_OP the origin is ignored and the result buffer defines it.
	lbuf := a.Origin
	switch {
	case a.Kind == KindGetAccumulate && a.Op == mem.NoOp:
		lbuf = a.Result
	case a.Kind == KindFetchAndOp && a.Op == mem.NoOp:
		lbuf = a.Result
	case a.Kind == KindCompareAndSwap:
		lbuf = a.Result
	}
	if a.OLayout.Contiguous() && len(lbuf)%esz != 0 {
		return opErr(name, rank, ErrLayout, "origin of %d bytes is not a whole number of %v", len(lbuf), a.Type)
	}
	o.ol = a.OLayout.normalize(len(lbuf) / esz)
	o.n = o.ol.elems()
	if o.ol.extent()*esz > len(lbuf) {
		return opErr(name, rank, ErrLayout, "origin layout %v needs %d bytes, buffer has %d", a.OLayout, o.ol.extent()*esz, len(lbuf))
	}
	if a.Kind == KindFetchAndOp || a.Kind == KindCompareAndSwap {
		if o.n != 1 || !a.TLayout.Contiguous() || a.OLayout.Shape != nil {
			return opErr(name, rank, ErrLayout, "%d elements laid out by %v and %v, want 1 contiguous", o.n, a.OLayout, a.TLayout)
		}
	}
	needResult := a.Kind == KindGetAccumulate || a.Kind == KindFetchAndOp || a.Kind == KindCompareAndSwap
	if needResult && len(a.Result) < o.ol.extent()*esz {
		return opErr(name, rank, ErrLayout, "result buffer of %d bytes, need %d", len(a.Result), o.ol.extent()*esz)
	}
	if a.Kind == KindCompareAndSwap && (len(a.Compare) < esz || len(a.Origin) < esz) {
		return opErr(name, rank, ErrLayout, "compare/swap values of %d/%d bytes, need %d", len(a.Compare), len(a.Origin), esz)
	}
	if (a.Kind == KindAccumulate || a.Kind == KindGetAccumulate) && a.Op != mem.NoOp && len(a.Origin) < o.ol.extent()*esz {
		return opErr(name, rank, ErrLayout, "origin of %d bytes, need %d", len(a.Origin), o.ol.extent()*esz)
	}
	o.tl = a.TLayout.normalize(o.n)
	if o.tl.elems() != o.n {
		return opErr(name, rank, ErrLayout, "target layout %v holds %d elements, origin %d", a.TLayout, o.tl.elems(), o.n)
	}
	size, unit, disp := w.targets[a.Target].size, w.targets[a.Target].unit, a.Disp
	o.reg = w.targets[a.Target].region
	if w.dyn != nil {
		if a.Notice.Kind() == transport.NoticeSignal {
			return opErr(name, rank, ErrInvalidNotification, "a signal on a dynamic window, which has no window memory for its word")
		}
		var err error
		if o.reg, size, disp, err = w.dynTarget(name, a.Target, a.Disp); err != nil {
			return err
		}
	}
	if disp < 0 || disp > size/unit {
		return opErr(name, rank, ErrBounds, "displacement %d outside window of %d bytes (unit %d) at rank %d", a.Disp, size, unit, a.Target)
	}
	o.off = disp * unit
	if ext := o.tl.extent() * esz; o.off+ext > size {
		return opErr(name, rank, ErrBounds, "%d bytes at displacement %d (byte %d) exceed window of %d bytes at rank %d", ext, a.Disp, o.off, size, a.Target)
	}
	if atomic && o.off%esz != 0 {
		return opErr(name, rank, ErrAlign, "byte offset %d for %v", o.off, a.Type)
	}
	if a.Kind == KindFetchAndOp && a.Op != mem.NoOp && len(a.Origin) < esz {
		return opErr(name, rank, ErrLayout, "operand of %d bytes, need %d", len(a.Origin), esz)
	}
	o.notice = a.Notice
	if a.Notice.Kind() == transport.NoticeSignal {
		// The signal word is addressed in the target's displacement units.
		if a.Notice.Offset() > uint64(size)/uint64(unit) {
			return opErr(name, rank, ErrBounds, "signal displacement %d outside window of %d bytes at rank %d", a.Notice.Offset(), size, a.Target)
		}
		o.notice = a.Notice.WithOffset(a.Notice.Offset() * uint64(unit))
	}
	return w.checkNotice(name, &o.notice, a.Target)
}

// exec performs a, checked into p, now. c may be nil.
func (w *Win) exec(name string, a *Access, p *plan, c *transport.Completion) error {
	if w.maps == nil {
		return w.execOp(name, a, p, c)
	}
	// A fetching operation's size is its result's (a fetch with NoOp
	// has no operand).
	var d direct
	n := w.splitDirect(a.Target, p.notice, max(len(a.Origin), len(a.Result)), &d)
	if !d.on {
		return w.execOp(name, a, p, c)
	}
	q := *p
	q.notice = n
	if err := w.execOp(name, a, &q, c); err != nil {
		w.dropDirect(a.Target, &d)
		return err
	}
	return w.transportErr(name, a.Target, p.off, w.applyDirect(a.Target, p.notice, &d))
}

// execOp is exec with every notice sent through the transport.
func (w *Win) execOp(name string, a *Access, p *plan, c *transport.Completion) error {
	reg := p.reg
	esz := a.Type.Size()
	if a.Kind == KindFetchAndOp || a.Kind == KindCompareAndSwap {
		var err error
		if a.Kind == KindCompareAndSwap {
			err = reg.CompareSwap(p.off, a.Type, a.Compare[:esz], a.Origin[:esz], a.Result[:esz], p.notice, c)
		} else {
			var src []byte
			if a.Op != mem.NoOp {
				src = a.Origin[:esz]
			}
			err = reg.Accumulate(p.off, a.Op, a.Type, src, a.Result[:esz], p.notice, c)
		}
		return w.transportErr(name, a.Target, p.off, err)
	}
	if p.ol.Count == 1 && p.tl.Count == 1 && (a.Kind == KindPut || a.Kind == KindGet) {
		// Contiguous on both sides: one transfer.
		var err error
		if a.Kind == KindPut {
			err = reg.Put(p.off, a.Origin[:p.n*esz], p.notice, c)
		} else {
			err = reg.Get(p.off, a.Origin[:p.n*esz], p.notice, c)
		}
		return w.transportErr(name, a.Target, p.off, err)
	}
	ch := newChunker(esz, p.ol, p.tl, p.n)
	for {
		oo, to, n, last, ok := ch.next()
		if !ok {
			return nil
		}
		var nt transport.Notice
		if last {
			nt = p.notice
		}
		var err error
		switch a.Kind {
		case KindPut:
			err = reg.Put(p.off+to, a.Origin[oo:oo+n], nt, c)
		case KindGet:
			err = reg.Get(p.off+to, a.Origin[oo:oo+n], nt, c)
		case KindAccumulate:
			err = reg.Accumulate(p.off+to, a.Op, a.Type, a.Origin[oo:oo+n], nil, nt, c)
		case KindGetAccumulate:
			var src []byte
			if a.Op != mem.NoOp {
				src = a.Origin[oo : oo+n]
			}
			err = reg.Accumulate(p.off+to, a.Op, a.Type, src, a.Result[oo:oo+n], nt, c)
		}
		if err != nil {
			return w.transportErr(name, a.Target, p.off, err)
		}
	}
}

func (w *Win) transportErr(name string, target, off int, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, transport.ErrBounds):
		return opErr(name, w.c.rank, ErrBounds, "rank %d refused byte %d: %v", target, off, err)
	case errors.Is(err, transport.ErrAlign):
		return opErr(name, w.c.rank, ErrAlign, "rank %d byte %d: %v", target, off, err)
	case errors.Is(err, transport.ErrNoRegion):
		return opErr(name, w.c.rank, ErrFreed, "window at rank %d: %v", target, err)
	}
	return opErr(name, w.c.rank, ErrPeer, "rank %d: %v", target, err)
}

// Do issues a data-movement operation in the current epoch. Depending on
// the epoch and the window's strategy it is performed at once or queued
// until the epoch's closing call; its buffers belong to narma until the
// operation is complete (as in MPI). Errors are reported before anything is
// written.
func (w *Win) Do(a *Access) error {
	if w == nil || a == nil {
		name := "Do"
		if a != nil {
			name = a.name()
		}
		return opErr(name, -1, ErrFreed, "nil window")
	}
	if a.Target == ProcNull {
		return w.check(a.name())
	}
	if done, err := w.fastPath(a); done {
		return err
	}
	name := a.name()
	if err := w.check(name); err != nil {
		return err
	}
	var p plan
	if err := w.prepare(name, a, &p); err != nil {
		return err
	}
	deferred, err := w.route(name, a.Target)
	if err != nil {
		return err
	}
	if deferred {
		w.enqueue(a, &p)
		return nil
	}
	return w.exec(name, a, &p, nil)
}

// fastPath performs the commonest operations, a contiguous put or get,
// plain or with a tag or counter notice (or a signal this rank sets
// itself, splitDirect), to a target whose lock is held
// or whose epoch is immediate, without building a plan. It reports false,
// having done nothing, whenever any check fails or the operation must be
// queued; the general path then does the work and produces the error
// message. When it reports true, err is the operation's result. It asks
// routeOf, as route does, whether the epoch carries the operation at once.
func (w *Win) fastPath(a *Access) (done bool, err error) {
	if (a.Kind != KindPut && a.Kind != KindGet) || w.freed || w.dyn != nil || !a.OLayout.Contiguous() || !a.TLayout.Contiguous() {
		return false, nil
	}
	t := a.Target
	if uint(t) >= uint(len(w.targets)) {
		return false, nil
	}
	// A signal's offset is in displacement units, which the general path
	// converts, unless this rank sets it itself (below); a bad notice
	// takes the general path for its error.
	signal := a.Notice.Kind() == transport.NoticeSignal
	if signal && (w.maps == nil || w.maps[t].window == nil || len(a.Origin) > directMax) || !signal && w.checkNotice("", &a.Notice, t) != nil {
		return false, nil
	}
	r, fence := w.routeOf(t)
	if r != routeNow {
		return false, nil
	}
	// No division on this path: each costs tens of cycles.
	esz := a.Type.Size()
	if esz == 0 || (esz&(esz-1) == 0 && len(a.Origin)&(esz-1) != 0) || (esz&(esz-1) != 0 && len(a.Origin)%esz != 0) {
		return false, nil
	}
	size, unit := w.targets[t].size, w.targets[t].unit
	hi, off := bits.Mul64(uint64(a.Disp), uint64(unit))
	if a.Disp < 0 || hi != 0 || off > uint64(size) || int(off)+len(a.Origin) > size {
		return false, nil
	}
	n := a.Notice
	var d direct
	if signal {
		// Set directly; the displacement is in the target's units.
		if d.word = w.mappedSignal(t, n.Op(), n.Offset(), uint64(unit)); d.word == nil {
			return false, nil
		}
		n, d.on = transport.Notice{}, true
	} else if w.maps != nil {
		n = w.splitDirect(t, n, len(a.Origin), &d) // a tag or counter this rank applies itself
	}
	if fence {
		w.fenceUsed = true // only now that every check passed
	}
	if a.Kind == KindPut {
		err = w.targets[t].region.Put(int(off), a.Origin, n, nil)
	} else {
		err = w.targets[t].region.Get(int(off), a.Origin, n, nil)
	}
	if err != nil {
		w.dropDirect(t, &d)
		return true, w.transportErr(a.name(), t, int(off), err)
	}
	if d.on {
		return true, w.transportErr(a.name(), t, int(off), w.applyDirect(t, a.Notice, &d))
	}
	return true, nil
}

// DoRequest issues a request-based operation (MPI_Rput and friends). As in
// MPI it is valid only in a passive-target (lock) epoch; the request
// completes when the operation is complete at the origin and the target.
// DoRequest never blocks: under a deferred lock not yet taken, the
// operation is queued and the request's Test tries, and its Wait takes,
// the lock.
func (w *Win) DoRequest(a *Access) (*Request, error) {
	if w == nil || a == nil {
		return nil, opErr("DoRequest", -1, ErrFreed, "window")
	}
	name := a.reqName()
	if err := w.check(name); err != nil {
		return nil, err
	}
	if a.Target == ProcNull {
		return &Request{c: w.c, kind: reqDone, op: name, st: Status{Source: ProcNull}}, nil
	}
	var p plan
	if err := w.prepare(name, a, &p); err != nil {
		return nil, err
	}
	t := a.Target
	if w.targets[t].lockKind == 0 && !w.lockAll {
		return nil, opErr(name, w.c.rank, ErrEpoch, "request-based operations need a lock epoch on rank %d", t)
	}
	r := &Request{c: w.c, kind: reqRMA, op: name, st: Status{Source: t, Count: p.n * a.Type.Size()}}
	if !w.synchronous || !w.targets[t].lockHeld {
		// The operation may complete on another goroutine: let that
		// wake waiters of the wait family.
		r.comp.SetWake(w.c.wake)
	}
	if !w.targets[t].lockHeld {
		// Deferred lock not taken yet: queue the operation with its
		// request; the request's Wait (or Flush, Unlock) takes the lock.
		r.win, r.target = w, t
		r.comp.Add(1)
		w.enqueue(a, &p)
		w.queue[t][len(w.queue[t])-1].comp = &r.comp
		return r, nil
	}
	if err := w.exec(name, a, &p, &r.comp); err != nil {
		return nil, err
	}
	return r, nil
}

// enqueue queues a checked operation for the closing call.
func (w *Win) enqueue(a *Access, p *plan) {
	t := a.Target
	w.queue[t] = append(w.queue[t], rmaOp{Access: *a, plan: *p})
	o := &w.queue[t][len(w.queue[t])-1]
	esz := a.Type.Size()
	if a.Kind == KindFetchAndOp && a.Op != mem.NoOp || a.Kind == KindCompareAndSwap {
		copy(o.val[:], a.Origin[:esz])
	}
	if a.Kind == KindCompareAndSwap {
		copy(o.cmp[:], a.Compare[:esz])
	}
	w.queued++
}

// route decides whether an operation to target t runs now or is queued,
// or reports that t is not in an access epoch.
func (w *Win) route(name string, t int) (deferred bool, err error) {
	r, fence := w.routeOf(t)
	if r == notInEpoch {
		return false, opErr(name, w.c.rank, ErrNotInEpoch, "rank %d", t)
	}
	if fence {
		w.fenceUsed = true
	}
	return r == routeDeferred, nil
}

// routing is how an operation travels in the epoch that covers its
// target.
type routing uint8

const (
	notInEpoch    routing = iota // no epoch covers the target
	routeNow                     // at once: a lock held, or an epoch of the immediate strategy
	routeDeferred                // queued for the epoch's closing call (or the lock's grant)
)

// routeOf says how an operation to t travels (route and fastPath), and
// whether the epoch is a fence's, whose closing call then has work to
// complete.
func (w *Win) routeOf(t int) (r routing, fence bool) {
	now := routeNow
	if w.strategy == Deferred {
		now = routeDeferred
	}
	switch {
	case w.targets[t].lockKind != 0 || w.lockAll:
		if w.targets[t].lockHeld {
			return routeNow, false
		}
		return routeDeferred, false
	case w.accessOn && w.targets[t].inAccess:
		return now, false
	case w.fenceOpen:
		return now, true
	}
	return notInEpoch, false
}

// replay performs the operations queued for t, in issue order; with
// getsLast, plain gets go after everything else (Gropp and Thakur's
// deferred lock, which lets the last reply double as the unlock).
func (w *Win) replay(name string, t int, getsLast bool) error {
	q := w.queue[t]
	if len(q) == 0 {
		return nil
	}
	var firstErr error
	run := func(gets bool) {
		for i := range q {
			o := &q[i]
			// Only plain gets move: notified operations keep their
			// order per origin and target.
			if getsLast && (o.Kind == KindGet && o.Notice.Kind() == transport.NoticeNone) != gets {
				continue
			}
			if o.Kind == KindFetchAndOp || o.Kind == KindCompareAndSwap {
				// Point the operands at the copies, not at the
				// caller's reused scratch words.
				o.Origin, o.Compare = o.val[:], o.cmp[:]
			}
			err := w.exec(name, &o.Access, &o.plan, o.comp)
			if o.comp != nil {
				o.comp.Done(err) // the engine's own count, taken when queued
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	run(false)
	if getsLast {
		run(true)
	}
	clear(q)
	w.queue[t] = q[:0]
	w.queued -= len(q)
	return firstErr
}

// progressRequest moves a queued request-based operation to t forward: it
// takes the lock (waiting for it if wait is set, else in one attempt) and
// performs the queue. It is a no-op once the epoch has moved on.
func (w *Win) progressRequest(ctx context.Context, t int, wait bool) error {
	if w.freed || w.targets[t].lockHeld || (w.targets[t].lockKind == 0 && !w.lockAll) || len(w.queue[t]) == 0 {
		return nil
	}
	if wait {
		return w.settle("Wait", ctx, t)
	}
	kind := w.targets[t].lockKind
	if w.lockAll {
		kind = lockShared
	}
	ok, err := w.tryAcquire(ctx, "Test", t, kind)
	if !ok || err != nil {
		return err
	}
	w.targets[t].lockHeld = true
	return w.replay("Test", t, true)
}
