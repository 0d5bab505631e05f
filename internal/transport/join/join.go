// Package join makes the transport endpoint of a process that is one rank
// of a job: a job started by narmarun (the environment of package
// bootstrap says which rank, how many and where to meet), or, with no
// launcher, a job of this process alone (MPI's singleton init).
package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/launchenv"
	"github.com/narma-rma/narma/internal/transport"
	_ "github.com/narma-rma/narma/internal/transport/builtin" // the built-in transports
	"github.com/narma-rma/narma/internal/transport/inproc"
	"github.com/narma-rma/narma/internal/transport/registry"
)

// ErrJoined is returned by Join when this process already joined a job.
var ErrJoined = errors.New("join: this process already joined a job")

// joined guards the one job a process may join: the shared heap is
// process-wide.
var joined sync.Mutex
var inJob bool

// Job is this process's place in a job.
type Job struct {
	// Endpoint is this rank's endpoint.
	Endpoint transport.Endpoint
	// Singleton reports a job of this process alone, made without a
	// launcher.
	Singleton bool
	// Transport names the transport ("shm" or "tcp", or the in-process
	// one of a singleton).
	Transport string
	// Ready, when not nil, must be called once this rank's handlers are
	// installed on Endpoint and before anything is sent through it. It
	// waits until every rank has installed its own (a last round of the
	// bootstrap), so that no message reaches a rank before its handlers:
	// the tcp transport drops what arrives without a handler. When it
	// fails it closes the bootstrap connection; when it succeeds it
	// leaves it open and watched (see below). In a launched job it also
	// makes the rank tell the launcher of the peers its transport
	// declares failed (see reportFailures), so it is set even for a
	// transport that needs no last round.
	Ready func(ctx context.Context) error
	// Finish, when not nil, must be called when the rank leaves the job,
	// after its last communication: the rank that serves the job's
	// bootstrap (rank 0 of a job of another launcher) waits there for the
	// others to leave.
	Finish func() error

	// boot is the connection to the launcher's bootstrap server, nil for
	// a singleton. Once the rank has joined, it stays open until the
	// process exits, and the process exits when it ends (see watch).
	boot *bootstrap.Client
}

// lost is what a rank does when its bootstrap connection ends while it
// runs, once it has said why (see say): exit with status 1. Tests
// replace it.
var lost = func(env bootstrap.Env, err error) { os.Exit(1) }

// say prints why the rank gives up its job on stderr. Tests replace it.
var say = func(env bootstrap.Env, err error) {
	fmt.Fprintf(os.Stderr, "narma: rank %d of %d: exiting: %v\n", env.Rank, env.Size, err)
}

// watch hands the bootstrap connection of the rank env describes, its
// rounds done, to client.Watch: the launcher learns that the rank ended
// when the connection does, and the rank that the launcher stopped the
// job, or died, when the launcher's end closes. A rank whose launcher
// gave up on it must not run on: over a remote-start agent such as ssh it
// has no other sign of it (killing ssh does not kill the remote command).
//
// The rank says why as soon as the launcher's reason arrives, before it
// acknowledges it: the launcher waits for that before it closes any
// connection or signals any rank, so that the rank says that it was
// stopped before it can see another rank end, whatever its program
// then reports.
func watch(client *bootstrap.Client, env bootstrap.Env, g *giveUp) {
	_ = client.WatchTold(func(err error) { g.say(env, err) }, func(err error) { g.do(env, err) })
}

// giveUp is what a rank does when it gives up its job: say why, once,
// and exit, once. Its bootstrap connection ended, or a peer was stopped
// with it (see reportFailures): both may happen at once, and the first
// exits.
type giveUp struct {
	said, once sync.Once
	lost, sayf func(bootstrap.Env, error) // lost and say, read when the rank joined
}

func (g *giveUp) say(env bootstrap.Env, err error) { g.said.Do(func() { g.sayf(env, err) }) }

func (g *giveUp) do(env bootstrap.Env, err error) {
	g.once.Do(func() {
		g.say(env, err)
		g.lost(env, err)
	})
}

// Join returns this process's endpoint in the job its environment
// describes (see package bootstrap), or in a job of one rank if there is
// no launcher. A process joins at most one job in its life.
func Join(ctx context.Context) (*Job, error) {
	joined.Lock()
	defer joined.Unlock()
	if inJob {
		return nil, ErrJoined
	}
	env, ok, err := bootstrap.FromEnv()
	if err != nil {
		return nil, err
	}
	var j *Job
	switch {
	case ok:
		j, err = launched(ctx, env)
	default:
		lj, ext, derr := launchenv.Detect()
		switch {
		case derr != nil:
			err = derr
		case ext:
			j, err = external(ctx, lj, lookupEnv)
		default:
			j, err = singleton()
		}
	}
	if err != nil {
		return nil, err
	}
	inJob = true
	return j, nil
}

