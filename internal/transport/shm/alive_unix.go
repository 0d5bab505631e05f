//go:build unix

package shm

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processAlive reports whether process pid exists (a zombie counts as
// existing until it is reaped).
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || !errors.Is(err, unix.ESRCH)
}
