//go:build !linux

package shm

// CMAStatus reports whether ranks of a job on this host may read each
// other's memory with process_vm_readv: never off Linux.
func CMAStatus() (ok bool, reason string) { return false, "single copy needs Linux (process_vm_readv)" }
