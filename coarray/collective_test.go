package coarray

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/narma-rma/narma"
)

// TestCoSumMinMax: CO_SUM, CO_MIN and CO_MAX leave the element-wise
// result on every image, or with ResultImage on that image only (the
// others' values untouched); the collectives never match the program's
// own messages.
func TestCoSumMinMax(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runImages(t, n, func(ctx context.Context, im *Images) error {
				me := im.ThisImage()
				c := im.Comm()
				// A message of the program, sent before and received after.
				if err := c.Send(ctx, []byte{byte(me)}, (me+1)%n, 0); err != nil {
					return err
				}
				a := []int64{int64(me + 1), int64(-me)}
				if err := CoSum(ctx, im, a); err != nil {
					return err
				}
				if want := []int64{int64(n * (n + 1) / 2), int64(-n * (n - 1) / 2)}; !slices.Equal(a, want) {
					return fmt.Errorf("CoSum: %v, want %v", a, want)
				}
				f := []float64{float64(me) + 0.5, -float64(me)}
				if err := CoMin(ctx, im, f); err != nil {
					return err
				}
				if want := []float64{0.5, -float64(n - 1)}; !slices.Equal(f, want) {
					return fmt.Errorf("CoMin: %v, want %v", f, want)
				}
				for root := range n {
					g := []int32{int32(me * 3)}
					if err := CoMax(ctx, im, g, ResultImage(root)); err != nil {
						return err
					}
					want := int32(me * 3)
					if me == root {
						want = int32((n - 1) * 3)
					}
					if g[0] != want {
						return fmt.Errorf("CoMax to image %d: %d, want %d", root, g[0], want)
					}
				}
				b := make([]byte, 1)
				if _, err := c.Recv(ctx, b, (me-1+n)%n, 0); err != nil {
					return err
				}
				if int(b[0]) != (me-1+n)%n {
					return fmt.Errorf("the program's message: %d, want %d", b[0], (me-1+n)%n)
				}
				return nil
			})
		})
	}
}

// TestCoBroadcastReduce: CO_BROADCAST copies the source image's values
// everywhere; CO_REDUCE applies the operation in image order (a
// non-commutative but associative one shows the order), everywhere or on
// the result image only.
func TestCoBroadcastReduce(t *testing.T) {
	const n = 4
	runImages(t, n, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		for src := range n {
			a := []float32{float32(me), float32(-me)}
			if err := CoBroadcast(ctx, im, a, src); err != nil {
				return err
			}
			if !slices.Equal(a, []float32{float32(src), float32(-src)}) {
				return fmt.Errorf("CoBroadcast from %d: %v", src, a)
			}
		}
		// Decimal concatenation: associative, not commutative.
		concat := func(x, y int64) int64 { return x*10 + y }
		a := []int64{int64(me + 1), int64(n - me)}
		if err := CoReduce(ctx, im, a, concat); err != nil {
			return err
		}
		if !slices.Equal(a, []int64{1234, 4321}) {
			return fmt.Errorf("CoReduce: %v, want [1234 4321]", a)
		}
		b := []int64{int64(me + 1)}
		if err := CoReduce(ctx, im, b, concat, ResultImage(2)); err != nil {
			return err
		}
		want := int64(me + 1)
		if me == 2 {
			want = 1234
		}
		if b[0] != want {
			return fmt.Errorf("CoReduce to image 2: %d, want %d", b[0], want)
		}
		return nil
	})
}

