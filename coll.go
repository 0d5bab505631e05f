package narma

import (
	"context"
	"math"

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

// Reduce combines send element-wise across ranks with op and stores the
// result in recv on rank root, like MPI_Reduce; recv is not used on the
// other ranks and may be nil there.
func Reduce[T Elem](ctx context.Context, c *Comm, send, recv []T, op Op, root int) error {
	return c.e.Reduce(ctx, mem.Bytes(send), mem.Bytes(recv), mem.TypeOf[T](), mem.Op(op), root)
}

// Gather collects every rank's send, in rank order, into recv on rank
// root, like MPI_Gather; there len(recv) must be Size()*len(send).
// Every rank passes a send of the same length; recv is not used on the
// other ranks.
func Gather[T Elem](ctx context.Context, c *Comm, send, recv []T, root int) error {
	return c.e.Gather(ctx, mem.Bytes(send), mem.Bytes(recv), root)
}

// Gatherv collects rank r's send, counts[r] elements long, into recv at
// element displs[r] on rank root, like MPI_Gatherv; nil displs packs the
// blocks in rank order. counts, displs and recv are used on root only.
func Gatherv[T Elem](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, root int) error {
	size := mem.TypeOf[T]().Size()
	return c.e.Gatherv(ctx, mem.Bytes(send), mem.Bytes(recv), scaled(counts, size), scaled(displs, size), root)
}

// Scatter hands block r of root's send, Size() blocks of len(recv)
// elements, to rank r's recv, like MPI_Scatter; send is not used on the
// other ranks.
func Scatter[T Elem](ctx context.Context, c *Comm, send, recv []T, root int) error {
	return c.e.Scatter(ctx, mem.Bytes(send), mem.Bytes(recv), root)
}

// Scatterv hands counts[r] elements of root's send, from element
// displs[r], to rank r's recv, which must be that long, like
// MPI_Scatterv; nil displs takes the blocks packed in rank order. send,
// counts and displs are used on root only.
func Scatterv[T Elem](ctx context.Context, c *Comm, send []T, counts, displs []int, recv []T, root int) error {
	size := mem.TypeOf[T]().Size()
	return c.e.Scatterv(ctx, mem.Bytes(send), scaled(counts, size), scaled(displs, size), mem.Bytes(recv), root)
}

// Alltoall sends block d of send to rank d and receives block s of recv
// from rank s, like MPI_Alltoall: send and recv hold Size() blocks of the
// same length.
func Alltoall[T Elem](ctx context.Context, c *Comm, send, recv []T) error {
	return c.e.Alltoall(ctx, mem.Bytes(send), mem.Bytes(recv))
}

// Alltoallv sends scounts[d] elements of send, from element sdispls[d],
// to rank d, and receives rcounts[s] elements from rank s into recv at
// element rdispls[s], like MPI_Alltoallv; nil displacements pack the
// blocks in rank order. What rank s sends to r must be as long as what r
// expects from s.
func Alltoallv[T Elem](ctx context.Context, c *Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	size := mem.TypeOf[T]().Size()
	return c.e.Alltoallv(ctx, mem.Bytes(send), scaled(scounts, size), scaled(sdispls, size),
		mem.Bytes(recv), scaled(rcounts, size), scaled(rdispls, size))
}

// Scan stores in recv on rank r the element-wise combination with op of
// send on ranks 0 to r, like MPI_Scan. The combination runs in rank
// order, so floating-point results are those of a loop over the ranks.
func Scan[T Elem](ctx context.Context, c *Comm, send, recv []T, op Op) error {
	return c.e.Scan(ctx, mem.Bytes(send), mem.Bytes(recv), mem.TypeOf[T](), mem.Op(op))
}

// Exscan stores in recv on rank r > 0 the element-wise combination with
// op of send on ranks 0 to r-1, like MPI_Exscan; rank 0's recv is left
// unchanged.
func Exscan[T Elem](ctx context.Context, c *Comm, send, recv []T, op Op) error {
	return c.e.Exscan(ctx, mem.Bytes(send), mem.Bytes(recv), mem.TypeOf[T](), mem.Op(op))
}

// scaled returns counts or displacements in elements of size bytes as
// bytes (nil stays nil). A negative value, or one whose bytes do not fit
// an int, becomes negative, for the engine to refuse.
func scaled(v []int, size int) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		if x < 0 || x > math.MaxInt/size {
			x = -1 // negative, or would overflow: refused
		}
		out[i] = x * size
	}
	return out
}
