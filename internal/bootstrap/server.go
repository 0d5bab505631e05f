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
	halted  string             // the reason Halt gave the ranks, if it was called
	blamed  []int              // the first peer each rank reported failed, or -1
	changed chan struct{}      // a departure or a report was recorded, see Changed
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
		ln:      ln,
		path:    path,
		secret:  secret,
		addr:    addr,
		size:    size,
		pids:    make([]int, size),
		ended:   make([]time.Time, size),
		blamed:  slices.Repeat([]int{-1}, size),
		changed: make(chan struct{}, 1),
		peers:   make(map[*peer]struct{}),
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

// PeerFailures returns, indexed by rank, the peer whose failure each
// rank reported first ([Client.PeerFailed]), or -1 for a rank that
// reported none. A rank reports a peer when its transport declares that
// peer failed, before its program hears of it: a rank that exits with an
// error after it reported a peer most likely failed because that peer
// did, while the rank that failed first reported nobody. The server reads
// a rank's reports until the rank's end of its connection closes, even
// after Serve has returned (for a few seconds at most): once
// [Server.Departures] has a time for a rank, its reports are all here.
func (s *Server) PeerFailures() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.blamed)
}

// Changed returns a channel that receives a value after the server
// records a rank's departure or report of a failed peer (one value for
// several if nobody received in between): a launcher waiting for either
// looks at Departures and PeerFailures again when it does.
func (s *Server) Changed() <-chan struct{} { return s.changed }

// kick tells the receiver of Changed, if it is not told already.
func (s *Server) kick() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// peerFailed records that p's rank reported that peer failed, if it is
// the first peer it reported.
func (s *Server) peerFailed(p *peer, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.slot < 0 || failed >= s.size || failed == p.slot || s.blamed[p.slot] >= 0 {
		return
	}
	s.blamed[p.slot] = failed
	s.kick()
}

// Halt tells every rank connected that the launcher stops the job, with
// reason (such as "rank 1 (pid 1234) exited with status 3"; "" for
// none). A launcher calls it before it stops the ranks, then cancels
// Serve, which closes the connections. Halt returns once every rank has
// the reason in its socket buffer (or a write timed out), and every
// watching rank has acted on it (see [Client.Watch]; a second at most):
// before any
// connection is closed and before a launcher that waits for Halt kills
// any rank, so that a rank that then sees a peer die can tell that it
// was stopped ([Client.Stopped]). A watching rank acts on the reason only when its own
// connection closes (see [Client.Watch]). Only the first call counts.
func (s *Server) Halt(reason string) {
	msg := "the launcher stopped the job"
	if reason != "" {
		msg += ": " + reason
	}
	s.mu.Lock()
	if s.halted != "" || s.closed || s.over {
		s.mu.Unlock()
		return
	}
	s.halted = msg
	var told, watching []*peer
	for p := range s.peers {
		if p.authed && !p.told {
			p.told = true
			told = append(told, p)
			if p.watching {
				watching = append(watching, p)
			}
		}
	}
	s.mu.Unlock()
	tell(told, appendMessage(nil, errorMessage(msg)))
	awaitAcks(watching)
}

// haltPatience bounds Halt's wait for the watching ranks to act on its
// reason.
const haltPatience = time.Second

// awaitAcks waits until every peer has acted on the reason it was told
// (or its connection ended), for haltPatience at most.
func awaitAcks(peers []*peer) {
	t := time.NewTimer(haltPatience)
	defer t.Stop()
	for _, p := range peers {
		select {
		case <-p.acked:
		case <-t.C:
			return
		}
	}
}

// watches records that p's rank will acknowledge the reason the job
// ends.
func (s *Server) watches(p *peer) {
	s.mu.Lock()
	p.watching = true
	s.mu.Unlock()
}

// haltReason returns what Halt told the ranks, or "".
func (s *Server) haltReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.halted
}

// tell writes farewell to every peer, each within farewellTimeout, at
// once, and returns when all writes are done.
func tell(peers []*peer, farewell []byte) {
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Go(func() {
			_ = p.conn.SetWriteDeadline(time.Now().Add(farewellTimeout))
			_ = p.write(farewell)
		})
	}
	wg.Wait()
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
		s.kick()
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
	told   bool // was sent the reason the job ends (guarded by mu)
	// watching tells that the rank will acknowledge the reason (guarded
	// by mu); acked is closed when it has, or its connection ended.
	watching bool
	acked    chan struct{}
	ackOnce  sync.Once
}

// ack records that p acted on the reason the job ends, or can no longer.
func (p *peer) ack() { p.ackOnce.Do(func() { close(p.acked) }) }

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
