package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/sys"
	_ "github.com/narma-rma/narma/internal/transport/builtin" // the transports ranks join
	"github.com/narma-rma/narma/internal/transport/registry"
)

// drainPatience bounds the wait for the end of the ranks' output once
// they have exited (and what they left in their process groups has been
// killed): only a process that escaped its group can hold it longer.
const drainPatience = 2 * time.Second

// launcher runs one job.
type launcher struct {
	cfg        config
	path       string // the program's resolved path
	remotePath string // the program's path on other hosts
	agent      string // the launcher agent's resolved path, with remote ranks
	cwd        string // the working directory, for remote ranks
	job        string // job identifier
	secret     string // job secret, hex-encoded; never printed
	dir        string // private temporary directory, holding the socket
	srv        *bootstrap.Server
	stdout     *sink
	stderr     *sink
	out        output
	ranks      []*rank
	exits      chan exit // from the rank waiters

	stopServe context.CancelFunc // ends Serve
	served    chan struct{}      // closed when Serve has returned serveErr
	serveErr  error
}

// logf prints one of narmarun's own messages on stderr.
func (l *launcher) logf(format string, args ...any) {
	_, _ = l.stderr.Write([]byte("narmarun: " + fmt.Sprintf(format, args...) + "\n"))
}

// launch runs the job cfg describes and returns narmarun's exit status.
// Whatever happens, the ranks are gone and the job's files removed when
// it returns.
func launch(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	l := &launcher{
		cfg:    cfg,
		stdout: &sink{w: stdout},
		stderr: &sink{w: stderr},
		out:    output{tag: cfg.tag},
		exits:  make(chan exit, cfg.n),
	}
	if status, ok := l.findPrograms(); !ok {
		return status
	}
	l.removeStale()

	// Every job gets a fresh identity, whatever its transport; the tcp
	// transport and a TCP bootstrap authenticate their connections with
	// its secret.
	job, secret := bootstrap.NewJob()
	l.job = job
	l.secret = bootstrap.EncodeSecret(secret)
	defer l.cleanup()
	if err := l.listen(secret); err != nil {
		l.logf("%v", err)
		return exitFailure
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	l.stopServe, l.served = stopServe, make(chan struct{})
	go func() {
		l.serveErr = l.srv.Serve(serveCtx)
		close(l.served)
	}()
	defer func() {
		stopServe()
		<-l.served
	}()
	if cfg.verbose {
		l.logf("job %s: %d ranks of %s, transport %s, bootstrap %s",
			l.job, cfg.n, l.path, cfg.transport, l.srv.Addr())
		if t, ok := registry.Lookup(cfg.transport); ok && t.Status != nil {
			if s := t.Status(); s != "" {
				l.logf("%s", s)
			}
		}
	}
	defer func() {
		if n := l.srv.Refused(); n > 0 {
			l.logf("the bootstrap refused %d connections that were no ranks of this job", n)
		}
	}()

	started, err := l.start()
	if err != nil {
		l.logf("cannot start rank %d: %v", started, err)
	}
	status := l.wait(ctx, err)
	l.killStragglers()
	l.out.wait(after(drainPatience))
	return status
}

// findPrograms finds the program, and the launcher agent if some ranks
// run on other hosts. When it returns ok false, narmarun must exit with
// status; it has said why.
func (l *launcher) findPrograms() (status int, ok bool) {
	local, remote := false, false
	for r := range l.cfg.n {
		if l.cfg.isRemote(r) {
			remote = true
		} else {
			local = true
		}
	}
	path, err := exec.LookPath(l.cfg.program)
	switch {
	case err == nil:
	case !local:
		// Other hosts may have the program where this one does not.
		path = l.cfg.program
	default:
		l.logf("%v", err)
		return cannotRunStatus(err), false
	}
	l.path = path
	if !remote {
		return 0, true
	}
	// The other hosts run the program at the path it has here.
	if l.remotePath = path; strings.Contains(path, "/") {
		if l.remotePath, err = filepath.Abs(path); err != nil {
			l.logf("%v", err)
			return exitFailure, false
		}
	}
	if l.cwd, err = os.Getwd(); err != nil {
		l.logf("%v", err)
		return exitFailure, false
	}
	if l.agent, err = exec.LookPath(l.cfg.launcher[0]); err != nil {
		l.logf("launcher agent: %v", err)
		return cannotRunStatus(err), false
	}
	return 0, true
}

// listen creates the bootstrap server: a Unix socket in a fresh private
// directory for a job on this host, a TCP address when ranks run on
// other hosts (or --bootstrap-addr asks for one).
func (l *launcher) listen(secret []byte) error {
	if !l.cfg.remote() && l.cfg.bootstrapAddr == "" {
		var err error
		// The directory's name carries narmarun's pid, so that the
		// next narmarun can tell it is stale (removeStaleDirs).
		if l.dir, err = os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid())); err != nil {
			return err
		}
		l.srv, err = bootstrap.Listen(filepath.Join(l.dir, socketName), l.cfg.n)
		return err
	}
	addr := l.cfg.bootstrapAddr
	if addr == "" {
		first := l.cfg.hosts[l.firstRemoteHost()].name
		var err error
		if addr, err = outgoingAddr(first); err != nil {
			return fmt.Errorf("finding this host's address towards %s, for the ranks to reach the bootstrap: %v (give --bootstrap-addr)", first, err)
		}
	}
	var err error
	l.srv, err = bootstrap.ListenTCP(addr, l.cfg.n, secret)
	return err
}

