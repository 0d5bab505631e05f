package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// Put copies src into the first len(src) elements of dst on PE pe
// (shmem_put). It returns when src may be reused and, more than
// OpenSHMEM asks, when the data is in place at pe. dst must hold len(src) elements (narma.ErrBounds otherwise).
func Put[T narma.Elem](ctx context.Context, w *World, dst Sym[T], src []T, pe int) error {
	if err := put(w, "Put", dst, src, pe); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// PutNBI is the nonblocking Put (shmem_put_nbi): it returns at once, and
// src must not change until Quiet (or BarrierAll) has completed the
// transfer. Transports that defer operations may not start it before.
func PutNBI[T narma.Elem](w *World, dst Sym[T], src []T, pe int) error {
	return put(w, "PutNBI", dst, src, pe)
}

func put[T narma.Elem](w *World, op string, dst Sym[T], src []T, pe int) error {
	if err := w.okPE(op, pe); err != nil {
		return err
	}
	if err := dst.span(w, op, len(src)); err != nil {
		return err
	}
	return viewOf[T](w).win.Put(src, pe, dst.off)
}

// Get copies the first len(dst) elements of src on PE pe into dst
// (shmem_get), and returns when they are there. src must hold len(dst)
// elements (narma.ErrBounds otherwise).
func Get[T narma.Elem](ctx context.Context, w *World, dst []T, src Sym[T], pe int) error {
	if err := get(w, "Get", dst, src, pe); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// GetNBI is the nonblocking Get (shmem_get_nbi): dst is filled once Quiet
// (or BarrierAll) returns, and must not be touched before.
func GetNBI[T narma.Elem](w *World, dst []T, src Sym[T], pe int) error {
	return get(w, "GetNBI", dst, src, pe)
}

func get[T narma.Elem](w *World, op string, dst []T, src Sym[T], pe int) error {
	if err := w.okPE(op, pe); err != nil {
		return err
	}
	if err := src.span(w, op, len(dst)); err != nil {
		return err
	}
	return viewOf[T](w).win.Get(dst, pe, src.off)
}

// P writes v into the element dst on PE pe (shmem_p); dst must be one
// element (At). Like Put, it returns with the value in place.
func P[T narma.Elem](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	if err := w.okPE("P", pe); err != nil {
		return err
	}
	if err := dst.elem(w, "P"); err != nil {
		return err
	}
	vw := viewOf[T](w)
	vw.one[0] = v
	if err := vw.win.Put(vw.one[:], pe, dst.off); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// G returns the value of the element src on PE pe (shmem_g); src must be
// one element (At).
func G[T narma.Elem](ctx context.Context, w *World, src Sym[T], pe int) (T, error) {
	var zero T
	if err := w.okPE("G", pe); err != nil {
		return zero, err
	}
	if err := src.elem(w, "G"); err != nil {
		return zero, err
	}
	vw := viewOf[T](w)
	if err := vw.win.Get(vw.one[:], pe, src.off); err != nil {
		return zero, err
	}
	if err := w.win.Flush(ctx, pe); err != nil {
		return zero, err
	}
	return vw.one[0], nil
}
