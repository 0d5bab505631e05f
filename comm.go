package narma

import (
	"context"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// Comm is a rank's communicator: a set of the job's ranks (all of them
// for the Comm of Run and Init; some for those of Split, Create and
// SplitShared), this rank's number among them, two-sided messages and
// collectives. Windows are created from it.
//
// A Comm's methods may be called from several goroutines of its rank.
type Comm struct {
	e   *engine.Comm
	ctx context.Context
	fin *finalizer // ends a job made by Init; nil for Run's ranks and duplicates
}

// Rank returns this rank's number, in [0, Size()).
func (c *Comm) Rank() int { return c.e.Rank() }

// Size returns the number of ranks in the communicator.
func (c *Comm) Size() int { return c.e.Size() }

// Context returns a context that is cancelled when the job is aborted (a
// rank failed). Ranks that have no context of their own pass it to
// blocking calls.
func (c *Comm) Context() context.Context { return c.ctx }

// Barrier returns once every rank has entered it.
func (c *Comm) Barrier(ctx context.Context) error { return c.e.Barrier(ctx) }

// Send sends buf to rank dest with tag (tag >= 0). The data is copied
// before Send returns, so Send does not wait for the matching receive.
// Messages from one rank to another with the same tag are received in the
// order they were sent.
func (c *Comm) Send(ctx context.Context, buf []byte, dest, tag int) error {
	return c.e.Send(ctx, buf, dest, tag)
}

// AckFailures acknowledges the failures of peers known so far and returns
// the ranks that have failed. Waits that any rank could end (a Recv,
// Probe or notification request for AnySource, WaitCounter, counter
// thresholds, WaitSignal) fail with ErrPeer once a peer has failed; after
// AckFailures they wait for the living ranks again, until another peer
// fails (MPI's fault-tolerance proposal, ULFM, calls this
// MPIX_Comm_failure_ack).
func (c *Comm) AckFailures() []int { return c.e.AckFailures() }

// Failed returns the ranks known to have failed, in order, without
// acknowledging them: waits that any rank could end still give up until
// AckFailures.
func (c *Comm) Failed() []int { return c.e.Failed() }

// Recv receives into buf the oldest message from src with tag; AnySource
// and AnyTag match any. A longer message fills buf and returns an error
// wrapping ErrTruncate; Status.Count is then the message's full length.
func (c *Comm) Recv(ctx context.Context, buf []byte, src, tag int) (Status, error) {
	st, err := c.e.Recv(ctx, buf, src, tag)
	return Status(st), err
}

// Probe waits for a message matching src and tag and returns its status
// without receiving it.
func (c *Comm) Probe(ctx context.Context, src, tag int) (Status, error) {
	st, err := c.e.Probe(ctx, src, tag)
	return Status(st), err
}

// Iprobe reports, without blocking, whether a message matching src and tag
// is waiting, and its status.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	st, found, err := c.e.Iprobe(src, tag)
	return Status(st), found, err
}

// Isend starts a send and returns its request (complete at once: the data
// is copied, as by Send).
func (c *Comm) Isend(ctx context.Context, buf []byte, dest, tag int) (*Request, error) {
	return requestOf(c.e.Isend(ctx, buf, dest, tag))
}

// Irecv posts a receive into buf and returns its request; buf must not be
// touched until the request completes. Free cancels it.
func (c *Comm) Irecv(buf []byte, src, tag int) (*Request, error) {
	return requestOf(c.e.Irecv(buf, src, tag))
}

// Dup returns a new communicator over the same ranks with its own message
// contexts, collectively (every rank of c calls it; goroutines of a rank
// may make communicators concurrently), like MPI_Comm_dup: messages and
// collectives on it never
// match those of c. Libraries built on narma use a duplicate for their own
// traffic. Closing a duplicate does nothing.
func (c *Comm) Dup(ctx context.Context) (*Comm, error) {
	d, err := c.e.Dup(ctx)
	if err != nil {
		return nil, err
	}
	return &Comm{e: d, ctx: c.ctx}, nil
}

// Send sends buf, a slice of any element type, to rank dest with tag, as
// Comm.Send sends bytes; the receiver may take it as bytes or as
// elements of the same type.
func Send[T Elem](ctx context.Context, c *Comm, buf []T, dest, tag int) error {
	return c.e.Send(ctx, mem.Bytes(buf), dest, tag)
}

// Recv receives into buf the oldest message from src with tag, as
// Comm.Recv does into bytes. Status.Count is in bytes: the elements are
// Count divided by their size.
func Recv[T Elem](ctx context.Context, c *Comm, buf []T, src, tag int) (Status, error) {
	st, err := c.e.Recv(ctx, mem.Bytes(buf), src, tag)
	return Status(st), err
}

// Isend starts a send of buf, as Comm.Isend.
func Isend[T Elem](ctx context.Context, c *Comm, buf []T, dest, tag int) (*Request, error) {
	return requestOf(c.e.Isend(ctx, mem.Bytes(buf), dest, tag))
}

// Irecv posts a receive into buf, as Comm.Irecv; buf must not be touched
// until the request completes.
func Irecv[T Elem](c *Comm, buf []T, src, tag int) (*Request, error) {
	return requestOf(c.e.Irecv(mem.Bytes(buf), src, tag))
}
