package engine

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Shape is the description of an indexed or subarray layout, built once
// by NewIndexed or NewSubarray and never changed afterwards: every copy of
// a Layout that holds it shares it, and the operations queued by deferred
// strategies may read it long after the call that issued them. The
// constructors copy their arguments, so a caller may reuse its slices.
//
// A Shape whose arguments were invalid is still built: it records the
// problem, and Layout.Err and every operation given the layout report it
// (wrapping ErrLayout).
//
// Both kinds reduce to a list of blocks, each a run of consecutive
// elements, taken in order:
//   - indexed: the blocks as given, without the empty ones, with each
//     block that starts where the one before it ends merged into it;
//   - subarray: blocks of blen elements whose starts are the points of a
//     grid, base + sum of i[k]*pitches[k] for i[k] in [0, counts[k]),
//     outermost dimension first, walked arithmetically (a subarray of
//     millions of rows holds no list of them). Dimensions of one element
//     are folded into base, inner dimensions taken whole are merged into
//     the block, and grid levels that continue each other are merged, so
//     that consecutive blocks never touch.
type Shape struct {
	subarray bool
	desc     string // the constructor and its arguments, for messages
	problem  string // why the arguments are invalid; "" if they are not
	elems    int    // elements described
	extent   int    // one past the largest element offset (0 if none)
	nblocks  int    // blocks in the walk
	overlap  bool   // some element lies in two blocks (indexed only)

	offs, lens []int // indexed: the blocks

	base, blen      int   // subarray: start of the first block, length of every block
	counts, pitches []int // subarray: the grid, outermost level first
}

// NewIndexed returns the layout of len(blockLens) blocks, block i holding
// blockLens[i] elements from element displs[i] (MPI_Type_indexed). The
// blocks are taken in the order given; displacements need not increase
// and blocks may overlap (such a layout is refused where it would be
// written: see Layout.Overlaps). Lengths and displacements must not be
// negative.
func NewIndexed(blockLens, displs []int) Layout {
	s := &Shape{desc: "Indexed(" + intList(blockLens) + ", " + intList(displs) + ")"}
	s.problem = s.indexed(blockLens, displs, func(i int) int { return blockLens[i] })
	return Layout{Shape: s}
}

// NewIndexedBlock returns the layout of len(displs) blocks of blockLen
// elements each, block i from element displs[i]
// (MPI_Type_create_indexed_block). It is NewIndexed with equal lengths.
func NewIndexedBlock(blockLen int, displs []int) Layout {
	s := &Shape{desc: fmt.Sprintf("IndexedBlock(%d, %s)", blockLen, intList(displs))}
	if blockLen < 0 || blockLen > maxLayoutElems {
		s.problem = fmt.Sprintf("block length %d outside [0, 2^48]", blockLen)
	} else {
		s.problem = s.indexed(nil, displs, func(int) int { return blockLen })
	}
	return Layout{Shape: s}
}

// indexed checks and builds the blocks of an indexed layout; length(i)
// is block i's length. It returns the problem, or "".
func (s *Shape) indexed(lens, displs []int, length func(i int) int) string {
	if lens != nil && len(lens) != len(displs) {
		return fmt.Sprintf("%d block lengths for %d displacements", len(lens), len(displs))
	}
	total := 0
	for i, d := range displs {
		l := length(i)
		switch {
		case l < 0 || l > maxLayoutElems:
			return fmt.Sprintf("block %d has length %d, outside [0, 2^48]", i, l)
		case d < 0 || d > maxLayoutElems-l:
			return fmt.Sprintf("block %d at displacement %d (length %d) outside [0, 2^48]", i, d, l)
		}
		total += l
		if total > maxLayoutElems {
			return fmt.Sprintf("blocks hold more than 2^48 elements (block %d)", i)
		}
		if l == 0 {
			continue
		}
		if n := len(s.offs); n > 0 && s.offs[n-1]+s.lens[n-1] == d {
			s.lens[n-1] += l // continues the block before
		} else {
			s.offs = append(s.offs, d)
			s.lens = append(s.lens, l)
		}
		s.extent = max(s.extent, d+l)
	}
	s.elems = total
	s.nblocks = len(s.offs)
	s.offs, s.lens = slices.Clip(s.offs), slices.Clip(s.lens)
	// Overlap: sorted by start, a block must start at or after the end
	// of the one before.
	order := make([]int, len(s.offs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(s.offs[a], s.offs[b]) })
	for i := 1; i < len(order); i++ {
		p, q := order[i-1], order[i]
		if s.offs[q] < s.offs[p]+s.lens[p] {
			s.overlap = true
			break
		}
	}
	return ""
}

