package shmem

import (
	"context"
	"math"

	"github.com/narma-rma/narma"
)

// Collectives of OpenSHMEM 1.5: broadcast, the reductions, alltoall(s),
// collect and fcollect, over a team (TeamBroadcast, TeamSumReduce, ...:
// shmem_broadcast(team, ...)) or over all PEs (Broadcast, SumReduce,
// ...: the same over TeamWorld). Every PE of the team calls them in the
// same order with the same lengths, and roots and blocks are numbered by
// team PE; dest and source are symmetric objects, as OpenSHMEM requires,
// and may not overlap unless said. They run as narma collectives on the
// team's communicator (for TeamWorld the World's private duplicate of
// its Comm), so they never match the program's messages or another
// team's collectives, and they order nothing else: a collective is not a
// barrier for puts (use BarrierAll, Team.Barrier or Quiet). Arguments
// that this PE gets wrong are refused before it sends anything; lengths
// that differ between PEs are reported as narma.ErrCollective where they
// are seen.

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

// worldTeam returns TeamWorld for a collective over all PEs.
func (w *World) worldTeam(op string) (*Team, error) {
	if err := w.ok(op); err != nil {
		return nil, err
	}
	return w.world, nil
}

// wrap names op in the error of the narma collective it ran.
func (w *World) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &narma.OpError{Op: "shmem." + op, Rank: w.me, Err: err}
}

// Broadcast copies the first nelems elements of source on PE root into
// dest on every PE, root included: shmem_broadcast over TeamWorld.
func Broadcast[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems, root int) error {
	t, err := w.worldTeam("Broadcast")
	if err != nil {
		return err
	}
	return broadcast(ctx, t, "Broadcast", dest, source, nelems, root)
}

// TeamBroadcast copies the first nelems elements of source on PE root of
// team t into dest on every PE of t, root included:
// shmem_broadcast(team, ...).
func TeamBroadcast[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nelems, root int) error {
	if err := t.ok("TeamBroadcast"); err != nil {
		return err
	}
	return broadcast(ctx, t, "TeamBroadcast", dest, source, nelems, root)
}

func broadcast[T narma.Elem](ctx context.Context, t *Team, op string, dest, source Sym[T], nelems, root int) error {
	w := t.w
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if nelems < 0 {
		return w.opErr(op, narma.ErrInvalid, "%d elements", nelems)
	}
	if root < 0 || root >= len(t.pes) {
		return w.opErr(op, narma.ErrRank, "root %d not in [0,%d), the PEs of the team", root, len(t.pes))
	}
	if err := dest.span(w, op, nelems); err != nil {
		return err
	}
	if err := source.span(w, op, nelems); err != nil {
		return err
	}
	buf := make([]T, nelems)
	if t.me == root {
		copy(buf, source.Local(w))
	}
	if err := narma.Bcast(ctx, t.c, buf, root); err != nil {
		return w.wrap(op, err)
	}
	copy(dest.Local(w), buf)
	return nil
}

// The reductions combine the first nreduce elements of source over the
// PEs of a team (of all PEs for the World forms) element-wise and leave
// the result in dest on every PE of it; dest and source may be the same
// object. The combination runs in a fixed order, so floating-point
// results are the same on every PE.

// SumReduce is shmem_TYPE_sum_reduce over all PEs.
func SumReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("SumReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "SumReduce", dest, source, nreduce, narma.Sum)
}

// TeamSumReduce is shmem_TYPE_sum_reduce(team, ...).
func TeamSumReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamSumReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamSumReduce", dest, source, nreduce, narma.Sum)
}

// ProdReduce is shmem_TYPE_prod_reduce over all PEs.
func ProdReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("ProdReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "ProdReduce", dest, source, nreduce, narma.Prod)
}

// TeamProdReduce is shmem_TYPE_prod_reduce(team, ...).
func TeamProdReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamProdReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamProdReduce", dest, source, nreduce, narma.Prod)
}

// MinReduce is shmem_TYPE_min_reduce over all PEs.
func MinReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("MinReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "MinReduce", dest, source, nreduce, narma.Min)
}

