package mem

import (
	"math"
	"unsafe"
)

func init() {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) != 1 {
		panic("mem: big-endian hosts are not supported")
	}
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type float interface {
	~float32 | ~float64
}

// Apply sets dst[i] = dst[i] op src[i] for each of the len(src)/t.Size()
// elements of type t held in src (trailing bytes of src that do not form a
// whole element are ignored). It is not atomic: no other goroutine may
// access the affected bytes of dst concurrently.
//
// Elements are in host (little-endian) representation. Replace copies src
// into dst; NoOp leaves dst unchanged; Sum and Prod wrap around for integers;
// Min and Max replace an element only when src compares less (greater) with
// Go's < (>), so for floats a NaN in src never replaces and a NaN in dst is
// kept, and -0 and +0 are not distinguished. Which NaN payload a float Sum
// or Prod of two NaNs yields is unspecified (it follows the hardware and the
// operand order chosen by the compiler). dst and src need not be
// aligned, but aligned memory is faster.
//
// Apply panics if op is not ValidFor(t) or if dst is shorter than the
// elements of src.
func Apply(op Op, t Type, dst, src []byte) {
	if !op.ValidFor(t) {
		panic("mem: Apply: " + op.String() + " not valid for " + t.String())
	}
	size := t.Size()
	m := len(src) / size * size
	if len(dst) < m {
		panic("mem: Apply: dst shorter than src")
	}
	switch {
	case m == 0 || op == NoOp:
		return
	case op == Replace:
		copy(dst[:m], src[:m])
		return
	}
	n := m / size
	dp := unsafe.Pointer(unsafe.SliceData(dst))
	sp := unsafe.Pointer(unsafe.SliceData(src))
	if (uintptr(dp)|uintptr(sp))&uintptr(size-1) != 0 {
		applyUnaligned(op, t, dst[:m], src[:m])
		return
	}
	switch t {
	case Int8:
		applyInt(op, unsafe.Slice((*int8)(dp), n), unsafe.Slice((*int8)(sp), n))
	case Int16:
		applyInt(op, unsafe.Slice((*int16)(dp), n), unsafe.Slice((*int16)(sp), n))
	case Int32:
		applyInt(op, unsafe.Slice((*int32)(dp), n), unsafe.Slice((*int32)(sp), n))
	case Int64:
		applyInt(op, unsafe.Slice((*int64)(dp), n), unsafe.Slice((*int64)(sp), n))
	case Uint8:
		applyInt(op, unsafe.Slice((*uint8)(dp), n), unsafe.Slice((*uint8)(sp), n))
	case Uint16:
		applyInt(op, unsafe.Slice((*uint16)(dp), n), unsafe.Slice((*uint16)(sp), n))
	case Uint32:
		applyInt(op, unsafe.Slice((*uint32)(dp), n), unsafe.Slice((*uint32)(sp), n))
	case Uint64:
		applyInt(op, unsafe.Slice((*uint64)(dp), n), unsafe.Slice((*uint64)(sp), n))
	case Float32:
		applyFloat(op, unsafe.Slice((*float32)(dp), n), unsafe.Slice((*float32)(sp), n))
	case Float64:
		applyFloat(op, unsafe.Slice((*float64)(dp), n), unsafe.Slice((*float64)(sp), n))
	}
}

// applyInt is the aligned typed loop for integer elements; len(d) >= len(s).
func applyInt[T integer](op Op, d, s []T) {
	d = d[:len(s)]
	switch op {
	case Sum:
		for i, v := range s {
			d[i] += v
		}
	case Prod:
		for i, v := range s {
			d[i] *= v
		}
	case Min:
		for i, v := range s {
			if v < d[i] {
				d[i] = v
			}
		}
	case Max:
		for i, v := range s {
			if v > d[i] {
				d[i] = v
			}
		}
	case Band:
		for i, v := range s {
			d[i] &= v
		}
	case Bor:
		for i, v := range s {
			d[i] |= v
		}
	case Bxor:
		for i, v := range s {
			d[i] ^= v
		}
	}
}

// applyFloat is the aligned typed loop for float elements; len(d) >= len(s).
func applyFloat[T float](op Op, d, s []T) {
	d = d[:len(s)]
	switch op {
	case Sum:
		for i, v := range s {
			d[i] += v
		}
	case Prod:
		for i, v := range s {
			d[i] *= v
		}
	case Min:
		for i, v := range s {
			if v < d[i] {
				d[i] = v
			}
		}
	case Max:
		for i, v := range s {
			if v > d[i] {
				d[i] = v
			}
		}
	}
}

// applyUnaligned is the slow path of Apply for misaligned memory; len(dst)
// == len(src) is a multiple of t.Size().
func applyUnaligned(op Op, t Type, dst, src []byte) {
	size := t.Size()
	for i := 0; i < len(src); i += size {
		d := dst[i : i+size]
		storeBits(d, combineBits(op, t, loadBits(d), loadBits(src[i:i+size])))
	}
}

// loadBits returns the element held in b (len 1, 2, 4 or 8), zero-extended.
// The shifts assemble the host (little-endian) representation; the compiler
// merges them into a single load.
func loadBits(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(b[0]) | uint64(b[1])<<8
	case 4:
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
	}
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// storeBits stores the low len(b) bytes of v into b (len 1, 2, 4 or 8) in
// host (little-endian) representation.
func storeBits(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		_ = b[1]
		b[0], b[1] = byte(v), byte(v>>8)
	case 4:
		_ = b[3]
		b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	default:
		_ = b[7]
		b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		b[4], b[5], b[6], b[7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	}
}

// combineBits returns a op b for elements of type t given as zero-extended
// bit patterns; the result is zero-extended too. op must be ValidFor(t).
func combineBits(op Op, t Type, a, b uint64) uint64 {
	switch t {
	case Int8:
		return uint64(uint8(combineInt(op, int8(a), int8(b))))
	case Int16:
		return uint64(uint16(combineInt(op, int16(a), int16(b))))
	case Int32:
		return uint64(uint32(combineInt(op, int32(a), int32(b))))
	case Int64:
		return uint64(combineInt(op, int64(a), int64(b)))
	case Uint8:
		return uint64(combineInt(op, uint8(a), uint8(b)))
	case Uint16:
		return uint64(combineInt(op, uint16(a), uint16(b)))
	case Uint32:
		return uint64(combineInt(op, uint32(a), uint32(b)))
	case Uint64:
		return combineInt(op, a, b)
	case Float32:
		r := combineFloat(op, math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)))
		return uint64(math.Float32bits(r))
	case Float64:
		return math.Float64bits(combineFloat(op, math.Float64frombits(a), math.Float64frombits(b)))
	}
	return a
}

func combineInt[T integer](op Op, a, b T) T {
	switch op {
	case Sum:
		return a + b
	case Prod:
		return a * b
	case Min:
		if b < a {
			return b
		}
	case Max:
		if b > a {
			return b
		}
	case Band:
		return a & b
	case Bor:
		return a | b
	case Bxor:
		return a ^ b
	case Replace:
		return b
	}
	return a
}

func combineFloat[T float](op Op, a, b T) T {
	switch op {
	case Sum:
		return a + b
	case Prod:
		return a * b
	case Min:
		if b < a {
			return b
		}
	case Max:
		if b > a {
			return b
		}
	case Replace:
		return b
	}
	return a
}
