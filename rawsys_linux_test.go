package narma_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawEpoll is rawPingPong with the loop reading and writing the socket
// itself: non-blocking system calls on the connection's descriptor, and
// a wait in its own epoll instance (a blocking system call of this
// goroutine's thread) instead of Go's network poller, which parks the
// goroutine, wakes a runtime thread on arrival and hands the goroutine a
// processor. It shows what a transport whose waiting rank reads its
// sockets itself could reach; Go's poller keeps the descriptor
// registered but nothing reads through it meanwhile.
func rawEpoll(conn net.Conn, rank int, buf []byte, iters int) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return fmt.Errorf("%T has no descriptor", conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	fd := -1
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return err
	}
	var evs [1]unix.EpollEvent
	read := func() error {
		for n := 0; n < len(buf); {
			m, err := unix.Read(fd, buf[n:])
			switch {
			case errors.Is(err, unix.EAGAIN):
				if _, err := unix.EpollWait(ep, evs[:], -1); err != nil && !errors.Is(err, unix.EINTR) {
					return err
				}
			case errors.Is(err, unix.EINTR):
			case err != nil:
				return err
			case m == 0:
				return io.ErrUnexpectedEOF
			default:
				n += m
			}
		}
		return nil
	}
	write := func() error {
		for n := 0; n < len(buf); {
			m, err := unix.Write(fd, buf[n:])
			switch {
			case errors.Is(err, unix.EAGAIN):
				// The peer drains as it reads: wait until there is room.
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
				if _, err := unix.Poll(pfd, -1); err != nil && !errors.Is(err, unix.EINTR) {
					return err
				}
			case errors.Is(err, unix.EINTR):
			case err != nil:
				return err
			default:
				n += m
			}
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		if rank == 1 {
			if err := read(); err != nil {
				return err
			}
		}
		if err := write(); err != nil {
			return err
		}
		if rank == 0 {
			if err := read(); err != nil {
				return err
			}
		}
	}
	return nil
}

// schedYield gives the processor to another thread of any process
// (sched_yield).
func schedYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
