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

// describeExit returns a rank's exit status and how it ended.
func describeExit(ps *os.ProcessState) (status int, how string) {
	code := ps.ExitCode()
	return code, fmt.Sprintf("exited with status %d", code)
}
