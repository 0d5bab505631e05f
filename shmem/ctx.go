package shmem

import (
	"context"
	"slices"

	"github.com/narma-rma/narma"
)

// CtxOption is a set of options of a context (OpenSHMEM's
// SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE and SHMEM_CTX_NOSTORE), or-ed
// together; 0 is none. They are promises of the program that this
// package accepts and does not need: every context is safe for
// concurrent use (see Ctx), so none of them changes what a context does
// or costs.
type CtxOption uint

// The context options.
const (
	// CtxSerialized: the context is used by one goroutine at a time.
	CtxSerialized CtxOption = 1 << iota
	// CtxPrivate: the context is used by the goroutine that made it only.
	CtxPrivate
	// CtxNoStore: the context issues no puts, put-likes or atomics that
	// store, and needs no Quiet.
	CtxNoStore

	ctxOptions = CtxSerialized | CtxPrivate | CtxNoStore
)

// Ctx is a communication context (OpenSHMEM 1.5's shmem_ctx_t): a stream
// of puts, gets and atomics whose completion is its own, and a team that
// names its PEs. World.CtxCreate makes one over TeamWorld, Team.CreateCtx
// over a team (shmem_team_create_ctx); the CtxPut, CtxGet, CtxAtomicAdd,
// ... functions are Put, Get, AtomicAdd, ... on a context, and take the
// number of the target PE in the context's team, which they translate
// to its World PE on the one heap window. Quiet and Fence on a context
// complete that context's nonblocking operations.
//
// # Completion
//
// narma completes operations per target: a Flush of a PE completes every
// operation the calling PE issued to it on the window, whatever context
// issued it, and the heap is one window. A context therefore remembers
// the PEs its nonblocking calls (CtxPutNBI, CtxGetNBI, CtxPutSignalNBI)
// went to since its last Quiet, and its Quiet flushes those PEs only, as
// OpenSHMEM implementations over MPI do: it does not wait for another
// context's operations to other PEs, but completes, along with its own,
// those of other contexts (and of the World) to the PEs it flushes. The
// blocking calls (CtxPut, CtxP, the atomics, ...) flush their target, as
// the World's do, and are complete when they return.
//
// # Goroutines
//
// A context may be used by any goroutines, concurrently (OpenSHMEM's
// shareable context; the options are promises it does not need), and
// calls on contexts may run while the World's goroutine makes the
// World's calls. A narma window is used by one goroutine at a time, so
// every call that issues or completes an operation on the heap window,
// the World's and the contexts', holds a lock of the World for its
// length: goroutines with contexts of their own wait at Quiet for none
// of each other's operations but those to the PEs they flush, yet they
// take turns at the window, and a
// blocking call (a Put, an atomic, a Quiet) keeps the others waiting
// while it flushes. The waits that sleep (SignalWaitUntil, CT.Wait) do
// not hold the lock. The collective calls that change the heap (Alloc,
// Free, CTCreate, CT.Free, Finalize) must not run while calls on
// contexts do. Each context keeps its own typed views, scratch words and
// checked addresses, so contexts share no buffer with each other or with
// the World's calls; Sym.Local belongs to the World's goroutine (take
// the slices before starting the other goroutines).
type Ctx struct {
	w    *World
	t    *Team // the team whose PE numbers the context takes
	opts CtxOption

	// The rest is used with w.mu held.
	cache     cache
	touched   []bool // by World PE: nonblocking operations since the last Quiet
	targets   []int  // the World PEs touched, in order
	destroyed bool
}

