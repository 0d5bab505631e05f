package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// farewellTimeout bounds the write of the failure reason to each rank when
// a job fails, so that a rank that stopped reading cannot hold Serve.
const farewellTimeout = time.Second

// Server is the launcher's end of a job's bootstrap: a Unix socket
// (Listen), for ranks on the launcher's host, or a TCP address
// (ListenTCP), for ranks on several hosts, that the ranks of one job
// connect to. Create it with Listen or ListenTCP, run the job with one
// call of Serve, and Close it. Its methods are safe for concurrent use. A
// Server must not be copied.
type Server struct {
	ln     net.Listener
	path   string // socket path, for a Unix socket
	secret []byte // job secret, for TCP: connections must prove they hold it
	addr   string // what ranks dial
	size   int

	lnOnce sync.Once // closes ln
	lnErr  error

	mu      sync.Mutex
	pids    []int
	ended   []time.Time        // when each rank's connection ended, see Departures
	peers   map[*peer]struct{} // open connections
	refused int                // connections refused: another user, no secret
	closed  bool               // Close was called
	serving bool               // Serve was called
	over    bool               // Serve returned: refuse new connections
}

// Listen creates the socket at path, which must not exist, for a job of
// size ranks. Only processes of the same user may connect: the socket has
// mode 0600 and, on Linux, the server checks each peer's credentials.
func Listen(path string, size int) (*Server, error) {
	if err := checkSize(size); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("bootstrap: listen: %s: %w", path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bootstrap: listen: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("bootstrap: listen: %w", err)
	}
	return newServer(ln, size, path, nil, unixScheme+path), nil
}

// ListenTCP listens on addr, "host:port" (port 0: any free port), for a
// job of size ranks whose ranks may run on other hosts. The host must be
// an address the ranks can dial, not a wildcard such as 0.0.0.0: [Addr]
// is what they dial. Every connection must first prove that it holds the
// job secret (at least MinSecret bytes) in a challenge-response
// handshake; one that does not is closed, counted in [Server.Refused],
// and has no effect on the job.
func ListenTCP(addr string, size int, secret []byte) (*Server, error) {
	if err := checkSize(size); err != nil {
		return nil, err
	}
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("bootstrap: listen: a job secret of at least %d bytes is required, got %d", MinSecret, len(secret))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: listen: %w", err)
	}
	a := ln.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("bootstrap: listen: %s is a wildcard address; listen on the address the ranks dial", addr)
	}
	return newServer(ln, size, "", bytes.Clone(secret), tcpScheme+a.String()), nil
}

// checkSize checks the size of a job.
func checkSize(size int) error {
	if size < 1 || size > maxSize {
		return fmt.Errorf("bootstrap: listen: job size %d not in [1, %d]", size, maxSize)
	}
	return nil
}

func newServer(ln net.Listener, size int, path string, secret []byte, addr string) *Server {
	return &Server{
		ln:     ln,
		path:   path,
		secret: secret,
		addr:   addr,
		size:   size,
		pids:   make([]int, size),
		ended:  make([]time.Time, size),
		peers:  make(map[*peer]struct{}),
	}
}

// Addr returns the address ranks dial: "unix:" followed by the socket
// path, or "tcp:" followed by host:port.
func (s *Server) Addr() string { return s.addr }

// PIDs returns the pids the ranks reported in their hello so far, indexed
// by rank, with 0 for ranks not connected yet.
func (s *Server) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pids)
}

// Departures returns, indexed by rank, when the server saw each rank's
// connection end: the zero time for a rank still connected or never
// connected. A rank holds its connection until its process ends (see
// [Client.Watch]), so this tells the order in which the ranks ended, as
// seen from one place, for ranks on other hosts too: of several failed
// ranks, the first to end is most likely the cause of the others'
// failure. A launcher compares these times with the time it began
// stopping the ranks itself: the ends it caused come after.
func (s *Server) Departures() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ended)
}

// Refused returns the number of connections refused so far: over TCP
// those that did not prove they hold the job secret, over a Unix socket
// those of another user.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Close closes the listener and every connection, which makes a running
// Serve return an error, and removes the socket file of a Unix socket.
// Closing twice returns an error wrapping os.ErrClosed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("bootstrap: close: %w", os.ErrClosed)
	}
	s.closed = true
	peers := s.takePeers()
	s.mu.Unlock()

	err := s.closeListener()
	for _, p := range peers {
		p.conn.Close()
	}
	if s.path == "" {
		return err
	}
	if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = fmt.Errorf("bootstrap: close: %w", rerr)
	}
	return err
}

