package sys

import (
	"golang.org/x/sys/unix"
)

// Epoll is an epoll set of descriptors watched for readability, looked at
// without waiting.
type Epoll struct{ fd int }

// NewEpoll returns an empty set.
func NewEpoll() (*Epoll, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &Epoll{fd: fd}, nil
}

// Add watches fd for readability.
func (p *Epoll) Add(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	return unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev)
}

// Remove stops watching fd (before it is closed).
func (p *Epoll) Remove(fd int) error {
	return unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil)
}

// Close closes the set.
func (p *Epoll) Close() error { return unix.Close(p.fd) }

// Events is room for what Ready reports, kept by its caller so that a
// look allocates nothing.
type Events struct{ evs [2]unix.EpollEvent }

// Ready looks, without waiting, for readable descriptors of the set: n is
// 0, 1 or 2 for "two or more", and fd is the readable one when n is 1. An
// interrupted look reports n == 0 and no error.
func (p *Epoll) Ready(buf *Events) (n, fd int, err error) {
	k, err := unix.EpollWait(p.fd, buf.evs[:], 0)
	switch {
	case err == unix.EINTR:
		return 0, -1, nil
	case err != nil:
		return 0, -1, err
	case k == 1:
		return 1, int(buf.evs[0].Fd), nil
	}
	return k, -1, nil
}
