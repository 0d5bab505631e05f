package tcp

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/narma-rma/narma/internal/sys"
)

// Polling reads.
//
// A reader that waits in the runtime's network poller is woken one to
// several microseconds after its frame arrived, and tens of them on a
// loaded machine. So a connection's reader first polls its socket for a
// while (Config.Spin), as MPI libraries take messages by polling,
// yielding the processor between polls to the process's other goroutines
// (among them the rank it just delivered to).
//
// A goroutine that keeps yielding keeps the runtime from polling the
// network (it does so only when it has nothing else to run, or from its
// monitor thread every 10 ms): with one processor per rank (GOMAXPROCS=1,
// as narmarun gives each rank of a full host) nothing that waits in the
// network poller would run while a reader polls. The poll therefore ends,
// and the reader waits in the network poller like any other, as soon as
// a connection of any endpoint of the process has something to read, or
// a listener a connection to accept (an epoll set of all of them, looked
// at without waiting), and while a write, a dial or a handshake of theirs
// is under way (these may wait in the network poller). Other network I/O
// of the program may wait the runtime's 10 ms.

// spinSet is the process's polling state, shared by its endpoints: the
// epoll set of their connections and listeners, and the count of their
// network waits under way outside it.
type spinSet struct {
	ep      *sys.Epoll
	waiting atomic.Int32 // writes, dials and handshakes under way
	_       [60]byte     // the counters below, for tests, on their own line

	// For tests: the reads polling now, and the polls that ended early
	// for a wait under way or for something in the set.
	polling             atomic.Int32
	forWaits, forOthers atomic.Uint64

	mu     sync.RWMutex // orders registrations before close
	closed bool
}

// theSpinSet is the process's spinSet while endpoints use it.
var theSpinSet struct {
	mu   sync.Mutex
	set  *spinSet
	refs int
}

// acquireSpinSet returns the process's spinSet, made on first use, or nil
// if epoll is not available; releaseSpinSet gives it back.
func acquireSpinSet() *spinSet {
	ps := &theSpinSet
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.set == nil {
		ep, err := sys.NewEpoll()
		if err != nil {
			return nil
		}
		ps.set = &spinSet{ep: ep}
	}
	ps.refs++
	return ps.set
}

func releaseSpinSet() {
	ps := &theSpinSet
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.refs--; ps.refs == 0 {
		s := ps.set
		ps.set = nil
		s.mu.Lock()
		s.closed = true
		s.ep.Close()
		s.mu.Unlock()
	}
}

// add registers fd for readability; false if the set is closed or the
// registration failed.
func (s *spinSet) add(fd int) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	return s.ep.Add(fd) == nil
}

// remove withdraws fd, before it is closed.
func (s *spinSet) remove(fd int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.ep.Remove(fd)
	}
}

// spinner is an endpoint's part of the polling: how long its reads poll,
// and the process's set. A nil spinner never polls.
type spinner struct {
	set  *spinSet
	spin atomic.Int64 // a time.Duration; 0: reads do not poll
}

// newSpinner returns the endpoint's spinner, not polling until setSpin,
// or nil if epoll is not available.
func newSpinner() *spinner {
	set := acquireSpinSet()
	if set == nil {
		return nil
	}
	return &spinner{set: set}
}

// setSpin sets how long reads poll.
func (sp *spinner) setSpin(d time.Duration) {
	if sp != nil {
		sp.spin.Store(int64(d))
	}
}

// close gives the set back, once the endpoint's readers have ended.
func (sp *spinner) close() {
	if sp != nil {
		releaseSpinSet()
	}
}

// watch adds a listener to the set: a connection to accept ends polls.
func (sp *spinner) watch(ln net.Listener) {
	sc, ok := ln.(syscall.Conn)
	if sp == nil || !ok {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { sp.set.add(int(fd)) })
	}
}

// begin and end bracket a network wait outside the set (a dial, a
// handshake): polls end while it lasts.
func (sp *spinner) begin() {
	if sp != nil {
		sp.set.waiting.Add(1)
	}
}

func (sp *spinner) end() {
	if sp != nil {
		sp.set.waiting.Add(-1)
	}
}

// spinConn is a connection whose reads poll (see above). Unlike other
// connections, it must not be read by two goroutines at once (the state
// of the read under way lives in it); each has one reader.
type spinConn struct {
	net.Conn
	rc   syscall.RawConn
	sp   *spinner
	fd   int
	read func(uintptr) bool // s.readRaw, made once: a closure per read would allocate
	// kicks counts the calls of Close and SetReadDeadline: a poll that
	// sees it change ends, so that the read waits in the network poller,
	// which honours both.
	kicks atomic.Uint32

	// The state of the read under way (Read).
	rp   []byte
	rn   int
	rerr error
	pl   poller
	evs  sys.Events
}