// closeListener closes the listener once (which also removes a Unix
// socket's file) and returns the error of that close.
func (s *Server) closeListener() error {
	s.lnOnce.Do(func() {
		if err := s.ln.Close(); err != nil {
			s.lnErr = fmt.Errorf("bootstrap: close: %w", err)
		}
	})
	return s.lnErr
}

// takePeers empties the set of open connections and returns them. s.mu
// must be held.
func (s *Server) takePeers() []*peer {
	peers := make([]*peer, 0, len(s.peers))
	for p := range s.peers {
		peers = append(peers, p)
	}
	clear(s.peers)
	return peers
}

// track adds p to the open connections. It returns false, and the caller
// must close p, when the server no longer takes connections.
func (s *Server) track(p *peer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.over {
		return false
	}
	s.peers[p] = struct{}{}
	return true
}

// forget closes p and removes it from the open connections.
func (s *Server) forget(p *peer) {
	s.mu.Lock()
	delete(s.peers, p)
	s.mu.Unlock()
	p.conn.Close()
}

// refuse closes p, a connection that failed the handshake, and counts it
// unless the server was shutting down anyway.
func (s *Server) refuse(p *peer) {
	s.mu.Lock()
	if _, ok := s.peers[p]; ok {
		delete(s.peers, p)
		s.refused++
	}
	s.mu.Unlock()
	p.conn.Close()
}

// countRefused counts a connection refused before it was tracked.
func (s *Server) countRefused() {
	s.mu.Lock()
	s.refused++
	s.mu.Unlock()
}

// authenticated marks p as having proved that it holds the job secret:
// it may be told why the job failed. It returns false, and the caller
// must close p, when the server no longer takes connections.
func (s *Server) authenticated(p *peer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.over {
		return false
	}
	p.authed = true
	return true
}

// departed records that p's connection ended now, if p is a rank and
// nothing was recorded for its rank yet.
func (s *Server) departed(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.slot >= 0 && s.ended[p.slot].IsZero() {
		s.ended[p.slot] = time.Now()
	}
}

// isClosed reports whether Close was called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// admit records that p is rank, with pid.
func (s *Server) admit(p *peer, rank, pid int) {
	s.mu.Lock()
	s.pids[rank] = pid
	p.slot = rank
	s.mu.Unlock()
}

// peer is one connection to the server.
type peer struct {
	conn net.Conn
	wmu  sync.Mutex // serializes writes
	// rank is -1 until the hello is accepted. rank and pid belong to
	// the goroutine of Serve.
	rank, pid int
	// slot is rank, guarded by the Server's mu, for the connection's
	// reader; authed tells whether p may be told why the job failed (a
	// connection over TCP is not until it proved it holds the secret).
	slot   int
	authed bool
}

// write writes b to p in one piece.
func (p *peer) write(b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.conn.Write(b)
	return err
}

// name describes p in messages.
func (p *peer) name() string {
	if p.rank < 0 {
		return "a connection that has not introduced itself"
	}
	return fmt.Sprintf("rank %d (pid %d)", p.rank, p.pid)
}

// jobError is a failure of the job found by Serve. Its reason is also
// sent to the ranks.
type jobError struct {
	reason string
	rank   int   // the rank at fault, or -1
	err    error // cause, if any
}

func (e *jobError) Error() string { return "bootstrap: " + e.reason }
func (e *jobError) Unwrap() error { return e.err }

// FaultyRank returns the rank whose connection made the job fail (it
// left during a round, or sent something wrong), or -1 when no rank is
// known to be at fault (a bad hello, a canceled context). A launcher
// finds it with an interface assertion, to tell the rank that caused a
// failure from the ranks that failed because of it.
func (e *jobError) FaultyRank() int { return e.rank }

// fail returns a jobError blaming p's rank (if p has one) with cause err
// (which may be nil).
func fail(p *peer, err error, format string, args ...any) error {
	rank := -1
	if p != nil {
		rank = p.rank
	}
	return &jobError{reason: fmt.Sprintf(format, args...), rank: rank, err: err}
}
