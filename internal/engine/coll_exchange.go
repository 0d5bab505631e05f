package engine

import (
	"context"

	"github.com/narma-rma/narma/internal/mem"
)

// Collectives in which every rank gives and takes: all-to-all exchanges
// and prefix reductions. Lengths are in bytes here.

const (
	tagAlltoall = 800
	tagScan     = 900
)

// Alltoall sends block d of send to rank d and receives rank s's block
// for this rank into block s of recv; send and recv hold Size blocks of
// the same length.
func (c *Comm) Alltoall(ctx context.Context, send, recv []byte) error {
	const op = "Alltoall"
	if len(send) != len(recv) || len(send)%c.size != 0 {
		return opErr(op, c.rank, ErrLayout, "send has %d bytes and recv %d, want the same multiple of %d ranks", len(send), len(recv), c.size)
	}
	b := len(send) / c.size
	blks := make([][2]int, c.size)
	for r := range blks {
		blks[r] = [2]int{r * b, (r + 1) * b}
	}
	return c.alltoall(ctx, op, send, recv, blks, blks)
}

// Alltoallv sends scounts[d] bytes of send at sdispls[d] to rank d and
// receives rcounts[s] bytes from rank s into recv at rdispls[s] (nil
// displacements: packed in rank order). What rank s sends to r must be
// as long as what r expects from s.
func (c *Comm) Alltoallv(ctx context.Context, send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int) error {
	const op = "Alltoallv"
	sb, err := c.blocks(op, "send", scounts, sdispls, len(send))
	if err != nil {
		return err
	}
	rb, err := c.blocks(op, "recv", rcounts, rdispls, len(recv))
	if err != nil {
		return err
	}
	if sb[c.rank][1]-sb[c.rank][0] != rb[c.rank][1]-rb[c.rank][0] {
		return opErr(op, c.rank, ErrLayout, "this rank sends itself %d bytes and expects %d", sb[c.rank][1]-sb[c.rank][0], rb[c.rank][1]-rb[c.rank][0])
	}
	return c.alltoall(ctx, op, send, recv, sb, rb)
}

// alltoall sends each rank its block of send and receives its block of
// recv from each: rank r sends to r+1, r+2, ... and receives from r-1,
// r-2, ..., so that no rank is the target of all at once.
func (c *Comm) alltoall(ctx context.Context, op string, send, recv []byte, sb, rb [][2]int) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	for d := 1; d < c.size; d++ {
		dst := (c.rank + d) % c.size
		if err := c.csend(op, send[sb[dst][0]:sb[dst][1]], dst, tagAlltoall); err != nil {
			return err
		}
	}
	copy(recv[rb[c.rank][0]:rb[c.rank][1]], send[sb[c.rank][0]:sb[c.rank][1]])
	for d := 1; d < c.size; d++ {
		src := (c.rank - d + c.size) % c.size
		if err := c.crecv(ctx, op, recv[rb[src][0]:rb[src][1]], src, tagAlltoall); err != nil {
			return err
		}
	}
	return nil
}

// Scan leaves in recv on rank r the element-wise combination with o of
// send on ranks 0 to r (an inclusive prefix reduction, MPI_Scan). The
// partial results travel down the ranks, each combined in rank order, so
// floating-point results are those of a left-to-right loop.
func (c *Comm) Scan(ctx context.Context, send, recv []byte, t mem.Type, o mem.Op) error {
	return c.scan(ctx, "Scan", send, recv, t, o, true)
}

// Exscan leaves in recv on rank r > 0 the combination of send on ranks 0
// to r-1 (an exclusive prefix reduction, MPI_Exscan); rank 0's recv is
// left as it is.
func (c *Comm) Exscan(ctx context.Context, send, recv []byte, t mem.Type, o mem.Op) error {
	return c.scan(ctx, "Exscan", send, recv, t, o, false)
}

func (c *Comm) scan(ctx context.Context, op string, send, recv []byte, t mem.Type, o mem.Op, inclusive bool) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	if err := checkReduceArgs(op, c.rank, t, o, len(send)); err != nil {
		return err
	}
	if len(recv) != len(send) {
		return opErr(op, c.rank, ErrLayout, "recv has %d bytes, send %d", len(recv), len(send))
	}
	// acc: the combination of ranks 0..r-1 (prefix), then of 0..r.
	var prefix []byte
	if c.rank > 0 {
		prefix = make([]byte, len(send))
		if err := c.crecv(ctx, op, prefix, c.rank-1, tagScan); err != nil {
			return err
		}
	}
	acc := make([]byte, len(send))
	if prefix == nil {
		copy(acc, send)
	} else {
		copy(acc, prefix)
		mem.Apply(o, t, acc, send)
	}
	if c.rank+1 < c.size {
		if err := c.csend(op, acc, c.rank+1, tagScan); err != nil {
			return err
		}
	}
	switch {
	case inclusive:
		copy(recv, acc)
	case prefix != nil:
		copy(recv, prefix)
	}
	return nil
}
