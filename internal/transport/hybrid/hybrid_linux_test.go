package hybrid

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/shm"
	"github.com/narma-rma/narma/internal/transport/tcp"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// bound is how long a test waits for something that should take
// milliseconds.
const bound = 10 * time.Second

// TestMain checks, after the tests, that they left no segment of this
// process's jobs in /dev/shm.
func TestMain(m *testing.M) {
	code := m.Run()
	left, err := filepath.Glob(filepath.Join(shm.Dir, fmt.Sprintf("narma.%d-*", os.Getpid())))
	if err != nil || len(left) > 0 {
		fmt.Fprintf(os.Stderr, "shared-memory segments left behind: %v %v\n", left, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// newHeap makes a job and its heap, installs the heap as mem's source for
// the test, and removes the job's segments at the end.
func newHeap(t testing.TB) *shm.Heap {
	t.Helper()
	job := shm.NewJobID()
	h, err := shm.NewHeap(job)
	if err != nil {
		t.Fatal(err)
	}
	prev := mem.SetSource(h)
	t.Cleanup(func() {
		mem.SetSource(prev)
		if err := shm.RemoveJob(job); err != nil {
			t.Error(err)
		}
	})
	return h
}

// newWorld makes a hybrid job of ranks on hosts over heap (a new one if
// nil), closed when the test ends.
func newWorld(t testing.TB, heap *shm.Heap, hosts []int) []*Endpoint {
	t.Helper()
	if heap == nil {
		heap = newHeap(t)
	}
	eps, err := GroupConfig(context.Background(), Config{
		Hosts:  hosts,
		Heap:   heap,
		Local:  shm.Config{CheckInterval: 5 * time.Millisecond},
		Remote: tcp.Config{PeerTimeout: 5 * time.Second},
	})
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

// layouts place n ranks on hosts. Alternate puts neighbours on different
// hosts, so that with 3 ranks or more every subtest of the suite uses both
// paths; Halves puts the first half on one host; OneHost leaves TCP
// unused.
var layouts = []struct {
	name  string
	hosts func(n int) []int
}{
	{"Alternate", func(n int) []int {
		h := make([]int, n)
		for i := range h {
			h[i] = i % 2
		}
		return h
	}},
	{"Halves", func(n int) []int {
		h := make([]int, n)
		for i := range h {
			h[i] = 2 * i / n
		}
		return h
	}},
	{"OneHost", func(n int) []int { return make([]int, n) }},
}

func TestConformance(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			heap := newHeap(t)
			transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
				eps := newWorld(t, heap, l.hosts(n))
				out := make([]transport.Endpoint, n)
				for i, e := range eps {
					out[i] = e
				}
				return out
			})
		})
	}
}

// expose allocates size bytes and exposes them at ep.
func expose(t *testing.T, ep *Endpoint, size int) ([]byte, transport.Key) {
	t.Helper()
	b := mem.Alloc(size)
	t.Cleanup(func() { mem.Free(b) })
	k, err := ep.Expose(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, k
}

// TestRouting: operations and messages between ranks of one host go
// through shm, the others through TCP (counted in its frames); handles of
// same-host regions hide shm's direct memory; SameHost tells local
// ranks.
func TestRouting(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 1, 0, 1})
	// Two ranks per host, goroutines of this process (one shm group per
	// pretend host).
	if c := eps[0].Caps(); c != (transport.Caps{Name: "hybrid(shm+tcp)"}) {
		t.Fatalf("Caps() = %+v", c)
	}
	if h := eps[0].Host(); h != (transport.Host{NetPoll: true, Ranks: 2, OneProcess: true}) {
		t.Fatalf("Host() = %+v", h)
	}
	for r, want := range []int{0, -1, 1, -1} {
		if l, ok := eps[0].SameHost(r); l != want || ok != (want >= 0) {
			t.Errorf("SameHost(%d) = %d, %v; want %d", r, l, ok, want)
		}
	}
	if _, ok := eps[0].SameHost(4); ok {
		t.Error("SameHost(4) in a job of 4")
	}
	var notices atomic.Int32
	for _, e := range eps {
		e.SetNoticeHandler(func(int, transport.Key, transport.Notice) { notices.Add(1) })
		e.SetAMHandler(3, func(int, []byte, []byte) {})
	}
	keys := make([]transport.Key, 4)
	for i, e := range eps {
		_, keys[i] = expose(t, e, 64)
	}
	frames := func() uint64 { return eps[0].Remote().(*tcp.Endpoint).Stats().DataFrames() }
	ctx := context.Background()
	for _, target := range []int{0, 2, 1, 3} {
		r, err := eps[0].Region(target, keys[target], 64)
		if err != nil {
			t.Fatal(err)
		}
		_, isLocal := r.(*localRegion)
		if _, direct := r.(transport.WordRegion); direct {
			t.Errorf("region of rank %d implements WordRegion", target)
		}
		before := frames()
		if err := r.Put(0, []byte{1, 2, 3}, transport.TagNotice(transport.NoticeTag, 0), nil); err != nil {
			t.Fatal(err)
		}
		if err := eps[0].SendAM(target, 3, []byte{1}, nil); err != nil {
			t.Fatal(err)
		}
		if err := eps[0].Flush(ctx, target); err != nil {
			t.Fatal(err)
		}
		sent := frames() - before
		same := target%2 == 0
		if isLocal != same || (sent == 0) != same {
			t.Errorf("rank 0 to rank %d (same host: %v): a local handle: %v, %d TCP data frames", target, same, isLocal, sent)
		}
	}
	if err := eps[0].FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the notices", func() bool { return notices.Load() == 4 })
}

