package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
)

// Config places an endpoint in its job.
type Config struct {
	// Rank and Size place the endpoint in the job.
	Rank, Size int
	// Listen is the address the endpoint accepts connections on,
	// "host:port" (port 0 picks a free one). The host should be the
	// address of the interface that reaches the other ranks: the
	// listener binds to it only. Empty means "127.0.0.1:0".
	Listen string
	// Exchange is the job's start-up allgather: every rank passes its
	// data and gets every rank's, indexed by rank. New calls it once,
	// with the address it listens on.
	Exchange func(ctx context.Context, data []byte) ([][]byte, error)
	// Secret is the job secret, at least MinSecret bytes, the same at
	// every rank: connections from peers that do not prove they hold it
	// are refused.
	Secret []byte
	// PeerTimeout bounds how long a peer may stay silent on a connection
	// before it is declared failed (0: DefaultPeerTimeout). Idle
	// connections carry a heartbeat every PeerTimeout/5.
	PeerTimeout time.Duration
	// Delay, if positive, holds every frame this endpoint sends for that
	// long before it reaches the network: a test hook that emulates a
	// long link where the kernel has no netem.
	Delay time.Duration
	// Spin is how long a connection's reader polls its socket, yielding
	// to the process's other goroutines in between, before it waits in
	// the runtime's network poller: a frame that arrives meanwhile is
	// taken without the poller's wake-up. Zero means DefaultSpin while
	// the ranks of this host (those whose address names the same host)
	// do not outnumber its cores, and no polling when they do, as a
	// polling reader would then keep a rank off its core. Negative
	// disables polling.
	Spin time.Duration

	// oneProcess: the job's ranks are goroutines of this process
	// (Group); they share its runtime's processors.
	oneProcess bool
	// wrapConn, if set (by this package's tests), wraps every
	// connection of the endpoint once its handshake is done, inside the
	// Delay line: self and peer are the ranks at either end, and out
	// tells a connection the endpoint opened from one it accepted.
	wrapConn func(self, peer int, out bool, c net.Conn) net.Conn
}

// DefaultPeerTimeout is the PeerTimeout of a zero Config.
const DefaultPeerTimeout = 10 * time.Second

// DefaultSpin is the Spin of a zero Config when every rank of the host
// can have a core: about the round trip of a small frame over loopback
// and a few times that of a local network, so that a reader waiting for
// the answer to what its rank just sent takes it by polling.
const DefaultSpin = 50 * time.Microsecond

// Endpoint states.
const (
	epOpen uint32 = iota
	epClosed
	epKilled
)

// Endpoint is one rank's endpoint of the TCP transport. It implements
// transport.Endpoint.
type Endpoint struct {
	transport.Handlers

	rank, size int
	secret     []byte
	timeout    time.Duration
	delay      time.Duration
	wrapConn   func(self, peer int, out bool, c net.Conn) net.Conn
	ln         net.Listener
	caps       transport.Caps
	host       transport.Host
	spinner    *spinner // the polling of the connections' reads, nil if they never poll

	state atomic.Uint32
	done  chan struct{} // closed when the endpoint stops: ends the accept loop and the heartbeat

	peers []*peer // by rank; nil at this endpoint's own rank

	rmu     sync.RWMutex
	regions map[transport.Key]*exposed
	lastKey uint64 // the word of the last key given out (transport.WordKey)

	hmu     sync.Mutex
	handles map[handleKey]*region
	lookups map[lookupKey]*lookups // Region calls waiting for an answer

	stats counters
	wg    sync.WaitGroup // the accept loop, the heartbeat, the connections' readers

	gmu      sync.Mutex // orders track against stop's wait
	stopping bool       // stop has begun: track starts nothing

	hsMu        sync.Mutex
	handshaking map[net.Conn]bool // incoming connections in their handshake
	hsClosed    bool              // stop closed them: close any later one at once
}

// track runs f on a goroutine that stop waits for, unless stop has begun
// (then it reports false and runs nothing).
func (e *Endpoint) track(f func()) bool {
	e.gmu.Lock()
	defer e.gmu.Unlock()
	if e.stopping {
		return false
	}
	e.wg.Add(1)
	go f()
	return true
}

var _ transport.Endpoint = (*Endpoint)(nil)

