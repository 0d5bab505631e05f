package engine

import (
	"context"

	"github.com/narma-rma/narma/internal/mem"
)

// Collectives in which every rank gives and takes: all-to-all exchanges
// and prefix reductions. Lengths are in bytes here. As with the rooted
// ones, a rank that refuses its own arguments still takes part (empty
// blocks out, the others' taken in and dropped), so that no rank waits
// for ever and no message is left for the next collective.

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
		return c.alltoall(ctx, op, nil, nil, nil, nil,
			opErr(op, c.rank, ErrLayout, "send has %d bytes and recv %d, want the same multiple of %d ranks", len(send), len(recv), c.size))
	}
	b := len(send) / c.size
	blks := make([][2]int, c.size)
	for r := range blks {
		blks[r] = [2]int{r * b, (r + 1) * b}
	}
	return c.alltoall(ctx, op, send, recv, blks, blks, nil)
}

// Alltoallv sends scounts[d] bytes of send at sdispls[d] to rank d and
// receives rcounts[s] bytes from rank s into recv at rdispls[s] (nil
// displacements: packed in rank order). What rank s sends to r must be
// as long as what r expects from s.
func (c *Comm) Alltoallv(ctx context.Context, send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int) error {
	const op = "Alltoallv"
	sb, err := c.blocks(op, "send", scounts, sdispls, len(send))
	var rb [][2]int
	if err == nil {
		rb, err = c.blocks(op, "recv", rcounts, rdispls, len(recv))
	}
	if err == nil && sb[c.rank][1]-sb[c.rank][0] != rb[c.rank][1]-rb[c.rank][0] {
		err = opErr(op, c.rank, ErrLayout, "this rank sends itself %d bytes and expects %d", sb[c.rank][1]-sb[c.rank][0], rb[c.rank][1]-rb[c.rank][0])
	}
	if err != nil {
		return c.alltoall(ctx, op, nil, nil, nil, nil, err)
	}
	return c.alltoall(ctx, op, send, recv, sb, rb, nil)
}

// alltoall sends each rank its block of send and receives its block of
// recv from each: rank r sends to r+1, r+2, ... and receives from r-1,
// r-2, ..., so that no rank is the target of all at once. With bad (this
// rank refused its arguments), it sends empty blocks and drops what
// comes.
func (c *Comm) alltoall(ctx context.Context, op string, send, recv []byte, sb, rb [][2]int, bad error) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	for d := 1; d < c.size; d++ {
		dst := (c.rank + d) % c.size
		var blk []byte
		if bad == nil {
			blk = send[sb[dst][0]:sb[dst][1]]
		}
		if err := c.csend(op, blk, dst, tagAlltoall); err != nil {
			return err
		}
	}
	if bad == nil {
		copy(recv[rb[c.rank][0]:rb[c.rank][1]], send[sb[c.rank][0]:sb[c.rank][1]])
	}
	first := bad
	for d := 1; d < c.size; d++ {
		src := (c.rank - d + c.size) % c.size
		if bad != nil {
			c.drain(ctx, op, src, tagAlltoall)
			continue
		}
		if err := c.crecv(ctx, op, recv[rb[src][0]:rb[src][1]], src, tagAlltoall); err != nil && first == nil {
			first = err
		}
	}
	return first
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

// scan runs the chain: rank r takes the prefix of ranks 0..r-1 from r-1,
// combines its own, and passes it on. A rank that refuses its arguments,
// or gets a prefix it cannot use, passes an empty one, which the next
// rank refuses in turn: the error runs down the chain instead of a wait.
func (c *Comm) scan(ctx context.Context, op string, send, recv []byte, t mem.Type, o mem.Op, inclusive bool) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	bad := checkReduceArgs(op, c.rank, t, o, len(send))
	if bad == nil && len(recv) != len(send) {
		bad = opErr(op, c.rank, ErrLayout, "recv has %d bytes, send %d", len(recv), len(send))
	}
	var prefix []byte
	if c.rank > 0 {
		prefix = make([]byte, len(send))
		if err := c.crecv(ctx, op, prefix, c.rank-1, tagScan); err != nil && bad == nil {
			bad = err
		}
	}
	if bad != nil {
		if c.rank+1 < c.size {
			_ = c.csend(op, nil, c.rank+1, tagScan)
		}
		return bad
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
