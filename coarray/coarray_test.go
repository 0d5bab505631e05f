package coarray

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
)

// TestMain lets the test binary serve as the rank processes of
// runImages's process jobs (ranktest.Main).
func TestMain(m *testing.M) { ranktest.Main(m) }

// runImages runs fn on n images with a small heap, and finalizes them.
// The job runs twice (ranktest.Run): with the images as goroutines, then
// as processes.
func runImages(t *testing.T, n int, fn func(ctx context.Context, im *Images) error) {
	t.Helper()
	runComm(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := Init(ctx, c, WithHeapSize(1<<16))
		if err != nil {
			return err
		}
		if err := fn(ctx, im); err != nil {
			return err
		}
		return im.Finalize(ctx)
	})
}

// runComm is runImages for tests that make their Images themselves: fn
// gets the image's Comm.
func runComm(t *testing.T, n int, fn func(c *narma.Comm) error) {
	t.Helper()
	ranktest.Run(t, n, fn)
}

// wantErr checks that err wraps target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one wrapping %v", what, err, target)
	}
}

func TestImagesAreZeroBased(t *testing.T) {
	// seen counts the images of the goroutine run (rank processes do not
	// share it); the checks inside the job hold in both runs.
	seen := make([]int, 3)
	runImages(t, 3, func(ctx context.Context, im *Images) error {
		if im.NumImages() != 3 || im.Comm().Size() != 3 {
			t.Errorf("NumImages %d", im.NumImages())
		}
		seen[im.ThisImage()]++
		if im.ThisImage() != im.Comm().Rank() {
			t.Errorf("image %d is rank %d", im.ThisImage(), im.Comm().Rank())
		}
		return nil
	})
	for i, n := range seen {
		if n != 1 {
			t.Errorf("image %d seen %d times", i, n)
		}
	}
}

func TestPutGetSyncAll(t *testing.T) {
	const n = 8
	runImages(t, 4, func(ctx context.Context, im *Images) error {
		me, np := im.ThisImage(), im.NumImages()
		a, err := New[int32](ctx, im, n)
		if err != nil {
			return err
		}
		if a.Len() != n || len(a.Local()) != n {
			t.Errorf("Len %d, Local %d", a.Len(), len(a.Local()))
		}
		for i, v := range a.Local() {
			if v != 0 {
				t.Errorf("a[%d] = %d before any put", i, v)
			}
		}
		if err := im.SyncAll(ctx); err != nil { // nobody puts before we looked
			return err
		}
		// a(2*me+1 : 2*me+2)[right] = [me, me]: each image writes its own
		// two elements of the right neighbour's block.
		right := (me + 1) % np
		src := []int32{int32(100 + me), int32(200 + me)}
		if err := a.Put(right, 2*me, src); err != nil {
			return err
		}
		src[0], src[1] = -1, -1 // the source is free once Put returns
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		left := (me + np - 1) % np
		if got := a.Local()[2*left : 2*left+2]; got[0] != int32(100+left) || got[1] != int32(200+left) {
			t.Errorf("image %d: elements from image %d are %v", me, left, got)
		}
		// Get every block and check where the puts landed.
		for j := range np {
			dst := make([]int32, n)
			if err := a.Get(j, 0, dst); err != nil {
				return err
			}
			from := (j + np - 1) % np
			for i, v := range dst {
				want := int32(0)
				if i == 2*from {
					want = int32(100 + from)
				} else if i == 2*from+1 {
					want = int32(200 + from)
				}
				if v != want {
					t.Errorf("image %d: a(%d)[%d] = %d, want %d", me, i, j, v, want)
				}
			}
		}
		// Gets of part of a block, and of nothing.
		one := make([]int32, 1)
		if err := a.Get(right, 2*me+1, one); err != nil || one[0] != int32(200+me) {
			t.Errorf("Get of one element: %v, %v", one, err)
		}
		if err := a.Get(right, n, nil); err != nil {
			t.Errorf("empty Get at the end: %v", err)
		}
		return a.Free(ctx)
	})
}

