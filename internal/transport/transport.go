// Package transport defines the network interface seen by narma's engine,
// the "NIC" of the Notified Access paper: remote write, read and atomic
// operations on exposed memory regions, each optionally carrying a small
// notice delivered at the target after the data; remote completion (flush);
// and an ordered active-message channel that the engine uses for its own
// control protocols (two-sided messages, PSCW post/complete, fence counts).
//
// A transport knows nothing of epochs, locks, requests or matching: those
// live in the engine, which builds them from these operations. Lock words,
// for instance, are plain words in an exposed region that the engine updates
// with remote atomics.
//
// Implementations live in subpackages (local: ranks as goroutines in one
// process). Every implementation must pass the conformance suite in
// transporttest.
package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/narma-rma/narma/internal/mem"
)

// Key names an exposed region at the rank that exposed it: Expose
// returns it, the engine sends it to the other ranks (as MPI exchanges
// rkeys), an origin's Region takes it, and a notice's handler gets it
// back at the target. It is meaningful only together with the rank that
// issued it, and opaque outside its transport, which fills as much of it
// as it needs: a table slot and generation for shared memory, a number for
// TCP, an address and a remote key for RDMA (fi_mr_key, an rkey). The
// zero Key names no region.
type Key [KeySize]byte

// KeySize is the size of a Key in bytes: room for an RDMA address and
// remote key beside a transport's own index, and for a transport that
// combines two others (hybrid) to hold one key of each.
const KeySize = 32

// WordKey returns the Key of a transport whose keys are one 64-bit word:
// v in its first 8 bytes, little-endian, and zeros after (AsWord).
func WordKey(v uint64) Key {
	var k Key
	binary.LittleEndian.PutUint64(k[:8], v)
	return k
}

// String returns k in hexadecimal, without its trailing zero bytes.
func (k Key) String() string {
	n := len(k)
	for n > 1 && k[n-1] == 0 {
		n--
	}
	return fmt.Sprintf("%#x", k[:n])
}

// AsWord returns the word WordKey stored in k, and whether k is such a
// key (its bytes after the first 8 are zero).
func (k Key) AsWord() (uint64, bool) {
	return binary.LittleEndian.Uint64(k[:8]), [KeySize - 8]byte(k[8:]) == [KeySize - 8]byte{}
}

// Equal reports whether k and o are the same key, as k == o does; it
// compares four words in line where == on an array of 32 bytes calls the
// runtime, which the hot paths (a notice's window, found by its key) feel.
func (k *Key) Equal(o *Key) bool {
	le := binary.LittleEndian
	return le.Uint64(k[:8]) == le.Uint64(o[:8]) && le.Uint64(k[8:16]) == le.Uint64(o[8:16]) &&
		le.Uint64(k[16:24]) == le.Uint64(o[16:24]) && le.Uint64(k[24:]) == le.Uint64(o[24:])
}

// NoticeKind says how the target of an operation is told of it.
type NoticeKind uint8

// Notice kinds. The zero NoticeKind means "no notice".
const (
	NoticeNone    NoticeKind = iota // plain access, the target is not told
	NoticeTag                       // queue (source, Tag) at the target
	NoticeCounter                   // increment counter Tag at the target
	NoticeSignal                    // apply SignalOp with Value to the word at Offset
)

// SignalOp is the update a signal notice applies to its word.
type SignalOp uint8

// Signal operations.
const (
	SignalSet SignalOp = iota + 1
	SignalAdd
)

// Notice is the small immediate value an operation may carry. It reaches
// the target's NoticeHandler only after the operation it rides on is
// complete at the target (data written, or read for a get). It is a plain
// value: carrying one costs no allocation.
//
// A Notice is two machine words, so that it travels in registers from the
// public call through the engine to the transport. A struct of five fields
// would go through memory on every call of that chain, copied as blocks
// over stores of its single fields; on x86 such a load cannot take its
// value from the store buffer and waits until every older store has left
// it, which after a put into another core's cache line is the whole
// transfer of that line. Build one with TagNotice or SignalNotice; the zero
// Notice carries nothing (NoticeNone).
type Notice struct {
	head  uint64 // kind in bits 0-7, signal operation in bits 8-15, tag or offset from bit 16
	value uint64 // signal operand
}

