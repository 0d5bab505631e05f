//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// signalGroup sends sig to the process group led by p (every rank runs in
// a group of its own). A group that no longer exists is not an error.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// describeExit returns a rank's exit status as a shell reports it (128
// plus the signal number for a process killed by a signal), the signal
// that killed it (0 if it exited) and a description of how it ended.
func describeExit(ps *os.ProcessState) (status int, sig syscall.Signal, how string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		how = fmt.Sprintf("killed by signal %d (%v)", int(sig), sig)
		if ws.CoreDump() {
			how += ", core dumped"
		}
		return exitSignal + int(sig), sig, how
	}
	code := ps.ExitCode()
	return code, 0, fmt.Sprintf("exited with status %d", code)
}

// ownDir reports whether path is a directory of this user, not a link.
func ownDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
