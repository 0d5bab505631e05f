//go:build fabric

package fabric

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Config says how to open one rank's endpoint.
type Config struct {
	// Rank and Size place the endpoint in its job.
	Rank, Size int
	// Provider names the libfabric provider ("tcp;ofi_rxm", "verbs;ofi_rxm",
	// "cxi", "efa"); empty lets libfabric choose (FI_PROVIDER applies).
	Provider string
	// Node is the local address to open the endpoint on ("127.0.0.1"),
	// empty for the provider's choice; Domain names the domain (a NIC,
	// an interface), empty for any.
	Node, Domain string
	// Exchange gives every rank's data, in rank order, in return for
	// this rank's: the job's bootstrap (an allgather).
	Exchange func(ctx context.Context, data []byte) ([][]byte, error)
	// Ranks is how many ranks share this rank's host, 0 if unknown;
	// OneProcess says they are goroutines of this process.
	Ranks      int
	OneProcess bool
	// Timeout bounds the wait for a peer's answer to a control message
	// (a region lookup, a withdrawal, a goodbye), and how long a peer
	// may stay silent before it counts as dead (heartbeat.go); 0 means
	// 30 seconds.
	Timeout time.Duration
	// SoftwareAtomics applies atomics in software at the target even if
	// the provider has native ones. Every rank of a job must set it
	// alike.
	SoftwareAtomics bool
	// RegisterLocal registers every buffer the endpoint hands libfabric
	// and passes its descriptor, as it does anyway for providers that
	// ask for it (FI_MR_LOCAL): for tests of that path on providers that
	// do not.
	RegisterLocal bool

	// checkRegistration, in tests, checks each buffer against the
	// descriptor passed with it (Endpoint.registrationFailures).
	checkRegistration bool
	// noDelivery, in tests, declines FI_DELIVERY_COMPLETE, so that
	// Flush asks the target as on providers without it.
	noDelivery bool
	// noLazy, in tests, has every write ask for delivery completion, as
	// on providers that do not land writes in order.
	noLazy bool
}

// Endpoint is one rank's endpoint of the fabric transport. It implements
// transport.Endpoint and transport.Poller.
type Endpoint struct {
	transport.Handlers

	lib     *lib
	attr    attr
	rank    int
	size    int
	host    transport.Host
	timeout time.Duration
	closed  atomic.Bool
	peers   []*peer

	ops     opTable
	regions regionTable

	hmu     sync.Mutex
	handles map[handleKey]*region // nil once closed

	life   guard // calls into libfabric, which Close waits out
	prog   progress
	sbuf   bufPool               // C buffers for sends
	counts [nclass]atomic.Uint64 // libfabric operations issued
	// lazy: writes complete when sent, and confirms tell when they were
	// delivered (ops.go), writing into the target's confirm word, which
	// is confirmBuf here (registered for remote writes).
	lazy       bool
	confirmBuf cbuf
	confirms   atomic.Uint64 // confirms issued
	limits     *atomicLimits // native atomics' limits; nil: software atomics

	// selfEvents counts the messages and CQ-data notices this endpoint
	// issued to itself through libfabric and has not handled yet (with
	// native atomics): while there are any, an operation on its own
	// regions does not apply at once, or its notice would overtake
	// theirs.
	selfEvents atomic.Int64

	beatStop chan struct{} // closed by Close: the heartbeat ends
	beatDone chan struct{} // closed by the heartbeat as it ends

	regLocal  bool          // register local buffers (FI_MR_LOCAL, or Config.RegisterLocal)
	localKeys atomic.Uint64 // requested keys of local registrations
	regs      *regCheck     // in tests: every buffer checked against its descriptor
}

// Counts says how many libfabric operations an endpoint issued, by kind:
// each is one network operation.
type Counts struct {
	Writes     uint64 // fi_write without remote CQ data
	WritesData uint64 // fi_writedata: a write carrying a notice
	Reads      uint64 // fi_read
	Sends      uint64 // fi_send: messages (notices that did not fit, software atomics, active messages, control)
	Atomics    uint64 // fi_atomic, fi_fetch_atomic, fi_compare_atomic: native atomics
	Confirms   uint64 // one-word fi_write asking for delivery completion, which confirms the writes before it (a Flush, or a notice after them)
}

