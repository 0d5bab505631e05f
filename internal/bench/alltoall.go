package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
)

// a2aVariant is one all-to-all variant: exchange runs one round of the
// exchange on rank a.me, from its puts to the knowledge that every block
// of the round aimed at it has landed (the blocks are checked after it).
type a2aVariant struct {
	Variant
	exchange func(a *allToAll, n int) error
}

var a2aVariants = []a2aVariant{
	{Variant: Variant{Name: "barrier", Summary: "Put to all, FlushAll, Barrier", Classic: true},
		exchange: a2aBarrier},
	{Variant: Variant{Name: "flags", Summary: "Put to all, FlushAll, an atomic flag per source slot (FetchAndOp Replace), FlushAll; target polls its flags", Classic: true},
		exchange: a2aFlags},
	{Variant: Variant{Name: "counter", Summary: "PutNotify with a Counter (one per round parity) to all, FlushAll; target WaitCounter"},
		exchange: a2aCounter},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify with a Tag (round parity) to all, FlushAll; target waits with a counting request (any source, n-1 notices)"},
		exchange: a2aNotify},
}

// DefaultAllToAllSizes are the block sizes of the all-to-all when
// Config.Sizes is nil: 8 B to 64 KiB per pair of ranks.
var DefaultAllToAllSizes = []int{8, 64, 512, 4 << 10, 16 << 10, 64 << 10}

// AllToAll returns experiment 6, the all-to-all exchange of Dinan et
// al.'s Fig. 4 (OpenSHMEM counting puts): in each round every rank puts a
// block of the row's size into a slot of its own in every other rank's
// window, and a rank's round ends when it knows that the n-1 blocks aimed
// at it have landed, learnt with a barrier, with flags, with a counting
// put or with notified puts and one counting request. It runs on any
// number of ranks from 2. Its rows' times are times per round (not half
// round trips), as rank 0 measured them, and their bandwidth is the bytes
// a rank receives per round, (n-1) blocks, over the median round. Every
// block carries a stamp of its round and source in its first and last
// words, and every rank checks all the blocks it received after each
// round.
func AllToAll() Experiment {
	return Experiment{
		Name:     "alltoall",
		Summary:  "all-to-all exchange, bandwidth per rank, 8 B to 64 KiB blocks (Dinan et al., OpenSHMEM counting puts, Fig. 4)",
		Measure:  "time per round",
		Ranks:    0,
		Variants: tableVariants(a2aVariants),
		Run:      runAllToAll,
	}
}

// allToAll is one rank's state in the all-to-all job.
//
// A rank can be one round ahead of another, never two: it needs every
// other rank's block of the current round to finish it, and a rank puts
// its blocks of a round only after it has finished (and checked) the
// round before. So everything that rounds address, slots, flags, counters
// and tags, comes in two copies by round parity; a rank one round ahead
// writes the copy no one is reading.
type allToAll struct {
	c       *narma.Comm
	ctx     context.Context
	cfg     Config
	variant string
	w       *narma.Win[int64]
	me, np  int
	nmax    int     // words of a slot
	flags   int     // displacement of the flags, after the slots
	msg     []int64 // the outgoing block
	old     []int64 // results of the flags' FetchAndOps, one per target
	reqs    [2]*narma.Request
	counted [2]uint64 // counter notices expected so far, per parity
	round   int64     // rounds exchanged so far, by every variant
}

// slot is the displacement of the slot of source src for rounds of
// parity p.
func (a *allToAll) slot(p, src int) int { return (p*a.np + src) * a.nmax }

// flag is the displacement of the flag of source src for rounds of
// parity p.
func (a *allToAll) flag(p, src int) int { return a.flags + p*a.np + src }

// blockStamp is the stamp of the block of round k from source src.
func blockStamp(k int64, src int) int64 { return k<<20 | int64(src) }

// a2aIters is the default number of rounds of exchange per measured round
// at size bytes per block and np ranks: about 4 MiB received per rank,
// between 10 and 1000.
func a2aIters(size, np int) int { return max(10, min(1000, (4<<20)/(size*(np-1)))) }

