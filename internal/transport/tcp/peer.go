package tcp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Peer states. A peer starts live and leaves that state once.
const (
	pLive   uint32 = iota
	pClosed        // it said goodbye
	pFailed        // it died, fell silent, or misbehaved
)

// peer is this endpoint's view of one other rank: at most one connection
// that this endpoint opened (out: its requests, the peer's replies) and at
// most one that the peer opened (in: the peer's requests, our replies).
type peer struct {
	ep   *Endpoint
	rank int
	addr string // where it listens; set once by New

	smu    sync.Mutex // guards the state transition and reason
	state  atomic.Uint32
	reason error // why it left pLive; set under smu before state changes

	mu   sync.Mutex // serializes dialing
	inMu sync.Mutex // serializes attaching
	out  atomic.Pointer[outConn]
	in   atomic.Pointer[inConn]

	// lastHeard is the time (unix nanoseconds) of its last sign of life:
	// a frame received from it, or progress through a large payload
	// that it sends or takes.
	lastHeard atomic.Int64
	pinging   atomic.Bool
}

// heard records a sign of life of the peer.
func (p *peer) heard() { p.lastHeard.Store(time.Now().UnixNano()) }

// err returns nil while the peer is live, else why it is not.
func (p *peer) err() error {
	if p.state.Load() == pLive {
		return nil
	}
	p.smu.Lock()
	defer p.smu.Unlock()
	return p.reason
}

// leave moves the peer from pLive to s with reason err; it reports
// whether it did (false if the peer had already left).
func (p *peer) leave(s uint32, err error) bool {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.state.Load() != pLive {
		return false
	}
	p.reason = err
	p.state.Store(s)
	return true
}

// fail declares the peer failed: its connections are closed, what waits
// on them fails with err (which must match transport.ErrPeer), and the
// failure handler is told, once.
func (p *peer) fail(err error) {
	if !p.leave(pFailed, err) {
		return
	}
	p.shut(err)
	if h := p.ep.Failure(); h != nil && p.ep.open() {
		h(p.rank, err)
	}
}

// markClosed records that the peer closed in an orderly way. Its
// connections stay open for the goodbye to be answered; the peer closes
// them.
func (p *peer) markClosed() {
	err := fmt.Errorf("tcp: rank %d closed: %w", p.rank, transport.ErrPeer)
	if !p.leave(pClosed, err) {
		return
	}
	if o := p.out.Load(); o != nil {
		o.failCalls(err)
	}
}

// shut closes the peer's connections and fails their calls with err.
func (p *peer) shut(err error) {
	o, in := p.out.Load(), p.in.Load()
	if o != nil {
		o.close(err)
	}
	if in != nil {
		in.c.Close()
	}
}

// lost handles the end of a connection to the peer: nothing more if the
// peer or this endpoint closed, else the peer failed.
func (p *peer) lost(what string, err error) {
	if p.state.Load() == pClosed || !p.ep.open() {
		p.shut(transport.ErrClosed)
		return
	}
	p.fail(fmt.Errorf("tcp: rank %d: %s: %v: %w", p.rank, what, err, transport.ErrPeer))
}

