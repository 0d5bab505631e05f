package transporttest

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// refusalEnv is a 64-byte region at rank 1 filled with 0xa5, a handle on
// it from rank 0, and a count of the notices rank 1 received: every test
// of a refused operation checks that the region, the origin's buffers and
// the notice count are untouched.
type refusalEnv struct {
	*env
	buf     []byte
	key     transport.Key
	r       transport.Region
	notices atomic.Int64
}

const refusalSize = 64

func newRefusalEnv(t *testing.T, f factory) *refusalEnv {
	e := &refusalEnv{env: newEnv(t, f, 2)}
	e.eps[1].SetNoticeHandler(func(int, transport.Key, transport.Notice) { e.notices.Add(1) })
	e.buf, e.key = e.expose(1, refusalSize)
	memset(e.buf, 0xa5)
	e.r = e.region(0, 1, e.key, refusalSize)
	return e
}

// refuse checks that err matches want (any error if want is nil), that
// the region is untouched and that the origin buffers bufs are still
// filled with 0xee.
func (e *refusalEnv) refuse(what string, err, want error, bufs ...[]byte) {
	e.t.Helper()
	switch {
	case err == nil:
		e.t.Errorf("%s: no error, want %v", what, want)
	case want != nil && !errors.Is(err, want):
		e.t.Errorf("%s: got %v, want %v", what, err, want)
	}
	e.flush(0, 1)
	for i, b := range e.buf {
		if b != 0xa5 {
			e.t.Fatalf("%s: refused operation changed byte %d of the region to %#x", what, i, b)
		}
	}
	for _, b := range bufs {
		checkFilled(e.t, what+": origin buffer of a refused operation", b, 0xee)
	}
}

// checkNoNotice checks that no refused operation delivered its notice.
func (e *refusalEnv) checkNoNotice() {
	e.t.Helper()
	e.flushAll()
	if n := e.notices.Load(); n != 0 {
		e.t.Errorf("%d notices delivered for refused operations", n)
	}
}

func filled(n int) []byte {
	b := make([]byte, n)
	memset(b, 0xee)
	return b
}

var tagNotice = transport.TagNotice(transport.NoticeTag, 1)

// testBounds checks that accesses outside a region fail with ErrBounds,
// write nothing and deliver no notice, and that accesses touching its
// edges work.
func testBounds(t *testing.T, f factory) {
	e := newRefusalEnv(t, f)
	type span struct{ off, n int }
	bad := []span{
		{-1, 1}, {-8, 8}, {-1, 0}, {refusalSize, 1}, {refusalSize - 7, 8}, {refusalSize + 1, 0},
		{1, refusalSize}, {0, refusalSize + 1}, {math.MaxInt, 1}, {math.MaxInt - 7, 8}, {math.MinInt, 8},
	}
	for _, s := range bad {
		what := fmt.Sprintf("[%d, %d+%d)", s.off, s.off, s.n)
		e.refuse("Put "+what, e.put(e.r, s.off, pattern(1, s.n), tagNotice), transport.ErrBounds)
		dst := filled(s.n)
		e.refuse("Get "+what, e.get(e.r, s.off, dst, tagNotice), transport.ErrBounds, dst)
	}
	for _, off := range []int{-8, refusalSize, refusalSize - 8, math.MaxInt &^ 7, math.MinInt} {
		what := fmt.Sprintf("at %d", off)
		src := mem.Bytes([]int64{1, 1})
		res := filled(16)
		if off == refusalSize-8 { // one element fits, the second does not
			e.refuse("Accumulate of 2 int64 "+what, e.acc(e.r, off, mem.Sum, mem.Int64, src, res, tagNotice), transport.ErrBounds, res)
			continue
		}
		e.refuse("Accumulate "+what, e.acc(e.r, off, mem.Sum, mem.Int64, src[:8], res[:8], tagNotice), transport.ErrBounds, res)
		e.refuse("non-fetching Accumulate "+what, e.acc(e.r, off, mem.Sum, mem.Int64, src[:8], nil, tagNotice), transport.ErrBounds)
		e.refuse("CompareSwap "+what, e.cas(e.r, off, mem.Int64, make([]byte, 8), src[:8], res[:8], tagNotice), transport.ErrBounds, res)
	}
	e.refuse("Accumulate of int8 at the end", e.acc(e.r, refusalSize, mem.Sum, mem.Int8, []byte{1}, nil, tagNotice), transport.ErrBounds)
	e.refuse("CompareSwap of int16 at the end", e.cas(e.r, refusalSize, mem.Int16, []byte{0xa5, 0xa5}, []byte{0, 0}, nil, tagNotice), transport.ErrBounds)

	// A handle claiming more than the target exposed: either Region
	// refuses it, or the target refuses the accesses beyond its region.
	if big, err := e.eps[0].Region(1, e.key, 2*refusalSize); err == nil {
		e.refuse("Put past the region through an oversized handle", e.put(big, refusalSize-4, pattern(2, 8), tagNotice), transport.ErrBounds)
		dst := filled(8)
		e.refuse("Get past the region through an oversized handle", e.get(big, refusalSize, dst, tagNotice), transport.ErrBounds, dst)
		e.refuse("Accumulate past the region through an oversized handle",
			e.acc(big, refusalSize, mem.Sum, mem.Int64, mem.Bytes([]int64{1}), nil, tagNotice), transport.ErrBounds)
	}
	e.checkNoNotice()

	// Accesses that touch the edges are fine.
	all := pattern(3, refusalSize)
	e.must(e.put(e.r, 0, all, noNotice), "Put of the whole region")
	e.must(e.put(e.r, refusalSize, nil, noNotice), "empty Put at the end")
	e.must(e.get(e.r, refusalSize, nil, noNotice), "empty Get at the end")
	e.flush(0, 1)
	checkBytes(t, "region after a Put of all of it", e.buf, all)
	last := make([]byte, 8)
	e.must(e.get(e.r, refusalSize-8, last, noNotice), "Get of the last 8 bytes")
	checkBytes(t, "last 8 bytes", last, all[refusalSize-8:])
	e.must(e.acc(e.r, refusalSize-8, mem.Replace, mem.Int64, mem.Bytes([]int64{-1}), nil, noNotice), "Accumulate on the last element")
	e.must(e.cas(e.r, refusalSize-1, mem.Uint8, []byte{0xff}, []byte{7}, nil, noNotice), "CompareSwap on the last byte")
	e.flush(0, 1)
	checkBytes(t, "last element", e.buf[refusalSize-8:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 7})
}

