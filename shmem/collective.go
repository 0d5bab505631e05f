package shmem

import (
	"context"
	"math"

	"github.com/narma-rma/narma"
)

// Collectives of OpenSHMEM 1.5 over all PEs (SHMEM_TEAM_WORLD):
// broadcast, the reductions, alltoall(s), collect and fcollect. Every PE
// calls them in the same order with the same lengths; dest and source are
// symmetric objects, as OpenSHMEM requires, and may not overlap unless
// said. They run as narma collectives on the World's private duplicate
// of its Comm, so they never match the program's messages, and they
// order nothing else: a collective is not a barrier for puts (use
// BarrierAll or Quiet). Arguments that this PE gets wrong are refused
// before it sends anything; lengths that differ between PEs are reported
// as narma.ErrCollective where they are seen.

// collArgs checks the World and every symmetric object of a collective.
func collArgs[T narma.Elem](w *World, op string, syms ...Sym[T]) error {
	if err := w.ok(op); err != nil {
		return err
	}
	for _, s := range syms {
		if err := s.check(w, op); err != nil {
			return err
		}
	}
	return nil
}

// wrap names op in the error of the narma collective it ran.
func (w *World) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &narma.OpError{Op: "shmem." + op, Rank: w.me, Err: err}
}

// Broadcast copies the first nelems elements of source on PE root into
// dest on every PE, root included: shmem_broadcast.
func Broadcast[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems, root int) error {
	const op = "Broadcast"
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if nelems < 0 {
		return w.opErr(op, narma.ErrInvalid, "%d elements", nelems)
	}
	if err := dest.span(w, op, nelems); err != nil {
		return err
	}
	if err := source.span(w, op, nelems); err != nil {
		return err
	}
	buf := make([]T, nelems)
	if w.me == root {
		copy(buf, source.Local(w))
	}
	if err := narma.Bcast(ctx, w.priv, buf, root); err != nil {
		return w.wrap(op, err)
	}
	copy(dest.Local(w), buf)
	return nil
}

// The reductions combine the first nreduce elements of source over all
// PEs element-wise and leave the result in dest on every PE; dest and
// source may be the same object. The combination runs in a fixed order,
// so floating-point results are the same on every PE.

// SumReduce is shmem_TYPE_sum_reduce.
func SumReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "SumReduce", dest, source, nreduce, narma.Sum)
}

// ProdReduce is shmem_TYPE_prod_reduce.
func ProdReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "ProdReduce", dest, source, nreduce, narma.Prod)
}

// MinReduce is shmem_TYPE_min_reduce.
func MinReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "MinReduce", dest, source, nreduce, narma.Min)
}

// MaxReduce is shmem_TYPE_max_reduce.
func MaxReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "MaxReduce", dest, source, nreduce, narma.Max)
}

// AndReduce is shmem_TYPE_and_reduce (integer types: narma.ErrOp
// otherwise).
func AndReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "AndReduce", dest, source, nreduce, narma.Band)
}

// OrReduce is shmem_TYPE_or_reduce (integer types).
func OrReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "OrReduce", dest, source, nreduce, narma.Bor)
}

// XorReduce is shmem_TYPE_xor_reduce (integer types).
func XorReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	return reduce(ctx, w, "XorReduce", dest, source, nreduce, narma.Bxor)
}

func reduce[T narma.Elem](ctx context.Context, w *World, op string, dest, source Sym[T], n int, o narma.Op) error {
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if n < 0 {
		return w.opErr(op, narma.ErrInvalid, "%d elements", n)
	}
	if err := dest.span(w, op, n); err != nil {
		return err
	}
	if err := source.span(w, op, n); err != nil {
		return err
	}
	d := dest.Local(w)[:n]
	return w.wrap(op, narma.Allreduce(ctx, w.priv, source.Local(w)[:n], d, o))
}

// Alltoall sends block j of source (nelems elements at j*nelems) to PE
// j, where it lands in block i of dest for the sending PE i:
// shmem_alltoall. dest and source hold NPEs blocks.
func Alltoall[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems int) error {
	return Alltoalls(ctx, w, dest, source, 1, 1, nelems)
}

