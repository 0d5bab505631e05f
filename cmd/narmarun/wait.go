package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// never is a channel that is never ready.
var never <-chan struct{}

// wait runs the job until every started rank has exited, and returns
// narmarun's exit status. It stops the ranks when one fails, when the
// time is up, when ctx ends, and, after a grace period for the ranks to
// end by themselves, when the bootstrap fails. startErr is the error that
// kept a rank from starting, if any.
func (l *launcher) wait(ctx context.Context, startErr error) int {
	w := waiter{l: l, status: -1, first: -1, judging: -1, killAt: never, stopAt: never, timeUp: never, judgeBy: never}
	if startErr != nil {
		w.status = cannotRunStatus(startErr)
		w.stop(fmt.Sprintf("rank %d could not start", len(l.ranks)))
	}
	if l.cfg.timeout > 0 {
		w.timeUp = after(l.cfg.timeout)
	}
	served, done := l.served, ctx.Done()
	for running := len(l.ranks); running > 0; {
		select {
		case e := <-l.exits:
			running--
			w.exited(e)
		case <-w.changed:
			w.judge(false)
		case <-w.judgeBy:
			w.judge(true)
		case <-served:
			served = nil
			w.bootstrapEnded()
		case <-w.stopAt:
			w.stopAt = never
			w.stop("the bootstrap failed")
		case <-w.timeUp:
			w.timeUp = never
			w.judge(true)
			if !w.stopping {
				w.status = exitTimeout
				l.logf("timeout: the job ran for %v; stopping %d ranks", l.cfg.timeout, running)
				w.stop(fmt.Sprintf("the job ran for %v (--timeout)", l.cfg.timeout))
			}
		case <-done:
			done = nil
			w.judge(true)
			if !w.stopping {
				w.status = interruptStatus(ctx)
				l.logf("%v; stopping %d ranks", context.Cause(ctx), running)
				w.stop(fmt.Sprintf("narmarun %v", context.Cause(ctx)))
			} else {
				w.killAt = never
				w.killed = true
				l.signalAll(syscall.SIGKILL)
			}
		case <-w.killAt:
			w.killAt = never
			w.killed = true
			l.logf("ranks still running %v after SIGTERM: killing them", l.cfg.grace)
			l.signalAll(syscall.SIGKILL)
		}
	}
	// Every rank has exited, but what tells which failed first may not
	// have been read yet.
	for w.judging >= 0 {
		select {
		case <-w.changed:
			w.judge(false)
		case <-w.judgeBy:
			w.judge(true)
		}
	}
	l.stopServe()
	if served != nil {
		<-served
		w.bootstrapEnded()
	}
	return w.verdict()
}

// settle is how long after the first failure a rank that dies of a signal
// narmarun did not send is still taken for the cause (see exited).
const settle = 500 * time.Millisecond

// waiter is the state of wait.
type waiter struct {
	l        *launcher
	status   int       // exit status decided so far, or -1
	first    int       // rank whose failure decided status, or -1
	stopping bool      // SIGTERM sent
	stopped  time.Time // when stop began
	killed   bool      // SIGKILL sent
	bootFail bool      // the bootstrap failed

	firstAt     time.Time // when the first failure was reaped
	firstSignal bool      // the first failure was a death by signal

	// judging is the first failed rank reaped while its cause is sought
	// (see judge), or -1; changed and judgeBy are the server's changes
	// and the end of judgePatience while it is.
	judging                int
	changed                <-chan struct{}
	judgeBy                <-chan struct{}
	killAt, stopAt, timeUp <-chan struct{}
}

