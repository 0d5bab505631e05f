package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// Put copies src into the first len(src) elements of dst on PE pe
// (shmem_put). It returns when src may be reused and, more than
// OpenSHMEM asks, when the data is in place at pe. dst must hold len(src) elements (narma.ErrBounds otherwise).
func Put[T narma.Elem](ctx context.Context, w *World, dst Sym[T], src []T, pe int) error {
	if err := w.okPE("Put", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := putIn(w, &w.own, "Put", dst, src, pe); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// PutNBI is the nonblocking Put (shmem_put_nbi): it returns at once, and
// src must not change until Quiet (or BarrierAll) has completed the
// transfer. Transports that defer operations may not start it before.
func PutNBI[T narma.Elem](w *World, dst Sym[T], src []T, pe int) error {
	if err := w.okPE("PutNBI", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return putIn(w, &w.own, "PutNBI", dst, src, pe)
}

// putIn is PutNBI to World PE pe, with the views and spans of cache c;
// w.mu is held.
func putIn[T narma.Elem](w *World, c *cache, op string, dst Sym[T], src []T, pe int) error {
	if err := dst.spanIn(w, c, op, len(src)); err != nil {
		return err
	}
	return viewIn[T](w, c).win.Put(src, pe, dst.off)
}

// Get copies the first len(dst) elements of src on PE pe into dst
// (shmem_get), and returns when they are there. src must hold len(dst)
// elements (narma.ErrBounds otherwise).
func Get[T narma.Elem](ctx context.Context, w *World, dst []T, src Sym[T], pe int) error {
	if err := w.okPE("Get", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := getIn(w, &w.own, "Get", dst, src, pe); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// GetNBI is the nonblocking Get (shmem_get_nbi): dst is filled once Quiet
// (or BarrierAll) returns, and must not be touched before.
func GetNBI[T narma.Elem](w *World, dst []T, src Sym[T], pe int) error {
	if err := w.okPE("GetNBI", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return getIn(w, &w.own, "GetNBI", dst, src, pe)
}

// getIn is GetNBI from World PE pe, as putIn.
func getIn[T narma.Elem](w *World, c *cache, op string, dst []T, src Sym[T], pe int) error {
	if err := src.spanIn(w, c, op, len(dst)); err != nil {
		return err
	}
	return viewIn[T](w, c).win.Get(dst, pe, src.off)
}

// P writes v into the element dst on PE pe (shmem_p); dst must be one
// element (At). Like Put, it returns with the value in place.
func P[T narma.Elem](ctx context.Context, w *World, dst Sym[T], v T, pe int) error {
	if err := w.okPE("P", pe); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return pIn(ctx, w, &w.own, "P", dst, v, pe)
}

// pIn is P to World PE pe, as putIn.
func pIn[T narma.Elem](ctx context.Context, w *World, c *cache, op string, dst Sym[T], v T, pe int) error {
	if err := dst.elemIn(w, c, op); err != nil {
		return err
	}
	vw := viewIn[T](w, c)
	vw.one[0] = v
	if err := vw.win.Put(vw.one[:], pe, dst.off); err != nil {
		return err
	}
	return w.win.Flush(ctx, pe)
}

// G returns the value of the element src on PE pe (shmem_g); src must be
// one element (At).
func G[T narma.Elem](ctx context.Context, w *World, src Sym[T], pe int) (T, error) {
	if err := w.okPE("G", pe); err != nil {
		var zero T
		return zero, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return gIn(ctx, w, &w.own, "G", src, pe)
}

// gIn is G from World PE pe, as putIn.
func gIn[T narma.Elem](ctx context.Context, w *World, c *cache, op string, src Sym[T], pe int) (T, error) {
	var zero T
	if err := src.elemIn(w, c, op); err != nil {
		return zero, err
	}
	vw := viewIn[T](w, c)
	if err := vw.win.Get(vw.one[:], pe, src.off); err != nil {
		return zero, err
	}
	if err := w.win.Flush(ctx, pe); err != nil {
		return zero, err
	}
	return vw.one[0], nil
}