// TeamMinReduce is shmem_TYPE_min_reduce(team, ...).
func TeamMinReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamMinReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamMinReduce", dest, source, nreduce, narma.Min)
}

// MaxReduce is shmem_TYPE_max_reduce over all PEs.
func MaxReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("MaxReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "MaxReduce", dest, source, nreduce, narma.Max)
}

// TeamMaxReduce is shmem_TYPE_max_reduce(team, ...).
func TeamMaxReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamMaxReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamMaxReduce", dest, source, nreduce, narma.Max)
}

// AndReduce is shmem_TYPE_and_reduce over all PEs (integer types: narma.ErrOp
// otherwise).
func AndReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("AndReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "AndReduce", dest, source, nreduce, narma.Band)
}

// TeamAndReduce is shmem_TYPE_and_reduce(team, ...) (integer types: narma.ErrOp
// otherwise).
func TeamAndReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamAndReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamAndReduce", dest, source, nreduce, narma.Band)
}

// OrReduce is shmem_TYPE_or_reduce over all PEs (integer types).
func OrReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("OrReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "OrReduce", dest, source, nreduce, narma.Bor)
}

// TeamOrReduce is shmem_TYPE_or_reduce(team, ...) (integer types).
func TeamOrReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamOrReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamOrReduce", dest, source, nreduce, narma.Bor)
}

// XorReduce is shmem_TYPE_xor_reduce over all PEs (integer types).
func XorReduce[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nreduce int) error {
	t, err := w.worldTeam("XorReduce")
	if err != nil {
		return err
	}
	return reduce(ctx, t, "XorReduce", dest, source, nreduce, narma.Bxor)
}

// TeamXorReduce is shmem_TYPE_xor_reduce(team, ...) (integer types).
func TeamXorReduce[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nreduce int) error {
	if err := t.ok("TeamXorReduce"); err != nil {
		return err
	}
	return reduce(ctx, t, "TeamXorReduce", dest, source, nreduce, narma.Bxor)
}

func reduce[T narma.Elem](ctx context.Context, t *Team, op string, dest, source Sym[T], n int, o narma.Op) error {
	w := t.w
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
	return w.wrap(op, narma.Allreduce(ctx, t.c, source.Local(w)[:n], d, o))
}

// Alltoall sends block j of source (nelems elements at j*nelems) to PE
// j, where it lands in block i of dest for the sending PE i:
// shmem_alltoall over all PEs. dest and source hold NPEs blocks.
func Alltoall[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems int) error {
	t, err := w.worldTeam("Alltoall")
	if err != nil {
		return err
	}
	return alltoalls(ctx, t, "Alltoall", dest, source, 1, 1, nelems)
}

// TeamAlltoall is Alltoall over team t, blocks numbered by team PE:
// shmem_alltoall(team, ...). dest and source hold t.NPEs() blocks.
func TeamAlltoall[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nelems int) error {
	if err := t.ok("TeamAlltoall"); err != nil {
		return err
	}
	return alltoalls(ctx, t, "TeamAlltoall", dest, source, 1, 1, nelems)
}

// Alltoalls is Alltoall with strides: element k of the block for PE j is
// source element sst*(j*nelems+k), and lands at dest element
// dst*(i*nelems+k) on PE j: shmem_alltoalls. Strides are at least 1.
func Alltoalls[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], dst, sst, nelems int) error {
	t, err := w.worldTeam("Alltoalls")
	if err != nil {
		return err
	}
	return alltoalls(ctx, t, "Alltoalls", dest, source, dst, sst, nelems)
}

// TeamAlltoalls is Alltoalls over team t, blocks numbered by team PE:
// shmem_alltoalls(team, ...).
func TeamAlltoalls[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], dst, sst, nelems int) error {
	if err := t.ok("TeamAlltoalls"); err != nil {
		return err
	}
	return alltoalls(ctx, t, "TeamAlltoalls", dest, source, dst, sst, nelems)
}