// TestSyncImages checks pairwise synchronization in a ring and its
// transitivity: a put to a third image is complete once a partner that
// later synchronizes with that image has synchronized with us.
func TestSyncImages(t *testing.T) {
	runImages(t, 4, func(ctx context.Context, im *Images) error {
		me, np := im.ThisImage(), im.NumImages()
		a, err := New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		left, right := (me+np-1)%np, (me+1)%np
		for round := range 20 {
			if err := a.Put(right, 0, []int64{int64(1000*round + me)}); err != nil {
				return err
			}
			if err := im.SyncImages(ctx, []int{left, right}); err != nil {
				return err
			}
			if got := a.Local()[0]; got != int64(1000*round+left) {
				t.Errorf("round %d image %d: got %d from image %d", round, me, got, left)
			}
			// Nobody may overwrite before the value was read.
			if err := im.SyncImages(ctx, []int{right, left, me}); err != nil {
				return err
			}
		}
		// Transitivity: 0 puts to 2, syncs with 1; 1 syncs with 0, then 2.
		b, err := New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		switch me {
		case 0:
			if err := b.Put(2, 0, []int64{42}); err != nil {
				return err
			}
			err = im.SyncImages(ctx, []int{1})
		case 1:
			if err = im.SyncImages(ctx, []int{0}); err == nil {
				err = im.SyncImages(ctx, []int{2})
			}
		case 2:
			if err = im.SyncImages(ctx, []int{1}); err == nil && b.Local()[0] != 42 {
				t.Errorf("image 2: put from image 0 not visible after the chain: %d", b.Local()[0])
			}
		}
		if err != nil {
			return err
		}
		// Disjoint pairs, and an empty list.
		if err := im.SyncImages(ctx, []int{me ^ 1}); err != nil {
			return err
		}
		if err := im.SyncImages(ctx, nil); err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if err := b.Free(ctx); err != nil {
			return err
		}
		return a.Free(ctx)
	})
}

// TestArraysOfEveryShape allocates arrays of several element types and
// lengths, including empty ones, frees them in another order and reuses
// the space.
func TestArraysOfEveryShape(t *testing.T) {
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		e1, err := New[float32](ctx, im, 0)
		if err != nil {
			return err
		}
		e2, err := New[uint8](ctx, im, 0)
		if err != nil {
			return err
		}
		b, err := New[uint8](ctx, im, 3)
		if err != nil {
			return err
		}
		d, err := New[float64](ctx, im, 5) // after a 3-byte block: must be aligned
		if err != nil {
			return err
		}
		if len(e1.Local()) != 0 || len(e2.Local()) != 0 {
			t.Errorf("empty arrays have %d and %d local elements", len(e1.Local()), len(e2.Local()))
		}
		if err := e1.Put(1-im.ThisImage(), 0, nil); err != nil {
			t.Errorf("empty put into an empty array: %v", err)
		}
		other := 1 - im.ThisImage()
		if err := b.Put(other, 0, []uint8{1, 2, 3}); err != nil {
			return err
		}
		if err := d.Put(other, 1, []float64{0.5, 1.5, 2.5, 3.5}); err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if fmt.Sprint(b.Local(), d.Local()) != "[1 2 3] [0 0.5 1.5 2.5 3.5]" {
			t.Errorf("image %d: %v %v", im.ThisImage(), b.Local(), d.Local())
		}
		for _, f := range []func(context.Context) error{e2.Free, d.Free, e1.Free, b.Free} {
			if err := f(ctx); err != nil {
				return err
			}
		}
		big, err := New[int64](ctx, im, (1<<16)/8)
		if err != nil {
			return fmt.Errorf("the whole heap after freeing everything: %w", err)
		}
		return big.Free(ctx)
	})
}

// TestPutSourceIsFreeOnReturn overwrites a large source right after each
// Put, as a Fortran assignment allows: the target must get the values at
// the time of the put.
func TestPutSourceIsFreeOnReturn(t *testing.T) {
	const n, rounds = 512, 8
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		a, err := New[int64](ctx, im, rounds*n)
		if err != nil {
			return err
		}
		nv, err := NewNotify(ctx, im)
		if err != nil {
			return err
		}
		other := 1 - im.ThisImage()
		src := make([]int64, n)
		for r := range rounds {
			for i := range src {
				src[i] = int64(r*n + i)
			}
			var opts []PutOption
			if r%2 == 1 {
				opts = append(opts, WithNotify(nv))
			}
			if err := a.Put(other, r*n, src, opts...); err != nil {
				return err
			}
		}
		clear(src)
		if err := nv.Wait(ctx, rounds/2); err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		for i, v := range a.Local() {
			if v != int64(i) {
				t.Fatalf("image %d: element %d is %d", im.ThisImage(), i, v)
			}
		}
		if err := nv.Free(ctx); err != nil {
			return err
		}
		return a.Free(ctx)
	})
}