// testAccumulateErrors checks the refusals of the atomics: misaligned
// offsets, operations not valid for a type, invalid types and operations,
// and operand lengths.
func testAccumulateErrors(t *testing.T, f factory) {
	e := newRefusalEnv(t, f)
	for _, c := range []struct {
		t   mem.Type
		off int
	}{{mem.Int16, 1}, {mem.Uint16, 3}, {mem.Int32, 2}, {mem.Float32, 1}, {mem.Int64, 4}, {mem.Uint64, 1}, {mem.Float64, 12}} {
		what := fmt.Sprintf("%v at offset %d", c.t, c.off)
		sz := c.t.Size()
		src := make([]byte, sz)
		src[0] = 1
		res := filled(sz)
		e.refuse("Accumulate of "+what, e.acc(e.r, c.off, mem.Sum, c.t, src, res, tagNotice), transport.ErrAlign, res)
		e.refuse("Replace of "+what, e.acc(e.r, c.off, mem.Replace, c.t, src, nil, tagNotice), transport.ErrAlign)
		res = filled(sz)
		e.refuse("CompareSwap of "+what, e.cas(e.r, c.off, c.t, make([]byte, sz), src, res, tagNotice), transport.ErrAlign, res)
	}

	eight := mem.Bytes([]int64{3})
	for _, typ := range []mem.Type{mem.Float32, mem.Float64} {
		for _, op := range []mem.Op{mem.Band, mem.Bor, mem.Bxor} {
			res := filled(typ.Size())
			e.refuse(fmt.Sprintf("%v on %v", op, typ), e.acc(e.r, 8, op, typ, eight[:typ.Size()], res, tagNotice), mem.ErrOp, res)
		}
	}
	for _, op := range []mem.Op{0, 200} {
		e.refuse(fmt.Sprintf("invalid %v", op), e.acc(e.r, 8, op, mem.Int64, eight, nil, tagNotice), mem.ErrOp)
	}
	for _, typ := range []mem.Type{0, 200} {
		e.refuse(fmt.Sprintf("Sum on invalid %v", typ), e.acc(e.r, 8, mem.Sum, typ, eight, nil, tagNotice), mem.ErrOp)
		e.refuse(fmt.Sprintf("CompareSwap on invalid %v", typ), e.cas(e.r, 8, typ, eight, eight, nil, tagNotice), mem.ErrOp)
	}

	res := filled(8)
	e.refuse("Accumulate of 6 bytes of int32", e.acc(e.r, 8, mem.Sum, mem.Int32, make([]byte, 6), nil, tagNotice), mem.ErrLength)
	e.refuse("Accumulate with a short result", e.acc(e.r, 8, mem.Sum, mem.Int32, eight, res[:4], tagNotice), mem.ErrLength, res)
	e.refuse("Accumulate with a long result", e.acc(e.r, 8, mem.Sum, mem.Int32, eight[:4], res, tagNotice), mem.ErrLength, res)
	e.refuse("CompareSwap with a short compare", e.cas(e.r, 8, mem.Int64, eight[:4], eight, nil, tagNotice), mem.ErrLength)
	e.refuse("CompareSwap with a short swap", e.cas(e.r, 8, mem.Int64, eight, eight[:7], nil, tagNotice), mem.ErrLength)
	e.refuse("CompareSwap with a short result", e.cas(e.r, 8, mem.Int64, eight, eight, res[:4], tagNotice), mem.ErrLength, res)
	e.checkNoNotice()
}