// waitFor waits until cond holds, failing the test after bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// noticeLog records the notices a waiter receives, by whichever way
// they come (the installed handler on another goroutine, or PollNotices
// on the waiter's own).
type noticeLog struct {
	mu    sync.Mutex
	bySrc map[int][]int32
	errs  []string
	key   transport.Key
}

// take is add as a transport.NoticeTaker, never done.
func (l *noticeLog) take(src int, key transport.Key, n transport.Notice) bool {
	l.add(src, key, n)
	return false
}

func (l *noticeLog) add(src int, key transport.Key, n transport.Notice) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if key != l.key || n.Kind() != transport.NoticeTag {
		l.errs = append(l.errs, fmt.Sprintf("notice from %d: key %#x, %+v; want key %#x", src, key, n, l.key))
		return
	}
	l.bySrc[src] = append(l.bySrc[src], n.Tag())
}

func (l *noticeLog) count(src int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.bySrc[src])
}

// TestWaitLocalAndRemote: a rank that waits as the engine does (poll,
// then sleep on the endpoint's doorbell) for notices from a peer on its
// host and one on another receives both, each promptly, in order per
// source, with global sources and the hybrid key — although its notice
// handler never calls Wake, so that a remote delivery must end the Sleep
// by itself. Sleeps are a minute long: a lost wake-up fails the test.
func TestWaitLocalAndRemote(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 1, 0})
	const waiter, remote, local = 0, 1, 2
	w := eps[waiter]
	buf, key := expose(t, w, 64)
	log := &noticeLog{bySrc: make(map[int][]int32), key: key}
	w.SetNoticeHandler(log.add)
	regions := map[int]transport.Region{}
	for _, s := range []int{remote, local} {
		r, err := eps[s].Region(waiter, key, len(buf))
		if err != nil {
			t.Fatal(err)
		}
		regions[s] = r
	}
	send := func(src, tag int) {
		t.Helper()
		b := []byte{byte(tag)}
		if err := regions[src].Put(8*src, b, transport.TagNotice(transport.NoticeTag, int32(tag)), nil); err != nil {
			t.Error(err)
		}
	}
	// wait waits, as the engine's sleepWait does, until src has sent n
	// notices; direct takes the local endpoint's notices with
	// PollNotices, as a notification request does.
	wait := func(src, n int, direct bool) time.Duration {
		start := time.Now()
		for log.count(src) < n {
			ticket := w.Prepare()
			if direct {
				w.PollNotices(log.take)
			} else {
				w.Poll()
			}
			if log.count(src) >= n {
				w.Cancel()
				break
			}
			w.Sleep(ticket, time.Minute)
			if time.Since(start) > bound {
				t.Fatalf("waited %v for notice %d of rank %d: wake-up lost", time.Since(start), n-1, src)
			}
		}
		return time.Since(start)
	}

	// One notice at a time, from each peer in turn: the waiter is most
	// likely asleep when each arrives.
	const rounds = 50
	var slowest time.Duration
	for i := 0; i < rounds; i++ {
		for _, src := range []int{local, remote} {
			go func() {
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				send(src, i)
			}()
			slowest = max(slowest, wait(src, i+1, i%2 == 1))
		}
	}
	t.Logf("slowest wake-up: %v", slowest)

	// Both peers streaming at once.
	const stream = 500
	var wg sync.WaitGroup
	for _, src := range []int{local, remote} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := rounds; i < rounds+stream; i++ {
				send(src, i)
			}
		}()
	}
	for _, src := range []int{local, remote} {
		wait(src, rounds+stream, src == local)
	}
	wg.Wait()

	log.mu.Lock()
	defer log.mu.Unlock()
	for _, e := range log.errs {
		t.Error(e)
	}
	for _, src := range []int{local, remote} {
		got := log.bySrc[src]
		if len(got) != rounds+stream {
			t.Errorf("%d notices from rank %d, want %d", len(got), src, rounds+stream)
		}
		for i, tag := range got {
			if int(tag) != i {
				t.Fatalf("notice %d from rank %d has tag %d: out of order", i, src, tag)
			}
		}
	}
	if len(log.bySrc) != 2 {
		t.Errorf("notices from ranks %v, want %d and %d", log.bySrc, local, remote)
	}
}

