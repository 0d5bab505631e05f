package mem

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestStoreRelease: the release stores store, and a message published
// with one is whole when its flag is seen (the message-passing pattern
// of the rings: data, then a release store of the position; a reader
// that loads the position sees the data).
func TestStoreRelease(t *testing.T) {
	var w64 uint64
	var w32 uint32
	StoreRelease64(&w64, 1<<63|5)
	StoreRelease32(&w32, 1<<31|7)
	if atomic.LoadUint64(&w64) != 1<<63|5 || atomic.LoadUint32(&w32) != 1<<31|7 {
		t.Fatalf("stored %#x and %#x", w64, w32)
	}
	const rounds = 20000
	var data [8]uint64
	var flag uint64
	done := make(chan error, 1)
	go func() {
		for i := uint64(1); i <= rounds; i++ {
			for atomic.LoadUint64(&flag) != i {
				runtime.Gosched()
			}
			for k := range data {
				if v := data[k]; v != i {
					done <- fmt.Errorf("round %d: word %d holds %d after the flag was seen", i, k, v)
					return
				}
			}
			StoreRelease32(&w32, uint32(i)) // the reply
		}
		done <- nil
	}()
	for i := uint64(1); i <= rounds; i++ {
		for k := range data {
			data[k] = i // plain stores, ordered before the flag by it
		}
		StoreRelease64(&flag, i)
		for atomic.LoadUint32(&w32) != uint32(i) {
			runtime.Gosched()
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStoreFenced: the store-buffering litmus test. Each of two
// goroutines stores its flag with StoreFenced64 and then loads the
// other's; in no round may both load the value before the other's store
// (with StoreRelease64, amd64 shows that outcome within a few thousand
// rounds when the goroutines run on two cores).
func TestStoreFenced(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors")
	}
	rounds := 200000
	if testing.Short() {
		rounds = 20000
	}
	var x, y uint64
	var r [2]uint64
	var start, finish uint64 // the rounds the second goroutine may begin, has ended
	go func() {
		for i := uint64(1); i <= uint64(rounds); i++ {
			for atomic.LoadUint64(&start) != i {
				runtime.Gosched()
			}
			StoreFenced64(&y, i)
			r[1] = atomic.LoadUint64(&x)
			atomic.StoreUint64(&finish, i)
		}
	}()
	for i := uint64(1); i <= uint64(rounds); i++ {
		atomic.StoreUint64(&start, i)
		StoreFenced64(&x, i)
		r[0] = atomic.LoadUint64(&y)
		for atomic.LoadUint64(&finish) != i {
			runtime.Gosched()
		}
		if r[0] < i && r[1] < i {
			t.Fatalf("round %d: each side missed the other's store (%d, %d)", i, r[0], r[1])
		}
	}
}
