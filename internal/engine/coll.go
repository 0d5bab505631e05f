package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/narma-rma/narma/internal/mem"
)

// Collectives run over two-sided messages in the engine's own context, so
// they never match a user's receive. Every send is eager, so none of the
// algorithms below can deadlock on a send; all ranks must call the same
// collectives in the same order, as in MPI.
const (
	tagBarrier   = 1 // + round
	tagBcast     = 100
	tagReduce    = 200
	tagAllgather = 300
	tagRedScat   = 400

	tagAllreduceOut = 250 // Allreduce's result, to the ranks above the power of two
)

func (c *Comm) csend(op string, buf []byte, dest, tag int) error {
	return c.send(op, c.coll, buf, dest, tag)
}

func (c *Comm) crecv(ctx context.Context, op string, buf []byte, src, tag int) error {
	st, err := c.recv(ctx, op, c.coll, buf, src, tag)
	if err != nil {
		if errors.Is(err, ErrTruncate) {
			return opErr(op, c.rank, ErrCollective, "rank %d sent %d bytes, expected %d", src, st.Count, len(buf))
		}
		return err
	}
	if st.Count != len(buf) {
		return opErr(op, c.rank, ErrCollective, "rank %d sent %d bytes, expected %d", src, st.Count, len(buf))
	}
	return nil
}

// Barrier returns when every rank has entered it (dissemination
// algorithm: ceil(log2 n) rounds of one message per rank).
func (c *Comm) Barrier(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr("Barrier", c.stopErr(ctx))
	}
	round := 0
	for k := 1; k < c.size; k <<= 1 {
		if err := c.csend("Barrier", nil, (c.rank+k)%c.size, tagBarrier+round); err != nil {
			return err
		}
		if err := c.crecv(ctx, "Barrier", nil, (c.rank-k+c.size)%c.size, tagBarrier+round); err != nil {
			return err
		}
		round++
	}
	return nil
}

// Bcast copies root's buf into buf on every rank (binomial tree). All ranks
// pass buffers of the same length.
func (c *Comm) Bcast(ctx context.Context, buf []byte, root int) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr("Bcast", c.stopErr(ctx))
	}
	if err := c.checkRank("Bcast", root); err != nil {
		return err
	}
	n := c.size
	vr := (c.rank - root + n) % n
	mask := 1
	for mask < n {
		if vr&mask != 0 {
			if err := c.crecv(ctx, "Bcast", buf, (vr-mask+root)%n, tagBcast); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < n {
			if err := c.csend("Bcast", buf, (vr+mask+root)%n, tagBcast); err != nil {
				return err
			}
		}
	}
	return nil
}

// scratchPool keeps the buffers of the reductions for the next calls: a
// fresh buffer per call costs its zeroing and, with many ranks reducing
// at once, garbage collections (16 goroutine ranks reducing 4 KiB
// allocate about 3 GB/s).
var scratchPool sync.Pool // of *[]byte

// maxScratch is the largest buffer scratchPool keeps.
const maxScratch = 1 << 20

// getScratch returns a buffer of n bytes, not zeroed, from scratchPool
// where it has one large enough.
func getScratch(n int) *[]byte {
	if b, _ := scratchPool.Get().(*[]byte); b != nil {
		if cap(*b) >= n {
			*b = (*b)[:n]
			return b
		}
		scratchPool.Put(b)
	}
	b := make([]byte, n)
	return &b
}

// putScratch gives b back to scratchPool. Only a call that is done with
// b gives it back: one that failed in a receive may have lent it to the
// transport, and drops it.
func putScratch(b *[]byte) {
	if cap(*b) <= maxScratch {
		scratchPool.Put(b)
	}
}

func checkReduceArgs(op string, rank int, t mem.Type, o mem.Op, nbytes int) error {
	if !o.ValidFor(t) || o == mem.NoOp {
		return opErr(op, rank, ErrOp, "%v on %v", o, t)
	}
	if nbytes%t.Size() != 0 {
		return opErr(op, rank, ErrLayout, "%d bytes is not a whole number of %v", nbytes, t)
	}
	return nil
}

// Allreduce combines send from every rank element-wise with o and leaves
// the result in recv on every rank (recursive doubling, in a fixed order,
// so floating-point results are identical everywhere).
func (c *Comm) Allreduce(ctx context.Context, send, recv []byte, t mem.Type, o mem.Op) error {
	if err := checkReduceArgs("Allreduce", c.rank, t, o, len(send)); err != nil {
		return err
	}
	return c.AllreduceWith(ctx, send, recv, applyOp(o, t))
}

