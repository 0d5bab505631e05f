package engine

import (
	"fmt"
	"math/bits"
)

// maxLayoutElems bounds every field and derived size of a layout, so that
// element counts, extents and byte offsets computed from it cannot
// overflow an int.
const maxLayoutElems = 1 << 48

// Layout describes where elements lie in a buffer, in units of the
// operation's element. The zero Layout means "contiguous": as many
// elements as the buffer holds. Without a Shape it is a vector: Count
// blocks of BlockLen elements, the starts of consecutive blocks Stride
// elements apart (MPI_Type_vector). With a Shape (NewIndexed,
// NewIndexedBlock, NewSubarray) it is that shape, and Count, BlockLen and
// Stride must be zero.
//
// A Layout is a small comparable value: the Shape is shared, immutable,
// and compared by identity.
type Layout struct {
	Count    int
	BlockLen int
	Stride   int
	Shape    *Shape
}

// Contiguous reports whether l is the zero (contiguous) layout.
func (l Layout) Contiguous() bool { return l == Layout{} }

// String describes l as the call that builds it, e.g. "Vector(3, 1, 4)".
func (l Layout) String() string {
	switch {
	case l.Contiguous():
		return "Contiguous"
	case l.Shape == nil:
		return fmt.Sprintf("Vector(%d, %d, %d)", l.Count, l.BlockLen, l.Stride)
	case l.Count != 0 || l.BlockLen != 0 || l.Stride != 0:
		return fmt.Sprintf("%s with Count %d, BlockLen %d, Stride %d", l.Shape.desc, l.Count, l.BlockLen, l.Stride)
	}
	return l.Shape.desc
}

// Err reports why l cannot describe a buffer, wrapping ErrLayout, or
// returns nil. It does not know the buffer: an operation checks the
// layout against its buffers as well.
func (l Layout) Err() error {
	if p := l.problem(); p != "" {
		return fmt.Errorf("layout %v: %s: %w", l, p, ErrLayout)
	}
	return nil
}

// Overlaps reports whether some element lies in two blocks of l (which
// only an indexed layout allows). Operations refuse such a layout on the
// side they write: the target of a put or accumulate, the origin of a get
// and of a GetAccumulate (its result).
func (l Layout) Overlaps() bool { return l.Shape != nil && l.Shape.overlap }

// problem says why l is invalid, or returns "".
func (l Layout) problem() string {
	if l.Shape != nil {
		if l.Count != 0 || l.BlockLen != 0 || l.Stride != 0 {
			return "Count, BlockLen and Stride set on an indexed or subarray layout"
		}
		return l.Shape.problem
	}
	if l.Contiguous() {
		return ""
	}
	switch {
	case l.Count < 0 || l.Count > maxLayoutElems:
		return fmt.Sprintf("block count %d outside [0, 2^48]", l.Count)
	case l.BlockLen < 0 || l.BlockLen > maxLayoutElems:
		return fmt.Sprintf("block length %d outside [0, 2^48]", l.BlockLen)
	case l.Stride > maxLayoutElems:
		return fmt.Sprintf("stride %d above 2^48", l.Stride)
	case l.Count > 1 && l.Stride < l.BlockLen:
		return fmt.Sprintf("stride %d less than the block length %d: blocks overlap", l.Stride, l.BlockLen)
	}
	// The extent, (Count-1)*Stride + BlockLen, must stay bounded too.
	if l.Count > 1 {
		hi, lo := bits.Mul64(uint64(l.Count-1), uint64(l.Stride))
		if hi != 0 || lo > maxLayoutElems {
			return "extent above 2^48 elements"
		}
	}
	return ""
}

func (l Layout) valid() bool { return l.problem() == "" }

// elems is the number of elements a valid, non-contiguous layout
// describes.
func (l Layout) elems() int {
	if l.Shape != nil {
		return l.Shape.elems
	}
	return l.Count * l.BlockLen
}

// extent is the span in elements from the start of the buffer to one past
// the last element of a valid, non-contiguous layout.
func (l Layout) extent() int {
	if l.Shape != nil {
		return l.Shape.extent
	}
	if l.Count == 0 || l.BlockLen == 0 {
		return 0
	}
	return (l.Count-1)*l.Stride + l.BlockLen
}

// normalize turns the contiguous layout into one block of n elements, and
// so does it with a strided layout whose blocks touch and with a shape of
// one block at the start of the buffer (one transfer instead of one per
// block). Other shapes stay as they are.
func (l Layout) normalize(n int) Layout {
	switch {
	case l.Contiguous():
		return Layout{Count: 1, BlockLen: n, Stride: n}
	case l.Shape != nil:
		if s := l.Shape; s.nblocks == 1 {
			if start, k := s.blockAt(0); start == 0 {
				return Layout{Count: 1, BlockLen: k, Stride: k}
			}
		}
	case l.Count > 1 && l.Stride == l.BlockLen:
		k := l.Count * l.BlockLen
		return Layout{Count: 1, BlockLen: k, Stride: k}
	}
	return l
}

// cursor walks the blocks of one side of a chunker.
type cursor struct {
	s      *Shape // nil for a vector
	stride int    // vector: the stride
	start  int    // element offset of the current block
	n      int    // its length
	p      int    // elements of it already yielded
	b      int    // shape: index of the current block, -1 before the first
	row    int    // subarray: blocks of the innermost grid level still ahead in this row
}

// newCursor returns a cursor before the first block of l: its position
// is at the end of an empty or imaginary block, so that the first run
// steps into block 0.
func newCursor(l Layout) cursor {
	if l.Shape != nil {
		return cursor{s: l.Shape, b: -1}
	}
	return cursor{stride: l.Stride, start: -l.Stride, n: l.BlockLen, p: l.BlockLen}
}

// step moves to the next block. It must not be called past the last.
func (c *cursor) step() {
	c.p = 0
	if c.s == nil {
		c.start += c.stride
		return
	}
	c.b++
	s := c.s
	switch {
	case !s.subarray:
		c.start, c.n = s.offs[c.b], s.lens[c.b]
	case c.row > 0:
		// The next block of the row: one step of the innermost level.
		c.row--
		c.start += s.pitches[len(s.pitches)-1]
	default:
		// A new row (a carry into the outer levels): computed afresh,
		// once per row.
		c.start, c.n = s.blockAt(c.b)
		if k := len(s.counts); k > 0 {
			c.row = s.counts[k-1] - 1
		}
	}
}

// chunker walks an origin and a target layout of the same number of
// elements together and yields the largest runs that are contiguous on
// both sides within their blocks, as byte offsets. It allocates nothing.
type chunker struct {
	esz   int
	o, t  cursor
	left  int // elements not yet yielded
	first bool
}

func newChunker(esz int, o, t Layout, n int) chunker {
	return chunker{esz: esz, o: newCursor(o), t: newCursor(t), left: n, first: true}
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
	for c.o.p == c.o.n {
		c.o.step()
	}
	for c.t.p == c.t.n {
		c.t.step()
	}
	k := min(c.o.n-c.o.p, c.t.n-c.t.p, c.left)
	oOff = (c.o.start + c.o.p) * c.esz
	tOff = (c.t.start + c.t.p) * c.esz
	c.o.p += k
	c.t.p += k
	c.left -= k
	return oOff, tOff, k * c.esz, c.left == 0, true
}
