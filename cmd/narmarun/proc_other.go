//go:build !unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// sysProcAttr returns nil: there are no process groups here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills p: without process groups or signals, stopping a
// rank means killing it alone.
func signalGroup(p *os.Process, _ syscall.Signal) error { return p.Kill() }

// describeExit returns a rank's exit status, the signal that killed it
// (always 0 here) and how it ended.
func describeExit(ps *os.ProcessState) (status int, sig syscall.Signal, how string) {
	code := ps.ExitCode()
	return code, 0, fmt.Sprintf("exited with status %d", code)
}

// ownDir reports false: without owners to check, no directory is
// removed as stale.
func ownDir(string) bool { return false }
