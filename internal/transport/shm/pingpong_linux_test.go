package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// BenchmarkNotifiedPutPingPong is the transport's own ping-pong between
// two endpoints of one process, each rank on a thread of its own, with
// 8-byte payloads: what the engine and the benchmark add above the
// transport is not in it.
//
//   - flag: the floor on the same memory, a copy and a release store of a
//     flag, the other side spinning on the flag;
//   - put-notify: a notified put, the target polling its endpoint with a
//     handler that only records the arrival;
//   - send-am: an active message, likewise.
//
// Both ranks spin without yielding: run it with more processors than
// ranks and background goroutines (-cpu 4), and compare within one run.
func BenchmarkNotifiedPutPingPong(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	eps := newGroup(b, Config{Size: 2})
	var bufs [2][]byte
	var regs [2]transport.Region
	for i := range eps {
		bufs[i] = mem.Alloc(4096)
		b.Cleanup(func() { mem.Free(bufs[i]) })
	}
	for i := range eps {
		key, err := eps[1-i].Expose(bufs[1-i])
		if err != nil {
			b.Fatal(err)
		}
		if regs[i], err = eps[i].Region(1-i, key, 4096); err != nil {
			b.Fatal(err)
		}
	}
	data := make([]byte, 8)
	b.Run("flag", func(b *testing.B) {
		flags := [2]*uint64{(*uint64)(unsafe.Pointer(&bufs[0][0])), (*uint64)(unsafe.Pointer(&bufs[1][0]))}
		pingPong(b, func(me int, k uint64) {
			dst := regs[me].(*region).mem
			copy(dst[2048:], data)
			mem.StoreRelease64((*uint64)(unsafe.Pointer(&dst[0])), k)
		}, func(me int, k uint64) {
			for atomic.LoadUint64(flags[me]) < k {
			}
		})
	})
	b.Run("put-notify", func(b *testing.B) {
		var got [2]arrivals
		for i := range eps {
			eps[i].SetNoticeHandler(func(int, transport.Key, transport.Notice) { got[i].Add(1) })
		}
		pingPong(b, func(me int, k uint64) {
			regs[me].Put(2048, data, transport.TagNotice(transport.NoticeTag, 1), nil)
		}, func(me int, k uint64) {
			for got[me].Load() < k {
				eps[me].PollNotices(nil)
			}
		})
	})
	b.Run("send-am", func(b *testing.B) {
		var got [2]arrivals
		for i := range eps {
			eps[i].SetAMHandler(5, func(int, []byte, []byte) { got[i].Add(1) })
		}
		hdr := make([]byte, 8)
		pingPong(b, func(me int, k uint64) {
			eps[me].SendAM(1-me, 5, hdr, data)
		}, func(me int, k uint64) {
			for got[me].Load() < k {
				eps[me].Poll()
			}
		})
	})
}

// arrivals counts a rank's arrivals, on a cache line of its own: the two
// ranks' counters must not share one.
type arrivals struct {
	atomic.Uint64
	_ [lineSize - 8]byte
}

// pingPong runs b.N round trips between rank 0, on the caller's thread,
// and rank 1, on a thread of its own: rank 0 sends (send), rank 1 waits
// for message k (wait) and answers, rank 0 waits for the answer. It
// reports the half round trip.
func pingPong(b *testing.B, send, wait func(me int, k uint64)) {
	side := func(me int, done chan<- struct{}) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for k := uint64(1); k <= uint64(b.N); k++ {
			if me == 0 {
				send(0, k)
			}
			wait(me, k)
			if me == 1 {
				send(1, k)
			}
		}
		close(done)
	}
	d0, d1 := make(chan struct{}), make(chan struct{})
	b.ResetTimer()
	go side(1, d1)
	side(0, d0)
	<-d1
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/half")
}

// BenchmarkNotifiedPutStream is a stream of b.N 8-byte notified puts from
// rank 0 to rank 1, two endpoints of one process, each on a thread of its
// own: rank 0 puts without waiting (but for a full ring), rank 1 polls its
// endpoint with a handler that counts. It reports the time per notice:
// the consumer's throughput unless the producer is slower. Run it with
// -cpu 4, like BenchmarkNotifiedPutPingPong.
func BenchmarkNotifiedPutStream(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	eps := newGroup(b, Config{Size: 2})
	buf := mem.Alloc(4096)
	b.Cleanup(func() { mem.Free(buf) })
	key, err := eps[1].Expose(buf)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := eps[0].Region(1, key, 4096)
	if err != nil {
		b.Fatal(err)
	}
	var got arrivals
	eps[1].SetNoticeHandler(func(int, transport.Key, transport.Notice) { got.Add(1) })
	data := make([]byte, 8)
	done := make(chan struct{})
	b.ResetTimer()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for got.Load() < uint64(b.N) {
			eps[1].Poll()
		}
		close(done)
	}()
	runtime.LockOSThread()
	for i := 0; i < b.N; i++ {
		if err := reg.Put(8*(i%64), data, transport.TagNotice(transport.NoticeTag, 1), nil); err != nil {
			b.Error(err)
			break
		}
	}
	runtime.UnlockOSThread()
	<-done
}
