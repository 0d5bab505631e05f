//go:build !linux

package narma_test

import (
	"errors"
	"net"
	"runtime"
)

// rawEpoll needs Linux's epoll.
func rawEpoll(net.Conn, int, []byte, int) error {
	return errors.New("raw-epoll needs Linux")
}

// schedYield yields to other goroutines only: the benchmarks that need
// sched_yield run on Linux.
func schedYield() { runtime.Gosched() }
