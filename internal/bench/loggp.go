package bench

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
)

// Tags of the loggp experiment's notices, apart from the ping-pong's.
const (
	tagOs     = 11 // o_s: the origin's back-to-back notified puts
	tagOr     = 12 // o_r: notices queued before the target looks for them
	tagStream = 13 // g: the stream of small notified puts
	tagAck    = 14 // g: the target has counted the whole stream
)

// LogGPSizes are the message sizes of the loggp experiment when
// Config.Sizes is nil: the ping-pong sizes the line t(s) = a + G*s is
// fitted to, and the sizes o_s is measured at.
var LogGPSizes = []int{8, 512, 4 << 10, 32 << 10, 256 << 10}

// LogGPStream is the number of messages of the stream that measures g
// (and of the calls timed for o_r) when Config.Iters is 0.
const LogGPStream = 1000

// The loggp experiment's parameters, its variants, in the order of its
// rows.
var loggpParams = []Variant{
	{Name: "o_s", Summary: "origin overhead: time of one PutNotify call (Tag notice) in a loop of back-to-back calls, by size; the Flush that completes them is not timed"},
	{Name: "o_r", Summary: "target overhead: time of Start+Test of a persistent notification request that completes on a notice already queued (8 B puts)"},
	{Name: "g", Summary: "gap between consecutive 8 B PutNotify of a back-to-back stream counted by one request at the target: (T(k) - T(1)) / (k-1), T(n) from the first put to the target's acknowledgement of n"},
	{Name: "L", Summary: "latency: intercept a of the least-squares line through the put-notify half round trips, minus o_s (smallest size) and o_r; shown as 0 if negative"},
	{Name: "G", Summary: "gap per byte, in ns per byte: slope of the least-squares line t(s) = a + G*s through the put-notify half round trips"},
}

// LogGP returns experiment 9, the LogGP parameters of put-notify on the
// transport in use (Belli and Hoefler, Table I), between two ranks. It
// yields one row per parameter, Variant the parameter's name:
//
//   - o_s, the origin overhead, one row per size (Bytes): the time of a
//     PutNotify call alone, timed over a loop of back-to-back calls to the
//     same target; the Flush after the loop (remote completion) is not
//     timed, it belongs to the latency.
//   - o_r, the target overhead (Bytes 8): the time of Start plus the Test
//     that completes, on a notice that was queued before (the origin
//     flushed its puts before a barrier).
//   - g, the gap (Bytes 8): the time between consecutive 8 B notified puts
//     of a back-to-back stream of k that one counting request (count k)
//     takes at the target, (T(k) - T(1)) / (k-1), T(n) measured at the
//     origin from its first put until the target's acknowledgement.
//   - L, the latency (Bytes 0): a - o_s - o_r, where t(s) = a + G*s is the
//     least-squares line (FitLine) through the half round trips t of a
//     put-notify ping-pong at the sizes, and o_s is at the smallest size.
//     A negative L (the overheads overlap on this transport) is shown as
//     0: MedianNs is clamped, MinNs and MaxNs keep the raw extremes over
//     the rounds (see LogGPNotes).
//   - G, the gap per byte (Bytes 0): the slope of that line, in ns per
//     byte (MedianNs holds ns per byte for this row only).
//
// Times are medians over the rounds, and L and G are fitted per round.
// Every message is checked: the ping-pong's messages, the o_s loop's,
// the o_r puts and the stream carry a stamp in their first and last words
// that the target checks; Config.Corrupt is called with the variant names
// "ping-pong" (the fit's messages), "o_s", "o_r" and "g". Every parameter
// is measured whatever Config.Variants selects (L needs o_s and o_r, and
// shares the ping-pong with G); Variants only selects the rows. It needs
// at least two distinct sizes.
func LogGP() Experiment {
	return Experiment{
		Name:     "loggp",
		Summary:  "LogGP parameters o_s, o_r, g, L, G of put-notify between two ranks (Belli & Hoefler, Table I)",
		Measure:  "LogGP parameter (G in ns per byte)",
		Unit:     "ns, G in ns/B",
		Params:   true,
		Ranks:    2,
		Variants: loggpParams,
		Run:      runLogGP,
	}
}

