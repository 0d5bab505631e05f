package local

import (
	"errors"
	"fmt"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// The functions in this file are the load/store core of the transport:
// they apply one operation to exposed memory given as a byte slice, after
// checking it. They know nothing of ranks, keys or notices, so a transport
// over mapped memory can call them on its mapping.
//
// The region memory must keep the capacity it was allocated with (do not
// reslice it with a smaller capacity): the 1- and 2-byte atomics of package
// mem update the aligned 32-bit word around an element, which must lie
// inside the slice's capacity.

// PutAt copies src into region at byte offset off. It returns
// transport.ErrBounds, and writes nothing, unless
// 0 <= off && off+len(src) <= len(region).
func PutAt(region []byte, off int, src []byte) error {
	if off < 0 || len(src) > len(region)-off {
		return transport.ErrBounds
	}
	mem.CopyOut(region[off:], src)
	return nil
}

// GetAt copies len(dst) bytes of region at byte offset off into dst. It
// returns transport.ErrBounds, and writes nothing, unless
// 0 <= off && off+len(dst) <= len(region).
func GetAt(region []byte, off int, dst []byte) error {
	if off < 0 || len(dst) > len(region)-off {
		return transport.ErrBounds
	}
	copy(dst, region[off:])
	return nil
}

// AccumulateAt applies op element-wise and atomically per element to the
// elements of type t of region starting at byte offset off, with operands
// src, as mem.AtomicAccumulate does; if result is not nil it receives the
// previous contents. For NoOp with a nil src the number of elements is
// taken from result.
//
// Nothing is written on error. The errors are, in the order checked: an
// error wrapping mem.ErrOp if op is not valid for t; one wrapping
// mem.ErrLength if src is not a whole number of elements or result (if not
// nil) is not as long as src; transport.ErrBounds if the elements do not
// lie inside region; transport.ErrAlign if off is not a multiple of the
// element size, or (wrapping mem.ErrAlign too) if the region memory itself
// is not aligned for t.
func AccumulateAt(region []byte, off int, op mem.Op, t mem.Type, src, result []byte) error {
	if w := word(region, off, t, len(src), result); w != nil && accumulateWord(w, op, src, result) {
		return nil
	}
	if _, err := CheckAccumulate(len(region), off, op, t, src, result); err != nil {
		return err
	}
	return memErr(mem.AtomicAccumulate(op, t, region[off:], src, result))
}

// CheckAccumulate makes the checks of AccumulateAt, except the alignment
// of the memory itself, for a region of regionLen bytes, without touching
// memory: a transport that moves the operation elsewhere checks it at the
// origin with this. It returns the number of bytes the operation covers.
func CheckAccumulate(regionLen, off int, op mem.Op, t mem.Type, src, result []byte) (int, error) {
	if !op.ValidFor(t) {
		return 0, fmt.Errorf("local: accumulate %v on %v: %w", op, t, mem.ErrOp)
	}
	size := t.Size()
	n := len(src)
	if op == mem.NoOp && src == nil {
		n = len(result)
	}
	if n%size != 0 || (result != nil && len(result) != n) {
		return 0, fmt.Errorf("local: accumulate of %d bytes of %v with a %d-byte result: %w",
			n, t, len(result), mem.ErrLength)
	}
	if off < 0 || n > regionLen-off {
		return 0, transport.ErrBounds
	}
	if off%size != 0 {
		return 0, transport.ErrAlign
	}
	return n, nil
}

// CompareSwapAt atomically replaces the element of type t at byte offset
// off of region with the first element of swap if it equals (bitwise) the
// first element of compare, as mem.AtomicCompareSwap does. If result is
// not nil it receives the previous value.
//
// Nothing is written on error. The errors are, in the order checked: an
// error wrapping mem.ErrOp if t is invalid; one wrapping mem.ErrLength if
// compare, swap or a non-nil result is shorter than an element;
// transport.ErrBounds if the element does not lie inside region;
// transport.ErrAlign if off is not a multiple of the element size, or
// (wrapping mem.ErrAlign too) if the region memory itself is not aligned.
func CompareSwapAt(region []byte, off int, t mem.Type, compare, swap, result []byte) error {
	if w := word(region, off, t, min(len(compare), len(swap)), result); w != nil && len(compare) == 8 && len(swap) == 8 {
		compareSwapWord(w, compare, swap, result)
		return nil
	}
	if err := CheckCompareSwap(len(region), off, t, compare, swap, result); err != nil {
		return err
	}
	return memErr(mem.AtomicCompareSwap(t, region[off:], compare, swap, result))
}

// CheckCompareSwap makes the checks of CompareSwapAt, except the alignment
// of the memory itself, for a region of regionLen bytes, without touching
// memory.
func CheckCompareSwap(regionLen, off int, t mem.Type, compare, swap, result []byte) error {
	if !t.Valid() {
		return fmt.Errorf("local: compare-and-swap on %v: %w", t, mem.ErrOp)
	}
	size := t.Size()
	if len(compare) < size || len(swap) < size || (result != nil && len(result) < size) {
		return fmt.Errorf("local: compare-and-swap of %v with %d/%d/%d-byte operands: %w",
			t, len(compare), len(swap), len(result), mem.ErrLength)
	}
	if off < 0 || size > regionLen-off {
		return transport.ErrBounds
	}
	if off%size != 0 {
		return transport.ErrAlign
	}
	return nil
}

// memErr converts an error of package mem: misalignment of the region
// itself is reported as transport.ErrAlign (still matching mem.ErrAlign),
// anything else is wrapped as it is.
func memErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mem.ErrAlign):
		return fmt.Errorf("local: %w: %w", transport.ErrAlign, err)
	}
	return fmt.Errorf("local: %w", err)
}
