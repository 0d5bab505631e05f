package coarray

import (
	"context"
	"math"
	"reflect"

	"github.com/narma-rma/narma"
)

// Array is a coarray: a block of Len() elements of T on every image, at
// the same place of every image's symmetric heap. Local is this image's
// block; Put and Get reach any image's block by image number and element
// offset. New makes one.
//
// The element type is fixed by the type parameter: a put or get of the
// wrong type does not compile, so there is no type check at run time.
type Array[T narma.Elem] struct {
	obj   *object
	w     *narma.Win[T] // view of the heap's window; displacements in bytes
	local []T
	sel   selector // the team whose image numbers Put and Get take (In)
}

// object is the part of an Array that does not depend on its element
// type: where its blocks lie and which events are attached to them.
type object struct {
	im       *Images
	off      int      // byte offset of the block in every image's heap
	n        int      // elements per image
	esz      int      // bytes per element
	attached []*Event // sorted by lo, disjoint ranges
	freed    bool
}

// New allocates an array of n elements of T on every image, collectively
// (Fortran's ALLOCATE(a(n)[*])): every image passes the same n and T. The
// blocks start zeroed, and no image can write into another's block before
// that image has zeroed it.
func New[T narma.Elem](ctx context.Context, im *Images, n int) (*Array[T], error) {
	const op = "coarray.New"
	if im == nil {
		return nil, im.check(op)
	}
	esz := narma.SizeOf[T]()
	local := im.check(op)
	if local == nil && (n < 0 || n > math.MaxInt/esz) {
		local = im.errorf(op, narma.ErrInvalid, "length %d", n)
	}
	kind := int64(reflect.TypeFor[T]().Kind())
	if err := im.agree(ctx, opNew, op, local, int64(n), kind); err != nil {
		return nil, err
	}
	// Never allocate zero bytes: the heap would give two empty objects
	// the same offset.
	off, err := im.h.Alloc(ctx, max(n*esz, 1), 8)
	if err != nil {
		return nil, im.errorf(op, err, "%d elements of %d bytes", n, esz)
	}
	w := narma.As[T](im.w)
	return &Array[T]{
		obj:   &object{im: im, off: off, n: n, esz: esz},
		w:     w,
		local: w.Local()[off/esz : off/esz+n : off/esz+n],
	}, nil
}

// Len returns the number of elements of each image's block.
func (a *Array[T]) Len() int {
	if a == nil || a.obj == nil {
		return 0
	}
	return a.obj.n
}

// Local returns this image's block: a(i) in Fortran is a.Local()[i]. Its
// elements may be read and written directly, within Fortran's segment
// rules (see the package documentation): not while another image may be
// putting into or getting from them. It is nil once the array is freed.
func (a *Array[T]) Local() []T {
	if a == nil || a.obj == nil || a.obj.freed || a.obj.im == nil || a.obj.im.done {
		return nil
	}
	return a.local
}

// PutOption modifies a Put.
type PutOption func(*putOptions)

type putOptions struct {
	notify bool
	nv     *Notify
}

// WithNotify makes a Put a notified put (Fortran 2023's
// a(lo:hi)[image, NOTIFY=nv] = src): once the data is in place at the
// target image, nv is incremented there, in the same operation, without a
// separate message. The target learns of it with nv.Wait. A put with
// WithNotify may not write into a range to which an event is attached: it
// would need two notices (see Attach).
func WithNotify(nv *Notify) PutOption {
	return func(o *putOptions) { o.notify, o.nv = true, nv }
}

// Put writes src into image's block starting at element offset: Fortran's
// a(offset+1 : offset+len(src))[image+1] = src. src may be changed as soon
// as Put returns (Put waits for local completion, as an assignment does),
// but the data is guaranteed to be in place at the target only after this
// image's next SyncAll, SyncImages, SyncMemory or Event.Post, or, for a
// notified put, once the target's Wait for the notice returns.
//
// If events are attached to image's block, the part of the put inside each
// attached range carries a notice of that event: the event is posted once
// per put that writes any element of its range, after those elements are
// in place. WithNotify makes the whole put notify a notify variable.
//
// Image is a number in the current team (inside ChangeTeam, the image of
// the team; see In for other teams). An image outside [0, NumImages()) is
// refused with narma.ErrRank, a range outside the block with
// narma.ErrBounds, a freed array with narma.ErrFreed and WithNotify into
// an attached range with ErrAttached; a refused put writes nothing. A put
// of no elements writes nothing; with WithNotify it still increments the
// notify variable.
func (a *Array[T]) Put(image, offset int, src []T, opts ...PutOption) error {
	const op = "coarray.Put"
	target, err := a.check(op, image, offset, len(src))
	if err != nil {
		return err
	}
	var o putOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	im := a.obj.im
	if o.notify {
		if err := o.nv.checkFor(op, im); err != nil {
			return err
		}
		if e := a.obj.overlap(offset, offset+len(src)); e != nil {
			return im.errorf(op, ErrAttached, "WithNotify into elements [%d, %d), which overlap the range [%d, %d) an event is attached to: the put would need two notices", offset, offset+len(src), e.lo, e.hi)
		}
		if err := a.w.PutNotify(src, target, a.disp(offset), narma.Counter(o.nv.c.idx)); err != nil {
			return err
		}
	} else if err := a.put(target, offset, src); err != nil {
		return err
	}
	return a.w.Flush(im.c.Context(), target)
}

