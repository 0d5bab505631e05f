// Package shmem is an OpenSHMEM-style API over narma: processing elements
// (PEs) that put into and get from each other's symmetric heap,
// synchronize with barriers, fences, atomics and waits on local
// variables, and, as Dinan et al. proposed ("Reducing Synchronization
// Overhead Through Bundled Communication", OpenSHMEM 2014), learn that
// data arrived from the put itself: counting puts, and OpenSHMEM 1.5's
// put-with-signal.
//
//	err := narma.Run(4, func(c *narma.Comm) error {
//		ctx := c.Context()
//		w, err := shmem.Init(ctx, c)
//		if err != nil {
//			return err
//		}
//		buf, err := shmem.Alloc[int64](ctx, w, 1) // on every PE
//		if err != nil {
//			return err
//		}
//		next := (w.MyPE() + 1) % w.NPEs()
//		if err := shmem.P(ctx, w, buf, int64(w.MyPE()), next); err != nil {
//			return err
//		}
//		if err := w.BarrierAll(ctx); err != nil {
//			return err
//		}
//		fmt.Println(w.MyPE(), "got", buf.Local(w)[0])
//		return w.Finalize(ctx)
//	})
//
// # The model, mapped onto narma
//
// The package is a thin layer: every transfer, atomic, count and signal
// is one narma call on one window, and nothing is implemented twice.
//
//   - A PE is a rank of the narma.Comm given to Init; MyPE is its rank and
//     NPEs the Comm's size.
//   - The symmetric heap is one narma window of bytes per job
//     (WithHeapSize, DefaultHeapSize), in a passive-target epoch (LockAll)
//     from Init to Finalize, so every PE may access every other at any
//     time. Alloc and Free are collective and deterministic: every PE gets
//     the same byte offset for the same object, and a Sym[T] (offset and
//     length) is therefore a remote address valid on every PE. Typed
//     access goes through narma.As views of the window, one per element
//     type.
//   - Put, Get, P and G are narma Put and Get followed by a Flush of the
//     target (so a Put's data is in place at the target when it returns,
//     more than OpenSHMEM asks); the NBI forms skip the flush, and Quiet
//     (narma FlushAll) completes them. Fence is FlushAll too: narma does
//     not order puts, so ordering them means completing them.
//   - BarrierAll is Quiet and a Comm barrier; Barrier over a set of PEs is
//     Quiet and two-sided messages. Both run on a duplicate of the Comm
//     (narma's Comm.Dup) made by Init, so the program's own messages and
//     collectives on its Comm never mix with them.
//   - The atomics are narma FetchAndOp and CompareAndSwap, then Flush:
//     each is complete at its target when it returns, fetching or not.
//   - WaitUntil and Test read local variables with atomic narma reads of
//     this PE (FetchAndOp or GetAccumulate with NoOp) and poll, yielding
//     and then sleeping up to 50µs between reads: remote puts and atomics
//     wake nobody.
//   - A CT is a notification counter of the heap window; PutCT is a narma
//     PutNotify with narma.Counter, and CT.Wait is narma's WaitCounter,
//     which the counting puts wake.
//   - PutSignal is a narma PutNotify with narma.Signal naming the signal
//     word's byte offset in the window; SignalWaitUntil is narma's
//     WaitSignal, which puts with signal wake. A signal word updated by
//     other means (atomics, puts) does not wake SignalWaitUntil: update
//     it with PutSignal (an empty src is a pure signal) or poll it with
//     WaitUntil.
//   - The collectives are narma's collectives on a team's communicator
//     (for all PEs, SHMEM_TEAM_WORLD, the same duplicate of the Comm):
//     Broadcast and TeamBroadcast are narma.Bcast, the reductions
//     (SumReduce, ProdReduce, MinReduce, MaxReduce, AndReduce, OrReduce,
//     XorReduce, and their Team forms) narma.Allreduce, Alltoall and
//     Alltoalls narma.Alltoall, Fcollect narma.Allgather and Collect an
//     exchange of lengths then narma.Alltoallv. They read and write the
//     local copies of their symmetric objects; they are not barriers for
//     puts.
//   - IPut and IGet are narma PutStrided and GetStrided with Vector
//     layouts, then Flush. SetLock, TestLock and ClearLock
//     compare-and-swap the lock's copy on PE 0 (lock.go).
//
// Element types are checked at compile time: a Sym[T] moves elements of
// T only, the atomics and WaitUntil take 32- and 64-bit integers (Int),
// and signal words are Sym[uint64]. What generics cannot check is
// checked at run time, before anything is written: an address that is
// not inside a live symmetric object (freed, or produced by an
// out-of-range Slice) is refused with ErrNotSymmetric, a PE out of range
// with narma.ErrRank (a PE outside a context's team, or a root outside
// a team, too), a transfer longer than its symmetric object with
// narma.ErrBounds, an atomic, wait or signal on anything but one element
// with narma.ErrInvalid, a split whose arguments do not fit its team with
// narma.ErrInvalid on every PE (narma.ErrCollective where PEs passed
// different ones). Calls on a finalized World, or on its teams and
// contexts, return ErrFinalized; calls on a freed CT or a destroyed team
// or context narma.ErrFreed; calls on a nil World, Team, Ctx or CT
// narma.ErrInvalid. Every error wraps its sentinel: use errors.Is.
//
// # Teams
//
// A Team is an ordered set of PEs (OpenSHMEM 1.5's teams), numbered from
// 0 in the team. World.TeamWorld is every PE, World.TeamShared the PEs
// whose heap this PE maps (narma's Comm.SplitShared: the PEs of this
// host on shared-memory transports, this PE alone over the network).
// Team.SplitStrided and Team.Split2D make new teams, collectively over
// their parent; TranslatePE converts PE numbers between teams. Every team
// has a narma communicator made by Comm.Split of its parent's, and its
// collectives run there: TeamBroadcast, TeamSumReduce and the other
// reductions, TeamAlltoall(s), TeamFcollect, TeamCollect, Team.Sync
// (shmem_team_sync) and Team.Barrier (Quiet, then Sync), with roots and
// blocks numbered by team PE. The World forms (Broadcast, SumReduce,
// ..., BarrierAll, SyncAll) are the same over TeamWorld. Team.Destroy is
// local, and destroys the contexts made from the team.
//
// # Contexts
//
// A Ctx is a communication context (shmem_ctx_t), made over TeamWorld by
// World.CtxCreate or over a team by Team.CreateCtx. CtxPut, CtxGet,
// CtxP, CtxG, their NBI forms, CtxPutSignal and the CtxAtomic* functions
// take the target as a PE of the context's team and translate it to its
// World PE on the one heap window; Ctx.Quiet and Ctx.Fence complete the
// context's operations. narma completes operations per target (a Flush
// of a PE completes all this PE issued to it), so a context remembers
// the PEs its nonblocking calls went to and its Quiet flushes those
// only: it never waits for other contexts' operations to other PEs, and
// it completes theirs to the PEs it flushes, as OpenSHMEM over MPI does.
// Contexts are how a PE's goroutines share it: calls on contexts may run
// on any goroutines at once, beside the World's goroutine, taking turns
// at the heap window under a lock of the World (see Ctx). The options
// CtxSerialized, CtxPrivate and CtxNoStore are accepted and change
// nothing.
//
// # Caveats
//
// A World, and the Teams and CTs made from it, are used by one goroutine
// of their PE at a time; other goroutines of the PE use contexts, which
// may run beside it, but not beside the calls that change the heap
// (Alloc, Free, CTCreate, CT.Free, Finalize). A nonblocking call's
// buffer belongs to narma until Quiet (the context's, or the World's):
// a PutNBI's source must not change, and a GetNBI's destination is not
// filled, before then. Local loads and stores to the symmetric heap
// (Sym.Local) must not race with remote accesses to the same memory:
// read after WaitUntil, CT.Wait, SignalWaitUntil or a barrier has said
// that the data is there, and write when no PE can be accessing it.
package shmem
