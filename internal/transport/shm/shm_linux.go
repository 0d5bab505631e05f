package shm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/sys"
	"github.com/narma-rma/narma/internal/transport"
)

// Config describes an endpoint to New.
type Config struct {
	// Rank and Size place the endpoint in the job.
	Rank, Size int
	// Heap is this process's shared heap, installed as mem's source so
	// that the memory the engine exposes lies in segments.
	Heap *Heap
	// Exchange is the job's start-up allgather (the launcher's bootstrap):
	// every rank passes its data and gets every rank's, indexed by rank.
	// New calls it twice, the second time as a barrier.
	Exchange func(ctx context.Context, data []byte) ([][]byte, error)
	// NoticeSlots is the capacity of the endpoint's notice ring, a power
	// of two (0: 1024).
	NoticeSlots int
	// RingSize is the size in bytes of each incoming active-message ring,
	// a power of two of at least 4096 (0: chosen from Size).
	RingSize int
	// NoSingleCopy sends large active messages through the rings only,
	// never by single copy (cma_linux.go).
	NoSingleCopy bool
	// CheckInterval is how often peers are checked for failure (0: 20ms).
	// A peer whose process is gone is reported within about this time.
	CheckInterval time.Duration
}

// defaultRingSize gives each incoming ring 4 MiB / size, within
// [64 KiB, 1 MiB]: a 1 MiB message streams in four records at 2 ranks.
func defaultRingSize(size int) int {
	rs := 1 << 20
	for rs > 64<<10 && rs*size > 4<<20 {
		rs >>= 1
	}
	return rs
}

// caps: operations are loads and stores on mapped memory, complete at the
// target when they return.
var caps = transport.Caps{Name: "shm", Synchronous: true, Direct: true}

// Peer states as the endpoint sees them.
const (
	peerOK uint32 = iota
	peerClosed
	peerFailed
)

// Endpoint is one rank of a job whose ranks are processes on one host. It
// implements transport.Endpoint and transport.Poller; its methods are safe
// for concurrent use.
type Endpoint struct {
	rank, size int
	heap       *Heap
	job        string
	own        *ctl   // this endpoint's control segment
	peers      []*ctl // every rank's control segment, own included
	pids       []int
	shared     bool // other ranks of the job are goroutines of this process
	// barrier: this process is registered for global memory barriers,
	// which the endpoint's sleepers run before their last look
	// (membarrier_linux.go).
	barrier bool
	cma     bool // large messages go by single copy (CMAStatus)
	// cmaPids are the processes single-copy reads come from, by source:
	// pids, in a slice of their own that only the drainer reads (tests
	// break an entry to make the reads fail, which checkPeers, reading
	// pids, must not see).
	cmaPids []int

	cmaMu    sync.Mutex
	cmaErrs  map[int]error // per source: why a single-copy read failed
	interval time.Duration

	closed    atomic.Bool
	peerState []atomic.Uint32
	errClosed []error // per peer: it closed
	errFailed []error // per peer: it failed

	transport.Handlers

	// The consumer side: whoever holds draining runs the handlers.
	draining    drainLock
	ringStalled []atomic.Bool // per source: its ring waits for a handler (written with draining held)
	ringBroken  []bool        // per source: its ring held a corrupt record and is read no more (draining held)
	partial     []*assembly   // per source: message being reassembled, or nil
	spare       []*assembly   // per source: a finished assembly, its buffer to reuse
	scratch     []byte        // for records that wrap around the ring end

	polled atomic.Bool // Poll was called since the progress goroutine last looked
	kick   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	send []sender // per target

	expMu   sync.Mutex
	nextGen uint64
	free    []int // free exposure table indices

}

// sender is the producer state of this endpoint on one target's ring.
type sender struct {
	mu    sync.Mutex
	tail  uint64 // next write position
	head  uint64 // last head read from the consumer
	rdv   uint64 // single-copy messages sent
	noCMA bool   // the target could not read this process's memory
}

// assembly is a message arriving in several records.
type assembly struct {
	id  uint8
	hdr []byte
	buf []byte
	got int
}

var (
	_ transport.Endpoint = (*Endpoint)(nil)
	_ transport.Poller   = (*Endpoint)(nil)
)

// ErrLayout reports a peer's control segment that is not what this
// endpoint expects (another version, another job geometry).
var ErrLayout = errors.New("shm: peer control segment does not match")

