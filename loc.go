package narma

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
)

// MinLoc and MaxLoc reduce pairs of a value and an index (Loc), as MPI's
// MPI_MINLOC and MPI_MAXLOC do on its pair types (MPI_DOUBLE_INT and the
// like): the least (greatest) value, and with it the least index among the
// pairs that hold that value. They are operations of ReduceLoc and
// AllreduceLoc only; the other reductions and the accumulate family refuse
// them with ErrOp.
const (
	MinLoc Op = 0xF0 + iota
	MaxLoc
)

// Loc is a value and the index of where it is, the element of MinLoc and
// MaxLoc reductions: typically a rank, or a position in the caller's
// data.
type Loc[T Elem] struct {
	Value T
	Index int
}

// ReduceLoc combines send element-wise across ranks with MinLoc or MaxLoc
// and stores the result in recv on rank root, as Reduce does; recv is not
// used on the other ranks and may be nil there.
func ReduceLoc[T Elem](ctx context.Context, c *Comm, send, recv []Loc[T], op Op, root int) error {
	f, err := locCombine[T]("ReduceLoc", c, op)
	if err != nil {
		return err
	}
	return c.e.ReduceWith(ctx, mem.Bytes(send), mem.Bytes(recv), f, root)
}

// AllreduceLoc combines send element-wise across ranks with MinLoc or
// MaxLoc and stores the result in recv on every rank, as Allreduce does.
func AllreduceLoc[T Elem](ctx context.Context, c *Comm, send, recv []Loc[T], op Op) error {
	f, err := locCombine[T]("AllreduceLoc", c, op)
	if err != nil {
		return err
	}
	return c.e.AllreduceWith(ctx, mem.Bytes(send), mem.Bytes(recv), f)
}

// locCombine returns the engine's combination of op on Loc[T], or an
// error if op is not MinLoc or MaxLoc.
func locCombine[T Elem](name string, c *Comm, op Op) (engine.Combine, error) {
	var better func(a, b T) bool
	switch op {
	case MinLoc:
		better = func(a, b T) bool { return a < b }
	case MaxLoc:
		better = func(a, b T) bool { return a > b }
	default:
		return engine.Combine{}, &OpError{Op: name, Rank: c.Rank(), Detail: fmt.Sprintf("%v (MinLoc or MaxLoc only)", op), Err: ErrOp}
	}
	size := mem.SizeOf[Loc[T]]()
	return engine.Combine{Size: size, Apply: func(dst, src []byte) {
		// The engine's buffers are bytes of unknown alignment: combine
		// on copies.
		n := len(dst) / size
		d, s := make([]Loc[T], n), make([]Loc[T], n)
		copy(mem.Bytes(d), dst)
		copy(mem.Bytes(s), src)
		for i := range d {
			if better(s[i].Value, d[i].Value) || (s[i].Value == d[i].Value && s[i].Index < d[i].Index) {
				d[i] = s[i]
			}
		}
		copy(dst, mem.Bytes(d))
	}}, nil
}
