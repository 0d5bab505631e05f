package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
