package mem

import (
	"errors"
	"sync/atomic"
	"unsafe"
)

// ErrLength is returned when buffer lengths do not describe whole elements
// or do not match: src not a multiple of the element size, dst shorter than
// src, or result of a different length than src.
var ErrLength = errors.New("mem: bad buffer length")

// ErrOp is returned when an operation is not valid for an element type
// (see Op.ValidFor), or when the type or the operation is invalid.
var ErrOp = errors.New("mem: operation not valid for element type")

// AtomicAccumulate sets, for each element i of type t in src,
// dst[i] = dst[i] op src[i], atomically per element (not across elements),
// and, if result is non-nil, stores the element's previous value into
// result[i]. It is safe against concurrent AtomicAccumulate,
// AtomicCompareSwap and the other atomics of this package on the same or
// neighbouring memory. The arithmetic is that of Apply (wrap-around
// integers; Min/Max replace only when src compares less/greater with Go's
// comparison operators, so NaNs in src never replace).
//
// For NoOp, src is only used for its length, and may be nil, in which case
// the number of elements is taken from result: result receives the current
// values and dst is unchanged.
//
// Errors, returned before any byte of dst is modified:
//   - ErrOp if op is not ValidFor(t);
//   - ErrLength if len(src) is not a multiple of t.Size(), if len(dst) <
//     len(src), or if result is non-nil and len(result) != len(src);
//   - ErrAlign if dst is not aligned to t.Size(), or, for 1- and 2-byte
//     types, if the aligned 32-bit word holding the last element extends
//     beyond cap(dst).
//
// 1- and 2-byte elements are updated by compare-and-swap on the aligned
// 32-bit word that contains them, changing only their bytes. That word may
// start before dst; the caller must guarantee that it lies in the same
// allocation, which holds for memory from Alloc and for Go heap allocations
// (which start 8-byte aligned). src and result need not be aligned and are
// accessed non-atomically.
func AtomicAccumulate(op Op, t Type, dst, src, result []byte) error {
	if !op.ValidFor(t) {
		return ErrOp
	}
	size := t.Size()
	n := len(src)
	if op == NoOp && src == nil {
		n = len(result)
	}
	if n%size != 0 || len(dst) < n || (result != nil && len(result) != n) {
		return ErrLength
	}
	if n == 0 {
		return nil
	}
	addr := Addr(dst)
	if addr%uintptr(size) != 0 {
		return ErrAlign
	}
	switch size {
	case 8:
		accumulate64(op, t, dst[:n], src, result)
	case 4:
		accumulate32(op, t, dst[:n], src, result)
	default:
		// The word holding the last element must lie within cap(dst).
		last := addr + uintptr(n-1)
		if last&^3+4 > addr+uintptr(cap(dst)) {
			return ErrAlign
		}
		accumulateSub(op, t, dst[:n], src, result)
	}
	return nil
}

// accumulate64 handles 8-byte elements; dst is 8-byte aligned.
func accumulate64(op Op, t Type, dst, src, result []byte) {
	isInt := !t.IsFloat()
	for i := 0; i < len(dst); i += 8 {
		p := (*uint64)(unsafe.Pointer(&dst[i]))
		var s, old uint64
		if op != NoOp {
			s = loadBits(src[i : i+8])
		}
		switch {
		case op == NoOp:
			old = atomic.LoadUint64(p)
		case op == Replace:
			old = atomic.SwapUint64(p, s)
		case op == Sum && isInt:
			old = atomic.AddUint64(p, s) - s
		case op == Band:
			old = atomic.AndUint64(p, s)
		case op == Bor:
			old = atomic.OrUint64(p, s)
		default:
			for {
				old = atomic.LoadUint64(p)
				if atomic.CompareAndSwapUint64(p, old, combineBits(op, t, old, s)) {
					break
				}
			}
		}
		if result != nil {
			storeBits(result[i:i+8], old)
		}
	}
}

// accumulate32 handles 4-byte elements; dst is 4-byte aligned.
func accumulate32(op Op, t Type, dst, src, result []byte) {
	isInt := !t.IsFloat()
	for i := 0; i < len(dst); i += 4 {
		p := (*uint32)(unsafe.Pointer(&dst[i]))
		var s, old uint32
		if op != NoOp {
			s = uint32(loadBits(src[i : i+4]))
		}
		switch {
		case op == NoOp:
			old = atomic.LoadUint32(p)
		case op == Replace:
			old = atomic.SwapUint32(p, s)
		case op == Sum && isInt:
			old = atomic.AddUint32(p, s) - s
		case op == Band:
			old = atomic.AndUint32(p, s)
		case op == Bor:
			old = atomic.OrUint32(p, s)
		default:
			for {
				old = atomic.LoadUint32(p)
				if atomic.CompareAndSwapUint32(p, old, uint32(combineBits(op, t, uint64(old), uint64(s)))) {
					break
				}
			}
		}
		if result != nil {
			storeBits(result[i:i+4], uint64(old))
		}
	}
}

// subWord returns the aligned 32-bit word holding the element of size
// bytes at b[0], the bit shift of the element within the word and the mask
// of its bits. b[0] must be aligned to size and the word must lie in b's
// allocation.
func subWord(b []byte, size int) (w *uint32, shift uint, mask uint32) {
	p := unsafe.Pointer(&b[0])
	off := uintptr(p) & 3
	w = (*uint32)(unsafe.Add(p, -int(off)))
	shift = uint(off) * 8
	mask = uint32(1)<<(uint(size)*8) - 1
	return w, shift, mask << shift
}