// wrap returns c with polling reads, or c itself if sp is nil or c is
// not a socket of the operating system.
func (sp *spinner) wrap(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if sp == nil || !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	s := &spinConn{Conn: c, rc: rc, sp: sp, fd: -1}
	s.read = s.readRaw
	rc.Control(func(fd uintptr) {
		if sp.set.add(int(fd)) {
			s.fd = int(fd)
		}
	})
	if s.fd < 0 {
		return c
	}
	return s
}

// Read reads into p what the socket holds, polling it for up to the
// endpoint's spin while it holds nothing, and then waiting in the
// network poller (which honours the connection's deadline and Close).
func (s *spinConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rp = p
	s.pl = poller{spin: time.Duration(s.sp.spin.Load()), kicks: s.kicks.Load()}
	err := s.rc.Read(s.read)
	s.rp = nil
	n, rerr := s.rn, s.rerr
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readRaw is the function of Read's raw read: it reads, and polls while
// the socket is empty; false sends the read to the network poller.
func (s *spinConn) readRaw(fd uintptr) bool {
	for {
		s.rn, s.rerr = syscall.Read(int(fd), s.rp)
		if s.rerr == syscall.EINTR {
			continue
		}
		if s.rerr != syscall.EAGAIN {
			return true
		}
		if !s.poll(&s.pl) {
			return false
		}
	}
}

// poller is the state of the polls of one read.
type poller struct {
	spin  time.Duration // how long to poll
	kicks uint32        // spinConn.kicks when the read began
	start time.Time     // of the first poll; zero before
}

// poll polls the socket until it has something to read (true) or the
// read should wait in the network poller (false): its time is up, a
// network wait is under way, something else in the set is ready, or
// Close or SetReadDeadline was called since the read began.
func (s *spinConn) poll(pl *poller) bool {
	set := s.sp.set
	set.polling.Add(1)
	defer set.polling.Add(-1)
	for {
		if pl.spin <= 0 || s.kicks.Load() != pl.kicks {
			return false
		}
		if set.waiting.Load() > 0 {
			set.forWaits.Add(1)
			return false
		}
		// The clock every round: a yield may give a whole time slice
		// away.
		if now := time.Now(); pl.start.IsZero() {
			pl.start = now
		} else if now.Sub(pl.start) > pl.spin {
			return false
		}
		runtime.Gosched()
		k, fd, err := set.ep.Ready(&s.evs)
		switch {
		case err != nil:
			return false
		case k > 1 || k == 1 && fd != s.fd:
			set.forOthers.Add(1)
			return false // let the runtime serve the others
		case k == 1:
			return true // ours: read it
		}
		pl.spin = time.Duration(s.sp.spin.Load())
	}
}

// Write writes p, counted as a wait under way while the endpoint's reads
// poll (when they do not, the two atomic additions on the process's
// counter are saved).
func (s *spinConn) Write(p []byte) (int, error) {
	if s.sp.spin.Load() == 0 {
		return s.Conn.Write(p)
	}
	s.sp.begin()
	defer s.sp.end()
	return s.Conn.Write(p)
}

// writeBuffers writes b as one vectored write where the connection
// allows (net.Buffers knows only the runtime's own connections), counted
// as Write is.
func (s *spinConn) writeBuffers(b *net.Buffers) (int64, error) {
	if s.sp.spin.Load() == 0 {
		return b.WriteTo(s.Conn)
	}
	s.sp.begin()
	defer s.sp.end()
	return b.WriteTo(s.Conn)
}

// SetReadDeadline sets the read deadline and ends a poll under way.
func (s *spinConn) SetReadDeadline(t time.Time) error {
	err := s.Conn.SetReadDeadline(t)
	s.kicks.Add(1)
	return err
}

// SetDeadline sets both deadlines and ends a poll under way.
func (s *spinConn) SetDeadline(t time.Time) error {
	err := s.Conn.SetDeadline(t)
	s.kicks.Add(1)
	return err
}

// Close takes the connection out of the set, ends a poll under way and
// closes it.
func (s *spinConn) Close() error {
	s.kicks.Add(1)
	s.rc.Control(func(fd uintptr) { s.sp.set.remove(int(fd)) })
	return s.Conn.Close()
}
