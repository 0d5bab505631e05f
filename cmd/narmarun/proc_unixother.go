//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts a rank in a process group of its own, so that it can
// be stopped with everything it started. Outside Linux a rank does not
// die with a launcher that is killed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
