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
func (o Op) String() string { return mem.Op(o).String() }

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

// Layout describes where elements lie in a buffer, counted in elements:
// Count blocks of BlockLen elements whose starts are Stride elements apart,
// like MPI_Type_vector. The zero Layout means contiguous: as many elements
// as the buffer holds. Blocks may not overlap (Stride >= BlockLen).
type Layout struct {
	Count    int
	BlockLen int
	Stride   int
}

// Vector returns the layout of count blocks of blockLen elements, stride
// elements apart. Vector(rows, 1, cols) is a column of a row-major matrix
// with cols columns.
func Vector(count, blockLen, stride int) Layout {
	return Layout{Count: count, BlockLen: blockLen, Stride: stride}
}

// Contiguous is the zero Layout: every element of the buffer, in order.
var Contiguous = Layout{}

func (l Layout) engine() engine.Layout { return engine.Layout(l) }

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
