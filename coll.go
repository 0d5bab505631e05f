package narma

import (
	"context"

	"github.com/narma-rma/narma/internal/mem"
)

// Bcast copies buf from rank root to buf on every rank. Every rank passes a
// buffer of the same length.
func Bcast[T Elem](ctx context.Context, c *Comm, buf []T, root int) error {
	return c.e.Bcast(ctx, mem.Bytes(buf), root)
}

// Allreduce combines send element-wise across ranks with op and stores the
// result in recv on every rank. The reduction order is fixed, so float
// results are identical on every rank.
func Allreduce[T Elem](ctx context.Context, c *Comm, send, recv []T, op Op) error {
	return c.e.Allreduce(ctx, mem.Bytes(send), mem.Bytes(recv), mem.TypeOf[T](), mem.Op(op))
}

// Allgather concatenates every rank's send, in rank order, into recv on
// every rank; len(recv) must be Size()*len(send).
func Allgather[T Elem](ctx context.Context, c *Comm, send, recv []T) error {
	return c.e.Allgather(ctx, mem.Bytes(send), mem.Bytes(recv))
}

// ReduceScatter combines send (Size() blocks of len(recv) elements)
// element-wise across ranks with op and leaves block r of the result in
// recv on rank r, like MPI_Reduce_scatter_block.
func ReduceScatter[T Elem](ctx context.Context, c *Comm, send, recv []T, op Op) error {
	return c.e.ReduceScatter(ctx, mem.Bytes(send), mem.Bytes(recv), mem.TypeOf[T](), mem.Op(op))
}
