package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// rank is one started process of the job: the rank itself, or, for a
// rank on another host, the launcher agent that started it there.
type rank struct {
	id     int
	host   int  // index in the list of hosts
	remote bool // cmd is the launcher agent
	cmd    *exec.Cmd
	exit   *exit // how it ended, once it has
}

// pid returns the process id of the rank, or of its launcher agent.
func (r *rank) pid() int { return r.cmd.Process.Pid }

// name describes rank r in messages: "rank 3 (pid 1234)" for a job on
// this host; with hosts, "rank 3 on h1 (pid 1234)", and for a rank on
// another host "rank 3 on h2 (pid 567 there, agent pid 1234)", the pid
// there as the rank reported it to the bootstrap, if it did.
func (l *launcher) name(r *rank) string {
	switch {
	case l.cfg.hosts == nil:
		return fmt.Sprintf("rank %d (pid %d)", r.id, r.pid())
	case !r.remote:
		return fmt.Sprintf("rank %d on %s (pid %d)", r.id, l.cfg.hosts[r.host].name, r.pid())
	}
	there := ""
	if pid := l.srv.PIDs()[r.id]; pid != 0 {
		there = fmt.Sprintf("pid %d there, ", pid)
	}
	return fmt.Sprintf("rank %d on %s (%sagent pid %d)", r.id, l.cfg.hosts[r.host].name, there, r.pid())
}

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
		shown := false
		for _, r := range l.ranks {
			switch {
			case l.cfg.hosts == nil:
				l.logf("rank %d: pid %d", r.id, r.pid())
			case !r.remote:
				l.logf("rank %d: pid %d on %s", r.id, r.pid(), l.cfg.hosts[r.host].name)
			case !shown:
				// The others differ in the host and the job's
				// variables only.
				shown = true
				l.logf("rank %d: launcher agent pid %d: %s", r.id, r.pid(), strings.Join(r.cmd.Args, " "))
			default:
				l.logf("rank %d: launcher agent pid %d for %s", r.id, r.pid(), l.cfg.hosts[r.host].name)
			}
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

// startRank starts rank r, and a goroutine that reports its exit: the
// program itself on this host, the launcher agent for another.
func (l *launcher) startRank(r int, env []string) error {
	jobEnv := bootstrap.Env{
		Rank: r, Size: l.cfg.n, Addr: l.srv.Addr(), Job: l.job, Transport: l.cfg.transport,
		Secret: l.secret, Host: l.cfg.host(r),
	}
	if l.cfg.network { // tcp, or hybrid whose hosts talk tcp
		jobEnv.Listen, jobEnv.PeerTimeout, jobEnv.Spin = tcpListen, l.cfg.peerTimeout, l.cfg.spin
		if strings.HasPrefix(l.srv.Addr(), "tcp:") {
			// Each rank listens on its interface towards the
			// bootstrap server, which the other hosts reach.
			jobEnv.Listen = bootstrap.ListenAuto
		}
	}
	var ours []*os.File // pipe ends to close once the rank has its copy
	defer func() {
		for _, f := range ours {
			f.Close()
		}
	}()
	prefix := "[" + strconv.Itoa(r) + "] "
	if l.cfg.hosts != nil {
		prefix = "[" + strconv.Itoa(r) + "@" + l.cfg.hosts[l.cfg.host(r)].name + "] "
	}
	streams := make([]*os.File, 2)
	for i, s := range []*sink{l.stdout, l.stderr} {
		f, mine, err := l.out.stream(prefix, s)
		if err != nil {
			return err
		}
		if mine {
			ours = append(ours, f)
		}
		streams[i] = f
	}
	rankEnv := append(env[:len(env):len(env)], jobEnv.Environ()...)
	if procs := bootstrap.ProcsEnv(env, l.cfg.ranksOn(l.cfg.host(r))); procs != "" {
		rankEnv = append(rankEnv, procs)
	}
	cmd := &exec.Cmd{
		Path:        l.path,
		Args:        append([]string{l.cfg.program}, l.cfg.args...),
		Env:         rankEnv,
		Stdout:      streams[0],
		Stderr:      streams[1],
		SysProcAttr: sysProcAttr(),
	}
	remote := l.cfg.isRemote(r)
	if remote {
		// The agent gets narmarun's environment (ssh needs its own
		// variables); the rank gets the job's on the command line, but
		// for the secret, which it reads from its standard input.
		cmd.Path, cmd.Args, cmd.Env = l.agent, l.agentArgs(r, jobEnv), env
		stdin, err := secretPipe(l.secret)
		if err != nil {
			return err
		}
		ours = append(ours, stdin)
		cmd.Stdin = stdin
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	l.ranks = append(l.ranks, &rank{id: r, host: l.cfg.host(r), remote: remote, cmd: cmd})
	go func() {
		err := cmd.Wait()
		e := exit{rank: r, status: exitFailure, how: fmt.Sprintf("could not be waited for: %v", err)}
		if cmd.ProcessState != nil {
			e.status, e.signal, e.how = describeExit(cmd.ProcessState)
		}
		if remote && e.signal == 0 && e.status > exitSignal && e.status < exitSignal+65 {
			// The agent passes on the status of the rank as the shell
			// there reports it: 128 plus the signal that killed it.
			e.signal = syscall.Signal(e.status - exitSignal)
		}
		e.at = time.Now()
		l.exits <- e
	}()
	return nil
}

// agentArgs returns the command line of the launcher agent that starts
// rank r on its host: the agent and its arguments, the host, then the
// command the host runs, each word quoted for the shell there (ssh
// hands it to the user's shell as one string):
//
//	env NARMA_RANK=r ... sh -c SCRIPT narmarun DIR PROGRAM ARGS...
//
// SCRIPT (remoteScript) reads the job secret from standard input, so that
// it is on no command line, changes to narmarun's directory DIR if the
// host has it, and runs the program.
func (l *launcher) agentArgs(r int, jobEnv bootstrap.Env) []string {
	args := slices.Clone(l.cfg.launcher)
	args = append(args, l.cfg.hosts[l.cfg.host(r)].name, "env")
	jobEnv.Secret = ""
	for _, kv := range jobEnv.Environ() {
		args = append(args, shellQuote(kv))
	}
	args = append(args, "sh", "-c", shellQuote(remoteScript), "narmarun", shellQuote(l.cwd), shellQuote(l.remotePath))
	for _, a := range l.cfg.args {
		args = append(args, shellQuote(a))
	}
	return args
}

// secretPipe returns the read end of a pipe that holds secret and a
// newline, then ends: the standard input of a launcher agent.
func secretPipe(secret string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Far less than a pipe holds: the write does not block.
	_, err = w.WriteString(secret + "\n")
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// signalAll sends sig to the process group of every rank, those that
// have exited included: what they started may still run.
func (l *launcher) signalAll(sig syscall.Signal) { l.signal(sig, nil) }

// signal sends sig to the process groups of the ranks that pick selects
// (all if pick is nil).
func (l *launcher) signal(sig syscall.Signal, pick func(*rank) bool) {
	for _, r := range l.ranks {
		if pick != nil && !pick(r) {
			continue
		}
		if err := signalGroup(r.cmd.Process, sig); err != nil {
			l.logf("signaling %s: %v", l.name(r), err)
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
