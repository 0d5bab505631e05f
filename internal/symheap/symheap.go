// Package symheap is the symmetric heap under the shmem and coarray
// packages: one narma window per job, in which collective allocations get
// the same offset on every rank, so that an offset is a remote address
// valid everywhere. The heap's window is in a passive-target epoch for its
// whole life (LockAll with NoCheck), so any rank may access any other at
// any time; notification counters of the window serve as counters, events
// and notify variables, which is what lets a put into any object of the
// heap notify any of them.
//
// Allocation is deterministic: every rank runs the same first-fit
// allocator over the same sequence of collective calls, and each call
// checks with one allgather (Agree) that all ranks asked for the same
// thing and that none failed its own checks, so that a bad call fails on
// every rank instead of leaving some waiting.
package symheap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/narma-rma/narma"
)

// Errors.
var (
	// ErrNotSymmetric: ranks made different collective requests, or an
	// address is not inside a live symmetric object.
	ErrNotSymmetric = errors.New("symheap: not symmetric")
	// ErrNoMemory: the heap has no free block large enough.
	ErrNoMemory = errors.New("symheap: out of symmetric memory")
	// ErrClosed: the heap was closed.
	ErrClosed = errors.New("symheap: heap closed")
)

// Heap is one rank's view of the symmetric heap. It is used by one
// goroutine of its rank at a time.
type Heap struct {
	c      *narma.Comm
	w      *narma.Win[byte]
	size   int
	blocks map[int]int // live objects: offset -> length
	holes  []span      // free spans, sorted by offset
	ncount int         // counters of the window
	cfree  []int       // freed counter indices, reused lowest first
	closed bool
}

type span struct{ off, n int }

// New creates a heap of size bytes on every rank, collectively.
func New(ctx context.Context, c *narma.Comm, size int) (*Heap, error) {
	var local error
	if size < 0 {
		local = fmt.Errorf("symheap: size %d: %w", size, narma.ErrInvalid)
	}
	if err := Agree(ctx, c, callNew, "New", local, int64(size)); err != nil {
		return nil, err
	}
	w, err := narma.Allocate[byte](ctx, c, size, narma.WithDispUnit(1))
	if err != nil {
		return nil, err
	}
	if err := w.LockAll(ctx, narma.NoCheck); err != nil {
		w.Free(ctx)
		return nil, err
	}
	h := &Heap{c: c, w: w, size: size, blocks: map[int]int{}}
	if size > 0 {
		h.holes = []span{{0, size}}
	}
	return h, nil
}

// Comm returns the heap's communicator.
func (h *Heap) Comm() *narma.Comm { return h.c }

// Win returns the heap's window, in its lifelong LockAll epoch; its
// displacements are byte offsets.
func (h *Heap) Win() *narma.Win[byte] { return h.w }

// Size returns the heap's size in bytes.
func (h *Heap) Size() int { return h.size }

// Agree is the argument check of a collective call, one allgather on c:
// every rank contributes the call it is in (call, a number the caller
// chooses per kind of call), whether its own checks passed (local is nil)
// and the values that must be equal everywhere. A rank whose checks failed
// returns local; the others return an error naming it that matches both
// ErrNotSymmetric and narma.ErrCollective. So no rank goes on into the
// call's later collective steps alone, to wait there for ever.
func Agree(ctx context.Context, c *narma.Comm, call int, op string, local error, vals ...int64) error {
	row := make([]int64, 2+len(vals))
	row[0] = int64(call)
	if local != nil {
		row[1] = 1
	}
	copy(row[2:], vals)
	all := make([]int64, len(row)*c.Size())
	if err := narma.Allgather(ctx, c, row, all); err != nil {
		return err
	}
	if local != nil {
		return local
	}
	for r := range c.Size() {
		got := all[r*len(row) : (r+1)*len(row)]
		switch {
		case got[0] != row[0]:
			return &mismatch{fmt.Sprintf("symheap: %s: rank %d is in another collective call", op, r)}
		case got[1] != 0:
			return &mismatch{fmt.Sprintf("symheap: %s: the call failed on rank %d", op, r)}
		}
		for i, v := range vals {
			if got[2+i] != v {
				return &mismatch{fmt.Sprintf("symheap: %s: rank %d passed %d where rank %d passed %d", op, r, got[2+i], c.Rank(), v)}
			}
		}
	}
	return nil
}

// mismatch is the error of ranks that disagree in a collective call.
type mismatch struct{ msg string }

func (e *mismatch) Error() string { return e.msg + ": " + ErrNotSymmetric.Error() }

func (e *mismatch) Unwrap() []error { return []error{ErrNotSymmetric, narma.ErrCollective} }

// Collective calls of the heap, numbered for Agree. Packages built on the
// heap number theirs from CallUser up.
const (
	callNew = iota + 1
	callAlloc
	callFree
	callNewCounter
	callFreeCounter
	// CallUser is the first call number free for other packages.
	CallUser = 100
)

