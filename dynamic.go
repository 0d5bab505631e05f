package narma

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// CreateDynamic creates a window without memory, collectively
// (MPI_Win_create_dynamic): each rank then attaches buffers of AllocMem
// memory to it, and detaches them, on its own (Attach, Detach), and gives
// their addresses (Addr) to the ranks that will access them, in messages
// of the program's. An origin turns an address into a displacement once
// with Resolve; every data-movement call, notified or not, takes
// displacements of the resolved address, in the same epochs as on any
// window. Signal notices need window memory at the target and are refused
// on dynamic windows; tag and counter notices work.
//
// Linked structures and buffers that grow are the use: a rank attaches a
// larger buffer, sends its address, and detaches the old one.
func CreateDynamic[T Elem](ctx context.Context, c *Comm, opts ...WinOption) (*Win[T], error) {
	e, err := c.e.CreateDynamic(ctx, winOptions[T](opts))
	if err != nil {
		return nil, err
	}
	return newWin[T](e), nil
}

// AddrSize is the length of an Addr's binary encoding.
const AddrSize = engine.DynAddrSize

// Addr is the address of a buffer attached to a dynamic window: which
// window, which rank, and what the transport needs to reach the buffer.
// It is a value to send to other ranks, as bytes (AppendBinary,
// MarshalBinary, UnmarshalBinary); the zero Addr is no address.
type Addr struct{ a engine.DynAddr }

// AppendBinary appends a's encoding, AddrSize bytes, to b
// (encoding.BinaryAppender).
func (a Addr) AppendBinary(b []byte) ([]byte, error) { return a.a.AppendBinary(b), nil }

// MarshalBinary returns a's encoding, AddrSize bytes
// (encoding.BinaryMarshaler).
func (a Addr) MarshalBinary() ([]byte, error) { return a.AppendBinary(nil) }

// UnmarshalBinary sets a from an encoding of AppendBinary or
// MarshalBinary (encoding.BinaryUnmarshaler); a malformed one is an
// error wrapping ErrInvalid and leaves a unchanged.
func (a *Addr) UnmarshalBinary(b []byte) error {
	d, ok := engine.DecodeDynAddr(b)
	if !ok {
		return fmt.Errorf("narma: Addr.UnmarshalBinary: %d bytes, want %d of an address: %w", len(b), AddrSize, ErrInvalid)
	}
	a.a = d
	return nil
}

// Rank returns the rank that attached the buffer at a, in the window's
// communicator: the target to use with the displacements of Resolve.
func (a Addr) Rank() int { return a.a.Rank }

// Len returns the length in bytes of the buffer at a.
func (a Addr) Len() int { return a.a.Size }

// Attach exposes buf through the dynamic window w and returns its address
// (MPI_Win_attach); buf must come from AllocMem, else the error wraps
// ErrNotAllocated. It is local. buf belongs to the window until Detach.
func (w *Win[T]) Attach(buf []T) (Addr, error) {
	b := mem.Bytes(buf)
	if len(b) > 0 && !mem.Owns(b) {
		return Addr{}, &OpError{Op: "Attach", Rank: w.rank(), Detail: fmt.Sprintf("buffer of %d bytes", len(b)), Err: ErrNotAllocated}
	}
	d, err := w.eng().Attach(b)
	return Addr{d}, err
}

// Detach withdraws the buffer at a, which this rank attached to w
// (MPI_Win_detach). Later accesses to it fail at their origin and write
// nothing; complete the expected ones first, as in MPI.
func (w *Win[T]) Detach(a Addr) error { return w.eng().Detach(a.a) }

// Resolve returns the displacement of the first element of the buffer at
// a, on rank a.Rank() of the dynamic window w: the data-movement calls
// with target a.Rank() and displacement Resolve(a)+k reach element k
// (counted in the target's displacement unit, by default the element
// size). It is local, and refuses an address of another window, or one
// the transport does not know (forged, or detached before its first
// Resolve here); accesses through an address detached later fail and
// write nothing.
func (w *Win[T]) Resolve(a Addr) (int, error) { return w.eng().Resolve(a.a) }

// rank returns the calling rank, or -1 for a nil or freed window.
func (w *Win[T]) rank() int {
	if w == nil || w.e == nil {
		return -1
	}
	return w.e.Comm().Rank()
}