// accumulateSub handles 1- and 2-byte elements; dst is aligned to the
// element size and the word holding its last element is within its
// allocation.
func accumulateSub(op Op, t Type, dst, src, result []byte) {
	size := t.Size()
	for i := 0; i < len(dst); i += size {
		w, shift, mask := subWord(dst[i:], size)
		var s uint32
		if op != NoOp {
			s = uint32(loadBits(src[i : i+size]))
		}
		var word uint32
		switch op {
		case NoOp:
			word = atomic.LoadUint32(w)
		case Band:
			word = atomic.AndUint32(w, ^mask|s<<shift)
		case Bor:
			word = atomic.OrUint32(w, s<<shift)
		default:
			for {
				word = atomic.LoadUint32(w)
				old := uint64((word & mask) >> shift)
				nv := uint32(combineBits(op, t, old, uint64(s))) << shift
				if atomic.CompareAndSwapUint32(w, word, word&^mask|nv&mask) {
					break
				}
			}
		}
		if result != nil {
			storeBits(result[i:i+size], uint64((word&mask)>>shift))
		}
	}
}

// AtomicCompareSwap atomically compares the first element of type t in dst
// with the first element of compare and, if they are equal, replaces it
// with the first element of swap. If result is non-nil, the element's
// previous value is stored into it. The comparison is bitwise, also for
// floats (so NaNs with equal bits compare equal, and -0 differs from +0).
//
// It returns ErrOp if t is invalid, ErrLength if dst, compare, swap or a
// non-nil result is shorter than one element, and ErrAlign under the same
// alignment conditions as AtomicAccumulate; dst is unchanged on error.
func AtomicCompareSwap(t Type, dst, compare, swap, result []byte) error {
	if !t.Valid() {
		return ErrOp
	}
	size := t.Size()
	if len(dst) < size || len(compare) < size || len(swap) < size || (result != nil && len(result) < size) {
		return ErrLength
	}
	addr := Addr(dst)
	if addr%uintptr(size) != 0 {
		return ErrAlign
	}
	cmp := loadBits(compare[:size])
	swp := loadBits(swap[:size])
	// Words are swapped first, as in AtomicCompareSwap64.
	var old uint64
	switch size {
	case 8:
		old = AtomicCompareSwap64(dst, cmp, swp)
	case 4:
		p := (*uint32)(unsafe.Pointer(&dst[0]))
		for old = cmp; !atomic.CompareAndSwapUint32(p, uint32(cmp), uint32(swp)); {
			if old = uint64(atomic.LoadUint32(p)); old != cmp {
				break
			}
		}
	default:
		if addr&^3+4 > addr+uintptr(cap(dst)) {
			return ErrAlign
		}
		w, shift, mask := subWord(dst, size)
		for {
			word := atomic.LoadUint32(w)
			old = uint64((word & mask) >> shift)
			if old != cmp || atomic.CompareAndSwapUint32(w, word, word&^mask|uint32(swp)<<shift) {
				break
			}
		}
	}
	if result != nil {
		storeBits(result[:size], old)
	}
	return nil
}

// word64 returns b's first 8 bytes as a *uint64. b must hold at least 8
// bytes (a shorter b panics with an index error) and should be 8-byte
// aligned: misaligned 64-bit atomics are not atomic on every platform and
// fault on some.
func word64(b []byte) *uint64 {
	return (*uint64)(unsafe.Pointer(&b[:8][0]))
}

// Word64 is word64 for other packages: b's first 8 bytes as a *uint64, for
// a word of memory laid out by hand (a record's head in a ring) that the
// caller loads and stores with package sync/atomic or StoreFenced64. b
// must hold at least 8 bytes and be 8-byte aligned; alignment is not
// checked.
func Word64(b []byte) *uint64 { return word64(b) }

// AtomicLoad64 atomically loads the 64-bit word in b[:8]. b must be 8-byte
// aligned and hold at least 8 bytes; alignment is not checked.
func AtomicLoad64(b []byte) uint64 { return atomic.LoadUint64(word64(b)) }

// AtomicStore64 atomically stores v into the 64-bit word in b[:8]. b must
// be 8-byte aligned and hold at least 8 bytes; alignment is not checked.
func AtomicStore64(b []byte, v uint64) { atomic.StoreUint64(word64(b), v) }

// AtomicAdd64 atomically adds delta to the 64-bit word in b[:8] and returns
// the new value. b must be 8-byte aligned and hold at least 8 bytes;
// alignment is not checked.
func AtomicAdd64(b []byte, delta uint64) uint64 { return atomic.AddUint64(word64(b), delta) }

// AtomicSwap64 atomically stores v into the 64-bit word in b[:8] and
// returns the previous value. b must be 8-byte aligned and hold at least 8
// bytes; alignment is not checked.
func AtomicSwap64(b []byte, v uint64) uint64 { return atomic.SwapUint64(word64(b), v) }

// AtomicCAS64 atomically replaces the 64-bit word in b[:8] by new if it
// equals old, and reports whether it did. b must be 8-byte aligned and hold
// at least 8 bytes; alignment is not checked.
func AtomicCAS64(b []byte, old, new uint64) bool {
	return atomic.CompareAndSwapUint64(word64(b), old, new)
}

// AtomicCompareSwap64 atomically replaces the 64-bit word in b[:8] by new
// if it equals old, and returns the word's previous value. b must be
// 8-byte aligned and hold at least 8 bytes; alignment is not checked.
//
// It swaps first and reads only if that failed: the word's owner is often
// another core (a lock word), and a load first would fetch its line once
// to read it and again to own it. The value read after a failed swap is
// the result if it differs from old (a compare at that moment would have
// failed); if it equals old, the swap is tried again.
func AtomicCompareSwap64(b []byte, old, new uint64) (prev uint64) {
	p := word64(b)
	for prev = old; !atomic.CompareAndSwapUint64(p, old, new); {
		if prev = atomic.LoadUint64(p); prev != old {
			break
		}
	}
	return prev
}
