package main

import "syscall"

// sysProcAttr puts a rank in a process group of its own, so that it can
// be stopped with everything it started, and has the kernel kill it if
// the launcher dies. The kernel sends that signal when the thread that
// started the rank exits, so ranks are started with the thread locked.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
