//go:build unix

package sys

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Alive reports whether process pid exists (a zombie counts as existing
// until it is reaped).
func Alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || !errors.Is(err, unix.ESRCH)
}