// New starts rank cfg.Rank's endpoint: it listens, swaps addresses with
// the other ranks through cfg.Exchange, and returns. Connections are made
// later, on first use.
func New(ctx context.Context, cfg Config) (*Endpoint, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("tcp: rank %d of %d", cfg.Rank, cfg.Size)
	}
	if len(cfg.Secret) < MinSecret {
		return nil, fmt.Errorf("tcp: a job secret of at least %d bytes is required, got %d", MinSecret, len(cfg.Secret))
	}
	if cfg.Exchange == nil && cfg.Size > 1 {
		return nil, errors.New("tcp: no Exchange to find the other ranks")
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp: rank %d: %w", cfg.Rank, err)
	}
	raceListening(ln.Addr())
	e := &Endpoint{
		rank:     cfg.Rank,
		size:     cfg.Size,
		secret:   append([]byte(nil), cfg.Secret...),
		timeout:  cfg.PeerTimeout,
		delay:    cfg.Delay,
		wrapConn: cfg.wrapConn,
		ln:       ln,
		done:     make(chan struct{}),
		peers:    make([]*peer, cfg.Size),
		regions:  make(map[transport.Key]*exposed),
		handles:  make(map[handleKey]*region),
	}
	for r := range e.peers {
		if r != e.rank {
			e.peers[r] = &peer{ep: e, rank: r}
		}
	}
	if cfg.Spin >= 0 {
		// How long reads poll is known once the addresses are
		// (setSpin); peers may connect before.
		e.spinner = newSpinner()
		e.spinner.watch(ln)
	}
	// Accept before the addresses are out: a peer may dial as soon as it
	// has them.
	e.wg.Add(2)
	go e.accept()
	go e.heartbeat()
	if cfg.Size > 1 {
		all, err := cfg.Exchange(ctx, []byte(ln.Addr().String()))
		if err == nil && len(all) != cfg.Size {
			err = fmt.Errorf("exchange returned %d addresses for %d ranks", len(all), cfg.Size)
		}
		if err != nil {
			e.Kill()
			return nil, fmt.Errorf("tcp: rank %d: address exchange: %w", cfg.Rank, err)
		}
		for r, a := range all {
			if r == e.rank {
				continue
			}
			if _, _, err := net.SplitHostPort(string(a)); err != nil {
				e.Kill()
				return nil, fmt.Errorf("tcp: rank %d: address of rank %d: %w", cfg.Rank, r, err)
			}
			e.peers[r].addr = string(a)
		}
	}
	e.caps = transport.Caps{Name: "tcp"}
	e.host = transport.Host{NetPoll: true, Ranks: e.hostRanks(), OneProcess: cfg.oneProcess}
	e.spinner.setSpin(spinFor(cfg.Spin, e.host))
	return e, nil
}

// hostRanks counts the ranks whose address names this endpoint's host,
// this one included.
func (e *Endpoint) hostRanks() int {
	host, _, _ := net.SplitHostPort(e.ln.Addr().String())
	n := 1
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		if h, _, _ := net.SplitHostPort(p.addr); h == host {
			n++
		}
	}
	return n
}

// spinFor is how long readers poll, given Config.Spin and the endpoint's
// placement: set, DefaultSpin, or nothing when the ranks of the host
// outnumber the processors they run on (Host.SharesCores).
func spinFor(spin time.Duration, host transport.Host) time.Duration {
	switch {
	case spin < 0:
		return 0
	case spin > 0:
		return spin
	case host.SharesCores(host.Ranks):
		return 0
	}
	return DefaultSpin
}

// Group returns cfg.Size connected endpoints in this process, endpoint i
// having rank i, all listening on loopback (cfg.Listen, if set, must name
// a host with port 0). Its Rank and Exchange are ignored, and a fresh
// secret is made if cfg.Secret is empty. It is the TCP transport without
// processes, for tests and for running the ranks of one process over it.
func Group(ctx context.Context, cfg Config) ([]*Endpoint, error) {
	if cfg.Size < 1 {
		return nil, errors.New("tcp: group of no ranks")
	}
	if len(cfg.Secret) == 0 {
		cfg.Secret = NewSecret()
	}
	return bootstrap.StartLocal(cfg.Size, func(r int, x func(context.Context, []byte) ([][]byte, error)) (*Endpoint, error) {
		c := cfg
		c.Rank, c.Exchange, c.oneProcess = r, x, true
		return New(ctx, c)
	})
}

// Rank returns the endpoint's rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size returns the number of ranks.
func (e *Endpoint) Size() int { return e.size }

