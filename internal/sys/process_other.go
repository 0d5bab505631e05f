//go:build !unix

package sys

// Alive cannot tell on this system and says yes.
func Alive(pid int) bool { return true }