// TestCollectiveErrors: a result or source image outside the job and a
// nil operation are refused on every image, which all go on afterwards.
func TestCollectiveErrors(t *testing.T) {
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		a := []int64{1}
		wantErr(t, "CoSum to image 2", CoSum(ctx, im, a, ResultImage(2)), narma.ErrRank)
		wantErr(t, "CoMin to image -2", CoMin(ctx, im, a, ResultImage(-2)), narma.ErrRank)
		wantErr(t, "CoMax to image -1", CoMax(ctx, im, a, ResultImage(-1)), narma.ErrRank)
		wantErr(t, "CoBroadcast from image 5", CoBroadcast(ctx, im, a, 5), narma.ErrRank)
		wantErr(t, "CoReduce with a nil operation", CoReduce(ctx, im, a, nil), narma.ErrInvalid)
		if a[0] != 1 {
			t.Errorf("refused collectives changed a: %v", a)
		}
		if err := CoSum(ctx, im, a); err != nil {
			return err
		}
		if a[0] != 2 {
			return fmt.Errorf("CoSum after refused calls: %d, want 2", a[0])
		}
		return nil
	})
}

// TestAtomicSubroutines: every image adds to, ors into and
// compare-and-swaps image 0's elements many times; nothing is lost, the
// fetched values are distinct (each fetch-and-add saw another count), and
// the reads, definitions and logical operations give what they should.
func TestAtomicSubroutines(t *testing.T) {
	const n, rounds = 3, 50
	var mu sync.Mutex
	fetched := map[int64]bool{}
	runImages(t, n, func(ctx context.Context, im *Images) error {
		mu.Lock()
		clear(fetched)
		mu.Unlock()
		me := im.ThisImage()
		a, err := New[int64](ctx, im, 4)
		if err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		var mine []int64
		for range rounds {
			if err := AtomicAdd(a, 0, 0, 1); err != nil {
				return err
			}
			old, err := AtomicFetchAdd(a, 0, 1, 1)
			if err != nil {
				return err
			}
			mine = append(mine, old)
			// A lock-free increment by compare-and-swap.
			for {
				cur, err := AtomicRef(a, 0, 2)
				if err != nil {
					return err
				}
				old, err := AtomicCAS(a, 0, 2, cur, cur+1)
				if err != nil {
					return err
				}
				if old == cur {
					break
				}
			}
		}
		if err := AtomicOr(a, 0, 3, 1<<me); err != nil {
			return err
		}
		mu.Lock()
		for _, v := range mine {
			if fetched[v] {
				mu.Unlock()
				return fmt.Errorf("AtomicFetchAdd returned %d twice", v)
			}
			fetched[v] = true
		}
		mu.Unlock()
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		for i, want := range []int64{n * rounds, n * rounds, n * rounds, 1<<n - 1} {
			got, err := AtomicRef(a, 0, i)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("element %d of image 0: %d, want %d", i, got, want)
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if me == 1 {
			if err := AtomicDefine(a, 2, 0, math.MinInt64); err != nil {
				return err
			}
			if err := AtomicXor(a, 2, 0, -1); err != nil {
				return err
			}
			if old, err := AtomicFetchAnd(a, 2, 0, 0xff); err != nil || old != math.MaxInt64 {
				return fmt.Errorf("AtomicFetchAnd: %d, %v; want %d", old, err, int64(math.MaxInt64))
			}
			if old, err := AtomicFetchOr(a, 2, 0, 0x100); err != nil || old != 0xff {
				return fmt.Errorf("AtomicFetchOr: %#x, %v; want 0xff", old, err)
			}
			if old, err := AtomicFetchXor(a, 2, 0, 0x1ff); err != nil || old != 0x1ff {
				return fmt.Errorf("AtomicFetchXor: %#x, %v; want 0x1ff", old, err)
			}
			if v, err := AtomicRef(a, 2, 0); err != nil || v != 0 {
				return fmt.Errorf("after the logical operations: %#x, %v; want 0", v, err)
			}
		}
		wantErr(t, "AtomicAdd past the block", AtomicAdd(a, 0, 4, 1), narma.ErrBounds)
		_, err = AtomicCAS(a, n, 0, 0, 1)
		wantErr(t, "AtomicCAS on image n", err, narma.ErrRank)
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		return a.Free(ctx)
	})
}
