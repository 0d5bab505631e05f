//go:build !unix

package shm

// processAlive cannot tell on this system and says yes.
func processAlive(pid int) bool { return true }
