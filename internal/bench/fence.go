package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
)

// Tag of the reduce-scatter variant's "done" messages.
const tagDone = 21

// fenceVariant is one variant of the fence experiment: one epoch in
// which every rank puts n words to its right neighbour, and how the
// epoch is completed. open and close, run untimed around each measured
// run, open and close its epochs; close also checks what the variant's
// epochs cannot check one by one.
type fenceVariant struct {
	Variant
	win   func(f *fenceCost) *narma.Win[int64]
	open  func(f *fenceCost) error
	epoch func(f *fenceCost, n int, stamp int64) error
	close func(f *fenceCost, n int) error
}

var fenceVariants = []fenceVariant{
	{Variant: Variant{Name: "barriers", Summary: "fence as two barriers (Gropp & Thakur's plain implementation): Barrier, Put, FlushAll, Barrier, in one LockAll epoch", Classic: true},
		win: mainWin, open: fenceLockAll, epoch: barriersEpoch, close: fenceUnlockAll},
	{Variant: Variant{Name: "barrier", Summary: "baseline: Put, FlushAll, one Barrier, in one LockAll epoch (the slot alternates, so one barrier suffices)", Classic: true},
		win: mainWin, open: fenceLockAll, epoch: barrierEpoch, close: fenceUnlockAll},
	{Variant: Variant{Name: "reduce-scatter", Summary: "the deferred fence by hand: ReduceScatter of per-target counts, Put, Flush, a 'done' message to the target; wait for as many 'done' messages as the count", Classic: true},
		win: mainWin, open: fenceLockAll, epoch: rsEpoch, close: fenceUnlockAll},
	{Variant: Variant{Name: "fence-immediate", Summary: "Put, Fence on a window with the Immediate strategy (barrier-based fence)", Classic: true},
		win: immWin, open: fenceOpenEpochs, epoch: fenceEpoch, close: fenceCloseEpochs},
	{Variant: Variant{Name: "fence-deferred", Summary: "Put, Fence on a window with the Deferred strategy (reduce-scatter of target counts)", Classic: true},
		win: defWin, open: fenceOpenEpochs, epoch: fenceEpoch, close: fenceCloseEpochs},
	{Variant: Variant{Name: "lock-put-unlock", Summary: "Lock (exclusive), Put, Unlock on the neighbour (Gropp & Thakur, Table 1); checked after the run", Classic: true},
		win: mainWin, epoch: lpuEpoch, close: lastCheck},
	{Variant: Variant{Name: "direct", Summary: "Put, Flush inside a LockAll epoch opened before the run: the put alone, no synchronization with the target (Gropp & Thakur, Table 1); checked after the run"},
		win: mainWin, open: fenceLockAll, epoch: directEpoch, close: directClose},
}

// FenceCost returns the fence experiment, after Gropp and Thakur's Fig. 2
// and Table 1: the time to complete an epoch in which every rank puts a
// message (8 B unless Config.Sizes says otherwise) to its right
// neighbour in a ring, with the fence implemented by two barriers, by
// one barrier, by a reduce-scatter of per-target counts, and by the
// window's Fence under the Immediate and the Deferred strategy (each on
// its own window, whatever Config.Strategy, which the other variants
// use); and the time of a Lock/Put/Unlock against that of a put in an
// epoch that is already open ("direct").
//
// Messages alternate between two slots of the target's window and carry
// a stamp in their first and last words. The variants that synchronize
// check the neighbour's message after every epoch; lock-put-unlock and
// direct cannot know when a message arrived without the synchronization
// they leave out, so they check the two slots, which hold the run's last
// two messages, after a barrier that ends the run.
func FenceCost() Experiment {
	return Experiment{
		Name:     "fence",
		Summary:  "cost of completing a fence epoch with a put to the ring neighbour, and lock-put-unlock vs a direct put (Gropp & Thakur, Fig. 2 and Table 1)",
		Measure:  "time per epoch",
		Ranks:    0,
		Variants: tableVariants(fenceVariants),
		Run:      runFenceCost,
	}
}

// DefaultFenceSizes are the put sizes of the fence experiment when
// Config.Sizes is nil.
var DefaultFenceSizes = []int{8}

// fenceCost is one rank's state in the fence job.
type fenceCost struct {
	c           *narma.Comm
	ctx         context.Context
	cfg         Config
	variant     string
	w           *narma.Win[int64] // the variant's window
	main        *narma.Win[int64] // Config.Strategy
	imm, def    *narma.Win[int64] // Immediate and Deferred, for the fence variants
	me, size    int
	right, left int
	nmax        int
	msg         []int64
	counts      []int64 // reduce-scatter's per-target counts
	incoming    []int64
	epochs      int64 // epochs so far, the same on every rank
	first, last int64 // the stamps of the run's first and last epochs
}