// firstRemoteHost returns the index of the first host, other than this
// one, that runs ranks.
func (l *launcher) firstRemoteHost() int {
	for _, h := range l.cfg.hostOf {
		if !l.cfg.hosts[h].local {
			return h
		}
	}
	return -1
}

// cannotRunStatus returns the exit status for a program that cannot be
// started because of err: 127 if it does not exist, 126 otherwise, as a
// shell does.
func cannotRunStatus(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrDot) {
		return exitNotFound
	}
	return exitCannotRun
}

// removeStale removes what jobs whose launcher died without cleaning up
// left on this host: the temporary directories of narmarun, and what
// every transport that leaves something left.
func (l *launcher) removeStale() {
	removed, err := removeStaleDirs(os.TempDir())
	if l.cfg.verbose {
		for _, name := range removed {
			l.logf("removed stale %s", name)
		}
	}
	if err != nil {
		l.logf("removing what dead jobs left: %v", err)
	}
	for _, t := range registry.All() {
		if t.Stale == nil {
			continue
		}
		removed, err := t.Stale()
		if l.cfg.verbose {
			for _, name := range removed {
				l.logf("removed stale %s", name)
			}
		}
		if err != nil {
			l.logf("removing what dead jobs left (%s): %v", t.Name, err)
		}
	}
}

// dirPrefix starts the name of a job's temporary directory, followed by
// narmarun's pid, a dash and random characters.
const dirPrefix = "narmarun-"

// removeStaleDirs removes the temporary directories (and the bootstrap
// sockets in them) of narmaruns that died without removing them: those
// named for a pid that no longer runs, owned by this user, holding
// nothing but a bootstrap socket. It returns the paths removed.
func removeStaleDirs(tmp string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(tmp, dirPrefix+"*-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var first error
	for _, dir := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), dirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || sys.Alive(pid) || !ownDir(dir) {
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) > 1 || (len(ents) == 1 && ents[0].Name() != socketName) {
			continue // not what narmarun leaves: not ours to remove
		}
		if err := os.RemoveAll(dir); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		removed = append(removed, dir)
	}
	return removed, first
}

// socketName is the bootstrap socket's name in the job's directory.
const socketName = "bootstrap.sock"

// cleanup removes what the job leaves behind: the bootstrap socket, the
// temporary directory and the shared-memory segments. The ranks must be
// gone.
func (l *launcher) cleanup() {
	if l.srv != nil {
		if err := l.srv.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			l.logf("%v", err)
		}
	}
	if t, ok := registry.Lookup(l.cfg.transport); ok && t.Remove != nil {
		if err := t.Remove(l.job); err != nil {
			l.logf("removing what the job left (%s): %v", t.Name, err)
		}
	}
	if l.dir != "" {
		if err := os.RemoveAll(l.dir); err != nil {
			l.logf("%v", err)
		}
	}
}
