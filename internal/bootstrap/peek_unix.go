//go:build unix

package bootstrap

import (
	"errors"
	"net"
	"syscall"
)

// peek copies into buf what has arrived on conn and is not read yet,
// without reading it and without waiting. n is 0 when nothing has arrived
// or the connection cannot be peeked at; eof reports that the other end
// closed and nothing is left to read.
func peek(conn net.Conn, buf []byte) (n int, eof bool) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	// Control does not take the connection's read lock, so that this
	// works while another goroutine waits in a read.
	_ = rc.Control(func(fd uintptr) { n, eof = peekFD(fd, buf) })
	return n, eof
}

// waitPeek waits until done, given what peek would return, says that
// what has arrived on conn is enough, or the connection fails (it
// returns that error). Nothing is read from conn.
func waitPeek(conn net.Conn, buf []byte, done func(n int, eof bool) bool) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return errNoPeek
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool { return done(peekFD(fd, buf)) })
}

// peekFD peeks at the socket fd, which does not block (Go's sockets are
// non-blocking): an error other than "nothing yet" counts as the end.
func peekFD(fd uintptr, buf []byte) (n int, eof bool) {
	n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
	switch {
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
		return 0, false
	case err != nil || n == 0:
		return 0, true
	}
	return n, false
}
