package engine

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/match"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Strategy selects how a window implements its synchronization calls, after
// Gropp and Thakur.
type Strategy uint8

const (
	// StrategyDefault lets the transport decide: Immediate where data
	// moves with loads and stores (Caps.Direct), Deferred otherwise.
	StrategyDefault Strategy = iota
	// Immediate synchronizes when an epoch opens and transfers each
	// operation as it is called.
	Immediate
	// Deferred queues operations at the origin and does synchronization
	// and transfer together in the closing call.
	Deferred
)

// String returns "immediate", "deferred" or "default".
func (s Strategy) String() string {
	switch s {
	case Immediate:
		return "immediate"
	case Deferred:
		return "deferred"
	}
	return "default"
}

// WinOptions configures a window.
type WinOptions struct {
	// DispUnit is the displacement unit in bytes; 0 means 1.
	DispUnit int
	// Strategy selects immediate or deferred synchronization.
	Strategy Strategy
}

// MaxDispUnit bounds the displacement unit, so that displacement times
// unit cannot overflow for any displacement inside a window.
const MaxDispUnit = 1 << 20

// A window's control region holds its control words, each kind on cache
// lines of its own: the lock word (uint64 at ctlLock); the count of
// fence-done messages (at ctlFence); then, per origin rank, the counts of
// its post messages and of its complete messages (ctlCounts). The counts
// only grow: a rank takes a message by counting it in its seen counts.
// They are added to by handleCtl, the target's handler of window control
// messages, which travel as notices with no data (sendCtl).
const (
	ctlLock   = 0
	ctlFence  = 64
	ctlCounts = 128
)

// ctlSize is the size of the control region of a window of n ranks:
// the control words, then, from the first page boundary at or after
// ctlInboxMin(n), the window's inbox (inbox.go), then the rest of that
// page. The inbox has pages of its own: a processor's prefetchers fetch
// the lines next to those a program reads, up to the page's end, and the
// window's data, which its owner reads in streams, may lie just before
// or after the region; the inbox's claim counter, which origins write,
// would then move back and forth with every notice.
func ctlSize(n int) int { return ctlInboxMin(n) + inboxSize(n) + 2*inboxPage }

// inboxPage is the page size the inbox's placement assumes.
const inboxPage = 4096

// ctlInboxMin is the least offset of the inbox in the control region of
// a window of n ranks.
func ctlInboxMin(n int) int { return ctlCounts + 16*n }

// ctlInboxAt returns the offset of the inbox in ctl, the control region
// of a window of n ranks: the first page boundary at or after
// ctlInboxMin(n). Origins learn it from the window's creation, since
// they may map the region at another address.
func ctlInboxAt(ctl []byte, n int) int {
	a := mem.Addr(ctl) + uintptr(ctlInboxMin(n))
	return ctlInboxMin(n) + int(-a&(inboxPage-1))
}

// ctlInboxOf returns the inbox ring and handled counts at offset at in
// ctl, the control region of a window of n ranks, as this process maps
// it.
func ctlInboxOf(ctl []byte, n, at int) (*inboxRing, []atomic.Uint64, error) {
	if len(ctl) != ctlSize(n) || at < ctlInboxMin(n) || at > len(ctl)-inboxSize(n) {
		return nil, nil, mem.ErrAlign
	}
	r, err := mem.As[inboxRing](ctl[at:])
	if err != nil {
		return nil, nil, err
	}
	h, err := mem.Slice[atomic.Uint64](ctl[at+mem.SizeOf[inboxRing]():][:8*n])
	if err != nil {
		return nil, nil, err
	}
	return r, h, nil
}

// ctlOffset is the offset of the control word that counts messages of
// kind from rank src.
func ctlOffset(kind uint8, src, n int) int {
	switch kind {
	case winPost:
		return ctlCounts + 8*src
	case winComplete:
		return ctlCounts + 8*(n+src)
	}
	return ctlFence
}

// Lock word layout: bit 62 says an exclusive holder, bits 32 to 61 its
// rank (so that a waiter can tell when the holder has failed), the low 32
// bits count shared holders (and shared attempts in flight).
const (
	lockExcl      = uint64(1) << 62
	lockRankShift = 32
	lockRankMask  = uint64(1)<<30 - 1
)

