package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// TestTagNoticesDirect: over shared memory an origin puts a tag notice
// straight into its target's inbox, through its mapping of the target's
// control region: no tag notice crosses the transport while the inbox
// ring has room. When two origins send more than the ring holds before
// the target looks, and go on while it takes notices in bursts, the
// notices that find the ring full travel through the transport, and each
// origin's notices are still matched in the order it issued them, small
// operations (which claim their slot before the data moves) and large
// ones (which claim it after) mixed; the data of each is in place when
// its notice is matched (rule 1: that value or a later one of the
// origin's). Once the target has taken everything,
// notices go straight to the inbox again.
func TestTagNoticesDirect(t *testing.T) {
	const n, target, large = 3, 0, directMax + 8
	per := 3*inboxSlots + 10
	var count signalCount
	cs := signalJob(t, "shm", n, &count)
	ws := make([]*Win, n)
	// Rank o writes its i-th value, i, at its own area of the target's
	// window; every seventh operation is large, its value in its last
	// word.
	area := func(o int) int { return (o - 1) * large }
	send := func(ctx context.Context, w *Win, o, from, to int, pace bool) error {
		buf := make([]byte, large)
		for i := from; i < to; i++ {
			size := 8
			if i%7 == 3 {
				size = large
			}
			binary.LittleEndian.PutUint64(buf[size-8:], uint64(i))
			a := &Access{Kind: KindPut, Type: mem.Uint8, Origin: buf[:size], Target: target, Disp: area(o) + large - size, Notice: transport.TagNotice(transport.NoticeTag, int32(i))}
			if err := w.Do(a); err != nil {
				return err
			}
			if pace && i%16 == 15 {
				time.Sleep(50 * time.Microsecond)
			}
		}
		return w.Flush(ctx, target)
	}
	// receive matches the origins' notices from next on, count of them,
	// checking the order of each origin's and the data they announce.
	receive := func(ctx context.Context, w *Win, next []int, count int) error {
		r, err := w.NotifyInit(AnySource, AnyTag, 1)
		if err != nil {
			return err
		}
		for range count {
			if err := r.Start(); err != nil {
				return err
			}
			st, err := r.Wait(ctx)
			if err != nil {
				return err
			}
			if st.Source < 1 || st.Source >= n || st.Tag != next[st.Source] {
				return fmt.Errorf("matched (%d, %d), want the next of each origin %v", st.Source, st.Tag, next)
			}
			// Later puts of the origin may have overwritten it already.
			if got := binary.LittleEndian.Uint64(w.mem[area(st.Source)+large-8:]); got < uint64(st.Tag) {
				return fmt.Errorf("notice (%d, %d) matched with value %d in place", st.Source, st.Tag, got)
			}
			next[st.Source]++
		}
		return r.Free()
	}
	next := make([]int, n)
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		w, err := c.Allocate(ctx, (n-1)*large, WinOptions{})
		if err != nil {
			return err
		}
		ws[c.rank] = w
		if c.rank != target && (w.maps == nil || w.maps[target].inbox == nil) {
			return fmt.Errorf("rank %d does not map the target's inbox", c.rank)
		}
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		// The origins fill the ring before the target looks, and go on
		// sending while it takes notices, in bursts.
		if c.rank != target {
			if err := send(ctx, w, c.rank, 0, per, true); err != nil {
				return err
			}
		} else {
			// Until the ring is full, then a burst at a time.
			for w.inbox.r.enq.Load() < inboxSlots {
				time.Sleep(100 * time.Microsecond)
			}
			for i := 0; i < (n-1)*per; i += 50 {
				time.Sleep(500 * time.Microsecond)
				if err := receive(ctx, w, next, min(50, (n-1)*per-i)); err != nil {
					return err
				}
			}
		}
		return c.Barrier(ctx)
	})
	through := count.tags.Load()
	if through == 0 || through >= int64((n-1)*per) {
		t.Fatalf("%d of %d tag notices crossed the transport; want some (the ring filled) and not all", through, (n-1)*per)
	}
	// The target has taken everything: the next notices go straight to
	// its inbox, while the target waits for them.
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		w := ws[c.rank]
		if c.rank == target {
			return receive(ctx, w, next, (n-1)*10)
		}
		return send(ctx, w, c.rank, per, per+10, false)
	})
	if got := count.tags.Load(); got != through {
		t.Errorf("%d tag notices crossed the transport after the target took everything; want none", got-through)
	}
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		w := ws[c.rank]
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
}
