package narma_test

// Shared-memory windows: SplitShared groups the ranks that map each
// other's memory, AllocateShared refuses other communicators, and loads
// and stores through SharedQuery's slices meet puts and atomics on the
// same memory.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
)

// TestSharedWindow: every rank of a SplitShared communicator stores into
// every other's memory of an AllocateShared window through SharedQuery,
// with plain stores and with sync/atomic; after Sync, Barrier, Sync each
// sees all the stores, and a put through the window lands where the
// peers' slices load it.
func TestSharedWindow(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			s, err := c.SplitShared(ctx)
			if err != nil {
				return err
			}
			if ranktest.WholeJobShares() && s.Size() != n {
				return fmt.Errorf("SplitShared: %d ranks of %d, want all", s.Size(), n)
			}
			if in, _ := s.Group().TranslateRanks([]int{s.Rank()}, c.Group()); in[0] != c.Rank() {
				return fmt.Errorf("SplitShared: this rank is %d of the job, not %d", in[0], c.Rank())
			}
			me, sn := s.Rank(), s.Size()
			w, err := narma.AllocateShared[int64](ctx, s, 2*sn)
			if err != nil {
				return err
			}
			peers := make([][]int64, sn)
			for r := range sn {
				if peers[r], err = w.SharedQuery(r); err != nil {
					return err
				}
				if len(peers[r]) != 2*sn {
					return fmt.Errorf("SharedQuery(%d): %d elements, want %d", r, len(peers[r]), 2*sn)
				}
				peers[r][me] = int64(100*me + r)       // a plain store into slot me
				atomic.AddInt64(&peers[r][sn+r%sn], 1) // every rank adds to slot sn+r of rank r
			}
			if err := syncBarrier(s, w); err != nil {
				return err
			}
			local := w.Local()
			for o := range sn {
				if local[o] != int64(100*o+me) {
					return fmt.Errorf("slot %d: %d, want %d", o, local[o], 100*o+me)
				}
			}
			if got := atomic.LoadInt64(&local[sn+me]); got != int64(sn) {
				return fmt.Errorf("atomic adds: %d, want %d", got, sn)
			}
			if err := syncBarrier(s, w); err != nil {
				return err
			}
			// A put through the window, seen through the slice of the
			// target's memory by a third rank.
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{-int64(me) - 1}, (me+1)%sn, me); err != nil {
				return err
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			if err := syncBarrier(s, w); err != nil {
				return err
			}
			for r := range sn {
				if v := peers[r][(r-1+sn)%sn]; v != -int64((r-1+sn)%sn)-1 {
					return fmt.Errorf("rank %d's memory after a put: %d", r, v)
				}
			}
			if err := s.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// syncBarrier orders every rank's stores before every rank's next loads:
// Sync, Barrier, Sync.
func syncBarrier(c *narma.Comm, w *narma.Win[int64]) error {
	if err := w.Sync(); err != nil {
		return err
	}
	if err := c.Barrier(c.Context()); err != nil {
		return err
	}
	return w.Sync()
}

// TestSharedQueryOutside: on a window of the whole job, SharedQuery gives
// the memory of exactly the ranks of SplitShared's communicator, and an
// error wrapping ErrNotShared for the others; AllocateShared on the job
// is refused on every rank when some rank does not share, and works when
// all do.
func TestSharedQueryOutside(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			s, err := c.SplitShared(ctx)
			if err != nil {
				return err
			}
			members, err := s.Group().TranslateRanks(ranks(s.Size()), c.Group())
			if err != nil {
				return err
			}
			shared := make([]bool, n)
			for _, r := range members {
				shared[r] = true
			}
			w, err := narma.Allocate[int64](ctx, c, 1)
			if err != nil {
				return err
			}
			for r := range n {
				_, err := w.SharedQuery(r)
				if shared[r] && err != nil {
					return fmt.Errorf("SharedQuery(%d), a rank of SplitShared: %v", r, err)
				}
				if !shared[r] && !errors.Is(err, narma.ErrNotShared) {
					return fmt.Errorf("SharedQuery(%d), not a rank of SplitShared: %v, want ErrNotShared", r, err)
				}
			}
			if _, err := w.SharedQuery(n); !errors.Is(err, narma.ErrRank) {
				return fmt.Errorf("SharedQuery(%d): %v, want ErrRank", n, err)
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			if _, err := w.SharedQuery(0); !errors.Is(err, narma.ErrFreed) {
				return fmt.Errorf("SharedQuery after Free: %v, want ErrFreed", err)
			}
			// Does every rank share with every other?
			small := []int64{0}
			if s.Size() < n {
				small[0] = 1
			}
			any := []int64{0}
			if err := narma.Allreduce(ctx, c, small, any, narma.Max); err != nil {
				return err
			}
			aw, err := narma.AllocateShared[int64](ctx, c, 1)
			if any[0] == 0 {
				if err != nil {
					return fmt.Errorf("AllocateShared where all share: %v", err)
				}
				return aw.Free(ctx)
			}
			if !errors.Is(err, narma.ErrNotShared) || aw != nil {
				return fmt.Errorf("AllocateShared where not all share: %v, want ErrNotShared", err)
			}
			return c.Barrier(ctx)
		})
	})
}
