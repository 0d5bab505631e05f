package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/narma-rma/narma"
)

// Tag of the overlap experiment's messages and notices.
const tagOverlap = 31

// ovVariant is one variant of the overlap experiment: start issues this
// rank's message to the peer, finish completes the exchange and checks
// the peer's message; the computation runs between the two. open and
// close, run untimed around each measured run, open and close its epochs.
type ovVariant struct {
	Variant
	open   func(o *overlap) error
	start  func(o *overlap, n int, k int64) error
	finish func(o *overlap, n int, k int64) error
	close  func(o *overlap) error
}

var ovVariants = []ovVariant{
	{Variant: Variant{Name: "send-recv", Summary: "Irecv, Isend, compute, Wait for both", Classic: true},
		start: ovSRStart, finish: ovSRFinish},
	{Variant: Variant{Name: "put-fence", Summary: "Put, compute, Fence", Classic: true},
		open: ovFenceOpen, start: ovPut, finish: ovFenceFinish, close: ovFenceClose},
	{Variant: Variant{Name: "put-flush", Summary: "Put, compute, Flush, atomic flag (FetchAndOp Replace), Flush; poll the peer's flag", Classic: true},
		open: ovLockAll, start: ovPut, finish: ovFlagFinish, close: ovUnlockAll},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify with a Tag, compute, Flush; wait for the peer's notice with a persistent request"},
		open: ovLockAll, start: ovNotifyStart, finish: ovNotifyFinish, close: ovUnlockAll},
}

// Overlap returns the overlap experiment, after Belli and Hoefler's
// Fig. 4a: ranks 0 and 1 exchange a message per iteration and compute
// between issuing their message and completing the exchange. For each
// variant and size, three times per iteration are measured in
// interleaved rounds: t_comm, the exchange without computation; t_comp,
// the computation alone, a busy loop calibrated on rank 0 to last about
// as long as t_comm; and t_total, both together. The share of the
// communication that the computation hides is
//
//	100 * (t_comm + t_comp - t_total) / t_comm
//
// in percent, from the medians: 100 if the exchange cost nothing on top
// of the computation, 0 if nothing overlapped (below 0 if interleaving
// them costs extra).
//
// A Row carries t_total in MedianNs, MinNs and MaxNs, the share in
// OverlapPct, and the bytes exchanged per rank per t_total in MBps;
// tables show the share.
//
// Messages alternate between two slots of the peer's window and carry a
// stamp in their first and last words; every iteration checks the peer's.
func Overlap() Experiment {
	return Experiment{
		Name:     "overlap",
		Summary:  "overlap of an exchange between two ranks with computation, 8 B to 1 MiB (Belli & Hoefler, Fig. 4a)",
		Measure:  "share of the communication hidden by computation",
		Value:    func(r Row) float64 { return r.OverlapPct },
		Unit:     "percent",
		Note:     overlapNote,
		Ranks:    2,
		Variants: tableVariants(ovVariants),
		Run:      runOverlap,
	}
}

// overlap is one rank's state in the overlap job.
type overlap struct {
	c        *narma.Comm
	ctx      context.Context
	cfg      Config
	variant  string
	w        *narma.Win[int64] // two slots of nmax words, then the flag word
	me, peer int
	nmax     int
	flag     int // displacement of put-flush's flag word
	msg, in  []int64
	notice   *narma.Request // put-notify's persistent request
	send     *narma.Request // send-recv's requests of the current iteration
	recv     *narma.Request
	iters    int64  // iterations so far, the same on both ranks
	sink     uint64 // the busy loop's results, so that it is not optimized away
}

// OverlapShare returns the share of the communication hidden by the
// computation, in percent, from the times per iteration of the exchange
// alone (comm), the computation alone (comp) and both together (total).
func OverlapShare(comm, comp, total float64) float64 {
	if comm <= 0 {
		return 0
	}
	return 100 * (comm + comp - total) / comm
}

