package shm

import (
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
)

// The data operations are the load/store core of the local transport
// applied to the mapping, followed by the notice, if any, through the
// target's ring: the ring's publishing store orders the notice after the
// data. Every operation is complete at the target when it returns.

// smallPut is the largest notified put that claims its notice's slot
// before it writes its data (ring_linux.go). A larger one writes first:
// the consumer takes no notice behind a claimed slot, and a long copy,
// or a producer stopped in the middle of one, would hold them all up.
const smallPut = 512

// Put copies src into the target's memory at off, then queues n; a small
// notified put claims n's slot first.
func (r *region) Put(off int, src []byte, n transport.Notice, _ *transport.Completion) error {
	if err := r.check(); err != nil {
		return err
	}
	if n.Kind() == transport.NoticeNone || len(src) > smallPut || off < 0 || len(src) > len(r.mem)-off {
		if err := local.PutAt(r.mem, off, src); err != nil {
			return err
		}
		return r.noticeAfter(n)
	}
	t := r.ep.peers[r.target]
	for spin := 0; ; spin++ {
		if pos, ok := t.tryClaim(); ok {
			mem.CopyOut(r.mem[off:], src)
			raceRelease()
			t.publish(pos, r.ep.rank, r.word, n)
			r.ep.ring(t)
			return nil
		}
		r.ep.ring(t)
		if err := r.ep.backoff(r.target, spin); err != nil {
			return err
		}
	}
}

// Get copies the target's memory at off into dst, then queues n.
func (r *region) Get(off int, dst []byte, n transport.Notice, _ *transport.Completion) error {
	if err := r.check(); err != nil {
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
	if err := local.CompareSwapAt(r.mem, off, t, compare, swap, result); err != nil {
		return err
	}
	return r.noticeAfter(n)
}

// region is a handle on a region exposed by another rank (or this one),
// mapped into this process.
type region struct {
	ep     *Endpoint
	target int
	exp    *exposure
	gen    uint64
	key    transport.Key
	word   uint64 // key as one word, as notices carry it
	mem    []byte
}

var (
	_ transport.WordRegion   = (*region)(nil)
	_ transport.MappedRegion = (*region)(nil)
)

// Word returns the word at off of the target's mapping (see
// transport.WordRegion).
func (r *region) Word(off int) (transport.Word, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	w, err := local.WordAt(r.mem, off)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (r *region) check() error {
	if err := r.ep.peerErr(r.target); err != nil {
		return err
	}
	if r.exp.gen.Load() != r.gen {
		return transport.ErrNoRegion
	}
	return nil
}

// Size returns the size of the handle in bytes.
func (r *region) Size() int { return len(r.mem) }

// Mapped returns the mapping of the target's memory
// (transport.MappedRegion).
func (r *region) Mapped() ([]byte, bool) { return r.mem[:len(r.mem):len(r.mem)], true }

// noticeAfter delivers n, if any, after an access.
func (r *region) noticeAfter(n transport.Notice) error {
	if n.Kind() == transport.NoticeNone {
		return nil
	}
	return r.ep.notify(r.target, r.word, n)
}
