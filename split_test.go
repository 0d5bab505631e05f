package narma_test

// Sub-communicators (Split, Create) and groups: ranks numbered within the
// communicator everywhere (two-sided statuses, collectives, RMA targets,
// notices), contexts that never meet the parent's, and the errors.

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// splitHalves splits c into the even and the odd ranks, each half in
// reverse order of c's ranks (key -rank), and checks the numbering.
func splitHalves(c *narma.Comm) (*narma.Comm, error) {
	ctx, me, n := c.Context(), c.Rank(), c.Size()
	s, err := c.Split(ctx, me%2, -me)
	if err != nil {
		return nil, err
	}
	var want []int // the parent's ranks of the half, in the half's order
	for r := n - 1; r >= 0; r-- {
		if r%2 == me%2 {
			want = append(want, r)
		}
	}
	if s.Size() != len(want) || want[s.Rank()] != me {
		return nil, fmt.Errorf("split: rank %d of %d, want %d of %d (parent ranks %v)", s.Rank(), s.Size(), slices.Index(want, me), len(want), want)
	}
	got, err := s.Group().TranslateRanks(ranks(s.Size()), c.Group())
	if err != nil {
		return nil, err
	}
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("split: parent ranks %v, want %v", got, want)
	}
	return s, nil
}

// TestSplitMessages: on each half, a ring of sends received from
// AnySource reports the sender's rank in the half; collectives combine
// the half only; the parent's messages with the same tags stay apart.
func TestSplitMessages(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			s, err := splitHalves(c)
			if err != nil {
				return err
			}
			sr, sn := s.Rank(), s.Size()
			// A parent message with the tag the half uses, sent first: the
			// half's receive must not take it.
			if err := narma.Send(ctx, c, []int64{-1}, (me+2)%n, 7); err != nil {
				return err
			}
			if err := narma.Send(ctx, s, []int64{int64(me)}, (sr+1)%sn, 7); err != nil {
				return err
			}
			got := []int64{0}
			st, err := narma.Recv(ctx, s, got, narma.AnySource, narma.AnyTag)
			if err != nil {
				return err
			}
			from := (sr - 1 + sn) % sn
			if st.Source != from || st.Tag != 7 {
				return fmt.Errorf("half's message: status %+v, want source %d tag 7", st, from)
			}
			if want, _ := c.Group().TranslateRanks([]int{int(got[0])}, s.Group()); want[0] != from {
				return fmt.Errorf("half's message came from parent rank %d, which is rank %d of the half, not %d", got[0], want[0], from)
			}
			if _, err := narma.Recv(ctx, c, got, (me-2+2*n)%n, 7); err != nil || got[0] != -1 {
				return fmt.Errorf("parent message: %v, %v", got, err)
			}
			sum := []int64{0}
			if err := narma.Allreduce(ctx, s, []int64{int64(me)}, sum, narma.Sum); err != nil {
				return err
			}
			want := int64(0)
			for r := me % 2; r < n; r += 2 {
				want += int64(r)
			}
			if sum[0] != want {
				return fmt.Errorf("half's Allreduce: %d, want %d", sum[0], want)
			}
			all := make([]int32, sn)
			if err := narma.Allgather(ctx, s, []int32{int32(sr)}, all); err != nil {
				return err
			}
			for r, v := range all {
				if v != int32(r) {
					return fmt.Errorf("half's Allgather: %v", all)
				}
			}
			return s.Barrier(ctx)
		})
	})
}

// TestSplitWindows: a window on each half, in every synchronization mode
// and strategy: every rank reads every target's pattern, made with the
// target's rank in the half, and puts its own rank in the half at its
// slot in every target.
func TestSplitWindows(t *testing.T) {
	const n = 5
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			s, err := splitHalves(c)
			if err != nil {
				return err
			}
			sn := s.Size()
			w, err := allocPattern(s, 8+sn, st)
			if err != nil {
				return err
			}
			e := allToAll(s, w, m)
			if err := e.begin(); err != nil {
				return err
			}
			got := make([][]int64, sn)
			for r := range sn {
				got[r] = make([]int64, 8)
				if err := w.Get(got[r], r, 0); err != nil {
					return err
				}
			}
			if err := e.end(); err != nil {
				return err
			}
			for r := range sn {
				if err := checkPattern(got[r], r); err != nil {
					return fmt.Errorf("get from rank %d of the half: %v", r, err)
				}
			}
			if err := s.Barrier(s.Context()); err != nil {
				return err
			}
			if err := e.begin(); err != nil {
				return err
			}
			for r := range sn {
				if err := w.Put([]int64{int64(s.Rank() + 100)}, r, 8+s.Rank()); err != nil {
					return err
				}
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			return barrierThen(s, func() error {
				for r := range sn {
					if v := w.Local()[8+r]; v != int64(r+100) {
						return fmt.Errorf("slot %d: %d, want %d", r, v, r+100)
					}
				}
				return w.Free(s.Context())
			})
		})
	})
}

