package async

import (
	"fmt"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// region is an asynchronous handle on an inner region: its operations are
// checked, queued at the origin endpoint ep and executed by ep's worker.
// It deliberately does not implement transport.WordRegion.
type region struct {
	ep     *endpoint
	inner  transport.Region
	target int
	size   int
}

var _ transport.Region = (*region)(nil)

// Size returns the size of the inner region in bytes.
func (r *region) Size() int { return r.size }

// Put queues a write of src at off. A src of at most 8 bytes is copied
// first; a larger one is read by the worker and must stay unchanged until
// the operation completes.
func (r *region) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	if off < 0 || len(src) > r.size-off {
		return transport.ErrBounds
	}
	o := op{kind: opPut, off: off, n: n, c: c}
	o.setA(src)
	return r.issue(&o)
}

// Get queues a read of len(dst) bytes at off into dst, which is written by
// the worker and valid once the operation is complete.
func (r *region) Get(off int, dst []byte, n transport.Notice, c *transport.Completion) error {
	if off < 0 || len(dst) > r.size-off {
		return transport.ErrBounds
	}
	return r.issue(&op{kind: opGet, off: off, n: n, c: c, a: dst})
}

// Accumulate queues an accumulate. The operation, the operand lengths,
// the bounds and the alignment of off are checked at issue, in the order
// of local.AccumulateAt. A src of at most 8 bytes is copied first; result
// is written by the worker.
func (r *region) Accumulate(off int, aop mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	if !aop.ValidFor(t) {
		return fmt.Errorf("async: accumulate %v on %v: %w", aop, t, mem.ErrOp)
	}
	size := t.Size()
	nb := len(src)
	if aop == mem.NoOp && src == nil {
		nb = len(result)
	}
	if nb%size != 0 || (result != nil && len(result) != nb) {
		return fmt.Errorf("async: accumulate of %d bytes of %v with a %d-byte result: %w",
			nb, t, len(result), mem.ErrLength)
	}
	if off < 0 || nb > r.size-off {
		return transport.ErrBounds
	}
	if off%size != 0 {
		return transport.ErrAlign
	}
	o := op{kind: opAccumulate, off: off, n: n, c: c, aop: aop, typ: t, res: result}
	o.setA(src)
	return r.issue(&o)
}

// CompareSwap queues a compare-and-swap. The type, the operand lengths,
// the bounds and the alignment of off are checked at issue; compare and
// swap are copied first; result is written by the worker.
func (r *region) CompareSwap(off int, t mem.Type, compare, swap, result []byte, n transport.Notice, c *transport.Completion) error {
	if !t.Valid() {
		return fmt.Errorf("async: compare-and-swap on %v: %w", t, mem.ErrOp)
	}
	size := t.Size()
	if len(compare) < size || len(swap) < size || (result != nil && len(result) < size) {
		return fmt.Errorf("async: compare-and-swap of %v with %d/%d/%d-byte operands: %w",
			t, len(compare), len(swap), len(result), mem.ErrLength)
	}
	if off < 0 || size > r.size-off {
		return transport.ErrBounds
	}
	if off%size != 0 {
		return transport.ErrAlign
	}
	o := op{kind: opCompareSwap, off: off, n: n, c: c, typ: t, res: result}
	o.setA(compare[:size])
	o.setB(swap[:size])
	return r.issue(&o)
}

// issue queues o at the origin.
func (r *region) issue(o *op) error {
	o.r = r.inner
	o.target = r.target
	return r.ep.enqueue(o)
}

// opKind says which operation an op is.
type opKind uint8

const (
	opPut opKind = iota + 1
	opGet
	opAccumulate
	opCompareSwap
)

// injectMax is the size up to which sources are copied at issue.
const injectMax = 8

// op is a queued data operation. Its buffers are a (Put's src, Get's dst,
// Accumulate's src, CompareSwap's compare), b (CompareSwap's swap) and res
// (the result of the atomics); a and b may instead be held in inl, their
// lengths plus one in inlLen (0: not inline).
type op struct {
	kind   opKind
	aop    mem.Op
	typ    mem.Type
	inlLen [2]uint8
	target int
	off    int
	seq    uint64
	r      transport.Region
	n      transport.Notice
	c      *transport.Completion
	a, b   []byte
	res    []byte
	inl    [2][injectMax]byte
}

// setA sets a to src, copied inline if it is small (a nil src stays nil:
// it means something to a NoOp accumulate).
func (o *op) setA(src []byte) {
	if src != nil && len(src) <= injectMax {
		o.inlLen[0] = uint8(copy(o.inl[0][:], src) + 1)
		return
	}
	o.a = src
}

// setB sets b to src, copied inline if it is small.
func (o *op) setB(src []byte) {
	if src != nil && len(src) <= injectMax {
		o.inlLen[1] = uint8(copy(o.inl[1][:], src) + 1)
		return
	}
	o.b = src
}

// exec issues o at the inner region and returns its error. The operation
// is passed o.c, so that an asynchronous inner transport keeps it pending
// until it completes there.
func (o *op) exec() error {
	a, b := o.a, o.b
	if l := o.inlLen[0]; l != 0 {
		a = o.inl[0][:l-1]
	}
	if l := o.inlLen[1]; l != 0 {
		b = o.inl[1][:l-1]
	}
	switch o.kind {
	case opPut:
		return o.r.Put(o.off, a, o.n, o.c)
	case opGet:
		return o.r.Get(o.off, a, o.n, o.c)
	case opAccumulate:
		return o.r.Accumulate(o.off, o.aop, o.typ, a, o.res, o.n, o.c)
	case opCompareSwap:
		return o.r.CompareSwap(o.off, o.typ, a, b, o.res, o.n, o.c)
	}
	panic(fmt.Sprintf("async: operation of kind %d", o.kind))
}