// overlapNote is the note under the overlap table when a share is below
// 0: what such a share means, as the formula has it, and what makes it.
// The shares are not clamped at 0, which would hide how much the
// combination cost.
func overlapNote(rows []Row) []string {
	lowest, at := 0.0, ""
	for _, r := range rows {
		if r.Experiment == "overlap" && r.OverlapPct < lowest {
			lowest, at = r.OverlapPct, fmt.Sprintf("%s at %s", r.Variant, FormatSize(r.Bytes))
		}
	}
	if at == "" {
		return nil
	}
	return []string{
		"share = 100 * (t_comm + t_comp - t_total) / t_comm, from the medians of the exchange alone (t_comm),",
		"the computation alone (t_comp) and both together (t_total); not clamped at 0.",
		fmt.Sprintf("Below 0 (down to %.0f%%, %s): both together took longer than the two apart, by that", lowest, at),
		"share of t_comm; nothing was hidden and interleaving them cost extra. Likely causes: the peer waits",
		"for a step of the exchange (a match, a lock grant, a fence's counts) that the computing rank takes",
		"only when it calls into narma again, and ranks sharing cores (goroutine ranks, or more ranks than",
		"cores) take CPU time from each other. With few rounds (--quick) noise alone moves a share by tens of percent.",
	}
}

