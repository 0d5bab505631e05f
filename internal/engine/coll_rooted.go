package engine

import (
	"context"

	"github.com/narma-rma/narma/internal/mem"
)

// Rooted collectives: one rank, the root, combines, collects or hands
// out. Lengths are in bytes here; package narma counts elements.
//
// Arguments that only the root uses (its recv, its counts) are checked
// there, and a root that refuses them still takes part: it takes in what
// the others send, or sends them empty blocks, which they refuse with
// ErrCollective. So no rank waits for ever and no message is left over
// to be matched by the next collective.

const (
	tagReduceRoot = 500
	tagGather     = 600
	tagScatter    = 700
)

// drain takes in and drops the collective message from src with tag,
// whatever its length: the caller is failing the collective.
func (c *Comm) drain(ctx context.Context, op string, src, tag int) {
	_, _ = c.recv(ctx, op, c.coll, nil, src, tag)
}

// Reduce combines send from every rank element-wise with o and leaves
// the result in recv on root; recv is not used elsewhere (it may be
// nil). The combination is a binomial tree in a fixed order, as in
// Allreduce.
func (c *Comm) Reduce(ctx context.Context, send, recv []byte, t mem.Type, o mem.Op, root int) error {
	if err := checkReduceArgs("Reduce", c.rank, t, o, len(send)); err != nil {
		return err
	}
	return c.ReduceWith(ctx, send, recv, applyOp(o, t), root)
}

// Combine is a reduction's operation on whole elements of Size bytes:
// Apply(dst, src) sets each element of dst to dst op src. The operation
// must be associative and commutative, as MPI's predefined ones are: the
// algorithms combine in a fixed order (so every rank of an Allreduce
// gets the same bits), but not in rank order.
type Combine struct {
	Size  int
	Apply func(dst, src []byte)
}

// applyOp is the Combine of a predefined operation on t.
func applyOp(o mem.Op, t mem.Type) Combine {
	return Combine{Size: t.Size(), Apply: func(dst, src []byte) { mem.Apply(o, t, dst, src) }}
}

// ReduceWith is Reduce with a combination of the caller's (MINLOC and
// MAXLOC on pairs).
func (c *Comm) ReduceWith(ctx context.Context, send, recv []byte, f Combine, root int) error {
	const op = "Reduce"
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	if err := c.checkRank(op, root); err != nil {
		return err
	}
	if f.Size <= 0 || len(send)%f.Size != 0 {
		return opErr(op, c.rank, ErrLayout, "%d bytes is not a whole number of %d-byte elements", len(send), f.Size)
	}
	n := c.size
	vr := (c.rank - root + n) % n
	accBuf, tmpBuf := getScratch(len(send)), getScratch(len(send))
	acc, tmp := *accBuf, *tmpBuf
	copy(acc, send)
	for mask := 1; mask < n; mask <<= 1 {
		if vr&mask != 0 {
			err := c.csend(op, acc, (vr-mask+root)%n, tagReduceRoot)
			putScratch(accBuf)
			putScratch(tmpBuf)
			return err
		}
		if vr+mask < n {
			if err := c.crecv(ctx, op, tmp, (vr+mask+root)%n, tagReduceRoot); err != nil {
				return err
			}
			f.Apply(acc, tmp)
		}
	}
	putScratch(tmpBuf)
	defer putScratch(accBuf)
	if len(recv) != len(send) {
		return opErr(op, c.rank, ErrLayout, "recv has %d bytes, send %d", len(recv), len(send))
	}
	copy(recv, acc)
	return nil
}

// blocks returns the blocks that counts and displs (nil: packed in rank
// order) name in a buffer of size bytes, or an error for op.
func (c *Comm) blocks(op, what string, counts, displs []int, size int) ([][2]int, error) {
	if len(counts) != c.size {
		return nil, opErr(op, c.rank, ErrLayout, "%d %s counts for %d ranks", len(counts), what, c.size)
	}
	if displs != nil && len(displs) != c.size {
		return nil, opErr(op, c.rank, ErrLayout, "%d %s displacements for %d ranks", len(displs), what, c.size)
	}
	b := make([][2]int, c.size)
	at := 0
	for r, n := range counts {
		if displs != nil {
			at = displs[r]
		}
		if n < 0 || at < 0 || at > size || n > size-at {
			return nil, opErr(op, c.rank, ErrLayout, "%s block of rank %d (%d bytes at %d) outside a buffer of %d", what, r, n, at, size)
		}
		b[r] = [2]int{at, at + n}
		at += n
	}
	return b, nil
}

