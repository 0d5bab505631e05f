package tcp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// waitPolling waits until a reader of e polls.
func waitPolling(t *testing.T, e *Endpoint) {
	t.Helper()
	for deadline := time.Now().Add(longSpin / 3); e.spinSet.polling.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no reader polls")
		}
	}
}

// longSpin is how long readers poll in the tests below: far longer than
// anything they wait for, so that a reader that keeps polling when it
// should let others run shows as a delay of that order.
const longSpin = 3 * time.Second

// noticeBox exposes a region at e and returns it with a channel that
// receives the sources of e's notices.
func noticeBox(t *testing.T, e *Endpoint, size int) (transport.Key, chan int) {
	t.Helper()
	key, err := e.Expose(make([]byte, size))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 16)
	e.SetNoticeHandler(func(src int, _ transport.Key, _ transport.Notice) { got <- src })
	return key, got
}

// putNotice puts 8 bytes with a notice from origin to target's region key
// and waits until target has it; it returns how long that took.
func putNotice(t *testing.T, origin *Endpoint, target int, key transport.Key, got chan int) time.Duration {
	t.Helper()
	r, err := origin.Region(target, key, 64)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Put(0, make([]byte, 8), transport.Notice{Kind: transport.NoticeTag, Tag: 1}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case src := <-got:
		if src != origin.Rank() {
			t.Fatalf("notice from %d, want %d", src, origin.Rank())
		}
	case <-time.After(2 * longSpin):
		t.Fatalf("no notice from rank %d", origin.Rank())
	}
	return time.Since(start)
}

// TestPollingReaderLetsOthersRead: with one processor, a reader polling
// its socket after a frame stops as soon as another connection of its
// endpoint has something, so that the runtime serves that one at once
// (it would otherwise poll the network only when a thread happens to wait
// in it already, or the runtime's monitor looks, every 10 ms).
func TestPollingReaderLetsOthersRead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	eps := newGroup(t, Config{Size: 3, Spin: -1})
	if eps[1].spinSet != nil {
		t.Fatal("Spin -1 made a polling state")
	}
	eps = newGroup(t, Config{Size: 3, Spin: time.Microsecond})
	key, got := noticeBox(t, eps[1], 64)
	// Connect both origins while the readers barely poll.
	putNotice(t, eps[0], 1, key, got)
	putNotice(t, eps[2], 1, key, got)
	eps[1].spinSet.setSpin(longSpin)
	putNotice(t, eps[0], 1, key, got) // its reader now polls for longSpin
	waitPolling(t, eps[1])
	if d := putNotice(t, eps[2], 1, key, got); d > longSpin/3 {
		t.Fatalf("a notice on another connection took %v while a reader polled for %v", d, longSpin)
	}
	if eps[1].spinSet.forOthers.Load() == 0 {
		t.Fatal("the polling reader did not stop for the other connection")
	}
}

// TestPollingReaderLetsWritersWrite: with one processor, a reader polling
// its socket stops while a write of its endpoint is under way (it may be
// waiting for room in its socket, which the runtime's network poller
// reports).
func TestPollingReaderLetsWritersWrite(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	eps := newGroup(t, Config{Size: 2, Spin: time.Microsecond})
	key0, got0 := noticeBox(t, eps[0], 64)
	const big = 16 << 20
	key1, got1 := noticeBox(t, eps[1], big)
	putNotice(t, eps[0], 1, key1, got1) // connects 0 to 1
	eps[0].spinSet.setSpin(longSpin)
	putNotice(t, eps[1], 0, key0, got0) // rank 0's reader now polls for longSpin
	waitPolling(t, eps[0])
	r, err := eps[0].Region(1, key1, big)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Put(0, make([]byte, big), transport.Notice{}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*longSpin)
	defer cancel()
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > longSpin/3 {
		t.Fatalf("a put of %d bytes took %v while a reader polled for %v", big, d, longSpin)
	}
	if eps[0].spinSet.forWrites.Load() == 0 {
		t.Fatal("the polling reader did not stop for the write")
	}
}

// TestCloseEndsPoll: closing the endpoint ends its readers' polls at
// once (the runtime's Close waits for a read under way to return).
func TestCloseEndsPoll(t *testing.T) {
	eps := newGroup(t, Config{Size: 2, Spin: time.Microsecond})
	key, got := noticeBox(t, eps[1], 64)
	putNotice(t, eps[0], 1, key, got)
	eps[1].spinSet.setSpin(longSpin)
	putNotice(t, eps[0], 1, key, got)
	waitPolling(t, eps[1])
	start := time.Now()
	eps[1].Kill()
	if d := time.Since(start); d > longSpin/3 {
		t.Fatalf("closing an endpoint whose reader polled for %v took %v", longSpin, d)
	}
}
