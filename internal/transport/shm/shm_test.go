//go:build linux

package shm

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// newHeap makes a job and its heap, installs the heap as mem's source for
// the test, and removes the job's segments at the end.
func newHeap(t testing.TB) *Heap {
	t.Helper()
	job := NewJobID()
	h, err := NewHeap(job)
	if err != nil {
		t.Fatal(err)
	}
	prev := mem.SetSource(h)
	t.Cleanup(func() {
		mem.SetSource(prev)
		if err := RemoveJob(job); err != nil {
			t.Error(err)
		}
	})
	return h
}

func newGroup(t testing.TB, cfg Config) []*Endpoint {
	t.Helper()
	if cfg.Heap == nil {
		cfg.Heap = newHeap(t)
	}
	eps, err := GroupConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range eps {
			e.Close()
		}
	})
	return eps
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps := newGroup(t, Config{Size: n, CheckInterval: 5e6})
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out
	})
}

// TestRingBackPressure: a target whose notice handler is stuck fills its
// ring; producers then wait instead of dropping, and once the handler
// moves again every notice arrives, once, in issue order per producer.
func TestRingBackPressure(t *testing.T) {
	const producers, per = 2, 200
	eps := newGroup(t, Config{Size: producers + 1, NoticeSlots: 4})
	target := eps[producers]
	release := make(chan struct{})
	got := make(chan [2]int32, producers*per)
	target.SetNoticeHandler(func(src int, _ transport.Key, n transport.Notice) {
		<-release
		got <- [2]int32{int32(src), n.Tag()}
	})
	buf := mem.Alloc(8)
	defer mem.Free(buf)
	key, err := target.Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, producers)
	for p := 0; p < producers; p++ {
		go func() {
			r, err := eps[p].Region(producers, key, 8)
			if err != nil {
				done <- err
				return
			}
			for i := 0; i < per; i++ {
				if err := r.Put(0, nil, transport.TagNotice(transport.NoticeTag, int32(i)), nil); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	// The producers cannot finish while the handler is stuck: the ring
	// holds 4 notices and the handler one.
	select {
	case err := <-done:
		t.Fatalf("a producer finished with the consumer stuck (%v): notices were dropped", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	for p := 0; p < producers; p++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	next := make([]int32, producers)
	for i := 0; i < producers*per; i++ {
		select {
		case g := <-got:
			if g[1] != next[g[0]] {
				t.Fatalf("notice %d from rank %d, want %d", g[1], g[0], next[g[0]])
			}
			next[g[0]]++
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d notices arrived", i, producers*per)
		}
	}
	select {
	case g := <-got:
		t.Fatalf("extra notice %v", g)
	case <-time.After(50 * time.Millisecond):
	}
}

// sleepGroup makes a group of 2 ranks for the doorbell tests: rank 1
// sends the notices it gets to got, and r is rank 0's handle on 8 bytes
// rank 1 exposed.
func sleepGroup(t *testing.T) (eps []*Endpoint, r transport.Region, got chan transport.Notice) {
	t.Helper()
	eps = newGroup(t, Config{Size: 2, CheckInterval: 5e6})
	got = make(chan transport.Notice, 16)
	eps[1].SetNoticeHandler(func(_ int, _ transport.Key, n transport.Notice) { got <- n })
	buf := mem.Alloc(8)
	t.Cleanup(func() { mem.Free(buf) })
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = eps[0].Region(1, key, 8); err != nil {
		t.Fatal(err)
	}
	return eps, r, got
}

// sleepOn sleeps on ep's doorbell for d (Prepare, then Sleep) in a
// goroutine of its own; the channel closes when the Sleep ends.
func sleepOn(ep *Endpoint, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		ep.Sleep(ep.Prepare(), d)
		close(done)
	}()
	return done
}

// TestSleep: Sleep on an endpoint's doorbell ends when a notice arrives,
// when Wake or a peer's WakeRank is called during it, and at once after a
// Wake or WakeRank that came between its Prepare and it (so that a waker
// between the caller's last look and its Sleep is not lost); with nothing
// of that, it ends after its time.
func TestSleep(t *testing.T) {
	eps, r, got := sleepGroup(t)
	const long, bound = time.Minute, 10 * time.Second
	sleep := func(d time.Duration) <-chan struct{} { return sleepOn(eps[1], d) }
	ended := func(what string, done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(bound):
			t.Fatalf("Sleep did not end on %s", what)
		}
	}
	ended("its own time", sleep(time.Millisecond))

	// prepared makes a Sleep whose Prepare came before wake.
	prepared := func(wake func()) <-chan struct{} {
		ticket := eps[1].Prepare()
		wake()
		done := make(chan struct{})
		go func() {
			eps[1].Sleep(ticket, long)
			close(done)
		}()
		return done
	}
	ended("a Wake after its Prepare", prepared(eps[1].Wake))

	done := sleep(long)
	time.Sleep(20 * time.Millisecond) // most likely asleep by now
	eps[1].Wake()
	ended("a Wake", done)

	done = sleep(long)
	time.Sleep(20 * time.Millisecond)
	if err := r.Put(0, []byte{1, 2, 3, 4, 5, 6, 7, 8}, transport.TagNotice(transport.NoticeTag, 9), nil); err != nil {
		t.Fatal(err)
	}
	ended("an arrival", done)
	select {
	case n := <-got:
		if n.Tag() != 9 {
			t.Fatalf("notice %+v, want tag 9", n)
		}
	case <-time.After(bound):
		t.Fatal("the notice was not delivered")
	}
}

// TestDrainRingStopsAtFreshLine: a drain of a ring of active messages
// stops before a record that starts a cache line it has not read (the
// producer wrote that line last: to look at it would wait for the
// producer's core), and polling again takes the rest, every message once
// and in order.
func TestDrainRingStopsAtFreshLine(t *testing.T) {
	eps := newGroup(t, Config{Size: 2, CheckInterval: 10 * time.Second})
	e := eps[1]
	var got []byte
	e.SetAMHandler(3, func(src int, hdr, payload []byte) { got = append(got, payload[0]) })
	// Keep the progress goroutine from draining: this goroutine drains.
	for !e.draining.tryLock() {
		runtime.Gosched()
	}
	if head := e.own.ringHeads[0].loadHead(); head%lineSize != 0 {
		t.Fatalf("ring of rank 0 starts at %d, want a line start", head)
	}
	// Records of 32 bytes (head 16, header 8, payload 8): two per line.
	const n = 8
	for i := 0; i < n; i++ {
		if err := eps[0].SendAM(1, 3, make([]byte, 8), []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	}
	if !e.drainRing(0) || len(got) != 2 {
		t.Fatalf("the first drain handled %d messages, want the 2 of the first line", len(got))
	}
	for e.drainRing(0) {
	}
	e.draining.unlock()
	if len(got) != n {
		t.Fatalf("handled %d messages, want %d", len(got), n)
	}
	for i, v := range got {
		if v != byte(i) {
			t.Fatalf("messages handled in the order %v", got)
		}
	}
}

// TestLayoutLines: a notice slot, an exposure and an AM ring head are one
// cache line each, as the layout of a control segment counts them, and
// the header fills its page.
func TestLayoutLines(t *testing.T) {
	for _, c := range []struct {
		name string
		size int
	}{{"slot", mem.SizeOf[slot]()}, {"exposure", mem.SizeOf[exposure]()}, {"amRing", mem.SizeOf[amRing]()}} {
		if c.size != lineSize {
			t.Errorf("%s is %d bytes, want %d", c.name, c.size, lineSize)
		}
	}
	if n := mem.SizeOf[header](); n > hdrSize {
		t.Errorf("header is %d bytes, more than its %d", n, hdrSize)
	}
}
