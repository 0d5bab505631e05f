package sys

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations on words of shared mappings: the shared (not
// FUTEX_PRIVATE) variants, since waiter and waker may be different
// processes.
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// FutexWait sleeps while *w == v, for at most d (d > 0). Spurious
// returns are allowed; callers re-check their condition.
func FutexWait(w *atomic.Uint32, v uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(v),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// FutexWake wakes every thread, of any process, sleeping on w.
func FutexWake(w *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

// Yield gives the processor to another runnable thread of any process, if
// there is one (sched_yield).
func Yield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