// CtxCreate makes a context over TeamWorld (shmem_ctx_create): its PE
// numbers are the World's. It is local, and any goroutine may call it.
func (w *World) CtxCreate(opts CtxOption) (*Ctx, error) {
	const op = "CtxCreate"
	if w == nil {
		return nil, w.ok(op)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ok(op); err != nil {
		return nil, err
	}
	return w.world.newCtx(op, opts)
}

// CreateCtx makes a context over t (shmem_team_create_ctx): the PE
// numbers of its calls are t's. It is local, and any goroutine may call
// it. Destroying t destroys the context.
func (t *Team) CreateCtx(opts CtxOption) (*Ctx, error) {
	const op = "Team.CreateCtx"
	if t == nil || t.w == nil {
		return nil, t.ok(op)
	}
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	if err := t.ok(op); err != nil {
		return nil, err
	}
	return t.newCtx(op, opts)
}

// newCtx makes a context over t; w.mu is held.
func (t *Team) newCtx(op string, opts CtxOption) (*Ctx, error) {
	if opts&^ctxOptions != 0 {
		return nil, t.w.opErr(op, narma.ErrInvalid, "unknown options %#x", uint(opts&^ctxOptions))
	}
	cx := &Ctx{w: t.w, t: t, opts: opts}
	cx.cache.gen = t.w.gen.Load()
	t.ctxs = append(t.ctxs, cx)
	return cx, nil
}

// Team returns the team the context was made from (shmem_ctx_get_team),
// or nil for a nil context.
func (cx *Ctx) Team() *Team {
	if cx == nil {
		return nil
	}
	return cx.t
}

// Options returns the options the context was made with.
func (cx *Ctx) Options() CtxOption {
	if cx == nil {
		return 0
	}
	return cx.opts
}

// lock takes the World's lock for a call on cx, and returns the World;
// if cx is nil or destroyed, or its World finalized, it returns an error
// and leaves the lock free.
func (cx *Ctx) lock(op string) (*World, error) {
	if cx == nil || cx.w == nil {
		return nil, &narma.OpError{Op: "shmem." + op, Rank: -1, Detail: "nil Ctx", Err: narma.ErrInvalid}
	}
	w := cx.w
	w.mu.Lock()
	if err := w.ok(op); err != nil {
		w.mu.Unlock()
		return nil, err
	}
	if cx.destroyed {
		w.mu.Unlock()
		return nil, w.opErr(op, narma.ErrFreed, "destroyed Ctx")
	}
	return w, nil
}

// lockPE is lock for a call aimed at PE pe of the context's team, and
// returns its World PE too.
func (cx *Ctx) lockPE(op string, pe int) (*World, int, error) {
	w, err := cx.lock(op)
	if err != nil {
		return nil, -1, err
	}
	if pe < 0 || pe >= len(cx.t.pes) {
		w.mu.Unlock()
		return nil, -1, w.opErr(op, narma.ErrRank, "PE %d not in [0,%d), the PEs of the context's team", pe, len(cx.t.pes))
	}
	return w, cx.t.pes[pe], nil
}

// touch notes that a nonblocking operation went to World PE pe; w.mu is
// held.
func (cx *Ctx) touch(pe int) {
	if cx.touched == nil {
		cx.touched = make([]bool, cx.w.n)
	}
	if !cx.touched[pe] {
		cx.touched[pe] = true
		cx.targets = append(cx.targets, pe)
	}
}

// Quiet completes the operations issued on the context (shmem_ctx_quiet):
// when it returns, the data of its puts is in place at their targets,
// their sources may be reused and its gets' destinations are filled. It
// flushes the PEs that the context's nonblocking calls went to since its
// last Quiet, and no other (see Ctx).
func (cx *Ctx) Quiet(ctx context.Context) error {
	w, err := cx.lock("Ctx.Quiet")
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	return cx.quietLocked(ctx)
}

// quietLocked is Quiet; w.mu is held.
func (cx *Ctx) quietLocked(ctx context.Context) error {
	w := cx.w
	if len(cx.targets) > 1 && len(cx.targets) == w.n {
		if err := w.win.FlushAll(ctx); err != nil {
			return err
		}
		clear(cx.touched)
		cx.targets = cx.targets[:0]
		return nil
	}
	for i, pe := range cx.targets {
		if err := w.win.Flush(ctx, pe); err != nil {
			cx.targets = append(cx.targets[:0], cx.targets[i:]...) // still to flush
			return err
		}
		cx.touched[pe] = false
	}
	cx.targets = cx.targets[:0]
	return nil
}

// Fence orders the context's puts, atomics and signals to each PE
// (shmem_ctx_fence). narma does not order puts, so it completes them: it
// is the context's Quiet.
func (cx *Ctx) Fence(ctx context.Context) error {
	w, err := cx.lock("Ctx.Fence")
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	return cx.quietLocked(ctx)
}

// Destroy completes the context's operations (Quiet) and ends it
// (shmem_ctx_destroy): later calls on it fail with an error wrapping
// narma.ErrFreed. It is ended even if the Quiet fails, whose error it
// returns.
func (cx *Ctx) Destroy(ctx context.Context) error {
	w, err := cx.lock("Ctx.Destroy")
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	err = cx.quietLocked(ctx)
	cx.destroyed = true
	if i := slices.Index(cx.t.ctxs, cx); i >= 0 {
		cx.t.ctxs = slices.Delete(cx.t.ctxs, i, i+1)
	}
	return err
}

// CtxPut is Put on a context (shmem_ctx_put): it copies src into the
// first len(src) elements of dst on PE pe of the context's team, and
// returns with the data in place there.
func CtxPut[T narma.Elem](ctx context.Context, cx *Ctx, dst Sym[T], src []T, pe int) error {
	w, wpe, err := cx.lockPE("CtxPut", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	if err := putIn(w, &cx.cache, "CtxPut", dst, src, wpe); err != nil {
		return err
	}
	return w.win.Flush(ctx, wpe)
}

// CtxPutNBI is PutNBI on a context (shmem_ctx_put_nbi): src must not
// change until the context's Quiet (or the World's) has completed the
// transfer.
func CtxPutNBI[T narma.Elem](cx *Ctx, dst Sym[T], src []T, pe int) error {
	w, wpe, err := cx.lockPE("CtxPutNBI", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	if err := putIn(w, &cx.cache, "CtxPutNBI", dst, src, wpe); err != nil {
		return err
	}
	cx.touch(wpe)
	return nil
}

// CtxGet is Get on a context (shmem_ctx_get): it copies the first
// len(dst) elements of src on PE pe of the context's team into dst, and
// returns when they are there.
func CtxGet[T narma.Elem](ctx context.Context, cx *Ctx, dst []T, src Sym[T], pe int) error {
	w, wpe, err := cx.lockPE("CtxGet", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	if err := getIn(w, &cx.cache, "CtxGet", dst, src, wpe); err != nil {
		return err
	}
	return w.win.Flush(ctx, wpe)
}

// CtxGetNBI is GetNBI on a context (shmem_ctx_get_nbi): dst is filled
// once the context's Quiet (or the World's) returns, and must not be
// touched before.
func CtxGetNBI[T narma.Elem](cx *Ctx, dst []T, src Sym[T], pe int) error {
	w, wpe, err := cx.lockPE("CtxGetNBI", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	if err := getIn(w, &cx.cache, "CtxGetNBI", dst, src, wpe); err != nil {
		return err
	}
	cx.touch(wpe)
	return nil
}

// CtxP is P on a context (shmem_ctx_p): it writes v into the element dst
// on PE pe of the context's team, and returns with it in place.
func CtxP[T narma.Elem](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) error {
	w, wpe, err := cx.lockPE("CtxP", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	return pIn(ctx, w, &cx.cache, "CtxP", dst, v, wpe)
}

// CtxG is G on a context (shmem_ctx_g): it returns the value of the
// element src on PE pe of the context's team.
func CtxG[T narma.Elem](ctx context.Context, cx *Ctx, src Sym[T], pe int) (T, error) {
	w, wpe, err := cx.lockPE("CtxG", pe)
	if err != nil {
		var zero T
		return zero, err
	}
	defer w.mu.Unlock()
	return gIn(ctx, w, &cx.cache, "CtxG", src, wpe)
}

// CtxPutSignal is PutSignal on a context (shmem_ctx_put_signal), to PE
// pe of the context's team.
func CtxPutSignal[T narma.Elem](ctx context.Context, cx *Ctx, dst Sym[T], src []T, sig Sym[uint64], value uint64, op SignalOp, pe int) error {
	w, wpe, err := cx.lockPE("CtxPutSignal", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	if err := putSignalIn(w, &cx.cache, "CtxPutSignal", dst, src, sig, value, op, wpe); err != nil {
		return err
	}
	return w.win.Flush(ctx, wpe)
}

// CtxPutSignalNBI is PutSignalNBI on a context
// (shmem_ctx_put_signal_nbi), to PE pe of the context's team: src must
// not change until the context's Quiet.
func CtxPutSignalNBI[T narma.Elem](cx *Ctx, dst Sym[T], src []T, sig Sym[uint64], value uint64, op SignalOp, pe int) error {
	w, wpe, err := cx.lockPE("CtxPutSignalNBI", pe)
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	if err := putSignalIn(w, &cx.cache, "CtxPutSignalNBI", dst, src, sig, value, op, wpe); err != nil {
		return err
	}
	cx.touch(wpe)
	return nil
}

// The atomics on a context (shmem_ctx_atomic_*) are the World's atomics
// on PE pe of the context's team: one element (At), complete at the
// target when they return.

// CtxAtomicFetch is AtomicFetch on a context.
func CtxAtomicFetch[T Int](ctx context.Context, cx *Ctx, src Sym[T], pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicFetch", src, 0, pe, narma.NoOp, true)
}

// CtxAtomicSet is AtomicSet on a context.
func CtxAtomicSet[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) error {
	_, err := ctxFetchOp(ctx, cx, "CtxAtomicSet", dst, v, pe, narma.Replace, false)
	return err
}

// CtxAtomicSwap is AtomicSwap on a context.
func CtxAtomicSwap[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicSwap", dst, v, pe, narma.Replace, true)
}

// CtxAtomicCompareSwap is AtomicCompareSwap on a context.
func CtxAtomicCompareSwap[T Int](ctx context.Context, cx *Ctx, dst Sym[T], cond, v T, pe int) (T, error) {
	w, wpe, err := cx.lockPE("CtxAtomicCompareSwap", pe)
	if err != nil {
		var zero T
		return zero, err
	}
	defer w.mu.Unlock()
	return compareSwapIn(ctx, w, &cx.cache, "CtxAtomicCompareSwap", dst, cond, v, wpe)
}

// CtxAtomicFetchAdd is AtomicFetchAdd on a context.
func CtxAtomicFetchAdd[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicFetchAdd", dst, v, pe, narma.Sum, true)
}

// CtxAtomicAdd is AtomicAdd on a context.
func CtxAtomicAdd[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) error {
	_, err := ctxFetchOp(ctx, cx, "CtxAtomicAdd", dst, v, pe, narma.Sum, false)
	return err
}

// CtxAtomicInc is AtomicInc on a context.
func CtxAtomicInc[T Int](ctx context.Context, cx *Ctx, dst Sym[T], pe int) error {
	_, err := ctxFetchOp(ctx, cx, "CtxAtomicInc", dst, 1, pe, narma.Sum, false)
	return err
}

// CtxAtomicFetchInc is AtomicFetchInc on a context.
func CtxAtomicFetchInc[T Int](ctx context.Context, cx *Ctx, dst Sym[T], pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicFetchInc", dst, 1, pe, narma.Sum, true)
}

// CtxAtomicAnd is AtomicAnd on a context.
func CtxAtomicAnd[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) error {
	_, err := ctxFetchOp(ctx, cx, "CtxAtomicAnd", dst, v, pe, narma.Band, false)
	return err
}

// CtxAtomicFetchAnd is AtomicFetchAnd on a context.
func CtxAtomicFetchAnd[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicFetchAnd", dst, v, pe, narma.Band, true)
}

// CtxAtomicOr is AtomicOr on a context.
func CtxAtomicOr[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) error {
	_, err := ctxFetchOp(ctx, cx, "CtxAtomicOr", dst, v, pe, narma.Bor, false)
	return err
}

// CtxAtomicFetchOr is AtomicFetchOr on a context.
func CtxAtomicFetchOr[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicFetchOr", dst, v, pe, narma.Bor, true)
}

// CtxAtomicXor is AtomicXor on a context.
func CtxAtomicXor[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) error {
	_, err := ctxFetchOp(ctx, cx, "CtxAtomicXor", dst, v, pe, narma.Bxor, false)
	return err
}

// CtxAtomicFetchXor is AtomicFetchXor on a context.
func CtxAtomicFetchXor[T Int](ctx context.Context, cx *Ctx, dst Sym[T], v T, pe int) (T, error) {
	return ctxFetchOp(ctx, cx, "CtxAtomicFetchXor", dst, v, pe, narma.Bxor, true)
}

// ctxFetchOp applies op with v to dst on PE pe of the context's team and
// returns the previous value if fetch.
func ctxFetchOp[T Int](ctx context.Context, cx *Ctx, name string, dst Sym[T], v T, pe int, op narma.Op, fetch bool) (T, error) {
	w, wpe, err := cx.lockPE(name, pe)
	if err != nil {
		var zero T
		return zero, err
	}
	defer w.mu.Unlock()
	return fetchOpIn(ctx, w, &cx.cache, name, dst, v, wpe, op, fetch)
}
