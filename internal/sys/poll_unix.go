//go:build unix

package sys

import (
	"time"

	"golang.org/x/sys/unix"
)

// WaitReadable blocks the calling thread until fd is readable or d
// passes (a wait descriptor of a library that progresses manually, such
// as libfabric's completion queues). Interruptions end it early.
func WaitReadable(fd int, d time.Duration) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, _ = unix.Poll(fds, int(max(d.Milliseconds(), 1)))
}
