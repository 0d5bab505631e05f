//go:build linux

package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// TestSleepTwoSleepers: two goroutines of one rank sleep on its doorbell
// at once (two waiting goroutines of a Comm, besides the progress
// goroutine); the first one's Sleep ends (its time passes) while the
// second still sleeps. An arrival after that must
// still end the second's Sleep: the header counts its sleepers, so the
// first one leaving does not make producers stop ringing. The second sleeps
// for 10 s and must end within 2 s of the arrival: a hang detector, not a
// measure of speed.
func TestSleepTwoSleepers(t *testing.T) {
	eps, r, got := sleepGroup(t)
	ams := make(chan struct{}, 16)
	eps[1].SetAMHandler(7, func(int, []byte, []byte) { ams <- struct{}{} })
	const long, bound = 10 * time.Second, 2 * time.Second
	sleep := func(d time.Duration) <-chan struct{} { return sleepOn(eps[1], d) }
	arrivals := []struct {
		name   string
		arrive func() error
	}{
		{"a notice", func() error {
			if err := r.Put(0, []byte{1, 2, 3, 4, 5, 6, 7, 8}, transport.TagNotice(transport.NoticeTag, 9), nil); err != nil {
				return err
			}
			select {
			case <-got:
			case <-time.After(long):
				t.Error("the notice was not delivered")
			}
			return nil
		}},
		{"an active message", func() error {
			if err := eps[0].SendAM(1, 7, []byte{1}, nil); err != nil {
				return err
			}
			select {
			case <-ams:
			case <-time.After(long):
				t.Error("the active message was not delivered")
			}
			return nil
		}},
	}
	// The first sleeper times out; its Sleep begins before the second's,
	// or after it.
	for _, before := range []bool{true, false} {
		order := "after"
		if before {
			order = "before"
		}
		for _, a := range arrivals {
			var first, second <-chan struct{}
			if before {
				first = sleep(100 * time.Millisecond)
				time.Sleep(20 * time.Millisecond)
				second = sleep(long)
			} else {
				second = sleep(long)
				time.Sleep(20 * time.Millisecond)
				first = sleep(50 * time.Millisecond)
			}
			select {
			case <-first:
			case <-time.After(long):
				t.Fatalf("the first Sleep (begun %s the second) did not end", order)
			}
			time.Sleep(20 * time.Millisecond) // most likely asleep by now
			select {
			case <-second:
				// Sleep may return early; then this round proves nothing
				// (nothing here rings the doorbell, so it should not).
				t.Logf("first begun %s, %s: the second Sleep ended before the arrival", order, a.name)
				continue
			default:
			}
			at := time.Now()
			if err := a.arrive(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-second:
			case <-time.After(bound):
				t.Fatalf("first begun %s, then %s: the second Sleep did not end within %v of it", order, a.name, bound)
			}
			if d := time.Since(at); d > bound {
				t.Errorf("first begun %s, then %s: the second Sleep ended %v after it", order, a.name, d)
			}
		}
	}
}

