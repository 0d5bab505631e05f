package hybrid

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/transport"
)

// Endpoint is one rank of a hybrid job: an endpoint of the local
// (shared-memory) transport over the ranks of its host and one of the
// remote (TCP) transport over all ranks, seen as one transport.Endpoint
// with global ranks. It implements transport.Endpoint, transport.Poller
// and transport.Sleeper (through the local endpoint, see the package
// documentation), and Kill for tests; its methods are safe for
// concurrent use.
type Endpoint struct {
	// The handler table the engine sees: global ranks, hybrid keys. The
	// inner endpoints carry translating handlers that look it up at
	// every delivery.
	transport.Handlers

	rank, size int
	local      transport.Endpoint // over the ranks of this host, in rank order
	sleeper    transport.Sleeper  // local as a Sleeper
	waker      transport.Waker    // local as a Waker, if it is one
	remote     transport.Endpoint // over all ranks
	caps       transport.Caps
	host       transport.Host

	localOf  []int // global rank -> local rank, -1 for another host
	globalOf []int // local rank -> global rank

	state  atomic.Uint32 // stateOpen, stateClosed, stateKilled
	failed []atomic.Bool // by global rank: reported to the failure handler

	hmu      sync.Mutex // serializes the handler setters
	localAM  [transport.MaxAMID]transport.AMHandler
	remoteAM [transport.MaxAMID]transport.AMHandler

	expMu sync.Mutex
	live  map[transport.Key]bool   // hybrid keys exposed and not being withdrawn; guarded by expMu
	keys  atomic.Pointer[keyTable] // inner key -> hybrid key; replaced, never modified, under expMu

	pollX atomic.Pointer[pollXlate] // a translator for PollNotices, nil while in use

	// Remote deliveries wake sleepers: see Prepare.
	sleeping atomic.Int32 // goroutines between Prepare and the end of Sleep or Cancel
}

// Endpoint states.
const (
	stateOpen uint32 = iota
	stateClosed
	stateKilled
)

// keyTable maps the inner keys of the live regions back to their hybrid
// keys, for the notices the inner endpoints deliver. It is never modified
// once published.
type keyTable struct {
	fromLocal  map[transport.Key]transport.Key
	fromRemote map[transport.Key]transport.Key
}

var (
	_ transport.Endpoint = (*Endpoint)(nil)
	_ transport.Poller   = (*Endpoint)(nil)
	_ transport.Sleeper  = (*Endpoint)(nil)
	_ transport.Waker    = (*Endpoint)(nil)
)

// killer is transporttest.Killer: endpoints that can simulate the abrupt
// failure of their rank.
type killer interface{ Kill() error }

// New returns rank's hybrid endpoint. hosts gives the host of every rank
// of the job (any labels: equal values mean the same host); local is this
// rank's endpoint of the shared-memory transport over the ranks of its
// host, which are numbered there in increasing global rank; remote is its
// endpoint of the TCP transport over all ranks. local must be a
// transport.Sleeper (as shm endpoints are). The hybrid endpoint owns both
// from then on: it installs its handlers on them and closes them with
// itself.
func New(rank int, hosts []int, local, remote transport.Endpoint) (*Endpoint, error) {
	n := len(hosts)
	if rank < 0 || rank >= n {
		return nil, fmt.Errorf("hybrid: rank %d of %d", rank, n)
	}
	if local == nil || remote == nil {
		return nil, errors.New("hybrid: New needs a local and a remote endpoint")
	}
	if remote.Size() != n || remote.Rank() != rank {
		return nil, fmt.Errorf("hybrid: remote endpoint is rank %d of %d, want %d of %d", remote.Rank(), remote.Size(), rank, n)
	}
	sleeper, ok := local.(transport.Sleeper)
	if !ok {
		return nil, fmt.Errorf("hybrid: local endpoint (%s) is not a transport.Sleeper", local.Caps().Name)
	}
	waker, _ := local.(transport.Waker)
	e := &Endpoint{
		rank: rank, size: n, local: local, sleeper: sleeper, waker: waker, remote: remote,
		localOf: make([]int, n),
		failed:  make([]atomic.Bool, n),
		live:    make(map[transport.Key]bool),
	}
	for g, h := range hosts {
		e.localOf[g] = -1
		if h == hosts[rank] {
			e.localOf[g] = len(e.globalOf)
			e.globalOf = append(e.globalOf, g)
		}
	}
	if local.Size() != len(e.globalOf) || local.Rank() != e.localOf[rank] {
		return nil, fmt.Errorf("hybrid: local endpoint is rank %d of %d, want %d of the %d ranks of host %d",
			local.Rank(), local.Size(), e.localOf[rank], len(e.globalOf), hosts[rank])
	}
	lc, rc := local.Caps(), remote.Caps()
	e.caps = transport.Caps{
		Name: "hybrid(" + lc.Name + "+" + rc.Name + ")",
		// Every operation goes through one of the two: complete on
		// return only if both say so.
		Synchronous: lc.Synchronous && rc.Synchronous,
		// Never Direct: see the package documentation.
		Direct: false,
		MaxAM:  minLimit(lc.MaxAM, rc.MaxAM),
	}
	e.host = transport.Host{
		// Arrivals from other hosts come through the network poller.
		NetPoll: remote.Host().NetPoll,
		// The ranks of this host are the local endpoint's.
		Ranks:      local.Size(),
		OneProcess: local.Host().OneProcess,
	}
	e.keys.Store(&keyTable{fromLocal: map[transport.Key]transport.Key{}, fromRemote: map[transport.Key]transport.Key{}})
	for i := range e.localAM {
		id := transport.AMID(i)
		e.localAM[i] = func(src int, hdr, payload []byte) {
			if h := e.AM(id); h != nil {
				if g, ok := e.global(src); ok {
					h(g, hdr, payload)
				}
			}
		}
		e.remoteAM[i] = func(src int, hdr, payload []byte) {
			if h := e.AM(id); h != nil {
				h(src, hdr, payload)
			}
			e.delivered()
		}
	}
	// Failures are watched from the start, so that each is reported once
	// whichever endpoint sees it first. Notice and active-message
	// handlers are installed on the inner endpoints only when the engine
	// installs its own: until then each inner endpoint keeps its own
	// behaviour for a message without a handler (shm holds it, tcp drops
	// it).
	local.SetFailureHandler(func(peer int, err error) {
		if g, ok := e.global(peer); ok {
			e.peerFailed(g, err)
		}
	})
	remote.SetFailureHandler(e.peerFailed)
	return e, nil
}