func alltoalls[T narma.Elem](ctx context.Context, t *Team, op string, dest, source Sym[T], dst, sst, nelems int) error {
	w, n := t.w, len(t.pes)
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if dst < 1 || sst < 1 || nelems < 0 || nelems > math.MaxInt/n {
		return w.opErr(op, narma.ErrInvalid, "strides %d and %d, %d elements", dst, sst, nelems)
	}
	total := n * nelems
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
	if err := narma.Alltoall(ctx, t.c, send, recv); err != nil {
		return w.wrap(op, err)
	}
	d := dest.Local(w)
	for i, v := range recv {
		d[dst*i] = v
	}
	return nil
}

// Fcollect concatenates the first nelems elements of source from every
// PE, in PE order, into dest on every PE: shmem_fcollect over all PEs.
func Fcollect[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems int) error {
	t, err := w.worldTeam("Fcollect")
	if err != nil {
		return err
	}
	return fcollect(ctx, t, "Fcollect", dest, source, nelems)
}

// TeamFcollect is Fcollect over team t, in team PE order:
// shmem_fcollect(team, ...).
func TeamFcollect[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nelems int) error {
	if err := t.ok("TeamFcollect"); err != nil {
		return err
	}
	return fcollect(ctx, t, "TeamFcollect", dest, source, nelems)
}

func fcollect[T narma.Elem](ctx context.Context, t *Team, op string, dest, source Sym[T], nelems int) error {
	w, n := t.w, len(t.pes)
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	if nelems < 0 || nelems > math.MaxInt/n {
		return w.opErr(op, narma.ErrInvalid, "%d elements", nelems)
	}
	if err := source.span(w, op, nelems); err != nil {
		return err
	}
	if err := dest.span(w, op, n*nelems); err != nil {
		return err
	}
	all := make([]T, n*nelems)
	if err := narma.Allgather(ctx, t.c, source.Local(w)[:nelems], all); err != nil {
		return w.wrap(op, err)
	}
	copy(dest.Local(w), all)
	return nil
}

// Collect concatenates the first nelems elements of source from every
// PE, in PE order, into dest on every PE, where nelems may differ
// between PEs: shmem_collect over all PEs. dest must hold the sum of
// them.
func Collect[T narma.Elem](ctx context.Context, w *World, dest, source Sym[T], nelems int) error {
	t, err := w.worldTeam("Collect")
	if err != nil {
		return err
	}
	return collect(ctx, t, "Collect", dest, source, nelems)
}

// TeamCollect is Collect over team t, in team PE order:
// shmem_collect(team, ...).
func TeamCollect[T narma.Elem](ctx context.Context, t *Team, dest, source Sym[T], nelems int) error {
	if err := t.ok("TeamCollect"); err != nil {
		return err
	}
	return collect(ctx, t, "TeamCollect", dest, source, nelems)
}

func collect[T narma.Elem](ctx context.Context, t *Team, op string, dest, source Sym[T], nelems int) error {
	w, n := t.w, len(t.pes)
	if err := collArgs(w, op, dest, source); err != nil {
		return err
	}
	local := int64(nelems)
	if nelems < 0 || source.span(w, op, nelems) != nil {
		local = -1 // every PE must still learn the lengths
	}
	counts := make([]int64, n)
	if err := narma.Allgather(ctx, t.c, []int64{local}, counts); err != nil {
		return w.wrap(op, err)
	}
	total := 0
	rcounts, rdispls := make([]int, n), make([]int, n)
	for pe, c := range counts {
		if c < 0 {
			if pe == t.me {
				if nelems < 0 {
					return w.opErr(op, narma.ErrInvalid, "%d elements", nelems)
				}
				return source.span(w, op, nelems)
			}
			return w.opErr(op, narma.ErrCollective, "PE %d of the team refused its arguments", pe)
		}
		rcounts[pe], rdispls[pe] = int(c), total
		total += int(c)
	}
	if err := dest.span(w, op, total); err != nil {
		// The others go on: this PE takes its blocks and drops them.
		_ = narma.Alltoallv(ctx, t.c, source.Local(w)[:nelems], repeat(nelems, n), make([]int, n), make([]T, total), rcounts, rdispls)
		return err
	}
	if err := narma.Alltoallv(ctx, t.c, source.Local(w)[:nelems], repeat(nelems, n), make([]int, n), dest.Local(w)[:total], rcounts, rdispls); err != nil {
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
