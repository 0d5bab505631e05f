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

var raceReg struct {
	mu        sync.Mutex
	listeners map[string]bool           // listening addresses of this process's endpoints
	dialed    map[string]bool           // local addresses of connections dialed here
	written   map[string]*atomic.Uint64 // bytes written, by "from->to"
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
	}
	raceReg.listeners[a.String()] = true
}

// raceDialed records a connection dialed here, before its first byte.
func raceDialed(c net.Conn) {
	raceReg.mu.Lock()
	defer raceReg.mu.Unlock()
	raceReg.dialed[c.LocalAddr().String()] = true
}

// raceWrap returns c counting its bytes if its other end is in this
// process.
func raceWrap(c net.Conn, dialer bool) net.Conn {
	raceReg.mu.Lock()
	local := raceReg.dialed[c.RemoteAddr().String()]
	if dialer {
		local = raceReg.listeners[c.RemoteAddr().String()]
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
