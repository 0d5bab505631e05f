package sys

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerUID returns the process and user ids of the process at the other
// end of the Unix socket c (SO_PEERCRED).
func PeerUID(c syscall.RawConn) (pid, uid int, err error) {
	var cred *unix.Ucred
	var cerr error
	if err := c.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, cerr
	}
	return int(cred.Pid), int(cred.Uid), nil
}