// TestYieldLetsGoroutinesRun: in a group of goroutine ranks, Yield gives
// the processor to the other goroutines of the process, not only to other
// threads: with one processor (GOMAXPROCS=1), a goroutine ready to run
// gets it within a few Yields of a polling waiter, as goroutine ranks of
// one process that wait for each other need. sched_yield alone would
// leave it queued until the runtime preempts the waiter (10 ms, some
// hundred thousand Yields).
func TestYieldLetsGoroutinesRun(t *testing.T) {
	eps := newGroup(t, Config{Size: 2})
	if h := eps[0].Host(); h.Ranks != 2 || !h.OneProcess {
		t.Fatalf("Host() = %+v, want 2 ranks and OneProcess for a group of 2 goroutine ranks", h)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Bool
	done := make(chan struct{})
	go func() { // runnable, behind this goroutine on the one processor
		ran.Store(true)
		close(done)
	}()
	for i := 0; i < 100 && !ran.Load(); i++ {
		eps[0].Yield()
	}
	if !ran.Load() {
		t.Fatal("a runnable goroutine did not run within 100 Yields on one processor")
	}
	<-done
}

// TestWakeEndsEveryPreparedSleep: a Wake, or a peer's WakeRank, that
// comes after two goroutines of one rank have both registered (Prepare)
// and looked, and before they sleep, ends both Sleeps at once: each
// compares its ticket with the doorbell's count, so the wake is not owed
// to the first Sleep only (the second then slept until something else
// rang or its time passed). Each sleeps for 10 s and must end within 2 s:
// a hang detector, not a measure of speed.
func TestWakeEndsEveryPreparedSleep(t *testing.T) {
	eps := newGroup(t, Config{Size: 2, CheckInterval: 5e6})
	const long, bound = 10 * time.Second, 2 * time.Second
	for _, w := range []struct {
		name string
		wake func()
	}{
		{"Wake", eps[1].Wake},
	} {
		tickets := []uint32{eps[1].Prepare(), eps[1].Prepare()}
		w.wake()
		done := make(chan int, len(tickets))
		for i, ticket := range tickets {
			go func() {
				eps[1].Sleep(ticket, long)
				done <- i
			}()
		}
		for range tickets {
			select {
			case <-done:
			case <-time.After(bound):
				t.Fatalf("after %s, a Sleep prepared before it did not end within %v", w.name, bound)
			}
		}
	}
	if n := eps[1].own.hdr.sleepers.Load(); n != 0 && n != 1 { // 1: the progress goroutine
		t.Errorf("%d sleepers registered after every Sleep ended", n)
	}
}

// TestPublishWakesProgress: notices published one at a time, each after
// the target's progress goroutine has gone to sleep on its doorbell
// (and no waiter polls), each reach the handler: the producer's release
// store and its look at the sleepers, against the sleeper's registration,
// global barrier and last look, lose no wake-up. It runs with the
// barrier (producers publish with release stores) and with a kernel
// that refuses it (fenced stores), and checks which mode each producer
// chose. The progress goroutine's own timeout is 10 s and each notice
// must arrive within 2 s: a hang detector, not a measure of speed.
func TestPublishWakesProgress(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		name := "barrier"
		if refuse {
			name = "refused"
		}
		t.Run(name, func(t *testing.T) {
			if refuse {
				defer func(f func() bool) { barrierReady = f }(barrierReady)
				barrierReady = func() bool { return false }
			}
			eps := newGroup(t, Config{Size: 2, CheckInterval: 10 * time.Second})
			want := barrierReady()
			for _, e := range eps {
				if e.barrier != want || (e.own.hdr.barrier == 1) != want {
					t.Fatalf("rank %d: barrier %v, header %d; want %v", e.rank, e.barrier, e.own.hdr.barrier, want)
				}
				for r, p := range e.peers {
					if p.relaxed != want {
						t.Fatalf("rank %d publishes to rank %d relaxed=%v, want %v", e.rank, r, p.relaxed, want)
					}
				}
			}
			r, got, buf := noticeTarget(t, eps)
			const bound = 2 * time.Second
			for i := 0; i < 200; i++ {
				// Wait until the progress goroutine sleeps (or is about to).
				for eps[1].own.hdr.sleepers.Load() == 0 {
					runtime.Gosched()
				}
				putAndAwait(t, r, got, buf, i, bound, "published while the progress goroutine slept")
			}
		})
	}
}

// TestPollTakesOverProgress: a caller of Poll that finds the progress
// goroutine registered as a sleeper on the doorbell takes the
// registration over, so that producers stop ringing (a system call per
// notice) while it polls; and the progress goroutine, woken, still
// delivers what arrives once nobody polls. Its own timeout is 10 s and
// each notice must arrive within 2 s: a hang detector.
func TestPollTakesOverProgress(t *testing.T) {
	eps := newGroup(t, Config{Size: 2, CheckInterval: 10 * time.Second})
	r, got, buf := noticeTarget(t, eps)
	e := eps[1]
	hdr := e.own.hdr
	const bound = 2 * time.Second
	for i := 0; i < 20; i++ {
		// Wait until the progress goroutine sleeps (its registration is
		// there to take over).
		deadline := time.Now().Add(bound)
		for e.asleep.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the progress goroutine did not go to sleep on the doorbell")
			}
			time.Sleep(100 * time.Microsecond)
		}
		if n := hdr.sleepers.Load(); n != 1 {
			t.Fatalf("round %d: %d sleepers registered before Poll, want 1", i, n)
		}
		e.Poll()
		if n := hdr.sleepers.Load(); n != 0 {
			t.Fatalf("round %d: %d sleepers registered after Poll took over, want 0: producers would ring for a goroutine that is not asleep", i, n)
		}
		// Nobody polls now: the progress goroutine, woken by the
		// takeover, must deliver this notice.
		putAndAwait(t, r, got, buf, i, bound, "published after a Poll took the progress goroutine's registration over")
	}
}

