package narma_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/narma-rma/narma"
)

// onRank0 runs body on rank 0 of a 2-rank job with a window of n int64
// per rank; rank 1 only waits. body's time is what the benchmark measures.
func onRank0(b *testing.B, n int, opts []narma.WinOption, body func(ctx context.Context, w *narma.Win[int64]) error) {
	b.Helper()
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.Allocate[int64](ctx, c, n, opts...)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
			err = body(ctx, w)
			b.StopTimer()
			if err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
}

var sizes = []int{8, 64, 1 << 10, 16 << 10, 256 << 10, 1 << 20}

// BenchmarkPutFlush: a put of size bytes followed by a flush, inside a lock
// epoch, on the in-process transport.
func BenchmarkPutFlush(b *testing.B) {
	benchFlushed(b, func(w *narma.Win[int64], buf []int64) error { return w.Put(buf, 1, 0) })
}

// BenchmarkGetFlush: a get of size bytes followed by a flush.
func BenchmarkGetFlush(b *testing.B) {
	benchFlushed(b, func(w *narma.Win[int64], buf []int64) error { return w.Get(buf, 1, 0) })
}

// benchFlushed measures op followed by a flush, over the message sizes.
func benchFlushed(b *testing.B, op func(w *narma.Win[int64], buf []int64) error) {
	for _, size := range sizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			buf := make([]int64, size/8)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			onRank0(b, size/8, nil, func(ctx context.Context, w *narma.Win[int64]) error {
				if err := w.Lock(ctx, narma.Shared, 1, 0); err != nil {
					return err
				}
				for i := 0; i < b.N; i++ {
					if err := op(w, buf); err != nil {
						return err
					}
					if err := w.Flush(ctx, 1); err != nil {
						return err
					}
				}
				return w.Unlock(ctx, 1)
			})
		})
	}
}

// BenchmarkFetchAndOp: an int64 fetch-and-add with flush.
func BenchmarkFetchAndOp(b *testing.B) {
	b.ReportAllocs()
	onRank0(b, 1, nil, func(ctx context.Context, w *narma.Win[int64]) error {
		if err := w.Lock(ctx, narma.Shared, 1, 0); err != nil {
			return err
		}
		var old int64
		for i := 0; i < b.N; i++ {
			if err := w.FetchAndOp(1, &old, 1, 0, narma.Sum); err != nil {
				return err
			}
			if err := w.Flush(ctx, 1); err != nil {
				return err
			}
		}
		return w.Unlock(ctx, 1)
	})
}

// BenchmarkLockPutUnlock reproduces Gropp and Thakur's Table 1: an
// exclusive lock, a put of n longs, unlock; beside it ("direct") the same
// copy done under a sync.Mutex, their "OpenMP" baseline. Both strategies
// are measured. The ratio lock-put-unlock / direct is the figure of merit
// (they found 2-3x for MPI on an SMP).
func BenchmarkLockPutUnlock(b *testing.B) {
	for _, longs := range []int{8, 256, 1024, 65536} {
		src := make([]int64, longs)
		for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
			b.Run(fmt.Sprintf("%d/%v", longs, st), func(b *testing.B) {
				b.SetBytes(int64(8 * longs))
				b.ReportAllocs()
				onRank0(b, longs, []narma.WinOption{narma.WithStrategy(st)}, func(ctx context.Context, w *narma.Win[int64]) error {
					for i := 0; i < b.N; i++ {
						if err := w.Lock(ctx, narma.Exclusive, 1, 0); err != nil {
							return err
						}
						if err := w.Put(src, 1, 0); err != nil {
							return err
						}
						if err := w.Unlock(ctx, 1); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
		b.Run(fmt.Sprintf("%d/direct", longs), func(b *testing.B) {
			b.SetBytes(int64(8 * longs))
			b.ReportAllocs()
			var mu sync.Mutex
			dst := make([]int64, longs)
			for i := 0; i < b.N; i++ {
				mu.Lock()
				copy(dst, src)
				mu.Unlock()
			}
		})
	}
}