// exclWord is the lock word of an exclusive lock held by rank.
func exclWord(rank int) uint64 { return lockExcl | uint64(rank)<<lockRankShift }

// stuckLockAfter is how long a lock attempt retries a lock word whose
// holders are unknown (shared holders) once some rank of the job has
// failed, before it reports the failure: a shared holder that died
// never releases its share.
const stuckLockAfter = time.Second

// Kinds of window control messages (sendCtl): the index of the counter
// notice that carries one.
const (
	winPost uint8 = iota + 1
	winComplete
	winFenceDone
)

// winTarget is the state of a window's access to one rank: what an
// operation reads (a put with a tag: region, size, unit and the lock
// state), one cache line (TestWinTargetLine).
type winTarget struct {
	region    transport.Region // the rank's data region
	size      int              // its window size, bytes
	unit      int              // its displacement unit
	ncounters int              // its number of notification counters
	lockKind  uint8            // 0, lockShared or lockExclusive
	lockHeld  bool             // the lock word is held at the rank
	inAccess  bool             // the rank is in the current PSCW access group
	_         [lineSize - 43]byte
}

// lineSize is a cache line's size, for the layout of winTarget.
const lineSize = 64

// rankMaps is a rank's window, notification counters and inbox as this
// process maps them, where notices are applied directly (splitDirect),
// or nil.
type rankMaps struct {
	window, counters []byte
	inbox            *inboxRing     // the rank's inbox ring for this window
	handled          *atomic.Uint64 // the rank's count of this rank's tag notices its handlers placed
	sent             uint64         // tag notices sent to the rank's window through the transport
	seen             atomic.Uint64  // this rank's copy of the inbox's take counter (inboxRing.tryClaim)
}

// Win is one rank's part of a window.
//
// The origin-side state (epochs, queues) is used by one goroutine of the
// rank at a time, like an MPI window under MPI_THREAD_SERIALIZED. Incoming
// control messages are counted in words of the control region (see
// ctlSize), which take atomic operations.
type Win struct {
	// What every operation reads comes first, in the first cache line:
	// the fast path of a put (rma.go) touches this line and one of
	// targets.
	c *Comm
	// targets is what an access needs of each rank, in one place: an
	// operation reads one line of it, not one of each of nine arrays.
	targets []winTarget
	dyn     *dynState // a dynamic window's attachments and resolved addresses; nil for others
	// maps is, by rank, the ranks' memory as this process maps it; nil
	// if it maps no rank's window.
	maps        []rankMaps
	strategy    Strategy
	freed       bool
	synchronous bool // the transport completes operations on return
	fenceOpen   bool // a fence epoch is open (last fence had no NOSUCCEED)
	fenceUsed   bool // an operation was issued in the open fence epoch
	accessOn    bool
	lockAll     bool

	// What a target's test of a request reads (notify.go), next: the
	// window's key, which a notice names, the request and its taker, and
	// the queue of notices.
	key       transport.Key
	directReq *Request              // the request testNotify polls for; the owner's only
	direct    transport.NoticeTaker // w.takeNotice, made once: the taker of PollNotices
	mq        match.Queue           // tag notices drained from the inbox; the owner's only

	id     uint64
	mem    []byte
	owned  bool // mem came from Allocate and is freed with the window
	unit   int
	ctl    []byte
	ctlKey transport.Key

	ctlRegions []transport.Region // control region of each rank
	lockWords  []transport.Word   // each rank's lock word, if the transport gives words (Caps.Direct)

	// origin-side epoch state, with the flags above
	access         []int
	accessNoCheck  bool
	postsTaken     bool
	exposeGrp      []int
	exposeOn       bool
	lockAllNoCheck bool
	nlocks         int
	scratch        lockScratch
	lockSeen       uint64    // the lock word as the last failed lock attempt saw it
	queue          [][]rmaOp // deferred operations per target
	queued         int

	// Notified Access, target side (notify.go).
	inbox    inbox                      // tag notices not yet matched
	counters atomic.Pointer[counterSet] // notification counters
	// counting is the number of handlers between loading counters and
	// incrementing one: SetCounters waits for it to drop to zero before
	// it moves the old set's counts into the new one.
	counting   atomic.Int32
	badNotices atomic.Int64 // notices refused at this target (bad counter or signal)

	// Control messages taken (see ctlSize): posts and completes per
	// origin, fence-dones. The owner's only.
	seenPosts     []uint64
	seenCompletes []uint64
	seenFence     uint64
	// fenceOwed counts the fence-dones that deferred fences which ended
	// early (their context ended, a peer failed) expected and did not
	// take: the next fence takes them as well as its own.
	fenceOwed uint64
	// owedCompletes counts, per origin, the completes of posts that a
	// failed Post sent without opening an epoch: the next Wait on that
	// origin takes them as well as its own.
	owedCompletes []uint64
}