// AllreduceWith is Allreduce with a combination of the caller's (MINLOC
// and MAXLOC on pairs).
func (c *Comm) AllreduceWith(ctx context.Context, send, recv []byte, f Combine) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr("Allreduce", c.stopErr(ctx))
	}
	if f.Size <= 0 || len(send)%f.Size != 0 {
		return opErr("Allreduce", c.rank, ErrLayout, "%d bytes is not a whole number of %d-byte elements", len(send), f.Size)
	}
	if len(recv) != len(send) {
		return opErr("Allreduce", c.rank, ErrLayout, "recv has %d bytes, send %d", len(recv), len(send))
	}
	// Recursive doubling over the largest power of two p2 <= n ranks
	// (log2 p2 exchanges, where a reduction to one rank and a broadcast
	// take twice as many steps); each of the n-p2 others first gives its
	// value to a partner below p2 and gets the result from it at the end.
	// Each pair combines the lower ranks' value on the left, so every
	// rank computes the same expression, and floating-point results are
	// identical everywhere.
	n, me := c.size, c.rank
	p2 := 1
	for p2*2 <= n {
		p2 *= 2
	}
	if me >= p2 {
		if err := c.csend("Allreduce", send, me-p2, tagReduce); err != nil {
			return err
		}
		return c.crecv(ctx, "Allreduce", recv, me-p2, tagAllreduceOut)
	}
	accBuf, tmpBuf := getScratch(len(send)), getScratch(len(send))
	acc, tmp := *accBuf, *tmpBuf
	copy(acc, send)
	if me+p2 < n {
		if err := c.crecv(ctx, "Allreduce", tmp, me+p2, tagReduce); err != nil {
			return err
		}
		f.Apply(acc, tmp)
	}
	for k := 1; k < p2; k <<= 1 {
		peer := me ^ k
		if err := c.csend("Allreduce", acc, peer, tagReduce); err != nil {
			return err
		}
		if err := c.crecv(ctx, "Allreduce", tmp, peer, tagReduce); err != nil {
			return err
		}
		if peer > me {
			f.Apply(acc, tmp)
		} else {
			f.Apply(tmp, acc)
			acc, tmp = tmp, acc
		}
	}
	copy(recv, acc)
	putScratch(accBuf)
	putScratch(tmpBuf)
	if me+p2 < n {
		return c.csend("Allreduce", recv, me+p2, tagAllreduceOut)
	}
	return nil
}

// Allgather gathers len(send) bytes from every rank into recv, rank r's
// block at r*len(send).
func (c *Comm) Allgather(ctx context.Context, send, recv []byte) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr("Allgather", c.stopErr(ctx))
	}
	b := len(send)
	if len(recv) != b*c.size {
		return opErr("Allgather", c.rank, ErrLayout, "recv has %d bytes, want %d ranks x %d", len(recv), c.size, b)
	}
	for d := 1; d < c.size; d++ {
		if err := c.csend("Allgather", send, (c.rank+d)%c.size, tagAllgather); err != nil {
			return err
		}
	}
	copy(recv[c.rank*b:], send)
	for d := 1; d < c.size; d++ {
		src := (c.rank - d + c.size) % c.size
		if err := c.crecv(ctx, "Allgather", recv[src*b:(src+1)*b], src, tagAllgather); err != nil {
			return err
		}
	}
	return nil
}

// ReduceScatter combines send (Size blocks of len(recv) bytes) from every
// rank element-wise with o and leaves block r of the result in recv on rank
// r (MPI_Reduce_scatter_block). Each rank sends one message to every other
// rank and combines in rank order.
func (c *Comm) ReduceScatter(ctx context.Context, send, recv []byte, t mem.Type, o mem.Op) error {
	if err := ctx.Err(); err != nil {
		return c.ctxErr("ReduceScatter", c.stopErr(ctx))
	}
	b := len(recv)
	if err := checkReduceArgs("ReduceScatter", c.rank, t, o, b); err != nil {
		return err
	}
	if len(send) != b*c.size {
		return opErr("ReduceScatter", c.rank, ErrLayout, "send has %d bytes, want %d ranks x %d", len(send), c.size, b)
	}
	for d := 1; d < c.size; d++ {
		dst := (c.rank + d) % c.size
		if err := c.csend("ReduceScatter", send[dst*b:(dst+1)*b], dst, tagRedScat); err != nil {
			return err
		}
	}
	tmp := make([]byte, b)
	for src := 0; src < c.size; src++ {
		blk := tmp
		if src == c.rank {
			blk = send[c.rank*b : (c.rank+1)*b]
		} else if err := c.crecv(ctx, "ReduceScatter", tmp, src, tagRedScat); err != nil {
			return err
		}
		if src == 0 {
			copy(recv, blk)
		} else {
			mem.Apply(o, t, recv, blk)
		}
	}
	return nil
}