// NewSubarray returns the layout of a subarray of a row-major (C order)
// array of len(sizes) dimensions: dimension k has sizes[k] elements, of
// which the subarray takes subsizes[k] from index starts[k]
// (MPI_Type_create_subarray with MPI_ORDER_C). Element offsets are
// counted from the array's first element; the elements are taken in
// row-major order. It needs at least one dimension, sizes of at least 1,
// subsizes and starts of at least 0 with starts[k]+subsizes[k] <=
// sizes[k], and at most 2^48 elements in the whole array. A subsize of 0
// gives a layout of no elements.
func NewSubarray(sizes, subsizes, starts []int) Layout {
	s := &Shape{subarray: true, desc: "Subarray(" + intList(sizes) + ", " + intList(subsizes) + ", " + intList(starts) + ")"}
	s.problem = s.subarrayOf(sizes, subsizes, starts)
	return Layout{Shape: s}
}

// subarrayOf checks and builds the grid of a subarray layout. It returns
// the problem, or "".
func (s *Shape) subarrayOf(sizes, subs, starts []int) string {
	d := len(sizes)
	switch {
	case d == 0:
		return "no dimensions"
	case len(subs) != d || len(starts) != d:
		return fmt.Sprintf("%d sizes, %d subsizes and %d starts", d, len(subs), len(starts))
	}
	total := uint64(1)
	empty := false
	for k := range d {
		switch {
		case sizes[k] < 1:
			return fmt.Sprintf("size %d of dimension %d is less than 1", sizes[k], k)
		case subs[k] < 0 || starts[k] < 0 || subs[k] > sizes[k] || starts[k] > sizes[k]-subs[k]:
			return fmt.Sprintf("dimension %d: %d elements from %d do not fit in [0, %d)", k, subs[k], starts[k], sizes[k])
		}
		hi, lo := bits.Mul64(total, uint64(sizes[k]))
		if hi != 0 || lo > maxLayoutElems {
			return "the array has more than 2^48 elements"
		}
		total = lo
		empty = empty || subs[k] == 0
	}
	if empty {
		return "" // no elements, no blocks
	}
	// Walk the dimensions inward-out with the pitch of each (the elements
	// one step of its index skips).
	pitch := 1
	s.elems = 1
	var counts, pitches []int // innermost level first, reversed below
	for k := d - 1; k >= 0; k-- {
		s.base += starts[k] * pitch
		s.elems *= subs[k]
		s.extent += (starts[k] + subs[k] - 1) * pitch
		switch {
		case k == d-1:
			s.blen = subs[k]
		case len(counts) == 0 && s.blen == pitch:
			// Every inner dimension is taken whole: the block grows.
			s.blen *= subs[k]
		case subs[k] == 1:
			// One index: folded into base.
		case len(counts) > 0 && pitches[len(pitches)-1]*counts[len(counts)-1] == pitch:
			// Continues the level inside it: one level of more steps.
			counts[len(counts)-1] *= subs[k]
		default:
			counts = append(counts, subs[k])
			pitches = append(pitches, pitch)
		}
		pitch *= sizes[k]
	}
	s.extent++
	slices.Reverse(counts)
	slices.Reverse(pitches)
	s.counts, s.pitches = counts, pitches
	s.nblocks = s.elems / s.blen
	return ""
}

// blockAt returns the start and length of block b of the walk.
func (s *Shape) blockAt(b int) (start, n int) {
	if !s.subarray {
		return s.offs[b], s.lens[b]
	}
	start = s.base
	for k := len(s.counts) - 1; k >= 0; k-- {
		c := s.counts[k]
		start += (b % c) * s.pitches[k]
		b /= c
	}
	return start, s.blen
}

// intList formats a slice of ints for a message, eliding the middle of
// long ones.
func intList(v []int) string {
	const most = 8
	if len(v) <= most {
		return fmt.Sprint(v)
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v[:most/2] {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, x)
	}
	fmt.Fprintf(&b, " ... (%d in all) ...", len(v))
	for _, x := range v[len(v)-most/2:] {
		fmt.Fprintf(&b, " %d", x)
	}
	b.WriteByte(']')
	return b.String()
}