// Counts returns the operations the endpoint issued so far.
func (e *Endpoint) Counts() Counts {
	return Counts{
		Writes:     e.counts[classW].Load(),
		WritesData: e.counts[classD].Load(),
		Reads:      e.counts[classR].Load(),
		Sends:      e.counts[classS].Load(),
		Atomics:    e.counts[classAW].Load() + e.counts[classAR].Load(),
		Confirms:   e.confirms.Load(),
	}
}

var (
	_ transport.Endpoint     = (*Endpoint)(nil)
	_ transport.Poller       = (*Endpoint)(nil)
	_ transport.LocalFlusher = (*Endpoint)(nil)
)

// caps is what the transport offers: asynchronous operations, no direct
// access, active messages of any size.
var caps = transport.Caps{Name: "fabric"}

// New opens this rank's endpoint and connects it to the others: it
// exchanges the endpoints' addresses through cfg.Exchange, which every
// rank must call in the same round.
func New(ctx context.Context, cfg Config) (*Endpoint, error) {
	e, name, err := open(cfg)
	if err != nil {
		return nil, err
	}
	names, err := cfg.Exchange(ctx, name)
	if err == nil {
		err = e.connect(names)
	}
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("fabric: rank %d: %w", cfg.Rank, err)
	}
	return e, nil
}

// Group opens n connected endpoints in this process, ranks as
// goroutines; cfg gives the provider, node and domain.
func Group(cfg Config, n int) ([]*Endpoint, error) {
	if n <= 0 {
		return nil, fmt.Errorf("fabric: group of %d ranks", n)
	}
	eps := make([]*Endpoint, 0, n)
	names := make([][]byte, 0, n)
	fail := func(err error) ([]*Endpoint, error) {
		for _, e := range eps {
			e.Close()
		}
		return nil, err
	}
	for r := range n {
		c := cfg
		c.Rank, c.Size, c.Ranks, c.OneProcess = r, n, n, true
		e, name, err := open(c)
		if err != nil {
			return fail(err)
		}
		eps = append(eps, e)
		names = append(names, name)
		if n > 1 && e.attr.prov == sharedMemoryProvider {
			return fail(fmt.Errorf("fabric: provider %s cannot run several ranks in one process (libfabric 1.17 crashes in fi_cq_read): run the ranks as processes (narmarun), or choose another provider", e.attr.prov))
		}
	}
	for i := range names {
		for j := range i {
			if bytes.Equal(names[i], names[j]) {
				return fail(fmt.Errorf("fabric: provider %s gives endpoints %d and %d of one process the same address %q: run the ranks as processes", eps[0].attr.prov, j, i, names[i]))
			}
		}
	}
	for _, e := range eps {
		if err := e.connect(names); err != nil {
			return fail(fmt.Errorf("fabric: rank %d: %w", e.rank, err))
		}
	}
	return eps, nil
}

// sharedMemoryProvider is libfabric's provider for processes of one
// host, which serves one endpoint per process only.
const sharedMemoryProvider = "shm"