// MaxNoticeOffset is the largest signal offset a Notice holds (2^48-1).
const MaxNoticeOffset = 1<<48 - 1

// TagNotice returns a notice of kind NoticeTag or NoticeCounter with tag
// (or counter index) tag.
func TagNotice(kind NoticeKind, tag int32) Notice {
	return Notice{head: uint64(kind) | uint64(uint32(tag))<<16}
}

// SignalNotice returns a notice that applies op with value to the word at
// byte offset off of the region; an offset past MaxNoticeOffset becomes
// MaxNoticeOffset, which no region holds a word at.
func SignalNotice(op SignalOp, off, value uint64) Notice {
	off = min(off, MaxNoticeOffset)
	return Notice{head: uint64(NoticeSignal) | uint64(op)<<8 | off<<16, value: value}
}

// NoticeOf returns the notice a transport stored as its fields: a signal
// notice (op, off, value) if kind is NoticeSignal, else a notice of kind
// with tag.
func NoticeOf(kind NoticeKind, op SignalOp, tag int32, off, value uint64) Notice {
	if kind == NoticeSignal {
		return SignalNotice(op, off, value)
	}
	return TagNotice(kind, tag)
}

// Kind is the notice's kind.
func (n Notice) Kind() NoticeKind { return NoticeKind(n.head) }

// Op is a signal notice's operation.
func (n Notice) Op() SignalOp { return SignalOp(n.head >> 8) }

// Tag is a NoticeTag's tag or a NoticeCounter's counter index.
func (n Notice) Tag() int32 { return int32(uint32(n.head >> 16)) }

// Offset is a signal notice's byte offset in the region (in the engine,
// until it routes the notice, its displacement).
func (n Notice) Offset() uint64 { return n.head >> 16 }

// Value is a signal notice's operand.
func (n Notice) Value() uint64 { return n.value }

// WithOffset returns the signal notice n with offset off.
func (n Notice) WithOffset(off uint64) Notice {
	return SignalNotice(n.Op(), off, n.value)
}

// Caps describes what a transport does natively. It must match reality:
// the conformance suite checks every advertised capability.
type Caps struct {
	// Name is a short name of the transport ("local", "shm", "tcp").
	Name string
	// Synchronous reports that Put, Get and the atomics are complete at
	// the target when they return, so Flush has nothing to wait for.
	Synchronous bool
	// Direct reports that the transport accesses target memory with loads
	// and stores (in-process or mapped), so remote atomics are coherent
	// with the target's own atomic operations on its memory.
	Direct bool
	// MaxAM is the largest header+payload SendAM accepts, 0 for no limit.
	MaxAM int
}

// Host describes how an endpoint's rank is placed and reached, facts of
// the job rather than capabilities of the transport: the engine's waiting
// policy (poll, yield or sleep) follows them.
type Host struct {
	// NetPoll reports that arrivals from peers are delivered by goroutines
	// of the transport that wait in the Go runtime's network poller. A
	// waiter should then sleep at once rather than yield the processor
	// while it waits: the runtime polls the network only when it has
	// nothing else to run, so a goroutine that keeps yielding delays the
	// very delivery it waits for.
	NetPoll bool
	// Ranks is how many ranks of the job share this rank's host, and so
	// its cores; 0 if the transport does not know (the job's size is then
	// the best guess). A waiter polls busily only while every such rank
	// can have a core.
	Ranks int
	// OneProcess reports that those ranks are goroutines of this process:
	// they share the processors of its runtime (GOMAXPROCS), not the
	// host's cores.
	OneProcess bool
}

// SharesCores reports whether the ranks on this rank's host (Ranks; size,
// the job's, if the transport does not know) outnumber the processors they
// run on: the host's cores, or for goroutine ranks of one process
// (OneProcess) its runtime's processors. Waiters then should not poll
// busily.
func (h Host) SharesCores(size int) bool {
	ranks := h.Ranks
	if ranks <= 0 {
		ranks = size
	}
	cores := runtime.NumCPU()
	if h.OneProcess {
		cores = min(cores, runtime.GOMAXPROCS(0))
	}
	return ranks > cores
}

// AMID selects an active-message handler. The engine owns the numbering.
type AMID uint8

