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