// Alloc allocates n bytes aligned to align (a power of two; 0 means 8),
// collectively, and returns their offset, the same on every rank. The
// memory is zeroed on every rank before any rank can access it.
func (h *Heap) Alloc(ctx context.Context, n, align int) (int, error) {
	if align == 0 {
		align = 8
	}
	if n == 0 {
		n = 1 // every live object has its own offset
	}
	var local error
	off, hole := -1, -1
	switch {
	case h.closed:
		local = ErrClosed
	case n < 0 || align < 0 || align&(align-1) != 0:
		local = fmt.Errorf("symheap: Alloc(%d, align %d): %w", n, align, narma.ErrInvalid)
	default:
		for i, s := range h.holes {
			a := (s.off + align - 1) &^ (align - 1)
			if a <= s.off+s.n && n <= s.off+s.n-a {
				off, hole = a, i
				break
			}
		}
		if off < 0 {
			local = fmt.Errorf("symheap: Alloc of %d bytes in a heap of %d: %w", n, h.size, ErrNoMemory)
		}
	}
	// Every rank must agree on the request and on its outcome.
	if err := Agree(ctx, h.c, callAlloc, "Alloc", local, int64(n), int64(align), int64(off)); err != nil {
		return 0, err
	}
	s := h.holes[hole]
	h.holes = append(h.holes[:hole], h.holes[hole+1:]...)
	if off > s.off {
		h.holes = append(h.holes, span{s.off, off - s.off})
	}
	if end := off + n; end < s.off+s.n {
		h.holes = append(h.holes, span{end, s.off + s.n - end})
	}
	sort.Slice(h.holes, func(i, j int) bool { return h.holes[i].off < h.holes[j].off })
	h.blocks[off] = n
	clear(h.w.Local()[off : off+n])
	// Nobody may write the object before every rank has zeroed it.
	if err := h.c.Barrier(ctx); err != nil {
		return 0, err
	}
	return off, nil
}

// Free releases the object of n bytes at off, collectively: off and n must
// be exactly an object's (as Alloc returned it; n = 0 stands for the byte
// a zero-size object takes). Every rank must have completed its accesses
// to it (e.g. by a barrier) before.
func (h *Heap) Free(ctx context.Context, off, n int) error {
	if n == 0 {
		n = 1
	}
	var local error
	if h.closed {
		local = ErrClosed
	} else if size, ok := h.blocks[off]; !ok || size != n {
		local = fmt.Errorf("symheap: Free of %d bytes at offset %d: not an object: %w", n, off, ErrNotSymmetric)
	}
	if err := Agree(ctx, h.c, callFree, "Free", local, int64(off), int64(n)); err != nil {
		return err
	}
	delete(h.blocks, off)
	h.holes = append(h.holes, span{off, n})
	sort.Slice(h.holes, func(i, j int) bool { return h.holes[i].off < h.holes[j].off })
	merged := h.holes[:1]
	for _, s := range h.holes[1:] {
		last := &merged[len(merged)-1]
		if last.off+last.n == s.off {
			last.n += s.n
		} else {
			merged = append(merged, s)
		}
	}
	h.holes = merged
	return nil
}

// Check reports whether [off, off+n) lies inside one live object, the
// test for a symmetric address; it returns an error wrapping
// ErrNotSymmetric otherwise.
func (h *Heap) Check(off, n int) error {
	if h.closed {
		return ErrClosed
	}
	for start, size := range h.blocks {
		if off >= start && n >= 0 && off+n <= start+size {
			return nil
		}
	}
	return fmt.Errorf("symheap: bytes [%d, %d) are not inside a symmetric object: %w", off, off+n, ErrNotSymmetric)
}

// NewCounter returns the index of a fresh notification counter of the
// heap's window, at zero, collectively.
func (h *Heap) NewCounter(ctx context.Context) (int, error) {
	var local error
	if h.closed {
		local = ErrClosed
	}
	i := h.ncount
	if len(h.cfree) > 0 {
		i = h.cfree[0]
	}
	if err := Agree(ctx, h.c, callNewCounter, "NewCounter", local, int64(i)); err != nil {
		return 0, err
	}
	if i == h.ncount {
		if err := h.w.SetCounters(ctx, h.ncount+1); err != nil {
			return 0, err
		}
		h.ncount++
		return i, nil
	}
	h.cfree = h.cfree[1:]
	if err := h.w.SetCounter(i, 0); err != nil {
		return 0, err
	}
	// Nobody may count into it before every rank has reset it.
	return i, h.c.Barrier(ctx)
}

// FreeCounter releases counter i, collectively; it may be handed out
// again by NewCounter.
func (h *Heap) FreeCounter(ctx context.Context, i int) error {
	var local error
	switch {
	case h.closed:
		local = ErrClosed
	case i < 0 || i >= h.ncount:
		local = fmt.Errorf("symheap: FreeCounter(%d) of %d: %w", i, h.ncount, narma.ErrInvalidNotification)
	case slices.Contains(h.cfree, i):
		local = fmt.Errorf("symheap: FreeCounter(%d): already free: %w", i, narma.ErrInvalidNotification)
	}
	if err := Agree(ctx, h.c, callFreeCounter, "FreeCounter", local, int64(i)); err != nil {
		return err
	}
	h.cfree = append(h.cfree, i)
	sort.Ints(h.cfree)
	return nil
}

// Close ends the heap's epoch and frees its window, collectively.
func (h *Heap) Close(ctx context.Context) error {
	if h.closed {
		return ErrClosed
	}
	if err := h.w.UnlockAll(ctx); err != nil {
		return err
	}
	if err := h.w.Free(ctx); err != nil {
		return err
	}
	h.closed = true
	return nil
}
