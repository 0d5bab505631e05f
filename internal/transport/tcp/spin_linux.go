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

	"golang.org/x/sys/unix"
)

// Polling reads.
//
// A reader that waits in the runtime's network poller is woken one to
// several microseconds after its frame arrived, and tens of them on a
// loaded machine. So a connection's reader first polls its socket for a
// while (Endpoint.spin), as MPI libraries take messages by polling,
// yielding the processor between polls to the process's other goroutines
// (among them the rank it just delivered to).
//
// With one processor per rank (GOMAXPROCS=1, as narmarun gives each rank
// of a full host), a goroutine that keeps yielding keeps the runtime from
// polling the network at all: another reader of the endpoint, or a writer
// waiting for room in its socket, would wait for the poll to end. The
// poll therefore ends, and the reader waits in the network poller like
// any other, as soon as another connection of the endpoint has something
// to read (an epoll set of all of them, looked at without waiting) or one
// of its writes is under way (and may be waiting for room).

// spinSet is the endpoint's polling state: the epoll set of its
// connections and the count of writes under way.
type spinSet struct {
	epfd    int
	spin    atomic.Int64 // how long a read polls (a time.Duration); 0: not at all
	writing atomic.Int32

	// For tests: the reads polling now, and the polls that ended early
	// for a write under way or for another connection.
	polling              atomic.Int32
	forWrites, forOthers atomic.Uint64

	mu     sync.RWMutex // orders the removal of connections before close
	closed bool
}

// newSpinSet returns the polling state of an endpoint whose readers may
// poll (setSpin says for how long), or nil if epoll is not available.
func newSpinSet() *spinSet {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	return &spinSet{epfd: fd}
}

// setSpin sets how long reads poll.
func (s *spinSet) setSpin(d time.Duration) {
	if s != nil {
		s.spin.Store(int64(d))
	}
}

// close releases the epoll set, once the endpoint's readers ended.
func (s *spinSet) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		unix.Close(s.epfd)
	}
}

// spinConn is a connection of an endpoint whose reads poll (see above).
type spinConn struct {
	net.Conn
	rc  syscall.RawConn
	set *spinSet
	fd  int
	// kicks counts the calls of Close and SetReadDeadline: a poll that
	// sees it change ends, so that the read waits in the network poller,
	// which honours both.
	kicks atomic.Uint32

	// The state of the read under way (Read).
	readFn func(uintptr) bool // s.read
	rp     []byte
	rn     int
	rerr   error
	pl     poller
	evs    [2]unix.EpollEvent
}

// spinning returns c polling its reads as set says, or c itself if set
// is nil or c is not a socket of the operating system.
func spinning(c net.Conn, set *spinSet) net.Conn {
	sc, ok := c.(syscall.Conn)
	if set == nil || !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	s := &spinConn{Conn: c, rc: rc, set: set, fd: -1}
	s.readFn = s.read
	rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if unix.EpollCtl(set.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) == nil {
			s.fd = int(fd)
		}
	})
	if s.fd < 0 {
		return c
	}
	return s
}

// Read reads into p what the socket holds, polling it for up to the
// set's spin while it holds nothing, and then waiting in the network
// poller (which honours the connection's deadline and Close). Only one
// goroutine reads a connection at a time (its reader).
func (s *spinConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rp = p
	s.pl = poller{spin: time.Duration(s.set.spin.Load()), kicks: s.kicks.Load()}
	err := s.rc.Read(s.readFn)
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

// read is the function of Read's raw read (s.readFn, made once: a
// closure made per call would be allocated per call): it reads, and
// polls while the socket is empty; false sends the read to the network
// poller.
func (s *spinConn) read(fd uintptr) bool {
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
	polls int
	start time.Time // of the first poll
}

// poll polls the socket until it has something to read (true) or the
// read should wait in the network poller (false): its time is up, a
// write of the endpoint is under way, another connection has something,
// or Close or SetReadDeadline was called since the read began.
func (s *spinConn) poll(pl *poller) bool {
	s.set.polling.Add(1)
	defer s.set.polling.Add(-1)
	evs := s.evs[:]
	for {
		if pl.spin <= 0 || s.kicks.Load() != pl.kicks {
			return false
		}
		if s.set.writing.Load() > 0 {
			s.set.forWrites.Add(1)
			return false
		}
		// The clock is read on the first poll and then every 16th: a
		// poll and a yield cost far less than a look at it.
		if pl.polls == 0 {
			pl.start = time.Now()
		} else if pl.polls&15 == 0 {
			pl.spin = time.Duration(s.set.spin.Load())
			if time.Since(pl.start) > pl.spin {
				return false
			}
		}
		pl.polls++
		runtime.Gosched()
		k, err := unix.EpollWait(s.set.epfd, evs, 0)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false
		case k > 1 || k == 1 && int(evs[0].Fd) != s.fd:
			s.set.forOthers.Add(1)
			return false // let the runtime serve the others
		case k == 1:
			return true // ours: read it
		}
	}
}

// Write writes p, counted as under way for the endpoint's readers.
func (s *spinConn) Write(p []byte) (int, error) {
	s.set.writing.Add(1)
	defer s.set.writing.Add(-1)
	return s.Conn.Write(p)
}

// writeBuffers writes b as one vectored write where the connection
// allows (net.Buffers knows only the runtime's own connections).
func (s *spinConn) writeBuffers(b *net.Buffers) (int64, error) {
	s.set.writing.Add(1)
	defer s.set.writing.Add(-1)
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

// Close takes the connection out of the epoll set, ends a poll under way
// and closes it.
func (s *spinConn) Close() error {
	s.kicks.Add(1)
	s.set.mu.RLock()
	if !s.set.closed {
		s.rc.Control(func(fd uintptr) {
			unix.EpollCtl(s.set.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
	s.set.mu.RUnlock()
	return s.Conn.Close()
}
