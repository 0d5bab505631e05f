package narma_test

// Notified Access, matched notifications: a notice is seen only after the
// data of the access it rides on (DESIGN.md rule 1), zero-byte notified
// operations are pure notifications (rule 3), notices wait in the
// unexpected queue and are matched exactly once, oldest first, per-origin
// order kept (rule 2), and the steady-state hot path allocates nothing.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// Tags of the small command protocol with which rank 0 drives other ranks
// step by step, so that what the target may observe is deterministic.
const (
	cmdTag = 7001
	ackTag = 7002
)

// command sends vals to rank dest's serve loop.
func command(ctx context.Context, c *narma.Comm, dest int, vals ...int64) error {
	return c.Send(ctx, narma.Bytes(vals), dest, cmdTag)
}

// awaitAck waits for the acknowledgement of one command by rank src.
func awaitAck(ctx context.Context, c *narma.Comm, src int) error {
	_, err := c.Recv(ctx, nil, src, ackTag)
	return err
}

// commandAck sends a command and waits until it has been carried out.
func commandAck(ctx context.Context, c *narma.Comm, dest int, vals ...int64) error {
	if err := command(ctx, c, dest, vals...); err != nil {
		return err
	}
	return awaitAck(ctx, c, dest)
}

// stopServing ends the serve loops of ranks.
func stopServing(ctx context.Context, c *narma.Comm, ranks ...int) error {
	for _, r := range ranks {
		if err := c.Send(ctx, nil, r, cmdTag); err != nil {
			return err
		}
	}
	return nil
}

// serve runs fn for every command rank 0 sends, acknowledging each after
// fn returns, until an empty command.
func serve(ctx context.Context, c *narma.Comm, fn func(vals []int64) error) error {
	buf := make([]int64, 256)
	for {
		st, err := c.Recv(ctx, narma.Bytes(buf), 0, cmdTag)
		if err != nil {
			return err
		}
		if st.Count == 0 {
			return nil
		}
		if err := fn(buf[:st.Count/8]); err != nil {
			return err
		}
		if err := c.Send(ctx, nil, 0, ackTag); err != nil {
			return err
		}
	}
}

// waitInside reports whether a target can wait for a notice before closing
// its own part of an epoch in mode m: always, except under a deferred
// fence, whose operations move in the closing fence the target must join.
func waitInside(m mode, st narma.Strategy) bool { return !(m == modeFence && st == narma.Deferred) }

// fillBytes fills b with a pattern that depends on seed.
func fillBytes(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*31 + seed*7 + 1)
	}
}

// noticeSizes are the sizes of the notified puts of the data tests.
func noticeSizes() []int {
	if testing.Short() {
		return []int{0, 1, 8, 4096, 64 << 10}
	}
	return []int{0, 1, 8, 4096, 4 << 20}
}

// status records a failure unless st reports (src, tag).
func (k *checks) status(what string, st narma.Status, src, tag int) {
	if st.Source != src || st.Tag != tag {
		k.errorf("%s: status source %d tag %d, want source %d tag %d", what, st.Source, st.Tag, src, tag)
	}
}

