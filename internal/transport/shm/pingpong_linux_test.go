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
		side := func(me, n int, done chan<- struct{}) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			dst := regs[me].(*region).mem
			peerFlag := (*uint64)(unsafe.Pointer(&dst[0]))
			for k := uint64(1); k <= uint64(n); k++ {
				if me == 0 {
					copy(dst[2048:], data)
					mem.StoreRelease64(peerFlag, k)
				}
				for atomic.LoadUint64(flags[me]) < k {
				}
				if me == 1 {
					copy(dst[2048:], data)
					mem.StoreRelease64(peerFlag, k)
				}
			}
			if done != nil {
				close(done)
			}
		}
		done := make(chan struct{})
		b.ResetTimer()
		go side(1, b.N, done)
		side(0, b.N, nil)
		<-done
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/half")
	})
	b.Run("put-notify", func(b *testing.B) {
		var got [2]int
		for i := range eps {
			eps[i].SetNoticeHandler(func(int, transport.Key, transport.Notice) { got[i]++ })
		}
		side := func(me, n int, done chan<- struct{}) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for k := 1; k <= n; k++ {
				if me == 0 {
					regs[me].Put(2048, data, transport.Notice{Kind: transport.NoticeTag, Tag: 1}, nil)
				}
				for got[me] < k {
					eps[me].PollNotices(nil)
				}
				if me == 1 {
					regs[me].Put(2048, data, transport.Notice{Kind: transport.NoticeTag, Tag: 1}, nil)
				}
			}
			if done != nil {
				close(done)
			}
		}
		done := make(chan struct{})
		b.ResetTimer()
		go side(1, b.N, done)
		side(0, b.N, nil)
		<-done
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/half")
	})
	b.Run("send-am", func(b *testing.B) {
		var got [2]int
		for i := range eps {
			eps[i].SetAMHandler(5, func(int, []byte, []byte) { got[i]++ })
		}
		hdr := make([]byte, 8)
		side := func(me, n int, done chan<- struct{}) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for k := 1; k <= n; k++ {
				if me == 0 {
					eps[me].SendAM(1, 5, hdr, data)
				}
				for got[me] < k {
					eps[me].Poll()
				}
				if me == 1 {
					eps[me].SendAM(0, 5, hdr, data)
				}
			}
			if done != nil {
				close(done)
			}
		}
		done := make(chan struct{})
		b.ResetTimer()
		go side(1, b.N, done)
		side(0, b.N, nil)
		<-done
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/half")
	})
}
