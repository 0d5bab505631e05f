package coarray

import (
	"context"

	"github.com/narma-rma/narma"
)

// Collective subroutines: Fortran 2018's CO_SUM, CO_MIN, CO_MAX,
// CO_REDUCE and CO_BROADCAST. Every image calls them in the same order
// with slices of the same length (a mismatch is an error of the program,
// reported where it is seen, as narma's collectives report it). They run
// over the images of the current team, numbered in the team, on the
// package's private communicator of the team (a duplicate of the Comm in
// the initial team), so they never match a message of the program, and
// they do not synchronize memory: they are not image control statements.

// CollectiveOption configures a collective subroutine.
type CollectiveOption func(*collConfig)

type collConfig struct {
	resultImage int
	toOne       bool // resultImage was given
}

// ResultImage leaves the result on image only, Fortran's RESULT_IMAGE
// argument (ResultImage(i) is RESULT_IMAGE=i+1). The other images' slices
// are left as they were, where Fortran makes them undefined.
func ResultImage(image int) CollectiveOption {
	return func(c *collConfig) { c.resultImage, c.toOne = image, true }
}

// collective applies opts and checks im and the result image.
func (im *Images) collective(op string, opts []CollectiveOption) (collConfig, error) {
	var cfg collConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := im.check(op); err != nil {
		return cfg, err
	}
	if cfg.toOne {
		if err := im.checkImage(op, cfg.resultImage); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// wrap names op in an error of the narma collective it ran.
func (im *Images) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &narma.OpError{Op: op, Rank: im.c.Rank(), Err: err}
}

// CoSum replaces a, on every image, with the element-wise sum of a over
// all images: Fortran's CALL CO_SUM(A). The sum runs in a fixed order, so
// every image gets the same floating-point result.
func CoSum[T narma.Elem](ctx context.Context, im *Images, a []T, opts ...CollectiveOption) error {
	return coOp(ctx, im, "coarray.CoSum", a, narma.Sum, opts)
}

// CoMin replaces a with the element-wise minimum over all images:
// Fortran's CALL CO_MIN(A).
func CoMin[T narma.Elem](ctx context.Context, im *Images, a []T, opts ...CollectiveOption) error {
	return coOp(ctx, im, "coarray.CoMin", a, narma.Min, opts)
}

// CoMax replaces a with the element-wise maximum over all images:
// Fortran's CALL CO_MAX(A).
func CoMax[T narma.Elem](ctx context.Context, im *Images, a []T, opts ...CollectiveOption) error {
	return coOp(ctx, im, "coarray.CoMax", a, narma.Max, opts)
}

func coOp[T narma.Elem](ctx context.Context, im *Images, op string, a []T, o narma.Op, opts []CollectiveOption) error {
	cfg, err := im.collective(op, opts)
	if err != nil {
		return err
	}
	if !cfg.toOne {
		return im.wrap(op, narma.Allreduce(ctx, im.team.comm, a, a, o))
	}
	var recv []T
	if im.ThisImage() == cfg.resultImage {
		recv = a
	}
	return im.wrap(op, narma.Reduce(ctx, im.team.comm, a, recv, o, cfg.resultImage))
}

// CoBroadcast copies a from image source to a on every image: Fortran's
// CALL CO_BROADCAST(A, SOURCE_IMAGE=source+1).
func CoBroadcast[T narma.Elem](ctx context.Context, im *Images, a []T, source int) error {
	const op = "coarray.CoBroadcast"
	if err := im.check(op); err != nil {
		return err
	}
	return im.wrap(op, narma.Bcast(ctx, im.team.comm, a, source))
}

// CoReduce replaces a with the element-wise reduction of a over all
// images by f: Fortran's CALL CO_REDUCE(A, OPERATION). f must be
// associative; it is applied in image order, f(f(a0, a1), a2) and so on,
// the same on every image. f runs on the image that reduces, and must not
// call collectives.
func CoReduce[T narma.Elem](ctx context.Context, im *Images, a []T, f func(x, y T) T, opts ...CollectiveOption) error {
	const op = "coarray.CoReduce"
	cfg, err := im.collective(op, opts)
	if err != nil {
		return err
	}
	if f == nil {
		// Every image must learn that, or the others would wait: the
		// gather still runs, and only then is the error returned.
		err = nilError(op, "operation")
	}
	n, me := im.NumImages(), im.ThisImage()
	var all []T
	if !cfg.toOne || me == cfg.resultImage {
		all = make([]T, n*len(a))
	}
	var gerr error
	if !cfg.toOne {
		gerr = narma.Allgather(ctx, im.team.comm, a, all)
	} else {
		gerr = narma.Gather(ctx, im.team.comm, a, all, cfg.resultImage)
	}
	if gerr != nil {
		return im.wrap(op, gerr)
	}
	if err != nil || all == nil {
		return err
	}
	for i := range a {
		v := all[i]
		for r := 1; r < n; r++ {
			v = f(v, all[r*len(a)+i])
		}
		a[i] = v
	}
	return nil
}