// New creates this rank's control segment, exchanges its name with the
// other ranks through cfg.Exchange, maps theirs and starts the endpoint's
// progress goroutine. Every rank of the job must call it.
func New(ctx context.Context, cfg Config) (*Endpoint, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("shm: rank %d of %d", cfg.Rank, cfg.Size)
	}
	if cfg.Heap == nil || cfg.Exchange == nil {
		return nil, errors.New("shm: Config needs a Heap and an Exchange")
	}
	slots := cfg.NoticeSlots
	if slots == 0 {
		slots = 1024
	}
	rs := cfg.RingSize
	if rs == 0 {
		rs = defaultRingSize(cfg.Size)
	}
	if slots < 2 || slots&(slots-1) != 0 || rs < 4096 || rs&(rs-1) != 0 {
		return nil, fmt.Errorf("shm: %d notice slots and %d-byte rings: want powers of two, rings of at least 4096", slots, rs)
	}
	interval := cfg.CheckInterval
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	job := cfg.Heap.Job()
	name := "r" + strconv.Itoa(cfg.Rank)
	if !cfg.NoSingleCopy {
		sys.AllowPeers()
	}
	b, err := createSegment(segmentPath(job, name), (ctlSize(cfg.Size, slots, rs)+pageSize-1)&^(pageSize-1))
	if err != nil {
		return nil, err
	}
	h := (*header)(unsafe.Pointer(&b[0]))
	h.size, h.rank, h.pid = uint32(cfg.Size), uint32(cfg.Rank), uint32(os.Getpid())
	h.slots, h.amRingSize = uint32(slots), uint32(rs)
	h.magic = magic
	own, err := layout(b)
	if err != nil {
		sys.Retire(b)
		return nil, err
	}
	for i := range own.slots {
		own.slots[i].storeSeq(uint64(i), false)
	}
	barrier := barrierReady()
	if barrier {
		h.barrier = 1
	}
	own.relaxed = barrier
	h.state.Store(stateOpen)

	e := &Endpoint{
		rank: cfg.Rank, size: cfg.Size, heap: cfg.Heap, job: job, own: own,
		peers: make([]*ctl, cfg.Size), pids: make([]int, cfg.Size), interval: interval,
		peerState: make([]atomic.Uint32, cfg.Size),
		errClosed: make([]error, cfg.Size), errFailed: make([]error, cfg.Size),
		partial: make([]*assembly, cfg.Size), spare: make([]*assembly, cfg.Size),
		ringStalled: make([]atomic.Bool, cfg.Size), ringBroken: make([]bool, cfg.Size),
		kick: make(chan struct{}, 1), done: make(chan struct{}), barrier: barrier,
		send: make([]sender, cfg.Size),
		free: make([]int, 0, maxExpose),
	}
	for i := maxExpose - 1; i >= 0; i-- {
		e.free = append(e.free, i)
	}
	fail := func(err error) (*Endpoint, error) {
		h.state.Store(stateClosed)
		return nil, err
	}
	all, err := cfg.Exchange(ctx, []byte(name))
	if err != nil {
		return fail(fmt.Errorf("shm: exchange of segment names: %w", err))
	}
	if len(all) != cfg.Size {
		return fail(fmt.Errorf("shm: exchange returned %d names for %d ranks", len(all), cfg.Size))
	}
	for r, nm := range all {
		e.errClosed[r] = fmt.Errorf("shm: rank %d closed: %w", r, transport.ErrPeer)
		e.errFailed[r] = fmt.Errorf("shm: rank %d failed: %w", r, transport.ErrPeer)
		if r == cfg.Rank {
			e.peers[r], e.pids[r] = own, os.Getpid()
			continue
		}
		if string(nm) != "r"+strconv.Itoa(r) {
			return fail(fmt.Errorf("shm: rank %d announced segment %q", r, nm))
		}
		pb, err := openSegment(segmentPath(job, string(nm)))
		if err != nil {
			return fail(err)
		}
		pc, err := layout(pb)
		if err != nil || int(pc.hdr.size) != cfg.Size || int(pc.hdr.rank) != r {
			sys.Retire(pb)
			return fail(fmt.Errorf("%w: rank %d (%v)", ErrLayout, r, err))
		}
		pc.relaxed = barrier && pc.hdr.barrier == 1
		e.peers[r], e.pids[r] = pc, int(pc.hdr.pid)
	}
	if _, err := cfg.Exchange(ctx, nil); err != nil {
		return fail(fmt.Errorf("shm: start-up barrier: %w", err))
	}
	for r, pid := range e.pids {
		e.shared = e.shared || (r != cfg.Rank && pid == os.Getpid())
	}
	if !cfg.NoSingleCopy {
		e.cma, _ = CMAStatus()
	}
	e.cmaPids = slices.Clone(e.pids)
	// Every rank has mapped every control segment: the names are no
	// longer needed, and removing them now leaves nothing behind whatever
	// happens to the job.
	os.Remove(segmentPath(job, name))
	e.wg.Add(1)
	go e.progress()
	return e, nil
}