// MaxAMID bounds the handler table.
const MaxAMID = 16

// AMHandler runs at the target for each active message, in the order the
// messages were sent from each source. It may run on any goroutine, must
// not block, and must not retain hdr or payload after it returns. It may
// call SendAM.
type AMHandler func(src int, hdr, payload []byte)

// An AMPlacer chooses where the payload of an active message is written,
// for transports that write a large payload straight into place (shm's
// single copy) instead of into a buffer of their own that the handler
// then copies. Place is asked, on the goroutine that will run the AM
// handler, with the message's source, header and payload length n; it
// returns a buffer of length n, or nil to leave the payload to the
// transport. A buffer it returns is lent to the transport until the
// transport, next and for that message, either runs the AM handler with
// that buffer as the payload (the payload is in it), or calls Unplace
// (it could not write the payload there; the buffer may hold part of it,
// and the message will be delivered later from a buffer of the
// transport's). A transport may never ask.
type AMPlacer interface {
	Place(src int, hdr []byte, n int) []byte
	Unplace(src int, hdr []byte)
}

// Placer is an Endpoint that may place payloads of active messages where
// an AMPlacer says. Handlers provides it.
type Placer interface {
	// SetAMPlacer installs p for the messages of handler id; nil removes it.
	SetAMPlacer(id AMID, p AMPlacer)
}

// NoticeHandler runs at the target once per notified operation, after the
// operation is complete at the target, with the key of the region accessed.
// Notices from one source are delivered in the order they were issued. The
// same rules as for AMHandler apply.
type NoticeHandler func(src int, key Key, n Notice)

// NoticeTaker takes the notices that a Poller's PollNotices finds, on the
// polling goroutine, in the order a NoticeHandler would get them. It
// reports whether the caller now has what it polls for: PollNotices then
// returns without looking further, and what arrived after that notice
// waits for the next poll.
type NoticeTaker func(src int, key Key, n Notice) (done bool)

// FailureHandler is told that a peer failed; err says why.
type FailureHandler func(peer int, err error)

// Endpoint is one rank's view of the transport. Its methods are safe for
// concurrent use.
//
// Data operations live on Region values obtained from Endpoint.Region.
type Endpoint interface {
	// Rank and Size give this endpoint's rank and the number of ranks.
	Rank() int
	Size() int
	// Caps reports the transport's capabilities.
	Caps() Caps
	// Host reports how this rank is placed and reached.
	Host() Host

	// Expose makes mem accessible to remote operations and returns its
	// key. mem must stay valid until Unexpose; it should come from
	// mem.Alloc so that it is aligned for atomics (and, on transports that
	// share memory across processes, mapped).
	Expose(mem []byte) (Key, error)
	// Unexpose withdraws a region. Later operations on it fail with
	// ErrNoRegion at the origin or are refused at the target.
	Unexpose(key Key) error
	// Region returns a handle for operations on the region key exposed by
	// target, of the given size in bytes (as the target announced it).
	// It may be cached for the life of the region.
	Region(target int, key Key, size int) (Region, error)

	// Flush waits until every operation this endpoint issued to target
	// is complete at the target. FlushAll does so for every target.
	Flush(ctx context.Context, target int) error
	FlushAll(ctx context.Context) error

	// SendAM delivers hdr and payload to target's handler id. The call
	// copies both (or completes before returning); messages from one
	// source to one target are handled in the order they were sent.
	SendAM(target int, id AMID, hdr, payload []byte) error
	// SetAMHandler installs the handler for id; it must be called before
	// any peer can send to it (the engine installs all handlers before its
	// first collective).
	SetAMHandler(id AMID, h AMHandler)
	// SetNoticeHandler installs the handler for notices.
	SetNoticeHandler(h NoticeHandler)
	// SetFailureHandler installs the handler told of failed peers.
	SetFailureHandler(h FailureHandler)

	// Close releases the endpoint. Operations after Close fail with
	// ErrClosed.
	Close() error
}

