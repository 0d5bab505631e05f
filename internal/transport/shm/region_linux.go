package shm

import (
	"context"
	"math"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// The data operations are the load/store core of the local transport
// applied to the mapping, followed by the notice, if any, through the
// target's ring: the ring's release store orders the notice after the data.
// A notified put of at most inlineMax bytes instead carries its data in
// the notice's slot, and the target copies it in before it takes the
// notice: one cache line crosses instead of two (the paper's inline
// transfer). Such a put is complete at the target once its data is there:
// Flush, and any later operation to the target, first completes the
// inline puts before it (settleInline), copying the data itself if the
// target has not begun to.

// Put copies src into the target's memory at off, then queues n; a small
// notified put goes inline, unless the caller tracks its completion (c),
// which the transport's contract would then ask to be reported.
func (r *region) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	if err := r.check(); err != nil {
		return err
	}
	if c == nil && n.Kind != transport.NoticeNone && len(src) > 0 && len(src) <= inlineMax && r.target != r.ep.rank {
		// Inline transfer: the data travels in the notice's slot and
		// the target copies it in before it takes the notice.
		if off < 0 || len(src) > len(r.mem)-off || off > math.MaxUint32 {
			return transport.ErrBounds
		}
		return r.ep.putInline(r, off, src, n)
	}
	if err := r.ep.settleInline(context.Background(), r.target); err != nil {
		return err
	}
	if err := local.PutAt(r.mem, off, src); err != nil {
		return err
	}
	return r.noticeAfter(n)
}

// Get copies the target's memory at off into dst, then queues n.
func (r *region) Get(off int, dst []byte, n transport.Notice, _ *transport.Completion) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := r.ep.settleInline(context.Background(), r.target); err != nil {
		return err
	}
	if err := local.GetAt(r.mem, off, dst); err != nil {
		return err
	}
	return r.noticeAfter(n)
}

// Accumulate applies op atomically per element on the mapping, then
// queues n.
func (r *region) Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, _ *transport.Completion) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := r.ep.settleInline(context.Background(), r.target); err != nil {
		return err
	}
	if err := local.AccumulateAt(r.mem, off, op, t, src, result); err != nil {
		return err
	}
	return r.noticeAfter(n)
}

// CompareSwap applies an atomic compare-and-swap on the mapping, then
// queues n.
func (r *region) CompareSwap(off int, t mem.Type, compare, swap, result []byte, n transport.Notice, _ *transport.Completion) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := r.ep.settleInline(context.Background(), r.target); err != nil {
		return err
	}
	if err := local.CompareSwapAt(r.mem, off, t, compare, swap, result); err != nil {
		return err
	}
	return r.noticeAfter(n)
}