// minLimit is the smaller of two limits where 0 means none.
func minLimit(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// Rank returns the endpoint's global rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size returns the number of ranks of the job.
func (e *Endpoint) Size() int { return e.size }

// SharesMemory reports whether rank is on this rank's host and the local
// endpoint maps its memory (transport.MemorySharer).
func (e *Endpoint) SharesMemory(rank int) bool {
	if rank < 0 || rank >= e.size || e.localOf[rank] < 0 {
		return false
	}
	ms, ok := e.local.(transport.MemorySharer)
	return ok && ms.SharesMemory(e.localOf[rank])
}

// Caps reports the capabilities: Name "hybrid(<local>+<remote>)", e.g.
// "hybrid(shm+tcp)"; Synchronous only if both inner transports are;
// never Direct; the smaller MaxAM of the two.
func (e *Endpoint) Caps() transport.Caps { return e.caps }

// Host reports the ranks of this host (the local endpoint's) and that
// arrivals from other hosts come through the network poller.
func (e *Endpoint) Host() transport.Host { return e.host }

// Local returns the inner endpoint over the ranks of this host (local
// ranks: see SameHost).
func (e *Endpoint) Local() transport.Endpoint { return e.local }

// Remote returns the inner endpoint over all ranks.
func (e *Endpoint) Remote() transport.Endpoint { return e.remote }

// SameHost reports whether rank r is on this endpoint's host, and if so
// its rank in the local endpoint.
func (e *Endpoint) SameHost(r int) (localRank int, ok bool) {
	if uint(r) >= uint(e.size) || e.localOf[r] < 0 {
		return -1, false
	}
	return e.localOf[r], true
}

// global returns the global rank of local rank l.
func (e *Endpoint) global(l int) (int, bool) {
	if uint(l) >= uint(len(e.globalOf)) {
		return 0, false
	}
	return e.globalOf[l], true
}

// open reports whether the endpoint is open.
func (e *Endpoint) open() bool { return e.state.Load() == stateOpen }

// route checks target and returns its local rank, or -1 if it is on
// another host.
func (e *Endpoint) route(target int) (int, error) {
	if !e.open() {
		return 0, transport.ErrClosed
	}
	if uint(target) >= uint(e.size) {
		return 0, fmt.Errorf("hybrid: rank %d out of range (size %d)", target, e.size)
	}
	return e.localOf[target], nil
}

// localErr annotates an error of the local endpoint, whose messages name
// local ranks, with the global rank of target.
func (e *Endpoint) localErr(target int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("hybrid: rank %d (local rank %d): %w", target, e.localOf[target], err)
}

// Expose exposes m on both inner endpoints and returns the hybrid key
// that names both exposures (see the package documentation for its
// layout). It fails, exposing nothing, with an error matching ErrKeySpace
// if an inner key does not fit its part of the hybrid key.
func (e *Endpoint) Expose(m []byte) (transport.Key, error) {
	if !e.open() {
		return transport.Key{}, transport.ErrClosed
	}
	kl, err := e.local.Expose(m)
	if err != nil {
		return transport.Key{}, err
	}
	kr, err := e.remote.Expose(m)
	if err != nil {
		e.local.Unexpose(kl)
		return transport.Key{}, err
	}
	key, ok := pack(kl, kr)
	if !ok {
		e.local.Unexpose(kl)
		e.remote.Unexpose(kr)
		return transport.Key{}, fmt.Errorf("hybrid: local key %v, remote key %v (at most %d bytes each): %w",
			kl, kr, halfKey, ErrKeySpace)
	}
	e.expMu.Lock()
	defer e.expMu.Unlock()
	e.live[key] = true
	old := e.keys.Load()
	t := &keyTable{fromLocal: make(map[transport.Key]transport.Key, len(old.fromLocal)+1),
		fromRemote: make(map[transport.Key]transport.Key, len(old.fromRemote)+1)}
	for k, v := range old.fromLocal {
		t.fromLocal[k] = v
	}
	for k, v := range old.fromRemote {
		t.fromRemote[k] = v
	}
	t.fromLocal[kl], t.fromRemote[kr] = key, key
	e.keys.Store(t)
	return key, nil
}

// Unexpose withdraws the region key from both inner endpoints. Notices
// of operations that were applied before the withdrawal are translated
// until both inner endpoints have withdrawn it; a notice that an inner
// endpoint delivers later still (it can only be of an operation that
// raced with Unexpose) is dropped, as the engine would drop a notice for
// a key it no longer knows.
func (e *Endpoint) Unexpose(key transport.Key) error {
	if !e.open() {
		return transport.ErrClosed
	}
	e.expMu.Lock()
	if !e.live[key] {
		e.expMu.Unlock()
		return fmt.Errorf("hybrid: unexpose key %v at rank %d: %w", key, e.rank, transport.ErrNoRegion)
	}
	delete(e.live, key)
	e.expMu.Unlock()

	kl, kr := unpack(key)
	err := errors.Join(e.local.Unexpose(kl), e.remote.Unexpose(kr))

	e.expMu.Lock()
	defer e.expMu.Unlock()
	if e.live[key] {
		// Exposed again meanwhile, with the same inner keys (inner
		// endpoints that reuse keys at once): the mappings are its.
		return err
	}
	old := e.keys.Load()
	t := &keyTable{fromLocal: make(map[transport.Key]transport.Key, len(old.fromLocal)),
		fromRemote: make(map[transport.Key]transport.Key, len(old.fromRemote))}
	for k, v := range old.fromLocal {
		if v != key {
			t.fromLocal[k] = v
		}
	}
	for k, v := range old.fromRemote {
		if v != key {
			t.fromRemote[k] = v
		}
	}
	e.keys.Store(t)
	return err
}

// Region returns a handle on the region key of target: the local
// endpoint's handle on the local part of key if target is on this host,
// else the remote endpoint's on the remote part.
func (e *Endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	l, err := e.route(target)
	if err != nil {
		return nil, err
	}
	kl, kr := unpack(key)
	if l < 0 {
		return e.remote.Region(target, kr, size)
	}
	r, err := e.local.Region(l, kl, size)
	if err != nil {
		return nil, e.localErr(target, err)
	}
	return &localRegion{r: r, ep: e, target: target}, nil
}

// Flush waits until the operations issued to target are complete there,
// through the endpoint that carries them.
func (e *Endpoint) Flush(ctx context.Context, target int) error {
	l, err := e.route(target)
	if err != nil {
		return err
	}
	if l < 0 {
		return e.remote.Flush(ctx, target)
	}
	return e.localErr(target, e.local.Flush(ctx, l))
}

// FlushAll flushes both inner endpoints.
func (e *Endpoint) FlushAll(ctx context.Context) error {
	if !e.open() {
		return transport.ErrClosed
	}
	if err := e.local.FlushAll(ctx); err != nil {
		return err
	}
	return e.remote.FlushAll(ctx)
}

// FlushLocal waits until the operations issued to target are complete
// at the origin, through the endpoint that carries them
// (transport.LocalFlusher).
func (e *Endpoint) FlushLocal(ctx context.Context, target int) error {
	l, err := e.route(target)
	if err != nil {
		return err
	}
	if l < 0 {
		return transport.FlushLocal(ctx, e.remote, target)
	}
	return e.localErr(target, transport.FlushLocal(ctx, e.local, l))
}

// FlushLocalAll is FlushLocal for every target: both inner endpoints.
func (e *Endpoint) FlushLocalAll(ctx context.Context) error {
	if !e.open() {
		return transport.ErrClosed
	}
	if err := transport.FlushLocalAll(ctx, e.local); err != nil {
		return err
	}
	return transport.FlushLocalAll(ctx, e.remote)
}

// SendAM sends through the endpoint that reaches target: messages from
// one rank to another always take the same way, so they keep their
// order.
func (e *Endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	l, err := e.route(target)
	if err != nil {
		return err
	}
	if e.caps.MaxAM > 0 && len(hdr)+len(payload) > e.caps.MaxAM {
		return fmt.Errorf("hybrid: active message of %d bytes (limit %d): %w", len(hdr)+len(payload), e.caps.MaxAM, transport.ErrTooLarge)
	}
	if l < 0 {
		return e.remote.SendAM(target, id, hdr, payload)
	}
	return e.localErr(target, e.local.SendAM(l, id, hdr, payload))
}

// SetAMHandler installs f for id, and the handlers that translate the
// inner endpoints' deliveries to it (removed with a nil f). It panics if
// id is not below transport.MaxAMID.
func (e *Endpoint) SetAMHandler(id transport.AMID, f transport.AMHandler) {
	e.hmu.Lock()
	defer e.hmu.Unlock()
	e.Handlers.SetAMHandler(id, f)
	if f == nil {
		e.local.SetAMHandler(id, nil)
		e.remote.SetAMHandler(id, nil)
		return
	}
	e.local.SetAMHandler(id, e.localAM[id])
	e.remote.SetAMHandler(id, e.remoteAM[id])
}

// SetNoticeHandler installs f for notices, and the handlers that
// translate the inner endpoints' notices to it (removed with a nil f).
func (e *Endpoint) SetNoticeHandler(f transport.NoticeHandler) {
	e.hmu.Lock()
	defer e.hmu.Unlock()
	e.Handlers.SetNoticeHandler(f)
	if f == nil {
		e.local.SetNoticeHandler(nil)
		e.remote.SetNoticeHandler(nil)
		return
	}
	e.local.SetNoticeHandler(e.localNotice)
	e.remote.SetNoticeHandler(e.remoteNotice)
}

// localNotice is the local endpoint's notice handler.
func (e *Endpoint) localNotice(src int, key transport.Key, n transport.Notice) {
	if h := e.Notice(); h != nil {
		if g, k, ok := e.fromLocal(src, key); ok {
			h(g, k, n)
		}
	}
}

// fromLocal translates the source and key of a notice of the local
// endpoint; it reports false for a notice to drop.
func (e *Endpoint) fromLocal(src int, key transport.Key) (int, transport.Key, bool) {
	g, ok := e.global(src)
	if !ok {
		return 0, transport.Key{}, false
	}
	k, ok := e.keys.Load().fromLocal[key]
	return g, k, ok
}

// remoteNotice is the remote endpoint's notice handler.
func (e *Endpoint) remoteNotice(src int, key transport.Key, n transport.Notice) {
	if h := e.Notice(); h != nil {
		if k, ok := e.keys.Load().fromRemote[key]; ok {
			h(src, k, n)
		}
	}
	e.delivered()
}

// peerFailed reports the failure of global rank g, once, whichever inner
// endpoint saw it (and however many did).
func (e *Endpoint) peerFailed(g int, err error) {
	if uint(g) >= uint(e.size) || !e.open() || e.failed[g].Swap(true) {
		return
	}
	if h := e.Failure(); h != nil {
		h(g, err)
	}
	e.delivered()
}

// Close closes both inner endpoints. Closing twice returns
// transport.ErrClosed, closing a killed endpoint nil.
func (e *Endpoint) Close() error {
	if !e.state.CompareAndSwap(stateOpen, stateClosed) {
		if e.state.Load() == stateKilled {
			return nil
		}
		return transport.ErrClosed
	}
	return errors.Join(e.local.Close(), e.remote.Close())
}

// Kill simulates the abrupt failure of the endpoint's rank, for tests
// (transporttest.Killer): both inner endpoints are killed, so that the
// peers on this host and on the others see it fail.
func (e *Endpoint) Kill() error {
	if !e.state.CompareAndSwap(stateOpen, stateKilled) {
		return nil
	}
	var errs []error
	for _, ep := range []transport.Endpoint{e.local, e.remote} {
		if k, ok := ep.(killer); ok {
			errs = append(errs, k.Kill())
		} else {
			errs = append(errs, fmt.Errorf("hybrid: %s endpoint cannot be killed", ep.Caps().Name), ep.Close())
		}
	}
	return errors.Join(errs...)
}
