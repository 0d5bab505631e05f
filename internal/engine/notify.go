package engine

import (
	"context"
	"encoding/binary"
	"math/bits"
	"runtime"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Notified Access, target side.
//
// A notified operation carries a transport.Notice that the transport
// delivers to handleNotice at the target after the operation's data. What
// happens then depends on its kind:
//
//   - tag: (source, tag) goes into the window's inbox (inbox.go), which
//     any goroutine may append to without a lock. The target
//     drains it into its match.Queue when it tests a request, so matching
//     itself runs on the target's goroutine only, without locks (the
//     paper's design: the NIC enqueues, the target matches in Test/Wait);
//   - counter: counter i of the window is incremented atomically;
//   - signal: the 64-bit word at the notice's offset in the window is set
//     or added to, atomically.
//
// Waiters are woken through Comm.wake, which costs an atomic load unless
// somebody sleeps.

// MaxTag is the largest tag a notice or message may carry.
const MaxTag = 1<<31 - 1

// counterSet is a window's notification counters; it is replaced as a
// whole by SetCounters. Where origins may update them directly (see
// signalMapping) they live in buf, library memory exposed under key, so
// that origins on this host map them; otherwise buf is nil.
type counterSet struct {
	v   []atomic.Uint64
	buf []byte
	key transport.Key
}

// newCounterSet makes n counters, exposed if direct says so.
func (c *Comm) newCounterSet(n int, direct bool) (*counterSet, error) {
	if !direct || n == 0 {
		return &counterSet{v: make([]atomic.Uint64, n)}, nil
	}
	buf := mem.Alloc(8 * n)
	v, err := mem.Slice[atomic.Uint64](buf)
	if err == nil {
		var key transport.Key
		if key, err = c.ep.Expose(buf); err == nil {
			return &counterSet{v: v, buf: buf, key: key}, nil
		}
	}
	mem.Free(buf)
	return nil, err
}

// release unexposes and frees the counters' memory, once no handler
// holds them (w.counting).
func (cs *counterSet) release(w *Win) {
	if cs == nil || cs.buf == nil {
		return
	}
	for w.counting.Load() != 0 {
		runtime.Gosched()
	}
	w.c.ep.Unexpose(cs.key)
	mem.Free(cs.buf)
}

// handleNotice runs at the target for every notified operation, from job
// rank src, whatever the communicator of its window.
func (c *Comm) handleNotice(src int, key transport.Key, n transport.Notice) {
	t := c.byKey.Load()
	if t == nil {
		return
	}
	w := t.last.Load()
	if w == nil || (!key.Equal(&w.key) && !key.Equal(&w.ctlKey)) {
		if w = t.m[key]; w == nil {
			return
		}
		t.last.Store(w)
	}
	if src = w.c.commRank(src); src < 0 {
		// Not a rank of the window's communicator: it cannot know the
		// key from the window's creation.
		w.badNotices.Add(1)
		return
	}
	if key.Equal(&w.ctlKey) {
		w.handleCtl(src, n)
		return
	}
	switch n.Kind() {
	case transport.NoticeTag:
		if n.Tag() < 0 {
			// A negative tag would match like AnyTag: refuse it.
			w.badNotices.Add(1)
			return
		}
		w.inbox.push(int32(src), n.Tag())
	case transport.NoticeCounter:
		w.counting.Add(1)
		cs := w.counters.Load()
		if cs == nil || n.Tag() < 0 || int(n.Tag()) >= len(cs.v) {
			w.counting.Add(-1)
			w.badNotices.Add(1)
			return
		}
		cs.v[n.Tag()].Add(1)
		w.counting.Add(-1)
	case transport.NoticeSignal:
		if len(w.mem) < 8 || n.Offset() > uint64(len(w.mem)-8) || n.Offset()%8 != 0 {
			w.badNotices.Add(1)
			return
		}
		word := w.mem[n.Offset() : n.Offset()+8]
		if n.Op() == transport.SignalAdd {
			mem.AtomicAdd64(word, n.Value())
		} else {
			mem.AtomicStore64(word, n.Value())
		}
	default:
		return
	}
	c.wake()
}

// takeNotice is the notice taker testNotify gives the transport's
// PollNotices, which runs it on the calling goroutine, the window's
// owner: a tag notice for this window goes straight to the request being
// tested (w.directReq) if it matches, else into the queue; anything else
// takes the usual way. Notices that background delivery left in the
// inbox are older and go first. It reports done once the request has its
// count of matches, so that the poll leaves later notices where they are.
func (w *Win) takeNotice(src int, key transport.Key, n transport.Notice) (done bool) {
	r := w.directReq
	if !key.Equal(&w.key) || n.Kind() != transport.NoticeTag || n.Tag() < 0 || r == nil || w.freed || w.c.commRank(src) < 0 {
		w.c.handleNotice(src, key, n)
		return false
	}
	src = w.c.commRank(src)
	w.inbox.drainFor(&w.mq, r)
	if !w.inbox.empty() {
		// The drain stopped at the request's count or at a position a
		// producer claimed and has not filled: older notices of this
		// source may be behind it. This one goes behind them.
		w.inbox.push(int32(src), n.Tag())
		return r.matched == r.count
	}
	w.inbox.placed(int32(src))
	if r.matched < r.count && (r.src == AnySource || r.src == int32(src)) && (r.tag == AnyTag || r.tag == n.Tag()) {
		r.matched++
		r.st = Status{Source: src, Tag: int(n.Tag())}
		return r.matched == r.count
	}
	w.mq.Push(int32(src), n.Tag())
	return r.matched == r.count
}

// keyTable is the windows of a Comm by key (data and control), as
// handleNotice reads them without locks, and the window of the last
// notice: a stream of notices to one window compares keys rather than
// hash them (a Key is 32 bytes). A new table, with no last window,
// replaces it whenever a window comes or goes, so a window found here
// is one that existed when the table was made.
type keyTable struct {
	m    map[transport.Key]*Win
	last atomic.Pointer[Win]
}

// publishKeys rebuilds the key table; the caller holds c.winsMu.
func (c *Comm) publishKeys() {
	t := &keyTable{m: make(map[transport.Key]*Win, 2*len(c.wins))}
	for _, w := range c.wins {
		t.m[w.key] = w
		t.m[w.ctlKey] = w
		if w.dyn != nil {
			for _, at := range w.dyn.attached {
				t.m[at.key] = w // notices of accesses to attached buffers
			}
		}
	}
	c.byKey.Store(t)
}

// checkNotice validates the notice of an operation to target before
// anything is written.
func (w *Win) checkNotice(name string, n *transport.Notice, target int) error {
	switch n.Kind() {
	case transport.NoticeNone:
		return nil
	case transport.NoticeTag:
		if n.Tag() < 0 {
			return opErr(name, w.c.rank, ErrTag, "notice tag %d is negative", n.Tag())
		}
	case transport.NoticeCounter:
		if n.Tag() < 0 || int(n.Tag()) >= w.targets[target].ncounters {
			return opErr(name, w.c.rank, ErrInvalidNotification, "counter %d, rank %d has %d", n.Tag(), target, w.targets[target].ncounters)
		}
	case transport.NoticeSignal:
		if n.Op() >= badTag {
			return w.checkBadNotice(name, n, target)
		}
		if n.Op() != transport.SignalSet && n.Op() != transport.SignalAdd {
			return opErr(name, w.c.rank, ErrInvalidNotification, "signal operation %d", n.Op())
		}
		// The offset is the program's displacement times the target's
		// unit (see prepare): the errors name both.
		if n.Offset()+8 > uint64(w.targets[target].size) || n.Offset() > uint64(w.targets[target].size) {
			return opErr(name, w.c.rank, ErrBounds, "signal displacement %d (byte %d) outside window of %d bytes at rank %d", n.Offset()/uint64(w.targets[target].unit), n.Offset(), w.targets[target].size, target)
		}
		if n.Offset()%8 != 0 {
			return opErr(name, w.c.rank, ErrAlign, "signal displacement %d (byte %d) is not 8-byte aligned", n.Offset()/uint64(w.targets[target].unit), n.Offset())
		}
	default:
		return opErr(name, w.c.rank, ErrInvalidNotification, "notice kind %d", n.Kind())
	}
	return nil
}

// NotifyInit creates a persistent request that matches notices of tag
// from source (AnySource and AnyTag match any) arriving at this rank's
// window, count of them per activation. The request is inactive until
// Start.
func (w *Win) NotifyInit(source, tag, count int) (*Request, error) {
	if err := w.check("NotifyInit"); err != nil {
		return nil, err
	}
	if source != AnySource {
		if err := w.c.checkRank("NotifyInit", source); err != nil {
			return nil, err
		}
	}
	if tag != AnyTag && (tag < 0 || tag > MaxTag) {
		return nil, opErr("NotifyInit", w.c.rank, ErrTag, "tag %d not in [0,%d] and not AnyTag", tag, MaxTag)
	}
	if count < 1 {
		return nil, opErr("NotifyInit", w.c.rank, ErrInvalidArgs, "count %d < 1", count)
	}
	return &Request{c: w.c, kind: reqNotify, op: "Notify", win: w, src: int32(source), tag: int32(tag), count: count}, nil
}

// testNotify matches notices for a started notification request: it
// drains the inbox and takes matching notices, oldest first, until count
// are matched.
func (r *Request) testNotify(name string) (Status, bool, error) {
	w := r.win
	if w.freed {
		return Status{}, false, opErr(name, r.c.rank, ErrFreed, "window of the request")
	}
	if !r.active {
		// An inactive persistent request completes at once with an
		// empty status, as in MPI.
		return Status{Source: AnySource, Tag: AnyTag}, true, nil
	}
	// Queued notices are older than those in the inbox: take from the
	// queue first, then match the inbox's directly.
	for r.matched < r.count && w.mq.Len() > 0 {
		src, tag, ok := w.mq.Take(r.src, r.tag)
		if !ok {
			break
		}
		r.matched++
		r.st = Status{Source: int(src), Tag: int(tag)}
	}
	w.inbox.drainFor(&w.mq, r)
	if r.matched < r.count && r.c.poller != nil {
		// Take what the transport holds straight into the request: a
		// poll takes a first part of it and stops at the match, so poll
		// until the request has its matches or the transport nothing
		// more (bounded, as progress is, under an endless stream).
		w.directReq = r
		for i := 0; i < progressPolls && r.c.poller.PollNotices(w.direct) && r.matched < r.count; i++ {
		}
		w.directReq = nil
		// Background delivery may have taken a notice from the
		// transport between the inbox drain above and the poll (which
		// then waited for it and found nothing): it is in the inbox now.
		w.inbox.drainFor(&w.mq, r)
	}
	if r.matched < r.count {
		if !r.c.srcFailed(int(r.src)) {
			return Status{}, false, nil
		}
		// The rank the request waits for (for AnySource: possibly)
		// failed: deliver what arrived before, then give up.
		r.c.progress()
		w.inbox.drainFor(&w.mq, r)
		if r.matched < r.count {
			r.active = false
			return Status{}, true, opErr(name, r.c.rank, ErrPeer, "%s failed with %d of %d notices matched", r.c.failedName(int(r.src)), r.matched, r.count)
		}
	}
	r.active = false
	return r.st, true, nil
}

// testThreshold tests a counter-threshold request.
func (r *Request) testThreshold(name string) (Status, bool, error) {
	w := r.win
	if w.freed {
		return Status{}, false, opErr(name, r.c.rank, ErrFreed, "window of the request")
	}
	st := Status{Source: AnySource, Tag: r.counter}
	if r.reached {
		// Complete once, complete for good, whatever the counter does.
		return st, true, nil
	}
	cs := w.counters.Load()
	if cs == nil || r.counter >= len(cs.v) {
		return Status{}, true, opErr(name, r.c.rank, ErrInvalidNotification, "counter %d no longer exists", r.counter)
	}
	if cs.v[r.counter].Load() < r.threshold {
		if !r.c.newFailure() {
			return Status{}, false, nil
		}
		// Any rank may be the one the counter waits for: after a
		// failure, take in what arrived, then give up.
		r.c.progress()
		if v := cs.v[r.counter].Load(); v < r.threshold {
			return Status{}, true, opErr(name, r.c.rank, ErrPeer, "%s failed with counter %d at %d of %d", r.c.failedName(AnySource), r.counter, v, r.threshold)
		}
	}
	r.reached = true
	return st, true, nil
}

// Start activates a persistent request (a notification request): its
// match count is reset, and Test and Wait look for count new matches. A
// request that is already active (started and not yet complete) is
// refused with ErrInvalidArgs, and keeps its matches.
func (r *Request) Start() error {
	if err := r.check("Start"); err != nil {
		return err
	}
	if r.kind != reqNotify {
		return opErr("Start", r.c.rank, ErrInvalidArgs, "not a persistent request")
	}
	if r.win.freed {
		return opErr("Start", r.c.rank, ErrFreed, "window of the request")
	}
	if r.active {
		// Restarting would drop the matches made so far.
		return opErr("Start", r.c.rank, ErrInvalidArgs, "request is active: %d of %d matched", r.matched, r.count)
	}
	r.matched = 0
	r.active = true
	return nil
}

// SetCounters gives this rank's window n notification counters,
// collectively; ranks may ask for different n. Operations issued before
// the call are complete first, so no notice is lost: counters that exist
// before and after keep their values. It may be called again to resize.
// Operations queued in an open fence or PSCW epoch by the deferred
// strategy are completed by that epoch's closing call, not here.
func (w *Win) SetCounters(ctx context.Context, n int) error {
	if err := w.check("SetCounters"); err != nil {
		return err
	}
	if n < 0 || n > MaxTag {
		return opErr("SetCounters", w.c.rank, ErrInvalidArgs, "%d counters", n)
	}
	// Operations queued in lock epochs (deferred strategy) are pending
	// too: perform them. (Operations queued in a fence or PSCW epoch can
	// only be performed by that epoch's closing call.)
	for t := range w.queue {
		if len(w.queue[t]) > 0 && (w.targets[t].lockKind != 0 || w.lockAll) {
			if err := w.settle("SetCounters", ctx, t); err != nil {
				return err
			}
		}
	}
	if err := w.c.ep.FlushAll(ctx); err != nil {
		return w.c.transportFailure("SetCounters", ctx, err, "flush")
	}
	// The new counters, in memory that origins of this host may map if
	// they set signals directly (and then counters too).
	cs, err := w.c.newCounterSet(n, w.maps != nil)
	if err != nil {
		return opErr("SetCounters", w.c.rank, ErrInvalidArgs, "expose counters: %v", err)
	}
	// Each rank's record: its number of counters, and their key.
	const rec = 8 + transport.KeySize
	var mine [rec]byte
	binary.LittleEndian.PutUint64(mine[:], uint64(n))
	copy(mine[8:], cs.key[:])
	all := make([]byte, rec*w.c.size)
	// The allgather is also the barrier after which no operation issued
	// before SetCounters is in flight anywhere.
	if err := w.c.Allgather(ctx, mine[:], all); err != nil {
		cs.release(w)
		return err
	}
	// The notices issued before SetCounters are all here, but a
	// transport whose receiver drains queues may not have handled them
	// yet (and a poll handles only a first part): handle them, so that
	// the counts carried over include them.
	w.c.progress()
	old := w.counters.Swap(cs)
	if old != nil {
		// A handler that loaded the old set may still be about to
		// increment it: wait until none is, then carry its counts over.
		for w.counting.Load() != 0 {
			runtime.Gosched()
		}
		for i := range min(n, len(old.v)) {
			cs.v[i].Add(old.v[i].Load())
		}
	}
	var ferr error
	for r := range w.targets {
		k := int(binary.LittleEndian.Uint64(all[r*rec:]))
		w.targets[r].ncounters = k
		if w.maps == nil {
			continue
		}
		w.maps[r].counters = nil
		if key := transport.Key(all[r*rec+8 : (r+1)*rec]); w.maps[r].window != nil && k > 0 && key != (transport.Key{}) {
			m, err := w.mapCounters(r, key, k)
			if err != nil && ferr == nil {
				ferr = opErr("SetCounters", w.c.rank, ErrPeer, "counters of rank %d: %v", r, err)
			}
			w.maps[r].counters = m
		}
	}
	// Nobody may notify with the new sizes before every target has them,
	// nor into the old counters once their owner is past this barrier.
	err = w.c.Barrier(ctx)
	old.release(w)
	if ferr != nil {
		return ferr
	}
	return err
}

// mapCounters returns rank r's k counters, exposed under key, as this
// process maps them, or nil if the transport does not map them.
func (w *Win) mapCounters(r int, key transport.Key, k int) ([]byte, error) {
	reg, err := w.c.ep.Region(w.c.jobRank(r), key, 8*k)
	if err != nil {
		return nil, err
	}
	mr, ok := reg.(transport.MappedRegion)
	if !ok {
		return nil, nil
	}
	if m, ok := mr.Mapped(); ok && len(m) == 8*k {
		return m, nil
	}
	return nil, nil
}

func (w *Win) counter(name string, i int) (*atomic.Uint64, error) {
	if err := w.check(name); err != nil {
		return nil, err
	}
	cs := w.counters.Load()
	if cs == nil || i < 0 || i >= len(cs.v) {
		n := 0
		if cs != nil {
			n = len(cs.v)
		}
		return nil, opErr(name, w.c.rank, ErrInvalidNotification, "counter %d of %d", i, n)
	}
	return &cs.v[i], nil
}

// Counter returns the value of notification counter i.
func (w *Win) Counter(i int) (uint64, error) {
	p, err := w.counter("Counter", i)
	if err != nil {
		return 0, err
	}
	w.c.progress()
	return p.Load(), nil
}

// SetCounter sets notification counter i to v.
func (w *Win) SetCounter(i int, v uint64) error {
	p, err := w.counter("SetCounter", i)
	if err != nil {
		return err
	}
	p.Store(v)
	return nil
}

// WaitCounter waits until notification counter i is at least v.
func (w *Win) WaitCounter(ctx context.Context, i int, v uint64) error {
	p, err := w.counter("WaitCounter", i)
	if err != nil {
		return err
	}
	if p.Load() >= v {
		return nil
	}
	if err := w.c.wait(ctx, func() bool { return p.Load() >= v || w.c.newFailure() }); err != nil {
		return w.c.ctxErr("WaitCounter", err)
	}
	if got := p.Load(); got < v {
		w.c.progress()
		if got = p.Load(); got < v {
			return opErr("WaitCounter", w.c.rank, ErrPeer, "%s failed with counter %d at %d of %d", w.c.failedName(AnySource), i, got, v)
		}
	}
	return nil
}

// CounterThreshold returns a request that completes when notification
// counter i is at least v; it works with Test, Wait and the WaitAny
// family, and any number of them may watch one counter.
func (w *Win) CounterThreshold(i int, v uint64) (*Request, error) {
	if _, err := w.counter("CounterThreshold", i); err != nil {
		return nil, err
	}
	return &Request{c: w.c, kind: reqThreshold, op: "CounterThreshold", win: w, counter: i, threshold: v}, nil
}

// Cmp is a comparison for WaitSignal.
type Cmp uint8

// Comparisons, as OpenSHMEM's SHMEM_CMP_*.
const (
	CmpEQ Cmp = iota + 1
	CmpNE
	CmpGT
	CmpGE
	CmpLT
	CmpLE
)

func (c Cmp) holds(a, b uint64) bool {
	switch c {
	case CmpEQ:
		return a == b
	case CmpNE:
		return a != b
	case CmpGT:
		return a > b
	case CmpGE:
		return a >= b
	case CmpLT:
		return a < b
	case CmpLE:
		return a <= b
	}
	return false
}

func (w *Win) signalWord(name string, off int) ([]byte, error) {
	if err := w.check(name); err != nil {
		return nil, err
	}
	if off < 0 || off+8 > len(w.mem) {
		return nil, opErr(name, w.c.rank, ErrBounds, "signal word at byte %d outside window of %d bytes", off, len(w.mem))
	}
	if off%8 != 0 {
		return nil, opErr(name, w.c.rank, ErrAlign, "signal word at byte %d is not 8-byte aligned", off)
	}
	return w.mem[off : off+8], nil
}

// Signal reads the signal word at byte offset off of the local window.
func (w *Win) Signal(off int) (uint64, error) {
	word, err := w.signalWord("Signal", off)
	if err != nil {
		return 0, err
	}
	w.c.progress()
	return mem.AtomicLoad64(word), nil
}

// WaitSignal waits until the signal word at byte offset off of the local
// window satisfies cmp against v, and returns its value then.
func (w *Win) WaitSignal(ctx context.Context, off int, cmp Cmp, v uint64) (uint64, error) {
	word, err := w.signalWord("WaitSignal", off)
	if err != nil {
		return 0, err
	}
	if cmp < CmpEQ || cmp > CmpLE {
		return 0, opErr("WaitSignal", w.c.rank, ErrInvalidArgs, "comparison %d", cmp)
	}
	var got uint64
	cond := func() bool {
		got = mem.AtomicLoad64(word)
		return cmp.holds(got, v)
	}
	if cond() {
		return got, nil
	}
	if err := w.c.wait(ctx, func() bool { return cond() || w.c.newFailure() }); err != nil {
		return 0, w.c.ctxErr("WaitSignal", err)
	}
	if !cmp.holds(got, v) {
		// Any rank may be the one to set the signal: after a failure,
		// take in what arrived, then give up.
		w.c.progress()
		if !cond() {
			return got, opErr("WaitSignal", w.c.rank, ErrPeer, "%s failed with the signal at %d", w.c.failedName(AnySource), got)
		}
	}
	return got, nil
}

// Signals and counters set directly. Where the transport maps a target's
// memory into this process (a transport.MappedRegion: ranks of one host)
// and can wake that rank's waiters (transport.Waker), the origin of a
// signal or counter notice updates the word itself, once its operation is
// complete at the target, through the mapping (of the target's window, or
// of its counters, which SetCounters exposes for this), and then wakes the
// target: no notice crosses the transport, and a waiter (WaitSignal,
// WaitCounter) sees the word change as soon as its line arrives. A
// signal's set is a release store; a signal's add and a counter's
// increment, which other origins may make too, are atomic adds. It is
// what the target's handler would do with the notice, done earlier: rule
// 1 of notified access holds (the operation is complete first, and the
// release store or the atomic add orders its stores before the word's),
// and so does the order of one origin's notices to one target: a notice
// issued earlier is in the target's rings, where the target's next look
// finds it, before the word changes. Tag notices take the same way into
// the target's inbox (pushDirect).
//
// Only operations of at most directMax bytes do so. Measured between two
// processes (narmabench pingpong, interleaved with notices through the
// ring), an 8-byte signal or counted put's half round trip took 0.8 of
// the ring's time when the two cores sat far apart and 0.55-0.65 when
// near; at 4 KiB, 0.8-0.87 near but 1.1-1.3 far. The price in a stream:
// the origin writes again and again a word that the target polls, and a
// pipeline of counted 8-byte puts (narmabench stencil, counters) took 1.3
// of the ring's time far apart, 0.91 near.

// directMax is the largest operation whose signal or counter notice its
// origin applies itself (see above).
const directMax = 512

// signalMapping returns rank r's window of w as this process maps it, if
// signals and counters of r can be set directly: the transport completes
// operations on return, maps r's memory and can wake r's waiters.
// Dynamic windows keep notices: their signal offsets name the window, not
// an attachment.
func (c *Comm) signalMapping(w *Win, r int) []byte {
	if c.waker == nil || !w.synchronous || w.dyn != nil {
		return nil
	}
	mr, ok := w.targets[r].region.(transport.MappedRegion)
	if !ok {
		return nil
	}
	m, ok := mr.Mapped()
	if !ok || len(m) != w.targets[r].size {
		return nil
	}
	return m
}

// direct is what splitDirect leaves for applyDirect: whether this rank
// applies a notice itself (on), the word a signal or counter updates, and
// the inbox position a tag notice claimed (claimed, pos). It lives on the
// caller's stack: in a job of goroutine ranks, a field of the window
// written at every operation could share its cache line with another
// rank's. splitDirect fills it in place, field by field: a direct it
// returned by value would be stored field by field into a temporary and
// copied 16 bytes at a time, and such a load cannot be forwarded from the
// smaller stores just before it (a stall of the store buffer on every
// operation, about 10 ns of the 8-byte counter ping-pong). It goes on to
// applyDirect by pointer too: by value, with the notice, it takes more
// registers than the calling convention has, and the copy cost the
// 8-byte put-notify ping-pong another 10 ns.
type direct struct {
	word    []byte
	pos     uint64
	on      bool
	claimed bool
}

// splitDirect splits off notice n of an operation to target t moving
// bytes of data if this rank applies it itself (see signalMapping, and
// pushDirect for tags): it fills d with what applyDirect needs and
// returns the notice the operation carries instead (none); or it returns
// n and leaves d as it is (not on). The caller issues the operation with
// the notice it returns and then, if d is on, calls applyDirect, or
// dropDirect if the operation failed.
func (w *Win) splitDirect(t int, n transport.Notice, bytes int, d *direct) transport.Notice {
	if w.maps == nil {
		return n
	}
	if n.Kind() == transport.NoticeTag {
		m := &w.maps[t]
		if m.inbox == nil {
			return n
		}
		if m.sent != m.handled.Load() || m.inbox.over.Load() != 0 {
			// Notices this rank sent through the transport, or other
			// producers', wait for the target's handlers: this one
			// follows them.
			m.sent++
			return n
		}
		if bytes > directMax {
			// A large operation claims its slot after its copy, rather
			// than hold up other producers' notices behind it.
			d.on = true
			return transport.Notice{}
		}
		// Claimed before the data moves, so that the data's stores and
		// the slot's go out together, not one after the other around
		// the claim's locked instruction (a full barrier).
		pos, ok := m.inbox.claimInOrder(&m.seen)
		if !ok {
			m.sent++ // the ring is full: the notice travels with the data
			return n
		}
		d.on, d.claimed, d.pos = true, true, pos
		return transport.Notice{}
	}
	if bytes > directMax {
		return n
	}
	if n.Kind() == transport.NoticeCounter {
		m := w.maps[t].counters
		if i := uint64(n.Tag()); n.Tag() < 0 || m == nil || i >= uint64(len(m)/8) {
			return n
		}
		d.on, d.word = true, m[8*n.Tag():][:8]
		return transport.Notice{}
	}
	if n.Kind() != transport.NoticeSignal {
		return n
	}
	if word := w.mappedSignal(t, n.Op(), n.Offset(), 1); word != nil {
		d.on, d.word = true, word
		return transport.Notice{}
	}
	return n
}

// mappedSignal returns the word of target t's window, as mapped here, that
// a signal of operation op at displacement disp (in units of unit bytes)
// updates, or nil if this rank does not set it itself: no mapping, an
// operation or displacement a handler would refuse (checkNotice has
// looked already; this looks again since it writes into t's memory).
func (w *Win) mappedSignal(t int, op transport.SignalOp, disp, unit uint64) []byte {
	m := w.maps[t].window
	hi, off := bits.Mul64(disp, unit)
	if m == nil || op != transport.SignalSet && op != transport.SignalAdd || hi != 0 || len(m) < 8 || off > uint64(len(m)-8) || off%8 != 0 {
		return nil
	}
	return m[off : off+8]
}

// applyDirect applies notice n, split off by splitDirect, to d's word, a
// word of target t's memory, or, for a tag, to t's inbox (pushDirect),
// and wakes t's waiters.
func (w *Win) applyDirect(t int, n transport.Notice, d *direct) error {
	word := d.word
	switch {
	case n.Kind() == transport.NoticeTag:
		return w.pushDirect(t, n, d)
	case n.Kind() == transport.NoticeCounter:
		mem.AtomicAdd64(word, 1) // other origins may add too
	case n.Op() == transport.SignalAdd:
		mem.AtomicAdd64(word, n.Value())
	default:
		mem.StoreRelease64(mem.Word64(word), n.Value())
	}
	// WakeRank orders the store before its look at t's sleepers.
	w.c.waker.WakeRank(w.c.jobRank(t))
	return nil
}

// pushDirect puts tag notice n of an operation complete at target t into
// t's inbox ring, as this process maps it, in the position splitDirect
// claimed or, for a large operation, one it claims now, and wakes t's
// waiters: the notice does not cross the transport, and t's test of a
// request finds it in its first look at the inbox. Rule 1 holds as for
// signals: the operation is complete, and the slot's publishing store
// orders its stores before the notice. So does the order of this rank's
// notices to t: splitDirect sends a notice through the transport, and
// counts it (sent), whenever t's handlers have not yet placed every
// notice this rank sent that way (handled) or the inbox overflows into
// t's own memory. If the ring is full, the notice follows the data
// through the transport, alone.
func (w *Win) pushDirect(t int, n transport.Notice, d *direct) error {
	m := &w.maps[t]
	pos, ok := d.pos, d.claimed
	if !ok {
		if pos, ok = m.inbox.claimInOrder(&m.seen); !ok {
			m.sent++
			return w.targets[t].region.Put(0, nil, n, nil)
		}
	}
	m.inbox.fill(pos, int32(w.c.rank), n.Tag(), false)
	w.c.waker.WakeRank(w.c.jobRank(t))
	return nil
}

// dropDirect gives up the notice splitDirect split off, as d, for an
// operation to target t that failed: a position it claimed is filled
// with a void notice, which the target skips.
func (w *Win) dropDirect(t int, d *direct) {
	if !d.claimed {
		return
	}
	w.maps[t].inbox.fill(d.pos, voidSrc, 0, false)
	w.c.waker.WakeRank(w.c.jobRank(t))
}

// Notice is what an operation carries to tell its target; the transport
// delivers it unchanged after the data (see transport.Notice).
type Notice = transport.Notice

// Notice kinds and signal operations, for the public package.
const (
	NoticeTag     = transport.NoticeTag
	NoticeCounter = transport.NoticeCounter
	NoticeSignal  = transport.NoticeSignal
	SignalSet     = transport.SignalSet
	SignalAdd     = transport.SignalAdd
)

// SignalOp is the update of a signal notice.
type SignalOp = transport.SignalOp

// A notice the public package cannot build because a value the program
// passed is out of range (a tag or counter index beyond an int32 or
// negative, a signal displacement negative or beyond a notice's offset, a
// signal operation that does not exist) is a signal notice at offset 0
// whose operation is one of these codes and whose operand is the value:
// checkNotice refuses it before anything is written, naming the value
// the program passed. It never leaves the origin.
const (
	badTag transport.SignalOp = 0x80 + iota
	badCounter
	badSignalDisp
	badSignalOp
)

// MaxSignalDisp is the largest signal displacement a notice carries.
const MaxSignalDisp = transport.MaxNoticeOffset

// BadTagNotice returns the notice of a tag out of [0, MaxTag], which every
// notified call refuses with ErrTag.
func BadTagNotice(tag int) Notice { return badNotice(badTag, int64(tag)) }

// BadCounterNotice returns the notice of a counter index out of
// [0, MaxTag], which every notified call refuses with
// ErrInvalidNotification.
func BadCounterNotice(i int) Notice { return badNotice(badCounter, int64(i)) }

// BadSignalNotice returns the notice of a signal displacement that is
// negative or past transport.MaxNoticeOffset, which every notified call
// refuses with ErrBounds.
func BadSignalNotice(disp int) Notice { return badNotice(badSignalDisp, int64(disp)) }

// BadSignalOpNotice returns the notice of a signal operation other than
// SignalSet and SignalAdd, which every notified call refuses with
// ErrInvalidNotification.
func BadSignalOpNotice(op SignalOp) Notice { return badNotice(badSignalOp, int64(op)) }

func badNotice(code transport.SignalOp, v int64) Notice {
	return transport.SignalNotice(code, 0, uint64(v))
}

// checkBadNotice returns the error of a notice made by a Bad*Notice
// function for the call name to target.
func (w *Win) checkBadNotice(name string, n *transport.Notice, target int) error {
	v := int64(n.Value())
	switch n.Op() {
	case badTag:
		return opErr(name, w.c.rank, ErrTag, "notice tag %d not in [0,%d]", v, MaxTag)
	case badCounter:
		return opErr(name, w.c.rank, ErrInvalidNotification, "counter %d, rank %d has %d", v, target, w.targets[target].ncounters)
	case badSignalDisp:
		return opErr(name, w.c.rank, ErrBounds, "signal displacement %d outside window of %d bytes at rank %d", v, w.targets[target].size, target)
	}
	return opErr(name, w.c.rank, ErrInvalidNotification, "signal operation %d", v)
}

// TagNotice returns a notice of kind NoticeTag or NoticeCounter with tag
// (or counter index) tag, for the public package.
func TagNotice(kind transport.NoticeKind, tag int32) Notice { return transport.TagNotice(kind, tag) }

// SignalNotice returns a signal notice for the public package: op with
// value on the word at displacement disp, which the engine turns into a
// byte offset when it routes the operation.
func SignalNotice(op SignalOp, disp, value uint64) Notice {
	return transport.SignalNotice(op, disp, value)
}