// Alltoalls is Alltoall with strides: element k of the block for PE j is
// source element sst*(j*nelems+k), and lands at dest element
// dst*(i*nelems+k) on PE j: shmem_alltoalls. Strides are at least 1.
func Alltoalls[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], dst, sst, nelems int) error {
	const op = "Alltoalls"
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if dst < 1 || sst < 1 || nelems < 0 || nelems > math.MaxInt/w.n {
		return w.opErr(op, narma.ErrInvalid, "strides %d and %d, %d elements", dst, sst, nelems)
	}
	total := w.n * nelems
	if total > 0 {
		if err := stridedSpan(w, op, dest, dst, total); err != nil {
			return err
		}
		if err := stridedSpan(w, op, source, sst, total); err != nil {
			return err
		}
	}
	src := source.Local(w)
	send := make([]T, total)
	for i := range send {
		send[i] = src[sst*i]
	}
	recv := make([]T, total)
	if err := narma.Alltoall(ctx, w.priv, send, recv); err != nil {
		return w.wrap(op, err)
	}
	d := dest.Local(w)
	for i, v := range recv {
		d[dst*i] = v
	}
	return nil
}

// Fcollect concatenates the first nelems elements of source from every
// PE, in PE order, into dest on every PE: shmem_fcollect.
func Fcollect[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems int) error {
	const op = "Fcollect"
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if nelems < 0 || nelems > math.MaxInt/w.n {
		return w.opErr(op, narma.ErrInvalid, "%d elements", nelems)
	}
	if err := source.span(w, op, nelems); err != nil {
		return err
	}
	if err := dest.span(w, op, w.n*nelems); err != nil {
		return err
	}
	all := make([]T, w.n*nelems)
	if err := narma.Allgather(ctx, w.priv, source.Local(w)[:nelems], all); err != nil {
		return w.wrap(op, err)
	}
	copy(dest.Local(w), all)
	return nil
}

// Collect concatenates the first nelems elements of source from every
// PE, in PE order, into dest on every PE, where nelems may differ
// between PEs: shmem_collect. dest must hold the sum of them.
func Collect[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems int) error {
	const op = "Collect"
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	local := int64(nelems)
	if nelems < 0 || source.span(w, op, nelems) != nil {
		local = -1 // every PE must still learn the lengths
	}
	counts := make([]int64, w.n)
	if err := narma.Allgather(ctx, w.priv, []int64{local}, counts); err != nil {
		return w.wrap(op, err)
	}
	total := 0
	rcounts, rdispls := make([]int, w.n), make([]int, w.n)
	for pe, c := range counts {
		if c < 0 {
			if pe == w.me {
				if nelems < 0 {
					return w.opErr(op, narma.ErrInvalid, "%d elements", nelems)
				}
				return source.span(w, op, nelems)
			}
			return w.opErr(op, narma.ErrCollective, "PE %d refused its arguments", pe)
		}
		rcounts[pe], rdispls[pe] = int(c), total
		total += int(c)
	}
	if err := dest.span(w, op, total); err != nil {
		// The others go on: this PE takes its blocks and drops them.
		_ = narma.Alltoallv(ctx, w.priv, source.Local(w)[:nelems], repeat(nelems, w.n), make([]int, w.n), make([]T, total), rcounts, rdispls)
		return err
	}
	if err := narma.Alltoallv(ctx, w.priv, source.Local(w)[:nelems], repeat(nelems, w.n), make([]int, w.n), dest.Local(w)[:total], rcounts, rdispls); err != nil {
		return w.wrap(op, err)
	}
	return nil
}

// stridedSpan checks that n elements at stride lie in s (n > 0),
// without overflow.
func stridedSpan[T narma.Elem](w *World, op string, s Sym[T], stride, n int) error {
	if n-1 > (s.Len()-1)/stride || s.Len() == 0 {
		return w.opErr(op, narma.ErrBounds, "%d elements at stride %d in %v", n, stride, s)
	}
	return nil
}

// repeat returns n copies of v.
func repeat(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}