// FitLine returns the least-squares line y = a + b*x through the points
// (x[i], y[i]). It needs at least two points with distinct x.
func FitLine(x, y []float64) (a, b float64, err error) {
	if len(x) != len(y) {
		return 0, 0, fmt.Errorf("fit: %d x values and %d y values", len(x), len(y))
	}
	n := float64(len(x))
	if len(x) < 2 {
		return 0, 0, errors.New("fit: need at least two points")
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range x {
		dx := x[i] - mx
		sxx += dx * dx
		sxy += dx * (y[i] - my)
	}
	if sxx == 0 {
		return 0, 0, errors.New("fit: all x values are equal")
	}
	b = sxy / sxx
	return my - b*mx, b, nil
}

// LogGPNotes returns the notes that a table of loggp rows needs: that L
// is shown as 0 because a - o_s - o_r was negative.
func LogGPNotes(rows []Row) []string {
	var notes []string
	for _, r := range rows {
		if r.Experiment == "loggp" && r.Variant == "L" && r.MedianNs == 0 && r.MinNs < 0 {
			notes = append(notes, fmt.Sprintf("L: a - o_s - o_r was negative (down to %.0f ns over the rounds): the overheads overlap the transfer on this transport; shown as 0", r.MinNs))
		}
	}
	return notes
}

// loggp is one rank's state in the loggp job; the ping-pong's state
// (window, stamps, Corrupt hook) is its pingPong's.
type loggp struct {
	*pingPong
	k                    int // messages per o_r run and per stream
	reqOs, orReq, ackReq *narma.Request
	streamReq, streamOne *narma.Request
}

func runLogGP(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := LogGP()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	if c.Size() != 2 {
		return nil, fmt.Errorf("loggp needs 2 ranks, the job has %d", c.Size())
	}
	sizes := cfg.sizesOr(LogGPSizes)
	sizes = slices.Clone(sizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	if len(sizes) < 2 {
		return nil, fmt.Errorf("loggp needs at least two distinct sizes to fit G and L, got %v", cfg.Sizes)
	}
	rounds := cfg.rounds()
	k := cfg.Iters
	if k == 0 {
		k = LogGPStream
	}
	k = max(k, 2)
	ctx := c.Context()
	nmax := sizes[len(sizes)-1] / 8
	p, err := newPingPong(c, cfg, nmax)
	if err != nil {
		return nil, err
	}
	l := &loggp{pingPong: p, k: k}
	for _, r := range []struct {
		req        **narma.Request
		tag, count int
	}{{&p.data, tagData, 1}, {&l.reqOs, tagOs, 1}, {&l.orReq, tagOr, 1}, {&l.ackReq, tagAck, 1},
		{&l.streamReq, tagStream, k}, {&l.streamOne, tagStream, 1}} {
		if *r.req, err = p.w.NotifyInit(p.peer, r.tag, r.count); err != nil {
			return nil, err
		}
	}
	pp := ppVariant{Variant: Variant{Name: "ping-pong"}, open: lockAll, send: notifySend, recv: notifyRecv, close: unlockAll}

	iters := func(size int) int {
		if cfg.Iters > 0 {
			return cfg.Iters
		}
		return itersFor(size)
	}
	// one measures everything once with n operations per measurement (0:
	// by size), and returns rank 0's times: half round trips and o_s by
	// size, o_r, and the stream times T(k), T(1).
	one := func(n int) (hrt, os []float64, or, tk, t1 float64, err error) {
		for _, size := range sizes {
			it := n
			if it == 0 {
				it = iters(size)
			}
			rt, err := p.measure(pp, size/8, it) // the median round trip
			if err != nil {
				return nil, nil, 0, 0, 0, fmt.Errorf("loggp: %w", err)
			}
			hrt = append(hrt, rt/2)
			d, err := l.originOverhead(size/8, it)
			if err != nil {
				return nil, nil, 0, 0, 0, err
			}
			os = append(os, float64(d.Nanoseconds())/float64(it))
		}
		it := n
		if it == 0 {
			it = k
		}
		d, err := l.targetOverhead(it)
		if err != nil {
			return nil, nil, 0, 0, 0, err
		}
		or = float64(d.Nanoseconds()) / float64(it)
		dk, err := l.stream(l.streamReq, k)
		if err != nil {
			return nil, nil, 0, 0, 0, err
		}
		d1, err := l.stream(l.streamOne, 1)
		if err != nil {
			return nil, nil, 0, 0, 0, err
		}
		return hrt, os, or, float64(dk.Nanoseconds()), float64(d1.Nanoseconds()), nil
	}

	warm := cfg.Warmup
	if warm == 0 {
		warm = 2
	}
	if warm > 0 {
		l.progress("loggp: warm-up")
		if _, _, _, _, _, err := one(warm); err != nil {
			return nil, err
		}
	}
	var osT = make([][]float64, len(sizes))
	var orT, gT, lT, bigG []float64
	xs := make([]float64, len(sizes))
	for i, s := range sizes {
		xs[i] = float64(s)
	}
	clock := newRoundClock(rounds)
	for round := 0; round < rounds; round++ {
		l.progress("loggp: round %d/%d%s", round+1, rounds, clock.left(round))
		hrt, os, or, tk, t1, err := one(0)
		if err != nil {
			return nil, err
		}
		if p.me != 0 {
			continue
		}
		for i := range sizes {
			osT[i] = append(osT[i], os[i])
		}
		orT = append(orT, or)
		gT = append(gT, (tk-t1)/float64(k-1))
		a, slope, err := FitLine(xs, hrt)
		if err != nil {
			return nil, err
		}
		bigG = append(bigG, slope)
		lT = append(lT, a-os[0]-or)
	}

	for _, r := range []*narma.Request{p.data, l.reqOs, l.orReq, l.ackReq, l.streamReq, l.streamOne} {
		if err := r.Free(); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := p.w.Free(ctx); err != nil {
		return nil, err
	}
	if p.me != 0 {
		return nil, nil
	}

	row := func(name string, bytes, it int, times []float64) Row {
		r := Row{Experiment: e.Name, Variant: name, Bytes: bytes, Ranks: c.Size(), Iters: it, Rounds: rounds}
		r.setTimes(times)
		return r
	}
	for i, s := range sizes {
		rows = append(rows, row("o_s", s, iters(s), osT[i]))
	}
	rows = append(rows, row("o_r", 8, k, orT), row("g", 8, k, gT))
	// A latency fitted below zero (noise at small sizes) reads as 0.
	lr := row("L", 0, 0, lT)
	lr.MedianNs, lr.MinNs, lr.MaxNs = max(lr.MedianNs, 0), max(lr.MinNs, 0), max(lr.MaxNs, 0)
	lr.P10Ns, lr.P90Ns = max(lr.P10Ns, 0), max(lr.P90Ns, 0)
	rows = append(rows, lr, row("G", 0, 0, bigG))
	sel := e.selected(cfg)
	return slices.DeleteFunc(rows, func(r Row) bool {
		return !slices.ContainsFunc(sel, func(v Variant) bool { return v.Name == r.Variant })
	}), nil
}

// epoch runs f on both ranks inside a LockAll epoch, after a barrier, and
// returns the time f returns (rank 0's is the one that counts).
func (l *loggp) epoch(variant string, f func() (time.Duration, error)) (time.Duration, error) {
	p := l.pingPong
	p.variant = variant
	p.stamps++
	if err := p.w.LockAll(p.ctx, 0); err != nil {
		return 0, l.errorf("%w", err)
	}
	if err := p.c.Barrier(p.ctx); err != nil {
		return 0, err
	}
	d, err := f()
	if err != nil {
		return 0, l.errorf("%w", err)
	}
	if err := p.w.UnlockAll(p.ctx); err != nil {
		return 0, l.errorf("%w", err)
	}
	return d, nil
}

func (l *loggp) errorf(format string, args ...any) error {
	return fmt.Errorf("loggp %s: %w", l.variant, fmt.Errorf(format, args...))
}

// originOverhead: rank 0 times it back-to-back PutNotify of n words to
// rank 1, then flushes them untimed; rank 1 takes the it notices and
// checks the message (every put carries the same stamp).
func (l *loggp) originOverhead(n, it int) (time.Duration, error) {
	return l.epoch("o_s", func() (time.Duration, error) {
		p := l.pingPong
		stamp := p.stamps
		if p.me == 1 {
			for i := 0; i < it; i++ {
				if err := wait(p.ctx, l.reqOs); err != nil {
					return 0, err
				}
			}
			return 0, p.check(p.w.Local()[:n], stamp)
		}
		msg := p.msg[:n]
		p.stamp(msg, stamp)
		start := time.Now()
		for i := 0; i < it; i++ {
			if err := p.w.PutNotify(msg, 1, 0, narma.Tag(tagOs)); err != nil {
				return 0, err
			}
		}
		d := time.Since(start)
		return d, p.w.Flush(p.ctx, 1)
	})
}

// targetOverhead: rank 1 puts it 8 B notified puts to rank 0 and flushes
// them before a barrier; then rank 0 times it Start+Test of a request
// that finds each notice queued, and checks the message.
func (l *loggp) targetOverhead(it int) (time.Duration, error) {
	return l.epoch("o_r", func() (time.Duration, error) {
		p := l.pingPong
		stamp := p.stamps
		if p.me == 1 {
			p.stamp(p.msg[:1], stamp)
			for i := 0; i < it; i++ {
				if err := p.w.PutNotify(p.msg[:1], 0, 0, narma.Tag(tagOr)); err != nil {
					return 0, err
				}
			}
			if err := p.w.Flush(p.ctx, 0); err != nil {
				return 0, err
			}
			return 0, p.c.Barrier(p.ctx)
		}
		if err := p.c.Barrier(p.ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		for i := 0; i < it; i++ {
			if err := l.orReq.Start(); err != nil {
				return 0, err
			}
			// If not yet queued after all, wait for it (the time then
			// includes the wait).
			err := poll(p.ctx, func() (bool, error) {
				_, done, err := l.orReq.Test()
				return done, err
			})
			if err != nil {
				return 0, err
			}
		}
		d := time.Since(start)
		return d, p.check(p.w.Local()[:1], stamp)
	})
}

// stream: rank 0 sends n back-to-back 8 B notified puts, flushes them,
// and waits for rank 1's acknowledgement, which rank 1 sends when req
// (counting n notices) completes and the message checks; it returns
// rank 0's time from the first put to the acknowledgement.
func (l *loggp) stream(req *narma.Request, n int) (time.Duration, error) {
	return l.epoch("g", func() (time.Duration, error) {
		p := l.pingPong
		stamp := p.stamps
		if p.me == 1 {
			if err := wait(p.ctx, req); err != nil {
				return 0, err
			}
			if err := p.check(p.w.Local()[:1], stamp); err != nil {
				return 0, err
			}
			if err := p.w.PutNotify(nil, 0, 0, narma.Tag(tagAck)); err != nil {
				return 0, err
			}
			return 0, p.w.Flush(p.ctx, 0)
		}
		msg := p.msg[:1]
		p.stamp(msg, stamp)
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := p.w.PutNotify(msg, 1, 0, narma.Tag(tagStream)); err != nil {
				return 0, err
			}
		}
		if err := p.w.Flush(p.ctx, 1); err != nil {
			return 0, err
		}
		if err := wait(p.ctx, l.ackReq); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	})
}