// Caps reports the transport's capabilities: operations complete
// asynchronously, memory is not reached directly, and active messages
// have no size limit (MaxAM 0: the engine sends messages of any size
// eagerly) but the frame's, 1 GiB. The target allocates the payload of a
// large one as its bytes arrive, so that a header alone cannot make it
// allocate that much.
func (e *Endpoint) Caps() transport.Caps { return e.caps }

// Host reports the ranks whose address names this host, and that
// arrivals come through the network poller.
func (e *Endpoint) Host() transport.Host { return e.host }

// Addr returns the address the endpoint listens on.
func (e *Endpoint) Addr() net.Addr { return e.ln.Addr() }

// open reports whether the endpoint is open.
func (e *Endpoint) open() bool { return e.state.Load() == epOpen }

// peer returns the peer of rank target, or an error for a rank out of
// range or this endpoint's own.
func (e *Endpoint) peer(target int) (*peer, error) {
	if uint(target) >= uint(e.size) {
		return nil, fmt.Errorf("tcp: rank %d out of range (size %d)", target, e.size)
	}
	return e.peers[target], nil
}

// SendAM delivers hdr and payload to target's handler id, in order with
// the other active messages to target. It writes on the calling goroutine
// (so it may wait while the target's receive buffer is full) and consumes
// hdr and payload before it returns. A message to this endpoint itself
// runs the handler on the calling goroutine.
func (e *Endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	if !e.open() {
		return transport.ErrClosed
	}
	p, err := e.peer(target)
	if err != nil {
		return err
	}
	if id >= transport.MaxAMID {
		return fmt.Errorf("tcp: AMID %d out of range", id)
	}
	if len(hdr)+len(payload) > maxPayload {
		return fmt.Errorf("tcp: active message of %d bytes: %w", len(hdr)+len(payload), transport.ErrTooLarge)
	}
	if p == nil {
		if h := e.AM(id); h != nil {
			h(e.rank, hdr[:len(hdr):len(hdr)], payload[:len(payload):len(payload)])
		}
		return nil
	}
	o, err := p.conn()
	if err != nil {
		return err
	}
	h := header{kind: KindAM, aux: uint8(id), off: uint64(len(hdr)), length: uint32(len(hdr) + len(payload))}
	return o.send2(&h, hdr, payload)
}

// Close shuts the endpoint down in an orderly way: it tells every peer it
// is connected to and waits (at most the peer timeout) for their answer,
// so that their later operations aimed at it fail with an error matching
// transport.ErrPeer and none of them reports it as failed; then it closes
// its connections and withdraws its regions. Later calls fail with
// transport.ErrClosed. Closing a closed endpoint returns
// transport.ErrClosed, closing a killed one nil.
func (e *Endpoint) Close() error {
	if !e.state.CompareAndSwap(epOpen, epClosed) {
		if e.state.Load() == epKilled {
			return nil
		}
		return transport.ErrClosed
	}
	close(e.done)
	e.ln.Close()
	limit := time.Now().Add(e.timeout)
	for _, p := range e.peers {
		if p != nil {
			p.limitWrites(limit)
		}
	}
	var waits []chan error
	for _, p := range e.peers {
		if p != nil {
			waits = append(waits, p.sayBye()...)
		}
	}
	timer := time.NewTimer(e.timeout)
	defer timer.Stop()
wait:
	for _, ch := range waits {
		select {
		case <-ch:
		case <-timer.C:
			break wait
		}
	}
	e.stop()
	return nil
}

// Kill simulates the abrupt failure of the endpoint's rank, for tests: it
// closes every connection without a word, so that its peers see it fail
// as they would a process that died.
func (e *Endpoint) Kill() error {
	if !e.state.CompareAndSwap(epOpen, epKilled) {
		return nil
	}
	close(e.done)
	e.ln.Close()
	e.stop()
	return nil
}

// stop closes every connection, fails what waits on them, stops the
// endpoint's handles and withdraws its regions, and waits for the
// background goroutines to end.
func (e *Endpoint) stop() {
	e.gmu.Lock()
	e.stopping = true
	e.gmu.Unlock()
	e.closeHandshakes()
	for _, p := range e.peers {
		if p != nil {
			p.shut(transport.ErrClosed)
		}
	}
	e.hmu.Lock()
	for _, h := range e.handles {
		h.stop(hClosed)
	}
	e.handles = nil
	e.hmu.Unlock()
	e.rmu.Lock()
	regions := e.regions
	e.regions = nil
	e.rmu.Unlock()
	for _, x := range regions {
		x.mu.Lock()
		x.dead = true
		x.mu.Unlock()
	}
	e.wg.Wait()
	e.spinner.close()
}
