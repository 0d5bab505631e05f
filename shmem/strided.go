package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// IPut copies nelems elements of src, every sst-th one from src[0], into
// every dst-th element of dest on PE pe from dest's first:
// shmem_iput(dest, source, dst, sst, nelems, pe). It returns with the
// elements in place, as Put does. Strides are at least 1.
func IPut[T narma.Elem](ctx context.Context, w *World, dest Sym[T], src []T, dst, sst, nelems, pe int) error {
	const op = "IPut"
	if err := w.okPE(op, pe); err != nil {
		return err
	}
	if err := stridedArgs(w, op, dest, len(src), dst, sst, nelems); err != nil {
		return err
	}
	if nelems == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	vw := viewOf[T](w)
	if err := vw.win.PutStrided(src, narma.Vector(nelems, 1, sst), pe, dest.off, narma.Vector(nelems, 1, dst)); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// IGet copies nelems elements of source on PE pe, every sst-th one from
// its first, into every dst-th element of dest from dest[0]:
// shmem_iget(dest, source, dst, sst, nelems, pe). It returns with dest
// filled.
func IGet[T narma.Elem](ctx context.Context, w *World, dest []T, source Sym[T], dst, sst, nelems, pe int) error {
	const op = "IGet"
	if err := w.okPE(op, pe); err != nil {
		return err
	}
	if err := stridedArgs(w, op, source, len(dest), sst, dst, nelems); err != nil {
		return err
	}
	if nelems == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	vw := viewOf[T](w)
	if err := vw.win.GetStrided(dest, narma.Vector(nelems, 1, dst), pe, source.off, narma.Vector(nelems, 1, sst)); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// stridedArgs checks a strided transfer of nelems elements between the
// symmetric object sym, stride symStride, and a local slice of length
// n, stride localStride.
func stridedArgs[T narma.Elem](w *World, op string, sym Sym[T], n, symStride, localStride, nelems int) error {
	if err := w.ok(op); err != nil {
		return err
	}
	if err := sym.check(w, op); err != nil {
		return err
	}
	if symStride < 1 || localStride < 1 || nelems < 0 {
		return w.opErr(op, narma.ErrInvalid, "strides %d and %d, %d elements", symStride, localStride, nelems)
	}
	if nelems == 0 {
		return nil
	}
	if err := stridedSpan(w, op, sym, symStride, nelems); err != nil {
		return err
	}
	if n == 0 || nelems-1 > (n-1)/localStride {
		return w.opErr(op, narma.ErrBounds, "%d elements at stride %d do not fit a local slice of %d", nelems, localStride, n)
	}
	return nil
}