// TestSplitNotices: notified puts on a window of a half reach requests
// that match sources numbered in the half, wildcards report them, and
// counters count the half's puts only.
func TestSplitNotices(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			s, err := splitHalves(c)
			if err != nil {
				return err
			}
			sr, sn := s.Rank(), s.Size()
			w, err := narma.Allocate[int64](ctx, s, sn)
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 1); err != nil {
				return err
			}
			next, prev := (sr+1)%sn, (sr-1+sn)%sn
			exact, err := w.NotifyInit(prev, 5, 1)
			if err != nil {
				return err
			}
			any, err := w.NotifyInit(narma.AnySource, 6, sn)
			if err != nil {
				return err
			}
			for _, r := range []*narma.Request{exact, any} {
				if err := r.Start(); err != nil {
					return err
				}
			}
			if err := s.Barrier(ctx); err != nil {
				return err
			}
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w.PutNotify([]int64{int64(sr + 1)}, next, sr, narma.Tag(5)); err != nil {
				return err
			}
			for r := range sn {
				if err := w.PutNotify([]int64{int64(sr + 1)}, r, sr, narma.Tag(6)); err != nil {
					return err
				}
				if err := w.PutNotify(nil, r, 0, narma.Counter(0)); err != nil {
					return err
				}
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			st, err := exact.Wait(ctx)
			if err != nil {
				return err
			}
			if st.Source != prev || st.Tag != 5 {
				return fmt.Errorf("exact request: %+v, want source %d", st, prev)
			}
			if _, err := any.Wait(ctx); err != nil {
				return err
			}
			if err := w.WaitCounter(ctx, 0, uint64(sn)); err != nil {
				return err
			}
			if err := s.Barrier(ctx); err != nil {
				return err
			}
			if v, err := w.Counter(0); err != nil || v != uint64(sn) {
				return fmt.Errorf("counter %d (%v), want %d", v, err, sn)
			}
			for r, v := range w.Local() {
				if v != int64(r+1) {
					return fmt.Errorf("window %v", w.Local())
				}
			}
			if err := errors.Join(exact.Free(), any.Free()); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestSplitUndefinedAndNested: a rank that passes Undefined gets nil and
// no error; splitting a sub-communicator numbers within it; duplicates
// made on one half only leave the parent's Dup working (each rank offers
// its next free context and all take the largest).
func TestSplitUndefinedAndNested(t *testing.T) {
	const n = 6
	run(t, n, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		color := 0
		if me == 2 {
			color = narma.Undefined
		}
		s, err := c.Split(ctx, color, 0)
		if err != nil {
			return err
		}
		if me == 2 {
			if s != nil {
				return fmt.Errorf("Undefined color gave a communicator of %d ranks", s.Size())
			}
		} else {
			if s.Size() != n-1 {
				return fmt.Errorf("size %d, want %d", s.Size(), n-1)
			}
			// Halves of the five: {0,1,2} and {3,4} of s.
			h, err := s.Split(ctx, s.Rank()/3, s.Rank())
			if err != nil {
				return err
			}
			want := s.Rank() % 3
			if h.Rank() != want {
				return fmt.Errorf("nested: rank %d, want %d", h.Rank(), want)
			}
			if s.Rank() < 3 {
				for range 3 {
					if _, err := h.Dup(ctx); err != nil {
						return err
					}
				}
			}
			if err := h.Barrier(ctx); err != nil {
				return err
			}
		}
		d, err := c.Dup(ctx)
		if err != nil {
			return err
		}
		peer := (me + 1) % n
		if err := narma.Send(ctx, d, []int32{int32(me)}, peer, 1); err != nil {
			return err
		}
		got := []int32{0}
		if st, err := narma.Recv(ctx, d, got, narma.AnySource, 1); err != nil || st.Source != (me-1+n)%n || got[0] != int32(st.Source) {
			return fmt.Errorf("Dup after uneven Dups: %+v %v, %v", st, got, err)
		}
		return nil
	})
}