// stop stops the ranks: SIGTERM now (those on this host), SIGKILL after
// the grace period. It first tells every rank why (reason), through its
// bootstrap connection, and only then ends Serve (which closes the
// connections) and signals the ranks: a rank that sees another die after
// that could tell it was stopped, and the ranks it kills in the middle
// of an exchange are not taken for the cause of a bootstrap failure.
func (w *waiter) stop(reason string) {
	if w.stopping {
		return
	}
	w.stopping, w.stopped = true, time.Now()
	w.l.srv.Halt(reason)
	w.l.stopServe()
	// Ranks on other hosts end by themselves once their bootstrap
	// connections close, and their launcher agents then exit with the
	// ranks' statuses: a SIGTERM would replace those (of a rank that
	// died first, say) with the agent's own. The grace period's SIGKILL
	// still ends an agent that lingers.
	w.l.signal(syscall.SIGTERM, func(r *rank) bool { return !r.remote })
	w.killAt = after(w.l.cfg.grace)
}

// exited records how a rank ended; the first to fail before the job is
// being stopped decides the exit status, unless it exited with an error
// and, within settle, another rank turns out to have been killed by a
// signal that narmarun did not send: that one died suddenly, most likely
// first, and the rank that exited had noticed its death (a transport that
// sees a dead peer at once, such as tcp, lets a survivor exit before
// narmarun has reaped the dead rank).
func (w *waiter) exited(e exit) {
	r := w.l.ranks[e.rank]
	r.exit = &e
	switch {
	case w.judging >= 0:
		if w.l.cfg.verbose {
			w.l.logf("%s %s", w.l.name(r), e.how)
		}
		w.judge(false)
	case e.status != 0 && !w.stopping:
		w.judging, w.changed, w.judgeBy = e.rank, w.l.srv.Changed(), after(judgePatience)
		w.judge(false)
	case w.suddenDeath(e):
		w.l.logf("%s %s as rank %d failed: taking it for the first failure",
			w.l.name(r), e.how, w.first)
		w.status, w.first, w.firstSignal = e.status, e.rank, true
	case w.l.cfg.verbose:
		w.l.logf("%s %s", w.l.name(r), e.how)
	}
}

// judgePatience bounds the wait, once a rank has failed, for what tells
// whether it failed first (see judge).
const judgePatience = time.Second

// judge decides, if it can, which rank failed first, once a failed rank
// was reaped (w.judging) and before the job is stopped: the rank that
// narmarun reaps first need not be the one that failed first. A rank
// reports to the bootstrap server each peer its transport declares
// failed, before its program hears of it and exits (package join), so a
// failed rank that reported a peer failed because of it; following the
// reports from the rank reaped leads to the one that reported nobody,
// the first failure, which then decides the exit status and is named to
// the ranks. judge waits until each rank on the way has been reaped and
// its bootstrap connection read to the end; with force, or after
// judgePatience, it decides with what it has. It then stops the job.
func (w *waiter) judge(force bool) {
	if w.judging < 0 {
		return
	}
	root, ok := w.rootCause(w.judging, force)
	if !ok {
		return
	}
	w.judging, w.changed, w.judgeBy = -1, nil, never
	r := w.l.ranks[root]
	e := r.exit
	w.status, w.first = e.status, root
	w.firstAt, w.firstSignal = e.at, e.signal != 0
	w.l.logf("%s %s", w.l.name(r), e.how)
	w.stop(fmt.Sprintf("%s %s", w.l.name(r), e.how))
}

// rootCause follows the reports of failed peers from failed rank from
// to the rank that reported none. ok is false while a rank on the way
// has not been reaped or its connection not read to the end, unless
// force: the last failed rank reached is then the answer.
func (w *waiter) rootCause(from int, force bool) (root int, ok bool) {
	blamed, left, pids := w.l.srv.PeerFailures(), w.l.srv.Departures(), w.l.srv.PIDs()
	seen := map[int]bool{}
	root = from
	for cur := from; ; {
		seen[cur] = true
		// A rank that never connected reports nothing.
		if left[cur].IsZero() && pids[cur] != 0 {
			return root, force
		}
		p := blamed[cur]
		if p < 0 || p >= len(w.l.ranks) || seen[p] {
			return cur, true
		}
		next := w.l.ranks[p].exit
		switch {
		case next == nil:
			return root, force
		case next.status == 0:
			return cur, true // p ended well: cur's error is its own
		}
		root, cur = p, p
	}
}

