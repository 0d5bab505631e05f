package mem

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"
)

var allTypes = []Type{Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float32, Float64}

var allOps = []Op{Sum, Prod, Min, Max, Band, Bor, Bxor, Replace, NoOp}

type (
	myInt32   int32
	myFloat64 float64
	myUint8   uint8
)

func TestTypeOf(t *testing.T) {
	cases := []struct {
		got, want Type
	}{
		{TypeOf[int8](), Int8}, {TypeOf[int16](), Int16}, {TypeOf[int32](), Int32},
		{TypeOf[int64](), Int64}, {TypeOf[uint8](), Uint8}, {TypeOf[uint16](), Uint16},
		{TypeOf[uint32](), Uint32}, {TypeOf[uint64](), Uint64}, {TypeOf[float32](), Float32},
		{TypeOf[float64](), Float64}, {TypeOf[myInt32](), Int32}, {TypeOf[myFloat64](), Float64},
		{TypeOf[myUint8](), Uint8},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: TypeOf = %v, want %v", i, c.got, c.want)
		}
	}
}

func TestAlloc(t *testing.T) {
	var blocks [][]byte
	for _, n := range []int{0, 1, 3, 7, 8, 9, 63, 64, 65, 1000, 4096, 1 << 20} {
		b := Alloc(n)
		if b == nil || len(b) != n {
			t.Fatalf("Alloc(%d): len %d nil=%v", n, len(b), b == nil)
		}
		if cap(b) != (n+7)&^7 {
			t.Errorf("Alloc(%d): cap %d", n, cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%BlockAlign != 0 {
			t.Errorf("Alloc(%d): address %#x not %d-aligned", n, p, BlockAlign)
		}
		for i, v := range b[:cap(b)] {
			if v != 0 {
				t.Fatalf("Alloc(%d): byte %d = %d", n, i, v)
			}
		}
		if n > 0 {
			if !Owns(b) || !Owns(b[n-1:]) || !Owns(b[:1]) {
				t.Errorf("Alloc(%d): Owns false for block or part", n)
			}
			if Owns(b[:cap(b)]) && cap(b) > n {
				t.Errorf("Alloc(%d): Owns true past length", n)
			}
		}
		if Owns(b[:0]) {
			t.Errorf("Owns(empty) = true")
		}
		blocks = append(blocks, b)
	}
	if Owns(make([]byte, 16)) {
		t.Error("Owns(foreign) = true")
	}
	for _, b := range blocks {
		if len(b) > 1 {
			if err := Free(b[1:]); !errors.Is(err, ErrNotAllocated) {
				t.Errorf("Free(sub-slice) = %v", err)
			}
			if err := Free(b[:len(b)-1]); !errors.Is(err, ErrNotAllocated) {
				t.Errorf("Free(shorter) = %v", err)
			}
		}
		if err := Free(b); err != nil {
			t.Errorf("Free(len %d) = %v", len(b), err)
		}
		if len(b) > 0 && Owns(b) {
			t.Errorf("Owns after Free")
		}
		if err := Free(b); !errors.Is(err, ErrNotAllocated) {
			t.Errorf("double Free = %v", err)
		}
	}
	if err := Free(nil); !errors.Is(err, ErrNotAllocated) {
		t.Errorf("Free(nil) = %v", err)
	}
	if err := Free(make([]byte, 8)); !errors.Is(err, ErrNotAllocated) {
		t.Errorf("Free(foreign) = %v", err)
	}
}

func TestAllocConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b := Alloc(g*10 + i%50 + 1)
				b[0] = 1
				if !Owns(b) {
					t.Error("Owns(fresh block) = false")
					return
				}
				if err := Free(b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestBytesSlice(t *testing.T) {
	s := make([]int32, 5, 8)
	for i := range s {
		s[i] = int32(i*0x01010101 - 7)
	}
	b := Bytes(s)
	if len(b) != 20 || cap(b) != 32 || Addr(b) != uintptr(unsafe.Pointer(&s[0])) {
		t.Fatalf("Bytes: len %d cap %d", len(b), cap(b))
	}
	back, err := Slice[int32](b)
	if err != nil || len(back) != 5 || cap(back) != 8 || &back[0] != &s[0] {
		t.Fatalf("Slice: %v len %d cap %d", err, len(back), cap(back))
	}
	back[2] = 42
	if s[2] != 42 {
		t.Error("Slice does not alias")
	}
	if Bytes([]float64(nil)) != nil || len(Bytes([]int64{})) != 0 {
		t.Error("Bytes(empty) not empty")
	}
	if v, err := Slice[uint64](nil); v != nil || err != nil {
		t.Errorf("Slice(nil) = %v, %v", v, err)
	}
	if _, err := Slice[int32](b[1:5]); !errors.Is(err, ErrAlign) {
		t.Errorf("Slice(misaligned) = %v", err)
	}
	if _, err := Slice[int32](b[:6]); !errors.Is(err, ErrAlign) {
		t.Errorf("Slice(bad length) = %v", err)
	}
	if _, err := Slice[struct{}](b); !errors.Is(err, ErrAlign) {
		t.Errorf("Slice(zero size) = %v", err)
	}
	if SizeOf[float32]() != 4 || SizeOf[[3]uint16]() != 6 || SizeOf[struct{}]() != 0 {
		t.Error("SizeOf")
	}
	if Addr(nil) != 0 || Addr(b[:0]) != 0 {
		t.Error("Addr(empty) != 0")
	}
	f := []float64{1.5, -2}
	fb := Bytes(f)
	if got := math.Float64frombits(loadBits(fb[8:16])); got != -2 {
		t.Errorf("host representation: %v", got)
	}
}

// Naive references, written with typed Go arithmetic.

func refInt[T integer](op Op, a, b T) T {
	switch op {
	case Sum:
		return a + b
	case Prod:
		return a * b
	case Min:
		return min(a, b)
	case Max:
		return max(a, b)
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

func refFloat[T float](op Op, a, b T) T {
	switch op {
	case Sum:
		return a + b
	case Prod:
		return a * b
	case Min:
		if b < a {
			return b
		}
		return a
	case Max:
		if b > a {
			return b
		}
		return a
	case Replace:
		return b
	}
	return a
}

func randVals[T Elem](r *rand.Rand, n int) []T {
	b := Alloc(n * SizeOf[T]())
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	v, err := Slice[T](b)
	if err != nil {
		panic(err)
	}
	return v
}

func intVals[T integer](r *rand.Rand) []T {
	var z T
	maxV := ^z
	if maxV < 0 { // signed
		maxV = T(uint64(1)<<(8*unsafe.Sizeof(z)-1) - 1)
	}
	minV := ^maxV
	v := []T{0, 1, 2, 3, 7, maxV, minV, maxV - 1, minV + 1, ^T(0), 0x55, 0x2a}
	return append(v, randVals[T](r, 20)...)
}

func floatVals[T float](r *rand.Rand) []T {
	negZero := T(math.Copysign(0, -1))
	v := []T{0, negZero, 1, -1.5, 2.5, 3, T(math.Inf(1)), T(math.Inf(-1)), T(math.NaN()),
		T(math.SmallestNonzeroFloat32), 1e30, -1e-30}
	for range 10 {
		v = append(v, T(r.NormFloat64()*1000))
	}
	return append(v, randVals[T](r, 10)...)
}

// copyTo returns a copy of b at an address offset by off from a
// 64-aligned block (extra capacity for sub-word atomics), freed when tb
// finishes.
func copyTo(tb testing.TB, b []byte, off int) []byte {
	buf := Alloc(len(b) + off)
	tb.Cleanup(func() {
		if err := Free(buf); err != nil {
			tb.Error(err)
		}
	})
	copy(buf[off:], b)
	return buf[off:]
}

func checkType[T Elem](t *testing.T, vals []T, ref func(Op, T, T) T) {
	typ := TypeOf[T]()
	k := len(vals)
	dstT := make([]T, 0, k*k)
	srcT := make([]T, 0, k*k)
	for _, a := range vals {
		for _, b := range vals {
			dstT = append(dstT, a)
			srcT = append(srcT, b)
		}
	}
	dst0, src := Bytes(dstT), Bytes(srcT)
	size := typ.Size()
	for _, op := range allOps {
		t.Run(fmt.Sprintf("%v/%v", typ, op), func(t *testing.T) {
			if !op.ValidFor(typ) {
				d := copyTo(t, dst0, 0)
				if err := AtomicAccumulate(op, typ, d, src, nil); !errors.Is(err, ErrOp) {
					t.Fatalf("invalid op: err %v", err)
				}
				if !bytes.Equal(d, dst0) {
					t.Fatal("dst changed on error")
				}
				return
			}
			wantT := make([]T, len(dstT))
			for i := range dstT {
				wantT[i] = ref(op, dstT[i], srcT[i])
			}
			want := Bytes(wantT)

			for _, off := range []int{0, size, 1, 3} {
				for _, soff := range []int{0, 1} {
					d := copyTo(t, dst0, off)
					s := copyTo(t, src, soff)
					Apply(op, typ, d, s)
					if i := firstDiff(d, want, typ); i >= 0 {
						t.Fatalf("Apply(off %d, soff %d) elem %d: got % x want % x (dst % x src % x)",
							off, soff, i, d[i*size:][:size], want[i*size:][:size],
							dst0[i*size:][:size], src[i*size:][:size])
					}
				}
			}

			for _, soff := range []int{0, 1} {
				d := copyTo(t, dst0, size)
				s := copyTo(t, src, soff)
				res := copyTo(t, make([]byte, len(src)), soff)
				if err := AtomicAccumulate(op, typ, d, s, res); err != nil {
					t.Fatal(err)
				}
				if i := firstDiff(d, want, typ); i >= 0 {
					t.Fatalf("AtomicAccumulate elem %d: got % x want % x", i, d[i*size:][:size], want[i*size:][:size])
				}
				if !bytes.Equal(res, dst0) { // old values are exact copies
					t.Fatalf("AtomicAccumulate result: got % x want % x", res, dst0)
				}
				// Again without result.
				d = copyTo(t, dst0, 0)
				if err := AtomicAccumulate(op, typ, d, s, nil); err != nil {
					t.Fatal(err)
				}
				if i := firstDiff(d, want, typ); i >= 0 {
					t.Fatalf("AtomicAccumulate(nil result) elem %d", i)
				}
			}
		})
	}
	// NoOp with nil src fetches.
	d := copyTo(t, dst0, 0)
	res := make([]byte, len(dst0))
	if err := AtomicAccumulate(NoOp, typ, d, nil, res); err != nil || !bytes.Equal(res, dst0) || !bytes.Equal(d, dst0) {
		t.Errorf("%v NoOp fetch: err %v", typ, err)
	}
}

// firstDiff returns the index of the first element of type typ where a
// and b differ, or -1. Elements are compared bitwise, except that two
// float NaNs compare equal: which payload a NaN-producing operation keeps
// when both operands are NaNs depends on the operand order the compiler
// chose, which differs between code paths.
func firstDiff(a, b []byte, typ Type) int {
	size := typ.Size()
	for i := 0; i < len(b); i += size {
		x, y := a[i:i+size], b[i:i+size]
		if bytes.Equal(x, y) || isNaN(typ, x) && isNaN(typ, y) {
			continue
		}
		return i / size
	}
	return -1
}

func isNaN(typ Type, b []byte) bool {
	switch typ {
	case Float32:
		return math.IsNaN(float64(math.Float32frombits(uint32(loadBits(b)))))
	case Float64:
		return math.IsNaN(math.Float64frombits(loadBits(b)))
	}
	return false
}

func TestApplyAndAtomicReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checkType(t, intVals[int8](r), refInt[int8])
	checkType(t, intVals[int16](r), refInt[int16])
	checkType(t, intVals[int32](r), refInt[int32])
	checkType(t, intVals[int64](r), refInt[int64])
	checkType(t, intVals[uint8](r), refInt[uint8])
	checkType(t, intVals[uint16](r), refInt[uint16])
	checkType(t, intVals[uint32](r), refInt[uint32])
	checkType(t, intVals[uint64](r), refInt[uint64])
	checkType(t, floatVals[float32](r), refFloat[float32])
	checkType(t, floatVals[float64](r), refFloat[float64])
}

func TestApplyTrailingAndPanics(t *testing.T) {
	dst := []byte{1, 0, 2, 0, 9}
	Apply(Sum, Int16, dst, []byte{1, 0, 1, 0, 7}) // trailing byte ignored
	if !bytes.Equal(dst, []byte{2, 0, 3, 0, 9}) {
		t.Errorf("got %v", dst)
	}
	mustPanic(t, "bad op", func() { Apply(Band, Float32, make([]byte, 4), make([]byte, 4)) })
	mustPanic(t, "short dst", func() { Apply(Sum, Int32, make([]byte, 4), make([]byte, 8)) })
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestAtomicConcurrentSum(t *testing.T) {
	const G, N = 8, 1000
	for _, typ := range []Type{Int8, Int16, Int32, Int64, Uint16, Float32, Float64} {
		t.Run(typ.String(), func(t *testing.T) {
			size := typ.Size()
			// Three elements, the middle one shared; guards around it.
			buf := Alloc(3 * size)
			for i := range buf {
				buf[i] = 0xA5
			}
			elem := buf[size : 2*size]
			clear(elem)
			one := oneOf(typ)
			var wg sync.WaitGroup
			for range G {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range N {
						if err := AtomicAccumulate(Sum, typ, elem, one, nil); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			want := make([]byte, size)
			for range G * N {
				Apply(Sum, typ, want, one)
			}
			if !bytes.Equal(elem, want) {
				t.Errorf("sum: got % x want % x", elem, want)
			}
			for i, v := range append(buf[:size:size], buf[2*size:]...) {
				if v != 0xA5 {
					t.Errorf("guard byte %d clobbered: %#x", i, v)
				}
			}
		})
	}
}

// oneOf returns the value 1 of type t in host representation.
func oneOf(t Type) []byte {
	b := make([]byte, t.Size())
	switch t {
	case Float32:
		storeBits(b, uint64(math.Float32bits(1)))
	case Float64:
		storeBits(b, math.Float64bits(1))
	default:
		b[0] = 1
	}
	return b
}

func TestAtomicFetchUnique(t *testing.T) {
	const G, N = 8, 1000
	elem := Alloc(8)
	seen := make([][]uint64, G)
	var wg sync.WaitGroup
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := oneOf(Int64)
			res := make([]byte, 8)
			for range N {
				if err := AtomicAccumulate(Sum, Int64, elem, one, res); err != nil {
					t.Error(err)
					return
				}
				seen[g] = append(seen[g], loadBits(res))
			}
		}()
	}
	wg.Wait()
	got := make([]bool, G*N)
	for _, s := range seen {
		for _, v := range s {
			if v >= G*N || got[v] {
				t.Fatalf("fetched value %d duplicated or out of range", v)
			}
			got[v] = true
		}
	}
}

func TestAtomicNeighbours(t *testing.T) {
	const G, N = 8, 1000
	for _, typ := range []Type{Int8, Uint8, Int16, Uint16} {
		t.Run(typ.String(), func(t *testing.T) {
			size := typ.Size()
			buf := Alloc(G * size) // G neighbouring elements sharing words
			var wg sync.WaitGroup
			for g := range G {
				wg.Add(1)
				go func() {
					defer wg.Done()
					elem := buf[g*size : (g+1)*size]
					one := oneOf(typ)
					mask := make([]byte, size)
					for i := range mask {
						mask[i] = 0xff
					}
					for i := range N {
						op := Sum
						src := one
						if i%10 == 9 { // mix in ops with other code paths
							op, src = Band, mask
						}
						if err := AtomicAccumulate(op, typ, elem, src, nil); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			want := make([]byte, size)
			for range N - N/10 {
				Apply(Sum, typ, want, oneOf(typ))
			}
			for g := range G {
				if got := buf[g*size : (g+1)*size]; !bytes.Equal(got, want) {
					t.Errorf("element %d: got % x want % x", g, got, want)
				}
			}
		})
	}
}

func TestAtomicCompareSwap(t *testing.T) {
	for _, typ := range allTypes {
		size := typ.Size()
		buf := Alloc(4 * size)
		for i := range buf {
			buf[i] = byte(i + 1)
		}
		orig := bytes.Clone(buf)
		dst := buf[size : 2*size]
		cur := bytes.Clone(dst)
		other := bytes.Repeat([]byte{0xEE}, size)
		res := make([]byte, size)
		// Mismatch: unchanged, result = current.
		if err := AtomicCompareSwap(typ, dst, other, other, res); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, orig) || !bytes.Equal(res, cur) {
			t.Errorf("%v: mismatching CAS changed memory or wrong result", typ)
		}
		// Match: swapped, result = old.
		clear(res)
		if err := AtomicCompareSwap(typ, dst, cur, other, res); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, other) || !bytes.Equal(res, cur) {
			t.Errorf("%v: matching CAS: dst % x res % x", typ, dst, res)
		}
		if !bytes.Equal(buf[:size], orig[:size]) || !bytes.Equal(buf[2*size:], orig[2*size:]) {
			t.Errorf("%v: CAS clobbered neighbours", typ)
		}
		if err := AtomicCompareSwap(typ, dst, other, cur, nil); err != nil || !bytes.Equal(dst, cur) {
			t.Errorf("%v: CAS with nil result: %v", typ, err)
		}
	}
	// Float compare is bitwise: -0 does not match +0, NaN matches itself.
	f := Alloc(8)
	storeBits(f, math.Float64bits(math.NaN()))
	nan := bytes.Clone(f)
	one := oneOf(Float64)
	if err := AtomicCompareSwap(Float64, f, nan, one, nil); err != nil || !bytes.Equal(f, one) {
		t.Error("NaN did not match its own bits")
	}
	clear(f)
	negZero := make([]byte, 8)
	storeBits(negZero, math.Float64bits(math.Copysign(0, -1)))
	if err := AtomicCompareSwap(Float64, f, negZero, one, nil); err != nil || !bytes.Equal(f, make([]byte, 8)) {
		t.Error("-0 matched +0")
	}
}

func TestAtomicCompareSwapConcurrent(t *testing.T) {
	// A lock-free counter in one byte of a shared word, incremented with a
	// CAS loop, while neighbouring bytes are incremented with Sum.
	const G, N = 8, 200
	buf := Alloc(4)
	ctr, nb := buf[1:2], buf[2:3]
	var wg sync.WaitGroup
	for range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			old, next, res := make([]byte, 1), make([]byte, 1), make([]byte, 1)
			for range N {
				for {
					if err := AtomicAccumulate(NoOp, Uint8, ctr, nil, old); err != nil {
						t.Error(err)
						return
					}
					next[0] = old[0] + 1
					if err := AtomicCompareSwap(Uint8, ctr, old, next, res); err != nil {
						t.Error(err)
						return
					}
					if res[0] == old[0] {
						break
					}
				}
				if err := AtomicAccumulate(Sum, Uint8, nb, []byte{1}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if want := byte(G * N % 256); ctr[0] != want || nb[0] != want || buf[0] != 0 || buf[3] != 0 {
		t.Errorf("got % x, want 00 %02x %02x 00", buf, want, want)
	}
}

func TestAtomicErrors(t *testing.T) {
	buf := Alloc(32)
	for i := range buf {
		buf[i] = byte(i)
	}
	orig := bytes.Clone(buf)
	src8 := make([]byte, 8)
	cases := []struct {
		name string
		err  error
		f    func() error
	}{
		{"misaligned int32", ErrAlign, func() error { return AtomicAccumulate(Sum, Int32, buf[2:10], src8, nil) }},
		{"misaligned int64", ErrAlign, func() error { return AtomicAccumulate(Sum, Int64, buf[4:12], src8, nil) }},
		{"misaligned int16", ErrAlign, func() error { return AtomicAccumulate(Sum, Int16, buf[1:9], src8, nil) }},
		{"misaligned float64 replace", ErrAlign, func() error { return AtomicAccumulate(Replace, Float64, buf[1:9], src8, nil) }},
		{"band float", ErrOp, func() error { return AtomicAccumulate(Band, Float64, buf[:8], src8, nil) }},
		{"bxor float32", ErrOp, func() error { return AtomicAccumulate(Bxor, Float32, buf[:8], src8, nil) }},
		{"invalid op", ErrOp, func() error { return AtomicAccumulate(0, Int32, buf[:8], src8, nil) }},
		{"invalid type", ErrOp, func() error { return AtomicAccumulate(Sum, 0, buf[:8], src8, nil) }},
		{"short dst", ErrLength, func() error { return AtomicAccumulate(Sum, Int32, buf[:4], src8, nil) }},
		{"partial element", ErrLength, func() error { return AtomicAccumulate(Sum, Int32, buf[:8], src8[:6], nil) }},
		{"short result", ErrLength, func() error { return AtomicAccumulate(Sum, Int32, buf[:8], src8, make([]byte, 4)) }},
		{"word past cap", ErrAlign, func() error { return AtomicAccumulate(Sum, Int8, buf[0:3:3], src8[:3], nil) }},
		{"word past cap 16", ErrAlign, func() error { return AtomicAccumulate(Sum, Int16, buf[4:6:6], src8[:2], nil) }},
		{"cas misaligned", ErrAlign, func() error { return AtomicCompareSwap(Int64, buf[4:12], src8, src8, nil) }},
		{"cas short", ErrLength, func() error { return AtomicCompareSwap(Int64, buf[:8], src8[:4], src8, nil) }},
		{"cas invalid type", ErrOp, func() error { return AtomicCompareSwap(0, buf[:8], src8, src8, nil) }},
		{"cas word past cap", ErrAlign, func() error { return AtomicCompareSwap(Uint8, buf[1:2:2], src8, src8, nil) }},
	}
	for _, c := range cases {
		if err := c.f(); !errors.Is(err, c.err) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
		}
		if !bytes.Equal(buf, orig) {
			t.Fatalf("%s: dst changed", c.name)
		}
	}
	// Within cap, the sub-word path is fine even if len stops mid-word.
	if err := AtomicAccumulate(Sum, Int8, buf[0:3:4], []byte{1, 1, 1}, nil); err != nil {
		t.Errorf("in-cap sub-word: %v", err)
	}
}

func TestAtomic64(t *testing.T) {
	b := Alloc(16)[8:]
	AtomicStore64(b, 40)
	if v := AtomicAdd64(b, 2); v != 42 {
		t.Errorf("Add = %d", v)
	}
	if AtomicCAS64(b, 41, 0) || !AtomicCAS64(b, 42, 7) || AtomicLoad64(b) != 7 {
		t.Error("CAS/Load")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				AtomicAdd64(b, 1)
			}
		}()
	}
	wg.Wait()
	if v := AtomicLoad64(b); v != 8007 {
		t.Errorf("concurrent Add: %d", v)
	}
	if v := AtomicSwap64(b, 5); v != 8007 || AtomicLoad64(b) != 5 {
		t.Errorf("Swap: previous %d, now %d", v, AtomicLoad64(b))
	}
	if prev := AtomicCompareSwap64(b, 4, 9); prev != 5 || AtomicLoad64(b) != 5 {
		t.Errorf("CompareSwap64(4, 9) on 5: previous %d, now %d", prev, AtomicLoad64(b))
	}
	if prev := AtomicCompareSwap64(b, 5, 9); prev != 5 || AtomicLoad64(b) != 9 {
		t.Errorf("CompareSwap64(5, 9) on 5: previous %d, now %d", prev, AtomicLoad64(b))
	}
}

// TestAtomicCompareSwap64Counter: a counter incremented by compare-and-swap
// loops from many goroutines counts every increment, so the value a failed
// swap returns is one the word held.
func TestAtomicCompareSwap64Counter(t *testing.T) {
	b := Alloc(8)
	const G, N = 8, 2000
	var wg sync.WaitGroup
	for range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range N {
				for old := AtomicLoad64(b); ; {
					prev := AtomicCompareSwap64(b, old, old+1)
					if prev == old {
						break
					}
					old = prev
				}
			}
		}()
	}
	wg.Wait()
	if v := AtomicLoad64(b); v != G*N {
		t.Errorf("counter %d, want %d", v, G*N)
	}
}

func TestNoAllocs(t *testing.T) {
	dst, src, res := Alloc(1024), Alloc(1024), Alloc(1024)
	for _, typ := range allTypes {
		for _, op := range allOps {
			if !op.ValidFor(typ) {
				continue
			}
			if n := testing.AllocsPerRun(10, func() {
				if err := AtomicAccumulate(op, typ, dst, src, res); err != nil {
					panic(err)
				}
			}); n != 0 {
				t.Errorf("AtomicAccumulate(%v, %v): %v allocs", op, typ, n)
			}
			if n := testing.AllocsPerRun(10, func() { Apply(op, typ, dst, src) }); n != 0 {
				t.Errorf("Apply(%v, %v): %v allocs", op, typ, n)
			}
			if n := testing.AllocsPerRun(10, func() { Apply(op, typ, dst[1:], src[:1000]) }); n != 0 {
				t.Errorf("Apply unaligned (%v, %v): %v allocs", op, typ, n)
			}
		}
	}
	if n := testing.AllocsPerRun(10, func() { _ = AtomicAccumulate(Band, Float64, dst, src, nil) }); n != 0 {
		t.Errorf("error path: %v allocs", n)
	}
}

func FuzzAccumulate(f *testing.F) {
	f.Add(uint8(0), uint8(0), []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{8, 7, 6, 5, 4, 3, 2, 1})
	f.Add(uint8(8), uint8(2), []byte{0, 0, 0xc0, 0x7f}, []byte{0, 0, 0x80, 0x3f})
	f.Add(uint8(9), uint8(3), bytes.Repeat([]byte{0xff}, 16), bytes.Repeat([]byte{0x80}, 16))
	f.Add(uint8(0), uint8(4), []byte{0x7f, 0x80, 1}, []byte{0x81, 0xff, 2})
	f.Fuzz(func(t *testing.T, ti, oi uint8, dst, src []byte) {
		typ := Type(ti%uint8(len(allTypes))) + Int8
		op := Op(oi%uint8(len(allOps))) + Sum
		if !op.ValidFor(typ) {
			return
		}
		size := typ.Size()
		n := min(len(dst), len(src)) / size * size
		dst, src = dst[:n], src[:n]

		want := copyTo(t, dst, 0)
		Apply(op, typ, want, src)

		un := copyTo(t, dst, 1)
		Apply(op, typ, un, copyTo(t, src, 3))
		if firstDiff(un, want, typ) >= 0 {
			t.Fatalf("%v %v: unaligned Apply % x, aligned % x", typ, op, un, want)
		}

		got := copyTo(t, dst, size)
		res := make([]byte, n)
		if err := AtomicAccumulate(op, typ, got, src, res); err != nil {
			t.Fatal(err)
		}
		if firstDiff(got, want, typ) >= 0 {
			t.Fatalf("%v %v: AtomicAccumulate % x, Apply % x", typ, op, got, want)
		}
		if !bytes.Equal(res, dst) {
			t.Fatalf("%v %v: result % x, old % x", typ, op, res, dst)
		}
	})
}

func BenchmarkAtomicAccumulate(b *testing.B) {
	for _, typ := range []Type{Float64, Int64} {
		for _, n := range []int{1, 1024} {
			b.Run(fmt.Sprintf("Sum/%v/%d", typ, n), func(b *testing.B) {
				dst, src := Alloc(n*8), Alloc(n*8)
				for i := 0; i < n*8; i += 8 {
					copy(src[i:], oneOf(typ))
				}
				b.ReportAllocs()
				b.SetBytes(int64(n * 8))
				for b.Loop() {
					if err := AtomicAccumulate(Sum, typ, dst, src, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
