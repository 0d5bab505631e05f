package transporttest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
)

type intElem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type floatElem interface{ ~float32 | ~float64 }

// refInt is the reference arithmetic of the accumulate operations on
// integers: the target element a combined with the origin element b.
func refInt[T intElem](op mem.Op, a, b T) T {
	switch op {
	case mem.Sum:
		return a + b
	case mem.Prod:
		return a * b
	case mem.Min:
		return min(a, b)
	case mem.Max:
		return max(a, b)
	case mem.Band:
		return a & b
	case mem.Bor:
		return a | b
	case mem.Bxor:
		return a ^ b
	case mem.Replace:
		return b
	}
	return a // NoOp
}

// refFloat is refInt for floating-point elements (no NaNs are used).
func refFloat[T floatElem](op mem.Op, a, b T) T {
	switch op {
	case mem.Sum:
		return a + b
	case mem.Prod:
		return a * b
	case mem.Min:
		return min(a, b)
	case mem.Max:
		return max(a, b)
	case mem.Replace:
		return b
	}
	return a
}

// intVals returns test values of an integer type, with wrap-around.
func intVals[T intElem]() []T {
	src := []int64{0, 1, -1, 2, 3, -5, 7, 100, -100, 127, -128, 255, 1000, -1000,
		65535, 1<<20 + 1, -(1 << 31), 1<<40 + 3, math.MaxInt64, math.MinInt64, 0x5555, -0x3333}
	out := make([]T, len(src))
	for i, v := range src {
		out[i] = T(v)
	}
	return out
}

// floatVals returns test values of a floating-point type.
func floatVals[T floatElem]() []T {
	src := []float64{0, 1, -1, 2.5, -3.25, 1024, -0.5, 100, 7, -1e10, 0.375, 65504,
		3, -2, 1e-3, 12345.5, -7.75, 42, 0.1, -8, 1e30, -1e-20}
	out := make([]T, len(src))
	for i, v := range src {
		out[i] = T(v)
	}
	return out
}

// decode returns the elements of type T held in b.
func decode[T any](b []byte) []T {
	s := make([]T, len(b)/mem.SizeOf[T]())
	copy(mem.Bytes(s), b)
	return s
}

// testAccumulate checks every valid operation on every element type,
// fetching and not, from a peer and from self, against reference
// arithmetic, and that the elements around the target are untouched.
func testAccumulate(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	runAccumulate(t, e, mem.Int8, refInt[int8], intVals[int8]())
	runAccumulate(t, e, mem.Int16, refInt[int16], intVals[int16]())
	runAccumulate(t, e, mem.Int32, refInt[int32], intVals[int32]())
	runAccumulate(t, e, mem.Int64, refInt[int64], intVals[int64]())
	runAccumulate(t, e, mem.Uint8, refInt[uint8], intVals[uint8]())
	runAccumulate(t, e, mem.Uint16, refInt[uint16], intVals[uint16]())
	runAccumulate(t, e, mem.Uint32, refInt[uint32], intVals[uint32]())
	runAccumulate(t, e, mem.Uint64, refInt[uint64], intVals[uint64]())
	runAccumulate(t, e, mem.Float32, refFloat[float32], floatVals[float32]())
	runAccumulate(t, e, mem.Float64, refFloat[float64], floatVals[float64]())
}

func runAccumulate[T mem.Elem](t *testing.T, e *env, typ mem.Type, ref func(mem.Op, T, T) T, vals []T) {
	t.Run(typ.String(), func(t *testing.T) {
		if got := mem.SizeOf[T](); got != typ.Size() {
			t.Fatalf("suite bug: %v has size %d, Go type %d", typ, typ.Size(), got)
		}
		const pad = 3 // elements of 0xa5 bytes on either side
		k, sz := len(vals), typ.Size()
		off := pad * sz
		buf, key := e.expose(1, (k+2*pad)*sz)
		dstVals := vals
		srcVals := append(slices.Clone(vals[7:]), vals[:7]...)
		src := mem.Bytes(srcVals)
		for origin := 0; origin < 2; origin++ {
			r := e.region(origin, 1, key, len(buf))
			for op := mem.Sum; op <= mem.NoOp; op++ {
				if !op.ValidFor(typ) {
					continue
				}
				for _, fetch := range []bool{false, true} {
					what := fmt.Sprintf("%v on %d elements from rank %d (fetching: %v)", op, k, origin, fetch)
					memset(buf, 0xa5)
					copy(buf[off:], mem.Bytes(dstVals))
					var result []byte
					if fetch {
						result = filled(k * sz)
					}
					e.must(e.acc(r, off, op, typ, src, result, noNotice), "%s", what)
					e.flush(origin, 1)
					want := make([]T, k)
					for i := range want {
						want[i] = ref(op, dstVals[i], srcVals[i])
					}
					if got := buf[off : off+k*sz]; !bytes.Equal(got, mem.Bytes(want)) {
						g := decode[T](got)
						for i := range g {
							if !bytes.Equal(mem.Bytes(g[i:i+1]), mem.Bytes(want[i:i+1])) {
								t.Fatalf("%s: element %d: %v %v %v = %v, want %v", what, i, dstVals[i], op, srcVals[i], g[i], want[i])
							}
						}
					}
					checkFilled(t, what+": elements before", buf[:off], 0xa5)
					checkFilled(t, what+": elements after", buf[off+k*sz:], 0xa5)
					if fetch {
						checkBytes(t, what+": fetched previous values", result, mem.Bytes(dstVals))
					}
				}
			}
		}
	})
}