// Rank returns the endpoint's rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size returns the number of ranks.
func (e *Endpoint) Size() int { return e.size }

// Caps reports Caps{Name: "shm", Synchronous: true, Direct: true}, with
// every rank on this host (HostRanks) and OneProcess if other ranks are
// goroutines of this process.
func (e *Endpoint) Caps() transport.Caps {
	c := caps
	c.HostRanks, c.OneProcess = e.size, e.shared
	return c
}

// peerErr returns the error for an operation aimed at rank target, or nil.
func (e *Endpoint) peerErr(target int) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	if uint(target) >= uint(e.size) {
		return fmt.Errorf("shm: rank %d out of range (size %d)", target, e.size)
	}
	switch e.peerState[target].Load() {
	case peerClosed:
		return e.errClosed[target]
	case peerFailed:
		return e.errFailed[target]
	}
	// The target's own word: a closed peer is refused at once, without
	// waiting for the next check.
	if s := e.peers[target].hdr.state.Load(); s != stateOpen {
		if s == stateClosed {
			return e.errClosed[target]
		}
		return e.errFailed[target]
	}
	return nil
}

// Expose makes m, which must lie in one segment of the endpoint's heap
// (memory from mem.Alloc while the heap is mem's source), accessible to
// the other ranks.
func (e *Endpoint) Expose(m []byte) (transport.Key, error) {
	if e.closed.Load() {
		return 0, transport.ErrClosed
	}
	var seg uint32
	var off int
	if len(m) > 0 {
		var ok bool
		seg, off, ok = e.heap.locate(m)
		if !ok {
			return 0, errors.New("shm: memory is not in a shared segment of this process (allocate it with the library's allocator while the transport is set up)")
		}
	}
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if len(e.free) == 0 {
		return 0, fmt.Errorf("shm: more than %d regions exposed", maxExpose)
	}
	idx := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	e.nextGen++
	x := &e.own.exposures[idx]
	x.pid, x.seg, x.off, x.len = uint32(os.Getpid()), seg, uint64(off), uint64(len(m))
	x.gen.Store(e.nextGen)
	return transport.Key(e.nextGen<<keyIdxBit | uint64(idx)), nil
}

// Unexpose withdraws a region: handles on it fail with
// transport.ErrNoRegion from then on.
func (e *Endpoint) Unexpose(key transport.Key) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	idx := int(key & (1<<keyIdxBit - 1))
	gen := uint64(key) >> keyIdxBit
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if idx >= maxExpose || gen == 0 || e.own.exposures[idx].gen.Load() != gen {
		return fmt.Errorf("shm: unexpose key %d at rank %d: %w", key, e.rank, transport.ErrNoRegion)
	}
	e.own.exposures[idx].gen.Store(0)
	e.free = append(e.free, idx)
	return nil
}

