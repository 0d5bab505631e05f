// Package testjob runs parts of a test binary as the ranks of a job of
// processes, the way narmarun runs a program: a test calls Run, which
// starts the test binary again n times, each process being one rank (it
// joins the job with narma.Init) and running only the part of the test
// the parent names. Tests use it to run the same checks over goroutine
// ranks and over process ranks; benchmarks use it to measure the
// shared-memory transport between real processes.
package testjob

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	_ "github.com/narma-rma/narma/internal/transport/builtin" // the transports jobs run over
	"github.com/narma-rma/narma/internal/transport/registry"
)

// EnvCall names, in a rank started by Run, the part of the test it must
// run.
const EnvCall = "NARMA_TESTJOB_CALL"

// Call returns the part of the test this process must run as a rank, or
// "" if this process was not started by Run.
func Call() string { return os.Getenv(EnvCall) }

// TestPattern returns the -test.run (or -test.bench) pattern that selects
// exactly the test or subtest called name (as testing.T.Name returns it).
func TestPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// raceEnv returns the GORACE setting of the ranks: that of this process,
// with the race detector's sleep at exit cut from 1 s to 10 ms unless
// GORACE sets it. A job's ranks exit at the same time, but a suite of
// process jobs under -race would otherwise wait a second per job. The
// setting matters only to binaries built with -race.
func raceEnv() string {
	v := os.Getenv("GORACE")
	if !strings.Contains(v, "atexit_sleep_ms") {
		v = strings.TrimSpace(v + " atexit_sleep_ms=10")
	}
	return "GORACE=" + v
}

// Result is what one rank did.
type Result struct {
	Rank   int
	Output string // stdout and stderr, interleaved
	Err    error  // nil if the process exited with status 0
}

// Run starts n processes of this binary with args (e.g. -test.run=...),
// each a rank of a new job over the shared-memory transport, with
// EnvCall=call in its environment, and waits for all of them. When a rank
// fails the others are given a moment to notice (they see a failed peer)
// and are then killed, as are all of them when ctx ends. The job's
// segments are removed at the end. The error names the first rank to fail.
func Run(ctx context.Context, n int, call string, args ...string) ([]Result, error) {
	return RunOn(ctx, "shm", n, call, args...)
}

// RunOn is Run over the transport named: "shm", "tcp" (a fresh secret,
// listeners on loopback) or "hybrid" (as tcp, with the ranks alternating
// between two pretend hosts, which share memory among their ranks).
func RunOn(ctx context.Context, transport string, n int, call string, args ...string) ([]Result, error) {
	if n < 1 {
		return nil, fmt.Errorf("testjob: %d ranks", n)
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "narma-testjob-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := bootstrap.Listen(filepath.Join(dir, "boot"), n)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	job, secret := bootstrap.NewJob()
	if t, ok := registry.Lookup(transport); ok && t.Remove != nil {
		defer t.Remove(job)
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Serve(ctx)

	res := make([]Result, n)
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	for r := range cmds {
		env := bootstrap.Env{Rank: r, Size: n, Addr: srv.Addr(), Job: job, Transport: transport}
		if transport == "tcp" || transport == "hybrid" {
			env.Secret = bootstrap.EncodeSecret(secret)
			env.Listen = "127.0.0.1:0"
		}
		if transport == "hybrid" {
			env.Host = r % 2 // two pretend hosts, ranks alternating
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), env.Environ()...), EnvCall+"="+call, raceEnv())
		if procs := bootstrap.ProcsEnv(os.Environ(), n); procs != "" {
			cmd.Env = append(cmd.Env, procs)
		}
		cmd.Stdout = &outs[r]
		cmd.Stderr = &outs[r]
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			for _, c := range cmds[:r] {
				c.Process.Kill()
				c.Wait()
			}
			return nil, fmt.Errorf("testjob: start rank %d: %w", r, err)
		}
		cmds[r] = cmd
	}

	var mu sync.Mutex
	first := -1
	failed := make(chan struct{})
	var wg sync.WaitGroup
	for r, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			mu.Lock()
			res[r] = Result{Rank: r, Err: err}
			if err != nil && first < 0 {
				first = r
				close(failed)
			}
			mu.Unlock()
		}()
	}
	killer := make(chan struct{})
	go func() {
		defer close(killer)
		select {
		case <-ctx.Done():
		case <-failed:
			// The others should fail on their own, having lost a
			// peer; do not let them hang.
			select {
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
			}
		}
		if parent.Err() != nil {
			// A hang: have every rank print its goroutines (the Go
			// runtime does so on SIGQUIT) for the report.
			for _, cmd := range cmds {
				syscall.Kill(cmd.Process.Pid, syscall.SIGQUIT)
			}
			time.Sleep(time.Second)
		}
		for _, cmd := range cmds {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	wg.Wait()
	cancel()
	<-killer
	for r := range res {
		res[r].Output = outs[r].String()
	}
	if first >= 0 {
		var b strings.Builder
		if parent.Err() != nil {
			fmt.Fprintf(&b, "testjob: job of %d ranks stopped: %v; first to end: rank %d", n, parent.Err(), first)
		} else {
			fmt.Fprintf(&b, "testjob: rank %d of %d failed", first, n)
		}
		for _, r := range res {
			status := "ok"
			if r.Err != nil {
				status = r.Err.Error()
			}
			fmt.Fprintf(&b, "\n--- rank %d: %s\n%s", r.Rank, status, strings.TrimSpace(r.Output))
		}
		return res, fmt.Errorf("%s", b.String())
	}
	return res, nil
}