// Region is a remote memory region at one target. Offsets and lengths are
// in bytes and must lie inside the region; atomics need offsets aligned to
// the element size. A transport validates every access again at the target
// (an origin is not trusted), so a bad access fails with ErrBounds and
// writes nothing.
//
// Each operation is issued when the call returns. If it is not yet complete
// (never on a Synchronous transport), the transport calls c.Add(1) before
// returning and c.Done when it completes; c may be nil. Results (Get's dst,
// the result buffers of the fetching atomics) are valid after completion.
// Sources of at most 8 bytes (single-element atomics, compare and swap
// values) are consumed before the call returns, like libfabric's inject;
// larger sources must stay unchanged until the operation completes.
// Operations from one origin to one target with a notice are delivered in
// issue order, and a notice is delivered only after every operation issued
// before it from the same origin to the same target is complete at the
// target (so a strided operation, split into pieces, may carry its notice
// on the last piece); accumulates from one origin to one target are
// applied in issue order.
type Region interface {
	// Size returns the region's size in bytes.
	Size() int
	// Put writes src at off.
	Put(off int, src []byte, n Notice, c *Completion) error
	// Get reads len(dst) bytes at off into dst.
	Get(off int, dst []byte, n Notice, c *Completion) error
	// Accumulate applies op element-wise, each element atomically:
	// target[i] = target[i] op src[i]. If result is not nil, it receives
	// the previous target contents (a fetching accumulate); with NoOp
	// the target is only read.
	Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n Notice, c *Completion) error
	// CompareSwap atomically replaces the element at off with swap if it
	// equals compare; result receives the previous value.
	CompareSwap(off int, t mem.Type, compare, swap, result []byte, n Notice, c *Completion) error
}

// A LocalFlusher is an endpoint whose operations may be complete at the
// origin before they are complete at the target: a put's source read, a
// get's or a fetching atomic's result in place, while the target may not
// have applied the put yet. FlushLocal waits for that only: afterwards
// the caller may reuse every buffer it gave the operations issued to
// target before the call, and read their results. An endpoint that is
// not a LocalFlusher completes both ends together, and its Flush stands
// for FlushLocal (the package's FlushLocal function chooses).
type LocalFlusher interface {
	FlushLocal(ctx context.Context, target int) error
	FlushLocalAll(ctx context.Context) error
}

// FlushLocal waits until the operations ep issued to target are complete
// at the origin: ep's FlushLocal if it is a LocalFlusher, else its Flush.
func FlushLocal(ctx context.Context, ep Endpoint, target int) error {
	if lf, ok := ep.(LocalFlusher); ok {
		return lf.FlushLocal(ctx, target)
	}
	return ep.Flush(ctx, target)
}

// FlushLocalAll is FlushLocal for every target.
func FlushLocalAll(ctx context.Context, ep Endpoint) error {
	if lf, ok := ep.(LocalFlusher); ok {
		return lf.FlushLocalAll(ctx)
	}
	return ep.FlushAll(ctx)
}

// WordRegion is implemented by the regions of transports that reach
// target memory with atomic instructions (Caps.Direct). Word returns the
// aligned 64-bit word at off of the region as a Word, checked once, here:
// the engine keeps one for each of its lock words, so that taking a lock
// costs one atomic instruction rather than a Region call and its checks.
// Data and every other control word go through the Region methods.
type WordRegion interface {
	Region
	Word(off int) (Word, error)
}

// A MappedRegion is a Region whose memory this process reaches with
// loads and stores: the target's memory itself (ranks as goroutines) or
// a mapping of it (processes of one host). Mapped returns it, the
// region's size long, or false if this handle does not reach it that
// way (a wrapper whose inner region may or may not be mapped). Loads
// and stores through it are the program's: the transport neither orders
// nor notices them.
type MappedRegion interface {
	Region
	Mapped() ([]byte, bool)
}

// A MemorySharer is an endpoint that knows which ranks' exposed memory it
// maps (MappedRegion): SharesMemory reports whether rank's regions are
// reachable with loads and stores from this process. It is an
// equivalence among the ranks of a job (the ranks of one host, or of one
// process), and true for the rank itself. An endpoint that is not a
// MemorySharer maps no peer's memory.
type MemorySharer interface {
	SharesMemory(rank int) bool
}

// Word is a 64-bit word of a target's memory that atomics apply to at
// once (WordRegion). Its methods return the word's previous value.
type Word interface {
	// CompareSwap replaces the word by new if it equals old.
	CompareSwap(old, new uint64) (prev uint64)
	// Add adds delta to the word, modulo 2^64.
	Add(delta uint64) (prev uint64)
}