// TestSleepRemote: a remote active message ends a Sleep in progress, and
// one that was handled between its Prepare and it makes it return at
// once, although the handler does not call Wake; with nothing arriving,
// Sleep lasts its time.
func TestSleepRemote(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 1})
	got := make(chan struct{}, 16)
	eps[0].SetAMHandler(1, func(src int, hdr, payload []byte) { got <- struct{}{} })
	sleep := func(d time.Duration) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			eps[0].Sleep(eps[0].Prepare(), d)
			close(done)
		}()
		return done
	}
	ended := func(what string, done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(bound):
			t.Fatalf("Sleep did not end on %s", what)
		}
	}
	start := time.Now()
	ended("its own time", sleep(20*time.Millisecond))
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Sleep(20ms) returned after %v with nothing arriving", d)
	}

	// Handled after the Prepare, before the Sleep.
	ticket := eps[0].Prepare()
	if err := eps[1].SendAM(0, 1, nil, nil); err != nil {
		t.Fatal(err)
	}
	<-got
	early := make(chan struct{})
	go func() {
		eps[0].Sleep(ticket, time.Minute)
		close(early)
	}()
	ended("a remote arrival after its Prepare", early)

	// Arriving during it.
	done := sleep(time.Minute)
	time.Sleep(20 * time.Millisecond) // most likely asleep by now
	if err := eps[1].SendAM(0, 1, nil, nil); err != nil {
		t.Fatal(err)
	}
	ended("a remote arrival", done)
	<-got

	// Wake, as the engine's wakers call it.
	done = sleep(time.Minute)
	time.Sleep(20 * time.Millisecond)
	eps[0].Wake()
	ended("a Wake", done)
}

// TestFailureReportedOnce: a peer on this host that both inner endpoints
// see fail (shm through its control segment, TCP through a connection
// opened to it on purpose) is reported once; a peer on another host
// hears of it through TCP.
func TestFailureReportedOnce(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 0, 1})
	const victim = 1
	_, key := expose(t, eps[victim], 8)
	_, kr := unpack(key)
	type call struct {
		peer int
		err  error
	}
	var mu sync.Mutex
	calls := make([][]call, 3)
	var innerLocal, innerRemote atomic.Int32
	for i, e := range eps {
		e.SetFailureHandler(func(peer int, err error) {
			mu.Lock()
			calls[i] = append(calls[i], call{peer, err})
			mu.Unlock()
		})
		// Count the inner reports of rank 0 on their way to the hybrid
		// endpoint.
		if i == 0 {
			e.local.SetFailureHandler(func(peer int, err error) {
				innerLocal.Add(1)
				g, _ := e.global(peer)
				e.peerFailed(g, err)
			})
			e.remote.SetFailureHandler(func(peer int, err error) {
				innerRemote.Add(1)
				e.peerFailed(peer, err)
			})
		}
		if i != victim {
			if _, err := e.Region(victim, key, 8); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A TCP connection between the two ranks of host 0, which the hybrid
	// endpoint itself never opens.
	if _, err := eps[0].Remote().Region(victim, kr, 8); err != nil {
		t.Fatal(err)
	}
	if err := eps[victim].Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both inner endpoints of rank 0 to report the failure", func() bool {
		return innerLocal.Load() > 0 && innerRemote.Load() > 0
	})
	waitFor(t, "rank 2 to hear of the failure", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls[2]) > 0
	})
	time.Sleep(50 * time.Millisecond) // let a second report arrive
	mu.Lock()
	defer mu.Unlock()
	for _, i := range []int{0, 2} {
		if len(calls[i]) != 1 || calls[i][0].peer != victim || !errors.Is(calls[i][0].err, transport.ErrPeer) {
			t.Errorf("rank %d: failure handler calls %v, want one for rank %d with ErrPeer", i, calls[i], victim)
		}
	}
	if err := eps[0].SendAM(victim, 0, nil, nil); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("SendAM to a killed peer on this host: %v, want ErrPeer", err)
	}
}