// Allocate creates a window over size bytes of library memory, collectively.
func (c *Comm) Allocate(ctx context.Context, size int, opt WinOptions) (*Win, error) {
	if size < 0 {
		return nil, opErr("Allocate", c.rank, ErrInvalidArgs, "size %d", size)
	}
	return c.create(ctx, "Allocate", mem.Alloc(size), true, opt, nil)
}

// Create creates a window over buf, collectively. buf must come from the
// library's allocator (mem.Alloc), so that it is aligned for atomics and,
// on transports that share memory between processes, mapped.
func (c *Comm) Create(ctx context.Context, buf []byte, opt WinOptions) (*Win, error) {
	if len(buf) > 0 && !mem.Owns(buf) {
		return nil, opErr("Create", c.rank, ErrNotAlloc, "buffer at %#x of %d bytes", mem.Addr(buf), len(buf))
	}
	if len(buf) == 0 {
		buf = mem.Alloc(0)
	}
	return c.create(ctx, "Create", buf, false, opt, nil)
}

// create makes a window over buf; dyn is a dynamic window's state, nil
// for the others, set before the window is published to the notice
// handler.
func (c *Comm) create(ctx context.Context, op string, buf []byte, owned bool, opt WinOptions, dyn *dynState) (*Win, error) {
	if opt.DispUnit < 0 || opt.DispUnit > MaxDispUnit {
		return nil, opErr(op, c.rank, ErrInvalidArgs, "displacement unit %d not in [1,%d]", opt.DispUnit, MaxDispUnit)
	}
	if opt.DispUnit == 0 {
		opt.DispUnit = 1
	}
	if opt.Strategy > Deferred {
		return nil, opErr(op, c.rank, ErrInvalidArgs, "strategy %d", opt.Strategy)
	}
	if opt.Strategy == StrategyDefault {
		opt.Strategy = Deferred
		if c.ep.Caps().Direct {
			opt.Strategy = Immediate
		}
	}
	n := c.size
	w := &Win{
		c: c, mem: buf, owned: owned, unit: opt.DispUnit, strategy: opt.Strategy,
		ctl:           mem.Alloc(ctlSize(n)),
		synchronous:   c.ep.Caps().Synchronous,
		targets:       make([]winTarget, n),
		ctlRegions:    make([]transport.Region, n),
		queue:         make([][]rmaOp, n),
		seenPosts:     make([]uint64, n),
		seenCompletes: make([]uint64, n),
		owedCompletes: make([]uint64, n),
		dyn:           dyn,
	}
	w.direct = w.takeNotice
	inboxAt := ctlInboxAt(w.ctl, n)
	ring, handled, err := ctlInboxOf(w.ctl, n, inboxAt)
	if err != nil {
		mem.Free(w.ctl)
		return nil, opErr(op, c.rank, ErrInvalidArgs, "inbox: %v", err)
	}
	if c.waker == nil || !w.synchronous || dyn != nil {
		// No origin puts notices into the ring itself (signalMapping):
		// the handlers need not count what they place.
		handled = nil
	}
	w.inbox.attach(ring, handled, n)
	if w.key, err = c.ep.Expose(buf); err != nil {
		return nil, opErr(op, c.rank, ErrInvalidArgs, "expose: %v", err)
	}
	if w.ctlKey, err = c.ep.Expose(w.ctl); err != nil {
		c.ep.Unexpose(w.key)
		return nil, opErr(op, c.rank, ErrInvalidArgs, "expose: %v", err)
	}
	c.winMu.Lock()
	w.id = uint64(c.user)<<32 | uint64(c.nextWin)
	c.nextWin++
	c.winMu.Unlock()
	c.winsMu.Lock()
	c.wins[w.id] = w
	c.publishKeys()
	c.winsMu.Unlock()

	// Each rank's record: window id, size, unit, the inbox's offset in
	// the control region, then the keys of the window and of its control
	// region, as the transport made them.
	const (
		infoKey    = 32
		infoCtlKey = infoKey + transport.KeySize
		infoLen    = infoCtlKey + transport.KeySize
	)
	var info [infoLen]byte
	binary.LittleEndian.PutUint64(info[0:], w.id)
	binary.LittleEndian.PutUint64(info[8:], uint64(len(buf)))
	binary.LittleEndian.PutUint64(info[16:], uint64(w.unit))
	binary.LittleEndian.PutUint64(info[24:], uint64(inboxAt))
	copy(info[infoKey:], w.key[:])
	copy(info[infoCtlKey:], w.ctlKey[:])
	all := make([]byte, infoLen*n)
	fail := func(e error) (*Win, error) {
		c.winsMu.Lock()
		delete(c.wins, w.id)
		c.publishKeys()
		c.winsMu.Unlock()
		c.ep.Unexpose(w.key)
		c.ep.Unexpose(w.ctlKey)
		return nil, e
	}
	if err := c.Allgather(ctx, info[:], all); err != nil {
		return fail(err)
	}
	for r := 0; r < n; r++ {
		rec := all[r*infoLen:]
		if id := binary.LittleEndian.Uint64(rec[0:]); id != w.id {
			return fail(opErr(op, c.rank, ErrCollective, "rank %d creates window %d, this rank %d", r, id, w.id))
		}
		w.targets[r].size = int(binary.LittleEndian.Uint64(rec[8:]))
		w.targets[r].unit = int(binary.LittleEndian.Uint64(rec[16:]))
		if w.targets[r].region, err = c.ep.Region(c.jobRank(r), transport.Key(rec[infoKey:infoCtlKey]), w.targets[r].size); err != nil {
			return fail(opErr(op, c.rank, ErrPeer, "region of rank %d: %v", r, err))
		}
		if w.ctlRegions[r], err = c.ep.Region(c.jobRank(r), transport.Key(rec[infoCtlKey:infoLen]), ctlSize(n)); err != nil {
			return fail(opErr(op, c.rank, ErrPeer, "control region of rank %d: %v", r, err))
		}
		if m := c.signalMapping(w, r); m != nil {
			if w.maps == nil {
				w.maps = make([]rankMaps, n)
			}
			w.maps[r].window = m
			w.maps[r].inbox, w.maps[r].handled = w.mapInbox(r, binary.LittleEndian.Uint64(rec[24:]))
		}
		if wr, ok := w.ctlRegions[r].(transport.WordRegion); ok && c.ep.Caps().Direct {
			if w.lockWords == nil {
				w.lockWords = make([]transport.Word, n)
			}
			if w.lockWords[r], err = wr.Word(ctlLock); err != nil {
				return fail(opErr(op, c.rank, ErrPeer, "lock word of rank %d: %v", r, err))
			}
		}
	}
	return w, nil
}