// Errors returned by transports.
var (
	ErrBounds   = errors.New("transport: access outside the region")
	ErrNoRegion = errors.New("transport: no such region")
	ErrClosed   = errors.New("transport: endpoint closed")
	ErrPeer     = errors.New("transport: peer failed")
	ErrAlign    = errors.New("transport: atomic access not aligned to the element size")
	ErrTooLarge = errors.New("transport: active message too large")
)

// Poller is implemented by endpoints whose notices and active messages
// wait in queues that the receiving rank drains (the rings of a
// shared-memory transport) rather than being handled by the sender. The
// transport drains them in the background as well, so handlers run even
// if nobody polls; polling only makes delivery faster. The engine's
// waiters poll while they spin, yield while they wait a little longer,
// and then sleep: on the transport's doorbell if it is also a Sleeper,
// else on their own after calling Park.
type Poller interface {
	// Poll runs the handlers of whatever had arrived when it was called,
	// or of a first part of it, on the calling goroutine, and reports
	// whether it ran any: a caller that needs every handler run polls
	// until Poll reports false. (A transport may stop where going on
	// would cost the caller, who may be waiting for what it handled
	// already, a wait for memory another core is writing, or after a few
	// notices, so that a stream that keeps coming does not keep the
	// caller from looking at what it waits for.) If another
	// goroutine is draining, it waits for that one to finish (handlers
	// never block, so this is short). It must not be called from a
	// handler.
	Poll() bool
	// PollNotices is Poll, except that the notices it finds are given to
	// t instead of the installed notice handler (a waiter that can use
	// them at once takes them without a detour through shared state),
	// and that it stops after a notice for which t reports done: a
	// waiter whose notice came is not kept polling by those that follow
	// it in a stream. A nil t makes it Poll.
	PollNotices(t NoticeTaker) bool
	// Yield gives the processor for a moment to other goroutines of
	// this process that are ranks of the job, and to other threads of any
	// process (sched_yield): ranks that are processes may share cores.
	Yield()
	// Park tells the transport that the caller stops polling and goes to
	// sleep until a handler wakes it, so that background delivery must
	// now react to every arrival.
	Park()
}

// Waker is implemented by endpoints whose ranks may wait for changes that
// a peer makes with loads and stores, through a MappedRegion, rather than
// through the transport's operations: a signal word that the origin sets
// itself, where the target's memory is mapped, instead of sending a
// notice. WakeRank makes rank's waiters look again, as an arrival would
// (it rings the doorbell a Sleeper's waiters sleep on); it costs a load
// unless one sleeps. It need not wake the transport's background
// delivery: the change is nothing that delivery takes. The caller makes its change, a plain store if it
// likes, before it calls WakeRank, which orders the caller's stores
// before its look at rank's sleepers, so that a waiter registering to
// sleep either sees the change or is woken.
type Waker interface {
	WakeRank(rank int)
}

// Sleeper is implemented by Pollers whose waiters can sleep on the
// transport's own doorbell (a futex that producers ring), so that an
// arrival wakes the waiting thread itself rather than a background
// goroutine that then wakes it.
//
// A waiter first calls Prepare, then looks for what it waits for (Poll,
// its own condition), then either sleeps with Sleep, passing Prepare's
// ticket, or calls Cancel. Every arrival and every Wake after Prepare
// ends that Sleep (or makes it return at once), however many goroutines
// of the endpoint sleep: none is owed to one sleeper only.
type Sleeper interface {
	Poller
	// Prepare registers the caller as about to sleep and returns its
	// ticket. It must be followed by exactly one Sleep or Cancel.
	Prepare() uint32
	// Sleep blocks the calling goroutine (and its thread) until
	// something arrives that Poll would deliver, Wake is called (either
	// since the Prepare that gave ticket), or d passes; it may return
	// early. It ends the registration of Prepare.
	Sleep(ticket uint32, d time.Duration)
	// Cancel ends the registration of Prepare without sleeping.
	Cancel()
	// Wake ends the Sleep of every sleeper of this endpoint and of every
	// goroutine between Prepare and Sleep.
	Wake()
}
