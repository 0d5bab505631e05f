package coarray

import (
	"github.com/narma-rma/narma"
)

// Atomic subroutines: Fortran 2018's ATOMIC_DEFINE, ATOMIC_REF,
// ATOMIC_ADD, ATOMIC_AND, ATOMIC_OR, ATOMIC_XOR, their ATOMIC_FETCH_
// forms and ATOMIC_CAS, on an element of an Array of int64 (Fortran's
// INTEGER(ATOMIC_INT_KIND)) on any image. Each is atomic with respect to
// every other atomic subroutine on the element, from any image, and is
// complete at the target when it returns. They order nothing else: a
// program that publishes data with an atomic flag still needs SyncMemory
// (or an event) to order its puts before the flag. Images are numbers in
// the current team (Array.In and Array.InTeamNumber select others).

// AtomicDefine stores value into element offset of image's block:
// Fortran's CALL ATOMIC_DEFINE(a(offset+1)[image+1], value).
func AtomicDefine(a *Array[int64], image, offset int, value int64) error {
	return a.atomic("coarray.AtomicDefine", image, offset, value, narma.Replace)
}

// AtomicRef returns element offset of image's block, read atomically:
// Fortran's CALL ATOMIC_REF(value, a(offset+1)[image+1]).
func AtomicRef(a *Array[int64], image, offset int) (int64, error) {
	return a.fetch("coarray.AtomicRef", image, offset, 0, narma.NoOp)
}

// AtomicAdd adds value to element offset of image's block: ATOMIC_ADD.
func AtomicAdd(a *Array[int64], image, offset int, value int64) error {
	return a.atomic("coarray.AtomicAdd", image, offset, value, narma.Sum)
}

// AtomicAnd ands value into the element: ATOMIC_AND.
func AtomicAnd(a *Array[int64], image, offset int, value int64) error {
	return a.atomic("coarray.AtomicAnd", image, offset, value, narma.Band)
}

// AtomicOr ors value into the element: ATOMIC_OR.
func AtomicOr(a *Array[int64], image, offset int, value int64) error {
	return a.atomic("coarray.AtomicOr", image, offset, value, narma.Bor)
}

// AtomicXor xors value into the element: ATOMIC_XOR.
func AtomicXor(a *Array[int64], image, offset int, value int64) error {
	return a.atomic("coarray.AtomicXor", image, offset, value, narma.Bxor)
}

// AtomicFetchAdd adds value to the element and returns its value before:
// ATOMIC_FETCH_ADD.
func AtomicFetchAdd(a *Array[int64], image, offset int, value int64) (int64, error) {
	return a.fetch("coarray.AtomicFetchAdd", image, offset, value, narma.Sum)
}

// AtomicFetchAnd ands value into the element and returns its value
// before: ATOMIC_FETCH_AND.
func AtomicFetchAnd(a *Array[int64], image, offset int, value int64) (int64, error) {
	return a.fetch("coarray.AtomicFetchAnd", image, offset, value, narma.Band)
}

// AtomicFetchOr ors value into the element and returns its value before:
// ATOMIC_FETCH_OR.
func AtomicFetchOr(a *Array[int64], image, offset int, value int64) (int64, error) {
	return a.fetch("coarray.AtomicFetchOr", image, offset, value, narma.Bor)
}

// AtomicFetchXor xors value into the element and returns its value
// before: ATOMIC_FETCH_XOR.
func AtomicFetchXor(a *Array[int64], image, offset int, value int64) (int64, error) {
	return a.fetch("coarray.AtomicFetchXor", image, offset, value, narma.Bxor)
}

// AtomicCAS replaces the element with swap if it equals compare, and
// returns its value before: Fortran's CALL ATOMIC_CAS(a(offset+1)[image+1],
// old, compare, swap). The swap happened if old == compare.
func AtomicCAS(a *Array[int64], image, offset int, compare, swap int64) (old int64, err error) {
	const op = "coarray.AtomicCAS"
	target, err := a.check(op, image, offset, 1)
	if err != nil {
		return 0, err
	}
	return a.cas(target, offset, compare, swap)
}

// cas is AtomicCAS on initial image target, checked.
func (a *Array[T]) cas(target, offset int, compare, swap T) (old T, err error) {
	if err := a.w.CompareAndSwap(compare, swap, &old, target, a.disp(offset)); err != nil {
		return old, err
	}
	return old, a.w.Flush(a.obj.im.c.Context(), target)
}

// atomic applies o with value to one element and completes it.
func (a *Array[T]) atomic(op string, image, offset int, value T, o narma.Op) error {
	target, err := a.check(op, image, offset, 1)
	if err != nil {
		return err
	}
	if err := a.w.Accumulate([]T{value}, target, a.disp(offset), o); err != nil {
		return err
	}
	return a.w.Flush(a.obj.im.c.Context(), target)
}

// fetch applies o with value to one element, completes it and returns the
// element's value before.
func (a *Array[T]) fetch(op string, image, offset int, value T, o narma.Op) (old T, err error) {
	target, err := a.check(op, image, offset, 1)
	if err != nil {
		return old, err
	}
	if err := a.w.FetchAndOp(value, &old, target, a.disp(offset), o); err != nil {
		return old, err
	}
	return old, a.w.Flush(a.obj.im.c.Context(), target)
}
