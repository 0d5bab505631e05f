package sys

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Commands of membarrier(2).
const (
	membarrierQuery                   = 0
	membarrierGlobalExpedited         = 1 << 1
	membarrierRegisterGlobalExpedited = 1 << 2
)

// GlobalBarrierReady registers this process for global expedited memory
// barriers, once, and reports whether the kernel accepted (Linux 4.16 and
// later, unless a seccomp policy refuses the call).
var GlobalBarrierReady = sync.OnceValue(func() bool {
	r, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierQuery, 0, 0)
	want := uintptr(membarrierGlobalExpedited | membarrierRegisterGlobalExpedited)
	if errno != 0 || r&want != want {
		return false
	}
	_, _, errno = unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterGlobalExpedited, 0, 0)
	return errno == 0
})

// GlobalBarrier runs a full memory barrier on every processor that runs a
// thread of a registered process (the caller's included); the caller must
// have seen GlobalBarrierReady report true. It reports whether the kernel
// did.
func GlobalBarrier() bool {
	_, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierGlobalExpedited, 0, 0)
	return errno == 0
}