// TestPutNotifyDataVisibleAtNotice: when the target matches the notice of
// a PutNotify of n bytes, all n bytes are in its window, for n from 0 to
// several MiB; a zero-byte PutNotify delivers the notice and changes
// nothing. A request with count k completes after k notices, with all k
// puts visible.
func TestPutNotifyDataVisibleAtNotice(t *testing.T) {
	ns := noticeSizes()
	maxN := ns[len(ns)-1]
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[byte](ctx, c, maxN+64, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			fillBytes(w.Local(), 1000+c.Rank())
			want := slices.Clone(w.Local()) // the target's model of its window
			src := make([]byte, maxN)
			var r *narma.Request
			if c.Rank() == 0 {
				if r, err = w.NotifyInit(1, narma.AnyTag, 1); err != nil {
					return err
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			ep := allToOne(c, w, m, 0)
			check := func(round, n int) {
				st, err := r.Wait(ctx)
				if err != nil {
					k.errorf("round %d (%d bytes): Wait: %v", round, n, err)
					return
				}
				k.status(fmt.Sprintf("round %d", round), st, 1, round)
				fillBytes(want[:n], round)
				if !bytes.Equal(w.Local(), want) {
					i := 0
					for i < len(want) && w.Local()[i] == want[i] {
						i++
					}
					k.errorf("round %d: notice of a %d-byte put matched but window differs from byte %d on", round, n, i)
					copy(want, w.Local())
				}
			}
			for round, n := range ns {
				if c.Rank() == 1 {
					fillBytes(src[:n], round)
				} else if err := r.Start(); err != nil {
					return err
				}
				if err := ep.begin(); err != nil {
					return err
				}
				if c.Rank() == 1 {
					var s []byte
					if n > 0 {
						s = src[:n]
					}
					if err := w.PutNotify(s, 0, 0, narma.Tag(round)); err != nil {
						return err
					}
				} else if waitInside(m, st) {
					check(round, n)
				}
				if err := ep.end(); err != nil {
					return err
				}
				if c.Rank() == 0 && !waitInside(m, st) {
					check(round, n)
				}
				// Passive epochs do not hold the origin back: the next
				// round's put waits until the target has checked this one.
				if err := c.Barrier(ctx); err != nil {
					return err
				}
			}

			// count > 1: eight puts to distinct words, one request.
			const tag, nput = 100, 8
			var rk *narma.Request
			if c.Rank() == 0 {
				if rk, err = w.NotifyInit(1, tag, nput); err != nil {
					return err
				}
				if err := rk.Start(); err != nil {
					return err
				}
			}
			waitAll := func() {
				st, err := rk.Wait(ctx)
				k.ok("Wait count 8", err)
				k.status("count 8", st, 1, tag)
				for j := 0; j < nput; j++ {
					for b := 0; b < 8; b++ {
						if got := w.Local()[8*j+b]; got != byte(j+1) {
							k.errorf("count 8: byte %d of put %d is %d after the request completed, want %d", b, j, got, j+1)
						}
					}
				}
			}
			if err := ep.begin(); err != nil {
				return err
			}
			if c.Rank() == 1 {
				for j := 0; j < nput; j++ {
					if err := w.PutNotify(bytes.Repeat([]byte{byte(j + 1)}, 8), 0, 8*j, narma.Tag(tag)); err != nil {
						return err
					}
				}
			} else if waitInside(m, st) {
				waitAll()
			}
			if err := ep.end(); err != nil {
				return err
			}
			if c.Rank() == 0 && !waitInside(m, st) {
				waitAll()
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestGetNotifyTargetMayOverwrite: once the target sees the notice of a
// GetNotify it may overwrite the data read, and the origin still receives
// the old contents.
func TestGetNotifyTargetMayOverwrite(t *testing.T) {
	ns := []int{1, 8, 4096, 1 << 20}
	if testing.Short() {
		ns = []int{1, 8, 4096, 64 << 10}
	}
	maxN := ns[len(ns)-1]
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[byte](ctx, c, maxN, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			var r *narma.Request
			if c.Rank() == 0 {
				if r, err = w.NotifyInit(1, narma.AnyTag, 1); err != nil {
					return err
				}
			}
			dst := make([]byte, maxN)
			ep := allToOne(c, w, m, 0)
			overwrite := func(round, n int) {
				st, err := r.Wait(ctx)
				if err != nil {
					k.errorf("round %d: Wait: %v", round, err)
					return
				}
				k.status(fmt.Sprintf("round %d", round), st, 1, round)
				// The get has read the data: the buffer is the target's again.
				for i := range w.Local()[:n] {
					w.Local()[i] = 0xEE
				}
			}
			for round, n := range ns {
				if c.Rank() == 0 {
					fillBytes(w.Local()[:n], 100+round)
					if err := r.Start(); err != nil {
						return err
					}
				} else {
					clear(dst)
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if err := ep.begin(); err != nil {
					return err
				}
				if c.Rank() == 1 {
					if err := w.GetNotify(dst[:n], 0, 0, narma.Tag(round)); err != nil {
						return err
					}
					if m.passive() {
						if err := w.Flush(ctx, 0); err != nil {
							return err
						}
					}
				} else if waitInside(m, st) {
					overwrite(round, n)
				}
				if err := ep.end(); err != nil {
					return err
				}
				if c.Rank() == 0 && !waitInside(m, st) {
					overwrite(round, n)
				}
				// The target has overwritten its buffer before this barrier.
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if c.Rank() == 1 {
					want := make([]byte, n)
					fillBytes(want, 100+round)
					if !bytes.Equal(dst[:n], want) {
						k.errorf("round %d: GetNotify of %d bytes returned data the target wrote after the notice", round, n)
					}
				}
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// notifiedOp is one notified data-movement call, issued by rank 1 to rank
// 0's int64 window whose element i holds i+1 beforehand.
type notifiedOp struct {
	name    string
	reqOnly bool // request-based: lock epochs only
	// issue issues the call with notice n; a request, if any, is waited
	// for before the epoch ends.
	issue func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error)
	// atTarget checks the target's window once the notice is matched,
	// and overwrites what a get read.
	atTarget func(loc []int64) error
	// atOrigin checks the origin's buffers after the epoch.
	atOrigin func(b *opBufs) error
}

// opBufs are the origin buffers of the notified ops.
type opBufs struct {
	get, getStrided, rget [3]int64
	getAcc, rgetAcc       [1]int64
	fetched, swapped      int64
}

func wantElems(loc []int64, from int, want ...int64) error {
	if got := loc[from : from+len(want)]; !slices.Equal(got, want) {
		return fmt.Errorf("window[%d:%d] = %v when the notice is matched, want %v", from, from+len(want), got, want)
	}
	return nil
}

func wantBuf(name string, got, want []int64) error {
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: origin buffer %v, want %v", name, got, want)
	}
	return nil
}

func overwriteElems(loc []int64, idx ...int) {
	for _, i := range idx {
		loc[i] = -1
	}
}

func notifiedOps() []notifiedOp {
	return []notifiedOp{
		{name: "PutNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, _ *opBufs) (*narma.Request, error) {
				return nil, w.PutNotify([]int64{101, 102}, 0, 0, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 0, 101, 102, 3) }},
		{name: "PutStridedNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, _ *opBufs) (*narma.Request, error) {
				return nil, w.PutStridedNotify([]int64{201, 0, 202, 0, 203}, narma.Vector(3, 1, 2), 0, 3, narma.Vector(3, 1, 2), n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 3, 201, 5, 202, 7, 203) }},
		{name: "AccumulateNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, _ *opBufs) (*narma.Request, error) {
				return nil, w.AccumulateNotify([]int64{10, 20}, 0, 8, narma.Sum, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 8, 19, 30) }},
		{name: "AccumulateStridedNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, _ *opBufs) (*narma.Request, error) {
				return nil, w.AccumulateStridedNotify([]int64{1, 0, 2}, narma.Vector(2, 1, 2), 0, 10, narma.Vector(2, 1, 3), narma.Sum, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 10, 12, 12, 13, 16) }},
		{name: "GetAccumulateNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return nil, w.GetAccumulateNotify([]int64{5}, b.getAcc[:], 0, 14, narma.Sum, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 14, 20) },
			atOrigin: func(b *opBufs) error { return wantBuf("GetAccumulateNotify", b.getAcc[:], []int64{15}) }},
		{name: "FetchAndOpNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return nil, w.FetchAndOpNotify(7, &b.fetched, 0, 15, narma.Sum, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 15, 23) },
			atOrigin: func(b *opBufs) error { return wantBuf("FetchAndOpNotify", []int64{b.fetched}, []int64{16}) }},
		{name: "CompareAndSwapNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return nil, w.CompareAndSwapNotify(17, 77, &b.swapped, 0, 16, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 16, 77) },
			atOrigin: func(b *opBufs) error { return wantBuf("CompareAndSwapNotify", []int64{b.swapped}, []int64{17}) }},
		{name: "GetNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return nil, w.GetNotify(b.get[:], 0, 17, n)
			},
			atTarget: func(loc []int64) error { overwriteElems(loc, 17, 18, 19); return nil },
			atOrigin: func(b *opBufs) error { return wantBuf("GetNotify", b.get[:], []int64{18, 19, 20}) }},
		{name: "GetStridedNotify",
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return nil, w.GetStridedNotify(b.getStrided[:], narma.Contiguous, 0, 20, narma.Vector(3, 1, 2), n)
			},
			atTarget: func(loc []int64) error { overwriteElems(loc, 20, 22, 24); return nil },
			atOrigin: func(b *opBufs) error {
				return wantBuf("GetStridedNotify", b.getStrided[:], []int64{21, 23, 25})
			}},
		{name: "RputNotify", reqOnly: true,
			issue: func(w *narma.Win[int64], n narma.Notice, _ *opBufs) (*narma.Request, error) {
				return w.RputNotify([]int64{301}, 0, 26, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 26, 301) }},
		{name: "RgetNotify", reqOnly: true,
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return w.RgetNotify(b.rget[:1], 0, 27, n)
			},
			atTarget: func(loc []int64) error { overwriteElems(loc, 27); return nil },
			atOrigin: func(b *opBufs) error { return wantBuf("RgetNotify", b.rget[:1], []int64{28}) }},
		{name: "RaccumulateNotify", reqOnly: true,
			issue: func(w *narma.Win[int64], n narma.Notice, _ *opBufs) (*narma.Request, error) {
				return w.RaccumulateNotify([]int64{4}, 0, 28, narma.Sum, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 28, 33) }},
		{name: "RgetAccumulateNotify", reqOnly: true,
			issue: func(w *narma.Win[int64], n narma.Notice, b *opBufs) (*narma.Request, error) {
				return w.RgetAccumulateNotify([]int64{1}, b.rgetAcc[:], 0, 29, narma.Sum, n)
			},
			atTarget: func(loc []int64) error { return wantElems(loc, 29, 31) },
			atOrigin: func(b *opBufs) error { return wantBuf("RgetAccumulateNotify", b.rgetAcc[:], []int64{30}) }},
	}
}