// Launch describes the job that this process's environment puts it in.
type Launch struct {
	// Launcher is "narmarun", or the name of the other launcher that
	// started the process (package launchenv).
	Launcher string
	// Transport names the transport Join uses in that job.
	Transport string
	// Rank and Size place the process in the job.
	Rank, Size int
}

// Describe says which job Join would join, without joining it: the
// launcher, the transport, this process's rank and the job's size. ok is
// false (and err nil) when no launcher started the process, so that Join
// makes a job of one rank; err reports an environment Join would refuse.
func Describe() (l Launch, ok bool, err error) {
	env, ok, err := bootstrap.FromEnv()
	if err != nil || ok {
		return Launch{Launcher: "narmarun", Transport: env.Transport, Rank: env.Rank, Size: env.Size}, ok, err
	}
	lj, ok, err := launchenv.Detect()
	if err != nil || !ok {
		return Launch{}, false, err
	}
	// Jobs of other launchers run over TCP (see external).
	return Launch{Launcher: lj.Launcher, Transport: "tcp", Rank: lj.Rank, Size: lj.Size}, true, nil
}

// launched joins the job of a launcher over the transport env names
// (package registry; "shm" if it names none). The bootstrap connection is
// watched from the start, or, for a transport whose Join leaves a Ready
// round, once that round succeeded.
func launched(ctx context.Context, env bootstrap.Env) (*Job, error) {
	name := env.Transport
	if name == "" {
		name = "shm"
	}
	t, ok := registry.Lookup(name)
	if !ok || t.Join == nil {
		return nil, fmt.Errorf("join: %s=%q: unknown transport (want %s)", bootstrap.EnvTransport, env.Transport,
			strings.Join(registry.Names(func(t registry.Transport) bool { return t.Join != nil }), ", "))
	}
	jd, err := t.Join(ctx, env)
	if err != nil {
		return nil, err
	}
	j := &Job{Endpoint: jd.Endpoint, Transport: jd.Name, boot: jd.Boot}
	if jd.Boot == nil {
		return j, nil
	}
	// lost and say are read once: the test that replaces them restores
	// them later.
	g := &giveUp{lost: lost, sayf: say}
	if jd.Ready == nil {
		watch(jd.Boot, env, g)
	}
	j.Ready = func(ctx context.Context) error {
		reportFailures(jd.Endpoint, jd.Boot, env, g)
		if jd.Ready == nil {
			return nil
		}
		if err := jd.Ready(ctx); err != nil {
			return err
		}
		watch(jd.Boot, env, g)
		return nil
	}
	return j, nil
}

// failureSource is an endpoint that tells which failure handler is
// installed (transport.Handlers does).
type failureSource interface {
	Failure() transport.FailureHandler
}

// reportFailures puts, in front of the failure handler installed on ep
// (the engine's), one that first looks at what the launcher said. If the
// launcher has already sent its reason for stopping the job, the peer
// failed because it was stopped: the rank exits at once for the
// launcher's reason, as it would when its own connection closes, rather
// than let its program report the peer's failure. Otherwise it tells
// the launcher, through the bootstrap, which peer failed, before the
// program hears of it: a rank that then exits with an error is taken
// for a consequence of that peer's failure, not its cause (the order in
// which the launcher sees the ranks end need not be the order in which
// they failed).
func reportFailures(ep transport.Endpoint, boot *bootstrap.Client, env bootstrap.Env, g *giveUp) {
	fs, ok := ep.(failureSource)
	if !ok {
		return
	}
	next := fs.Failure()
	ep.SetFailureHandler(func(peer int, err error) {
		if reason := boot.Stopped(); reason != nil {
			g.do(env, reason)
			return
		}
		_ = boot.PeerFailed(peer) // if it fails, the launcher has only the order of the exits
		if next != nil {
			next(peer, err)
		}
	})
}

// singleton makes a job of one rank over the in-process transport.
func singleton() (*Job, error) {
	eps, err := inproc.New(1)
	if err != nil {
		return nil, err
	}
	return &Job{Endpoint: eps[0], Singleton: true, Transport: eps[0].Caps().Name}, nil
}