// testAccumulateConcurrent has goroutines of every rank add to the same
// elements of one region at once, on 1- to 8-byte integers (neighbouring
// elements updated by different goroutines) and on a float, and checks
// that no update is lost. A fetch-and-add counter must hand out every
// ticket exactly once. On a Direct transport the target adds to the same
// elements with its own atomics meanwhile.
func testAccumulateConcurrent(t *testing.T, f factory) {
	const n, workers, rounds = 4, 4, 300
	const total = n * workers * rounds
	e := newEnv(t, f, n)
	// Layout of the region at rank 0:
	//   0: int64 sum      8: int64 ticket     16: float64 sum
	//  24: 8 × uint8     32: 4 × int16        40: 2 × int32
	buf, key := e.expose(0, 64)
	var errs errorList
	tickets := make([][]int64, n*workers)
	var wg sync.WaitGroup
	for rank := 0; rank < n; rank++ {
		r := e.region(rank, 0, key, len(buf))
		for w := 0; w < workers; w++ {
			id := rank*workers + w
			wg.Add(1)
			go func() {
				defer wg.Done()
				one64 := mem.Bytes([]int64{1})
				onef := mem.Bytes([]float64{1})
				res := make([]byte, 8)
				for k := 0; k < rounds; k++ {
					ops := []struct {
						off      int
						typ      mem.Type
						src, res []byte
					}{
						{0, mem.Int64, one64, nil},
						{8, mem.Int64, one64, res},
						{16, mem.Float64, onef, nil},
						{24 + id%8, mem.Uint8, []byte{1}, nil},
						{32 + 2*(id%4), mem.Int16, mem.Bytes([]int16{3}), nil},
						{40 + 4*(id%2), mem.Int32, mem.Bytes([]int32{-1}), nil},
					}
					for _, o := range ops {
						if err := e.acc(r, o.off, mem.Sum, o.typ, o.src, o.res, noNotice); err != nil {
							errs.add("worker %d: Sum on %v at %d: %v", id, o.typ, o.off, err)
							return
						}
					}
					tickets[id] = append(tickets[id], int64(binary.LittleEndian.Uint64(res)))
				}
			}()
		}
	}
	direct := 0
	if e.caps.Direct {
		direct = rounds
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := mem.Bytes([]int64{1})
			for k := 0; k < rounds; k++ {
				if err := mem.AtomicAccumulate(mem.Sum, mem.Int64, buf[0:8], one, nil); err != nil {
					errs.add("target's own atomic: %v", err)
					return
				}
				if err := mem.AtomicAccumulate(mem.Sum, mem.Uint8, buf[31:32], []byte{1}, nil); err != nil {
					errs.add("target's own atomic: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	errs.report(t)
	e.flushAll()

	le := binary.LittleEndian
	if got := int64(le.Uint64(buf[0:])); got != total+int64(direct) {
		t.Errorf("int64 sum = %d, want %d", got, total+direct)
	}
	if got := int64(le.Uint64(buf[8:])); got != total {
		t.Errorf("int64 ticket counter = %d, want %d", got, total)
	}
	if got := math.Float64frombits(le.Uint64(buf[16:])); got != total {
		t.Errorf("float64 sum = %v, want %d", got, total)
	}
	for b := 0; b < 8; b++ {
		perByte := total / 8
		if b == 7 {
			perByte += direct
		}
		want := uint8(perByte) // wraps around
		if got := buf[24+b]; got != want {
			t.Errorf("uint8 element %d = %d, want %d", b, got, want)
		}
	}
	for i := 0; i < 4; i++ {
		if got, want := int16(le.Uint16(buf[32+2*i:])), int16(3*total/4); got != want {
			t.Errorf("int16 element %d = %d, want %d", i, got, want)
		}
	}
	for i := 0; i < 2; i++ {
		if got, want := int32(le.Uint32(buf[40+4*i:])), int32(-total/2); got != want {
			t.Errorf("int32 element %d = %d, want %d", i, got, want)
		}
	}
	var all []int64
	for _, ts := range tickets {
		all = append(all, ts...)
	}
	slices.Sort(all)
	for i, v := range all {
		if v != int64(i) {
			t.Fatalf("fetch-and-add tickets: sorted ticket %d is %d: tickets lost or handed out twice", i, v)
		}
	}
	if len(all) != total {
		t.Fatalf("%d tickets, want %d", len(all), total)
	}
}
