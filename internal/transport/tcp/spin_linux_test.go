package tcp

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// waitPolling waits until a reader polls.
func waitPolling(t *testing.T, set *spinSet) {
	t.Helper()
	for deadline := time.Now().Add(longSpin / 3); set.polling.Load() == 0; time.Sleep(time.Millisecond) {
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
	if err := r.Put(0, make([]byte, 8), transport.TagNotice(transport.NoticeTag, 1), nil); err != nil {
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
// its socket after a frame stops as soon as another connection has
// something, so that the runtime serves that one at once (it would
// otherwise poll the network only when a thread happens to wait in it
// already, or its monitor looks, every 10 ms).
func TestPollingReaderLetsOthersRead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if eps := newGroup(t, Config{Size: 3, Spin: -1}); eps[1].spinner != nil {
		t.Fatal("Spin -1 made a spinner")
	}
	eps := newGroup(t, Config{Size: 3, Spin: time.Microsecond})
	key, got := noticeBox(t, eps[1], 64)
	// Connect both origins while the readers barely poll.
	putNotice(t, eps[0], 1, key, got)
	putNotice(t, eps[2], 1, key, got)
	set := eps[1].spinner.set
	eps[1].spinner.setSpin(longSpin)
	putNotice(t, eps[0], 1, key, got) // its reader now polls for longSpin
	waitPolling(t, set)
	before := set.forOthers.Load()
	putNotice(t, eps[2], 1, key, got)
	if set.forOthers.Load() == before {
		t.Fatal("the polling reader did not stop for the other connection")
	}
}

// loopbackPair returns the two ends of a TCP connection on loopback.
func loopbackPair(t *testing.T) (dialed, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialed.Close(); accepted.Close() })
	return dialed, accepted
}

// TestPollingReaderLetsWritersWrite: with one processor, a reader polling
// its socket stops while a write is under way: one that waits for room
// in its socket waits in the runtime's network poller, which a polling
// reader keeps from running.
func TestPollingReaderLetsWritersWrite(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sp := newSpinner()
	if sp == nil {
		t.Skip("no epoll")
	}
	defer sp.close()
	sp.setSpin(longSpin)
	quiet, _ := loopbackPair(t) // nothing ever arrives on it
	r := sp.wrap(quiet)
	full, _ := loopbackPair(t) // its other end never reads
	w := sp.wrap(full)
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		read <- err
	}()
	waitPolling(t, sp.set)
	before := sp.set.forWaits.Load()
	go w.Write(make([]byte, 64<<20)) // fills the socket buffers, then waits for room
	for deadline := time.Now().Add(longSpin / 3); sp.set.forWaits.Load() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the polling reader did not stop for a write waiting for room")
		}
	}
	r.Close()
	w.Close()
	<-read
}

// TestCloseEndsPoll: closing the endpoint ends its readers' polls at
// once (the runtime's Close waits for a read under way to return).
func TestCloseEndsPoll(t *testing.T) {
	eps := newGroup(t, Config{Size: 2, Spin: time.Microsecond})
	key, got := noticeBox(t, eps[1], 64)
	putNotice(t, eps[0], 1, key, got)
	eps[1].spinner.setSpin(longSpin)
	// The reader polls from its next read on, unless a write of this
	// process is under way just then (spinSet.waiting: the origin's own
	// write of the frame, say), which sends that read to the network
	// poller: put again until it polls.
	for i := 0; ; i++ {
		putNotice(t, eps[0], 1, key, got)
		deadline := time.Now().Add(100 * time.Millisecond)
		for eps[1].spinner.set.polling.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if eps[1].spinner.set.polling.Load() > 0 {
			break
		}
		if i == 20 {
			t.Fatal("no reader polls")
		}
	}
	start := time.Now()
	eps[1].Kill()
	if d := time.Since(start); d > longSpin/3 {
		t.Fatalf("closing an endpoint whose reader polled for %v took %v", longSpin, d)
	}
}

// TestSpinSetShared: the endpoints of a process share one polling set,
// held as long as one of them is open and released with the last.
func TestSpinSetShared(t *testing.T) {
	refs := func() int {
		theSpinSet.mu.Lock()
		defer theSpinSet.mu.Unlock()
		return theSpinSet.refs
	}
	before := refs() // endpoints of other tests may still be open
	eps, err := Group(context.Background(), Config{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	set := eps[0].spinner.set
	if eps[1].spinner.set != set {
		t.Fatal("two endpoints of a process have different polling sets")
	}
	if got := refs(); got != before+2 {
		t.Fatalf("%d references to the set after a group of 2, want %d", got, before+2)
	}
	eps[0].Close()
	if set.closed {
		t.Fatal("the set was closed while an endpoint used it")
	}
	eps[1].Close()
	if got := refs(); got != before {
		t.Fatalf("%d references to the set after the group closed, want %d", got, before)
	}
	if before == 0 && !set.closed {
		t.Fatal("the set outlived its endpoints")
	}
}
