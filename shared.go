package narma

import (
	"context"
	"fmt"
	"math"

	"github.com/narma-rma/narma/internal/mem"
)

// SplitShared returns the communicator of the ranks of c that share
// memory with this rank, collectively over c, in c's order
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): every rank of a job of
// goroutines, the ranks of this host under narmarun's shared-memory or
// hybrid transport, and this rank alone over TCP or libfabric. A window
// made on it by AllocateShared lets every rank load and store the others'
// memory.
func (c *Comm) SplitShared(ctx context.Context) (*Comm, error) {
	s, err := c.e.SplitShared(ctx)
	if err != nil {
		return nil, err
	}
	return &Comm{e: s, ctx: c.ctx}, nil
}

// AllocateShared creates a window of n elements on every rank, as
// Allocate does, whose memory every rank reaches with loads and stores
// through SharedQuery (MPI_Win_allocate_shared). c must be a communicator
// of ranks that share memory (SplitShared gives one); on any other every
// rank returns an error wrapping ErrNotShared and no window is made.
//
// The window is an ordinary window too: puts, gets, notified accesses and
// every synchronization mode work on it.
func AllocateShared[T Elem](ctx context.Context, c *Comm, n int, opts ...WinOption) (*Win[T], error) {
	if n < 0 || n > math.MaxInt/mem.SizeOf[T]() {
		return nil, &OpError{Op: "AllocateShared", Rank: c.Rank(), Detail: fmt.Sprintf("%d elements", n), Err: ErrInvalid}
	}
	e, err := c.e.AllocateShared(ctx, n*mem.SizeOf[T](), winOptions[T](opts))
	if err != nil {
		return nil, err
	}
	return newWin[T](e), nil
}

// SharedQuery returns rank's part of the window as a slice of this
// process's memory (MPI_Win_shared_query): the rank's own Local part, or
// a peer's memory where the transport maps it (goroutine ranks, processes
// of one host), on any window; elsewhere an error wrapping ErrNotShared.
//
// Loads and stores through the slice are plain memory accesses, outside
// narma's epochs, and follow Go's memory model: a store by one rank and
// a load by another must be ordered by a synchronization between them,
// such as Win.Sync on both sides around a Barrier or a notification
// (MPI's "separate synchronization" of shared windows), or be atomic:
// sync/atomic on the slice's elements, or narma's atomic calls on the
// window (FetchAndOp, CompareAndSwap), which work on the same words. The
// slice must not be used after the window is freed.
func (w *Win[T]) SharedQuery(rank int) ([]T, error) {
	b, err := w.eng().Mapped(rank)
	if err != nil {
		return nil, err
	}
	s, err := mem.Slice[T](b)
	if err != nil {
		return nil, &OpError{Op: "SharedQuery", Rank: w.e.Comm().Rank(), Detail: err.Error(), Err: ErrType}
	}
	return s, nil
}
