package shmem

import (
	"context"
	"fmt"
	"math"

	"github.com/narma-rma/narma"
)

// Sym is the address of n elements of T in the symmetric heap: the same
// value on every PE, so one PE's Sym names the corresponding memory on any
// other PE. It is a small value (a byte offset and a length), made by
// Alloc and narrowed by Slice and At; pass it by value. The zero Sym
// addresses no element.
//
// A Sym is not a pointer: nothing stops a program from keeping one after
// Free. Every call checks that the memory it addresses lies inside a live
// symmetric object, and refuses it with ErrNotSymmetric otherwise.
type Sym[T narma.Elem] struct {
	off int // byte offset in the heap
	n   int // elements; -1 after an out-of-range Slice or At
}

// Len returns the number of elements s addresses (0 for the result of an
// out-of-range Slice or At).
func (s Sym[T]) Len() int { return max(s.n, 0) }

// Slice returns the address of elements [i, j) of s, like s[i:j] on a
// slice. Out-of-range bounds give an invalid Sym, which every call
// refuses with ErrNotSymmetric.
func (s Sym[T]) Slice(i, j int) Sym[T] {
	if s.n < 0 || i < 0 || j < i || j > s.n {
		return Sym[T]{off: s.off, n: -1}
	}
	return Sym[T]{off: s.off + i*sizeOf[T](), n: j - i}
}

// At returns the address of element i of s: s.Slice(i, i+1), the form
// that atomics, WaitUntil and signals take.
func (s Sym[T]) At(i int) Sym[T] { return s.Slice(i, i+1) }

// Local returns this PE's copy of s: a slice of the local symmetric heap
// that remote puts, gets and atomics on s read and write. It is nil if s
// is not inside a live symmetric object. Local loads and stores must not
// race with remote accesses to the same elements: synchronize first
// (BarrierAll, WaitUntil, CT.Wait, SignalWaitUntil). Like the World's
// other calls, it is made on the World's goroutine.
func (s Sym[T]) Local(w *World) []T {
	if w.ok("Local") != nil || s.check(w, "Local") != nil {
		return nil
	}
	v := viewOf[T](w)
	i := s.off / v.size
	return v.local[i : i+s.n : i+s.n]
}

// String returns e.g. "Sym[int64]{off 64, len 8}".
func (s Sym[T]) String() string {
	var zero T
	return fmt.Sprintf("Sym[%T]{off %d, len %d}", zero, s.off, s.n)
}

// check reports whether s lies inside a live symmetric object (with the
// World's own cache; checkIn takes a context's).
func (s Sym[T]) check(w *World, op string) error { return s.checkIn(w, &w.own, op) }

// checkIn is check with the spans remembered in c.
func (s Sym[T]) checkIn(w *World, c *cache, op string) error {
	if s.n < 0 {
		return w.opErr(op, ErrNotSymmetric, "%v comes from an out-of-range Slice or At", s)
	}
	if err := w.checkSpan(c, s.off, s.n*sizeOf[T]()); err != nil {
		return w.opErr(op, err, "%v", s)
	}
	return nil
}

// elem checks that s is one element inside a live symmetric object.
func (s Sym[T]) elem(w *World, op string) error { return s.elemIn(w, &w.own, op) }

// elemIn is elem with the spans remembered in c.
func (s Sym[T]) elemIn(w *World, c *cache, op string) error {
	if s.n != 1 {
		if s.n < 0 {
			return s.checkIn(w, c, op)
		}
		return w.opErr(op, narma.ErrInvalid, "%v is not one element (use At)", s)
	}
	return s.checkIn(w, c, op)
}

// span checks that the first n elements of s lie inside s and inside a
// live symmetric object: the target of a transfer of n elements.
func (s Sym[T]) span(w *World, op string, n int) error { return s.spanIn(w, &w.own, op, n) }

// spanIn is span with the spans remembered in c.
func (s Sym[T]) spanIn(w *World, c *cache, op string, n int) error {
	if err := s.checkIn(w, c, op); err != nil {
		return err
	}
	if n > s.n {
		return w.opErr(op, narma.ErrBounds, "%d elements into %v", n, s)
	}
	return nil
}

// lineSize is the alignment of symmetric objects: a cache line.
const lineSize = 64

// sizeOf returns the size in bytes of T.
func sizeOf[T narma.Elem]() int { return narma.SizeOf[T]() }

// Alloc allocates n elements of T in the symmetric heap, collectively,
// and returns their address, the same on every PE. Every PE must pass the
// same n; the memory is zeroed on every PE before any PE can access it
// (shmem_calloc). Objects start on a cache line, so that a flag polled by
// one PE and a buffer written by another never share one; an allocation
// of 0 elements still takes a byte, so that every allocation is a
// distinct object.
func Alloc[T narma.Elem](ctx context.Context, w *World, n int) (Sym[T], error) {
	if err := w.ok("Alloc"); err != nil {
		return Sym[T]{}, err
	}
	size := sizeOf[T]()
	if n < 0 || n > math.MaxInt/size {
		return Sym[T]{}, w.opErr("Alloc", narma.ErrInvalid, "%d elements", n)
	}
	off, err := w.heap.Alloc(ctx, max(n*size, 1), lineSize)
	if err != nil {
		return Sym[T]{}, w.opErr("Alloc", err, "%d elements of %d bytes", n, size)
	}
	return Sym[T]{off: off, n: n}, nil
}

// Free releases the symmetric object that s starts, collectively (s is
// what Alloc returned). Like shmem_free it first completes this PE's
// operations and waits for every PE (BarrierAll), so no PE may still
// access the object; every later use of s, or of addresses inside it, is
// refused with ErrNotSymmetric.
func Free[T narma.Elem](ctx context.Context, w *World, s Sym[T]) error {
	if err := w.ok("Free"); err != nil {
		return err
	}
	// An invalid s still takes part (with a length no object has), so
	// that every PE fails instead of some waiting.
	n := max(s.n*sizeOf[T](), 1)
	if s.n < 0 {
		n = -1
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	w.forget()
	if err := w.heap.Free(ctx, s.off, n); err != nil {
		if s.n < 0 {
			return s.check(w, "Free")
		}
		return w.opErr("Free", err, "%v", s)
	}
	return nil
}