// put issues a put to initial image image without a notify variable:
// plain where no event is attached, notified by the attached event inside
// each attached range.
func (a *Array[T]) put(image, offset int, src []T) error {
	pos, end := offset, offset+len(src)
	for _, e := range a.obj.attached {
		lo, hi := max(e.lo, offset), min(e.hi, end)
		if lo >= hi {
			continue
		}
		if pos < lo {
			if err := a.w.Put(src[pos-offset:lo-offset], image, a.disp(pos)); err != nil {
				return err
			}
		}
		if err := a.w.PutNotify(src[lo-offset:hi-offset], image, a.disp(lo), narma.Counter(e.c.idx)); err != nil {
			return err
		}
		pos = hi
	}
	if pos < end {
		return a.w.Put(src[pos-offset:], image, a.disp(pos))
	}
	return nil
}

// Get reads len(dst) elements of image's block starting at element offset
// into dst: Fortran's dst = a(offset+1 : offset+len(dst))[image+1]. Unlike
// a plain RMA get, dst is filled when Get returns. The data is what image
// holds when the get reaches it: to read what another image put there,
// synchronize with that image first. Errors are as Put's.
func (a *Array[T]) Get(image, offset int, dst []T) error {
	const op = "coarray.Get"
	target, err := a.check(op, image, offset, len(dst))
	if err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	if err := a.w.Get(dst, target, a.disp(offset)); err != nil {
		return err
	}
	return a.w.Flush(a.obj.im.c.Context(), target)
}

// Free releases the array on every image, collectively (Fortran's
// DEALLOCATE, which synchronizes all images): every image's puts are
// completed first, and events attached to the array are detached. The
// array is unusable afterwards (narma.ErrFreed).
func (a *Array[T]) Free(ctx context.Context) error {
	const op = "coarray.Array.Free"
	if a == nil || a.obj == nil || a.obj.im == nil {
		return nilError(op, "Array")
	}
	im := a.obj.im
	local := a.obj.check(op)
	if local == nil {
		local = im.heapCall(op)
	}
	if local == nil {
		local = im.w.FlushAll(ctx)
	}
	if err := im.agree(ctx, opFreeArray, op, local, int64(a.obj.off)); err != nil {
		return err
	}
	for _, e := range a.obj.attached {
		e.on = nil
	}
	a.obj.attached = nil
	a.obj.freed = true
	a.local = nil
	if err := im.h.Free(ctx, a.obj.off, max(a.obj.n*a.obj.esz, 1)); err != nil {
		return im.errorf(op, err, "block at %d", a.obj.off)
	}
	return nil
}

// check checks the arguments of a put or get of n elements and returns
// the initial image that image is: the rank of the heap's window.
func (a *Array[T]) check(op string, image, offset, n int) (int, error) {
	if a == nil || a.obj == nil {
		return 0, nilError(op, "Array")
	}
	if err := a.obj.check(op); err != nil {
		return 0, err
	}
	im := a.obj.im
	target, err := im.target(op, a.sel, image)
	if err != nil {
		return 0, err
	}
	if offset < 0 || offset > a.obj.n || n > a.obj.n-offset {
		return 0, im.errorf(op, narma.ErrBounds, "%d elements at offset %d outside the block of %d", n, offset, a.obj.n)
	}
	return target, nil
}

// disp returns the heap displacement (bytes) of element i of a block.
func (a *Array[T]) disp(i int) int { return a.obj.off + i*a.obj.esz }

// check reports whether the array may be used.
func (o *object) check(op string) error {
	if err := o.im.check(op); err != nil {
		return err
	}
	if o.freed {
		return o.im.errorf(op, narma.ErrFreed, "array freed")
	}
	return nil
}

// overlap returns an event attached to a range that overlaps [lo, hi),
// or nil.
func (o *object) overlap(lo, hi int) *Event {
	if lo >= hi {
		return nil
	}
	for _, e := range o.attached {
		if e.lo < hi && lo < e.hi {
			return e
		}
	}
	return nil
}