// mapInbox returns rank r's inbox ring for w, at offset at of its
// control region, and its count of this rank's notices that its handlers
// placed, as this process maps that region; or nils.
func (w *Win) mapInbox(r int, at uint64) (*inboxRing, *atomic.Uint64) {
	mr, ok := w.ctlRegions[r].(transport.MappedRegion)
	if !ok {
		return nil, nil
	}
	m, ok := mr.Mapped()
	if !ok {
		return nil, nil
	}
	if at > uint64(len(m)) {
		return nil, nil
	}
	ring, handled, err := ctlInboxOf(m, w.c.size, int(at))
	if err != nil || w.c.rank >= len(handled) {
		return nil, nil
	}
	return ring, &handled[w.c.rank]
}

// Memory returns the local window memory.
func (w *Win) Memory() []byte { return w.mem }

// Freed reports whether Free has been called on the window.
func (w *Win) Freed() bool { return w == nil || w.freed }

// DispUnit returns the local displacement unit in bytes.
func (w *Win) DispUnit() int { return w.unit }

// Strategy returns the synchronization strategy in use.
func (w *Win) Strategy() Strategy {
	if w == nil {
		return StrategyDefault
	}
	return w.strategy
}

// Comm returns the window's communicator.
func (w *Win) Comm() *Comm { return w.c }