// TestNotifiedOpsEveryCallEveryEpoch: every notified call is valid
// wherever its plain call is (fence, PSCW, lock, lockall; request-based
// ones in lock epochs) and its notice is matched only after its effect at
// the target: data written, accumulated, or read (the target may then
// overwrite it and the origin still gets the old value).
func TestNotifiedOpsEveryCallEveryEpoch(t *testing.T) {
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		ops := notifiedOps()
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, 32, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			for i := range w.Local() {
				w.Local()[i] = int64(i + 1)
			}
			var reqs []*narma.Request
			if c.Rank() == 0 {
				for i, op := range ops {
					if op.reqOnly && !m.passive() {
						continue
					}
					r, err := w.NotifyInit(1, 10+i, 1)
					if err != nil {
						return err
					}
					if err := r.Start(); err != nil {
						return err
					}
					reqs = append(reqs, r)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			var b opBufs
			ep := allToOne(c, w, m, 0)
			checkTarget := func() {
				j := 0
				for i, op := range ops {
					if op.reqOnly && !m.passive() {
						continue
					}
					st, err := reqs[j].Wait(ctx)
					j++
					if err != nil {
						k.errorf("%s: Wait: %v", op.name, err)
						continue
					}
					k.status(op.name, st, 1, 10+i)
					if err := op.atTarget(w.Local()); err != nil {
						k.errorf("%s: %v", op.name, err)
					}
				}
			}
			if err := ep.begin(); err != nil {
				return err
			}
			if c.Rank() == 1 {
				var rs []*narma.Request
				for i, op := range ops {
					if op.reqOnly && !m.passive() {
						continue
					}
					r, err := op.issue(w, narma.Tag(10+i), &b)
					if err != nil {
						k.errorf("%s in a %v epoch: %v", op.name, m, err)
						continue
					}
					if r != nil {
						rs = append(rs, r)
					}
				}
				for _, r := range rs {
					if _, err := r.Wait(ctx); err != nil {
						k.errorf("request Wait: %v", err)
					}
				}
			} else if waitInside(m, st) {
				checkTarget()
			}
			if err := ep.end(); err != nil {
				return err
			}
			if c.Rank() == 0 && !waitInside(m, st) {
				checkTarget()
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if c.Rank() == 1 {
				for _, op := range ops {
					if op.atOrigin == nil || op.reqOnly && !m.passive() {
						continue
					}
					if err := op.atOrigin(&b); err != nil {
						k.errorf("%v", err)
					}
				}
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestZeroByteNotifiedOps: notified operations without data are legal in
// every epoch and deliver only their notice: a tag is matched, a counter
// counts, a signal word changes, and the window is otherwise untouched.
func TestZeroByteNotifiedOps(t *testing.T) {
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, 8, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 1); err != nil {
				return err
			}
			fillPattern(w.Local()[:7], c.Rank())
			w.Local()[7] = 0 // signal word
			var r *narma.Request
			if c.Rank() == 0 {
				if r, err = w.NotifyInit(1, 3, 3); err != nil {
					return err
				}
				if err := r.Start(); err != nil {
					return err
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			ep := allToOne(c, w, m, 0)
			if err := ep.begin(); err != nil {
				return err
			}
			if c.Rank() == 1 {
				k.ok("PutNotify(nil) tag", w.PutNotify(nil, 0, 0, narma.Tag(3)))
				k.ok("GetNotify([]) tag", w.GetNotify([]int64{}, 0, 8, narma.Tag(3)))
				k.ok("AccumulateNotify(nil) tag", w.AccumulateNotify(nil, 0, 2, narma.Sum, narma.Tag(3)))
				k.ok("PutNotify(nil) counter", w.PutNotify(nil, 0, 4, narma.Counter(0)))
				k.ok("AccumulateNotify(nil) counter", w.AccumulateNotify(nil, 0, 4, narma.Max, narma.Counter(0)))
				k.ok("GetAccumulateNotify(nil) counter", w.GetAccumulateNotify(nil, nil, 0, 5, narma.NoOp, narma.Counter(0)))
				k.ok("PutNotify(nil) signal", w.PutNotify(nil, 0, 1, narma.Signal(7, 40, narma.SignalAdd)))
				k.ok("GetNotify(nil) signal", w.GetNotify(nil, 0, 1, narma.Signal(7, 2, narma.SignalAdd)))
			}
			if err := ep.end(); err != nil {
				return err
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if c.Rank() == 0 {
				st, done, err := r.Test()
				k.ok("Test", err)
				if !done {
					k.errorf("three zero-byte tag notices were not all delivered")
				}
				k.status("zero-byte", st, 1, 3)
				if err := checkPattern(w.Local()[:7], 0); err != nil {
					k.errorf("zero-byte notified ops changed the window: %v", err)
				}
				if v, err := w.Counter(0); err != nil || v != 3 {
					k.errorf("counter after 3 zero-byte counter notices: %d, %v; want 3", v, err)
				}
				if v, err := w.Signal(7); err != nil || v != 42 {
					k.errorf("signal after zero-byte signal notices: %d, %v; want 42", v, err)
				}
				// Nothing else was queued.
				any, err := w.NotifyInit(narma.AnySource, narma.AnyTag, 1)
				if err != nil {
					return err
				}
				k.ok("Start", any.Start())
				if _, done, err := any.Test(); done || err != nil {
					k.errorf("an extra notice was queued (done %v, err %v)", done, err)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// originTags returns the tag sequence origin o issues in the unexpected
// queue test: per values from [0, ntags), from a seed known to every rank.
func originTags(o, per, ntags int) []int {
	rng := rand.New(rand.NewSource(int64(1000 + o)))
	tags := make([]int, per)
	for i := range tags {
		tags[i] = rng.Intn(ntags)
	}
	return tags
}

// TestNotifyUnexpectedQueue: thousands of notices from several origins
// arrive before any request exists; requests with every combination of
// wildcards then take them, each exactly once, oldest first for each
// origin, with the status of the last match, and Start re-arms them.
func TestNotifyUnexpectedQueue(t *testing.T) {
	const nOrig, ntags = 3, 5
	per := 1000
	if testing.Short() {
		per = 500
	}
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, nOrig+1, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, nOrig+1, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			ep := allToOne(c, w, m, 0)
			if err := ep.begin(); err != nil {
				return err
			}
			if me := c.Rank(); me != 0 {
				data := []int64{0}
				for i, tg := range originTags(me, per, ntags) {
					if i%2 == 0 {
						data[0] = int64(i)
						err = w.PutNotify(data, 0, me, narma.Tag(tg))
					} else {
						err = w.PutNotify(nil, 0, 0, narma.Tag(tg))
					}
					if err != nil {
						return err
					}
				}
			}
			if err := ep.end(); err != nil {
				return err
			}
			if err := ep.finish(); err != nil {
				return err
			}
			// Every notice has arrived; no request exists yet.
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if c.Rank() == 0 {
				for o := 1; o <= nOrig; o++ {
					if got, want := w.Local()[o], int64((per-1)&^1); got != want {
						k.errorf("last put of origin %d: %d, want %d", o, got, want)
					}
				}
				consumeUnexpected(k, w, nOrig, per, ntags)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// consumeUnexpected takes every queued notice of TestNotifyUnexpectedQueue
// with scripted requests and checks each result against rem, the tags
// still queued from each origin in issue order. The arrival order between
// origins is not known, so a wildcard-source result is checked to be the
// oldest matching notice of the origin it names.
func consumeUnexpected(k *checks, w *narma.Win[int64], nOrig, per, ntags int) {
	rem := make([][]int, nOrig+1)
	for o := 1; o <= nOrig; o++ {
		rem[o] = originTags(o, per, ntags)
	}
	// take removes the first notice of origin o with tag (or any tag) and
	// reports whether there was one.
	take := func(o, tag int) bool {
		for i, tg := range rem[o] {
			if tag == narma.AnyTag || tg == tag {
				rem[o] = slices.Delete(rem[o], i, i+1)
				return true
			}
		}
		return false
	}
	count := func(o, tag int) int {
		n := 0
		for _, tg := range rem[o] {
			if tag == narma.AnyTag || tg == tag {
				n++
			}
		}
		return n
	}
	// complete starts r and tests it once: everything has arrived, so a
	// request the queue can satisfy completes at once.
	complete := func(what string, r *narma.Request) (narma.Status, bool) {
		if err := r.Start(); err != nil {
			k.errorf("%s: Start: %v", what, err)
			return narma.Status{}, false
		}
		st, done, err := r.Test()
		if err != nil {
			k.errorf("%s: Test: %v", what, err)
			return st, false
		}
		if !done {
			k.errorf("%s: Test did not complete although the notices are queued", what)
		}
		return st, done
	}
	newReq := func(src, tag, n int) *narma.Request {
		r, err := w.NotifyInit(src, tag, n)
		if err != nil {
			k.errorf("NotifyInit(%d, %d, %d): %v", src, tag, n, err)
		}
		return r
	}
	if len(k.errs) > 0 {
		return
	}

	// 1. (o, AnyTag), count 1, re-armed by Start: origin o's tags in order.
	for o := 1; o <= nOrig; o++ {
		r := newReq(o, narma.AnyTag, 1)
		for i := 0; i < 40 && len(rem[o]) > 0 && len(k.errs) == 0; i++ {
			want := rem[o][0]
			st, done := complete(fmt.Sprintf("(%d, AnyTag) #%d", o, i), r)
			if !done {
				return
			}
			k.status(fmt.Sprintf("(%d, AnyTag) #%d", o, i), st, o, want)
			take(o, want)
		}
		// Without Start, a completed request stays complete and takes
		// nothing (the later steps would find a notice missing).
		if _, done, err := r.Test(); !done || err != nil {
			k.errorf("Test of a completed request without Start: done %v, err %v", done, err)
		}
		k.ok("Free", r.Free())
	}
	// 2. (o, tag), count 3.
	for o := 1; o <= nOrig; o++ {
		for tg := 0; tg < ntags; tg++ {
			r := newReq(o, tg, 3)
			for i := 0; i < 4 && count(o, tg) >= 3 && len(k.errs) == 0; i++ {
				st, done := complete(fmt.Sprintf("(%d, %d) count 3", o, tg), r)
				if !done {
					return
				}
				k.status(fmt.Sprintf("(%d, %d) count 3", o, tg), st, o, tg)
				take(o, tg)
				take(o, tg)
				take(o, tg)
			}
			k.ok("Free", r.Free())
		}
	}
	// 3. (AnySource, tag), count 1: the oldest notice with tag of the origin
	// the status names.
	for tg := 0; tg < ntags; tg++ {
		r := newReq(narma.AnySource, tg, 1)
		for i := 0; i < 15 && len(k.errs) == 0; i++ {
			st, done := complete(fmt.Sprintf("(AnySource, %d)", tg), r)
			if !done {
				return
			}
			if st.Tag != tg || st.Source < 1 || st.Source > nOrig || !take(st.Source, tg) {
				k.errorf("(AnySource, %d) matched (%d, %d): no such notice is left", tg, st.Source, st.Tag)
				return
			}
		}
		k.ok("Free", r.Free())
	}
	// 4. (o, AnyTag), count 10: the status is that of the 10th.
	for o := 1; o <= nOrig; o++ {
		r := newReq(o, narma.AnyTag, 10)
		for i := 0; i < 3 && len(rem[o]) >= 10 && len(k.errs) == 0; i++ {
			want := rem[o][9]
			st, done := complete(fmt.Sprintf("(%d, AnyTag) count 10", o), r)
			if !done {
				return
			}
			k.status(fmt.Sprintf("(%d, AnyTag) count 10", o), st, o, want)
			for j := 0; j < 10; j++ {
				take(o, narma.AnyTag)
			}
		}
		k.ok("Free", r.Free())
	}
	// 5. (AnySource, AnyTag), count 1: the oldest notice of the origin
	// named.
	r := newReq(narma.AnySource, narma.AnyTag, 1)
	for i := 0; i < 100 && len(k.errs) == 0; i++ {
		st, done := complete("(AnySource, AnyTag)", r)
		if !done {
			return
		}
		if st.Source < 1 || st.Source > nOrig || len(rem[st.Source]) == 0 || rem[st.Source][0] != st.Tag {
			k.errorf("(AnySource, AnyTag) matched (%d, %d), not the oldest notice of that origin", st.Source, st.Tag)
			return
		}
		take(st.Source, narma.AnyTag)
	}
	k.ok("Free", r.Free())
	// 6. (AnySource, tag) with count = every remaining notice of the tag.
	for tg := 0; tg < 2 && len(k.errs) == 0; tg++ {
		n := 0
		for o := 1; o <= nOrig; o++ {
			n += count(o, tg)
		}
		if n == 0 {
			continue
		}
		r := newReq(narma.AnySource, tg, n)
		st, done := complete(fmt.Sprintf("(AnySource, %d) count %d", tg, n), r)
		if !done {
			return
		}
		if st.Tag != tg || st.Source < 1 || st.Source > nOrig || count(st.Source, tg) == 0 {
			k.errorf("(AnySource, %d) count %d: status (%d, %d)", tg, n, st.Source, st.Tag)
		}
		for o := 1; o <= nOrig; o++ {
			for take(o, tg) {
			}
		}
		k.ok("Free", r.Free())
	}
	// 7. (o, tag) with count = every remaining notice of the pair.
	for o := 1; o <= nOrig; o++ {
		for tg := 2; tg < ntags && len(k.errs) == 0; tg++ {
			n := count(o, tg)
			if n == 0 {
				continue
			}
			r := newReq(o, tg, n)
			st, done := complete(fmt.Sprintf("(%d, %d) count %d", o, tg, n), r)
			if !done {
				return
			}
			k.status(fmt.Sprintf("(%d, %d) count %d", o, tg, n), st, o, tg)
			for take(o, tg) {
			}
			k.ok("Free", r.Free())
		}
	}
	// 8. Nothing is left: every notice was matched exactly once.
	for o := 1; o <= nOrig; o++ {
		if len(rem[o]) != 0 {
			k.errorf("model: %d notices of origin %d left", len(rem[o]), o)
		}
	}
	for _, p := range [][2]int{{narma.AnySource, narma.AnyTag}, {1, narma.AnyTag}, {narma.AnySource, 0}, {2, 3}} {
		r := newReq(p[0], p[1], 1)
		k.ok("Start", r.Start())
		if st, done, err := r.Test(); done || err != nil {
			k.errorf("(%d, %d) after every notice was taken: done %v, status %+v, err %v (a notice matched twice?)", p[0], p[1], done, st, err)
		}
		k.ok("Free", r.Free())
	}
}

// modelReq is the reference model of a notification request.
type modelReq struct {
	r               *narma.Request
	src, tag, count int
	matched         int
	active          bool
	last            [2]int
}

// modelQueue is the reference model of the notices queued at a target:
// (source, tag) in arrival order.
type modelQueue [][2]int

// take removes and returns the oldest notice matching (src, tag).
func (q *modelQueue) take(src, tag int) ([2]int, bool) {
	for i, e := range *q {
		if (src == narma.AnySource || e[0] == src) && (tag == narma.AnyTag || e[1] == tag) {
			*q = slices.Delete(*q, i, i+1)
			return e, true
		}
	}
	return [2]int{}, false
}

// test is Test on the model: an active request takes matching notices,
// oldest first, until it has count of them.
func (m *modelReq) test(q *modelQueue) (st [2]int, done bool) {
	if !m.active {
		return m.last, true
	}
	for m.matched < m.count {
		e, ok := q.take(m.src, m.tag)
		if !ok {
			return [2]int{}, false
		}
		m.matched++
		m.last = e
	}
	m.active = false
	return m.last, true
}

// wouldComplete reports whether test would complete now.
func (m *modelReq) wouldComplete(q modelQueue) bool {
	c := slices.Clone(q)
	mm := *m
	_, done := mm.test((*modelQueue)(&c))
	return done
}

// TestNotifyMatchingModel compares matching with a reference model over
// random interleavings of notices arriving and NotifyInit, Start, Test,
// Wait and Free at the target. Each step's notices come from one origin and
// are confirmed before the next step, so the arrival order is known.
func TestNotifyMatchingModel(t *testing.T) {
	const nOrig, ntags = 3, 4
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	for _, m := range []mode{modeLock, modeLockAll} {
		for _, st := range strategies {
			t.Run(fmt.Sprintf("%v/%v", m, st), func(t *testing.T) {
				seed := int64(20240601 + 10*int(m) + int(st))
				run(t, nOrig+1, func(c *narma.Comm) error {
					ctx := c.Context()
					w, err := narma.Allocate[int64](ctx, c, nOrig+1, narma.WithStrategy(st))
					if err != nil {
						return err
					}
					if c.Rank() != 0 {
						if m == modeLock {
							err = w.Lock(ctx, narma.Shared, 0, 0)
						} else {
							err = w.LockAll(ctx, 0)
						}
						if err != nil {
							return err
						}
						sent := int64(0)
						data := []int64{0}
						err := serve(ctx, c, func(tags []int64) error {
							for _, tg := range tags {
								sent++
								var err error
								if sent%2 == 0 {
									data[0] = sent
									err = w.PutNotify(data, 0, c.Rank(), narma.Tag(int(tg)))
								} else {
									err = w.PutNotify(nil, 0, 0, narma.Tag(int(tg)))
								}
								if err != nil {
									return err
								}
							}
							return w.Flush(ctx, 0)
						})
						if err != nil {
							return err
						}
						if m == modeLock {
							err = w.Unlock(ctx, 0)
						} else {
							err = w.UnlockAll(ctx)
						}
						if err != nil {
							return err
						}
					} else {
						k := newChecks(c)
						if err := matchingModel(ctx, c, k, w, seed, steps, nOrig, ntags); err != nil {
							return err
						}
						if err := stopServing(ctx, c, 1, 2, 3); err != nil {
							return err
						}
						if err := k.err(); err != nil {
							return fmt.Errorf("seed %d: %w", seed, err)
						}
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					return w.Free(ctx)
				})
			})
		}
	}
}

func matchingModel(ctx context.Context, c *narma.Comm, k *checks, w *narma.Win[int64], seed int64, steps, nOrig, ntags int) error {
	rng := rand.New(rand.NewSource(seed))
	var q modelQueue
	var reqs []*modelReq
	pattern := func() (int, int) {
		src := narma.AnySource
		if rng.Intn(2) > 0 {
			src = 1 + rng.Intn(nOrig)
		}
		tag := narma.AnyTag
		if rng.Intn(2) > 0 {
			tag = rng.Intn(ntags)
		}
		return src, tag
	}
	for step := 0; step < steps && len(k.errs) == 0; step++ {
		p := rng.Intn(100)
		switch {
		case p < 12: // notices arrive from one origin
			o := 1 + rng.Intn(nOrig)
			tags := make([]int64, 1+rng.Intn(3))
			for i := range tags {
				tags[i] = int64(rng.Intn(ntags))
				q = append(q, [2]int{o, int(tags[i])})
			}
			if err := commandAck(ctx, c, o, tags...); err != nil {
				return err
			}
		case p < 23: // NotifyInit
			if len(reqs) >= 8 {
				continue
			}
			src, tag := pattern()
			n := 1 + rng.Intn(3)
			if rng.Intn(5) == 0 {
				n = 1 + rng.Intn(20) // a bulk request keeps the queue short
			}
			r, err := w.NotifyInit(src, tag, n)
			if err != nil {
				k.errorf("step %d: NotifyInit(%d, %d, %d): %v", step, src, tag, n, err)
				continue
			}
			reqs = append(reqs, &modelReq{r: r, src: src, tag: tag, count: n})
		case p < 48: // Start an inactive request
			if len(reqs) == 0 {
				continue
			}
			m := reqs[rng.Intn(len(reqs))]
			if m.active {
				continue
			}
			if err := m.r.Start(); err != nil {
				k.errorf("step %d: Start: %v", step, err)
			}
			m.active, m.matched = true, 0
		case p < 93: // Test, or Wait if the model says it completes
			if len(reqs) == 0 {
				continue
			}
			m := reqs[rng.Intn(len(reqs))]
			wasActive := m.active
			useWait := m.active && rng.Intn(4) == 0 && m.wouldComplete(q)
			want, wantDone := m.test(&q)
			var st narma.Status
			var done bool
			var err error
			if useWait {
				st, err = m.r.Wait(ctx)
				done = true
			} else {
				st, done, err = m.r.Test()
			}
			what := fmt.Sprintf("step %d: request (%d, %d, count %d)", step, m.src, m.tag, m.count)
			if err != nil {
				k.errorf("%s: %v", what, err)
				continue
			}
			if done != wantDone {
				k.errorf("%s: done %v, model %v (queue %v)", what, done, wantDone, q)
				continue
			}
			if done && wasActive {
				k.status(what, st, want[0], want[1])
			}
		default: // Free an inactive request
			if len(reqs) == 0 {
				continue
			}
			i := rng.Intn(len(reqs))
			if reqs[i].active {
				continue
			}
			if err := reqs[i].r.Free(); err != nil {
				k.errorf("step %d: Free: %v", step, err)
			}
			reqs = slices.Delete(reqs, i, i+1)
		}
	}
	if len(k.errs) > 0 {
		return nil
	}
	// Drain: the remaining notices come out in arrival order.
	r, err := w.NotifyInit(narma.AnySource, narma.AnyTag, 1)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		if err := r.Start(); err != nil {
			return err
		}
		st, done, err := r.Test()
		if err != nil {
			return err
		}
		if !done {
			break
		}
		if len(q) == 0 {
			k.errorf("drain: extra notice (%d, %d)", st.Source, st.Tag)
			break
		}
		k.status(fmt.Sprintf("drain #%d", i), st, q[0][0], q[0][1])
		q = q[1:]
	}
	if len(q) != 0 {
		k.errorf("drain: %d notices of the model never matched: %v", len(q), q)
	}
	return nil
}

// TestNotifyHotPathsAllocateNothing: in the steady state PutNotify (with
// each kind of notice), Start, Test, and Wait with a notice waiting
// allocate nothing.
func TestNotifyHotPathsAllocateNothing(t *testing.T) {
	skipOnAsync(t)
	if testing.Short() {
		t.Skip("allocation counts need a quiet run")
	}
	const runs = 100
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, 64, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 1); err != nil {
				return err
			}
			// Phase 1: rank 1 queues notices at rank 0, which measures
			// Start+Test and Start+Wait while rank 1 is idle.
			const queued = 3 * runs
			if c.Rank() == 1 {
				if err := w.LockAll(ctx, 0); err != nil {
					return err
				}
				src := []int64{1}
				for i := 0; i < queued; i++ {
					if err := w.PutNotify(src, 0, 1, narma.Tag(3)); err != nil {
						return err
					}
				}
				if err := w.UnlockAll(ctx); err != nil {
					return err
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if c.Rank() == 0 {
				r, err := w.NotifyInit(1, 3, 1)
				if err != nil {
					return err
				}
				var callErr error
				var done bool
				startTest := func() {
					if callErr = r.Start(); callErr == nil {
						_, done, callErr = r.Test()
					}
				}
				startTest() // warm up: the inbox is drained into the queue
				taken := 1
				allocs := testing.AllocsPerRun(runs, func() {
					startTest()
					if !done {
						callErr = fmt.Errorf("Test found no notice")
					}
				})
				taken += runs + 1
				k.ok("Start+Test", callErr)
				if allocs != 0 {
					k.errorf("Start+Test allocates %.1f times per call", allocs)
				}
				allocs = testing.AllocsPerRun(runs, func() {
					if callErr = r.Start(); callErr == nil {
						_, callErr = r.Wait(ctx)
					}
				})
				taken += runs + 1
				k.ok("Start+Wait", callErr)
				if allocs != 0 {
					k.errorf("Start+Wait with a notice waiting allocates %.1f times per call", allocs)
				}
				// Each call took exactly one notice.
				left := 0
				for {
					startTest()
					if callErr != nil || !done {
						break
					}
					left++
				}
				k.ok("drain", callErr)
				if left != queued-taken {
					k.errorf("%d notices left after %d were matched, want %d", left, taken, queued-taken)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			// Phase 2: rank 0 issues notified puts while rank 1 is idle:
			// each case runs once to warm up, once more in AllocsPerRun's
			// warm-up, then runs times.
			const calls = 1 + 1 + runs
			if c.Rank() == 0 {
				if err := w.LockAll(ctx, 0); err != nil {
					return err
				}
				self, err := w.NotifyInit(0, 4, 1)
				if err != nil {
					return err
				}
				src := []int64{7}
				var callErr error
				var done bool
				flush := func(t int) {
					if callErr == nil && st == narma.Deferred {
						callErr = w.Flush(ctx, t) // keep the deferred queue bounded
					}
				}
				cases := []struct {
					name string
					f    func()
				}{
					{"PutNotify Counter", func() { callErr = w.PutNotify(src, 1, 0, narma.Counter(0)); flush(1) }},
					{"PutNotify Signal", func() { callErr = w.PutNotify(src, 1, 1, narma.Signal(63, 1, narma.SignalAdd)); flush(1) }},
					{"PutNotify Tag+Start+Test", func() {
						callErr = w.PutNotify(src, 0, 2, narma.Tag(4))
						flush(0)
						if callErr == nil {
							callErr = self.Start()
						}
						if callErr == nil {
							_, done, callErr = self.Test()
							if callErr == nil && !done {
								callErr = fmt.Errorf("own notice not matched")
							}
						}
					}},
				}
				for _, cs := range cases {
					cs.f() // warm up
					allocs := testing.AllocsPerRun(runs, cs.f)
					k.ok(cs.name, callErr)
					if allocs != 0 {
						k.errorf("%s allocates %.1f times per call", cs.name, allocs)
					}
				}
				if err := w.UnlockAll(ctx); err != nil {
					return err
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if c.Rank() == 1 {
				if v, err := w.Counter(0); err != nil || v != uint64(calls) {
					k.errorf("counter %d, %v after %d counter notices", v, err, calls)
				}
				if v, err := w.Signal(63); err != nil || v != uint64(calls) {
					k.errorf("signal %d, %v after %d signal notices", v, err, calls)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestNotifyConcurrentArrivalOrder: notices from several origins arrive
// while the target matches them; each origin's notices are matched in the
// order it issued them, whichever pattern takes them. The tag of each
// notice is its sequence number at its origin.
func TestNotifyConcurrentArrivalOrder(t *testing.T) {
	const nOrig = 3
	per := 300
	if testing.Short() {
		per = 100
	}
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, nOrig+1, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, nOrig+1, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			var anyReq *narma.Request
			srcReq := make([]*narma.Request, nOrig+1)
			if c.Rank() == 0 {
				if anyReq, err = w.NotifyInit(narma.AnySource, narma.AnyTag, 1); err != nil {
					return err
				}
				for o := 1; o <= nOrig; o++ {
					if srcReq[o], err = w.NotifyInit(o, narma.AnyTag, 1); err != nil {
						return err
					}
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			consume := func() {
				rng := rand.New(rand.NewSource(5))
				next := make([]int, nOrig+1) // next sequence number of each origin
				for i := 0; i < nOrig*per && len(k.errs) == 0; i++ {
					r := anyReq
					if o := 1 + rng.Intn(nOrig); rng.Intn(2) == 0 && next[o] < per {
						r = srcReq[o]
					}
					if err := r.Start(); err != nil {
						k.errorf("Start: %v", err)
						return
					}
					st, err := r.Wait(ctx)
					if err != nil {
						k.errorf("Wait: %v", err)
						return
					}
					if st.Source < 1 || st.Source > nOrig || st.Tag != next[st.Source] {
						k.errorf("notice %d: (%d, %d), want the next of its origin (sequence %v)", i, st.Source, st.Tag, next)
						return
					}
					if r != anyReq && r != srcReq[st.Source] {
						k.errorf("notice %d: a request for another source matched (%d, %d)", i, st.Source, st.Tag)
					}
					next[st.Source]++
				}
				// Nothing else.
				if err := anyReq.Start(); err != nil {
					k.errorf("Start: %v", err)
				}
				if st, done, err := anyReq.Test(); done || err != nil {
					k.errorf("extra notice %+v (%v)", st, err)
				}
			}
			ep := allToOne(c, w, m, 0)
			if err := ep.begin(); err != nil {
				return err
			}
			if me := c.Rank(); me != 0 {
				for i := 0; i < per; i++ {
					if err := w.PutNotify([]int64{int64(i)}, 0, me, narma.Tag(i)); err != nil {
						return err
					}
					if i%16 == 0 {
						yield(1)
					}
				}
			} else if waitInside(m, st) {
				consume()
			}
			if err := ep.end(); err != nil {
				return err
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if c.Rank() == 0 && !waitInside(m, st) {
				consume()
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestNotifyQueuesPerWindow: each window has its own notices and counters:
// a notice to one window is matched only by requests of that window.
func TestNotifyQueuesPerWindow(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w1, err := narma.Allocate[int64](ctx, c, 2)
		if err != nil {
			return err
		}
		w2, err := narma.Allocate[int32](ctx, c, 4)
		if err != nil {
			return err
		}
		if err := w1.SetCounters(ctx, 1); err != nil {
			return err
		}
		if err := w2.SetCounters(ctx, 1); err != nil {
			return err
		}
		if c.Rank() == 1 {
			if err := w1.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w2.LockAll(ctx, 0); err != nil {
				return err
			}
			k.ok("w1 PutNotify", w1.PutNotify([]int64{11}, 0, 0, narma.Tag(1)))
			k.ok("w2 PutNotify", w2.PutNotify([]int32{22}, 0, 0, narma.Tag(2)))
			k.ok("w2 PutNotify", w2.PutNotify(nil, 0, 0, narma.Counter(0)))
			k.ok("w2 PutNotify", w2.PutNotify(nil, 0, 0, narma.Counter(0)))
			if err := w1.UnlockAll(ctx); err != nil {
				return err
			}
			if err := w2.UnlockAll(ctx); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			r1, err := w1.NotifyInit(narma.AnySource, narma.AnyTag, 1)
			if err != nil {
				return err
			}
			r2, err := w2.NotifyInit(narma.AnySource, narma.AnyTag, 1)
			if err != nil {
				return err
			}
			for i, r := range []*narma.Request{r1, r2} {
				k.ok("Start", r.Start())
				st, done, err := r.Test()
				if !done || err != nil {
					k.errorf("window %d: done %v, %v", i+1, done, err)
				}
				k.status(fmt.Sprintf("window %d", i+1), st, 1, i+1)
				k.ok("Start", r.Start())
				if st, done, err := r.Test(); done || err != nil {
					k.errorf("window %d: second notice %+v (%v)", i+1, st, err)
				}
			}
			if v, err := w1.Counter(0); err != nil || v != 0 {
				k.errorf("w1 counter %d, %v; the notices went to w2", v, err)
			}
			if v, err := w2.Counter(0); err != nil || v != 2 {
				k.errorf("w2 counter %d, %v; want 2", v, err)
			}
			if w1.Local()[0] != 11 || w2.Local()[0] != 22 {
				k.errorf("data %d, %d", w1.Local()[0], w2.Local()[0])
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := w2.Free(ctx); err != nil {
			return err
		}
		if err := w1.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}

// TestNotifyStartWhileActiveLosesNothing: Start on a request that is still
// active, with some of its count matched, either is refused or keeps the
// notices it matched; it never drops them (no notice is ever lost).
func TestNotifyStartWhileActiveLosesNothing(t *testing.T) {
	run(t, 1, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		notify := func(n int) error {
			for i := 0; i < n; i++ {
				if err := w.PutNotify(nil, 0, 0, narma.Tag(1)); err != nil {
					return err
				}
			}
			return w.Flush(ctx, 0)
		}
		r, err := w.NotifyInit(0, 1, 3)
		if err != nil {
			return err
		}
		k.ok("Start", r.Start())
		if err := notify(2); err != nil {
			return err
		}
		if _, done, err := r.Test(); done || err != nil {
			k.errorf("count 3 with 2 notices: done %v, %v", done, err)
		}
		startErr := r.Start() // active, 2 of 3 matched
		if err := notify(1); err != nil {
			return err
		}
		if _, done, err := r.Test(); !done || err != nil {
			k.errorf("3 notices for a count-3 request, but it is not complete (done %v, %v): Start on the active request (which returned %v) dropped the 2 it had matched", done, err, startErr)
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}
