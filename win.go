package narma

import (
	"context"
	"fmt"
	"math"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// Win is a window: memory of n elements of T on every rank that the other
// ranks access with put, get and the accumulate family, inside the epochs
// opened by its synchronization calls. Displacements count units of
// DispUnit bytes (by default the size of T) from the start of the target's
// window.
//
// A Win is used by one goroutine of its rank at a time (MPI's
// THREAD_SERIALIZED); give concurrent goroutines their own windows. Buffers
// passed to data-movement calls belong to narma until the operation is
// complete: after the epoch's closing call, a Flush, or the request's Wait.
type Win[T Elem] struct {
	e       *engine.Win
	t       mem.Type
	local   []T
	scratch [2]T // single-element operands (no allocation per call)
}

// WinOption configures a window at creation.
type WinOption func(*engine.WinOptions)

// WithDispUnit sets the displacement unit in bytes (default: the size of
// the element type; 1 addresses bytes).
func WithDispUnit(bytes int) WinOption {
	return func(o *engine.WinOptions) { o.DispUnit = bytes }
}

// WithStrategy selects the synchronization strategy (default:
// StrategyDefault, chosen by the transport).
func WithStrategy(s Strategy) WinOption {
	return func(o *engine.WinOptions) { o.Strategy = engine.Strategy(s) }
}

func winOptions[T Elem](opts []WinOption) engine.WinOptions {
	o := engine.WinOptions{DispUnit: mem.SizeOf[T]()}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// Allocate creates a window of n elements of library memory on every rank,
// collectively, and returns it; Local gives the local part. Ranks may pass
// different n.
func Allocate[T Elem](ctx context.Context, c *Comm, n int, opts ...WinOption) (*Win[T], error) {
	if n < 0 || n > math.MaxInt/mem.SizeOf[T]() {
		return nil, &OpError{Op: "Allocate", Rank: c.Rank(), Detail: fmt.Sprintf("%d elements", n), Err: ErrInvalid}
	}
	e, err := c.e.Allocate(ctx, n*mem.SizeOf[T](), winOptions[T](opts))
	if err != nil {
		return nil, err
	}
	return newWin[T](e), nil
}

// Create creates a window over buf, collectively. buf must come from
// AllocMem (MPI_Alloc_mem): that memory is aligned for atomics and, on
// transports that share memory between processes, mapped where peers can
// reach it. Other memory is refused with ErrNotAllocated.
func Create[T Elem](ctx context.Context, c *Comm, buf []T, opts ...WinOption) (*Win[T], error) {
	e, err := c.e.Create(ctx, mem.Bytes(buf), winOptions[T](opts))
	if err != nil {
		return nil, err
	}
	w := newWin[T](e)
	w.local = buf
	return w, nil
}

func newWin[T Elem](e *engine.Win) *Win[T] {
	w := &Win[T]{e: e, t: mem.TypeOf[T]()}
	w.local, _ = mem.Slice[T](e.Memory())
	return w
}

// AllocMem returns n zeroed elements of library memory, usable with Create
// (nil for a negative or impossibly large n). Release it with FreeMem once
// no window uses it.
func AllocMem[T Elem](n int) []T {
	if n < 0 || n > math.MaxInt/mem.SizeOf[T]() {
		return nil
	}
	s, _ := mem.Slice[T](mem.Alloc(n * mem.SizeOf[T]()))
	return s
}

// FreeMem releases memory returned by AllocMem.
func FreeMem[T Elem](s []T) error {
	if err := mem.Free(mem.Bytes(s)); err != nil {
		return ErrNotAllocated
	}
	return nil
}

// Local returns this rank's part of the window. Local loads and stores
// follow MPI's rules: they must not conflict with RMA accesses in the same
// epoch. After Free it returns nil, as it does for every view of the
// window (As); a slice taken before Free must not be used after it.
func (w *Win[T]) Local() []T {
	if w == nil || w.e.Freed() {
		return nil
	}
	return w.local
}

// eng returns the engine window; nil for a nil Win, whose calls then fail
// with ErrFreed instead of panicking.
func (w *Win[T]) eng() *engine.Win {
	if w == nil {
		return nil
	}
	return w.e
}

// Strategy returns the synchronization strategy the window uses.
func (w *Win[T]) Strategy() Strategy { return Strategy(w.eng().Strategy()) }

// Free releases the window, collectively. Every epoch must be closed. The
// memory of an Allocate'd window is released; Create's buffer stays the
// caller's.
func (w *Win[T]) Free(ctx context.Context) error { return w.eng().Free(ctx) }

// As returns a view of w whose data-movement calls move elements of type
// U: the same window, with the same epochs, displacement unit and memory.
// Use it to reach differently typed data in one window, e.g. uint64
// signal words in a window of float64, or typed objects in a byte window.
// The view's Local covers the whole elements of U that fit in the local
// memory; it is nil if the memory is not aligned for U.
func As[U, T Elem](w *Win[T]) *Win[U] {
	if w == nil {
		return nil
	}
	v := &Win[U]{e: w.e, t: mem.TypeOf[U]()}
	b := w.e.Memory()
	b = b[:len(b)-len(b)%mem.SizeOf[U]()]
	v.local, _ = mem.Slice[U](b)
	return v
}