// open opens the endpoint and returns it with its address.
func open(cfg Config) (*Endpoint, []byte, error) {
	if cfg.Size <= 0 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, nil, fmt.Errorf("fabric: rank %d of %d", cfg.Rank, cfg.Size)
	}
	l, a, err := openLib(cfg.Provider, cfg.Node, cfg.Domain, !cfg.noDelivery)
	if err != nil {
		return nil, nil, fmt.Errorf("fabric: rank %d: %w", cfg.Rank, err)
	}
	if !a.delivery && a.msgOrder&(orderSAW|orderSAR) != orderSAW|orderSAR {
		l.close()
		return nil, nil, fmt.Errorf("fabric: rank %d: provider %s completes operations neither when delivered nor in order with messages: Flush could not tell when data arrived", cfg.Rank, a.prov)
	}
	name, err := l.name(a.addrLen)
	if err != nil {
		l.close()
		return nil, nil, fmt.Errorf("fabric: rank %d: %w", cfg.Rank, err)
	}
	e := &Endpoint{
		lib:     l,
		attr:    a,
		rank:    cfg.Rank,
		size:    cfg.Size,
		host:    transport.Host{Ranks: cfg.Ranks, OneProcess: cfg.OneProcess},
		timeout: cfg.Timeout,
		handles: make(map[handleKey]*region),
	}
	if e.timeout <= 0 {
		e.timeout = 30 * time.Second
	}
	e.peers = make([]*peer, cfg.Size)
	for r := range e.peers {
		e.peers[r] = &peer{rank: r}
	}
	e.sbuf.e, e.sbuf.size = e, msgBufSize
	e.regLocal = a.mrMode&mrLocal != 0 || cfg.RegisterLocal
	if cfg.checkRegistration {
		e.regs = newRegCheck()
	}
	mode := atomicsSoftware
	if !cfg.SoftwareAtomics && a.delivery {
		if e.limits = queryAtomics(l); e.limits != nil {
			mode = atomicsNative
		}
	}
	// The address travels with the confirm word and the choice of
	// atomics (connect checks that all ranks made the same).
	name = append(name, e.openConfirm(cfg)...)
	name = append(name, mode)
	// Ops for a burst of operations in flight, so that a steady state
	// allocates nothing.
	e.ops.slots = make([]*op, 0, spareOps)
	e.ops.gens = make([]uint32, 0, spareOps)
	e.ops.free = make([]uint32, 0, spareOps)
	e.ops.spare = make([]*op, 0, spareOps)
	for range spareOps / 2 {
		e.ops.spare = append(e.ops.spare, &op{small: new([smallData]byte)})
	}
	return e, name, nil
}

// connect fills the address vector and starts receiving.
func (e *Endpoint) connect(names [][]byte) error {
	if len(names) != e.size {
		return fmt.Errorf("%d addresses for %d ranks", len(names), e.size)
	}
	addrs := make([][]byte, len(names))
	mine := names[e.rank][len(names[e.rank])-1]
	want := e.attr.addrLen + confirmLen + 1
	for r, name := range names {
		if len(name) != want {
			return fmt.Errorf("rank %d sent a %d-byte address, want %d", r, len(name), want)
		}
		if name[len(name)-1] != mine {
			return fmt.Errorf("rank %d applies atomics %s, rank %d %s: set SoftwareAtomics (NARMA_FABRIC_ATOMICS) alike on every rank",
				e.rank, atomicModeName(mine), r, atomicModeName(name[len(name)-1]))
		}
		addrs[r] = name[:e.attr.addrLen]
		c := name[e.attr.addrLen : e.attr.addrLen+confirmLen]
		p := e.peers[r]
		p.confirmable = c[0] == 1
		p.confirmAddr = binary.LittleEndian.Uint64(c[1:])
		p.confirmKey = binary.LittleEndian.Uint64(c[9:])
	}
	if err := e.lib.insert(addrs, e.attr.addrLen); err != nil {
		return err
	}
	if err := e.prog.start(e); err != nil {
		return err
	}
	e.beatStop, e.beatDone = make(chan struct{}), make(chan struct{})
	go e.heartbeat()
	return nil
}

// confirmLen is the size of a confirm word's part of an address: 1 if
// there is one, its address and its key.
const confirmLen = 17

// confirmKeyReq is the key requested for the confirm word's
// registration, apart from those of regions (slot<<20 | generation) and
// of local registrations (localKeyBase and up).
const confirmKeyReq = 1 << 62

// openConfirm registers the endpoint's confirm word if its writes may
// be lazy (ops.go): the provider keeps writes in issue order and
// completes them on delivery when asked. It returns the word's part of
// the endpoint's address, all zeros if there is none.
func (e *Endpoint) openConfirm(cfg Config) []byte {
	out := make([]byte, confirmLen)
	a := e.attr
	if cfg.noLazy || !a.lazyWrites() {
		return out
	}
	b := newCbuf(8)
	mr, key, err := e.lib.register(b.b, confirmKeyReq)
	if err != nil {
		b.free()
		return out // every write asks for delivery
	}
	b.mr = mr
	e.confirmBuf, e.lazy = b, true
	addr := uint64(0)
	if a.mrMode&mrVirtAddr != 0 {
		addr = addrOf(b.b)
	}
	out[0] = 1
	binary.LittleEndian.PutUint64(out[1:], addr)
	binary.LittleEndian.PutUint64(out[9:], key)
	return out
}

