package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// TestContextsAgreeOnLargest: ranks that made different numbers of
// communicators agree on contexts new to all of them, and running out of
// contexts is an error on every rank, not a wrap-around.
func TestContextsAgreeOnLargest(t *testing.T) {
	comms := newComms(t, 3)
	comms[1].nextCtx = 40 // rank 1 made more communicators before
	runOK(t, comms, func(ctx context.Context, c *Comm) error {
		d, err := c.Dup(ctx)
		if err != nil {
			return err
		}
		if d.user != 40 || d.coll != 41 || c.nextCtx != 42 {
			return fmt.Errorf("contexts %d and %d, next %d; want 40, 41, 42", d.user, d.coll, c.nextCtx)
		}
		return nil
	})
	comms[2].nextCtx = maxCtx - 1
	runOK(t, comms, func(ctx context.Context, c *Comm) error {
		d, err := c.Dup(ctx) // the last two contexts
		if err != nil || d.user != maxCtx-1 || d.coll != maxCtx {
			return fmt.Errorf("Dup onto the last contexts: %v", err)
		}
		if _, err := c.Dup(ctx); !errors.Is(err, ErrInvalidArgs) {
			return fmt.Errorf("Dup past the last context: %v", err)
		}
		if _, err := c.Split(ctx, 0, 0); !errors.Is(err, ErrInvalidArgs) {
			return fmt.Errorf("Split past the last context: %v", err)
		}
		return nil
	})
}

// TestNoticeFromOutsideRefused: a notice for a window of a
// sub-communicator from a job rank outside it is counted as refused and
// reaches no queue or counter.
func TestNoticeFromOutsideRefused(t *testing.T) {
	comms := newComms(t, 3)
	var wins [3]*Win
	runOK(t, comms, func(ctx context.Context, c *Comm) error {
		color := 0
		if c.rank == 2 {
			color = Undefined
		}
		s, err := c.Split(ctx, color, 0)
		if err != nil || s == nil {
			return err
		}
		w, err := s.Allocate(ctx, 8, WinOptions{})
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 1); err != nil {
			return err
		}
		wins[c.rank] = w
		return nil
	})
	w := wins[0]
	comms[0].handleNotice(2, w.key, transport.TagNotice(transport.NoticeTag, 3))
	comms[0].handleNotice(2, w.key, transport.TagNotice(transport.NoticeCounter, 0))
	if got := w.badNotices.Load(); got != 2 {
		t.Errorf("refused notices: %d, want 2", got)
	}
	if w.inbox.pending() {
		t.Errorf("a refused notice is in the inbox")
	}
	if v, _ := w.Counter(0); v != 0 {
		t.Errorf("counter %d, want 0", v)
	}
	// Job rank 1 is rank 1 of the window's communicator too; job rank 0
	// would be 0. Split them apart: the notice keeps the sender's rank in
	// the communicator.
	comms[0].handleNotice(1, w.key, transport.TagNotice(transport.NoticeTag, 3))
	var got []noticeEntry
	w.inbox.take(func(e noticeEntry) { got = append(got, e) })
	if len(got) != 1 || got[0].src != 1 || got[0].tag != 3 {
		t.Errorf("a member's notice: inbox %+v, want one from 1 with tag 3", got)
	}
}

// TestConcurrentCreation: two goroutines of every rank make
// communicators at once, on two communicators of the same ranks; the new
// communicators get distinct contexts on every rank, the same on all
// ranks.
func TestConcurrentCreation(t *testing.T) {
	comms := newComms(t, 3)
	runOK(t, comms, func(ctx context.Context, c *Comm) error {
		d, err := c.Dup(ctx)
		if err != nil {
			return err
		}
		for round := range 20 {
			var x, y *Comm
			var xerr, yerr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				y, yerr = d.Dup(ctx)
			}()
			if round%2 == 0 {
				x, xerr = c.Dup(ctx)
			} else {
				x, xerr = c.Split(ctx, 0, c.rank)
			}
			<-done
			if err := errors.Join(xerr, yerr); err != nil {
				return err
			}
			if x.user == y.user || x.user == y.coll || x.coll == y.user {
				return fmt.Errorf("round %d: contexts %d/%d and %d/%d shared", round, x.user, x.coll, y.user, y.coll)
			}
			// Every rank has the same contexts for each.
			mine := []int64{int64(x.user), int64(y.user)}
			all := make([]int64, 2*c.size)
			if err := c.Allgather(ctx, mem.Bytes(mine), mem.Bytes(all)); err != nil {
				return err
			}
			for r := range c.size {
				if all[2*r] != mine[0] || all[2*r+1] != mine[1] {
					return fmt.Errorf("round %d: rank %d has contexts %v, this rank %v", round, r, all[2*r:2*r+2], mine)
				}
			}
		}
		return nil
	})
}

// TestSubcommIgnoresOutsideFailure: a rank outside a communicator that
// fails does not fail the communicator's deferred fences, lock waits or
// wildcard-free waits: its ranks go on fencing and putting.
func TestSubcommIgnoresOutsideFailure(t *testing.T) {
	comms := newComms(t, 3)
	var subs [3]*Comm
	runOK(t, comms, func(ctx context.Context, c *Comm) error {
		color := 0
		if c.rank == 2 {
			color = Undefined
		}
		s, err := c.Split(ctx, color, 0)
		subs[c.rank] = s
		return err
	})
	// Rank 2 fails, as its transport would report it to the others.
	for r := range 2 {
		comms[r].handleFailure(2, transport.ErrPeer)
	}
	runOK(t, comms[:2], func(ctx context.Context, c *Comm) error {
		s := subs[c.rank]
		if got := s.Failed(); len(got) != 0 {
			return fmt.Errorf("the sub-communicator reports failed ranks %v", got)
		}
		w, err := s.Allocate(ctx, 8, WinOptions{Strategy: Deferred})
		if err != nil {
			return err
		}
		for i := range 5 {
			if err := w.Fence(ctx, 0); err != nil {
				return fmt.Errorf("fence %d: %v", i, err)
			}
			src := []byte{byte(i + 1), 0, 0, 0, 0, 0, 0, 0}
			if err := w.Do(&Access{Kind: KindPut, Type: mem.Int64, Origin: src, Target: 1 - s.rank}); err != nil {
				return err
			}
		}
		if err := w.Fence(ctx, NoSucceed); err != nil {
			return err
		}
		if w.mem[0] != 5 {
			return fmt.Errorf("window %v after the last fence", w.mem)
		}
		return w.Free(ctx)
	})
}