// conn returns the connection to the peer for this endpoint's requests,
// opening it on first use.
func (p *peer) conn() (*outConn, error) {
	if o := p.out.Load(); o != nil {
		if err := p.err(); err != nil {
			return nil, err
		}
		return o, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.err(); err != nil {
		return nil, err
	}
	if !p.ep.open() {
		return nil, transport.ErrClosed
	}
	if o := p.out.Load(); o != nil {
		return o, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.ep.timeout)
	defer cancel()
	var d net.Dialer
	p.ep.spinner.begin() // the dial and handshake wait in the network poller
	c, err := d.DialContext(ctx, "tcp", p.addr)
	if err == nil {
		raceDialed(c)
		// The handshake shares the dial's deadline: a peer that
		// accepts and then says nothing fails within the peer timeout.
		deadline, _ := ctx.Deadline()
		err = clientHandshake(c, p.ep.secret, p.ep.rank, p.rank, p.ep.size, deadline)
		if err != nil {
			c.Close()
		}
	}
	p.ep.spinner.end()
	if err != nil {
		// Both wrapped: the caller may tell a refusal (ErrVersion,
		// ErrAuth) from a dead peer.
		p.fail(fmt.Errorf("tcp: rank %d at %s: %w: %w", p.rank, p.addr, err, transport.ErrPeer))
		return nil, p.err()
	}
	o := newOutConn(p, p.ep.wrap(raceWrap(p.ep.spinner.wrap(c), true), p.rank, true))
	p.heard()
	p.out.Store(o)
	if err := p.err(); err != nil || !p.ep.open() {
		// The peer failed or this endpoint stopped while we dialed:
		// shut may have missed the new connection.
		o.close(transport.ErrClosed)
		if err == nil {
			err = transport.ErrClosed
		}
		return nil, err
	}
	if !p.ep.track(o.readReplies) {
		o.close(transport.ErrClosed)
		return nil, transport.ErrClosed
	}
	return o, nil
}

// attach records the connection the peer opened to this endpoint, once
// its handshake succeeded; an error refuses it.
func (p *peer) attach(c net.Conn) (*inConn, error) {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if !p.ep.open() {
		return nil, transport.ErrClosed
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if p.in.Load() != nil {
		return nil, fmt.Errorf("tcp: rank %d is already connected", p.rank)
	}
	in := newInConn(p, p.ep.wrap(raceWrap(p.ep.spinner.wrap(c), false), p.rank, false))
	p.heard()
	p.in.Store(in)
	if !p.ep.open() || p.err() != nil {
		// Close began, or the peer failed, while we attached: shut may
		// have missed the connection.
		in.c.Close()
		return nil, transport.ErrClosed
	}
	return in, nil
}

// limitWrites bounds every write on the peer's connections to finish by
// t: Close sets it, so that a peer that stopped reading cannot hold its
// goodbye (or a writer it waits behind) forever.
func (p *peer) limitWrites(t time.Time) {
	if o := p.out.Load(); o != nil {
		o.c.SetWriteDeadline(t)
	}
	if in := p.in.Load(); in != nil {
		in.c.SetWriteDeadline(t)
	}
}

// sayBye tells the peer that this endpoint closes, on each connection
// there is, and returns what to wait on for its answers.
func (p *peer) sayBye() []chan error {
	if p.state.Load() != pLive {
		return nil
	}
	var waits []chan error
	if o := p.out.Load(); o != nil {
		w := newWaiter()
		if o.send(&header{kind: KindBye}, nil, &call{w: w}) == nil {
			waits = append(waits, w.ch)
		}
	}
	if in := p.in.Load(); in != nil {
		if in.replyBye() == nil {
			waits = append(waits, in.byeAck)
		}
	}
	return waits
}

// check is the heartbeat's visit: a peer silent for longer than timeout
// fails, and a connection of this endpoint's gets a ping, which the peer
// answers, if it was idle or the peer was silent for longer than every
// (times in nanoseconds). The peer answers only requests: an origin that
// streams puts hears from it through its pings, which go out between
// frames.
func (p *peer) check(now, every, timeout int64) {
	if p.state.Load() != pLive {
		return
	}
	o, in := p.out.Load(), p.in.Load()
	if o == nil && in == nil {
		return
	}
	silent := now - p.lastHeard.Load()
	if silent > timeout {
		p.fail(fmt.Errorf("tcp: rank %d silent for %v: %w", p.rank, time.Duration(silent).Round(time.Millisecond), transport.ErrPeer))
		return
	}
	if o == nil || now-o.lastSent.Load() <= every && silent <= every {
		return
	}
	// The next writer sends the ping; if none comes, a goroutine does (a
	// write may wait for the peer to read: never in the heartbeat).
	o.pingDue.Store(true)
	if p.pinging.CompareAndSwap(false, true) {
		p.ep.wg.Add(1)
		go func() {
			defer p.ep.wg.Done()
			defer p.pinging.Store(false)
			o.ping()
		}()
	}
}

// startFlush sends a flush request if operations were issued to the peer
// since the last flush answered, and returns the call to wait on (nil if
// there is nothing to flush).
func (p *peer) startFlush() (*waiter, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	o := p.out.Load()
	if o == nil {
		return nil, nil
	}
	return o.flush()
}
