package narma_test

// Semantics of the data-movement calls, table-driven over the four
// synchronization modes and both strategies: atomicity of the accumulate
// family (exact sums, unique tickets, a CAS mutex), strided layouts,
// zero-element operations, self access, GetAccumulate with NoOp and
// Replace, request-based operations, displacement units, and agreement of
// the immediate and deferred strategies with a sequential model.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// TestAccumulateSumExact: n ranks each accumulate into one counter m times;
// the total is exact.
func TestAccumulateSumExact(t *testing.T) {
	const n, m, perEpoch = 4, 100, 8
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			w, err := narma.Allocate[int64](ctx, c, 2, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			e := allToOne(c, w, md, 0)
			me := int64(c.Rank() + 1)
			for i := 0; i < m; {
				if err := e.begin(); err != nil {
					return err
				}
				for j := 0; j < perEpoch && i < m; j, i = j+1, i+1 {
					// [0] += rank+1, [1] += 1: one two-element accumulate.
					if err := w.Accumulate([]int64{me, 1}, 0, 0, narma.Sum); err != nil {
						return err
					}
				}
				if err := e.end(); err != nil {
					return err
				}
			}
			if err := e.finish(); err != nil {
				return err
			}
			err = barrierThen(c, func() error {
				if c.Rank() != 0 {
					return nil
				}
				loc := w.Local()
				if want := int64(m * n * (n + 1) / 2); loc[0] != want {
					return fmt.Errorf("sum counter = %d, want %d", loc[0], want)
				}
				if want := int64(n * m); loc[1] != want {
					return fmt.Errorf("count counter = %d, want %d", loc[1], want)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestFetchAndOpTickets: FetchAndOp(Sum) hands out unique tickets: the
// tickets of all ranks are a permutation of 0..n*m-1.
func TestFetchAndOpTickets(t *testing.T) {
	const n, m, perEpoch = 4, 64, 8
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			w, err := narma.Allocate[int64](ctx, c, 1, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			tickets := make([]int64, m)
			for i := range tickets {
				tickets[i] = -1
			}
			e := allToOne(c, w, md, 0)
			if md == modeLockAll {
				// One LockAll epoch; each ticket is read after a Flush.
				if err := e.begin(); err != nil {
					return err
				}
				for i := range tickets {
					if err := w.FetchAndOp(1, &tickets[i], 0, 0, narma.Sum); err != nil {
						return err
					}
					if err := w.Flush(ctx, 0); err != nil {
						return err
					}
					if tk := tickets[i]; tk < 0 || tk >= n*m {
						return fmt.Errorf("ticket %d after Flush: %d, want in [0,%d)", i, tk, n*m)
					}
				}
				if err := e.end(); err != nil {
					return err
				}
			} else {
				// Epochs of perEpoch tickets; read after the closing call
				// (Unlock in lock mode).
				for i := 0; i < m; {
					if err := e.begin(); err != nil {
						return err
					}
					first := i
					for j := 0; j < perEpoch && i < m; j, i = j+1, i+1 {
						if err := w.FetchAndOp(1, &tickets[i], 0, 0, narma.Sum); err != nil {
							return err
						}
					}
					if err := e.end(); err != nil {
						return err
					}
					for k := first; k < i; k++ {
						if tk := tickets[k]; tk < 0 || tk >= n*m {
							return fmt.Errorf("ticket %d after closing the epoch: %d, want in [0,%d)", k, tk, n*m)
						}
					}
				}
				if err := e.finish(); err != nil {
					return err
				}
			}
			all := make([]int64, n*m)
			if err := narma.Allgather(ctx, c, tickets, all); err != nil {
				return err
			}
			slices.Sort(all)
			for i, v := range all {
				if v != int64(i) {
					return fmt.Errorf("tickets are not a permutation of 0..%d: sorted[%d] = %d (all %v)", n*m-1, i, v, all)
				}
			}
			err = barrierThen(c, func() error {
				if c.Rank() == 0 && w.Local()[0] != n*m {
					return fmt.Errorf("ticket counter = %d, want %d", w.Local()[0], n*m)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestCompareAndSwapMutex: CompareAndSwap builds a working mutex around a
// non-atomic read-modify-write of a counter at rank 0; the final count is
// exact. In the passive modes the lock word is spun on under one lock epoch
// with Flush; in fence and PSCW modes every attempt is an epoch, and
// exactly one rank must win each round.
func TestCompareAndSwapMutex(t *testing.T) {
	const n, m = 4, 12
	const lockIdx, cntIdx = 0, 1
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			w, err := narma.Allocate[int64](ctx, c, 2, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			me := int64(c.Rank() + 1)
			if md.passive() {
				err = casMutexPassive(ctx, w, md, me, m, lockIdx, cntIdx)
			} else {
				err = casMutexActive(c, w, md, me, m, lockIdx, cntIdx)
			}
			if err != nil {
				return err
			}
			err = barrierThen(c, func() error {
				if c.Rank() != 0 {
					return nil
				}
				if got := w.Local()[cntIdx]; got != n*m {
					return fmt.Errorf("counter protected by the CAS mutex = %d, want %d", got, n*m)
				}
				if got := w.Local()[lockIdx]; got != 0 {
					return fmt.Errorf("lock word = %d after every rank released it, want 0", got)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

func casMutexPassive(ctx context.Context, w *narma.Win[int64], md mode, me int64, m, lockIdx, cntIdx int) error {
	if md == modeLock {
		if err := w.Lock(ctx, narma.Shared, 0, 0); err != nil {
			return err
		}
	} else if err := w.LockAll(ctx, 0); err != nil {
		return err
	}
	cnt := make([]int64, 1)
	for i := 0; i < m; i++ {
		for spins := 0; ; spins++ {
			res := int64(-1)
			if err := w.CompareAndSwap(0, me, &res, 0, lockIdx); err != nil {
				return err
			}
			if err := w.Flush(ctx, 0); err != nil {
				return err
			}
			if res == 0 {
				break
			}
			if res < 1 || res > 64 {
				return fmt.Errorf("CAS on the lock word returned %d, not 0 or a rank+1", res)
			}
			if res == me {
				return fmt.Errorf("lock word holds our own id %d while we do not hold the lock", me)
			}
			if spins > 1_000_000 {
				return fmt.Errorf("mutex never acquired")
			}
			yield(2)
		}
		// Critical section: non-atomic read-modify-write.
		if err := w.Get(cnt, 0, cntIdx); err != nil {
			return err
		}
		if err := w.Flush(ctx, 0); err != nil {
			return err
		}
		v := cnt[0]
		yield(3)
		if err := w.Put([]int64{v + 1}, 0, cntIdx); err != nil {
			return err
		}
		if err := w.Flush(ctx, 0); err != nil {
			return err
		}
		rel := int64(-1)
		if err := w.CompareAndSwap(me, 0, &rel, 0, lockIdx); err != nil {
			return err
		}
		if err := w.Flush(ctx, 0); err != nil {
			return err
		}
		if rel != me {
			return fmt.Errorf("releasing the mutex: lock word was %d, want our id %d", rel, me)
		}
	}
	if md == modeLock {
		return w.Unlock(ctx, 0)
	}
	return w.UnlockAll(ctx)
}

func casMutexActive(c *narma.Comm, w *narma.Win[int64], md mode, me int64, m, lockIdx, cntIdx int) error {
	ctx := c.Context()
	e := allToOne(c, w, md, 0)
	remaining := m
	cnt := make([]int64, 1)
	for round := 0; ; round++ {
		want := []int64{0}
		if remaining > 0 {
			want[0] = 1
		}
		tot := []int64{0}
		if err := narma.Allreduce(ctx, c, want, tot, narma.Sum); err != nil {
			return err
		}
		if tot[0] == 0 {
			break
		}
		if round > 10*c.Size()*m {
			return fmt.Errorf("mutex: %d rounds without finishing", round)
		}
		// Attempt: CAS 0 -> me.
		res := int64(-1)
		if err := e.begin(); err != nil {
			return err
		}
		if remaining > 0 {
			if err := w.CompareAndSwap(0, me, &res, 0, lockIdx); err != nil {
				return err
			}
		}
		if err := e.end(); err != nil {
			return err
		}
		won := remaining > 0 && res == 0
		if remaining > 0 && !won && (res < 1 || res > int64(c.Size())) {
			return fmt.Errorf("round %d: CAS on the lock word returned %d", round, res)
		}
		// Critical section, read.
		if err := e.begin(); err != nil {
			return err
		}
		if won {
			if err := w.Get(cnt, 0, cntIdx); err != nil {
				return err
			}
		}
		if err := e.end(); err != nil {
			return err
		}
		// Critical section, write, and release.
		rel := int64(-1)
		if err := e.begin(); err != nil {
			return err
		}
		if won {
			if err := w.Put([]int64{cnt[0] + 1}, 0, cntIdx); err != nil {
				return err
			}
			if err := w.CompareAndSwap(me, 0, &rel, 0, lockIdx); err != nil {
				return err
			}
		}
		if err := e.end(); err != nil {
			return err
		}
		if won {
			if rel != me {
				return fmt.Errorf("round %d: releasing the mutex: lock word was %d, want %d", round, rel, me)
			}
			remaining--
		}
		wonN := []int64{0}
		winners := []int64{0}
		if won {
			wonN[0] = 1
		}
		if err := narma.Allreduce(ctx, c, wonN, winners, narma.Sum); err != nil {
			return err
		}
		if winners[0] != 1 {
			return fmt.Errorf("round %d: %d ranks acquired the mutex, want exactly 1", round, winners[0])
		}
	}
	return e.finish()
}

// TestExclusiveLockNeverOverlaps: an exclusive lock never overlaps another
// exclusive or a shared holder. Exclusive holders count themselves in,
// write their marker, flush, yield, and check the marker is still theirs
// and that no shared holder is in; shared holders (Lock(Shared) or
// LockAll) count themselves in and check that no exclusive holder and no
// marker appear during their epoch. The race detector sees any overlap of
// the plain Put and Get of the marker as well.
func TestExclusiveLockNeverOverlaps(t *testing.T) {
	const n, iters = 5, 50
	const marker, shared, excl = 0, 1, 2
	for _, sharedMode := range []mode{modeLock, modeLockAll} {
		forStrategies(t, func(t *testing.T, st narma.Strategy) {
			t.Run("shared-via-"+sharedMode.String(), func(t *testing.T) {
				run(t, n, func(c *narma.Comm) error {
					ctx := c.Context()
					w, err := narma.Allocate[int64](ctx, c, 3, narma.WithStrategy(st))
					if err != nil {
						return err
					}
					me := int64(c.Rank() + 1)
					buf := make([]int64, 1)
					flushGet := func(disp int) (int64, error) {
						var v int64 = -1
						if err := w.FetchAndOp(0, &v, 0, disp, narma.NoOp); err != nil {
							return 0, err
						}
						if err := w.Flush(ctx, 0); err != nil {
							return 0, err
						}
						return v, nil
					}
					for it := 0; it < iters; it++ {
						exclusive := (it+c.Rank())%2 == 0
						if exclusive {
							if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
								return err
							}
							var prev int64 = -1
							if err := w.FetchAndOp(1, &prev, 0, excl, narma.Sum); err != nil {
								return err
							}
							if err := w.Flush(ctx, 0); err != nil {
								return err
							}
							if prev != 0 {
								return fmt.Errorf("iteration %d: %d other exclusive holders inside our exclusive epoch", it, prev)
							}
							if s, err := flushGet(shared); err != nil {
								return err
							} else if s != 0 {
								return fmt.Errorf("iteration %d: %d shared holders inside our exclusive epoch", it, s)
							}
							if err := w.Put([]int64{me}, 0, marker); err != nil {
								return err
							}
							if err := w.Flush(ctx, 0); err != nil {
								return err
							}
							yield(20)
							buf[0] = -1
							if err := w.Get(buf, 0, marker); err != nil {
								return err
							}
							if err := w.Flush(ctx, 0); err != nil {
								return err
							}
							if buf[0] != me {
								return fmt.Errorf("iteration %d: marker changed to %d inside our exclusive epoch (ours %d)", it, buf[0], me)
							}
							if s, err := flushGet(shared); err != nil {
								return err
							} else if s != 0 {
								return fmt.Errorf("iteration %d: %d shared holders entered our exclusive epoch", it, s)
							}
							if err := w.Put([]int64{0}, 0, marker); err != nil {
								return err
							}
							if err := w.Accumulate([]int64{-1}, 0, excl, narma.Sum); err != nil {
								return err
							}
							if err := w.Unlock(ctx, 0); err != nil {
								return err
							}
							continue
						}
						if sharedMode == modeLock {
							if err := w.Lock(ctx, narma.Shared, 0, 0); err != nil {
								return err
							}
						} else if err := w.LockAll(ctx, 0); err != nil {
							return err
						}
						if err := w.Accumulate([]int64{1}, 0, shared, narma.Sum); err != nil {
							return err
						}
						for k := 0; k < 2; k++ {
							if x, err := flushGet(excl); err != nil {
								return err
							} else if x != 0 {
								return fmt.Errorf("iteration %d: %d exclusive holders inside our shared epoch", it, x)
							}
							buf[0] = -1
							if err := w.Get(buf, 0, marker); err != nil {
								return err
							}
							if err := w.Flush(ctx, 0); err != nil {
								return err
							}
							if buf[0] != 0 {
								return fmt.Errorf("iteration %d: exclusive marker %d visible inside our shared epoch", it, buf[0])
							}
							yield(10)
						}
						if err := w.Accumulate([]int64{-1}, 0, shared, narma.Sum); err != nil {
							return err
						}
						if sharedMode == modeLock {
							err = w.Unlock(ctx, 0)
						} else {
							err = w.UnlockAll(ctx)
						}
						if err != nil {
							return err
						}
					}
					err = barrierThen(c, func() error {
						if c.Rank() == 0 && !slices.Equal(w.Local(), []int64{0, 0, 0}) {
							return fmt.Errorf("after all epochs the window is %v, want [0 0 0]", w.Local())
						}
						return nil
					})
					if err != nil {
						return err
					}
					return w.Free(ctx)
				})
			})
		})
	}
}

// TestFenceVisibility: data put (and got) before the closing fence is
// visible after it on every rank, round after round.
func TestFenceVisibility(t *testing.T) {
	const n, rounds = 4, 6
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			// [0,n): one slot per origin, written by puts; [n,2n): published
			// by the owner before the epoch, read by gets.
			w, err := narma.Allocate[int64](ctx, c, 2*n, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			put := func(r, origin, target int) int64 { return int64(r*10000 + origin*100 + target + 1) }
			pub := func(r, owner, i int) int64 { return int64(-(r*10000 + owner*100 + i + 1)) }
			got := make([]int64, n*n)
			for r := 0; r < rounds; r++ {
				for i := 0; i < n; i++ {
					w.Local()[n+i] = pub(r, me, i)
				}
				assert := narma.Assert(0)
				if r == 0 {
					assert = narma.NoPrecede
				}
				if err := w.Fence(ctx, assert); err != nil {
					return err
				}
				for tg := 0; tg < n; tg++ {
					if err := w.Put([]int64{put(r, me, tg)}, tg, me); err != nil {
						return err
					}
					if err := w.Get(got[tg*n:(tg+1)*n], tg, n); err != nil {
						return err
					}
				}
				assert = 0
				if r == rounds-1 {
					assert = narma.NoSucceed
				}
				if err := w.Fence(ctx, assert); err != nil {
					return err
				}
				for o := 0; o < n; o++ {
					if v := w.Local()[o]; v != put(r, o, me) {
						return fmt.Errorf("round %d: slot of origin %d = %d after the closing fence, want %d", r, o, v, put(r, o, me))
					}
				}
				for tg := 0; tg < n; tg++ {
					for i := 0; i < n; i++ {
						if v := got[tg*n+i]; v != pub(r, tg, i) {
							return fmt.Errorf("round %d: got[%d] from rank %d = %d after the closing fence, want %d", r, i, tg, v, pub(r, tg, i))
						}
					}
				}
			}
			return w.Free(ctx)
		})
	})
}

// TestPSCWWaitAfterAllCompletes: a target's Wait does not return before
// every origin of its post group completed, and Test reports false while
// an origin has not. Origins are held back (by a message from the target)
// until after the target's first Test, then put two values each with
// yields in between.
func TestPSCWWaitAfterAllCompletes(t *testing.T) {
	const n = 4
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			w, err := narma.Allocate[int64](ctx, c, 2*n, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			val := func(round, origin, k int) int64 { return int64(round*1000 + origin*10 + k + 1) }
			for round := 0; round < 2*n; round++ {
				target := round % n
				if me == target {
					var origins []int
					for r := 0; r < n; r++ {
						if r != me {
							origins = append(origins, r)
						}
					}
					if err := w.Post(origins, 0); err != nil {
						return err
					}
					done, err := w.Test()
					if err != nil {
						return err
					}
					if done {
						return fmt.Errorf("round %d: Test reported the exposure epoch over before any origin completed", round)
					}
					for _, o := range origins {
						if err := c.Send(ctx, nil, o, 1); err != nil {
							return err
						}
					}
					if round < n {
						if err := w.Wait(ctx); err != nil {
							return err
						}
					} else {
						for {
							done, err := w.Test()
							if err != nil {
								return err
							}
							if done {
								break
							}
							yield(1)
						}
					}
					for _, o := range origins {
						for k := 0; k < 2; k++ {
							if v := w.Local()[2*o+k]; v != val(round, o, k) {
								return fmt.Errorf("round %d: after the exposure epoch ended, value %d of origin %d = %d, want %d", round, k, o, v, val(round, o, k))
							}
						}
					}
				} else {
					if err := w.Start(ctx, []int{target}, 0); err != nil {
						return err
					}
					if _, err := c.Recv(ctx, nil, target, 1); err != nil {
						return err
					}
					if err := w.Put([]int64{val(round, me, 0)}, target, 2*me); err != nil {
						return err
					}
					yield(10 * (me + 1))
					if err := w.Put([]int64{val(round, me, 1)}, target, 2*me+1); err != nil {
						return err
					}
					if err := w.Complete(ctx); err != nil {
						return err
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
			}
			return w.Free(ctx)
		})
	})
}

// ropKind is a kind of randomly generated RMA operation.
type ropKind int

const (
	ropPut ropKind = iota
	ropSum
	ropMax
	ropPutStrided
)

type rop struct {
	kind   ropKind
	target int
	disp   int
	vals   []int64
}

// Window layout of TestDeferredMatchesImmediate: slotsPer put slots per
// origin, then a SUM region and a MAX region shared by all origins.
const (
	slotsPer = 4
	sumLen   = 6
	maxLen   = 4
)

func randWinLen(n int) int { return n*slotsPer + sumLen + maxLen }

// genOps returns the operations origin issues in epoch ep: puts to its own
// slots (each slot at most once per epoch and target, so puts never
// conflict), and SUM and MAX accumulates anywhere in their regions.
func genOps(seed uint64, ep, origin, n, k int) []rop {
	rng := rand.New(rand.NewPCG(seed, uint64(ep*1024+origin)))
	used := make([][]bool, n)
	for i := range used {
		used[i] = make([]bool, slotsPer)
	}
	var ops []rop
	for len(ops) < k {
		t := rng.IntN(n)
		switch ropKind(rng.IntN(4)) {
		case ropPut:
			j := rng.IntN(slotsPer)
			if used[t][j] {
				continue
			}
			used[t][j] = true
			vals := []int64{rng.Int64N(1 << 40)}
			if j+1 < slotsPer && !used[t][j+1] && rng.IntN(2) == 0 {
				used[t][j+1] = true
				vals = append(vals, rng.Int64N(1<<40))
			}
			ops = append(ops, rop{ropPut, t, origin*slotsPer + j, vals})
		case ropPutStrided:
			// Slots j and j+2 of the origin's slots, with one strided put.
			j := rng.IntN(slotsPer - 2)
			if used[t][j] || used[t][j+2] {
				continue
			}
			used[t][j], used[t][j+2] = true, true
			ops = append(ops, rop{ropPutStrided, t, origin*slotsPer + j, []int64{rng.Int64N(1 << 40), rng.Int64N(1 << 40)}})
		case ropSum:
			a := rng.IntN(sumLen)
			l := 1 + rng.IntN(min(3, sumLen-a))
			vals := make([]int64, l)
			for i := range vals {
				vals[i] = rng.Int64N(2001) - 1000
			}
			ops = append(ops, rop{ropSum, t, n*slotsPer + a, vals})
		case ropMax:
			b := rng.IntN(maxLen)
			ops = append(ops, rop{ropMax, t, n*slotsPer + sumLen + b, []int64{rng.Int64N(1 << 30)}})
		}
	}
	return ops
}

func (o rop) issue(w *narma.Win[int64]) error {
	switch o.kind {
	case ropPut:
		return w.Put(o.vals, o.target, o.disp)
	case ropPutStrided:
		return w.PutStrided(o.vals, narma.Contiguous, o.target, o.disp, narma.Vector(2, 1, 2))
	case ropSum:
		return w.Accumulate(o.vals, o.target, o.disp, narma.Sum)
	case ropMax:
		return w.Accumulate(o.vals, o.target, o.disp, narma.Max)
	}
	return fmt.Errorf("bad op kind %d", o.kind)
}

// apply applies o to the model window of its target.
func (o rop) apply(win []int64) {
	switch o.kind {
	case ropPut:
		copy(win[o.disp:], o.vals)
	case ropPutStrided:
		win[o.disp], win[o.disp+2] = o.vals[0], o.vals[1]
	case ropSum:
		for i, v := range o.vals {
			win[o.disp+i] += v
		}
	case ropMax:
		for i, v := range o.vals {
			win[o.disp+i] = max(win[o.disp+i], v)
		}
	}
}

// TestDeferredMatchesImmediate: the same seeded random sequence of puts and
// accumulates, issued on an Immediate and on a Deferred window in every
// mode, leaves identical windows, equal to a sequential model.
func TestDeferredMatchesImmediate(t *testing.T) {
	const n, epochs, perEpoch = 4, 8, 16
	for _, md := range modes {
		for _, seed := range []uint64{1, 7, 2026} {
			t.Run(fmt.Sprintf("%v/seed%d", md, seed), func(t *testing.T) {
				run(t, n, func(c *narma.Comm) error {
					ctx := c.Context()
					me := c.Rank()
					size := randWinLen(n)
					wi, err := narma.Allocate[int64](ctx, c, size, narma.WithStrategy(narma.Immediate))
					if err != nil {
						return err
					}
					wd, err := narma.Allocate[int64](ctx, c, size, narma.WithStrategy(narma.Deferred))
					if err != nil {
						return err
					}
					model := make([]int64, size)
					ei, ed := allToAll(c, wi, md), allToAll(c, wd, md)
					for ep := 0; ep < epochs; ep++ {
						for o := 0; o < n; o++ {
							for _, op := range genOps(seed, ep, o, n, perEpoch) {
								if op.target == me {
									op.apply(model)
								}
							}
						}
						ops := genOps(seed, ep, me, n, perEpoch)
						for _, x := range []struct {
							e *epoch[int64]
							w *narma.Win[int64]
						}{{ei, wi}, {ed, wd}} {
							if err := x.e.begin(); err != nil {
								return err
							}
							for _, op := range ops {
								if err := op.issue(x.w); err != nil {
									return fmt.Errorf("epoch %d, %v window: %+v: %w", ep, x.w.Strategy(), op, err)
								}
							}
							if err := x.e.end(); err != nil {
								return err
							}
						}
					}
					for _, e := range []*epoch[int64]{ei, ed} {
						if err := e.finish(); err != nil {
							return err
						}
					}
					err = barrierThen(c, func() error {
						if !slices.Equal(wi.Local(), wd.Local()) {
							return fmt.Errorf("immediate window %v != deferred window %v", wi.Local(), wd.Local())
						}
						if !slices.Equal(wi.Local(), model) {
							return fmt.Errorf("windows %v != sequential model %v", wi.Local(), model)
						}
						return nil
					})
					if err != nil {
						return err
					}
					if err := wi.Free(ctx); err != nil {
						return err
					}
					return wd.Free(ctx)
				})
			})
		}
	}
}

// TestVectorLayouts: columns of row-major matrices, strided at the origin,
// at the target, or both (PutStrided, GetStrided, AccumulateStrided with
// narma.Vector(rows, 1, cols)), and blocks of different lengths on the two
// sides.
func TestVectorLayouts(t *testing.T) {
	const n, rows, cols = 4, 4, 6
	col := narma.Vector(rows, 1, cols)
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			w, err := allocPattern(c, rows*cols, st)
			if err != nil {
				return err
			}
			srcVal := func(r, i, j int) int64 { return int64(500000 + r*1000 + i*cols + j) }
			src := make([]int64, rows*cols)
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					src[i*cols+j] = srcVal(me, i, j)
				}
			}
			srcCopy := slices.Clone(src)
			vec := make([]int64, rows) // contiguous column for target-only striding
			for i := range vec {
				vec[i] = int64(700000 + me*10 + i)
			}
			// Blocks of 2 at the origin (stride 3), a column at the target.
			mixed := []int64{
				int64(800000 + me*10 + 0), int64(800000 + me*10 + 1), -5,
				int64(800000 + me*10 + 2), int64(800000 + me*10 + 3),
			}
			dst := make([]int64, rows*cols)
			for i := range dst {
				dst[i] = -1
			}
			getVec := make([]int64, rows)

			targets := []int{left, me, right}
			slices.Sort(targets)
			targets = slices.Compact(targets)
			e := newEpoch(ctx, w, md, targets, targets)
			if err := e.begin(); err != nil {
				return err
			}
			// Column 1 of my source into column 1 of right's matrix.
			if err := w.PutStrided(src[1:], col, right, 1, col); err != nil {
				return err
			}
			// Column 0 of left's matrix into column 2 of dst.
			if err := w.GetStrided(dst[2:], col, left, 0, col); err != nil {
				return err
			}
			// Column 3 of my source added to column 3 at right and at me.
			if err := w.AccumulateStrided(src[3:], col, right, 3, col, narma.Sum); err != nil {
				return err
			}
			if err := w.AccumulateStrided(src[3:], col, me, 3, col, narma.Sum); err != nil {
				return err
			}
			// A contiguous vector into column 4 at right.
			if err := w.PutStrided(vec, narma.Contiguous, right, 4, col); err != nil {
				return err
			}
			// Column 0 of left's matrix into a contiguous vector.
			if err := w.GetStrided(getVec, narma.Contiguous, left, 0, col); err != nil {
				return err
			}
			// Two blocks of two at the origin into column 5 at right.
			if err := w.PutStrided(mixed, narma.Vector(2, 2, 3), right, 5, col); err != nil {
				return err
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			err = barrierThen(c, func() error {
				loc := w.Local()
				for i := 0; i < rows; i++ {
					want := []int64{
						pattern(me, i*cols+0),
						srcVal(left, i, 1),
						pattern(me, i*cols+2),
						pattern(me, i*cols+3) + srcVal(left, i, 3) + srcVal(me, i, 3),
						int64(700000 + left*10 + i),
						int64(800000 + left*10 + i),
					}
					if got := loc[i*cols : (i+1)*cols]; !slices.Equal(got, want) {
						return fmt.Errorf("window row %d = %v, want %v", i, got, want)
					}
					wantDst := []int64{-1, -1, pattern(left, i*cols), -1, -1, -1}
					if got := dst[i*cols : (i+1)*cols]; !slices.Equal(got, wantDst) {
						return fmt.Errorf("GetStrided destination row %d = %v, want %v", i, got, wantDst)
					}
					if getVec[i] != pattern(left, i*cols) {
						return fmt.Errorf("GetStrided into a contiguous vector: [%d] = %d, want %d", i, getVec[i], pattern(left, i*cols))
					}
				}
				if !slices.Equal(src, srcCopy) {
					return fmt.Errorf("origin matrix changed by puts: %v", src)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestZeroElementOperations: operations of zero elements succeed in every
// mode, even at the displacement one past the end, and change nothing.
func TestZeroElementOperations(t *testing.T) {
	const n, size = 3, 4
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := allocPattern(c, size, st)
			if err != nil {
				return err
			}
			untouched := []int64{-3, -3}
			e := allToAll(c, w, md)
			if err := e.begin(); err != nil {
				return err
			}
			for tg := 0; tg < n; tg++ {
				k.ok("Put(nil)", w.Put(nil, tg, 0))
				k.ok("Put(empty) at the end", w.Put([]int64{}, tg, size))
				k.ok("Get(empty)", w.Get(untouched[:0], tg, 2))
				k.ok("Accumulate(nil)", w.Accumulate(nil, tg, 1, narma.Sum))
				k.ok("GetAccumulate(NoOp, nil)", w.GetAccumulate(nil, nil, tg, 0, narma.NoOp))
				k.ok("GetAccumulate(Replace, empty)", w.GetAccumulate([]int64{}, untouched[:0], tg, 3, narma.Replace))
				k.ok("PutStrided(zero blocks)", w.PutStrided(untouched, narma.Vector(0, 1, 1), tg, 1, narma.Vector(0, 2, 5)))
				k.ok("GetStrided(empty blocks)", w.GetStrided(untouched, narma.Vector(2, 0, 1), tg, size, narma.Vector(0, 1, 1)))
				k.ok("AccumulateStrided(zero)", w.AccumulateStrided(untouched, narma.Vector(0, 1, 1), tg, 2, narma.Vector(0, 1, 1), narma.Sum))
				if md.passive() {
					r, err := w.Rput(nil, tg, 1)
					k.ok("Rput(nil)", err)
					if err == nil {
						_, err = r.Wait(ctx)
						k.ok("Wait of Rput(nil)", err)
						k.ok("Free of Rput(nil)", r.Free())
					}
					r, err = w.Rget(untouched[:0], tg, size)
					k.ok("Rget(empty)", err)
					if err == nil {
						_, err = r.Wait(ctx)
						k.ok("Wait of Rget(empty)", err)
					}
				}
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			if !slices.Equal(untouched, []int64{-3, -3}) {
				k.errorf("zero-element gets wrote their buffers: %v", untouched)
			}
			err = barrierThen(c, func() error { return checkPattern(w.Local(), c.Rank()) })
			if err != nil {
				k.errorf("%v", err)
			}
			if err := k.err(); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestSelfAccess: put, get, accumulate and the fetching atomics with the
// calling rank as target, in every mode.
func TestSelfAccess(t *testing.T) {
	const n = 3
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			w, err := allocPattern(c, 8, st)
			if err != nil {
				return err
			}
			e := newEpoch(ctx, w, md, []int{me}, []int{me})
			if md == modeLock {
				e.kind = narma.Exclusive
			}
			got := []int64{-1, -1}
			var res [1]int64
			var fetched, swapped int64 = -1, -1
			if err := e.begin(); err != nil {
				return err
			}
			steps := []error{
				w.Put([]int64{int64(-10 * (me + 1)), int64(-20 * (me + 1))}, me, 0),
				w.Get(got, me, 4),
				w.Accumulate([]int64{5}, me, 2, narma.Sum),
				w.GetAccumulate([]int64{99}, res[:], me, 3, narma.Replace),
				w.FetchAndOp(7, &fetched, me, 6, narma.Sum),
				w.CompareAndSwap(pattern(me, 7), 77, &swapped, me, 7),
			}
			k := newChecks(c)
			for i, err := range steps {
				k.ok(fmt.Sprintf("step %d to self", i), err)
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			want := []int64{int64(-10 * (me + 1)), int64(-20 * (me + 1)), pattern(me, 2) + 5, 99, pattern(me, 4), pattern(me, 5), pattern(me, 6) + 7, 77}
			if !slices.Equal(w.Local(), want) {
				k.errorf("window after self access = %v, want %v", w.Local(), want)
			}
			if !slices.Equal(got, []int64{pattern(me, 4), pattern(me, 5)}) {
				k.errorf("Get from self = %v, want %v", got, []int64{pattern(me, 4), pattern(me, 5)})
			}
			if res[0] != pattern(me, 3) || fetched != pattern(me, 6) || swapped != pattern(me, 7) {
				k.errorf("fetched from self: GetAccumulate %d, FetchAndOp %d, CompareAndSwap %d; want %d, %d, %d",
					res[0], fetched, swapped, pattern(me, 3), pattern(me, 6), pattern(me, 7))
			}
			if err := k.err(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestGetAccumulateNoOpReplace: GetAccumulate with NoOp is an atomic read
// (src nil, target unchanged); with Replace an atomic swap (result gets the
// old values, target the new ones); likewise FetchAndOp; CompareAndSwap
// swaps only on a match. Integer and float windows.
func TestGetAccumulateNoOpReplace(t *testing.T) {
	const n = 3
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			w, err := allocPattern(c, 12, st)
			if err != nil {
				return err
			}
			fw, err := narma.Allocate[float64](ctx, c, 4, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			for i := range fw.Local() {
				fw.Local()[i] = float64(me) + 0.25*float64(i)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			targets := []int{left, right}
			slices.Sort(targets)
			targets = slices.Compact(targets)
			e, fe := newEpoch(ctx, w, md, targets, targets), newEpoch(ctx, fw, md, targets, targets)
			read := []int64{-1, -1, -1}
			swap := []int64{-1, -1}
			var fNoOp, fRepl, casHit, casMiss int64 = -1, -1, -1, -1
			sumRes := []int64{-1}
			fread := []float64{-1, -1}
			fswap := []float64{-1}
			if err := e.begin(); err != nil {
				return err
			}
			if err := fe.begin(); err != nil {
				return err
			}
			steps := []error{
				w.GetAccumulate(nil, read, right, 0, narma.NoOp),
				w.GetAccumulate([]int64{-31, -32}, swap, right, 3, narma.Replace),
				w.FetchAndOp(12345, &fNoOp, right, 5, narma.NoOp),
				w.FetchAndOp(-42, &fRepl, right, 6, narma.Replace),
				w.GetAccumulate([]int64{1000}, sumRes, right, 7, narma.Sum),
				w.CompareAndSwap(pattern(right, 8), -88, &casHit, right, 8),
				w.CompareAndSwap(pattern(right, 9)+1, -99, &casMiss, right, 9),
				fw.GetAccumulate(nil, fread, right, 0, narma.NoOp),
				fw.GetAccumulate([]float64{-1.5}, fswap, right, 2, narma.Replace),
			}
			k := newChecks(c)
			for i, err := range steps {
				k.ok(fmt.Sprintf("step %d", i), err)
			}
			if err := fe.end(); err != nil {
				return err
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := fe.finish(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			if want := []int64{pattern(right, 0), pattern(right, 1), pattern(right, 2)}; !slices.Equal(read, want) {
				k.errorf("GetAccumulate(NoOp) result %v, want %v", read, want)
			}
			if want := []int64{pattern(right, 3), pattern(right, 4)}; !slices.Equal(swap, want) {
				k.errorf("GetAccumulate(Replace) result %v, want the old values %v", swap, want)
			}
			if fNoOp != pattern(right, 5) || fRepl != pattern(right, 6) {
				k.errorf("FetchAndOp NoOp/Replace results %d/%d, want %d/%d", fNoOp, fRepl, pattern(right, 5), pattern(right, 6))
			}
			if sumRes[0] != pattern(right, 7) {
				k.errorf("GetAccumulate(Sum) result %d, want %d", sumRes[0], pattern(right, 7))
			}
			if casHit != pattern(right, 8) || casMiss != pattern(right, 9) {
				k.errorf("CompareAndSwap results %d/%d, want %d/%d", casHit, casMiss, pattern(right, 8), pattern(right, 9))
			}
			if want := []float64{float64(right), float64(right) + 0.25}; !slices.Equal(fread, want) {
				k.errorf("float GetAccumulate(NoOp) result %v, want %v", fread, want)
			}
			if fswap[0] != float64(right)+0.5 {
				k.errorf("float GetAccumulate(Replace) result %v, want %v", fswap[0], float64(right)+0.5)
			}
			err = barrierThen(c, func() error {
				want := make([]int64, 12)
				fillPattern(want, me)
				want[3], want[4], want[6], want[7], want[8] = -31, -32, -42, pattern(me, 7)+1000, -88
				if !slices.Equal(w.Local(), want) {
					return fmt.Errorf("target window %v, want %v (NoOp and a failed CAS must not write)", w.Local(), want)
				}
				fwant := []float64{float64(me), float64(me) + 0.25, -1.5, float64(me) + 0.75}
				if !slices.Equal(fw.Local(), fwant) {
					return fmt.Errorf("float target window %v, want %v", fw.Local(), fwant)
				}
				return nil
			})
			if err != nil {
				k.errorf("%v", err)
			}
			if err := k.err(); err != nil {
				return err
			}
			if err := fw.Free(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestRequestBasedInLockEpochs: Rput, Rget, Raccumulate and
// RgetAccumulate in Lock and LockAll epochs; each request's Wait means the
// operation is complete (a later Rget sees an Rput's data).
func TestRequestBasedInLockEpochs(t *testing.T) {
	const n = 3
	for _, md := range []mode{modeLock, modeLockAll} {
		forStrategies(t, func(t *testing.T, st narma.Strategy) {
			t.Run(md.String(), func(t *testing.T) {
				run(t, n, func(c *narma.Comm) error {
					ctx := c.Context()
					me := c.Rank()
					right := (me + 1) % n
					w, err := allocPattern(c, 8, st)
					if err != nil {
						return err
					}
					e := newEpoch(ctx, w, md, []int{right}, nil)
					e.kind = narma.Exclusive
					if err := e.begin(); err != nil {
						return err
					}
					wait := func(what string, r *narma.Request, err error) error {
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
						if _, err := r.Wait(ctx); err != nil {
							return fmt.Errorf("%s: Wait: %w", what, err)
						}
						_, done, err := r.Test()
						if err != nil || !done {
							return fmt.Errorf("%s: Test after Wait = %v, %v; want true, nil", what, done, err)
						}
						return r.Free()
					}
					a, b := int64(-100*(me+1)), int64(-200*(me+1))
					r, err := w.Rput([]int64{a, b}, right, 0)
					if err := wait("Rput", r, err); err != nil {
						return err
					}
					got := []int64{-1, -1}
					r, err = w.Rget(got, right, 0)
					if err := wait("Rget", r, err); err != nil {
						return err
					}
					if !slices.Equal(got, []int64{a, b}) {
						return fmt.Errorf("Rget after a completed Rput = %v, want %v", got, []int64{a, b})
					}
					r, err = w.Raccumulate([]int64{5, 6}, right, 2, narma.Sum)
					if err := wait("Raccumulate", r, err); err != nil {
						return err
					}
					old := []int64{-1}
					r, err = w.RgetAccumulate([]int64{-9}, old, right, 4, narma.Replace)
					if err := wait("RgetAccumulate(Replace)", r, err); err != nil {
						return err
					}
					if old[0] != pattern(right, 4) {
						return fmt.Errorf("RgetAccumulate(Replace) result %d, want %d", old[0], pattern(right, 4))
					}
					cur := []int64{-1, -1}
					r, err = w.RgetAccumulate(nil, cur, right, 2, narma.NoOp)
					if err := wait("RgetAccumulate(NoOp)", r, err); err != nil {
						return err
					}
					if want := []int64{pattern(right, 2) + 5, pattern(right, 3) + 6}; !slices.Equal(cur, want) {
						return fmt.Errorf("RgetAccumulate(NoOp) after a completed Raccumulate = %v, want %v", cur, want)
					}
					if err := e.end(); err != nil {
						return err
					}
					err = barrierThen(c, func() error {
						left := (me + n - 1) % n
						want := make([]int64, 8)
						fillPattern(want, me)
						want[0], want[1], want[2], want[3], want[4] = int64(-100*(left+1)), int64(-200*(left+1)), pattern(me, 2)+5, pattern(me, 3)+6, -9
						if !slices.Equal(w.Local(), want) {
							return fmt.Errorf("target window %v, want %v", w.Local(), want)
						}
						return nil
					})
					if err != nil {
						return err
					}
					return w.Free(ctx)
				})
			})
		})
	}
}

// TestRequestBasedRefusedOutsideLockEpochs: request-based calls in a fence
// epoch, a PSCW epoch or no epoch fail with ErrEpoch and write nothing.
func TestRequestBasedRefusedOutsideLockEpochs(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			k := newChecks(c)
			w, err := allocPattern(c, 4, st)
			if err != nil {
				return err
			}
			got := []int64{-7, -7}
			try := func(where string) {
				r, err := w.Rput([]int64{-1, -1}, right, 0)
				k.is(where+": Rput", err, narma.ErrEpoch, "")
				if r != nil {
					k.errorf("%s: Rput returned a request with its error", where)
				}
				_, err = w.Rget(got, right, 0)
				k.is(where+": Rget", err, narma.ErrEpoch, "")
				_, err = w.Raccumulate([]int64{1}, right, 1, narma.Sum)
				k.is(where+": Raccumulate", err, narma.ErrEpoch, "")
				_, err = w.RgetAccumulate([]int64{1}, got[:1], right, 2, narma.Replace)
				k.is(where+": RgetAccumulate", err, narma.ErrEpoch, "")
			}
			try("no epoch")
			if err := w.Fence(ctx, 0); err != nil {
				return err
			}
			try("fence epoch")
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			if err := w.Post([]int{left}, 0); err != nil {
				return err
			}
			if err := w.Start(ctx, []int{right}, 0); err != nil {
				return err
			}
			try("PSCW epoch")
			if err := w.Complete(ctx); err != nil {
				return err
			}
			if err := w.Wait(ctx); err != nil {
				return err
			}
			if !slices.Equal(got, []int64{-7, -7}) {
				k.errorf("refused Rget/RgetAccumulate wrote their buffers: %v", got)
			}
			if err := barrierThen(c, func() error { return checkPattern(w.Local(), me) }); err != nil {
				k.errorf("%v", err)
			}
			if err := k.err(); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestDispUnit: displacements count units of WithDispUnit bytes; an atomic
// at a byte offset that is not a multiple of the element size is refused
// with ErrAlign and writes nothing.
func TestDispUnit(t *testing.T) {
	const n = 2
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right := (me + 1) % n
			k := newChecks(c)
			wb, err := narma.Allocate[int64](ctx, c, 4, narma.WithDispUnit(1), narma.WithStrategy(st))
			if err != nil {
				return err
			}
			w16, err := narma.Allocate[int64](ctx, c, 4, narma.WithDispUnit(16), narma.WithStrategy(st))
			if err != nil {
				return err
			}
			fillPattern(wb.Local(), me)
			fillPattern(w16.Local(), me)
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			for _, w := range []*narma.Win[int64]{wb, w16} {
				if err := w.Fence(ctx, 0); err != nil {
					return err
				}
			}
			var res int64 = -1
			k.ok("Put at byte 8", wb.Put([]int64{-1}, right, 8))
			k.ok("Accumulate at byte 24", wb.Accumulate([]int64{10}, right, 24, narma.Sum))
			k.is("FetchAndOp at byte 4", wb.FetchAndOp(1, &res, right, 4, narma.Sum), narma.ErrAlign, "FetchAndOp")
			k.is("Accumulate at byte 12", wb.Accumulate([]int64{1}, right, 12, narma.Sum), narma.ErrAlign, "Accumulate")
			k.is("Put at byte 25", wb.Put([]int64{1}, right, 25), narma.ErrBounds, "Put")
			k.ok("Put at unit 1 of 16 bytes", w16.Put([]int64{-2}, right, 1))
			k.is("Put at unit 2 of 16 bytes", w16.Put([]int64{1}, right, 2), narma.ErrBounds, "Put")
			for _, w := range []*narma.Win[int64]{wb, w16} {
				if err := w.Fence(ctx, narma.NoSucceed); err != nil {
					return err
				}
			}
			if res != -1 {
				k.errorf("refused FetchAndOp wrote its result: %d", res)
			}
			want := []int64{pattern(me, 0), -1, pattern(me, 2), pattern(me, 3) + 10}
			if !slices.Equal(wb.Local(), want) {
				k.errorf("byte-addressed window %v, want %v", wb.Local(), want)
			}
			want = []int64{pattern(me, 0), pattern(me, 1), -2, pattern(me, 3)}
			if !slices.Equal(w16.Local(), want) {
				k.errorf("16-byte-unit window %v, want %v", w16.Local(), want)
			}
			if err := k.err(); err != nil {
				return err
			}
			if err := wb.Free(ctx); err != nil {
				return err
			}
			return w16.Free(ctx)
		})
	})
}

// TestCreateOverAllocMem: a window created over AllocMem memory exposes
// that memory; the memory stays the caller's after Free and is released
// once by FreeMem. Windows of different sizes per rank are bounded per
// target.
func TestCreateOverAllocMem(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right := (me + 1) % n
			k := newChecks(c)
			// Rank r exposes r+2 elements.
			buf := narma.AllocMem[int64](me + 2)
			if len(buf) != me+2 {
				return fmt.Errorf("AllocMem(%d) returned %d elements", me+2, len(buf))
			}
			for i, v := range buf {
				if v != 0 {
					return fmt.Errorf("AllocMem memory not zeroed: [%d] = %d", i, v)
				}
			}
			fillPattern(buf, me)
			w, err := narma.Create(ctx, c, buf, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Fence(ctx, 0); err != nil {
				return err
			}
			last := right + 1 // the last element of right's window
			k.ok("Put to the last element", w.Put([]int64{-1}, right, last))
			k.is("Put one past the end", w.Put([]int64{-2}, right, last+1), narma.ErrBounds, "Put")
			k.is("Put two over the end", w.Put([]int64{-3, -3}, right, last), narma.ErrBounds, "Put")
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			want := make([]int64, me+2)
			fillPattern(want, me)
			want[me+1] = -1
			if !slices.Equal(buf, want) {
				k.errorf("created window memory %v, want %v", buf, want)
			}
			if &w.Local()[0] != &buf[0] {
				k.errorf("Local() of a created window is not the caller's buffer")
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			if !slices.Equal(buf, want) {
				k.errorf("memory of a created window changed by Free: %v", buf)
			}
			k.ok("FreeMem", narma.FreeMem(buf))
			k.is("FreeMem twice", narma.FreeMem(buf), narma.ErrNotAllocated, "")
			k.is("FreeMem of Go memory", narma.FreeMem(make([]int64, 3)), narma.ErrNotAllocated, "")
			return k.err()
		})
	})
}

// TestPSCWNoCheckAndAsserts: Post and Start with NoCheck, and fences with
// NoStore and NoPut, still synchronize correctly.
func TestPSCWNoCheckAndAsserts(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			w, err := allocPattern(c, 2, st)
			if err != nil {
				return err
			}
			if err := w.Post([]int{left}, narma.NoCheck); err != nil {
				return err
			}
			// NoCheck on Start promises the matching Post has happened.
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Start(ctx, []int{right}, narma.NoCheck); err != nil {
				return err
			}
			if err := w.Put([]int64{int64(-me - 1)}, right, 0); err != nil {
				return err
			}
			if err := w.Complete(ctx); err != nil {
				return err
			}
			if err := w.Wait(ctx); err != nil {
				return err
			}
			if got := w.Local()[0]; got != int64(-left-1) {
				return fmt.Errorf("after NoCheck PSCW: [0] = %d, want %d", got, -left-1)
			}
			if err := w.Fence(ctx, narma.NoPrecede|narma.NoStore); err != nil {
				return err
			}
			if err := w.Put([]int64{int64(-me - 10)}, right, 1); err != nil {
				return err
			}
			if err := w.Fence(ctx, narma.NoSucceed|narma.NoPut|narma.NoStore); err != nil {
				return err
			}
			if got := w.Local()[1]; got != int64(-left-10) {
				return fmt.Errorf("after fences with asserts: [1] = %d, want %d", got, -left-10)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestSubWordAccumulate: accumulates on 1-, 2- and 4-byte elements are
// atomic per element and do not disturb their neighbours in the same
// machine word, while every rank updates its own element concurrently.
func TestSubWordAccumulate(t *testing.T) {
	const n, m = 4, 40
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			w8, err := narma.Allocate[int8](ctx, c, 2*n, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			w16, err := narma.Allocate[uint16](ctx, c, n, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			w32, err := narma.Allocate[float32](ctx, c, n, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			for i := range w16.Local() {
				w16.Local()[i] = 0xffff
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			e8, e16, e32 := allToOne(c, w8, md, 0), allToOne(c, w16, md, 0), allToOne(c, w32, md, 0)
			var old8 int8
			for i := 0; i < m; i++ {
				if err := e8.begin(); err != nil {
					return err
				}
				if err := e16.begin(); err != nil {
					return err
				}
				if err := e32.begin(); err != nil {
					return err
				}
				// Element me: +1; element n+me: -1 then a fetch-and-add of +2.
				if err := w8.Accumulate([]int8{1}, 0, me, narma.Sum); err != nil {
					return err
				}
				if err := w8.Accumulate([]int8{-1}, 0, n+me, narma.Sum); err != nil {
					return err
				}
				if err := w8.FetchAndOp(2, &old8, 0, n+me, narma.Sum); err != nil {
					return err
				}
				// Toggle bit i%16 of our element.
				if err := w16.Accumulate([]uint16{1 << (i % 16)}, 0, me, narma.Bxor); err != nil {
					return err
				}
				if err := w32.Accumulate([]float32{0.5}, 0, me, narma.Sum); err != nil {
					return err
				}
				if err := e32.end(); err != nil {
					return err
				}
				if err := e16.end(); err != nil {
					return err
				}
				if err := e8.end(); err != nil {
					return err
				}
			}
			for _, f := range []func() error{e8.finish, e16.finish, e32.finish} {
				if err := f(); err != nil {
					return err
				}
			}
			err = barrierThen(c, func() error {
				if me != 0 {
					return nil
				}
				var want16 uint16 = 0xffff
				for i := 0; i < m; i++ {
					want16 ^= 1 << (i % 16)
				}
				for r := 0; r < n; r++ {
					if got := w8.Local()[r]; got != m {
						return fmt.Errorf("int8 element %d = %d, want %d (window %v)", r, got, m, w8.Local())
					}
					if got := w8.Local()[n+r]; got != m {
						return fmt.Errorf("int8 element %d = %d, want %d (window %v)", n+r, got, m, w8.Local())
					}
					if got := w16.Local()[r]; got != want16 {
						return fmt.Errorf("uint16 element %d = %#x, want %#x (window %v)", r, got, want16, w16.Local())
					}
					if got := w32.Local()[r]; got != 0.5*m {
						return fmt.Errorf("float32 element %d = %v, want %v", r, got, 0.5*m)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, free := range []func(context.Context) error{w8.Free, w16.Free, w32.Free} {
				if err := free(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestConcurrentGoroutinesPerRank: a Comm is used by several goroutines of
// its rank at once (two-sided messages on their own tags, and each
// goroutine with its own window in passive-target epochs), as documented.
func TestConcurrentGoroutinesPerRank(t *testing.T) {
	const n, g, m = 3, 2, 30
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			wins := make([]*narma.Win[int64], g)
			for i := range wins {
				w, err := narma.Allocate[int64](ctx, c, n, narma.WithStrategy(st))
				if err != nil {
					return err
				}
				wins[i] = w
			}
			errs := make(chan error, 2*g)
			for i := 0; i < g; i++ {
				go func(i int) {
					// Messages on tag 100+i.
					errs <- func() error {
						buf := make([]byte, 8)
						for j := 0; j < m; j++ {
							if err := c.Send(ctx, u64(uint64(j)), right, 100+i); err != nil {
								return err
							}
							st, err := c.Recv(ctx, buf, left, 100+i)
							if err != nil {
								return err
							}
							if st.Tag != 100+i || u64(uint64(j))[0] != buf[0] {
								return fmt.Errorf("goroutine %d message %d: %+v %v", i, j, st, buf)
							}
						}
						return nil
					}()
				}(i)
				go func(w *narma.Win[int64]) {
					// Accumulates into element me of every rank's window.
					errs <- func() error {
						for j := 0; j < m; j++ {
							if err := w.LockAll(ctx, 0); err != nil {
								return err
							}
							for tg := 0; tg < n; tg++ {
								if err := w.Accumulate([]int64{1}, tg, me, narma.Sum); err != nil {
									return err
								}
							}
							if err := w.FlushAll(ctx); err != nil {
								return err
							}
							if err := w.UnlockAll(ctx); err != nil {
								return err
							}
						}
						return nil
					}()
				}(wins[i])
			}
			for i := 0; i < 2*g; i++ {
				if err := <-errs; err != nil {
					return err
				}
			}
			err := barrierThen(c, func() error {
				for i, w := range wins {
					for r := 0; r < n; r++ {
						if got := w.Local()[r]; got != m {
							return fmt.Errorf("window %d element %d = %d, want %d", i, r, got, m)
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, w := range wins {
				if err := w.Free(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestRequestBasedCallsDoNotBlock: request-based calls take no context, so
// they must not block: with the deferred strategy Lock returns at once and
// the lock is taken later; an Rput to a target whose lock another rank
// holds must still return (its request completes later), instead of
// waiting, with no way to give up, until the holder unlocks.
func TestRequestBasedCallsDoNotBlock(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	// Goroutine ranks only: the ranks coordinate through held and release,
	// which processes do not share.
	runLocal(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := allocPattern(c, 2, narma.Deferred)
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{-2}, 0, 1); err != nil {
				return err
			}
			if err := w.Flush(ctx, 0); err != nil {
				return err
			}
			close(held)
			if err := await(c, release); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 0); err != nil {
				return err
			}
			return c.Barrier(ctx)
		}
		if err := await(c, held); err != nil {
			return err
		}
		if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
			return err
		}
		type result struct {
			r   *narma.Request
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := w.Rput([]int64{-1}, 0, 0)
			done <- result{r, err}
		}()
		var failure error
		var res result
		select {
		case res = <-done:
		case <-time.After(3 * time.Second):
			failure = fmt.Errorf("Rput blocked for 3s on a lock held by another rank (it takes no context, so it cannot be given up)")
			close(release)
			res = <-done
		}
		if failure == nil {
			close(release)
		}
		if res.err == nil {
			if _, err := res.r.Wait(ctx); err != nil {
				return err
			}
		}
		if err := w.Unlock(ctx, 0); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if failure != nil {
			return failure
		}
		if res.err == nil && w.Local()[0] != -1 {
			return fmt.Errorf("completed Rput did not land: window %v", w.Local())
		}
		return nil
	})
}

// TestLocalAfterFree: after Free, Local returns nil, through the window
// and through a view of it (As), over goroutine ranks and processes.
func TestLocalAfterFree(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.Allocate[int64](ctx, c, 4)
		if err != nil {
			return err
		}
		view := narma.As[uint8](w)
		if len(w.Local()) != 4 || len(view.Local()) != 32 {
			return fmt.Errorf("before Free: Local of %d and %d elements, want 4 and 32", len(w.Local()), len(view.Local()))
		}
		w.Local()[0] = 42
		if err := w.Free(ctx); err != nil {
			return err
		}
		if l, v := w.Local(), view.Local(); l != nil || v != nil {
			return fmt.Errorf("after Free: Local of %d elements, the view's of %d; want nil", len(l), len(v))
		}
		return nil
	})
}