// fenceItersFor is the default number of epochs per round at size bytes.
func fenceItersFor(size int) int { return max(10, min(500, (4<<20)/size)) }

func mainWin(f *fenceCost) *narma.Win[int64] { return f.main }
func immWin(f *fenceCost) *narma.Win[int64]  { return f.imm }
func defWin(f *fenceCost) *narma.Win[int64]  { return f.def }

func runFenceCost(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := FenceCost()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	if c.Size() < 2 {
		return nil, fmt.Errorf("fence needs at least 2 ranks, the job has %d", c.Size())
	}
	sizes := cfg.sizesOr(DefaultFenceSizes)
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, fenceVariants)
	ctx := c.Context()
	nmax := slices.Max(sizes) / 8
	me, size := c.Rank(), c.Size()
	f := &fenceCost{c: c, ctx: ctx, cfg: cfg, me: me, size: size,
		right: (me + 1) % size, left: (me + size - 1) % size, nmax: nmax,
		msg: make([]int64, nmax), counts: make([]int64, size), incoming: make([]int64, 1)}
	// Each window holds two slots of nmax words.
	for _, w := range []struct {
		w  **narma.Win[int64]
		st narma.Strategy
	}{{&f.main, cfg.Strategy}, {&f.imm, narma.Immediate}, {&f.def, narma.Deferred}} {
		if *w.w, err = narma.Allocate[int64](ctx, c, 2*nmax, narma.WithStrategy(w.st)); err != nil {
			return nil, err
		}
	}

	for si, sz := range sizes {
		n := sz / 8
		iters := cfg.Iters
		if iters == 0 {
			iters = fenceItersFor(sz)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(2, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1),
			meanTime(func(v fenceVariant, iters int) (time.Duration, error) { return f.measure(v, n, iters) }))
		if err != nil {
			return nil, err
		}
		if me != 0 {
			continue
		}
		rows = appendRows(rows, e.Name, variants, times, sz, size, rounds, float64(sz))
	}

	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	for _, w := range []*narma.Win[int64]{f.main, f.imm, f.def} {
		if err := w.Free(ctx); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// measure runs iters epochs of n-word puts with variant v and returns the
// time this rank measured (rank 0's is reported).
func (f *fenceCost) measure(v fenceVariant, n, iters int) (time.Duration, error) {
	f.variant = v.Name
	f.w = v.win(f)
	if v.open != nil {
		if err := v.open(f); err != nil {
			return 0, f.errorf("open: %w", err)
		}
	}
	if err := f.c.Barrier(f.ctx); err != nil {
		return 0, err
	}
	f.first = f.epochs + 1
	start := time.Now()
	for i := 0; i < iters; i++ {
		f.epochs++
		if err := v.epoch(f, n, f.epochs); err != nil {
			return 0, f.errorf("%s, epoch %d: %w", FormatSize(8*n), f.epochs, err)
		}
	}
	d := time.Since(start)
	f.last = f.epochs
	if v.close != nil {
		if err := v.close(f, n); err != nil {
			return 0, f.errorf("close: %w", err)
		}
	}
	return d, nil
}

func (f *fenceCost) errorf(format string, args ...any) error {
	return fmt.Errorf("fence %s: %w", f.variant, fmt.Errorf(format, args...))
}

// slot returns the displacement of the slot that epoch stamp writes.
func (f *fenceCost) slot(stamp int64) int { return int(stamp%2) * f.nmax }

// stampMsg writes the epoch's stamp, which also names the sending rank,
// into the first and last words of the outgoing message and gives it to
// the corrupting hook, if any.
func (f *fenceCost) stampMsg(n int, stamp int64) []int64 {
	msg := f.msg[:n]
	msg[0], msg[n-1] = fenceStamp(stamp, f.me), fenceStamp(stamp, f.me)
	if f.cfg.Corrupt != nil {
		f.cfg.Corrupt(f.variant, msg)
	}
	return msg
}

// fenceStamp is the stamp of rank's message in epoch.
func fenceStamp(epoch int64, rank int) int64 { return epoch<<16 | int64(rank&0xffff) }

// put stamps and puts this rank's message of epoch stamp to the right
// neighbour.
func (f *fenceCost) put(n int, stamp int64) error {
	return f.w.Put(f.stampMsg(n, stamp), f.right, f.slot(stamp))
}

// check verifies that the left neighbour's message of epoch stamp is in
// its slot.
func (f *fenceCost) check(n int, stamp int64) error {
	msg := f.w.Local()[f.slot(stamp) : f.slot(stamp)+n]
	want := fenceStamp(stamp, f.left)
	if first, last := msg[0], msg[n-1]; first != want || last != want {
		return fmt.Errorf("message of epoch %d from rank %d arrived with first word %d and last word %d, want %d: data not delivered", stamp, f.left, first, last, want)
	}
	return nil
}

func fenceLockAll(f *fenceCost) error          { return f.w.LockAll(f.ctx, 0) }
func fenceUnlockAll(f *fenceCost, _ int) error { return f.w.UnlockAll(f.ctx) }

// barriers: the first barrier tells every rank that its targets are done
// with the previous epoch, the second that its origins' puts are complete.

func barriersEpoch(f *fenceCost, n int, stamp int64) error {
	if err := f.c.Barrier(f.ctx); err != nil {
		return err
	}
	return barrierEpoch(f, n, stamp)
}

// barrier: one barrier per epoch. A rank checks epoch k before it enters
// the barrier of epoch k+1, and its left neighbour writes the same slot
// again only in epoch k+2, after that barrier.

func barrierEpoch(f *fenceCost, n int, stamp int64) error {
	if err := f.put(n, stamp); err != nil {
		return err
	}
	if err := f.w.FlushAll(f.ctx); err != nil {
		return err
	}
	if err := f.c.Barrier(f.ctx); err != nil {
		return err
	}
	return f.check(n, stamp)
}

// reduce-scatter: what the deferred fence does, by hand. Every rank adds
// 1 to the count of each target it puts to; the reduce-scatter leaves each
// rank the number of origins that target it, and a rank leaves it only
// after every rank entered it, that is after every rank checked the
// previous epoch. Each origin then completes its put and sends the target
// a "done" message; the target waits for as many as its count.

func rsEpoch(f *fenceCost, n int, stamp int64) error {
	clear(f.counts)
	f.counts[f.right]++
	if err := narma.ReduceScatter(f.ctx, f.c, f.counts, f.incoming, narma.Sum); err != nil {
		return err
	}
	if err := f.put(n, stamp); err != nil {
		return err
	}
	if err := f.w.Flush(f.ctx, f.right); err != nil {
		return err
	}
	if err := f.c.Send(f.ctx, nil, f.right, tagDone); err != nil {
		return err
	}
	for i := int64(0); i < f.incoming[0]; i++ {
		if _, err := f.c.Recv(f.ctx, nil, narma.AnySource, tagDone); err != nil {
			return err
		}
	}
	return f.check(n, stamp)
}

// fence-immediate, fence-deferred: one Fence per epoch closes it and opens
// the next.

func fenceOpenEpochs(f *fenceCost) error { return f.w.Fence(f.ctx, narma.NoPrecede) }

func fenceEpoch(f *fenceCost, n int, stamp int64) error {
	if err := f.put(n, stamp); err != nil {
		return err
	}
	if err := f.w.Fence(f.ctx, 0); err != nil {
		return err
	}
	return f.check(n, stamp)
}

func fenceCloseEpochs(f *fenceCost, _ int) error { return f.w.Fence(f.ctx, narma.NoSucceed) }

// lock-put-unlock: the put is complete at the target when Unlock returns,
// but the target does not learn of it; the barrier that ends the run lets
// it check the run's last two messages.

func lpuEpoch(f *fenceCost, n int, stamp int64) error {
	if err := f.w.Lock(f.ctx, narma.Exclusive, f.right, 0); err != nil {
		return err
	}
	if err := f.put(n, stamp); err != nil {
		return err
	}
	return f.w.Unlock(f.ctx, f.right)
}

// lastCheck waits until every rank completed its run and checks the two
// slots, which hold the left neighbour's last two messages (the run's
// last message only, if the run had a single epoch); a barrier then keeps
// the next run's puts from overwriting them before they are checked.
func lastCheck(f *fenceCost, n int) error {
	if err := f.c.Barrier(f.ctx); err != nil {
		return err
	}
	if err := f.check(n, f.last); err != nil {
		return err
	}
	if f.last > f.first {
		if err := f.check(n, f.last-1); err != nil {
			return err
		}
	}
	return f.c.Barrier(f.ctx)
}

// direct: Put and Flush in the LockAll epoch opened before the run.

func directEpoch(f *fenceCost, n int, stamp int64) error {
	if err := f.put(n, stamp); err != nil {
		return err
	}
	return f.w.Flush(f.ctx, f.right)
}

func directClose(f *fenceCost, n int) error {
	if err := f.w.UnlockAll(f.ctx); err != nil {
		return err
	}
	return lastCheck(f, n)
}
