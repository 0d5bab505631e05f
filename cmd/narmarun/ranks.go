package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// rank is one started process of the job.
type rank struct {
	id   int
	cmd  *exec.Cmd
	exit *exit // how it ended, once it has
}

// pid returns the rank's process id.
func (r *rank) pid() int { return r.cmd.Process.Pid }

// exit is how a rank ended.
type exit struct {
	rank   int
	status int            // as a shell reports it
	signal syscall.Signal // that killed it, or 0
	how    string         // "exited with status 3", "killed by signal 9 (killed)"
	at     time.Time      // when narmarun learned of it
}

// start starts the ranks in order. On failure it returns the rank that
// could not start and why; the ranks started before it keep running.
func (l *launcher) start() (int, error) {
	env := inherited(os.Environ())
	// The kernel sends Pdeathsig when the thread that forked a rank ends,
	// not the process. The runtime ends a thread only when a goroutine
	// locked to it exits without unlocking; forking from a locked
	// goroutine that unlocks keeps every rank's parent thread alive.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for r := range l.cfg.n {
		if err := l.startRank(r, env); err != nil {
			return r, err
		}
	}
	if l.cfg.verbose {
		for _, r := range l.ranks {
			l.logf("rank %d: pid %d", r.id, r.pid())
		}
	}
	return l.cfg.n, nil
}

// inherited returns the part of narmarun's environment env that the ranks
// inherit: all but the job's variables (NARMA_TRANSPORT, NARMA_SECRET and
// the others of package bootstrap), which narmarun sets itself, so that
// what the user's environment holds (say NARMA_TRANSPORT=tcp, which
// chooses the transport of goroutine ranks) never mixes into the job.
func inherited(env []string) []string {
	vars := bootstrap.Vars()
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(vars, k)
	})
}

// startRank starts rank r, and a goroutine that reports its exit.
func (l *launcher) startRank(r int, env []string) error {
	jobEnv := bootstrap.Env{Rank: r, Size: l.cfg.n, Addr: l.srv.Addr(), Job: l.job, Transport: l.cfg.transport, Secret: l.secret}
	if l.cfg.transport == "tcp" {
		jobEnv.Listen, jobEnv.PeerTimeout = tcpListen, l.cfg.peerTimeout
	}
	var ours []*os.File // pipe ends to close once the rank has its copy
	defer func() {
		for _, f := range ours {
			f.Close()
		}
	}()
	streams := make([]*os.File, 2)
	for i, s := range []*sink{l.stdout, l.stderr} {
		f, mine, err := l.out.stream(r, s)
		if err != nil {
			return err
		}
		if mine {
			ours = append(ours, f)
		}
		streams[i] = f
	}
	cmd := &exec.Cmd{
		Path:        l.path,
		Args:        append([]string{l.cfg.program}, l.cfg.args...),
		Env:         append(env[:len(env):len(env)], jobEnv.Environ()...),
		Stdout:      streams[0],
		Stderr:      streams[1],
		SysProcAttr: sysProcAttr(),
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	l.ranks = append(l.ranks, &rank{id: r, cmd: cmd})
	go func() {
		err := cmd.Wait()
		e := exit{rank: r, status: exitFailure, how: fmt.Sprintf("could not be waited for: %v", err)}
		if cmd.ProcessState != nil {
			e.status, e.signal, e.how = describeExit(cmd.ProcessState)
		}
		e.at = time.Now()
		l.exits <- e
	}()
	return nil
}

// signalAll sends sig to the process group of every rank, those that
// have exited included: what they started may still run.
func (l *launcher) signalAll(sig syscall.Signal) {
	for _, r := range l.ranks {
		if err := signalGroup(r.cmd.Process, sig); err != nil {
			l.logf("signaling rank %d (pid %d): %v", r.id, r.pid(), err)
		}
	}
}

// killStragglers kills whatever is left in the ranks' process groups once
// the ranks have exited, so that nothing of the job outlives it.
func (l *launcher) killStragglers() { l.signalAll(syscall.SIGKILL) }

// after returns a channel closed after d.
func after(d time.Duration) <-chan struct{} {
	c := make(chan struct{})
	time.AfterFunc(d, func() { close(c) })
	return c
}