// Region returns a handle for the region key exposed by target, limited
// to its first size bytes.
func (e *Endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	if err := e.peerErr(target); err != nil {
		return nil, err
	}
	idx := int(key & (1<<keyIdxBit - 1))
	gen := uint64(key) >> keyIdxBit
	t := e.peers[target]
	if idx >= maxExpose || gen == 0 {
		return nil, fmt.Errorf("shm: key %d at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	x := &t.exposures[idx]
	if x.gen.Load() != gen {
		return nil, fmt.Errorf("shm: key %d at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	pid, seg, off, n := x.pid, x.seg, x.off, x.len
	if size < 0 || uint64(size) > n {
		return nil, fmt.Errorf("shm: handle of %d bytes on a region of %d: %w", size, n, transport.ErrBounds)
	}
	r := &region{ep: e, target: target, exp: x, gen: gen, key: key}
	if n > 0 {
		segMem, err := e.heap.attach(pid, seg)
		if err != nil {
			return nil, fmt.Errorf("shm: region %d of rank %d: %w", key, target, err)
		}
		if off > uint64(len(segMem)) || n > uint64(len(segMem))-off {
			return nil, fmt.Errorf("shm: region %d of rank %d lies outside its segment: %w", key, target, transport.ErrBounds)
		}
		// Keep the capacity up to the segment's end: the sub-word
		// atomics need the aligned word around each element.
		r.mem = segMem[off : off+uint64(size)]
	}
	if x.gen.Load() != gen {
		return nil, fmt.Errorf("shm: key %d at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	return r, nil
}

// Flush reports a closed endpoint, a bad rank, a failed peer or ctx's
// error: every operation is complete at its target when it returns.
func (e *Endpoint) Flush(ctx context.Context, target int) error {
	if err := e.peerErr(target); err != nil {
		return err
	}
	return ctx.Err()
}

// FlushAll reports a closed endpoint or ctx's error: every operation is
// complete at its target when it returns.
func (e *Endpoint) FlushAll(ctx context.Context) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	return ctx.Err()
}

// Close marks the endpoint closed in its control segment (peers then see
// it as closed, not failed), stops its progress goroutine and releases its
// mappings of other ranks' segments. Closing twice returns
// transport.ErrClosed.
func (e *Endpoint) Close() error { return e.shutdown(stateClosed) }

// shutdown stops the endpoint, leaving state (closed, or failed for
// Kill) in its control segment for the peers to see.
func (e *Endpoint) shutdown(state uint32) error {
	if !e.closed.CompareAndSwap(false, true) {
		return transport.ErrClosed
	}
	e.own.hdr.state.Store(state)
	close(e.done)
	e.own.hdr.bell.Add(1)
	sys.FutexWake(&e.own.hdr.bell)
	e.wg.Wait()
	return nil
}

// ring wakes target's progress goroutine if it sleeps on its doorbell.
func (e *Endpoint) ring(t *ctl) {
	if t.hdr.sleepers.Load() != 0 {
		t.hdr.bell.Add(1)
		sys.FutexWake(&t.hdr.bell)
	}
}

// notify queues notice n about region key at target, waiting while the
// target's ring is full.
func (e *Endpoint) notify(target int, key transport.Key, n transport.Notice) error {
	t := e.peers[target]
	raceRelease()
	for spin := 0; ; spin++ {
		if t.tryPush(e.rank, key, n) {
			e.ring(t)
			return nil
		}
		e.ring(t)
		if err := e.backoff(target, spin); err != nil {
			return err
		}
	}
}

// drainLock is the endpoint's right to drain its rings: taken with a
// compare-and-swap, given back with a release store (a drain that ends
// need not wait for its store to reach the other goroutines).
type drainLock struct{ v uint32 }

func (l *drainLock) tryLock() bool { return atomic.CompareAndSwapUint32(&l.v, 0, 1) }
func (l *drainLock) unlock()       { mem.StoreRelease32(&l.v, 0) }
func (l *drainLock) held() bool    { return atomic.LoadUint32(&l.v) != 0 }

// backoffYields is how many rounds of a wait for room at a target yield
// the processor before they sleep: a ring fills in the normal course of a
// stream (a large message fills it several times over while the target
// drains it), and a sleep there, some 50 us at the least, would cost more
// than the copy of a whole ring. About a millisecond of yields.
const backoffYields = 1024

// backoff waits a little for room at target (round spin of a wait):
// yields, then sleeps growing to a millisecond (a target that does not
// drain for that long is busy or stopped). It fails if the target or this
// endpoint is gone.
func (e *Endpoint) backoff(target int, spin int) error {
	if spin&15 == 0 || spin >= backoffYields {
		if err := e.peerErr(target); err != nil {
			return err
		}
	}
	if spin < backoffYields {
		sys.Yield()
		return nil
	}
	d := time.Duration(spin-backoffYields+1) * 10 * time.Microsecond
	time.Sleep(min(d, time.Millisecond))
	return nil
}

// maxRecord is the largest record written to a ring of size rs: a quarter
// of it, so that a reader and a writer always overlap.
func maxRecord(rs int) int { return rs / 4 }

// SendAM copies hdr and payload into target's ring for this endpoint and
// returns; a message larger than a record is split into several. It waits
// while the ring is full (the target drains it in the background).
func (e *Endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	if err := e.peerErr(target); err != nil {
		return err
	}
	if id >= transport.MaxAMID {
		return fmt.Errorf("shm: AMID %d out of range", id)
	}
	t := e.peers[target]
	data := t.ringData[e.rank]
	rh := t.ringHeads[e.rank]
	rs := len(data)
	maxRec := maxRecord(rs)
	if recHead+len(hdr) > maxRec || len(payload) > 1<<31 {
		return fmt.Errorf("shm: active message with a %d-byte header and %d-byte payload: %w", len(hdr), len(payload), transport.ErrTooLarge)
	}
	s := &e.send[target]
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(payload) >= cmaMin && e.cma && !s.noCMA {
		sent, err := e.sendRemote(target, s, id, hdr, payload)
		if err != nil || sent {
			return err
		}
		s.noCMA = true // the target cannot read this process: the ring from now on
	}
	first := true
	rest := payload
	for first || len(rest) > 0 {
		piece := maxRec - recHead
		if first {
			piece -= len(hdr)
		}
		piece = min(piece, len(rest))
		rec := recHeader{length: uint32(recHead + piece), id: uint8(id), total: uint32(len(payload))}
		var h []byte
		if first {
			rec.flags |= recFirst
			rec.length += uint32(len(hdr))
			rec.hdrLen = uint16(len(hdr))
			h = hdr
		}
		if piece == len(rest) {
			rec.flags |= recLast
		}
		if err := e.writeRecord(target, s, data, rh, rec, h, rest[:piece]); err != nil {
			return err
		}
		rest = rest[piece:]
		first = false
	}
	return nil
}

// writeRecord writes record rec, its head followed by hdr and body, into
// the ring data of target for this endpoint (s locked), waiting for room,
// and publishes it.
func (e *Endpoint) writeRecord(target int, s *sender, data []byte, rh *amRing, rec recHeader, hdr, body []byte) error {
	t := e.peers[target]
	rs := len(data)
	need := uint64(pad8(int(rec.length)))
	// Room for the record and the first word of the next one, which
	// publishRec's caller clears.
	for spin := 0; s.tail+need+8-s.head > uint64(rs); spin++ {
		s.head = rh.loadHead()
		if s.tail+need+8-s.head <= uint64(rs) {
			break
		}
		e.ring(t)
		if err := e.backoff(target, spin); err != nil {
			return err
		}
	}
	var rest [8]byte
	rec.encodeRest(&rest)
	raceRelease()
	start := s.tail
	pos := start + 8
	ringWrite(data, pos, rest[:])
	pos += 8
	ringWrite(data, pos, hdr)
	pos += uint64(len(hdr))
	ringWrite(data, pos, body)
	s.tail += need
	// Clear the first word of the next record's place before this
	// record is published, so that whatever an earlier lap left there
	// (a payload's bytes, say) cannot pass for a published record when
	// the consumer comes to it: it sees the zero or a later store.
	mem.StoreRelease64(recWord(data, s.tail), 0)
	publishRec(data, start, rec.length)
	e.ring(t)
	return nil
}

// Poll runs the handlers of the notices and active messages that have
// arrived, on the calling goroutine (after waiting for another goroutine
// that is draining, if any); it reports whether it ran any
// (transport.Poller).
func (e *Endpoint) Poll() bool { return e.poll(nil) }

// PollNotices is Poll with h in place of the notice handler
// (transport.Poller).
func (e *Endpoint) PollNotices(h transport.NoticeHandler) bool { return e.poll(h) }

// poll is Poll with notices given to h, or to the installed handler if h
// is nil.
func (e *Endpoint) poll(h transport.NoticeHandler) bool {
	if !e.polled.Load() {
		e.polled.Store(true)
	}
	// Nothing pending, and nobody draining what was: done, with loads
	// only (the common case of a waiter's spin). The order matters: a
	// handler still running for an arrival that pending no longer shows
	// holds draining until it returns.
	if !e.pending() && !e.draining.held() {
		return false
	}
	for !e.draining.tryLock() {
		// Another goroutine (the background progress, say) is draining:
		// wait for it, so that what arrived before Poll was called has
		// been delivered when Poll returns. Handlers never block.
		if e.closed.Load() {
			return false
		}
		runtime.Gosched()
	}
	n := e.drain(h)
	e.draining.unlock()
	return n
}

// Yield gives the processor to another thread of any process, and first,
// if ranks of the job are goroutines of this process (a group of
// goroutine ranks), to the other goroutines (transport.Poller):
// sched_yield alone would leave them queued behind the caller until the
// runtime preempts it (10 ms). A rank alone in its process does not call
// Gosched, which wakes an idle thread of the runtime each time.
func (e *Endpoint) Yield() {
	if e.shared {
		runtime.Gosched()
	}
	sys.Yield()
}

// Park tells the endpoint that its caller stops polling (and sleeps until
// a handler wakes it): the progress goroutine then sleeps on the doorbell
// and every arrival wakes it (transport.Poller).
func (e *Endpoint) Park() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Prepare registers the caller as a sleeper on the endpoint's doorbell
// and returns the doorbell's count as its ticket (transport.Sleeper):
// from now on every producer rings, and every ring changes the count. It
// runs the sleepers' global barrier (lastLook) after the registration and
// the ticket, so that the caller's next look sees every notice published
// before (whether or not its producer saw the registration and rang).
func (e *Endpoint) Prepare() uint32 {
	hdr := e.own.hdr
	hdr.sleepers.Add(1)
	t := hdr.bell.Load()
	// The barrier comes after the ticket: a producer that rang before
	// the ticket was taken may still hold its notice in its store
	// buffer, and the caller's next look must see it.
	if !e.lastLook() {
		// Producers may not see the registration: a ticket that is not
		// the doorbell's count makes the Sleep return at once.
		t++
	}
	return t
}

// Sleep sleeps on the endpoint's doorbell for at most d, unless it rang
// since the Prepare that gave ticket (the futex compares the count with
// the ticket), and ends that registration (transport.Sleeper).
func (e *Endpoint) Sleep(ticket uint32, d time.Duration) {
	hdr := e.own.hdr
	if !e.pendingRacy() && !e.closed.Load() {
		sys.FutexWait(&hdr.bell, ticket, d)
	}
	hdr.sleepers.Add(^uint32(0))
}

// Cancel ends the registration of Prepare (transport.Sleeper).
func (e *Endpoint) Cancel() { e.own.hdr.sleepers.Add(^uint32(0)) }

// WakeRank makes rank r's sleepers look again (transport.Waker): the
// engine calls it after changing a word of r's memory itself. Every
// sleeper that registered (Prepare) before it is woken; one that
// registers after it sees the change when it looks.
func (e *Endpoint) WakeRank(r int) {
	if r < 0 || r >= len(e.peers) {
		return
	}
	e.ring(e.peers[r])
}

// Wake rings the endpoint's own doorbell (transport.Sleeper): every
// goroutine that registered before it, asleep or about to sleep, looks
// again.
func (e *Endpoint) Wake() {
	hdr := e.own.hdr
	hdr.bell.Add(1)
	sys.FutexWake(&hdr.bell)
}

// pending reports whether anything waits to be drained: exactly if the
// caller holds draining, else as a hint (poll's fast path, progress),
// which a drain under the lock settles.
func (e *Endpoint) pending() bool {
	if e.own.noticePending(e.own.hdr.loadDeq()) {
		return true
	}
	for src, rh := range e.own.ringHeads {
		if _, ok := recAt(e.own.ringData[src], rh.loadHead()); ok && !e.ringStalled[src].Load() {
			return true
		}
	}
	return false
}

// drain runs the handlers for everything that has arrived, notices going
// to h (the installed handler if h is nil); draining is held. It reports
// whether there was anything.
func (e *Endpoint) drain(h transport.NoticeHandler) bool {
	did := false
	if h == nil {
		h = e.Notice()
	}
	// Arrivals wait for their handler: a peer may send as soon as the
	// start-up barrier is passed, before this rank installed its handlers.
	for h != nil {
		deq := e.own.hdr.loadDeq()
		src, key, n, ok := e.own.pop(deq)
		if !ok {
			break
		}
		raceAcquire()
		e.own.hdr.storeDeq(deq + 1)
		did = true
		if src >= e.size {
			continue // not from a rank of this job: drop
		}
		h(src, key, n)
	}
	for src := range e.own.ringHeads {
		if e.drainRing(src) {
			did = true
		}
	}
	return did
}

// drainRing handles the records published in the ring of src; draining
// is held. A ring whose record waits for its handler (installed after
// the start-up barrier) is marked stalled, so that it does not keep
// pending true (the progress goroutine would spin on it); every drain
// looks at it again.
func (e *Endpoint) drainRing(src int) bool {
	if e.ringBroken[src] {
		return false
	}
	rh := e.own.ringHeads[src]
	data := e.own.ringData[src]
	head := rh.loadHead()
	maxRec := maxRecord(len(data))
	did := false
	for {
		w, ok := recAt(data, head)
		if !ok {
			break
		}
		raceAcquire()
		did = true
		var rb [8]byte
		ringRead(data, head+8, rb[:])
		rec := decodeRec(w, &rb)
		if int(rec.length) < recHead || int(rec.length) > maxRec || int(rec.hdrLen) > int(rec.length)-recHead {
			// A corrupt ring: the peer is broken. Read no more of it.
			e.ringBroken[src] = true
			return true
		}
		if rec.flags&recFirst != 0 && e.AM(transport.AMID(rec.id)) == nil {
			// No handler yet: leave the rest of this ring for a later
			// drain (the progress goroutine retries on its timeout).
			e.ringStalled[src].Store(true)
			return did
		}
		e.ringStalled[src].Store(false)
		body := int(rec.length) - recHead
		b := ringSlice(data, head+recHead, body)
		if b == nil {
			if cap(e.scratch) < body {
				e.scratch = make([]byte, body)
			}
			b = e.scratch[:body]
			ringRead(data, head+recHead, b)
		}
		if rec.flags&recRemote != 0 {
			e.remote(src, rh, rec, b)
		} else {
			e.record(src, rec, b)
		}
		head += uint64(pad8(int(rec.length)))
		rh.storeHead(head)
	}
	return did
}

// record handles one record of src with body b (header then payload
// piece); draining is held.
func (e *Endpoint) record(src int, rec recHeader, b []byte) {
	if rec.flags&recFirst != 0 {
		hdr, piece := b[:rec.hdrLen:rec.hdrLen], b[rec.hdrLen:]
		if rec.flags&recLast != 0 {
			e.deliverAM(src, rec.id, hdr, piece)
			return
		}
		a := e.reassembly(src, int(rec.total))
		a.id, a.hdr = rec.id, append(a.hdr[:0], hdr...)
		a.got = copy(a.buf, piece)
		e.partial[src] = a
		return
	}
	a := e.partial[src]
	if a == nil {
		return // a continuation without a start: drop
	}
	a.got += copy(a.buf[a.got:], b)
	if rec.flags&recLast != 0 {
		e.partial[src] = nil
		e.deliverAM(src, a.id, a.hdr, a.buf[:a.got])
		a.release()
	}
}

// reassembly returns the assembly of src, its buffer n bytes long. The
// buffer of the source's last large message is reused (a handler keeps
// nothing it is given): a fresh one per message costs its zeroing and,
// once the runtime has returned it to the system, a page fault per page.
func (e *Endpoint) reassembly(src, n int) *assembly {
	a := e.spare[src]
	if a == nil {
		a = &assembly{}
		e.spare[src] = a
	}
	if cap(a.buf) < n {
		a.buf = make([]byte, n)
	}
	a.buf = a.buf[:n]
	return a
}

// release drops a's buffer after its message was delivered if it is too
// large to keep for the next one.
func (a *assembly) release() {
	if cap(a.buf) > maxSpareAssembly {
		a.buf = nil
	}
}

// maxSpareAssembly is the largest reassembly buffer kept per source for
// the next large message.
const maxSpareAssembly = 4 << 20

func (e *Endpoint) deliverAM(src int, id uint8, hdr, payload []byte) {
	if h := e.AM(transport.AMID(id)); h != nil {
		h(src, hdr, payload[:len(payload):len(payload)])
	}
}

// progress drains in the background, so that handlers run even when
// nobody polls, and watches the peers. While some goroutine of this
// process polls (Poll sets polled, which it clears) or drains, it naps on
// a timer, so that producers need not wake it; otherwise it sleeps on the
// doorbell, which producers ring. (Were it to sleep while another
// goroutine drains, an arrival published after that one's last look and
// before this one registered would wait for the end of the sleep, which
// no producer ends: it found nobody to ring for.)
func (e *Endpoint) progress() {
	defer e.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	nextCheck := time.Now().Add(e.interval)
	hdr := e.own.hdr
	for {
		select {
		case <-e.done:
			return
		default:
		}
		if e.draining.tryLock() {
			did := e.drain(nil)
			e.draining.unlock()
			if did {
				continue
			}
		}
		if now := time.Now(); now.After(nextCheck) {
			e.checkPeers()
			nextCheck = now.Add(e.interval)
		}
		if e.polled.Swap(false) || e.draining.held() {
			timer.Reset(2 * time.Millisecond)
			select {
			case <-timer.C:
			case <-e.kick:
				e.polled.Store(false)
				if !timer.Stop() {
					<-timer.C
				}
			case <-e.done:
				return
			}
			continue
		}
		b := hdr.bell.Load()
		hdr.sleepers.Add(1)
		if !e.lastLook() {
			hdr.sleepers.Add(^uint32(0))
			runtime.Gosched()
			continue
		}
		if e.draining.held() {
			// Another goroutine drains, and may have made its last
			// look before an arrival whose producer found nobody
			// registered to ring for: look again once it is done,
			// rather than sleep through that arrival (the model in
			// model/ring.pml finds that lost wake-up).
			hdr.sleepers.Add(^uint32(0))
			for e.draining.held() && !e.closed.Load() {
				runtime.Gosched()
			}
			continue
		}
		if e.pending() {
			hdr.sleepers.Add(^uint32(0))
			continue
		}
		runtime.Gosched()
		sys.FutexWait(&hdr.bell, b, e.interval)
		hdr.sleepers.Add(^uint32(0))
		select {
		case <-e.kick: // stale: we are about to drain anyway
		default:
		}
	}
}

// lastLook is called by a sleeper after it registered (hdr.sleepers) and
// before it looks for arrivals a last time (in Prepare, for the engine's
// waiters, whose Poll after it is that look): producers that publish with
// release stores (ctl.relaxed) rely on it to make their stores visible
// to that look, or their load of hdr.sleepers see the registration. It
// reports false if the barrier failed: the caller must then not sleep.
func (e *Endpoint) lastLook() bool {
	return !e.barrier || sys.GlobalBarrier()
}

// pendingRacy is pending for a goroutine that does not hold draining: a
// hint only.
func (e *Endpoint) pendingRacy() bool {
	if e.draining.held() {
		return false
	}
	return e.pending()
}

// checkPeers looks for peers that closed or whose process is gone, and
// reports the failed ones to the failure handler.
func (e *Endpoint) checkPeers() {
	me := os.Getpid()
	for r, p := range e.peers {
		if r == e.rank || e.peerState[r].Load() != peerOK {
			continue
		}
		// The progress goroutine and a drainer waiting for a peer
		// (awaitOrigin) may check at once: whoever changes the state
		// reports it.
		switch p.hdr.state.Load() {
		case stateClosed:
			e.peerState[r].CompareAndSwap(peerOK, peerClosed)
			continue
		case stateOpen:
			if e.pids[r] == me || sys.Alive(e.pids[r]) {
				continue
			}
		}
		if p.hdr.state.Load() == stateClosed {
			e.peerState[r].CompareAndSwap(peerOK, peerClosed)
			continue
		}
		if !e.peerState[r].CompareAndSwap(peerOK, peerFailed) {
			continue
		}
		if h := e.Failure(); h != nil {
			h(r, e.errFailed[r])
		}
	}
}

// region is a handle on a region exposed by another rank (or this one),
// mapped into this process.
type region struct {
	ep     *Endpoint
	target int
	exp    *exposure
	gen    uint64
	key    transport.Key
	mem    []byte
}

var _ transport.DirectRegion = (*region)(nil)
var _ transport.Waker = (*Endpoint)(nil)

func (r *region) check() error {
	if err := r.ep.peerErr(r.target); err != nil {
		return err
	}
	if r.exp.gen.Load() != r.gen {
		return transport.ErrNoRegion
	}
	return nil
}

// Size returns the size of the handle in bytes.
func (r *region) Size() int { return len(r.mem) }

// Direct returns the mapped memory behind the handle.
func (r *region) Direct() []byte { return r.mem }

// noticeAfter delivers n, if any, after an access.
func (r *region) noticeAfter(n transport.Notice) error {
	if n.Kind() == transport.NoticeNone {
		return nil
	}
	return r.ep.notify(r.target, r.key, n)
}
