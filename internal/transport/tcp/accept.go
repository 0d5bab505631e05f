package tcp

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// The listener: incoming connections and their handshakes; and the
// heartbeats, which ping idle connections and fail silent peers.

// maxHandshakes bounds the incoming connections in their handshake at
// once: beyond it, a new connection is closed at once. A rank completes
// its handshake within a round trip or two; only clients that connect
// and say nothing pile up.
const maxHandshakes = 64

// startHandshake records c as in its handshake, unless the endpoint
// stopped or holds maxHandshakes such connections already (false: the
// caller closes c).
func (e *Endpoint) startHandshake(c net.Conn) bool {
	e.hsMu.Lock()
	defer e.hsMu.Unlock()
	if e.hsClosed || len(e.handshaking) >= maxHandshakes {
		return false
	}
	if e.handshaking == nil {
		e.handshaking = make(map[net.Conn]bool)
	}
	e.handshaking[c] = true
	e.spinner.begin() // the handshake waits in the network poller
	return true
}

// endHandshake records that c's handshake is over.
func (e *Endpoint) endHandshake(c net.Conn) {
	e.hsMu.Lock()
	if e.handshaking[c] {
		delete(e.handshaking, c)
		e.spinner.end()
	}
	e.hsMu.Unlock()
}

// closeHandshakes closes the connections in their handshake, and any
// that would start one later: stop does not wait for their handshake
// timeout.
func (e *Endpoint) closeHandshakes() {
	e.hsMu.Lock()
	defer e.hsMu.Unlock()
	e.hsClosed = true
	for c := range e.handshaking {
		c.Close()
	}
}

// accept runs the handshake of every incoming connection, at most
// maxHandshakes at once, and starts its reader.
func (e *Endpoint) accept() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			select {
			case <-e.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors: try again
			continue
		}
		if !e.startHandshake(c) {
			c.Close()
			continue
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.serveConn(c)
		}()
	}
}

// serveConn authenticates an incoming connection and serves it.
func (e *Endpoint) serveConn(c net.Conn) {
	var in *inConn
	origin, err := serverHandshake(c, e.secret, e.rank, e.size, func(origin int) error {
		var err error
		in, err = e.peers[origin].attach(c)
		return err
	})
	e.endHandshake(c)
	if err != nil {
		c.Close()
		if in != nil {
			in.p.fail(fmt.Errorf("tcp: rank %d: handshake: %w: %w", origin, transport.ErrPeer, err))
		}
		return
	}
	in.serve()
}

// heartbeat pings idle connections and fails peers that stayed silent
// longer than the peer timeout.
func (e *Endpoint) heartbeat() {
	defer e.wg.Done()
	every := e.timeout / 5
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		for _, p := range e.peers {
			if p != nil {
				p.check(now, int64(every), int64(e.timeout))
			}
		}
	}
}
