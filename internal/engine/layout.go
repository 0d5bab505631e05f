package engine

import "math/bits"

// maxLayoutElems bounds every field and derived size of a layout, so that
// element counts, extents and byte offsets computed from it cannot
// overflow an int.
const maxLayoutElems = 1 << 48

// Layout describes where elements lie in a buffer, in units of the
// operation's element: Count blocks of BlockLen elements, the starts of
// consecutive blocks Stride elements apart (MPI_Type_vector). The zero
// Layout means "contiguous": as many elements as the buffer holds.
type Layout struct {
	Count    int
	BlockLen int
	Stride   int
}

// Contiguous reports whether l is the zero (contiguous) layout.
func (l Layout) Contiguous() bool { return l == Layout{} }

func (l Layout) valid() bool {
	if l.Contiguous() {
		return true
	}
	if l.Count < 0 || l.BlockLen < 0 || l.Count > maxLayoutElems || l.BlockLen > maxLayoutElems || l.Stride > maxLayoutElems {
		return false
	}
	if l.Count > 1 && l.Stride < l.BlockLen {
		return false
	}
	// The extent, (Count-1)*Stride + BlockLen, must stay bounded too.
	if l.Count > 1 {
		hi, lo := bits.Mul64(uint64(l.Count-1), uint64(l.Stride))
		if hi != 0 || lo > maxLayoutElems {
			return false
		}
	}
	return true
}

// elems is the number of elements a strided layout describes.
func (l Layout) elems() int { return l.Count * l.BlockLen }

// extent is the span in elements from the first to one past the last
// element of a strided layout.
func (l Layout) extent() int {
	if l.Count == 0 || l.BlockLen == 0 {
		return 0
	}
	return (l.Count-1)*l.Stride + l.BlockLen
}

// normalize turns the contiguous layout into one block of n elements, and
// so does it with a strided layout whose blocks touch (one transfer instead
// of one per block).
func (l Layout) normalize(n int) Layout {
	if l.Contiguous() {
		return Layout{Count: 1, BlockLen: n, Stride: n}
	}
	if l.Count > 1 && l.Stride == l.BlockLen {
		k := l.Count * l.BlockLen
		return Layout{Count: 1, BlockLen: k, Stride: k}
	}
	return l
}

// chunker walks an origin and a target layout of the same number of
// elements together and yields the largest runs that are contiguous on
// both sides, as byte offsets. It allocates nothing.
type chunker struct {
	esz            int
	o, t           Layout
	ob, op, tb, tp int // block index and position within it, origin and target
	left           int // elements not yet yielded
	first          bool
}

func newChunker(esz int, o, t Layout, n int) chunker {
	return chunker{esz: esz, o: o, t: t, left: n, first: true}
}

// next returns the next run: origin and target byte offsets and its
// length in bytes. A zero-element transfer yields one empty run, so that an
// operation with no data is still issued (it may carry a notice). last
// reports whether this is the final run.
func (c *chunker) next() (oOff, tOff, n int, last, ok bool) {
	if c.left == 0 {
		if c.first {
			c.first = false
			return 0, 0, 0, true, true
		}
		return 0, 0, 0, false, false
	}
	c.first = false
	for c.op == c.o.BlockLen {
		c.ob++
		c.op = 0
	}
	for c.tp == c.t.BlockLen {
		c.tb++
		c.tp = 0
	}
	k := min(c.o.BlockLen-c.op, c.t.BlockLen-c.tp, c.left)
	oOff = (c.ob*c.o.Stride + c.op) * c.esz
	tOff = (c.tb*c.t.Stride + c.tp) * c.esz
	c.op += k
	c.tp += k
	c.left -= k
	return oOff, tOff, k * c.esz, c.left == 0, true
}
