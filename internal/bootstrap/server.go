package bootstrap

import (
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

// Server is the launcher's end of a job's bootstrap: a Unix socket that
// the ranks of one job connect to. Create it with Listen, run the job with
// one call of Serve, and Close it. Its methods are safe for concurrent
// use. A Server must not be copied.
type Server struct {
	ln   *net.UnixListener
	path string
	size int

	lnOnce sync.Once // closes ln
	lnErr  error

	mu      sync.Mutex
	pids    []int
	peers   map[*peer]struct{} // open connections
	closed  bool               // Close was called
	serving bool               // Serve was called
	over    bool               // Serve returned: refuse new connections
}

// Listen creates the socket at path, which must not exist, for a job of
// size ranks. Only processes of the same user may connect: the socket has
// mode 0600 and, on Linux, the server checks each peer's credentials.
func Listen(path string, size int) (*Server, error) {
	if size < 1 || size > maxSize {
		return nil, fmt.Errorf("bootstrap: listen: job size %d not in [1, %d]", size, maxSize)
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
	return &Server{
		ln:    ln,
		path:  path,
		size:  size,
		pids:  make([]int, size),
		peers: make(map[*peer]struct{}),
	}, nil
}

// Addr returns the address ranks dial: "unix:" followed by the socket
// path.
func (s *Server) Addr() string { return unixScheme + s.path }

// PIDs returns the pids the ranks reported in their hello so far, indexed
// by rank, with 0 for ranks not connected yet.
func (s *Server) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pids)
}

// Close closes the listener and every connection, which makes a running
// Serve return an error, and removes the socket file. Closing twice
// returns an error wrapping os.ErrClosed.
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
	if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = fmt.Errorf("bootstrap: close: %w", rerr)
	}
	return err
}

// closeListener closes the listener once (which also removes the socket
// file) and returns the error of that close.
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

// isClosed reports whether Close was called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// setPID records the pid rank reported.
func (s *Server) setPID(rank, pid int) {
	s.mu.Lock()
	s.pids[rank] = pid
	s.mu.Unlock()
}

// peer is one connection to the server.
type peer struct {
	conn *net.UnixConn
	wmu  sync.Mutex // serializes writes
	// rank is -1 until the hello is accepted. rank and pid belong to
	// the goroutine of Serve.
	rank, pid int
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
