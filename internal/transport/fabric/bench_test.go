//go:build fabric

package fabric_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/fabric"
)

// BenchmarkPutFlush is a put of 64 bytes and a flush, between two
// goroutine ranks.
func BenchmarkPutFlush(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			eps := group(b, 2)
			defer closeAll(eps)
			buf, r := exposeAt1(b, eps, size)
			defer mem.Free(buf)
			src := make([]byte, size)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := r.Put(0, src, transport.Notice{}, nil); err != nil {
					b.Fatal(err)
				}
				if err := eps[0].Flush(ctx, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNotifiedStream is what a pipeline's producer does: notified
// puts (tags) of 64 bytes or 4 KiB, one Flush after every 64, between
// two goroutine ranks; the target's progress takes the notices. ns/op is
// per put.
func BenchmarkNotifiedStream(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			eps := group(b, 2)
			defer closeAll(eps)
			var got atomic.Int64
			eps[1].SetNoticeHandler(func(int, transport.Key, transport.Notice) { got.Add(1) })
			buf, r := exposeAt1(b, eps, size)
			defer mem.Free(buf)
			src := make([]byte, size)
			n := transport.TagNotice(transport.NoticeTag, 1)
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if err := r.Put(0, src, n, nil); err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 || i == b.N-1 {
					if err := eps[0].Flush(ctx, 1); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			for got.Load() < int64(b.N) {
				eps[1].Poll()
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1024 {
		return itoa(n/1024) + "K"
	}
	return itoa(n)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func closeAll(eps []*fabric.Endpoint) {
	for _, e := range eps {
		e.Close()
	}
}

// BenchmarkPingPong compares a ping-pong of notified puts through the
// transport (Region.Put with a tag, the target polling for the notice)
// with libfabric's own (RawPingPong), in one run: ns/op is a half round
// trip.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{8, 4096} {
		for _, delivered := range []bool{false, true} {
			name := "raw/"
			if delivered {
				name = "raw-delivered/"
			}
			b.Run(name+sizeName(size), func(b *testing.B) {
				d, err := fabric.RawPingPong(testConfig(), size, max(b.N/2, 1), 100, delivered)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "ns/half-rtt")
			})
		}
		b.Run("transport/"+sizeName(size), func(b *testing.B) {
			eps := group(b, 2)
			defer closeAll(eps)
			var regs [2]transport.Region
			for i, e := range eps {
				buf := mem.Alloc(size)
				defer mem.Free(buf)
				key, err := e.Expose(buf)
				if err != nil {
					b.Fatal(err)
				}
				defer e.Unexpose(key)
				regs[1-i], err = eps[1-i].Region(i, key, size)
				if err != nil {
					b.Fatal(err)
				}
			}
			// The notices come to a handler (the background progress may
			// find them) or to the polling waiter.
			var got [2]atomic.Int64
			takers := [2]transport.NoticeTaker{}
			for i, e := range eps {
				e.SetNoticeHandler(func(int, transport.Key, transport.Notice) { got[i].Add(1) })
				takers[i] = func(int, transport.Key, transport.Notice) bool { got[i].Add(1); return true }
			}
			wait := func(i int) {
				for got[i].Load() == 0 {
					eps[i].PollNotices(takers[i])
				}
				got[i].Add(-1)
			}
			n := transport.TagNotice(transport.NoticeTag, 1)
			src := make([]byte, size)
			done := make(chan struct{})
			iters := max(b.N/2, 1)
			go func() {
				defer close(done)
				for range iters + 100 {
					wait(1)
					regs[1].Put(0, src, n, nil)
				}
			}()
			for range 100 {
				regs[0].Put(0, src, n, nil)
				wait(0)
			}
			b.ResetTimer()
			start := time.Now()
			for range iters {
				regs[0].Put(0, src, n, nil)
				wait(0)
			}
			d := time.Since(start)
			<-done
			b.ReportMetric(float64(d.Nanoseconds())/float64(2*iters), "ns/half-rtt")
		})
	}
}

// BenchmarkFetchAdd is a fetch-and-add of one int64 and the wait for its
// result, polling as the engine's waiters do, between two goroutine
// ranks: native (fi_fetch_atomic) against software (a message the target
// applies and answers). Run with -count to interleave the two.
func BenchmarkFetchAdd(b *testing.B) {
	for _, software := range []bool{false, true} {
		name := "native"
		if software {
			name = "software"
		}
		b.Run(name, func(b *testing.B) {
			cfg := testConfig()
			cfg.SoftwareAtomics = software
			eps, err := fabric.Group(cfg, 2)
			if err != nil {
				b.Fatal(err)
			}
			defer closeAll(eps)
			if !software && !eps[0].Native() {
				b.Skip("no native atomics")
			}
			buf, r := exposeAt1(b, eps, 8)
			defer mem.Free(buf)
			one, res := mem.Bytes([]int64{1}), make([]byte, 8)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var c transport.Completion
				if err := r.Accumulate(0, mem.Sum, mem.Int64, one, res, transport.Notice{}, &c); err != nil {
					b.Fatal(err)
				}
				for !c.Complete() {
					eps[0].Poll()
				}
				if err := c.Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