func (w *Win) check(op string) error {
	if w == nil {
		return opErr(op, -1, ErrFreed, "nil window")
	}
	if w.freed {
		return opErr(op, w.c.rank, ErrFreed, "window")
	}
	return nil
}

// Free releases the window, collectively. No epoch may be open.
func (w *Win) Free(ctx context.Context) error {
	if err := w.check("Free"); err != nil {
		return err
	}
	if w.accessOn || w.exposeOn || w.nlocks > 0 || w.lockAll || w.queued > 0 || w.fenceUsed {
		return opErr("Free", w.c.rank, ErrEpoch, "an epoch is still open")
	}
	// Lock releases are not awaited when issued: complete them (and
	// anything else in flight) before the peers may unexpose.
	if err := w.scratch.comp.Wait(ctx); err != nil && ctx.Err() != nil {
		return w.c.ctxErr("Free", w.c.stopErr(ctx))
	}
	if !w.synchronous {
		if err := w.c.ep.FlushAll(ctx); err != nil {
			return w.c.transportFailure("Free", ctx, err, "flush")
		}
	}
	if err := w.c.Barrier(ctx); err != nil {
		return err
	}
	w.freed = true
	c := w.c
	c.winsMu.Lock()
	delete(c.wins, w.id)
	c.publishKeys()
	c.winsMu.Unlock()
	c.ep.Unexpose(w.key)
	c.ep.Unexpose(w.ctlKey)
	w.counters.Load().release(w)
	w.detachAll()
	if w.owned {
		mem.Free(w.mem)
	}
	mem.Free(w.ctl)
	return nil
}

// sendCtl sends a window control message of kind to rank r: a notice
// with no data on r's control region (a counter notice whose index is the
// kind), which the transport delivers, as any notice, after this rank's
// earlier operations on r and wakes r for if r sleeps; r's handleCtl
// counts it. The engine thus neither writes peers' memory nor knows how a
// transport wakes them. A message to a rank known to have failed fails
// with ErrPeer: nobody would take it.
func (w *Win) sendCtl(op string, r int, kind uint8) error {
	if w.c.peerFailed(r) {
		return opErr(op, w.c.rank, ErrPeer, "rank %d failed", r)
	}
	if err := w.ctlRegions[r].Put(0, nil, transport.TagNotice(transport.NoticeCounter, int32(kind)), nil); err != nil {
		return opErr(op, w.c.rank, ErrPeer, "to rank %d: %v", r, err)
	}
	return nil
}

// handleCtl counts a control message (sendCtl) from src and wakes the
// waiters.
func (w *Win) handleCtl(src int, n transport.Notice) {
	if n.Kind() != transport.NoticeCounter || src < 0 || src >= w.c.size {
		w.badNotices.Add(1)
		return
	}
	switch kind := n.Tag(); kind {
	case int32(winPost), int32(winComplete), int32(winFenceDone):
		mem.AtomicAdd64(w.ctl[ctlOffset(uint8(kind), src, w.c.size):], 1)
	default:
		w.badNotices.Add(1)
		return
	}
	w.c.wake()
}

// ctlPending returns how many control messages of kind from src (any
// source for fence-dones) arrived and are not yet taken.
func (w *Win) ctlPending(kind uint8, src int) uint64 {
	got := mem.AtomicLoad64(w.ctl[ctlOffset(kind, src, w.c.size):])
	switch kind {
	case winPost:
		return got - w.seenPosts[src]
	case winComplete:
		return got - w.seenCompletes[src]
	}
	return got - w.seenFence
}
