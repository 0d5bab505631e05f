// Package narma is one-sided communication (RMA) for Go, in the model of
// MPI-3: ranks expose memory in windows and put, get and accumulate into
// each other's windows, synchronized by fences, post-start-complete-wait or
// locks. It is the engine on which narma builds Notified Access, where the
// access itself tells the target that it completed.
//
// A job is a set of ranks. Run starts n ranks as goroutines of this
// process, each with its own Comm:
//
//	err := narma.Run(4, func(c *narma.Comm) error {
//		ctx := c.Context()
//		w, err := narma.Allocate[float64](ctx, c, 100) // 100 float64 per rank
//		if err != nil {
//			return err
//		}
//		w.Fence(ctx, narma.NoPrecede)
//		w.Put([]float64{float64(c.Rank())}, (c.Rank()+1)%c.Size(), 0)
//		w.Fence(ctx, narma.NoSucceed) // the put is now visible at its target
//		fmt.Println(c.Rank(), w.Local()[0])
//		return w.Free(ctx)
//	})
//
// # Windows and epochs
//
// Allocate creates a window of library memory on every rank (Create does
// so over memory from AllocMem). Win[T] is typed: puts, gets and
// accumulates move []T, displacements count elements of T unless
// WithDispUnit says otherwise, and no call needs a cast. Layout values
// describe non-contiguous data on either side: Vector (a matrix column),
// Indexed and IndexedBlock (irregular blocks), Subarray (a face of a 3-D
// block). AllocateShared and SharedQuery give direct loads and stores
// into the windows of ranks that share memory; CreateDynamic makes a
// window to which each rank attaches buffers (Attach, Resolve).
//
// # Communicators
//
// A Comm is a set of ranks with message contexts of its own. Dup, Split
// (by color and key), Create (from a Group) and SplitShared (the ranks
// that share memory) make new ones, collectively; windows, collectives,
// messages and notices work on any of them, with ranks numbered within
// it. Groups (Comm.Group, Incl, Excl, TranslateRanks, ...) are values, as
// MPI's.
//
// An RMA call is legal only inside an access epoch to its target:
//
//   - Fence (collective): every rank's window is open to every rank between
//     two fences;
//   - Post/Start/Complete/Wait: a target exposes its window to a group of
//     origins, which access it between Start and Complete;
//   - Lock/Unlock, LockAll/UnlockAll (passive target): the target takes no
//     part; Flush completes operations inside the epoch.
//
// Each mode comes in the two implementations analysed by Gropp and Thakur,
// selected per window with WithStrategy: Immediate (synchronize first, then
// move data as called) and Deferred (queue at the origin, do everything in
// the closing call). Both give the same results.
//
// Accumulates (Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap) are
// element-wise atomic with respect to each other, and accumulates from one
// origin to one target are applied in issue order.
//
// # Notified Access
//
// In plain RMA the target of a put learns that the data arrived only
// through an extra message or a synchronization. A notified operation
// (PutNotify, GetNotify, AccumulateNotify, ... and their request-based
// forms) carries a Notice that reaches the target after the data, in the
// same transfer. Notified operations are valid wherever plain ones are and
// are completed at the origin by the usual Flush, Unlock or Fence. Under
// the Deferred strategy they also start only then: nothing moves, notice
// included, until a Flush or the epoch's end, so a rank that waits for a
// notice before its origin reaches one of those calls waits in vain. A
// notified put of no data (a nil source) is a pure notice. There are
// three kinds of notice.
//
// Tag (Belli and Hoefler's matched notifications): the target matches
// (source, tag) with persistent requests, AnySource and AnyTag allowed:
//
//	// origin
//	w.PutNotify(data, target, 0, narma.Tag(99))
//	// target
//	req, _ := w.NotifyInit(narma.AnySource, 99, 1)
//	req.Start()
//	st, _ := req.Wait(ctx) // data is in place; st.Source sent it
//
// Counter (Intel's notification counters): the notice increments a counter
// of the target's window, enabled collectively by SetCounters:
//
//	w.SetCounters(ctx, 2)                          // every rank
//	w.PutNotify(halo, left, slot, narma.Counter(1)) // origin
//	w.WaitCounter(ctx, 1, uint64(iteration))        // target
//
// Signal (OpenSHMEM's put-with-signal): the notice sets or adds to a
// 64-bit word in the target's window:
//
//	w.PutNotify(block, target, 0, narma.Signal(flagDisp, 1, narma.SignalAdd)) // origin
//	w.WaitSignal(ctx, flagDisp, narma.CmpGE, uint64(nblocks))                 // target
//
// WaitAny, WaitAll and TestSome wait on any mix of requests (notification
// requests, counter thresholds, Rput/Rget, Isend/Irecv), so a dataflow
// program can wait for whatever comes next.
//
// # Errors
//
// Bad arguments never corrupt memory: a call with a rank, displacement,
// length or layout out of range, an operation outside an epoch, or an
// operation undefined on the element type returns an error wrapping one of
// the Err* sentinels (use errors.Is), and writes nothing. Blocking calls take
// a context.Context and return its error when it is done. If a rank fails,
// Run aborts the others' blocking calls and returns the first failure.
// When ranks are processes and one dies (its transport reports it failed),
// the survivors' blocking calls that wait on it end with an error wrapping
// ErrPeer: those that name it, and those that any rank could end (a Recv,
// Probe or notification request for AnySource, WaitCounter, a counter
// threshold, WaitSignal), since the dead rank may be the one they wait for.
// What arrived before the failure is delivered first; Comm.AckFailures
// lets the wildcard waits go on with the living ranks.
//
// # Caveats
//
// Buffers passed to data-movement calls belong to narma until the
// operation is complete: a Get's destination or a FetchAndOp's result is
// valid only after the epoch's closing call, a Flush, or the request's Wait,
// and a Put's source must not change before then. Local loads and stores to
// a window follow MPI's rules: they must not conflict with RMA accesses in
// the same epoch. A Win is used by one goroutine of its rank at a time.
package narma