// Gather collects len(send) bytes from every rank into recv on root,
// rank r's block at r*len(send); recv is not used elsewhere.
func (c *Comm) Gather(ctx context.Context, send, recv []byte, root int) error {
	const op = "Gather"
	var bad error
	if c.rank == root && len(recv) != len(send)*c.size {
		bad = opErr(op, c.rank, ErrLayout, "recv has %d bytes, want %d ranks x %d", len(recv), c.size, len(send))
	}
	return c.gather(ctx, op, send, recv, nil, bad, root)
}

// Gatherv collects send from every rank into recv on root, rank r's
// counts[r] bytes at displs[r] (nil displs: packed in rank order);
// counts, displs and recv are used on root only.
func (c *Comm) Gatherv(ctx context.Context, send, recv []byte, counts, displs []int, root int) error {
	const op = "Gatherv"
	var blks [][2]int
	var bad error
	if c.rank == root {
		if blks, bad = c.blocks(op, "recv", counts, displs, len(recv)); bad == nil && len(send) != counts[root] {
			bad = opErr(op, c.rank, ErrLayout, "send has %d bytes, counts[%d] says %d", len(send), root, counts[root])
		}
	}
	return c.gather(ctx, op, send, recv, blks, bad, root)
}

// gather is Gather (blks nil: equal blocks) and Gatherv; bad is the
// root's refusal of its arguments.
func (c *Comm) gather(ctx context.Context, op string, send, recv []byte, blks [][2]int, bad error, root int) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	if err := c.checkRank(op, root); err != nil {
		return err
	}
	if c.rank != root {
		return c.csend(op, send, root, tagGather)
	}
	if bad != nil {
		for r := range c.size {
			if r != root {
				c.drain(ctx, op, r, tagGather)
			}
		}
		return bad
	}
	block := func(r int) []byte {
		if blks == nil {
			return recv[r*len(send) : (r+1)*len(send)]
		}
		return recv[blks[r][0]:blks[r][1]]
	}
	copy(block(root), send)
	var first error
	for r := range c.size {
		if r == root {
			continue
		}
		// Every block is taken in, even after one was refused.
		if err := c.crecv(ctx, op, block(r), r, tagGather); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Scatter hands block r of root's send (Size blocks of len(recv) bytes)
// to rank r's recv; send is not used elsewhere.
func (c *Comm) Scatter(ctx context.Context, send, recv []byte, root int) error {
	const op = "Scatter"
	var bad error
	if c.rank == root && len(send) != len(recv)*c.size {
		bad = opErr(op, c.rank, ErrLayout, "send has %d bytes, want %d ranks x %d", len(send), c.size, len(recv))
	}
	return c.scatter(ctx, op, send, recv, nil, bad, root)
}

// Scatterv hands counts[r] bytes of root's send at displs[r] (nil displs:
// packed in rank order) to rank r's recv, which must be that long; send,
// counts and displs are used on root only.
func (c *Comm) Scatterv(ctx context.Context, send []byte, counts, displs []int, recv []byte, root int) error {
	const op = "Scatterv"
	var blks [][2]int
	var bad error
	if c.rank == root {
		if blks, bad = c.blocks(op, "send", counts, displs, len(send)); bad == nil && len(recv) != counts[root] {
			bad = opErr(op, c.rank, ErrLayout, "recv has %d bytes, counts[%d] says %d", len(recv), root, counts[root])
		}
	}
	return c.scatter(ctx, op, send, recv, blks, bad, root)
}

// scatter is Scatter (blks nil: equal blocks) and Scatterv; bad is the
// root's refusal of its arguments, after which it sends every rank an
// empty block.
func (c *Comm) scatter(ctx context.Context, op string, send, recv []byte, blks [][2]int, bad error, root int) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	if err := c.checkRank(op, root); err != nil {
		return err
	}
	if c.rank != root {
		return c.crecv(ctx, op, recv, root, tagScatter)
	}
	block := func(r int) []byte {
		switch {
		case bad != nil:
			return nil
		case blks == nil:
			return send[r*len(recv) : (r+1)*len(recv)]
		}
		return send[blks[r][0]:blks[r][1]]
	}
	for d := 1; d < c.size; d++ {
		r := (root + d) % c.size
		if err := c.csend(op, block(r), r, tagScatter); err != nil {
			return err
		}
	}
	if bad != nil {
		return bad
	}
	copy(recv, block(root))
	return nil
}