// TestCreate: Create over a group that leaves out rank 0 and reverses
// the others; rank 0 gets nil; a group passed differently is an error on
// every rank, and a group with ranks outside c is refused.
func TestCreate(t *testing.T) {
	const n = 4
	run(t, n, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		g, err := c.Group().Incl(3, 2, 1)
		if err != nil {
			return err
		}
		s, err := c.Create(ctx, g)
		if err != nil {
			return err
		}
		if me == 0 {
			if s != nil {
				return fmt.Errorf("rank 0 got a communicator")
			}
		} else {
			if s.Rank() != 3-me || s.Size() != 3 {
				return fmt.Errorf("rank %d of %d, want %d of 3", s.Rank(), s.Size(), 3-me)
			}
			sum := []int64{0}
			if err := narma.Allreduce(ctx, s, []int64{int64(me)}, sum, narma.Sum); err != nil {
				return err
			}
			if sum[0] != 6 {
				return fmt.Errorf("Allreduce over the group: %d", sum[0])
			}
		}
		// Rank 3 passes another group.
		other := g
		if me == 3 {
			other, _ = c.Group().Incl(1, 2, 3)
		}
		if _, err := c.Create(ctx, other); !errors.Is(err, narma.ErrCollective) {
			return fmt.Errorf("Create with different groups: %v, want ErrCollective", err)
		}
		// A group of a sub-communicator's ranks passed to another: rank
		// 0 of the job is not in s.
		if s != nil {
			if _, err := s.Create(ctx, c.Group()); !errors.Is(err, narma.ErrGroup) {
				return fmt.Errorf("Create with ranks outside: %v, want ErrGroup", err)
			}
		}
		// Split with a bad color on one rank fails on every rank.
		color := 1
		if me == 1 {
			color = -5
		}
		if _, err := c.Split(ctx, color, 0); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Split with color -5 somewhere: %v, want ErrInvalid", err)
		}
		return c.Barrier(ctx)
	})
}

// TestGroupOps: Incl, Excl, Union, Intersection, Difference, Rank and
// TranslateRanks against their definitions, and their errors.
func TestGroupOps(t *testing.T) {
	runLocal(t, 5, func(c *narma.Comm) error {
		me := c.Rank()
		all := c.Group()
		if all.Size() != 5 || all.Rank() != me {
			return fmt.Errorf("group of c: size %d rank %d", all.Size(), all.Rank())
		}
		a, err := all.Incl(4, 0, 2)
		if err != nil {
			return err
		}
		b, err := all.Excl(0, 1)
		if err != nil {
			return err
		}
		trans := func(g narma.Group) []int {
			r, err := g.TranslateRanks(ranks(g.Size()), all)
			if err != nil {
				panic(err)
			}
			return r
		}
		for _, tc := range []struct {
			name string
			g    narma.Group
			want []int
		}{
			{"Incl", a, []int{4, 0, 2}},
			{"Excl", b, []int{2, 3, 4}},
			{"Union", a.Union(b), []int{4, 0, 2, 3}},
			{"Intersection", a.Intersection(b), []int{4, 2}},
			{"Difference", a.Difference(b), []int{0}},
			{"Empty", narma.Group{}, []int{}},
		} {
			if got := trans(tc.g); !slices.Equal(got, tc.want) {
				return fmt.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
			wantRank := slices.Index(tc.want, me)
			if wantRank < 0 {
				wantRank = narma.Undefined
			}
			if tc.g.Rank() != wantRank {
				return fmt.Errorf("%s: Rank %d, want %d", tc.name, tc.g.Rank(), wantRank)
			}
		}
		if got, _ := a.TranslateRanks([]int{0, 1, 2, narma.ProcNull}, b); !slices.Equal(got, []int{2, narma.Undefined, 0, narma.ProcNull}) {
			return fmt.Errorf("TranslateRanks a to b: %v", got)
		}
		if !a.Equal(a.Union(narma.Group{})) || a.Equal(b) {
			return fmt.Errorf("Equal")
		}
		for _, bad := range [][]int{{5}, {-1}, {1, 1}} {
			if _, err := all.Incl(bad...); !errors.Is(err, narma.ErrRank) && !errors.Is(err, narma.ErrGroup) {
				return fmt.Errorf("Incl(%v): %v", bad, err)
			}
			if _, err := all.Excl(bad...); err == nil {
				return fmt.Errorf("Excl(%v) accepted", bad)
			}
		}
		if _, err := a.TranslateRanks([]int{3}, b); !errors.Is(err, narma.ErrRank) {
			return fmt.Errorf("TranslateRanks of rank 3 of 3: %v", err)
		}
		return nil
	})
}