func runOverlap(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := Overlap()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	if c.Size() != 2 {
		return nil, fmt.Errorf("overlap needs 2 ranks, the job has %d", c.Size())
	}
	sizes := cfg.sizesOr(DefaultSizes)
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, ovVariants)
	ctx := c.Context()
	nmax := slices.Max(sizes) / 8
	o := &overlap{c: c, ctx: ctx, cfg: cfg, me: c.Rank(), peer: 1 - c.Rank(), nmax: nmax,
		flag: 2 * nmax, msg: make([]int64, nmax), in: make([]int64, nmax)}
	if o.w, err = narma.Allocate[int64](ctx, c, 2*nmax+1, narma.WithStrategy(cfg.Strategy)); err != nil {
		return nil, err
	}
	if o.notice, err = o.w.NotifyInit(o.peer, tagOverlap, 1); err != nil {
		return nil, err
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	nsPerUnit := o.calibrate()

	for si, size := range sizes {
		n := size / 8
		label := sizeLabel(e, si, sizes)
		iters := cfg.Iters
		if iters == 0 {
			iters = itersFor(size)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(2, iters/10)
		}
		if warm > 0 {
			o.progress("%s: warm-up", label)
			for _, v := range variants {
				if _, err := o.measure(v, n, warm, 0); err != nil {
					return nil, err
				}
			}
		}
		// Calibration: the exchange alone, then as many units of
		// computation as last about as long, chosen on rank 0.
		comm := make([][]float64, len(variants))
		for round := 0; round < max(1, rounds/3); round++ {
			o.progress("%s: calibration %d", label, round+1)
			for i, v := range variants {
				d, err := o.measure(v, n, iters, 0)
				if err != nil {
					return nil, err
				}
				comm[i] = append(comm[i], perIter(d, iters))
			}
		}
		units := make([]int64, len(variants))
		for i := range variants {
			med, _, _ := summarize(comm[i])
			units[i] = max(1, int64(math.Round(med/nsPerUnit)))
		}
		if err := narma.Bcast(ctx, c, units, 0); err != nil {
			return nil, err
		}
		// Rounds of every variant in turn, so that the machine's drift
		// hits every variant alike.
		comm = make([][]float64, len(variants))
		comp := make([][]float64, len(variants))
		total := make([][]float64, len(variants))
		clock := newRoundClock(rounds)
		for round := 0; round < rounds; round++ {
			o.progress("%s: round %d/%d%s", label, round+1, rounds, clock.left(round))
			for i, v := range variants {
				d, err := o.measure(v, n, iters, 0)
				if err != nil {
					return nil, err
				}
				comm[i] = append(comm[i], perIter(d, iters))
				if d, err = o.compute(iters, int(units[i])); err != nil {
					return nil, err
				}
				comp[i] = append(comp[i], perIter(d, iters))
				if d, err = o.measure(v, n, iters, int(units[i])); err != nil {
					return nil, err
				}
				total[i] = append(total[i], perIter(d, iters))
			}
		}
		if o.me != 0 {
			continue
		}
		for i, v := range variants {
			tComm, _, _ := summarize(comm[i])
			tComp, _, _ := summarize(comp[i])
			r := Row{Experiment: e.Name, Variant: v.Name, Bytes: size, Ranks: c.Size(),
				Iters: iters, Rounds: rounds, Unsound: v.Unsound}
			r.setTimes(total[i])
			r.MBps = float64(size) / r.MedianNs * 1e3
			r.OverlapPct = OverlapShare(tComm, tComp, r.MedianNs)
			rows = append(rows, r)
		}
	}

	if err := o.notice.Free(); err != nil {
		return nil, err
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := o.w.Free(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

func perIter(d time.Duration, iters int) float64 { return float64(d.Nanoseconds()) / float64(iters) }

func (o *overlap) progress(format string, args ...any) {
	progressf(o.cfg, o.me, format, args...)
}

// spinUnit is the number of dependent multiply-adds in one unit of the
// busy loop.
const spinUnit = 16

// spin runs units units of the busy loop and returns its result.
func spin(units int, x uint64) uint64 {
	for i := 0; i < units; i++ {
		for j := 0; j < spinUnit; j++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// calibrate returns the time of one unit of the busy loop in
// nanoseconds, the fastest of a few trials.
func (o *overlap) calibrate() float64 {
	const units = 20000
	best := math.Inf(1)
	for range 5 {
		start := time.Now()
		o.sink = spin(units, o.sink|1)
		best = min(best, float64(time.Since(start).Nanoseconds())/units)
	}
	return max(best, 1e-3)
}

// compute runs iters iterations of the busy loop alone, between the same
// barrier as measure, and returns the time this rank measured.
func (o *overlap) compute(iters, units int) (time.Duration, error) {
	if err := o.c.Barrier(o.ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		o.sink = spin(units, o.sink|1)
	}
	return time.Since(start), nil
}

// measure runs iters exchanges of n-word messages with variant v, with
// units of computation between start and finish, and returns the time
// this rank measured (rank 0's is reported).
func (o *overlap) measure(v ovVariant, n, iters, units int) (time.Duration, error) {
	o.variant = v.Name
	if v.open != nil {
		if err := v.open(o); err != nil {
			return 0, o.errorf("open: %w", err)
		}
	}
	if err := o.c.Barrier(o.ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		o.iters++
		k := o.iters
		err := v.start(o, n, k)
		if err == nil {
			o.sink = spin(units, o.sink|1)
			err = v.finish(o, n, k)
		}
		if err != nil {
			return 0, o.errorf("%s, iteration %d: %w", FormatSize(8*n), k, err)
		}
	}
	d := time.Since(start)
	if v.close != nil {
		if err := v.close(o); err != nil {
			return 0, o.errorf("close: %w", err)
		}
	}
	return d, nil
}

func (o *overlap) errorf(format string, args ...any) error {
	return fmt.Errorf("overlap %s: %w", o.variant, fmt.Errorf(format, args...))
}

// ovStamp is the stamp of rank's message in iteration k; it grows with k.
func ovStamp(k int64, rank int) int64 { return k<<1 | int64(rank&1) }

// slot returns the displacement of the slot that iteration k writes.
func (o *overlap) slot(k int64) int { return int(k%2) * o.nmax }

// stamp writes this rank's stamp of iteration k into the first and last
// words of its outgoing message and gives it to the corrupting hook, if
// any.
func (o *overlap) stamp(n int, k int64) []int64 {
	msg := o.msg[:n]
	msg[0], msg[n-1] = ovStamp(k, o.me), ovStamp(k, o.me)
	if o.cfg.Corrupt != nil {
		o.cfg.Corrupt(o.variant, msg)
	}
	return msg
}

// check verifies that msg is the peer's message of iteration k.
func (o *overlap) check(msg []int64, k int64) error {
	want := ovStamp(k, o.peer)
	if first, last := msg[0], msg[len(msg)-1]; first != want || last != want {
		return fmt.Errorf("message %d from rank %d arrived with first word %d and last word %d, want %d: data not delivered", k, o.peer, first, last, want)
	}
	return nil
}

// checkSlot checks the peer's message of iteration k in this rank's
// window.
func (o *overlap) checkSlot(n int, k int64) error {
	return o.check(o.w.Local()[o.slot(k):o.slot(k)+n], k)
}

// send-recv: the receive is posted before the send; Isend copies the
// message, so the computation overlaps whatever the runtime does after.

func ovSRStart(o *overlap, n int, k int64) (err error) {
	if o.recv, err = o.c.Irecv(narma.Bytes(o.in[:n]), o.peer, tagOverlap); err != nil {
		return err
	}
	o.send, err = o.c.Isend(o.ctx, narma.Bytes(o.stamp(n, k)), o.peer, tagOverlap)
	return err
}

func ovSRFinish(o *overlap, n int, k int64) error {
	if _, err := o.send.Wait(o.ctx); err != nil {
		return err
	}
	st, err := o.recv.Wait(o.ctx)
	if err != nil {
		return err
	}
	if st.Count != 8*n {
		return fmt.Errorf("message %d of %d bytes, want %d", k, st.Count, 8*n)
	}
	return o.check(o.in[:n], k)
}

// put-fence

func ovFenceOpen(o *overlap) error { return o.w.Fence(o.ctx, narma.NoPrecede) }

func ovPut(o *overlap, n int, k int64) error {
	return o.w.Put(o.stamp(n, k), o.peer, o.slot(k))
}

func ovFenceFinish(o *overlap, n int, k int64) error {
	if err := o.w.Fence(o.ctx, 0); err != nil {
		return err
	}
	return o.checkSlot(n, k)
}

func ovFenceClose(o *overlap) error { return o.w.Fence(o.ctx, narma.NoSucceed) }

// put-flush and put-notify run in one LockAll epoch per measured run.

func ovLockAll(o *overlap) error   { return o.w.LockAll(o.ctx, 0) }
func ovUnlockAll(o *overlap) error { return o.w.UnlockAll(o.ctx) }

// put-flush: the flag holds the stamp of the sender's last message, so an
// old flag is never mistaken for a new one. The peer may be one iteration
// ahead: it may have set its flag of iteration k+1 already, which also
// says that its message of iteration k arrived. A rank writes a slot
// again two iterations later, after it saw the peer's flag of the
// iteration in between, which the peer set after it checked the slot.

func ovFlagFinish(o *overlap, n int, k int64) error {
	if err := o.w.Flush(o.ctx, o.peer); err != nil {
		return err
	}
	var old int64
	if err := o.w.FetchAndOp(ovStamp(k, o.me), &old, o.peer, o.flag, narma.Replace); err != nil {
		return err
	}
	if err := o.w.Flush(o.ctx, o.peer); err != nil {
		return err
	}
	want := ovStamp(k, o.peer)
	err := poll(o.ctx, func() (bool, error) {
		var v int64
		if err := o.w.FetchAndOp(0, &v, o.me, o.flag, narma.NoOp); err != nil {
			return false, err
		}
		if err := o.w.Flush(o.ctx, o.me); err != nil {
			return false, err
		}
		if v == want || v == ovStamp(k+1, o.peer) {
			return true, nil
		}
		if v > want {
			return false, fmt.Errorf("flag %d while waiting for message %d", v, k)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	return o.checkSlot(n, k)
}

// put-notify: the same reuse argument as put-flush, with the notice in
// place of the flag.

func ovNotifyStart(o *overlap, n int, k int64) error {
	return o.w.PutNotify(o.stamp(n, k), o.peer, o.slot(k), narma.Tag(tagOverlap))
}

func ovNotifyFinish(o *overlap, n int, k int64) error {
	if err := o.w.Flush(o.ctx, o.peer); err != nil {
		return err
	}
	if err := wait(o.ctx, o.notice); err != nil {
		return err
	}
	return o.checkSlot(n, k)
}
