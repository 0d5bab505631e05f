//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startBinary starts the narmarun binary with n sleeping ranks that
// record their pids, and returns it once every rank has started, with
// the ranks' pids.
func startBinary(t *testing.T, n int) (cmd *exec.Cmd, stderr func() string, pids []int) {
	t.Helper()
	narmarun, _ := binaries(t)
	path, dir := script(t, writePID+"exec sleep 120\n")
	cmd = exec.Command(narmarun, "-n", fmt.Sprint(n), "/bin/sh", path, dir)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	// A file, not a pipe: ranks that outlive narmarun must not keep Wait
	// waiting for the end of its output.
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	stderr = func() string {
		b, _ := os.ReadFile(errFile.Name())
		return string(b)
	}
	return cmd, stderr, readPIDs(t, dir, n)
}

// waitExit waits for cmd and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(patience):
		t.Fatal("narmarun did not exit")
		return -1
	}
}

// reap waits for process pid, which must be a child of this process,
// for at most patience, and returns how it ended.
func reap(pid int) (syscall.WaitStatus, error) {
	type result struct {
		ws  syscall.WaitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for {
			_, r.err = syscall.Wait4(pid, &r.ws, 0, nil)
			if !errors.Is(r.err, syscall.EINTR) {
				break
			}
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.ws, r.err
	case <-time.After(patience):
		return 0, fmt.Errorf("still running after %v", patience)
	}
}

func TestSignals(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		want int
	}{
		{syscall.SIGINT, 130},
		{syscall.SIGTERM, 143},
	} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			cmd, stderr, pids := startBinary(t, 3)
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			if got := waitExit(t, cmd); got != tt.want {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", got, tt.want, stderr())
			}
			for r, pid := range pids {
				// narmarun reaped its children before exiting.
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("rank %d (pid %d) still exists: %v", r, pid, err)
				}
			}
			if !strings.Contains(stderr(), "stopping 3 ranks") {
				t.Errorf("stderr %q does not say the ranks are stopped", stderr())
			}
		})
	}
}

// TestLauncherKilled kills narmarun with SIGKILL, which it cannot catch:
// its ranks must die too, killed by the kernel (Pdeathsig).
func TestLauncherKilled(t *testing.T) {
	// Adopt the ranks narmarun leaves orphaned, to reap them and see how
	// they ended (and leave no zombies behind).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cmd, _, pids := startBinary(t, 3)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd)
	for r, pid := range pids {
		ws, err := reap(pid)
		switch {
		case errors.Is(err, syscall.ECHILD):
			// A thread of the dying narmarun, waiting for the rank,
			// reaped it after an earlier thread's death killed it.
		case err != nil:
			t.Errorf("rank %d (pid %d): %v", r, pid, err)
		case !ws.Signaled() || ws.Signal() != syscall.SIGKILL:
			t.Errorf("rank %d (pid %d) ended with status %#x, want killed by SIGKILL", r, pid, ws)
		}
	}
}
