//go:build race

package tcp

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

// The race detector does not see that bytes read from a socket were
// written to it by another goroutine before: when both ends of a
// connection are in this process (a Group), a get's reply read from the
// target's memory by the write system call, and the origin's later reuse
// of that memory, look like a race. In race builds, the connections
// between endpoints of one process therefore count the bytes written in
// each direction, and a read returns only once the writer has counted
// the bytes it got, which orders the two for the detector.
//
// Connections are recognized by both their addresses, "dialer->listener",
// not by one: ports are reused, and a connection with a stranger (a test's
// raw client or fake peer) counted as one between endpoints would have its
// reader wait forever for counts that nobody makes.

var raceReg struct {
	mu        sync.Mutex
	listeners map[string]bool           // listening addresses of this process's endpoints
	dialed    map[string]bool           // connections dialed here, by "dialer->listener"
	accepted  map[string]bool           // those of them accepted by an endpoint, likewise
	written   map[string]*atomic.Uint64 // bytes written, by "from->to"
}

// racePair is the key of a connection from dialer to listener.
func racePair(dialer, listener net.Addr) string {
	return dialer.String() + "->" + listener.String()
}

func raceCounter(from, to net.Addr) *atomic.Uint64 {
	k := from.String() + "->" + to.String()
	raceReg.mu.Lock()
	defer raceReg.mu.Unlock()
	if raceReg.written == nil {
		raceReg.written = make(map[string]*atomic.Uint64)
	}
	c := raceReg.written[k]
	if c == nil {
		c = new(atomic.Uint64)
		raceReg.written[k] = c
	}
	return c
}

// raceListening records a listener of this process.
func raceListening(a net.Addr) {
	raceReg.mu.Lock()
	defer raceReg.mu.Unlock()
	if raceReg.listeners == nil {
		raceReg.listeners = make(map[string]bool)
		raceReg.dialed = make(map[string]bool)
		raceReg.accepted = make(map[string]bool)
	}
	raceReg.listeners[a.String()] = true
}

// raceDialed records a connection dialed here, before its first byte.
func raceDialed(c net.Conn) {
	raceReg.mu.Lock()
	defer raceReg.mu.Unlock()
	if raceReg.listeners[c.RemoteAddr().String()] {
		raceReg.dialed[racePair(c.LocalAddr(), c.RemoteAddr())] = true
	}
}

// raceWrap returns c counting its bytes if its other end is in this
// process: at the listener, if an endpoint dialed it; at the dialer, if
// an endpoint accepted it (which happened before, in the handshake).
func raceWrap(c net.Conn, dialer bool) net.Conn {
	raceReg.mu.Lock()
	var local bool
	if dialer {
		local = raceReg.accepted[racePair(c.LocalAddr(), c.RemoteAddr())]
	} else if pair := racePair(c.RemoteAddr(), c.LocalAddr()); raceReg.dialed[pair] {
		local = true
		raceReg.accepted[pair] = true
	}
	raceReg.mu.Unlock()
	if !local {
		return c
	}
	return &raceConn{Conn: c, out: raceCounter(c.LocalAddr(), c.RemoteAddr()), in: raceCounter(c.RemoteAddr(), c.LocalAddr())}
}

type raceConn struct {
	net.Conn
	out, in *atomic.Uint64
	nread   uint64
}

// Write writes b in pieces, counting each: a reader waits for the count
// of what it read, so a piece must fit in the socket buffers.
func (c *raceConn) Write(b []byte) (int, error) {
	const piece = 8 << 10
	total := 0
	for len(b) > 0 {
		n, err := c.Conn.Write(b[:min(len(b), piece)])
		c.out.Add(uint64(n))
		total += n
		if err != nil {
			return total, err
		}
		b = b[n:]
	}
	return total, nil
}

func (c *raceConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.nread += uint64(n)
	for c.in.Load() < c.nread {
		runtime.Gosched()
	}
	return n, err
}
