package narma

import (
	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// Elem is the set of element types windows and reductions work on: the
// fixed-size integers and floats (and types defined on them).
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Op is a reduction operation of the accumulate family and of the
// reducing collectives.
type Op uint8

// The operations, as in MPI. The bitwise ones are defined on integer types
// only. Replace and NoOp are for the accumulate family: Replace makes an
// accumulate an atomic put, NoOp makes GetAccumulate and FetchAndOp an
// atomic get.
const (
	Sum     = Op(mem.Sum)
	Prod    = Op(mem.Prod)
	Min     = Op(mem.Min)
	Max     = Op(mem.Max)
	Band    = Op(mem.Band)
	Bor     = Op(mem.Bor)
	Bxor    = Op(mem.Bxor)
	Replace = Op(mem.Replace)
	NoOp    = Op(mem.NoOp)
)

// String returns the MPI name of the operation, e.g. "SUM".
func (o Op) String() string {
	switch o {
	case MinLoc:
		return "MINLOC"
	case MaxLoc:
		return "MAXLOC"
	}
	return mem.Op(o).String()
}

// Assert is a set of assertions a program makes to a synchronization call,
// as MPI's assert argument; 0 asserts nothing. narma uses the assertions
// that let it skip work and checks those it can check cheaply.
type Assert uint8

// The assertions.
const (
	// NoCheck (Post, Start, Lock, LockAll): the matching Post has
	// completed before Start is called, or no other rank holds or will
	// request a conflicting lock. Post and Start skip their messages; Lock
	// skips the lock word. It must be given to both Post and Start.
	NoCheck = Assert(engine.NoCheck)
	// NoStore (Fence, Post): the window was not updated by local stores
	// since the last synchronization. Accepted; narma's windows are
	// coherent, so it saves nothing.
	NoStore = Assert(engine.NoStore)
	// NoPut (Fence, Post): the window will not be updated by puts or
	// accumulates until the next synchronization. Accepted; saves nothing.
	NoPut = Assert(engine.NoPut)
	// NoPrecede (Fence): the fence closes no RMA operations; it must be
	// given by every rank. The fence skips its flush (immediate) or all
	// its work (deferred).
	NoPrecede = Assert(engine.NoPrecede)
	// NoSucceed (Fence): no RMA operations follow; it must be given by
	// every rank. With NoPrecede as well, the fence does nothing at all.
	NoSucceed = Assert(engine.NoSucceed)
)

// LockType is the kind of a passive-target lock.
type LockType uint8

// Lock types.
const (
	Shared    LockType = iota + 1 // other shared holders allowed
	Exclusive                     // no other holder
)

// Strategy selects how a window implements its synchronization calls, after
// Gropp and Thakur's "An Evaluation of Implementation Options for MPI
// One-Sided Communication".
type Strategy uint8

const (
	// StrategyDefault lets the transport choose: Immediate on the
	// in-process transport (data moves with loads and stores, so
	// synchronizing first is cheap and queueing would only add copies);
	// Deferred where operations cross a network.
	StrategyDefault = Strategy(engine.StrategyDefault)
	// Immediate synchronizes when an epoch opens (Fence barriers, Start
	// waits for posts, Lock takes the lock) and moves data as each
	// operation is called.
	Immediate = Strategy(engine.Immediate)
	// Deferred queues operations at the origin and performs them in the
	// closing call: a fence does one reduce-scatter of target counts
	// instead of barriers, Start does not wait (Complete does), Lock
	// sends nothing and Unlock takes the lock, performs the operations
	// (gets last) and releases it.
	Deferred = Strategy(engine.Deferred)
)

// String returns "immediate", "deferred" or "default".
func (s Strategy) String() string { return engine.Strategy(s).String() }

// Layout describes where elements lie in a buffer, counted in elements
// from the start of the buffer (the origin slice, or the target's
// displacement). It is a small value, built by one of:
//
//   - Contiguous, the zero Layout: every element of the buffer, in order;
//   - Vector: Count blocks of BlockLen elements whose starts are Stride
//     elements apart, like MPI_Type_vector (the fields may also be set
//     directly). Its blocks may not overlap (Stride >= BlockLen);
//   - Indexed and IndexedBlock: blocks of given lengths at given
//     displacements, like MPI_Type_indexed;
//   - Subarray: a box of a row-major multi-dimensional array, like
//     MPI_Type_create_subarray in C order.
//
// Every kind may be used on either side of every strided call, with any
// kind on the other side, as long as both describe the same number of
// elements; the elements are paired in order. A layout must fit its
// buffer: the origin slice, or the target window from the displacement,
// must reach one past its last element.
//
// The constructors do not return errors, so that a layout can be built in
// an argument list like Vector's: invalid arguments (negative lengths or
// displacements, slices of different lengths, a subarray outside its
// array, sizes beyond 2^48 elements) are recorded in the value, and every
// call given the layout refuses it with an error wrapping ErrLayout,
// before anything is written. Err reports the problem at once, for a
// program that wants to check where it builds the layout.
//
// An indexed layout may have overlapping blocks; a call refuses it (with
// ErrLayout) on the side it writes, where the outcome would depend on the
// order of the transfers: the target of a put or accumulate, the
// destination buffer of a get. An origin of a put or accumulate, or the
// target side of a get, may overlap.
//
// Indexed, IndexedBlock and Subarray copy their arguments: the Layout owns
// what it describes, is never changed, and may be reused, shared between
// goroutines and kept by operations that a deferred epoch performs later,
// whatever the caller does with its slices afterwards. Such a layout keeps
// Count, BlockLen and Stride zero (setting them makes it invalid). Layouts
// compare with == as values: equal vectors are equal, and an indexed or
// subarray layout equals its copies only (not another one built from the
// same arguments).
type Layout struct {
	Count    int
	BlockLen int
	Stride   int
	shape    *engine.Shape // Indexed, IndexedBlock, Subarray; nil otherwise
}

// Vector returns the layout of count blocks of blockLen elements, stride
// elements apart. Vector(rows, 1, cols) is a column of a row-major matrix
// with cols columns.
func Vector(count, blockLen, stride int) Layout {
	return Layout{Count: count, BlockLen: blockLen, Stride: stride}
}

// Indexed returns the layout of len(blockLens) blocks taken in order,
// block i holding blockLens[i] elements from element displs[i], like
// MPI_Type_indexed. Displacements need not increase. Lengths and
// displacements must not be negative and the slices must have the same
// length, else the layout is invalid (see Layout). Empty blocks are
// allowed and ignored; blocks that continue each other move as one. For
// example Indexed([]int{2, 1}, []int{5, 0}) is elements 5, 6 and 0.
func Indexed(blockLens, displs []int) Layout {
	return Layout{shape: engine.NewIndexed(blockLens, displs).Shape}
}

// IndexedBlock returns the layout of len(displs) blocks of blockLen
// elements, block i from element displs[i], like
// MPI_Type_create_indexed_block: Indexed with equal lengths.
func IndexedBlock(blockLen int, displs []int) Layout {
	return Layout{shape: engine.NewIndexedBlock(blockLen, displs).Shape}
}

// Subarray returns the layout of a subarray of a row-major (C order)
// array: dimension k of the array has sizes[k] elements, of which the
// subarray takes subsizes[k] from index starts[k], like
// MPI_Type_create_subarray with MPI_ORDER_C. The elements are taken in
// row-major order, counted from the array's first element (the start of
// the buffer), so the buffer must reach one past the subarray's last
// element, not necessarily the whole array. Any number of dimensions
// (at least one) may be given; the three slices must have the same
// length, every size must be at least 1, and each range must lie in its
// dimension, else the layout is invalid (see Layout). A subsize of 0 makes
// a layout of no elements. A large subarray costs no memory per row: its
// rows are computed as they are transferred.
//
// For example Subarray([]int{4, 5, 6}, []int{4, 5, 1}, []int{0, 0, 5})
// is the face of last index 5 of a 4x5x6 block, 20 elements.
func Subarray(sizes, subsizes, starts []int) Layout {
	return Layout{shape: engine.NewSubarray(sizes, subsizes, starts).Shape}
}

// Contiguous is the zero Layout: every element of the buffer, in order.
var Contiguous = Layout{}

// Err returns nil if l is a valid layout, else an error wrapping ErrLayout
// that says why, the error every call given l returns. It checks l alone:
// a call also checks l against its buffers.
func (l Layout) Err() error { return l.engine().Err() }

// Overlaps reports whether some element lies in two blocks of l, which
// only an indexed layout allows; calls refuse such a layout on the side
// they write.
func (l Layout) Overlaps() bool { return l.engine().Overlaps() }

// String describes l as the call that builds it, e.g. "Vector(4, 1, 6)",
// "Contiguous" or "Subarray([4 5 6], [4 5 1], [0 0 5])".
func (l Layout) String() string { return l.engine().String() }

func (l Layout) engine() engine.Layout {
	return engine.Layout{Count: l.Count, BlockLen: l.BlockLen, Stride: l.Stride, Shape: l.shape}
}

// Wildcards. AnySource matches any sending rank and AnyTag any tag, in
// Recv, Irecv, Probe and Iprobe (messages) and in NotifyInit (tag
// notices). A Status has them where no rank or tag applies (see Status).
const (
	AnySource = -1
	AnyTag    = -1
)

// ProcNull is the null rank, MPI_PROC_NULL: a Send, Isend, put, get,
// accumulate or other RMA operation (notified or not) aimed at it
// completes at once and does nothing, and a Recv, Irecv, Probe or Iprobe
// from it completes at once with Status{Source: ProcNull, Tag: AnyTag,
// Count: 0}. Codes whose boundary ranks have no neighbour pass it instead
// of testing. An RMA operation on ProcNull needs no epoch, is not checked
// further, and a Flush or FlushLocal of ProcNull returns at once.
const ProcNull = -2

// AnySource, AnyTag and ProcNull are spelled out so that the
// documentation shows them; they must be the engine's, which compiling
// checks: an index other than 0 is out of range.
var (
	_ = [1]struct{}{}[AnySource-engine.AnySource]
	_ = [1]struct{}{}[AnyTag-engine.AnyTag]
	_ = [1]struct{}{}[ProcNull-engine.ProcNull]
)

// Bytes returns the bytes of s without copying: a zero-copy view for
// Send, Recv and other byte-level calls. The view aliases s.
func Bytes[T Elem](s []T) []byte { return mem.Bytes(s) }

// SizeOf returns the size in bytes of one element of type T, for byte
// offsets into windows (e.g. layouts in a byte window).
func SizeOf[T Elem]() int { return mem.SizeOf[T]() }