// suddenDeath reports whether e, reaped while the ranks are being
// stopped, is a death by a signal that narmarun did not send, close
// enough to a first failure that was an exit to have caused it.
func (w *waiter) suddenDeath(e exit) bool {
	return w.first >= 0 && !w.firstSignal && e.signal != 0 && e.signal != syscall.SIGTERM &&
		!w.killed && e.at.Sub(w.firstAt) < settle
}

// bootstrapEnded handles the end of Serve. A failure is reported, unless
// it is the cancellation by stop; if nothing else has failed, the ranks
// get a grace period to end by themselves (their exchanges fail) before
// they are stopped.
func (w *waiter) bootstrapEnded() {
	err := w.l.serveErr
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	w.l.logf("%v", err)
	w.bootFail = true
	if !w.stopping {
		w.stopAt = after(w.l.cfg.grace)
	}
}

// verdict returns the exit status once every rank has exited. When a
// rank's failure stopped the job but the bootstrap blames another rank,
// which failed too, that rank came first: the ranks failed because their
// exchanges with it did, and only the order in which narmarun saw their
// exits said otherwise.
func (w *waiter) verdict() int {
	if w.first >= 0 {
		if b, ok := faultyRank(w.l.serveErr); ok && b != w.first && b < len(w.l.ranks) {
			if r := w.l.ranks[b]; r.exit != nil && r.exit.status != 0 {
				w.l.logf("%s %s, which made the bootstrap fail", w.l.name(r), r.exit.how)
				return r.exit.status
			}
		}
		// A rank that died by a signal narmarun did not send is the
		// cause, whatever the bootstrap saw first: the others noticed
		// its death (over tcp at once) and may have left before the
		// server read its own end.
		if r, ok := w.leftFirst(); ok && !w.firstSignal {
			w.l.logf("%s %s, and left the job before rank %d: taking it for the first failure",
				w.l.name(r), r.exit.how, w.first)
			return r.exit.status
		}
	}
	switch {
	case w.status >= 0:
		return w.status
	case w.bootFail:
		return exitFailure
	}
	return 0
}

// leftFirst returns the failed rank, other than the one that decided
// the status, that the bootstrap server saw end first, if it saw it end
// before that one, and before narmarun began stopping the job. A rank
// keeps its bootstrap connection until its process ends, so this is the
// order in which the ranks ended, as seen from one place: when a rank is
// killed, the others may fail (having lost it) and be reaped first, and
// for a rank on another host narmarun sees only how its launcher agent
// ended, not the signal that killed it (see suddenDeath).
func (w *waiter) leftFirst() (*rank, bool) {
	left := w.l.srv.Departures()
	firstLeft := left[w.first]
	if firstLeft.IsZero() || firstLeft.After(w.stopped) {
		// Its end was seen late: it ended before narmarun reaped it.
		firstLeft = w.stopped
	}
	// A rank that reported a failed peer failed because of it.
	blamed := w.l.srv.PeerFailures()
	var found *rank
	for _, r := range w.l.ranks {
		t := left[r.id]
		if r.id == w.first || blamed[r.id] >= 0 || t.IsZero() || r.exit == nil || r.exit.status == 0 || !t.Before(firstLeft) {
			continue
		}
		if found == nil || t.Before(left[found.id]) {
			found = r
		}
	}
	return found, found != nil
}

// faultyRank returns the rank a bootstrap error blames, if any.
func faultyRank(err error) (int, bool) {
	type blamer interface {
		error
		FaultyRank() int
	}
	if b, ok := errors.AsType[blamer](err); ok && b.FaultyRank() >= 0 {
		return b.FaultyRank(), true
	}
	return 0, false
}