// keyShift wraps a TCP endpoint so that its keys do not fit a hybrid
// key, and records what it exposes.
type keyShift struct {
	*tcp.Endpoint
	mu   sync.Mutex
	live map[transport.Key]bool
}

// wide returns key with a byte set past half a key, too large for the
// remote half of a hybrid key; narrow undoes it.
func wide(key transport.Key) transport.Key   { key[halfKey] |= 0x80; return key }
func narrow(key transport.Key) transport.Key { key[halfKey] &^= 0x80; return key }

func (k *keyShift) Expose(m []byte) (transport.Key, error) {
	key, err := k.Endpoint.Expose(m)
	if err == nil {
		k.mu.Lock()
		k.live[wide(key)] = true
		k.mu.Unlock()
	}
	return wide(key), err
}

func (k *keyShift) Unexpose(key transport.Key) error {
	k.mu.Lock()
	delete(k.live, key)
	k.mu.Unlock()
	return k.Endpoint.Unexpose(narrow(key))
}

// shmRecorder records what an shm endpoint exposes.
type shmRecorder struct {
	*shm.Endpoint
	mu   sync.Mutex
	live map[transport.Key]bool
}

func (s *shmRecorder) Expose(m []byte) (transport.Key, error) {
	key, err := s.Endpoint.Expose(m)
	if err == nil {
		s.mu.Lock()
		s.live[key] = true
		s.mu.Unlock()
	}
	return key, err
}

func (s *shmRecorder) Unexpose(key transport.Key) error {
	s.mu.Lock()
	delete(s.live, key)
	s.mu.Unlock()
	return s.Endpoint.Unexpose(key)
}

// TestExposeKeySpace: an inner key too large for the hybrid key fails
// Expose with ErrKeySpace, and both inner exposures are withdrawn.
func TestExposeKeySpace(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 1})
	ls := &shmRecorder{Endpoint: eps[0].local.(*shm.Endpoint), live: map[transport.Key]bool{}}
	rs := &keyShift{Endpoint: eps[0].remote.(*tcp.Endpoint), live: map[transport.Key]bool{}}
	e, err := New(0, []int{0, 1}, ls, rs)
	if err != nil {
		t.Fatal(err)
	}
	b := mem.Alloc(8)
	defer mem.Free(b)
	if _, err := e.Expose(b); !errors.Is(err, ErrKeySpace) {
		t.Fatalf("Expose with a remote key beyond %d bytes: %v, want ErrKeySpace", halfKey, err)
	}
	if len(ls.live) != 0 || len(rs.live) != 0 {
		t.Errorf("exposures left behind: local %v, remote %v", ls.live, rs.live)
	}
}

// TestNewChecks: New refuses endpoints that do not match the job.
func TestNewChecks(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 1, 0})
	l, r := eps[2].local, eps[2].remote
	for _, c := range []struct {
		name          string
		rank          int
		hosts         []int
		local, remote transport.Endpoint
	}{
		{"rank out of range", 3, []int{0, 1, 0}, l, r},
		{"nil endpoint", 2, []int{0, 1, 0}, nil, r},
		{"remote of another rank", 0, []int{0, 1, 0}, l, r},
		{"remote of another size", 2, []int{0, 1, 0, 1}, l, r},
		{"local of another host", 2, []int{1, 1, 0}, l, r},
		{"local not a Sleeper", 2, []int{0, 1, 0}, r, r},
	} {
		if _, err := New(c.rank, c.hosts, c.local, c.remote); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestPollAllocs: polling, which waiters do in their spin, allocates
// nothing.
func TestPollAllocs(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 0})
	h := func(int, transport.Key, transport.Notice) bool { return false }
	eps[0].PollNotices(h) // the first call makes the translator
	if n := testing.AllocsPerRun(100, func() { eps[0].PollNotices(h) }); n != 0 {
		t.Errorf("PollNotices: %v allocations per call", n)
	}
	if n := testing.AllocsPerRun(100, func() { eps[0].Poll() }); n != 0 {
		t.Errorf("Poll: %v allocations per call", n)
	}
}
