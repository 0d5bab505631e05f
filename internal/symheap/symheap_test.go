package symheap

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
)

// TestMain lets the test binary serve as the rank processes of
// runRanks's process jobs (ranktest.Main).
func TestMain(m *testing.M) { ranktest.Main(m) }

// runRanks runs fn on n ranks, twice (ranktest.Run): as goroutines, then
// as processes. A rank's error, or a t.Errorf, fails the test.
func runRanks(t *testing.T, n int, fn func(ctx context.Context, c *narma.Comm) error) {
	t.Helper()
	ranktest.Run(t, n, func(c *narma.Comm) error { return fn(c.Context(), c) })
}

func TestAllocIsSymmetricAndReused(t *testing.T) {
	runRanks(t, 3, func(ctx context.Context, c *narma.Comm) error {
		h, err := New(ctx, c, 1024)
		if err != nil {
			return err
		}
		a, err := h.Alloc(ctx, 100, 8)
		if err != nil {
			return err
		}
		b, err := h.Alloc(ctx, 64, 64)
		if err != nil {
			return err
		}
		if a != 0 || b != 128 {
			t.Errorf("offsets %d, %d; want 0, 128", a, b)
		}
		// Write into b at the next rank, then free a and reuse its space.
		w := h.Win()
		if err := w.Put([]byte{byte(c.Rank() + 1)}, (c.Rank()+1)%c.Size(), b); err != nil {
			return err
		}
		if err := w.FlushAll(ctx); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		left := (c.Rank() + c.Size() - 1) % c.Size()
		if got := w.Local()[b]; got != byte(left+1) {
			t.Errorf("rank %d: object b holds %d, want %d", c.Rank(), got, left+1)
		}
		if err := h.Check(b, 64); err != nil {
			t.Errorf("Check of b: %v", err)
		}
		if err := h.Check(b+60, 8); !errors.Is(err, ErrNotSymmetric) {
			t.Errorf("Check past b's end: %v", err)
		}
		if err := h.Free(ctx, a, 100); err != nil {
			return err
		}
		if err := h.Check(a, 1); !errors.Is(err, ErrNotSymmetric) {
			t.Errorf("Check of freed a: %v", err)
		}
		w.Local()[0] = 9 // dirty the freed space; Alloc must zero it
		d, err := h.Alloc(ctx, 16, 8)
		if err != nil {
			return err
		}
		if d != 0 || w.Local()[0] != 0 {
			t.Errorf("reused offset %d holds %d, want 0 zeroed", d, w.Local()[0])
		}
		if _, err := h.Alloc(ctx, 4096, 8); !errors.Is(err, ErrNoMemory) {
			t.Errorf("Alloc past the end: %v", err)
		}
		return h.Close(ctx)
	})
}

func TestAsymmetricRequestsAreRefused(t *testing.T) {
	runRanks(t, 2, func(ctx context.Context, c *narma.Comm) error {
		h, err := New(ctx, c, 256)
		if err != nil {
			return err
		}
		if _, err := h.Alloc(ctx, 8+8*c.Rank(), 8); !errors.Is(err, ErrNotSymmetric) {
			t.Errorf("rank %d: Alloc with different sizes: %v", c.Rank(), err)
		}
		// The failed call allocated nothing.
		off, err := h.Alloc(ctx, 8, 8)
		if err != nil || off != 0 {
			t.Errorf("Alloc after a refused one: %d, %v", off, err)
		}
		return h.Close(ctx)
	})
}

func TestCounters(t *testing.T) {
	runRanks(t, 3, func(ctx context.Context, c *narma.Comm) error {
		h, err := New(ctx, c, 64)
		if err != nil {
			return err
		}
		i, err := h.NewCounter(ctx)
		if err != nil {
			return err
		}
		j, err := h.NewCounter(ctx)
		if err != nil {
			return err
		}
		if i != 0 || j != 1 {
			t.Errorf("counters %d, %d", i, j)
		}
		if err := h.Win().PutNotify(nil, 0, 0, narma.Counter(j)); err != nil {
			return err
		}
		if err := h.Win().FlushAll(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := h.Win().WaitCounter(ctx, j, uint64(c.Size())); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := h.FreeCounter(ctx, j); err != nil {
			return err
		}
		if err := h.FreeCounter(ctx, j); !errors.Is(err, narma.ErrInvalidNotification) {
			t.Errorf("double FreeCounter: %v", err)
		}
		k, err := h.NewCounter(ctx)
		if err != nil {
			return err
		}
		v, _ := h.Win().Counter(k)
		if k != j || v != 0 {
			t.Errorf("reused counter %d at %d, want %d at 0", k, v, j)
		}
		return h.Close(ctx)
	})
}

// TestOneRankFailsEveryRankFails: a collective call that fails its own
// checks on one rank fails on every rank, instead of leaving the others
// waiting; huge sizes fail without panicking; Free wants an object's
// exact extent.
func TestOneRankFailsEveryRankFails(t *testing.T) {
	runRanks(t, 3, func(ctx context.Context, c *narma.Comm) error {
		h, err := New(ctx, c, 256)
		if err != nil {
			return err
		}
		n := 8
		if c.Rank() == 1 {
			n = -1
		}
		_, err = h.Alloc(ctx, n, 8)
		switch {
		case c.Rank() == 1 && !errors.Is(err, narma.ErrInvalid):
			t.Errorf("rank 1, Alloc(-1): %v, want ErrInvalid", err)
		case c.Rank() != 1 && !errors.Is(err, narma.ErrCollective):
			t.Errorf("rank %d, Alloc(8) while rank 1 failed: %v, want ErrCollective", c.Rank(), err)
		}
		if _, err := h.Alloc(ctx, math.MaxInt, 8); !errors.Is(err, ErrNoMemory) {
			t.Errorf("Alloc(MaxInt): %v, want ErrNoMemory", err)
		}
		off, err := h.Alloc(ctx, 16, 8)
		if err != nil {
			return err
		}
		if err := h.Free(ctx, off, 8); !errors.Is(err, ErrNotSymmetric) {
			t.Errorf("Free of half an object: %v, want ErrNotSymmetric", err)
		}
		if err := h.Free(ctx, off, 16); err != nil {
			t.Errorf("Free of the object: %v", err)
		}
		return h.Close(ctx)
	})
}

func TestNewAgreesOnSize(t *testing.T) {
	runRanks(t, 2, func(ctx context.Context, c *narma.Comm) error {
		_, err := New(ctx, c, 64*(c.Rank()+1))
		if !errors.Is(err, narma.ErrCollective) {
			t.Errorf("rank %d: heaps of different sizes: %v, want ErrCollective", c.Rank(), err)
		}
		return nil
	})
}