func runAllToAll(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := AllToAll()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	np := c.Size()
	if np < 2 {
		return nil, fmt.Errorf("alltoall needs at least 2 ranks, the job has %d", np)
	}
	if np >= 1<<20 {
		return nil, fmt.Errorf("alltoall: %d ranks are too many for its stamps", np)
	}
	sizes := cfg.sizesOr(DefaultAllToAllSizes)
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, a2aVariants)
	ctx := c.Context()
	nmax := slices.Max(sizes) / 8
	a := &allToAll{c: c, ctx: ctx, cfg: cfg, me: c.Rank(), np: np, nmax: nmax,
		flags: 2 * np * nmax, msg: make([]int64, nmax), old: make([]int64, np)}
	// The window: two slots per source (by round parity), then two flags
	// per source.
	if a.w, err = narma.Allocate[int64](ctx, c, 2*np*nmax+2*np, narma.WithStrategy(cfg.Strategy)); err != nil {
		return nil, err
	}
	if err := a.w.SetCounters(ctx, 2); err != nil {
		return nil, err
	}
	for p := range a.reqs {
		if a.reqs[p], err = a.w.NotifyInit(narma.AnySource, p, np-1); err != nil {
			return nil, err
		}
	}

	for si, size := range sizes {
		n := size / 8
		iters := cfg.Iters
		if iters == 0 {
			iters = a2aIters(size, np)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(2, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1),
			meanTime(func(v a2aVariant, iters int) (time.Duration, error) { return a.measure(v, n, iters) }))
		if err != nil {
			return nil, err
		}
		if a.me != 0 {
			continue
		}
		rows = appendRows(rows, e.Name, variants, times, size, np, rounds, float64(size*(np-1)))
	}

	for _, r := range a.reqs {
		if err := r.Free(); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := a.w.Free(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

// measure runs iters rounds of exchange of n-word blocks with variant v
// in one LockAll epoch and returns the time this rank measured.
func (a *allToAll) measure(v a2aVariant, n, iters int) (time.Duration, error) {
	a.variant = v.Name
	if err := a.w.LockAll(a.ctx, 0); err != nil {
		return 0, a.errorf("LockAll: %w", err)
	}
	// The barrier also keeps a rank from the next variant's rounds until
	// every rank has checked the blocks of this one's last round.
	if err := a.c.Barrier(a.ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		a.round++
		a.stamp(a.msg[:n])
		if err := v.exchange(a, n); err != nil {
			return 0, a.errorf("%s, round %d: %w", FormatSize(8*n), a.round, err)
		}
		if err := a.check(n); err != nil {
			return 0, a.errorf("%s, round %d: %w", FormatSize(8*n), a.round, err)
		}
	}
	d := time.Since(start)
	if err := a.w.UnlockAll(a.ctx); err != nil {
		return 0, a.errorf("UnlockAll: %w", err)
	}
	return d, nil
}

func (a *allToAll) errorf(format string, args ...any) error {
	return fmt.Errorf("alltoall %s: %w", a.variant, fmt.Errorf(format, args...))
}

// stamp writes the current round's stamp into the outgoing block's first
// and last words and gives it to the corrupting hook, if any.
func (a *allToAll) stamp(msg []int64) {
	s := blockStamp(a.round, a.me)
	msg[0], msg[len(msg)-1] = s, s
	if a.cfg.Corrupt != nil {
		a.cfg.Corrupt(a.variant, msg)
	}
}

// check verifies the n-1 blocks of the current round aimed at this rank.
func (a *allToAll) check(n int) error {
	p := int(a.round % 2)
	local := a.w.Local()
	for src := 0; src < a.np; src++ {
		if src == a.me {
			continue
		}
		blk := local[a.slot(p, src):][:n]
		want := blockStamp(a.round, src)
		if first, last := blk[0], blk[n-1]; first != want || last != want {
			return fmt.Errorf("block from rank %d arrived at rank %d with first word %#x and last word %#x, want %#x: data not delivered",
				src, a.me, first, last, want)
		}
	}
	return nil
}

// putAll puts the outgoing block into this rank's slot of the current
// round at every other rank, with notice *nt if nt is not nil (else with
// Put), and completes the puts.
func (a *allToAll) putAll(n int, nt *narma.Notice) error {
	p := int(a.round % 2)
	for i := 1; i < a.np; i++ {
		dst := (a.me + i) % a.np
		var err error
		if nt == nil {
			err = a.w.Put(a.msg[:n], dst, a.slot(p, a.me))
		} else {
			err = a.w.PutNotify(a.msg[:n], dst, a.slot(p, a.me), *nt)
		}
		if err != nil {
			return err
		}
	}
	return a.w.FlushAll(a.ctx)
}

// barrier: the barrier after the flushed puts tells every rank that all
// the round's blocks have landed.

func a2aBarrier(a *allToAll, n int) error {
	if err := a.putAll(n, nil); err != nil {
		return err
	}
	if err := a.c.Barrier(a.ctx); err != nil {
		return err
	}
	return a.w.Sync()
}

// flags: after its flushed puts, a source sets its flag of the round's
// parity at every target to the round's number; the target polls its
// n-1 flags of that parity. A flag's previous value is the round two
// before, so an old flag is never taken for a new one.

func a2aFlags(a *allToAll, n int) error {
	if err := a.putAll(n, nil); err != nil {
		return err
	}
	p := int(a.round % 2)
	for i := 1; i < a.np; i++ {
		dst := (a.me + i) % a.np
		if err := a.w.FetchAndOp(a.round, &a.old[dst], dst, a.flag(p, a.me), narma.Replace); err != nil {
			return err
		}
	}
	if err := a.w.FlushAll(a.ctx); err != nil {
		return err
	}
	for i := 1; i < a.np; i++ {
		src := (a.me + a.np - i) % a.np
		err := poll(a.ctx, func() (bool, error) {
			var v int64
			if err := a.w.FetchAndOp(0, &v, a.me, a.flag(p, src), narma.NoOp); err != nil {
				return false, err
			}
			if err := a.w.Flush(a.ctx, a.me); err != nil {
				return false, err
			}
			if v > a.round {
				return false, fmt.Errorf("flag of rank %d holds %d while waiting for round %d", src, v, a.round)
			}
			return v == a.round, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// counter: counter p counts the blocks of rounds of parity p; one counter
// would not do, as a source one round ahead could complete the count of a
// round whose last block is still on its way.

func a2aCounter(a *allToAll, n int) error {
	p := int(a.round % 2)
	nt := narma.Counter(p)
	if err := a.putAll(n, &nt); err != nil {
		return err
	}
	a.counted[p] += uint64(a.np - 1)
	return a.w.WaitCounter(a.ctx, p, a.counted[p])
}

// put-notify: the round's parity is the tag; one persistent request per
// parity counts the n-1 notices of a round from any source.

func a2aNotify(a *allToAll, n int) error {
	p := int(a.round % 2)
	r := a.reqs[p]
	if err := r.Start(); err != nil {
		return err
	}
	nt := narma.Tag(p)
	if err := a.putAll(n, &nt); err != nil {
		return err
	}
	_, err := r.Wait(a.ctx)
	return err
}