// noticeTarget makes rank 1 of eps send the notices it gets to got, and
// returns rank 0's handle r on the 64 bytes buf that rank 1 exposed.
func noticeTarget(t *testing.T, eps []*Endpoint) (r transport.Region, got chan transport.Notice, buf []byte) {
	t.Helper()
	got = make(chan transport.Notice, 1)
	eps[1].SetNoticeHandler(func(_ int, _ transport.Key, n transport.Notice) { got <- n })
	buf = mem.Alloc(64)
	t.Cleanup(func() { mem.Free(buf) })
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = eps[0].Region(1, key, 64); err != nil {
		t.Fatal(err)
	}
	return r, got, buf
}

// putAndAwait puts 8 bytes stamped i at 8*(i%8) of buf through r with
// notice tag i, and fails unless the notice arrives on got within bound,
// after its data; when says how the notice was published.
func putAndAwait(t *testing.T, r transport.Region, got chan transport.Notice, buf []byte, i int, bound time.Duration, when string) {
	t.Helper()
	data := []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}
	if err := r.Put(8*(i%8), data, transport.TagNotice(transport.NoticeTag, int32(i)), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.Tag() != int32(i) {
			t.Fatalf("notice %d arrived as tag %d", i, n.Tag())
		}
		if buf[8*(i%8)] != byte(i) {
			t.Fatalf("notice %d arrived before its data", i)
		}
	case <-time.After(bound):
		t.Fatalf("notice %d, %s, not handled within %v", i, when, bound)
	}
}

// TestWakeRankSparesProgress: a peer's WakeRank rings the doorbell only
// for waiters that registered (Prepare), not for the progress goroutine
// asleep on it: what WakeRank announces is nothing the progress goroutine
// takes, and ringing for it cost the peer a system call and this rank a
// wake-up and a global barrier per notice (BenchmarkNotifySelf went from
// 57 to 984 ns once the progress goroutine had gone to sleep). A Wake of
// the rank itself still rings for it.
func TestWakeRankSparesProgress(t *testing.T) {
	eps := newGroup(t, Config{Size: 2, CheckInterval: 10 * time.Second})
	hdr := eps[1].own.hdr
	deadline := time.Now().Add(10 * time.Second)
	for hdr.sleepers.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the progress goroutine of rank 1 did not go to sleep: %d sleepers", hdr.sleepers.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if n := hdr.waiters.Load(); n != 0 {
		t.Fatalf("%d waiters registered, want 0", n)
	}
	bell := hdr.bell.Load()
	eps[0].WakeRank(1)
	if b := hdr.bell.Load(); b != bell {
		t.Errorf("WakeRank with only the progress goroutine asleep rang the doorbell (%d -> %d)", bell, b)
	}

	ticket := eps[1].Prepare()
	if n := hdr.waiters.Load(); n != 1 {
		t.Fatalf("%d waiters registered after Prepare, want 1", n)
	}
	eps[0].WakeRank(1)
	if b := hdr.bell.Load(); b == ticket {
		t.Fatal("WakeRank with a waiter registered did not ring the doorbell")
	}
	done := make(chan struct{})
	go func() {
		eps[1].Sleep(ticket, 10*time.Second)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("a Sleep whose ticket WakeRank outdated did not end within 2 s")
	}
	if n := hdr.waiters.Load(); n != 0 {
		t.Errorf("%d waiters registered after the Sleep ended, want 0", n)
	}
	eps[1].Prepare() // a wait that ends without sleeping
	eps[1].Cancel()
	if n, s := hdr.waiters.Load(), hdr.sleepers.Load(); n != 0 || s > 1 {
		t.Errorf("after Prepare and Cancel: %d waiters, %d sleepers; want 0 and at most 1 (the progress goroutine)", n, s)
	}
}