// Rank returns the endpoint's rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size returns the number of ranks.
func (e *Endpoint) Size() int { return e.size }

// Caps reports the transport's capabilities.
func (e *Endpoint) Caps() transport.Caps { return caps }

// Host reports how the rank is placed.
func (e *Endpoint) Host() transport.Host { return e.host }

// Provider returns the provider, fabric and domain the endpoint runs on.
func (e *Endpoint) Provider() (prov, fabric, domain string) {
	return e.attr.prov, e.attr.fabric, e.attr.domain
}

// open reports whether the endpoint is not closed.
func (e *Endpoint) open() bool { return !e.closed.Load() }

// peer returns the live peer target, or why not.
func (e *Endpoint) peer(target int) (*peer, error) {
	if !e.open() {
		return nil, transport.ErrClosed
	}
	if target < 0 || target >= e.size {
		return nil, fmt.Errorf("fabric: rank %d in a job of %d: %w", target, e.size, transport.ErrPeer)
	}
	p := e.peers[target]
	if err := p.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// Close says goodbye to the peers, so that what they aim at this rank
// fails at once with ErrPeer, and releases the endpoint: operations in
// flight fail with ErrClosed.
func (e *Endpoint) Close() error { return e.close(true) }

// Kill closes the endpoint as if its process died: no goodbye, so the
// peers learn of it from failed operations and their heartbeat
// (transporttest.Killer).
func (e *Endpoint) Kill() error { return e.close(false) }

func (e *Endpoint) close(goodbye bool) error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.beatStop != nil {
		close(e.beatStop)
		<-e.beatDone
	}
	if goodbye && e.prog.running() {
		e.goodbye()
	}
	e.hmu.Lock()
	for _, h := range e.handles {
		h.stop(hClosed)
	}
	e.handles = nil
	e.hmu.Unlock()
	e.prog.stop()
	// Calls under way (a poll, an issue) end soon: they see the endpoint
	// closed. None starts after this.
	e.life.kill()
	e.regions.releaseAll(e)
	// libfabric lets go of every buffer; then the local registrations
	// close, and last the domain.
	e.lib.shut()
	e.failAll(transport.ErrClosed)
	e.prog.free(e)
	e.confirmBuf.free()
	e.confirmBuf = cbuf{}
	e.sbuf.drop()
	e.lib.close()
	return nil
}

// goodbye tells every live peer that this endpoint closes and waits,
// within the timeout, for their acknowledgements.
func (e *Endpoint) goodbye() {
	var wg sync.WaitGroup
	for _, p := range e.peers {
		if p.rank == e.rank || p.err() != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), min(e.timeout, 2*time.Second))
			defer cancel()
			_, _ = e.call(ctx, p, &msg{kind: msgBye}, nil)
		}()
	}
	wg.Wait()
}

// fail records that peer p failed and tells the failure handler once.
func (e *Endpoint) fail(p *peer, err error) {
	if !p.setErr(err) {
		return
	}
	e.ops.failPeer(p.rank, err)
	if f := e.Failure(); f != nil && e.open() {
		f(p.rank, err)
	}
}

// peer is what this endpoint knows of another rank.
type peer struct {
	rank int

	emu  sync.Mutex
	fail error // set once: the peer failed or closed

	omu     sync.Mutex
	pending [nclass]int // operations in flight, by class
	queue   []*op       // notices waiting for the operations before them

	smu sync.Mutex // one message's fragments go out together

	inflight atomic.Int64 // operations not yet told to their Completion
	local    atomic.Int64 // of those, the ones that hold the caller's memory (op.holdsCaller)

	// For the heartbeat: known once anything went to or came from the
	// peer, alive when it was heard from since the last visit.
	known, alive atomic.Bool

	sendSeq uint32 // the number of the last message issued to the peer; under omu

	// Lazy writes to the peer not yet covered by a confirm, by class
	// (classW, classD); under omu. The peer's confirm word, if it has
	// one (confirmable).
	unconfirmed             [classD + 1]int
	confirmable             bool
	confirmAddr, confirmKey uint64
	sinceFlush              int // writes issued to the peer since the last Flush began; under omu

	// At the target, under the drain: the number of the last message
	// handled from this peer, those that came before their turn, and an
	// active message arriving in fragments.
	recvSeq uint32
	early   map[uint32][]byte
	frag    []byte
	fmsg    msg
}

// err returns why the peer cannot be reached, or nil.
func (p *peer) err() error {
	p.emu.Lock()
	defer p.emu.Unlock()
	return p.fail
}

// setErr records err if no error was recorded and reports whether it did.
func (p *peer) setErr(err error) bool {
	p.emu.Lock()
	defer p.emu.Unlock()
	if p.fail != nil {
		return false
	}
	p.fail = err
	return true
}

// closedPeer is the error of operations aimed at a peer that closed.
func closedPeer(rank int) error {
	return fmt.Errorf("fabric: rank %d closed: %w", rank, transport.ErrPeer)
}

// errIs reports whether err matches one of targets.
func errIs(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// Describe opens an endpoint as cfg says, without connecting it, and
// names what libfabric chose: provider, fabric, domain and the features
// the transport uses.
func Describe(cfg Config) (string, error) {
	l, a, err := openLib(cfg.Provider, cfg.Node, cfg.Domain, !cfg.noDelivery)
	if err != nil {
		return "", fmt.Errorf("fabric: %w", err)
	}
	atomics := "atomics in software at the target (the provider lacks some)"
	switch {
	case cfg.SoftwareAtomics:
		atomics = "atomics in software at the target (asked for)"
	case !a.delivery:
		atomics = "atomics in software at the target (a completion does not say that a native one was applied)"
	case queryAtomics(l) != nil:
		atomics = "native atomics (fi_atomic)"
	}
	l.close()
	return a.describe(a.lazyWrites() && !cfg.noLazy) + "; " + atomics, nil
}

// lazyWrites reports whether writes may complete when sent, confirms
// telling when they were delivered (ops.go): the provider completes
// operations on delivery when asked and keeps writes in order.
func (a attr) lazyWrites() bool { return a.delivery && a.msgOrder&orderWAW != 0 }

// describe says what the provider granted, and whether writes are lazy.
func (a attr) describe(lazy bool) string {
	completion := "on delivery (FI_DELIVERY_COMPLETE)"
	switch {
	case !a.delivery:
		completion = "on transmission, Flush asks the target"
	case lazy:
		completion = "on delivery (FI_DELIVERY_COMPLETE), a stream's writes when sent and confirmed by one"
	}
	notices := fmt.Sprintf("tag and counter notices in %d bytes of remote CQ data", a.cqDataSize)
	switch {
	case a.cqDataSize < 8:
		notices = "notices as messages (remote CQ data too small)"
	case !a.delivery:
		notices = "notices as messages (remote CQ data and messages keep no order without delivery completion)"
	}
	if a.mrMode&mrLocal != 0 {
		notices += "; local buffers registered (FI_MR_LOCAL)"
	}
	return fmt.Sprintf("libfabric provider %s, fabric %s, domain %s: completion %s; %s", a.prov, a.fabric, a.domain, completion, notices)
}

// guard counts the goroutines inside libfabric calls of an endpoint, so
// that Close tears the endpoint down only once none is and none can start
// (a count, not an RWMutex: a handler run by a poll may issue, nesting
// the guard, which a waiting writer would deadlock).
type guard struct{ n atomic.Int64 }

// dead is added to the count by kill: enter fails from then on.
const dead = math.MinInt64 / 2

// enter reports whether the caller may use libfabric; if so it must call
// exit after.
func (g *guard) enter() bool {
	if g.n.Add(1) < 0 {
		g.n.Add(-1)
		return false
	}
	return true
}

// exit ends a use that enter allowed.
func (g *guard) exit() { g.n.Add(-1) }

// kill refuses further uses and waits for those under way to end.
func (g *guard) kill() {
	g.n.Add(dead)
	for g.n.Load() != dead {
		time.Sleep(50 * time.Microsecond)
	}
}
